/* vm-image.c — see vm-image.h: the guest kernel found and made uncompressed, the image's cache
 * entries (made aside, renamed into place, found again by content), and the host's TSC rate. The
 * initramfs's contents are vm-initrd.c's. */
#include "vm/vm-image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "backend/common.h"
#include "basic/cache.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "vm/vm-internal.h"

/* Changes whenever what the initramfs holds or how it is laid out changes: old entries are then
 * never found again (and pruned). */
#define VM_INITRD_FORMAT "sandboxer-vm-initrd-1"
#define VM_KEEP 4 /* entries of each kind kept in the cache */

/* Where libarchive is not linked (the static CLI: Debian ships no static zstd and lz4 for it),
 * vm-unpack.c is not either and this stands in: the compressor's own tool (xz, gzip, zstd, lz4,
 * bzip2; xz-utils is installed with the kernel package), named by the stream's magic, reads the
 * data from a memfd and writes to fd, or to a memfd read back into out. Only on a cache miss. */
__attribute__((weak)) int vm_unpack(const void *data, size_t len, int fd, sbx_buf *out, uint64_t *ret_size,
        const char *what, sbx_error *e) {
        static const struct {
                const char *magic;
                size_t n;
                const char *tool, *arg;
        } fmts[] = {
                {"\xfd"
                 "7zXZ\0",
                        6, "xz", NULL},
                {"\x1f\x8b", 2, "gzip", NULL},
                {"\x28\xb5\x2f\xfd", 4, "zstd", NULL},
                {"\x02\x21\x4c\x18", 4, "lz4", NULL}, /* legacy frame, as the kernel writes it */
                {"\x04\x22\x4d\x18", 4, "lz4", NULL},
                {"BZh", 3, "bzip2", NULL},
                {"\x5d\0\0", 3, "xz", "--format=lzma"},
        };
        size_t k = 0;
        while (k < ELEMENTSOF(fmts) && (len < fmts[k].n || memcmp(data, fmts[k].magic, fmts[k].n) != 0))
                k++;
        if (k == ELEMENTSOF(fmts))
                return sbx_error_set(e, EBADMSG, "microvm", "cannot decompress %s: unknown format", what);
        char tool[PATH_MAX];
        int tfd = sbx_backend_open_tool(fmts[k].tool, tool, sizeof tool);
        if (tfd < 0)
                return sbx_error_set(e, ENOENT, "microvm",
                        "cannot decompress %s: %s is not installed (Debian: apt-get install %s)", what,
                        fmts[k].tool, streq(fmts[k].tool, "xz") ? "xz-utils" : fmts[k].tool);
        close(tfd);
        _cleanup_close_ int in = memfd_create("sandboxer-unpack-in", MFD_CLOEXEC);
        _cleanup_close_ int mem = fd < 0 ? memfd_create("sandboxer-unpack-out", MFD_CLOEXEC) : -EBADF;
        int dst = fd >= 0 ? fd : mem;
        int r;
        if (in < 0 || dst < 0)
                return sbx_error_set(e, errno, "microvm", "memfd_create: %m");
        if ((r = sbx_write_all(in, data, len)) < 0 || lseek(in, 0, SEEK_SET) < 0)
                return sbx_error_set(e, r < 0 ? -r : errno, "microvm", "cannot decompress %s: memfd", what);
        off_t start = lseek(dst, 0, SEEK_CUR);
        pid_t pid = fork();
        if (pid < 0)
                return sbx_error_set(e, errno, "microvm", "fork: %m");
        if (pid == 0) {
                int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (dup2(in, 0) < 0 || dup2(dst, 1) < 0 || (nul >= 0 && dup2(nul, 2) < 0))
                        _exit(127);
                const char *argv[] = {fmts[k].tool, "-dc", fmts[k].arg, NULL};
                if (!fmts[k].arg)
                        argv[2] = NULL;
                else
                        argv[1] = fmts[k].arg, argv[2] = "-dc";
                execv(tool, (char **) argv);
                _exit(127);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return sbx_error_set(e, errno, "microvm", "waitpid: %m");
        /* gzip says 2 for "trailing garbage ignored": the kernel's size word after the stream */
        bool fine = WIFEXITED(st) &&
                    (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 2 && streq(fmts[k].tool, "gzip")));
        if (!fine)
                return sbx_error_set(e, EBADMSG, "microvm", "cannot decompress %s: %s -dc %s %d (corrupt?)",
                        what, fmts[k].tool, WIFEXITED(st) ? "exited" : "was killed by signal",
                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        off_t end = lseek(dst, 0, SEEK_CUR);
        uint64_t total = end >= start && start >= 0 ? (uint64_t) (end - start) : 0;
        if (fd < 0) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t n;
                if ((r = vm_read_fd(mem, &buf, &n)) < 0 || (r = sbx_buf_put(out, buf, n)) < 0)
                        return sbx_error_set(
                                e, -r, "microvm", "cannot read the decompressed %s: %s", what, strerror(-r));
                total = n;
        }
        if (ret_size)
                *ret_size = total;
        return 0;
}

int vm_read_fd(int fd, uint8_t **ret, size_t *ret_len) {
        return sbx_read_fd_all(fd, SIZE_MAX, (char **) ret, ret_len);
}

int vm_read_path(const char *path, uint8_t **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return vm_read_fd(fd, ret, ret_len);
}

int vm_tmp_open(const char *dir, char tmp[static PATH_MAX]) {
        if ((size_t) snprintf(tmp, PATH_MAX, "%s/.tmp-XXXXXX", dir) >= PATH_MAX)
                return -ENAMETOOLONG;
        int fd = mkostemp(tmp, O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Two runs making the same entry both rename over it: either's bytes are the same. */
int vm_tmp_commit(int fd, const char *tmp, const char *path) {
        if (fchmod(fd, 0644) < 0 || rename(tmp, path) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

static void hex16(const uint8_t d[static SHA256_DIGEST_SIZE], char ret[static 17]) {
        for (size_t i = 0; i < 8; i++)
                snprintf(ret + 2 * i, 3, "%02x", d[i]);
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* A release names a directory: letters, digits and ._+- only. */
static bool release_valid(const char *s, size_t n) {
        if (n == 0 || n >= 128 || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-", s[i]) ||
                        !s[i])
                        return false;
        return true;
}

typedef enum kernel_kind {
        KERNEL_BZIMAGE,
        KERNEL_ELF,
} kernel_kind;

/* What kernel image path is, and its release: the bzImage header's version string (its first
 * word), or an ELF's "Linux version RELEASE ...". */
static int kernel_probe(const char *path, kernel_kind *ret_kind, char *release, size_t rsize, sbx_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        uint8_t h[0x280];
        char v[160];
        size_t n = 0;
        if (fd < 0 || fstat(fd, &st) < 0)
                return sbx_error_set(e, errno, "microvm", "cannot open the guest kernel %s: %m", path);
        if (!S_ISREG(st.st_mode))
                return sbx_error_set(
                        e, ENOEXEC, "microvm", "the guest kernel %s is not a regular file", path);
        ssize_t k = pread(fd, h, sizeof h, 0);
        if (k < 0)
                return sbx_error_set(e, errno, "microvm", "cannot read the guest kernel %s: %m", path);
        if (k >= 4 && memcmp(h, "\177ELF", 4) == 0) {
                void *map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
                if (map == MAP_FAILED)
                        return sbx_error_set(
                                e, errno, "microvm", "cannot map the guest kernel %s: %m", path);
                const char *s = memmem(map, (size_t) st.st_size, "Linux version ", 14);
                if (s) {
                        s += 14;
                        while (n < sizeof v - 1 && s + n < (const char *) map + st.st_size && s[n] > ' ' &&
                                (unsigned char) s[n] < 0x7f)
                                n++;
                        memcpy(v, s, n);
                }
                munmap(map, (size_t) st.st_size);
                if (!s)
                        return sbx_error_set(e, ENOEXEC, "microvm",
                                "%s is an ELF file but not a Linux kernel (no \"Linux version\" inside); "
                                "set strict.kernel to a vmlinux or a /boot/vmlinuz-RELEASE",
                                path);
                *ret_kind = KERNEL_ELF;
        } else if (k >= 0x250 && memcmp(h + 0x202, "HdrS", 4) == 0) {
                uint16_t ver = (uint16_t) (h[0x206] | h[0x207] << 8),
                         kv = (uint16_t) (h[0x20e] | h[0x20f] << 8);
                /* payload_offset/length are there from boot protocol 2.08 (Linux 2.6.26) */
                if (ver < 0x0208 || kv == 0)
                        return sbx_error_set(e, ENOEXEC, "microvm",
                                "the bzImage %s is too old (boot protocol %x.%02x, needs 2.08) or has no "
                                "version string; use a newer kernel",
                                path, ver >> 8, ver & 0xff);
                k = pread(fd, v, sizeof v - 1, (off_t) kv + 0x200);
                if (k < 0)
                        return sbx_error_set(
                                e, errno, "microvm", "cannot read the guest kernel %s: %m", path);
                while (n < (size_t) k && v[n] > ' ' && (unsigned char) v[n] < 0x7f)
                        n++;
                *ret_kind = KERNEL_BZIMAGE;
        } else
                return sbx_error_set(e, ENOEXEC, "microvm",
                        "%s is not a Linux kernel: neither a bzImage (no \"HdrS\" boot header) nor an ELF "
                        "vmlinux; set strict.kernel to a /boot/vmlinuz-RELEASE, or leave it out to use the "
                        "host's",
                        path);
        if (!release_valid(v, n) || n >= rsize)
                return sbx_error_set(e, ENOEXEC, "microvm",
                        "the guest kernel %s has no usable release in its version string", path);
        memcpy(release, v, n);
        release[n] = 0;
        return 0;
}

static int kernel_find(const char *path, char *vmlinuz, size_t size, char *release, size_t rsize,
        kernel_kind *ret_kind, sbx_error *e) {
        if (path) {
                int r = kernel_probe(path, ret_kind, release, rsize, e);
                if (r < 0)
                        return r;
                if ((size_t) snprintf(vmlinuz, size, "%s", path) >= size)
                        return sbx_error_set(
                                e, ENAMETOOLONG, "microvm", "the kernel path %s is too long", path);
                return 0;
        }
        DIR *d = opendir("/boot");
        char best[PATH_MAX] = "", best_rel[128] = "";
        kernel_kind best_kind = KERNEL_BZIMAGE;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char p[PATH_MAX], rel[128], dep[PATH_MAX];
                kernel_kind kind;
                if (strncmp(de->d_name, "vmlinuz-", 8) != 0)
                        continue;
                snprintf(p, sizeof p, "/boot/%s", de->d_name);
                if (kernel_probe(p, &kind, rel, sizeof rel, NULL) < 0)
                        continue;
                snprintf(dep, sizeof dep, "/lib/modules/%s/modules.dep", rel);
                if (access(dep, R_OK) < 0)
                        continue;
                if (!best[0] || strverscmp(rel, best_rel) > 0) {
                        snprintf(best, sizeof best, "%s", p);
                        snprintf(best_rel, sizeof best_rel, "%s", rel);
                        best_kind = kind;
                }
        }
        if (d)
                closedir(d);
        if (!best[0])
                return sbx_error_set(e, ENOENT, "microvm",
                        "no guest kernel: no /boot/vmlinuz-* with its /lib/modules/RELEASE; install "
                        "linux-image-amd64 (apt-get install linux-image-amd64) or set the policy's "
                        "strict.kernel");
        if (strlen(best) >= size || strlen(best_rel) >= rsize)
                return -ENAMETOOLONG;
        memcpy(vmlinuz, best, strlen(best) + 1);
        memcpy(release, best_rel, strlen(best_rel) + 1);
        *ret_kind = best_kind;
        return 0;
}

int sbx_vm_kernel_find(
        const char *path, char *vmlinuz, size_t size, char *release, size_t rsize, sbx_error *e) {
        kernel_kind kind;
        return kernel_find(path, vmlinuz, size, release, rsize, &kind, e);
}

/* A memo in the cache: a small text file named by a key of file identities, holding a digest
 * computed from their contents, so that a hot run stats files instead of hashing megabytes. */
static void memo_name(const char *dir, const char *prefix, const char *const *files, const int *fds,
        const char *extra, char ret[static PATH_MAX]) {
        sha256_ctx c;
        uint8_t d[SHA256_DIGEST_SIZE];
        char h[17], line[PATH_MAX + 160];
        sha256_init(&c);
        sha256_update(&c, extra, strlen(extra) + 1);
        for (size_t i = 0; files[i] || fds[i] >= 0; i++) {
                struct stat st = {0};
                if (files[i] ? stat(files[i], &st) : fstat(fds[i], &st))
                        memset(&st, 0, sizeof st);
                int n = snprintf(line, sizeof line, "%s %llu %llu %lld %lld.%ld %lld.%ld\n",
                        files[i] ? files[i] : "", (unsigned long long) st.st_dev,
                        (unsigned long long) st.st_ino, (long long) st.st_size,
                        (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long) st.st_ctim.tv_sec,
                        st.st_ctim.tv_nsec);
                sha256_update(&c, line, (size_t) n);
        }
        sha256_final(&c, d);
        hex16(d, h);
        snprintf(ret, PATH_MAX, "%s/%s%s", dir, prefix, h);
}

static bool memo_get(const char *path, char ret[static 65]) {
        _cleanup_free_ char *s = NULL;
        size_t n;
        if (sbx_cache_read(path, 128, &s, &n) < 0 || n < 64)
                return false;
        for (size_t i = 0; i < 64; i++)
                if (!strchr("0123456789abcdef", s[i]) || !s[i])
                        return false;
        memcpy(ret, s, 64);
        ret[64] = 0;
        return true;
}

static void memo_put(const char *path, const char *prefix, const char hex[static 65]) {
        char s[66];
        snprintf(s, sizeof s, "%s\n", hex);
        (void) sbx_cache_store(path, s, 65, prefix, 4 * VM_KEEP); /* a memo is only a shortcut */
}

/* Before an entry is added: the oldest of its kind beyond VM_KEEP go, and the temporary files
 * a run that died left behind (a week old: one in the making is never that old). */
static void entries_prune(const char *dir, const char *prefix) {
        sbx_cache_prune(dir, prefix, VM_KEEP - 1);
        sbx_cache_prune(dir, ".tmp-", 64);
}

static bool entry_ok(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
               !(st.st_mode & 022);
}

/* The uncompressed kernel of the bzImage vmlinuz, kept as vmlinux-HASH (HASH of the bzImage). */
static int vmlinux_get(
        const char *dir, const char *vmlinuz, char *ret, size_t size, bool *built, sbx_error *e) {
        char memo[PATH_MAX], hex[65], tmp[PATH_MAX];
        const char *const files[] = {vmlinuz, NULL};
        const int fds[] = {-1, -1};
        _cleanup_free_ uint8_t *img = NULL;
        size_t len = 0;
        int r;
        memo_name(dir, "id-vmlinuz-", files, fds, "vmlinuz", memo);
        if (!memo_get(memo, hex)) {
                r = vm_read_path(vmlinuz, &img, &len);
                if (r < 0)
                        return sbx_error_set(e, r, "microvm", "cannot read the guest kernel %s: %s", vmlinuz,
                                strerror(-r));
                sha256_hex(img, len, hex);
                memo_put(memo, "id-vmlinuz-", hex);
        }
        if ((size_t) snprintf(ret, size, "%s/vmlinux-%.16s", dir, hex) >= size)
                return -ENAMETOOLONG;
        if (entry_ok(ret))
                return 0;
        if (!img && (r = vm_read_path(vmlinuz, &img, &len)) < 0)
                return sbx_error_set(
                        e, r, "microvm", "cannot read the guest kernel %s: %s", vmlinuz, strerror(-r));
        /* the protected-mode part follows the setup sectors; the payload is where the header says */
        unsigned setup = len > 0x250 ? img[0x1f1] : 0;
        uint32_t off = 0, plen = 0;
        if (len > 0x250) {
                memcpy(&off, img + 0x248, 4);
                memcpy(&plen, img + 0x24c, 4);
        }
        size_t start = (size_t) ((setup ? setup : 4) + 1) * 512;
        if (len <= 0x250 || plen < 6 || start + off > len || plen > len - start - off)
                return sbx_error_set(e, ENOEXEC, "microvm",
                        "the bzImage %s is truncated or corrupt (its payload lies outside the file); "
                        "reinstall the kernel package or set strict.kernel",
                        vmlinuz);
        _cleanup_close_ int fd = vm_tmp_open(dir, tmp);
        if (fd < 0)
                return sbx_error_set(
                        e, fd, "microvm", "cannot make a file in the cache %s: %s", dir, strerror(-fd));
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "the kernel in %s", vmlinuz);
        uint8_t head[4] = {0};
        /* The payload ends with the uncompressed size (le32): gzip's own ISIZE, or the build's
         * size_append after the other formats, which their decoders take for trailing garbage. */
        const uint8_t *pl = img + start + off;
        uint32_t want = (uint32_t) pl[plen - 4] | (uint32_t) pl[plen - 3] << 8 |
                        (uint32_t) pl[plen - 2] << 16 | (uint32_t) pl[plen - 1] << 24;
        uint64_t got = 0;
        bool gzip = pl[0] == 0x1f && pl[1] == 0x8b, plain = memcmp(pl, "\177ELF", 4) == 0;
        if (plain) /* CONFIG_KERNEL_UNCOMPRESSED: the ELF as it is */
                r = sbx_write_all(fd, pl, plen);
        else
                r = vm_unpack(pl, gzip ? plen : plen - 4, fd, NULL, &got, what, e);
        if (r < 0 && plain)
                r = sbx_error_set(e, r, "microvm", "cannot write %s: %s", tmp, strerror(-r));
        if (r >= 0 && !plain && (uint32_t) got != want)
                r = sbx_error_set(e, EBADMSG, "microvm",
                        "the kernel in %s decompressed to %llu bytes, its header says %u: corrupt; "
                        "reinstall the kernel package",
                        vmlinuz, (unsigned long long) got, want);
        if (r >= 0 && (pread(fd, head, 4, 0) != 4 || memcmp(head, "\177ELF", 4) != 0))
                r = sbx_error_set(e, ENOEXEC, "microvm",
                        "the kernel in %s did not decompress to an ELF vmlinux; set strict.kernel to an ELF "
                        "vmlinux",
                        vmlinuz);
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        entries_prune(dir, "vmlinux-");
        r = vm_tmp_commit(fd, tmp, ret);
        if (r < 0)
                return sbx_error_set(e, r, "microvm", "cannot store %s: %s", ret, strerror(-r));
        *built = true;
        return 0;
}

/* The initramfs for the init at init_fd and the modules of release, kept as initrd-KEY. */
static int initrd_get(const char *dir, const char *release, int init_fd, sbx_vm_image *img, sbx_error *e) {
        static const char *const names[] = {SBX_VM_MODULES};
        char moddir[192], dep[256], memo[PATH_MAX], hex[65], tmp[PATH_MAX], extra[1024];
        struct stat st;
        /* its identity keys the memo: it must be a file */
        if (fstat(init_fd, &st) < 0 || !S_ISREG(st.st_mode))
                return sbx_error_set(
                        e, EBADF, "microvm", "the sandbox init (fd %d) is not an open file", init_fd);
        snprintf(moddir, sizeof moddir, "/lib/modules/%s", release);
        snprintf(dep, sizeof dep, "%s/modules.dep", moddir);
        int n = snprintf(extra, sizeof extra, "%s %s", VM_INITRD_FORMAT, release);
        for (size_t i = 0; i < ELEMENTSOF(names) && n < (int) sizeof extra; i++)
                n += snprintf(extra + n, sizeof extra - (size_t) n, " %s", names[i]);
        /* modules.dep is rewritten (depmod) whenever the modules of the release change */
        const char *const files[] = {dep, NULL, NULL};
        const int fds[] = {-1, init_fd, -1};
        memo_name(dir, "id-initrd-", files, fds, extra, memo);
        if (memo_get(memo, hex)) {
                if ((size_t) snprintf(img->initrd, sizeof img->initrd, "%s/initrd-%.16s", dir, hex) >=
                        sizeof img->initrd)
                        return -ENAMETOOLONG;
                if (entry_ok(img->initrd)) {
                        snprintf(img->digest, sizeof img->digest, "%.16s", hex);
                        return 0;
                }
        }
        _cleanup_free_ uint8_t *init = NULL;
        size_t init_len = 0;
        int r = vm_read_fd(init_fd, &init, &init_len);
        if (r < 0)
                return sbx_error_set(e, r, "microvm", "cannot read the sandbox init: %s", strerror(-r));
        vm_module *m = NULL;
        size_t n_m = 0;
        r = vm_modules_resolve(moddir, names, ELEMENTSOF(names), &m, &n_m, e);
        if (r < 0)
                return r;
        sha256_ctx c;
        uint8_t d[SHA256_DIGEST_SIZE];
        uint64_t l = init_len;
        sha256_init(&c);
        sha256_update(&c, VM_INITRD_FORMAT, sizeof VM_INITRD_FORMAT);
        sha256_update(&c, release, strlen(release) + 1);
        sha256_update(&c, &l, sizeof l);
        sha256_update(&c, init, init_len);
        for (size_t i = 0; i < n_m; i++) {
                l = m[i].len;
                sha256_update(&c, m[i].file, strlen(m[i].file) + 1);
                sha256_update(&c, &l, sizeof l);
                sha256_update(&c, m[i].data, m[i].len);
        }
        sha256_final(&c, d);
        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        snprintf(img->digest, sizeof img->digest, "%.16s", hex);
        if ((size_t) snprintf(img->initrd, sizeof img->initrd, "%s/initrd-%.16s", dir, hex) >=
                sizeof img->initrd) {
                vm_modules_free(m, n_m);
                return -ENAMETOOLONG;
        }
        if (!entry_ok(img->initrd)) {
                sbx_buf out = {0};
                r = vm_initrd_write(init, init_len, m, n_m, &out);
                _cleanup_close_ int fd = r < 0 ? r : vm_tmp_open(dir, tmp);
                if (fd >= 0) {
                        r = sbx_write_all(fd, out.p, out.n);
                        if (r < 0)
                                (void) unlink(tmp);
                        else {
                                entries_prune(dir, "initrd-");
                                r = vm_tmp_commit(fd, tmp, img->initrd);
                        }
                } else
                        r = fd;
                sbx_buf_done(&out);
                if (r < 0) {
                        vm_modules_free(m, n_m);
                        return sbx_error_set(
                                e, r, "microvm", "cannot store %s: %s", img->initrd, strerror(-r));
                }
                img->built = true;
        }
        vm_modules_free(m, n_m);
        memo_put(memo, "id-initrd-", hex);
        return 0;
}

static int vm_cache_dir(char ret[static PATH_MAX], sbx_error *e) {
        char base[PATH_MAX];
        int r = sbx_cache_dir(base, sizeof base);
        if (r < 0)
                return sbx_error_set(e, r, "microvm",
                        "no cache directory for the guest's kernel and initramfs: %s; set "
                        "SANDBOXER_CACHE_DIR to a directory of yours",
                        strerror(-r));
        if ((size_t) snprintf(ret, PATH_MAX, "%s/microvm", base) >= PATH_MAX)
                return -ENAMETOOLONG;
        /* 0755: qemu may run as another user, and reads the entries (0644) by path */
        r = sbx_own_dir(ret, 0755);
        if (r < 0)
                return sbx_error_set(e, r, "microvm",
                        "cannot use %s: %s; it must be a directory of yours only you can write", ret,
                        strerror(-r));
        return 0;
}

int sbx_vm_image_get(const char *path, int init_fd, sbx_vm_image *ret, sbx_error *e) {
        sbx_vm_image img = {0};
        char dir[PATH_MAX];
        uint64_t t0 = now_ms();
        kernel_kind kind;
        int r = kernel_find(
                path, img.vmlinuz, sizeof img.vmlinuz, img.release, sizeof img.release, &kind, e);
        if (r < 0)
                return r;
        r = vm_cache_dir(dir, e);
        if (r < 0)
                return r;
        if (kind == KERNEL_ELF)
                snprintf(img.kernel, sizeof img.kernel, "%s", img.vmlinuz); /* used as it is */
        else if ((r = vmlinux_get(dir, img.vmlinuz, img.kernel, sizeof img.kernel, &img.built, e)) < 0)
                return r;
        r = initrd_get(dir, img.release, init_fd, &img, e);
        if (r < 0)
                return r;
        img.build_ms = img.built ? now_ms() - t0 : 0;
        *ret = img;
        return 0;
}

#if defined(__x86_64__)
static bool cpu_flags_have(const char *a, const char *b) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        while (f && getline(&line, &cap, f) > 0) {
                if (strncmp(line, "flags", 5) != 0)
                        continue;
                char *c = strchr(line, ':');
                if (!c)
                        return false;
                line[strcspn(line, "\n")] = ' ';
                char wa[64], wb[64];
                snprintf(wa, sizeof wa, " %s ", a);
                snprintf(wb, sizeof wb, " %s ", b);
                return strstr(c, wa) && strstr(c, wb);
        }
        return false;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* One reading of both clocks: the TSC at the middle of the narrowest of a few rdtsc brackets
 * around clock_gettime (a bracket is ~50 cycles here; one the vCPU was descheduled or interrupted
 * in is far wider and loses). */
static void tsc_read(uint64_t *ret_tsc, struct timespec *ret_ts) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 8; i++) {
                struct timespec t;
                uint64_t a = __rdtsc();
                clock_gettime(CLOCK_MONOTONIC_RAW, &t);
                uint64_t b = __rdtsc();
                if (b - a < best) {
                        best = b - a;
                        *ret_tsc = a + (b - a) / 2;
                        *ret_ts = t;
                }
        }
}

/* TSC ticks per ms against CLOCK_MONOTONIC_RAW (the clock NTP does not slew) over three
 * consecutive 10 ms intervals: the median. Each end is known to ~10 ns, so a rate to ~1e-6
 * (2596134 kHz on the development VM, the same to the kHz run after run). */
static uint64_t tsc_measure(void) {
        uint64_t c[4], k[3];
        struct timespec t[4], d = {0, 10000000};
        tsc_read(&c[0], &t[0]);
        for (size_t i = 1; i < 4; i++) {
                (void) nanosleep(&d, NULL);
                tsc_read(&c[i], &t[i]);
                int64_t ns =
                        (t[i].tv_sec - t[i - 1].tv_sec) * 1000000000LL + (t[i].tv_nsec - t[i - 1].tv_nsec);
                k[i - 1] = ns > 0 ? ((c[i] - c[i - 1]) * 1000000 + (uint64_t) ns / 2) / (uint64_t) ns : 0;
        }
        qsort(k, ELEMENTSOF(k), sizeof k[0], cmp_u64);
        return k[1];
}
#endif

int sbx_vm_tsc_khz(uint64_t *ret, sbx_error *e) {
#if defined(__x86_64__)
        char dir[PATH_MAX], path[PATH_MAX + 64] = "", boot_id[64] = "";
        _cleanup_free_ char *s = NULL;
        size_t n;
        uint64_t khz = 0;
        _cleanup_fclose_ FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (f && fgets(boot_id, sizeof boot_id, f))
                boot_id[strspn(boot_id, "0123456789abcdef-")] = 0;
        if (boot_id[0] && vm_cache_dir(dir, NULL) >= 0) {
                snprintf(path, sizeof path, "%s/tsc-%s", dir, boot_id);
                if (sbx_cache_read(path, 32, &s, &n) == 0) {
                        khz = strtoull(s, NULL, 10);
                        if (khz >= 100000 && khz <= 100000000) {
                                *ret = khz;
                                return 0;
                        }
                }
        }
        /* without both the rate is not one number: it varies with the P-state or stops in C-states */
        if (!cpu_flags_have("constant_tsc", "nonstop_tsc"))
                return sbx_error_set(e, EOPNOTSUPP, "microvm",
                        "the host's TSC is not constant and nonstop (/proc/cpuinfo flags lack constant_tsc "
                        "or nonstop_tsc): the guest is not told its rate and calibrates its own clock");
        unsigned a = 0, b = 0, c = 0, d = 0;
        /* CPUID 0x15 (Intel): the TSC is crystal_hz * ebx / eax, exact when all three are given */
        if (__get_cpuid(0x15, &a, &b, &c, &d) && a && b && c)
                khz = (uint64_t) c * b / a / 1000;
        else
                khz = tsc_measure();
        if (khz < 100000 || khz > 100000000)
                return sbx_error_set(e, EOPNOTSUPP, "microvm",
                        "the host's TSC rate measured %llu kHz, not plausible: the guest calibrates its own "
                        "clock",
                        (unsigned long long) khz);
        if (path[0]) {
                char v[32];
                int k = snprintf(v, sizeof v, "%llu\n", (unsigned long long) khz);
                (void) sbx_cache_store(path, v, (size_t) k, "tsc-", 2);
        }
        *ret = khz;
        return 0;
#else
        return sbx_error_set(e, EOPNOTSUPP, "microvm",
                "the TSC rate is known on x86-64 only: the guest calibrates its own clock");
#endif
}
