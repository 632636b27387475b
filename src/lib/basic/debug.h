/* debug.h — SANDBOXER_DEBUG_TIMING=1: one line per phase on stderr with the microseconds since
 * the process started its run, to see where start-up time goes; =abs: each line also carries the
 * CLOCK_MONOTONIC time (µs), so that several processes' lines merge (serve and its supervisors).
 * Off (one getenv) otherwise. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

void sbx_debug_mark(const char *phase);
/* A phase that ended at mono_ns (CLOCK_MONOTONIC), measured elsewhere: in the spawn's child
 * before its exec, or by the init. */
void sbx_debug_mark_at(const char *phase, uint64_t mono_ns);
bool sbx_debug_enabled(void);
