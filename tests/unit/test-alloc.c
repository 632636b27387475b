/* test-alloc.c — the musl CLI's allocator (src/cli/alloc.c), built here under other names so that
 * it runs beside the test's own libc allocator: classes, reuse, zeroing, realloc, alignment,
 * large blocks, bad arguments. And its open(), memcpy() and memmove() (src/cli/musl-libc.c), the
 * same way. */
#define malloc ta_malloc
#define free ta_free
#define calloc ta_calloc
#define realloc ta_realloc
#define malloc_usable_size ta_malloc_usable_size
#define aligned_alloc ta_aligned_alloc
#define memalign ta_memalign
#define posix_memalign ta_posix_memalign
#include "../../src/cli/alloc.c"
#undef malloc
#undef free
#undef calloc
#undef realloc
#undef malloc_usable_size
#undef aligned_alloc
#undef memalign
#undef posix_memalign

#include <fcntl.h> /* before the rename: glibc's own declarations (and fortify wrappers) of open */
#include <stdint.h>
#include <string.h> /* and of memcpy and memmove */
#define open ta_open
#define memcpy ta_memcpy
#define memmove ta_memmove
int ta_open(const char *path, int flags, ...);
void *ta_memcpy(void *restrict dst, const void *restrict src, size_t n);
void *ta_memmove(void *dst, const void *src, size_t n);
#include "../../src/cli/musl-libc.c"
#undef open
#undef memcpy
#undef memmove

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tap.h"

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
        for (size_t i = 0; i < n; i++)
                if (p[i] != v)
                        return false;
        return true;
}

/* open(): one system call, the same results as libc's */
static void test_open(void) {
        int fd = ta_open("/dev/null", O_RDONLY | O_CLOEXEC);
        ok(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "open: O_CLOEXEC gives a close-on-exec fd");
        if (fd >= 0)
                close(fd);
        fd = ta_open("/dev/null", O_RDWR);
        ok(fd >= 0 && !(fcntl(fd, F_GETFD) & FD_CLOEXEC) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR,
                "open: without it, not; O_RDWR kept");
        if (fd >= 0)
                close(fd);
        char dir[] = "/tmp/test-alloc-XXXXXX", path[64];
        if (mkdtemp(dir)) {
                snprintf(path, sizeof path, "%s/f", dir);
                mode_t old = umask(0);
                fd = ta_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
                umask(old);
                struct stat st;
                ok(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0640,
                        "open: O_CREAT takes the mode");
                if (fd >= 0)
                        close(fd);
                errno = 0;
                ok(ta_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) == -1 && errno == EEXIST,
                        "open: O_EXCL on an existing file: -1, EEXIST");
                unlink(path);
                rmdir(dir);
        } else
                skip(2, "mkdtemp");
        errno = 0;
        ok(ta_open("/nonexistent/x", O_RDONLY) == -1 && errno == ENOENT, "open: a missing file: -1, ENOENT");
}

/* memcpy() and memmove(): every length up to past the block path, every alignment of either
 * side, overlaps both ways; compared with a byte-by-byte reference. */
static void test_copy(void) {
        enum { N = 5000 };
        static unsigned char src[N + 64], dst[N + 64], ref[N + 64], buf[2 * N + 64];
        bool cpy_ok = true, ret_ok = true, fwd_ok = true, back_ok = true, edge_ok = true;
        for (size_t i = 0; i < sizeof src; i++)
                src[i] = (unsigned char) (i * 131 + 7);
        for (size_t n = 0; n <= N; n = n < 80 ? n + 1 : n * 3 / 2 + 1)
                for (size_t so = 0; so < 8; so++)
                        for (size_t d_o = 0; d_o < 8; d_o++) {
                                for (size_t i = 0; i < sizeof dst; i++)
                                        dst[i] = ref[i] = 0x5a;
                                for (size_t i = 0; i < n; i++)
                                        ref[d_o + i] = src[so + i];
                                if (ta_memcpy(dst + d_o, src + so, n) != dst + d_o)
                                        ret_ok = false;
                                for (size_t i = 0; i < sizeof dst; i++)
                                        if (dst[i] != ref[i])
                                                cpy_ok = false;
                        }
        ok(cpy_ok, "memcpy: every length and alignment copies exactly, and nothing around it");
        ok(ret_ok, "memcpy: returns its destination");
        /* overlapping moves, by a shift of 1..40 either way, over lengths small and large */
        for (size_t n = 0; n <= N; n = n < 80 ? n + 1 : n * 3 / 2 + 1)
                for (size_t shift = 1; shift <= 40; shift += (shift < 9 ? 1 : 7)) {
                        for (int dir = 0; dir < 2; dir++) {
                                for (size_t i = 0; i < sizeof buf; i++)
                                        buf[i] = (unsigned char) (i * 31 + 3);
                                size_t from = dir ? 64 + shift : 64, to = dir ? 64 : 64 + shift;
                                unsigned char expect[N];
                                for (size_t i = 0; i < n; i++)
                                        expect[i] = buf[from + i];
                                if (ta_memmove(buf + to, buf + from, n) != buf + to)
                                        ret_ok = false;
                                for (size_t i = 0; i < n; i++)
                                        if (buf[to + i] != expect[i])
                                                *(dir ? &fwd_ok : &back_ok) = false;
                        }
                }
        ok(fwd_ok, "memmove: overlapping, to a lower address");
        ok(back_ok, "memmove: overlapping, to a higher address");
        unsigned char one[4] = {1, 2, 3, 4};
        edge_ok = ta_memmove(one, one, 4) == one && one[0] == 1 && one[3] == 4 &&
                  ta_memcpy(one, one + 1, 0) == one && ta_memmove(one + 1, one, 0) == one + 1 && one[1] == 2;
        ok(edge_ok, "memmove onto itself and copies of 0 bytes change nothing");
}

int main(void) {
        test_open();
        test_copy();
        /* every size up to past the largest class: 16-aligned, usable >= asked, writable */
        bool aligned = true, big_enough = true;
        for (size_t n = 0; n < 300000; n = n < 64 ? n + 1 : n * 5 / 4) {
                unsigned char *p = ta_malloc(n);
                if (!p || ((uintptr_t) p & 15))
                        aligned = false;
                if (!p || ta_malloc_usable_size(p) < n)
                        big_enough = false;
                if (p)
                        memset(p, 0xab, n);
                ta_free(p);
        }
        ok(aligned, "every block is 16-aligned");
        ok(big_enough, "every block holds at least what was asked");

        /* a freed block is the next one of its class */
        void *a = ta_malloc(100);
        ta_free(a);
        void *b = ta_malloc(120); /* 100 and 120 share the 128 class */
        ok(a == b, "a freed block is reused for the same class");
        void *c = ta_malloc(120);
        ok(c != b, "a live block is not handed out twice");

        /* calloc zeroes a reused block */
        memset(b, 0xcd, 120);
        ta_free(b);
        unsigned char *z = ta_calloc(12, 10);
        ok(z == b && all_bytes(z, 120, 0), "calloc zeroes a reused block");
        volatile size_t half = SIZE_MAX / 2;
        errno = 0;
        ok(ta_calloc(half, 3) == NULL && errno == ENOMEM, "calloc: overflow is ENOMEM");

        /* realloc keeps the contents, grows across classes, stays put when it fits */
        char *s = ta_malloc(10);
        strcpy(s, "sandboxer");
        char *s2 = ta_realloc(s, 12);
        ok(s2 == s, "realloc within the class stays in place");
        char *s3 = ta_realloc(s2, 5000);
        ok(s3 && strcmp(s3, "sandboxer") == 0, "realloc to a larger class keeps the contents");
        char *s4 = ta_realloc(s3, 400000);
        ok(s4 && strcmp(s4, "sandboxer") == 0 && ta_malloc_usable_size(s4) >= 400000,
                "realloc to a large block keeps the contents");
        char *s5 = ta_realloc(s4, 20);
        ok(s5 && strcmp(s5, "sandboxer") == 0 && ta_malloc_usable_size(s5) < 400000,
                "realloc down from a large block gives the mapping back and keeps the contents");
        ta_free(s5);
        ok(ta_realloc(NULL, 7) != NULL, "realloc(NULL) is malloc");

        /* a large block: its own mapping, zero-filled, usable */
        unsigned char *big = ta_calloc(1, 1 << 20);
        ok(big && all_bytes(big, 1 << 20, 0), "a large calloc is zero-filled");
        memset(big, 1, 1 << 20);
        ta_free(big);

        /* over-aligned allocations, and freeing them */
        bool al = true;
        for (size_t align = 32; align <= 8192; align *= 2) {
                void *p = ta_aligned_alloc(align, 100);
                if (!p || ((uintptr_t) p & (align - 1)) || ta_malloc_usable_size(p) < 100)
                        al = false;
                if (p)
                        memset(p, 0x5a, 100);
                ta_free(p);
        }
        ok(al, "aligned_alloc honours alignments 32..8192 and the block is usable");
        void *pm = NULL;
        is_int(ta_posix_memalign(&pm, 64, 10), 0, "posix_memalign(64)");
        ok(pm && ((uintptr_t) pm & 63) == 0, "posix_memalign's block is 64-aligned");
        ta_free(pm);
        is_int(ta_posix_memalign(&pm, 3, 10), EINVAL,
                "posix_memalign: an alignment that is no power of two");
        errno = 0;
        ok(ta_aligned_alloc(48, 10) == NULL && errno == EINVAL, "aligned_alloc: 48 is EINVAL");

        /* many blocks live at once: across arenas, none overlapping */
        enum { N = 5000 };
        static unsigned char *live[N];
        bool distinct = true;
        for (int i = 0; i < N; i++) {
                live[i] = ta_malloc(200 + (size_t) (i % 7) * 100);
                if (!live[i]) {
                        distinct = false;
                        break;
                }
                memset(live[i], i & 0xff, 200);
        }
        for (int i = 0; i < N && distinct; i++)
                if (!all_bytes(live[i], 200, (unsigned char) (i & 0xff)))
                        distinct = false;
        ok(distinct, "%d live blocks (several arenas) keep their own contents", N);
        for (int i = 0; i < N; i++)
                ta_free(live[i]);
        ta_free(NULL);
        ok(true, "free(NULL) is a no-op");

        /* a double free is caught (abort), not a block handed out twice */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
                void *d = ta_malloc(40);
                ta_free(d);
                ta_free(d);
                _exit(0);
        }
        int st = 0;
        ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                "a double free aborts");
        errno = 1234;
        void *pm2 = NULL;
        ok(ta_posix_memalign(&pm2, 64, 8) == 0 && errno == 1234, "posix_memalign leaves errno alone");
        ta_free(pm2);
        return done_testing();
}
