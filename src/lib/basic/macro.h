/* macro.h — cleanup attributes, ownership transfer and small helpers shared by all of sandboxer.
 * Modelled on systemd's macro.h: every owned local carries a cleanup attribute. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _public_ __attribute__((visibility("default")))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define STRLEN(x) (sizeof(x) - 1)

/* Hand over ownership of a pointer / fd: returns the value and clears the variable. */
#define TAKE_PTR(p)                                                                                         \
        ({                                                                                                  \
                __typeof__(p) _tp_ = (p);                                                                   \
                (p) = NULL;                                                                                 \
                _tp_;                                                                                       \
        })
#define TAKE_FD(fd)                                                                                         \
        ({                                                                                                  \
                int _tf_ = (fd);                                                                            \
                (fd) = -EBADF;                                                                              \
                _tf_;                                                                                       \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)

/* Close preserving errno; returns -EBADF so "fd = safe_close(fd)" resets the variable. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        (void) safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                             \
        static inline void func##p(type *p) {                                                               \
                if (*p)                                                                                     \
                        *p = func(*p);                                                                      \
        }

/* Negative errno from the current errno, never 0 (guards against a libc that forgot to set it). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return __builtin_strcmp(a, b) == 0;
}
#define streq(a, b) (__builtin_strcmp((a), (b)) == 0)
#define isempty(s) (!(s) || !*(s))
