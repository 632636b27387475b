/* childerr.h — how code running between clone and execve reports a failure: a fixed-size record
 * written to a pipe, filled with plain copies (no malloc, no stdio). */
#pragma once

#include <string.h>

typedef struct sbx_child_error {
        int errnum;
        char step[80];
        char path[256];
} sbx_child_error;

static inline int sbx_child_fail(sbx_child_error *e, int errnum, const char *step, const char *path) {
        if (errnum < 0)
                errnum = -errnum;
        if (e) {
                e->errnum = errnum ? errnum : 5 /* EIO */;
                size_t i = 0;
                for (; step && step[i] && i < sizeof e->step - 1; i++)
                        e->step[i] = step[i];
                e->step[i] = 0;
                for (i = 0; path && path[i] && i < sizeof e->path - 1; i++)
                        e->path[i] = path[i];
                e->path[i] = 0;
        }
        return -(errnum ? errnum : 5);
}
