/* fuzz-request-bodies.c — libFuzzer target: the control plane's request body decoders, reached
 * through the routes a client calls, with a synthesized request whose body is the fuzz input:
 *   native API (sbx_mgr_route): POST /v1/sandboxes (create: keys, profile id, ttl_s, consumer,
 *     metadata, Idempotency-Key; the profile then resolved), POST .../exec (exec_parse: argv,
 *     env, cwd, timeout_s, stdin and its encoding, stream), POST .../ttl (extend_s), PUT .../files
 *     (the path argument; the body itself is raw bytes for the sandbox);
 *   E2B (cx_e2b_handle): POST /sandboxes (create), .../timeout, .../connect; envd's Connect RPCs
 *     process.Process/Start, Connect, SendSignal, SendInput, CloseStdin (the envelope and the
 *     JSON), filesystem.Filesystem/Stat, ListDir, MakeDir, Move, Remove (paths), POST /files
 *     (multipart or octet-stream);
 *   Daytona (cx_daytona_handle): POST /api/sandbox (create), toolbox process/execute,
 *     files/bulk-upload (multipart), files/bulk-download (paths), process/code-run,
 *     process/session (create: the session's id) and process/interpreter/context (cwd, language).
 *
 * Input: the first byte picks the route (modulo their number); for the routes marked aux, two
 * lines follow before the body: the first the header the route reads (Idempotency-Key,
 * Connect-Timeout-Ms or Content-Type), the second the query argument `path` (empty: absent).
 *
 * Nothing starts: the manager (a store in a temporary directory, never started: no reconcile,
 * no reaper) holds one sandbox, ready but without a supervisor (its socket does not exist), and
 * quotas of 1 sandbox and 1 running exec that it already fills: a create is refused (429) after
 * its body, profile and policy were checked, an exec after its body was parsed, a file transfer
 * when the supervisor does not answer (503). Checked: no route streams or creates anything, and
 * each answers a status.
 * Not covered: what only a running sandbox reaches (an exec's output and report, the answers
 * built from them: envd's file listings, Daytona's FileInfo), the routes without a body (GET,
 * DELETE, lists and their query arguments), http.c's own reading of the request (libmicrohttpd's),
 * the headers beyond the one per route, and authentication (the caller is given, as http.c gives
 * it for the unix socket's peer). */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/compat/compat.h"
#include "daemon/mgr-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIVE "sbx_00000000000000f0" /* the one sandbox */
#define GONE "sbx_000000000000dead" /* no such sandbox */

typedef enum surface { NATIVE, COMPAT, ENVD } surface;

static const struct route {
        surface s;
        const char *method, *path;
        bool aux; /* reads the header line and the `path` line */
} routes[] = {
        {NATIVE, "POST", "/v1/sandboxes", true},
        {NATIVE, "POST", "/v1/sandboxes/" LIVE "/exec", false},
        {NATIVE, "POST", "/v1/sandboxes/" GONE "/ttl", false},
        {NATIVE, "PUT", "/v1/sandboxes/" LIVE "/files", true},
        {COMPAT, "POST", "/sandboxes", false},
        {COMPAT, "POST", "/sandboxes/" LIVE "/timeout", false},
        {COMPAT, "POST", "/v2/sandboxes/" LIVE "/connect", false},
        {ENVD, "POST", "/process.Process/Start", true},
        {ENVD, "POST", "/process.Process/Connect", false},
        {ENVD, "POST", "/process.Process/SendSignal", false},
        {ENVD, "POST", "/process.Process/SendInput", false},
        {ENVD, "POST", "/process.Process/CloseStdin", false},
        {ENVD, "POST", "/filesystem.Filesystem/Stat", false},
        {ENVD, "POST", "/filesystem.Filesystem/ListDir", false},
        {ENVD, "POST", "/filesystem.Filesystem/MakeDir", false},
        {ENVD, "POST", "/filesystem.Filesystem/Move", false},
        {ENVD, "POST", "/filesystem.Filesystem/Remove", false},
        {ENVD, "POST", "/files", true},
        {COMPAT, "POST", "/api/sandbox", false},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/process/execute", false},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/files/bulk-upload", true},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/files/bulk-download", false},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/process/code-run", false},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/process/session", false},
        {COMPAT, "POST", "/api/toolbox/" LIVE "/process/interpreter/context", false},
};

typedef struct lookup {
        const struct route *r;
        const char *aux_header, *aux_path; /* NULL when absent */
} lookup;

static const char *header(void *ctx, const char *name) {
        const lookup *l = ctx;
        if (l->r->s == ENVD && strcasecmp(name, "E2b-Sandbox-Id") == 0)
                return LIVE;
        if (strcasecmp(name, "Idempotency-Key") == 0 || strcasecmp(name, "Connect-Timeout-Ms") == 0 ||
                strcasecmp(name, "Content-Type") == 0)
                return l->aux_header;
        return NULL;
}

static const char *query(void *ctx, const char *name) {
        const lookup *l = ctx;
        return strcmp(name, "path") == 0 ? l->aux_path : NULL;
}

static char dir[] = "/tmp/sbx-fuzz-bodies-XXXXXX";
static char state_dir[sizeof dir + 16], runtime_dir[sizeof dir + 16];
static sbx_store *store;
static sbx_mgr *mgr;
static const sbx_caller admin = {.kind = "adm", .name = "fuzz", .tenant = "default"};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
        (void) remove(path);
        return 0;
}

static void teardown(void) {
        mgr = sbx_mgr_free(mgr);
        store = sbx_store_free(store);
        (void) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool setup(void) {
        sbx_error e = {0};
        if (!mkdtemp(dir))
                return false;
        atexit(teardown);
        snprintf(state_dir, sizeof state_dir, "%s/state", dir);
        snprintf(runtime_dir, sizeof runtime_dir, "%s/run", dir);
        if (sbx_store_open(NULL, state_dir, &store, &e) < 0)
                return false;
        sbx_mgr_options o = {.state_dir = state_dir,
                .runtime_dir = runtime_dir,
                .exe = "/nonexistent/sandboxer",
                .quota_sandboxes = 1,
                .quota_execs = 1};
        if (sbx_mgr_new(store, &o, &mgr, &e) < 0)
                return false;
        box *b = calloc(1, sizeof *b);
        if (!b)
                return false;
        snprintf(b->id, sizeof b->id, LIVE);
        snprintf(b->tenant, sizeof b->tenant, "%s", admin.tenant);
        snprintf(b->actor, sizeof b->actor, "adm:fuzz");
        snprintf(b->profile, sizeof b->profile, "profile.default");
        snprintf(b->reason, sizeof b->reason, "provisioned");
        snprintf(b->scratch, sizeof b->scratch, "/tmp/sbx-fuzz-scratch");
        snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", runtime_dir, b->id);
        snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", state_dir, b->id);
        b->state = SBX_STATE_READY;
        b->consumer = json_object();
        b->metadata = json_object();
        b->limits = json_pack("{s:f, s:f}", "timeout_s", 30.0, "memory_mb", 512.0);
        b->running = json_object();
        b->secret_names = json_array();
        b->created_ms = b->updated_ms = b->last_active_ms = mgr_now_ms();
        /* far ahead and at its cap: a TTL extension changes nothing from one input to the next */
        b->expires_ms = b->ttl_max_ms = b->created_ms + 400 * 86400 * 1000LL;
        b->ttl_s = 400 * 86400.0;
        b->execs_running = 1; /* fills the quota of running execs */
        b->sv_pidfd = -1;
        b->refs = 1; /* the list's */
        mgr->boxes = b;
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool ready, failed;
        if (!ready && !failed && !(ready = setup())) {
                failed = true;
                fprintf(stderr, "fuzz-request-bodies: cannot set up the manager in %s\n", dir);
        }
        if (!ready || size < 1)
                return 0;
        const struct route *r = &routes[data[0] % ELEMENTSOF(routes)];
        const uint8_t *p = data + 1, *end = data + size;
        char *aux[2] = {NULL, NULL};
        for (int i = 0; r->aux && i < 2; i++) {
                const uint8_t *nl = memchr(p, '\n', (size_t) (end - p));
                const uint8_t *le = nl ? nl : end;
                aux[i] = strndup((const char *) p, (size_t) (le - p));
                p = nl ? nl + 1 : end;
        }
        size_t len = (size_t) (end - p);
        char *body = malloc(len ? len : 1); /* its exact size: nothing may read past it */
        if (!body || (r->aux && (!aux[0] || !aux[1])))
                goto out;
        memcpy(body, p, len);
        lookup l = {.r = r,
                .aux_header = aux[0] && *aux[0] ? aux[0] : NULL,
                .aux_path = aux[1] && *aux[1] ? aux[1] : NULL};

        if (r->s == NATIVE) {
                sbx_mgr_request nrq = {.who = &admin,
                        .body = body,
                        .len = len,
                        .query = query,
                        .header = header,
                        .ctx = &l};
                sbx_mgr_reply rp = {.stream_fd = -1};
                if (!sbx_mgr_route(mgr, r->method, r->path, &nrq, &rp))
                        abort();
                if (rp.code < 200 || rp.code > 599 || rp.stream_fd >= 0 || rp.code == 201)
                        abort(); /* no status, or something started */
                sbx_mgr_reply_done(&rp);
        } else {
                cx_req rq = {.m = mgr,
                        .store = store,
                        .method = r->method,
                        .url = r->path,
                        .body = len ? body : "",
                        .len = len,
                        .who = &admin,
                        .header = header,
                        .query = query,
                        .ctx = &l};
                if (!cx_e2b_handle(&rq) && !cx_daytona_handle(&rq))
                        abort();
                if (rq.resp && (rq.code < 100 || rq.code > 599 || rq.code == 201))
                        abort();
                if (rq.resp)
                        MHD_destroy_response(rq.resp);
        }
out:
        free(aux[0]);
        free(aux[1]);
        free(body);
        return 0;
}
