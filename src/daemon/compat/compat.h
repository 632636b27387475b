/* compat.h — the compatibility surfaces on the control plane's own server: E2B's API and its
 * in-sandbox agent protocol (envd, Connect RPC with the JSON codec) in e2b.c and the e2b-*.c files
 * (e2b-internal.h), Daytona's API and toolbox in daytona.c, and what they share in compat.c. They
 * translate to the control plane's own typed operations (ops.h: sbx_ops_create, _get, _list,
 * _extend, _destroy, _file_read/_write; sbx_mgr_exec_start): one lifecycle, one exec path; every fence,
 * limit, report, event and audit line of sandboxer stays behind each call. */
#pragma once

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/ops.h"
#include "daemon/sandboxes.h"
#include "daemon/store.h"

/* ---- the hook http.c calls ---------------------------------------------------------------- */

/* Answer METHOD URL when it belongs to a compat surface: E2B's control plane (/sandboxes…,
 * /v2/sandboxes…), E2B's envd (any request carrying an E2b-Sandbox-Id header), Daytona's API and
 * toolbox (/api/…). who is the actor http.c authenticated (peer uid on the unix socket, bearer
 * token on TCP), or NULL when it could not: the surfaces then authenticate by their own headers
 * (E2B's X-API-KEY is a sandboxer token; envd's X-Access-Token is the one the create answered).
 * Returns false when the request is not theirs (nothing was done); else true with the status in
 * *ret_code and the response in *ret_resp (the caller queues and destroys it; NULL: close the
 * connection). */
bool sbx_compat_handle(sbx_mgr *m, sbx_store *store, struct MHD_Connection *c, const char *method,
        const char *url, const char *body, size_t len, const sbx_caller *who, unsigned *ret_code,
        struct MHD_Response **ret_resp);

/* ---- shared by the surfaces (compat.c) ----------------------------------------------------- */

typedef struct cx_req {
        sbx_mgr *m;
        sbx_store *store;
        struct MHD_Connection *conn;
        const char *method, *url;
        const char *body;
        size_t len;
        const sbx_caller *who; /* as http.c authenticated it, or NULL */
        sbx_caller caller; /* whom the surface acts for, once authenticated */
        unsigned code;
        struct MHD_Response *resp;
        /* Without a connection (conn NULL: fuzz/fuzz-request-bodies.c calls the surfaces with a
         * synthesized request), the headers and query arguments come from these; NULL: none. */
        const char *(*header)(void *ctx, const char *name);
        const char *(*query)(void *ctx, const char *name);
        void *ctx;
} cx_req;

bool cx_e2b_handle(cx_req *rq);
bool cx_daytona_handle(cx_req *rq);
/* ms since the epoch as Daytona writes times: 2026-11-25T23:30:00.000Z (daytona.c). */
void cx_iso_time(int64_t ms, char buf[static 40]);
/* Daytona's error body {statusCode, message, error} (daytona.c). */
void cx_daytona_err(cx_req *rq, unsigned code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Daytona's PTY sessions under the toolbox's /process/pty (daytona-pty.c): env is the sandbox-wide
 * environment ("K=V"), home where a PTY starts by default. True when op was theirs. */
bool cx_daytona_pty(cx_req *rq, const char *sandbox_id, const char *op, char *const *env, const char *home);
/* Daytona's sessions (/process/session) and code interpreter (/process/interpreter), in
 * daytona-session.c; the same arguments. True when op was theirs. */
bool cx_daytona_session(
        cx_req *rq, const char *sandbox_id, const char *op, char *const *env, const char *home);
/* Daytona's git toolbox (/git/…, daytona-git.c): git run in the sandbox; paths as cx_path takes
 * them (scratch, homes). True when op was its. */
bool cx_daytona_git(cx_req *rq, const char *sandbox_id, const char *op, char *const *env,
        const char *scratch, const char *const *homes);
/* A name the SDK chooses for a PTY or a session: 1 to 100 letters, digits, '.', '_' or '-'. */
bool cx_daytona_id_ok(const char *id);

const char *cx_header(cx_req *rq, const char *name);
const char *cx_query(cx_req *rq, const char *name);
/* Authenticate by a sandboxer token (X-API-KEY): fills rq->caller; false when unknown/revoked. */
bool cx_auth_token(cx_req *rq, const char *token);
/* rq->who, when http.c authenticated the request, into rq->caller. */
bool cx_auth_who(cx_req *rq);

/* Responses. The body is copied (or json stolen); the response is left in rq. */
void cx_respond(cx_req *rq, unsigned code, const char *ctype, const void *body, size_t len);
void cx_respond_json(cx_req *rq, unsigned code, json_t *j /* stolen */);
void cx_add_header(cx_req *rq, const char *name, const char *value);

/* A page size the SDKs asked for (their limit query argument), held to the native list's 1..500;
 * 100 when none is given. */
unsigned cx_limit(const char *text);
/* Write a file into the caller's sandbox (sbx_ops_file_write), making its parent directories
 * when they are missing, as the SDKs' servers do. The status; on failure *ret_err (if given) the
 * error body. */
unsigned cx_file_put(
        cx_req *rq, const char *id, const char *path, const void *data, size_t len, json_t **ret_err);
/* The caller's sandbox record (GET /v1/sandboxes/ID), or NULL with *code (404, …). */
json_t *cx_record(cx_req *rq, const char *id, unsigned *code);
/* A record's state is one where execs and files work (ready, active). */
bool cx_record_live(const json_t *rec);
/* ISO 8601 time of the record's field, as unix milliseconds (0 when absent). */
int64_t cx_record_ms(const json_t *rec, const char *field);
int64_t cx_now_ms(void);

/* A command run to its end through sbx_mgr_exec_start, its output collected (stdout and stderr
 * apart, and both in the order they came). */
typedef struct cx_run {
        char *out, *err, *both;
        size_t out_len, err_len, both_len;
        int exit_code; /* -1 when it did not exit (signal, timeout, no start) */
        int signal;
        char status[32]; /* the report's status, or "" when it could not run */
        char *error; /* why it could not run or the report's error; NULL when none */
        unsigned http; /* when it could not start: the refusal's status, with refusal */
        json_t *refusal;
} cx_run;
void cx_run_done(cx_run *r);
/* 0 when the command ran (whatever its exit), else the status of the refusal (r->refusal). */
unsigned cx_exec(cx_req *rq, const char *sandbox_id, char *const *argv, char *const *env, const char *cwd,
        double timeout_s, const void *in, size_t in_len, cx_run *r);

/* A stream body fed by other threads (exec output), read by libmicrohttpd's thread. Writes never
 * block: past a bound the reader is taken as gone. Idle for keepalive_s, the reader is handed the
 * keepalive bytes (if any). */
typedef struct cx_stream cx_stream;
cx_stream *cx_stream_new(const void *keepalive, size_t keepalive_len, double keepalive_s);
/* false when the reader has gone */
bool cx_stream_write(cx_stream *s, const void *data, size_t n);
/* Whether the reader has gone (its connection closed, or too far behind). */
bool cx_stream_gone(cx_stream *s);
void cx_stream_clear(cx_stream *s);
void cx_stream_close(cx_stream *s); /* the end: the reader sees the end after what is queued */
void cx_stream_unref(cx_stream *s);
/* The response reading it (takes a reference). */
struct MHD_Response *cx_stream_response(cx_stream *s, const char *ctype);

/* Text for a JSON string from bytes that may stop inside a UTF-8 sequence or not be UTF-8: the
 * longest prefix ending on a whole sequence (all of it when final), each invalid byte as U+FFFD;
 * *used says how many bytes were taken (the rest waits for more). */
json_t *cx_utf8_text(const char *s, size_t n, bool final, size_t *used);
/* 2*bytes hex digits of getrandom() and a NUL into buf; false when the host has no randomness. */
bool cx_random_hex(char *buf, size_t bytes);

/* base64 */
/* null, or an object of strings (with env_names: each key a variable a request may set). */
bool cx_string_map_ok(const json_t *o, bool env_names);
char *cx_b64_encode(const void *data, size_t n);
int cx_b64_decode(const char *s, size_t n, char **ret, size_t *ret_len);

/* multipart/form-data: each part's name, filename and bytes (pointers into body). */
typedef struct cx_part {
        char name[256], filename[4096];
        const char *data;
        size_t len;
} cx_part;
/* Parses up to max parts: their number, or -EINVAL when the body is not multipart. */
int cx_multipart(const char *ctype, const char *body, size_t len, cx_part *parts, size_t max);

/* A path as the SDKs give it, into the sandbox: relative ones and HOME (one of homes, e.g.
 * /home/user) under the scratch. Returns a new string, or NULL when it is not a usable path. */
char *cx_path(const char *p, const char *scratch, const char *const *homes);

/* Per sandbox state of the compat surfaces, kept by the manager on the sandbox's record (gone
 * with the sandbox; lost when the server restarts): the sandbox-wide environment (E2B envVars,
 * Daytona env) and E2B's envd access token (sbx_mgr_surface_set/_get). */
void cx_box_set(sbx_mgr *m, const char *id, const sbx_caller *who, json_t *env /* stolen, may be NULL */,
        char ret_token[static 65]);
/* The environment to add to each exec ("K=V" strings, NULL-terminated; free with strv_free) and
 * the caller, when the token (or NULL: skip the check) matches. false: unknown / bad token. */
bool cx_box_get(sbx_mgr *m, const char *id, const char *token, sbx_caller *ret_who, char ***ret_env);
void cx_strv_free(char **v);

/* volumes.c: E2B's /volumes and Daytona's /api/volumes (path after /api), and the name of the
 * caller's volume whose id is id (NULL: none) for a create that mounts it by id. */
void e2b_volumes(cx_req *rq, const char *path);
void e2b_volume_content(cx_req *rq, const char *path);
void dt_volumes(cx_req *rq, const char *path);
const char *cx_volume_name(cx_req *rq, const char *id, char *buf, size_t size);
