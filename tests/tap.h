/* tap.h — a tiny TAP producer for the unit tests: ok(), is_int(), is_str(), skip(),
 * done_testing(). Failures print the location and a diagnostic; the exit status is non-zero
 * when any test failed (or when the plan was not met). Header-only, one program per file. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned tap_n_, tap_failed_, tap_planned_;

static inline void plan(unsigned n) {
        tap_planned_ = n;
        printf("1..%u\n", n);
}

__attribute__((format(printf, 4, 5))) static inline bool tap_ok_(
        bool cond, const char *file, int line, const char *fmt, ...) {
        va_list ap;
        tap_n_++;
        if (!cond)
                tap_failed_++;
        printf("%sok %u - ", cond ? "" : "not ", tap_n_);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        if (!cond)
                printf("#   Failed test at %s:%d\n", file, line);
        fflush(stdout);
        return cond;
}
#define ok(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                                              \
        ({                                                                                                  \
                long long g_ = (long long) (got), w_ = (long long) (want);                                  \
                bool r_ = tap_ok_(g_ == w_, __FILE__, __LINE__, __VA_ARGS__);                               \
                if (!r_)                                                                                    \
                        printf("#          got: %lld\n#     expected: %lld\n", g_, w_);                     \
                r_;                                                                                         \
        })

#define is_str(got, want, ...)                                                                              \
        ({                                                                                                  \
                const char *g_ = (got), *w_ = (want);                                                       \
                bool r_ = tap_ok_(                                                                          \
                        g_ && w_ ? strcmp(g_, w_) == 0 : g_ == w_, __FILE__, __LINE__, __VA_ARGS__);        \
                if (!r_)                                                                                    \
                        printf("#          got: '%s'\n#     expected: '%s'\n", g_ ? g_ : "(null)",          \
                                w_ ? w_ : "(null)");                                                        \
                r_;                                                                                         \
        })

/* Diagnostic line ("# ...") that does not count as a test. */
#define diag(...) (printf("# " __VA_ARGS__), putchar('\n'))

static inline void skip(unsigned n, const char *why) {
        for (unsigned i = 0; i < n; i++)
                printf("ok %u # SKIP %s\n", ++tap_n_, why);
}

/* Print the plan (when none was given up front) and return the exit status for main(). */
static inline int done_testing(void) {
        if (tap_planned_ == 0)
                printf("1..%u\n", tap_n_);
        else if (tap_planned_ != tap_n_) {
                printf("# planned %u tests but ran %u\n", tap_planned_, tap_n_);
                return 1;
        }
        if (tap_failed_)
                printf("# failed %u of %u tests\n", tap_failed_, tap_n_);
        return tap_failed_ ? 1 : 0;
}
