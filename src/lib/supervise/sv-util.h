/* sv-util.h — the supervisor loop's helpers that need none of its state (sv-util.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Arm the one-shot timerfd fd for seconds from now (at least a nanosecond). 0 or -errno. */
int sv_arm_timer(int fd, double seconds);
/* All of buf to fd (waiting out EAGAIN); *ok false from the first failure on. */
void sv_write_all(int fd, const char *buf, size_t n, bool *ok);
/* Kill and reap every child we have left. */
void sv_reap_orphans(void);
/* A socket family's name ("unix", "inet", ...), or NULL. */
const char *sv_family_name(uint64_t f);
/* Whether path is prefix or below it. */
bool sv_under(const char *path, const char *prefix);
/* Whether path (or its base name, for a list entry without '/') is in list. */
bool sv_cmd_listed(char *const *list, const char *path);
