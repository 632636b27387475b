/* time-util.h — monotonic time in nanoseconds. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t sbx_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* clock's time timeout_ms from now: a deadline for pthread_cond_timedwait() (CLOCK_REALTIME, a
 * condition variable's default clock) or pthread_cond_clockwait(..., CLOCK_MONOTONIC, ...), a wait
 * that a wall clock stepped back does not stretch. */
static inline void sbx_deadline(clockid_t clock, int timeout_ms, struct timespec *ret) {
        clock_gettime(clock, ret);
        ret->tv_sec += timeout_ms / 1000;
        ret->tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (ret->tv_nsec >= 1000000000L)
                ret->tv_sec++, ret->tv_nsec -= 1000000000L;
}
static inline void sbx_deadline_monotonic(int timeout_ms, struct timespec *ret) {
        sbx_deadline(CLOCK_MONOTONIC, timeout_ms, ret);
}
static inline void sbx_deadline_realtime(int timeout_ms, struct timespec *ret) {
        sbx_deadline(CLOCK_REALTIME, timeout_ms, ret);
}
