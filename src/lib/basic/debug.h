/* debug.h — SANDBOXER_DEBUG_TIMING=1: one line per phase on stderr with the microseconds since
 * the process started its run, to see where start-up time goes. Off (one getenv) otherwise. */
#pragma once

void sbx_debug_mark(const char *phase);
