/* e2b-internal.h — what the files of E2B's surface share (e2b.c: errors, envd's requests and
 * dispatch; e2b-sandboxes.c: the control plane; e2b-process.c: process.Process; e2b-files.c:
 * filesystem.Filesystem and /files). Not for the other surfaces (they use compat.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"

/* The home directories E2B's paths may start with (cx_path), NULL-terminated. */
extern const char *const e2b_homes[];

/* ---- errors (e2b.c) ------------------------------------------------------------------------ */

/* The control plane's and /files' error: {code, message}. */
void e2b_api_err(cx_req *rq, unsigned code, const char *fmt, ...) _printf_(3, 4);
/* A unary Connect error: {code, message}, with the HTTP status of the code. */
void e2b_rpc_err(cx_req *rq, const char *code, const char *fmt, ...) _printf_(3, 4);
/* The message of a native refusal ({"error": {"message": ...}}), or "refused". */
const char *e2b_native_message(const json_t *j);
/* The control plane's credential (X-API-KEY, else the unix socket's peer): true, or 401 answered. */
bool e2b_api_auth(cx_req *rq);
/* The Connect code of a native HTTP status. */
const char *e2b_connect_code(unsigned http);

/* ---- envd: one request (e2b.c) ------------------------------------------------------------- */

typedef struct envd {
        cx_req *rq;
        const char *sandbox;
        json_t *rec; /* the live record */
        char **env; /* the sandbox-wide environment */
        /* where relative and ~ paths go: its home (filesystem.home), else its scratch; and the
         * homes E2B names that stand for it when it has none of its own */
        const char *scratch;
        const char *const *homes;
} envd;

/* The JSON message of a Connect request: plain (unary) or in one envelope (streaming). */
json_t *e2b_rpc_body(cx_req *rq, bool stream);

/* ---- what e2b.c dispatches to -------------------------------------------------------------- */

/* E2B's network controls (e2b-network.c): a create's `network` and allow_internet_access, or an
 * updateNetwork body (update: the whole set, a list left out is empty), as egress rules; false
 * with a sentence in err. */
struct sbx_network_req;
bool e2b_network_decode(
        json_t *net, json_t *internet, bool update, struct sbx_network_req *ret, char *err, size_t errsz);
/* The record's rules into getInfo's `network` {allowOut, denyOut}. */
void e2b_network_info(json_t *j, const json_t *rec);
/* PUT /sandboxes/{id}/network (updateNetwork). */
void e2b_op_network(cx_req *rq, const char *id);

/* The control plane: /sandboxes…, /v2/sandboxes… (e2b-sandboxes.c). */
void e2b_control(cx_req *rq, const char *path);
/* process.Process (e2b-process.c). */
void e2b_process_start(envd *e);
/* A streaming RPC (Start, Connect) refused as Connect streams refuse: HTTP 200 and an end frame
 * with the error, which the SDK shows (a non-200 answer it reports by its status alone). */
void e2b_process_refuse(envd *e, const char *code, const char *msg);
void e2b_process_connect(envd *e);
void e2b_process_update(envd *e);
void e2b_process_list(envd *e);
void e2b_process_signal(envd *e);
void e2b_process_input(envd *e, bool close_it); /* SendInput, or CloseStdin when close_it */
/* filesystem.Filesystem/METHOD and /files (e2b-files.c). */
void e2b_filesystem(envd *e, const char *method);
void e2b_files(envd *e);
/* filesystem.Filesystem/WatchDir, a server stream (e2b-watch.c). */
void e2b_watch_dir(envd *e);
/* A Connect envelope on s: flags (0 a message, 2 the end), 4-byte big-endian length, JSON. */
void e2b_frame(cx_stream *s, unsigned char flags, json_t *j /* stolen */);
