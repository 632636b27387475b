/* time-util.h — monotonic time in nanoseconds. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t sbx_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}
