/* musl-libc.c — a libc function the musl CLI replaces, where musl's does more than we need.
 *
 * open(): musl follows every open(..., O_CLOEXEC) with fcntl(fd, F_SETFD, FD_CLOEXEC), for
 * kernels before 2.6.23 that ignored the flag. sandboxer needs Linux 5.x at least, and a `sandboxer
 * run` opens 70-80 files (cgroup files, rule paths, /proc): as many extra system calls, each a
 * round trip through the hypervisor on a VM. Linked into the musl CLI only (src/cli/meson.build),
 * where it takes the place of musl's open (a static link pulls an archive member only for a symbol
 * nothing else defines); glibc's open makes one system call already. openat() in musl makes one
 * too. Not a cancellation point here (the CLI does not cancel threads). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

int open(const char *path, int flags, ...) {
        mode_t mode = 0;
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
                va_list ap;
                va_start(ap, flags);
                mode = va_arg(ap, mode_t);
                va_end(ap);
        }
        return (int) syscall(SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

/* memcpy() and memmove(): musl's x86_64 memcpy is `rep movsq` whatever the size, whose start-up
 * costs ~40 ns a call on the VMs we run on (glibc's: ~3 ns), and a `sandboxer run` makes ~2,900
 * small copies (stdio, the JSON writer, string building): ~0.1 ms. These copy with ordinary
 * loads and stores, and leave `rep movsb` to large blocks, where its start-up is nothing. Both
 * are defined so that musl's memmove (which jumps into its memcpy's body) is not linked either.
 * The loops must not be turned back into calls of memcpy by the compiler. */
#include <stdint.h>
#include <string.h>

/* Neither compiler may turn the loops back into calls of memcpy or memmove (GCC's loop
 * distribution, clang's builtins), and no stack protector: musl copies a program's TLS image
 * with memcpy before the thread pointer (and so the canary) exists. */
#if defined(__clang__)
#define SBX_NO_LIBCALL __attribute__((no_builtin("memcpy", "memmove"), no_stack_protector))
#else
#define SBX_NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns"), no_stack_protector))
#endif

static inline uint64_t load64(const unsigned char *p) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        return v;
}
static inline void store64(unsigned char *p, uint64_t v) {
        __builtin_memcpy(p, &v, 8);
}

/* Forward: safe also for overlapping blocks where dst < src (every load precedes the stores
 * that could reach it). */
static SBX_NO_LIBCALL void copy_forward(unsigned char *d, const unsigned char *s, size_t n) {
#if defined(__x86_64__)
        if (n >= 2048 && (d + n <= s || s + n <= d)) {
                __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
                return;
        }
#endif
        while (n >= 32) {
                uint64_t a = load64(s), b = load64(s + 8), c = load64(s + 16), e = load64(s + 24);
                store64(d, a), store64(d + 8, b), store64(d + 16, c), store64(d + 24, e);
                d += 32, s += 32, n -= 32;
        }
        while (n >= 8) {
                store64(d, load64(s));
                d += 8, s += 8, n -= 8;
        }
        while (n > 0) {
                *d++ = *s++;
                n--;
        }
}

static SBX_NO_LIBCALL void copy_backward(unsigned char *d, const unsigned char *s, size_t n) {
        d += n, s += n;
        while (n >= 8) {
                d -= 8, s -= 8, n -= 8;
                store64(d, load64(s));
        }
        while (n > 0) {
                *--d = *--s;
                n--;
        }
}

SBX_NO_LIBCALL void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
        copy_forward(dst, src, n);
        return dst;
}

SBX_NO_LIBCALL void *memmove(void *dst, const void *src, size_t n) {
        unsigned char *d = dst;
        const unsigned char *s = src;
        if (d == s || n == 0)
                return dst;
        if (d < s || d >= s + n)
                copy_forward(d, s, n);
        else
                copy_backward(d, s, n);
        return dst;
}
