/* debug.c — phase timing on request (see debug.h). */
#include "basic/debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void sbx_debug_mark(const char *phase) {
        static int on = -1;
        static struct timespec t0;
        if (on < 0) {
                const char *v = getenv("SANDBOXER_DEBUG_TIMING");
                on = v && v[0] == '1';
                clock_gettime(CLOCK_MONOTONIC, &t0);
        }
        if (!on)
                return;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long us = (long) ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000);
        fprintf(stderr, "sandboxer: timing %7ld us  %s\n", us, phase);
}
