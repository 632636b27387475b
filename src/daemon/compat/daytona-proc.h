/* daytona-proc.h — the long-lived processes behind Daytona's sessions and interpreter contexts
 * (daytona-proc.c): a process fed on its stdin whose output a marker line cuts into units of
 * work, and the server's table of them. Shared by daytona-proc.c and daytona-session.c only. */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/compat/compat.h"

#define SESSIONS_MAX 256 /* sessions and contexts, per server */
#define LOG_MAX (4u * 1024 * 1024) /* per command and stream */

typedef struct sink {
        struct sink *next;
        int fd;
        bool interp; /* JSON text frames; else Daytona's log stream (binary, prefixed) */
        bool gone; /* a write failed: the client has gone */
        char held[3][4]; /* interp: the start of a UTF-8 sequence cut short, per stream */
        size_t held_len[3];
} sink;

typedef struct unit {
        struct unit *next;
        char id[40];
        char *command;
        char *out, *err, *both, *labeled; /* labeled: each chunk behind its stream's prefix */
        size_t out_len, err_len, both_len, labeled_len;
        bool truncated;
        bool seen[3]; /* its marker came on stdout [1], on stderr [2] */
        bool done;
        unsigned pins; /* a request waits on it: not dropped */
        int exit_code; /* -1: none (did not run to its marker, or the process ended otherwise) */
        json_t *result; /* the interpreter's marker payload */
        sink *sinks;
} unit;

typedef struct mproc {
        atomic_int refs;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        sbx_mgr *m;
        sbx_caller who;
        char sandbox[32], exec_id[32];
        bool interp;
        int in_w; /* its stdin; -1 once it ended */
        char mark[40];
        size_t mark_len;
        unit *units;
        size_t n_units, log_bytes;
        char *pend[3]; /* bytes not yet cut, per stream */
        size_t pend_len[3];
        bool ended;
        char why[256]; /* how it ended */
} mproc;

typedef struct entry {
        struct entry *next;
        char sandbox[32], id[101];
        bool context; /* an interpreter context; else a session */
        char *cwd;
        int64_t created_ms;
        mproc *p;
} entry;

typedef struct table {
        pthread_mutex_t lock;
        entry *entries;
} table;

mproc *dp_ref(mproc *p);
void dp_unref(mproc *p);
/* A WebSocket frame to a sink; a failed write marks it gone (its reader's thread sees its socket
 * shut). */
void dp_sink_send(sink *s, int op, const void *d, size_t n);
void dp_sink_json(sink *s, json_t *j /* stolen */);
/* Under p->lock: a new unit at the end of p's list; dropping one. */
unit *dp_unit_add(mproc *p, const char *command);
void dp_unit_drop(mproc *p, unit *u);
/* Under p->lock: write all of d to the process's stdin or nothing. 0, 410 (it has ended) or 409
 * (no room: the commands before are not read yet). */
unsigned dp_write(mproc *p, const char *d, size_t n);
/* bash: a unit's command as one word for eval, then its markers (a new string). */
char *dp_shell_text(const mproc *p, const unit *u);
/* The process of a sandbox's session or context id, referenced; NULL when none. */
mproc *dp_lookup(table *t, const char *sandbox, const char *id, bool context);
/* Start a session (bash) or a context (python3) under id and list it: 0, or the status with why. */
unsigned dp_create(sbx_mgr *m, const sbx_caller *who, table *t, const char *sandbox, const char *id,
        bool context, char *const *env, const char *cwd, char *why, size_t size);
/* Remove and stop one: false when there was none. */
bool dp_drop(table *t, const char *sandbox, const char *id, bool context);
/* The manager's table (made at the first use); NULL with 503 said. */
table *dp_table_of(cx_req *rq);
