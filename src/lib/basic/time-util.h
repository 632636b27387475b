/* time-util.h — monotonic time in nanoseconds. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t sbx_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* CLOCK_MONOTONIC timeout_ms from now, for pthread_cond_clockwait(..., CLOCK_MONOTONIC, ...): a
 * wait that a wall clock stepped back does not stretch. */
static inline void sbx_deadline_monotonic(int timeout_ms, struct timespec *ret) {
        clock_gettime(CLOCK_MONOTONIC, ret);
        ret->tv_sec += timeout_ms / 1000;
        ret->tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (ret->tv_nsec >= 1000000000L)
                ret->tv_sec++, ret->tv_nsec -= 1000000000L;
}

/* CLOCK_REALTIME timeout_ms from now, for pthread_cond_timedwait(). */
static inline void sbx_deadline_realtime(int timeout_ms, struct timespec *ret) {
        clock_gettime(CLOCK_REALTIME, ret);
        ret->tv_sec += timeout_ms / 1000;
        ret->tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (ret->tv_nsec >= 1000000000L)
                ret->tv_sec++, ret->tv_nsec -= 1000000000L;
}
