/* debug.c — phase timing on request (see debug.h). */
#include "basic/debug.h"
#include "basic/macro.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* -1 until the first call; then 0, 1 or 2 (abs). Atomic: the server marks from several threads
 * (a second first call computes the same and only moves t0 by a hair). */
static int on = -1;
static uint64_t t0;

static uint64_t mono_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

static int mode(void) {
        int v = __atomic_load_n(&on, __ATOMIC_ACQUIRE);
        if (v < 0) {
                const char *e = getenv("SANDBOXER_DEBUG_TIMING");
                v = !e ? 0 : streq(e, "1") ? 1 : streq(e, "abs") ? 2 : 0;
                __atomic_store_n(&t0, mono_ns(), __ATOMIC_RELAXED);
                __atomic_store_n(&on, v, __ATOMIC_RELEASE);
        }
        return v;
}

bool sbx_debug_enabled(void) {
        return mode() > 0;
}

void sbx_debug_mark_at(const char *phase, uint64_t ns) {
        int v = mode();
        if (v == 0 || ns == 0)
                return;
        long us = (long) ((int64_t) (ns - __atomic_load_n(&t0, __ATOMIC_RELAXED)) / 1000);
        if (v == 2) /* the clock itself too: lines of several processes merge into one timeline */
                fprintf(stderr, "sandboxer: timing %7ld us  %s  @%llu\n", us, phase,
                        (unsigned long long) (ns / 1000));
        else
                fprintf(stderr, "sandboxer: timing %7ld us  %s\n", us, phase);
}

void sbx_debug_mark(const char *phase) {
        if (sbx_debug_enabled())
                sbx_debug_mark_at(phase, mono_ns());
}
