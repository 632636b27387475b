/* debug.c — phase timing on request (see debug.h). */
#include "basic/debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int on = -1;
static uint64_t t0;

static uint64_t mono_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

bool sbx_debug_enabled(void) {
        if (on < 0) {
                const char *v = getenv("SANDBOXER_DEBUG_TIMING");
                on = v && v[0] == '1';
                t0 = mono_ns();
        }
        return on;
}

void sbx_debug_mark_at(const char *phase, uint64_t ns) {
        if (!sbx_debug_enabled() || ns == 0)
                return;
        long us = (long) ((int64_t) (ns - t0) / 1000);
        fprintf(stderr, "sandboxer: timing %7ld us  %s\n", us, phase);
}

void sbx_debug_mark(const char *phase) {
        if (sbx_debug_enabled())
                sbx_debug_mark_at(phase, mono_ns());
}
