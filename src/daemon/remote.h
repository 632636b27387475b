/* remote.h — what remote.c (other sandboxer nodes, and the plumbing every remote extension uses)
 * shares with the clients of hosted services (ext-e2b.c). Not for other files: they use
 * mgr-internal.h's mgr_remote_* entry points. */
#pragma once

#include <curl/curl.h>

#include "daemon/mgr-internal.h"

/* How one extension is reached, for one tenant (its token resolved). */
typedef struct remote_ep {
        char ext[72];
        char kind[16]; /* sandboxer | e2b */
        char url[1024]; /* the API's base, no trailing slash */
        char token[8192]; /* a bearer token, an API key, or (compose-ssh) a private key */
        char ca_file[PATH_MAX];
        char pin[256];
        char domain[256]; /* e2b: the sandboxes' host names are PORT-ID.domain */
        char connect_to[300]; /* HOST:PORT every connection goes to (a test's loopback), or "" */
        char template_id[128]; /* e2b: the template a create asks for */
        bool cap_pause, cap_snapshot;
} remote_ep;

typedef struct remote_resp {
        long code;
        char *body;
        size_t len;
        char ctype[128];
} remote_resp;

/* ext's endpoint for tenant (NULL: the server's own secret only); false with why. */
bool remote_ep_of(sbx_mgr *m, const char *tenant, const char *ext, remote_ep *ep, char *why, size_t n);
/* A call answered whole: METHOD target (a path under ep->url, or a whole http(s):// URL) with the
 * extra "Name: value" headers (NULL-terminated; NULL: none) and, with auth, the extension's own
 * credentials (a bearer token for a sandboxer node); mime: a multipart body instead of body.
 * The status (0: no answer, why says); timeout_ms 0: 30 s. */
long remote_call(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target, const char *body,
        size_t len, const char *const *extra, bool auth, curl_mime *(*mime)(CURL *c, void *ud),
        void *mime_ud, long timeout_ms, remote_resp *r, char *why, size_t whysz);
void remote_resp_done(remote_resp *r);
/* What extension ext (a node, E2B, Daytona) holds for this front and this front does not:
 * destroyed there (remote-sweep.c). The number destroyed. */
unsigned remote_sweep(sbx_mgr *m, const char *ext);
/* "EXT answered CODE: its message" into why. */
void remote_answer_why(const remote_ep *ep, const remote_resp *r, char *why, size_t n);
/* An answer streamed back as it comes: the call on a worker thread, its body through xform (NULL:
 * as it is) into the reply's stream once the status is known. 0 or the status sent (rp filled). */
typedef struct remote_xform {
        /* called with each piece of the body; writes what the client gets with remote_emit() */
        bool (*piece)(void *ud, int fd, const char *data, size_t n);
        void (*done)(void *ud, int fd, bool ok, const char *why); /* the end (ok: the call completed) */
        void (*free)(void *ud);
        void *ud;
        const char *ctype; /* what the client is told the stream is (NULL: the answer's own) */
} remote_xform;
unsigned remote_stream(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target,
        const char *body, size_t len, const char *const *extra, bool auth, const remote_xform *x,
        sbx_mgr_reply *rp);
bool remote_emit(int fd, const char *data, size_t n);
/* The front's record after the extension's answer: its state, clocks and settings kept. */
void remote_absorb(sbx_mgr *m, box *b, json_t *rec);
json_t *remote_merged(sbx_mgr *m, box *b, json_t *rec);
/* The extension no longer has it: the front's record ends (expired, reason). */
void remote_gone(sbx_mgr *m, box *b, const char *reason);
unsigned remote_lacks(sbx_mgr_reply *rp, const char *ext, const char *capability);
/* A path or query value %-escaped (all but unreserved characters and '/'). */
void remote_url_escape(const char *s, char *buf, size_t n);
/* Bytes as the native API carries them: a string when UTF-8 (*enc "utf-8"), else base64. */
json_t *remote_data_json(const char *d, size_t n, const char **enc);
/* An exec's stdout and stderr in one encoding (the native answer has one): the encoding. */
const char *remote_outputs_json(
        const char *out, size_t on, const char *err, size_t en, json_t **jo, json_t **je);
/* A file's upload part (curl_mime): {data, len} as the "file" part, or with field set, files[0].*
 * as Daytona's bulk upload takes them. */
typedef struct remote_upload {
        const char *data, *path;
        size_t len;
        bool bulk;
} remote_upload;
curl_mime *remote_upload_mime(CURL *c, void *ud);

/* What the hosted-service clients share. An exec's body decoded for one (argv of strings, env,
 * cwd, timeout_s, stream; tty refused, and stdin unless stdin_ok, as 422 naming what): NULL with
 * rp filled. b's activity counted (an exec started). The answer of an exec that came whole: the
 * native answer, or with stream its NDJSON events at once (start, stdout, stderr, end; jo and je
 * taken). A files request's path= (absolute), NULL with 400. A file operation's answer from the
 * extension's: 200 {path, size} for a write, the bytes (r's, taken) for a read, else its error
 * (404, 400, 507, else 502) with why. 422 for what sub asks, the extension lacking it. */
json_t *remote_exec_body(const sbx_mgr_request *rq, const remote_ep *ep, bool stdin_ok, const char *why_tty,
        const char *why_stdin, sbx_mgr_reply *rp);
void remote_exec_started(sbx_mgr *m, box *b);
unsigned remote_exec_reply(const box *b, bool stream, int exit_code, json_t *jo, json_t *je, const char *enc,
        sbx_mgr_reply *rp);
const char *remote_files_path(const sbx_mgr_request *rq, sbx_mgr_reply *rp);
unsigned remote_files_reply(const remote_ep *ep, long code, remote_resp *r, const char *why, bool write,
        const char *path, size_t len, sbx_mgr_reply *rp);
unsigned remote_lacks_sub(sbx_mgr_reply *rp, const char *ext, const char *method, const char *sub);

/* ext-e2b.c: E2B's API as its SDKs speak it (the control plane with X-API-KEY; envd at
 * 49983-ID.domain with the sandbox's access token; Connect RPC with the JSON codec). */
int e2b_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n);
bool e2b_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp);
bool e2b_teardown(sbx_mgr *m, const remote_ep *ep, const char *remote_id, char *why, size_t n);

/* ext-daytona.c: Daytona's API as its SDK speaks it (/sandbox with a bearer key; the toolbox at
 * the URL /sandbox/ID/toolbox-proxy-url answers). */
int daytona_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n);
bool daytona_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp);
bool daytona_teardown(sbx_mgr *m, const remote_ep *ep, const char *remote_id, char *why, size_t n);

/* ext-compose.c: a compose bundle over SSH (podman-compose on the host). Teardown takes the box:
 * its host (the route's, else b->reach) and project (b->remote_id). */
int compose_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n);
bool compose_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp);
bool compose_teardown(sbx_mgr *m, const box *b, const remote_ep *ep, char *why, size_t n);
/* A teardown the back end ext could not be told (it does not answer): kept in
 * STATE/remote-pending.json until it answers again. id: the front's; rid: the extension's own. */
void remote_pend_add(
        sbx_mgr *m, const char *ext, const char *id, const char *rid, const char *reach, const char *tenant);
/* What ext could not be told before, told now it answers. */
void remote_pend_flush(sbx_mgr *m, const char *ext);
