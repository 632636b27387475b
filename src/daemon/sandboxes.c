/* sandboxes.c — see sandboxes.h. */
#include "daemon/sandboxes.h"
#include "daemon/lifecycle.h"
#include "daemon/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "basic/rm-rf.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "daemon/audit.h"
#include "policy/policy.h"

#define MAX_BODY_JSON (1024 * 1024)
#define FILE_MAX (64ull * 1024 * 1024)
#define PROVISION_TIMEOUT_MS 30000
#define DESTROY_WAIT_MS 10000

typedef struct box {
        char id[32];
        char tenant[128];
        char actor[140];
        char profile[256];
        char backend[16];
        sbx_state state;
        char reason[64];
        char scratch[512];
        json_t *consumer, *metadata, *limits;
        json_t *running; /* exec_id → {argv, started_at}: execs this server started, running */
        json_t *secret_names; /* the profile's `secrets` (NULL: not known yet, read the profile) */
        int64_t created_ms, updated_ms, expires_ms, ttl_max_ms, last_active_ms;
        double idle_s, ttl_s;
        double budget_s, budget_used_s;
        double memory_mb;
        int64_t execs;
        unsigned execs_running;
        pid_t sv_pid, init_pid;
        int sv_pidfd;
        bool busy; /* a destroy or recreate holds it */
        bool sv_child; /* the supervisor is our child (started by this server): reap it */
        int adopted_inflight; /* re-adopted with execs running: their reports are to be taken in
                               * (reaper ticks to go once none runs; the last report may land
                               * just after the count drops) */
        unsigned refs;
        char sock[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        char dir[PATH_MAX];
        struct box *next;
} box;

struct sbx_mgr {
        sbx_store *store;
        sbx_mgr_options o;
        char *state_dir, *runtime_dir, *exe, *policy_file, *secrets_dir, *audit_path;
        bool supervise_exe_lean; /* exe is sandboxer-supervise, not `sandboxer supervise` */
        pthread_mutex_t lock;
        pthread_cond_t ev_cond;
        box *boxes;
        int64_t last_seq;
        pthread_t reaper;
        bool reaper_started, stopping;
        _Atomic uint64_t n_created, n_destroyed, n_failed, n_execs, n_expired, n_readopted, n_warm_used;
        /* the warm pool: started, unassigned sandboxes (not in the store until taken) */
        box *pool;
        char **warm_profiles;
        pthread_t filler;
        bool filler_started;
        /* detached threads (exec streams, event streams, the compat surfaces' execs): counted, so
         * that the manager outlives them; stop_efd wakes the ones that wait on a sandbox */
        unsigned workers;
        pthread_cond_t workers_cond;
        int stop_efd;
        char policy_sha[65]; /* of the policy file last seen (state dir: policy.sha256) */
};

/* ---- small helpers ------------------------------------------------------------------------- */

/* A detached thread that uses the manager: counted while it runs (sbx_mgr_free waits for the
 * count to fall to zero). worker_done() is the thread's last touch of m. */
static int worker_start(sbx_mgr *m, void *(*fn)(void *), void *arg) {
        pthread_mutex_lock(&m->lock);
        m->workers++;
        pthread_mutex_unlock(&m->lock);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int r = pthread_create(&t, &at, fn, arg);
        pthread_attr_destroy(&at);
        if (r != 0) {
                pthread_mutex_lock(&m->lock);
                m->workers--;
                pthread_cond_broadcast(&m->workers_cond);
                pthread_mutex_unlock(&m->lock);
                return -r;
        }
        return 0;
}

static void worker_done(sbx_mgr *m) {
        pthread_mutex_lock(&m->lock);
        m->workers--;
        pthread_cond_broadcast(&m->workers_cond);
        pthread_mutex_unlock(&m->lock);
}

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *time_json(int64_t ms) {
        if (ms <= 0)
                return json_null();
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        char buf[64];
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (ms % 1000));
        return json_string(buf);
}

static void random_id(const char *prefix, char *buf, size_t size) {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t) sizeof r) {
                uint64_t x = (uint64_t) now_ms() ^ ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) buf;
                memcpy(r, &x, sizeof r);
        }
        snprintf(buf, size, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4], r[5],
                r[6], r[7]);
}

static bool valid_sandbox_id(const char *s) {
        if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) != 20)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static json_t *err_json(const char *code, const char *field, const char *fmt, ...) _printf_(3, 4);
static json_t *err_json(const char *code, const char *field, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        json_t *in = json_pack("{s:s, s:s}", "code", code, "message", msg);
        if (field)
                json_object_set_new(in, "field", json_string(field));
        return json_pack("{s:o}", "error", in);
}

static unsigned reply_err(sbx_mgr_reply *rp, unsigned code, const char *ecode, const char *field,
        const char *fmt, ...) _printf_(5, 6);
static unsigned reply_err(
        sbx_mgr_reply *rp, unsigned code, const char *ecode, const char *field, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        rp->code = code;
        rp->json = err_json(ecode, field, "%s", msg);
        return code;
}

void sbx_mgr_reply_done(sbx_mgr_reply *r) {
        json_decref(r->json);
        r->json = NULL;
        free(r->raw);
        r->raw = NULL;
}

static void audit(sbx_mgr *m, const sbx_caller *who, const char *action, const char *target,
        const char *outcome, const char *detail) {
        if (!m->audit_path)
                return;
        char actor[140];
        snprintf(actor, sizeof actor, "%s:%s", who ? who->kind : "adm", who ? who->name : "sandboxer");
        sbx_error e = {0};
        if (sbx_audit_append(m->audit_path, actor, action, target, outcome, detail, &e) < 0) {
                char buf[1200];
                sbx_log(SBX_LOG_ERROR, "audit_failed", "action", action, "error",
                        sbx_error_format(&e, buf, sizeof buf), NULL);
        }
}

/* Parse a request body as a JSON object; a 4xx in rp otherwise. */
static json_t *parse_body(const sbx_mgr_request *rq, sbx_mgr_reply *rp, bool empty_ok) {
        if (rq->len == 0 && empty_ok)
                return json_object();
        if (rq->len > MAX_BODY_JSON) {
                reply_err(rp, 413, "payload_too_large", NULL, "the body is over %d bytes", MAX_BODY_JSON);
                return NULL;
        }
        json_error_t je;
        json_t *j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
        if (!j) {
                reply_err(rp, 400, "invalid_json", NULL, "the body is not JSON: %s (line %d, column %d)",
                        je.text, je.line, je.column);
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                reply_err(rp, 400, "invalid_json", NULL, "the body must be a JSON object");
                return NULL;
        }
        return j;
}

/* Unknown keys are errors. */
static bool only_keys(json_t *o, const char *const *allowed, const char *prefix, sbx_mgr_reply *rp) {
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
                bool ok = false;
                for (const char *const *a = allowed; *a && !ok; a++)
                        ok = streq(*a, k);
                if (!ok) {
                        char field[300];
                        snprintf(field, sizeof field, "%s%s", prefix, k);
                        reply_err(rp, 400, "invalid_argument", field, "unknown field '%s'", field);
                        return false;
                }
        }
        return true;
}

static bool string_map(json_t *o, const char *field, size_t max_keys, sbx_mgr_reply *rp) {
        if (!json_is_object(o) || json_object_size(o) > max_keys) {
                reply_err(rp, 400, "invalid_argument", field, "%s: must be an object of at most %zu strings",
                        field, max_keys);
                return false;
        }
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
                if (!json_is_string(v) || strlen(k) > 256 || json_string_length(v) > 4096) {
                        reply_err(rp, 400, "invalid_argument", field,
                                "%s.%s: values must be strings (keys ≤ 256 bytes, values ≤ 4096)", field, k);
                        return false;
                }
        }
        return true;
}

/* ---- boxes --------------------------------------------------------------------------------- */

static json_t *box_record(const box *b) {
        json_t *r = json_object();
        json_object_set_new(r, "id", json_string(b->id));
        json_object_set_new(r, "state", json_string(sbx_state_to_string(b->state)));
        json_object_set_new(r, "reason", b->reason[0] ? json_string(b->reason) : json_null());
        json_object_set_new(r, "profile", json_string(b->profile));
        json_object_set_new(r, "backend", b->backend[0] ? json_string(b->backend) : json_null());
        json_object_set_new(r, "tenant", json_string(b->tenant));
        json_object_set_new(r, "actor", json_string(b->actor));
        json_object_set_new(r, "consumer", b->consumer ? json_deep_copy(b->consumer) : json_object());
        json_object_set_new(r, "metadata", b->metadata ? json_deep_copy(b->metadata) : json_object());
        json_object_set_new(r, "created_at", time_json(b->created_ms));
        json_object_set_new(r, "updated_at", time_json(b->updated_ms));
        json_object_set_new(r, "expires_at", time_json(b->expires_ms));
        json_object_set_new(r, "ttl_max_at", time_json(b->ttl_max_ms));
        json_object_set_new(r, "idle_s", b->idle_s > 0 ? json_real(b->idle_s) : json_null());
        json_object_set_new(r, "last_active_at", time_json(b->last_active_ms));
        json_object_set_new(r, "budget_s", json_real(b->budget_s));
        json_object_set_new(r, "budget_used_s", json_real(b->budget_used_s));
        json_object_set_new(r, "execs", json_integer(b->execs));
        json_object_set_new(r, "limits", b->limits ? json_deep_copy(b->limits) : json_object());
        json_object_set_new(r, "scratch", b->scratch[0] ? json_string(b->scratch) : json_null());
        json_object_set_new(r, "workspace", json_null());
        return r;
}

static const char *consumer_field(const box *b, const char *k) {
        return b->consumer ? json_string_value(json_object_get(b->consumer, k)) : NULL;
}

/* Writes that belong together go in one transaction, the store's lock held throughout (the
 * connection is shared): fewer commits, ~40 pwrite()s less per exec. */
static __thread bool tx_held;
#define STORE_SQL(m, ...)                                                                                   \
        (tx_held ? sbx_store_sql_locked((m)->store, __VA_ARGS__) : sbx_store_sql((m)->store, __VA_ARGS__))

static void tx_begin(sbx_mgr *m) {
        sbx_store_lock(m->store);
        tx_held = true;
        (void) sbx_store_sql_locked(m->store, "BEGIN IMMEDIATE", NULL, NULL, NULL, "");
}

static void tx_end(sbx_mgr *m) {
        (void) sbx_store_sql_locked(m->store, "COMMIT", NULL, NULL, NULL, "");
        tx_held = false;
        sbx_store_unlock(m->store);
}

/* The row: the record and what lists filter on. Lock held or box private. */
static int box_save(sbx_mgr *m, box *b) {
        json_t *rec = box_record(b);
        char *text = json_dumps(rec, JSON_COMPACT);
        json_decref(rec);
        json_t *in =
                json_pack("{s:s, s:f, s:f}", "profile", b->profile, "ttl_s", b->ttl_s, "idle_s", b->idle_s);
        char *inputs = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        sbx_error e = {0};
        int r = STORE_SQL(m,
                "INSERT OR REPLACE INTO sandboxes (id, state, reason, profile, backend, tenant, "
                "consumer_json, "
                "metadata_json, created_at, expires_at, updated_at, record_json, harness, session_id, "
                "run_id, "
                "job_id, supervisor_pid, inputs_json) VALUES (?,?,?,?,?,?,NULL,NULL,?,?,?,?,?,?,?,?,?,?)",
                NULL, NULL, &e, "ssssssiiisssssis", b->id, sbx_state_to_string(b->state), b->reason,
                b->profile, b->backend, b->tenant, b->created_ms, b->expires_ms, b->updated_ms, text,
                consumer_field(b, "harness"), consumer_field(b, "session_id"), consumer_field(b, "run_id"),
                consumer_field(b, "job_id"), (int64_t) b->sv_pid, inputs);
        free(text);
        free(inputs);
        if (r < 0) {
                char buf[1200];
                sbx_log(SBX_LOG_ERROR, "store_failed", "sandbox", b->id, "error",
                        sbx_error_format(&e, buf, sizeof buf), NULL);
        }
        return r;
}

static int seq_row(void *ud, int n, const char *const *cols) {
        if (n > 0 && cols[0])
                *(int64_t *) ud = strtoll(cols[0], NULL, 10);
        return 0;
}

static void emit(sbx_mgr *m, const box *b, const char *type, json_t *data /* stolen */) {
        int64_t at = now_ms();
        if (!data)
                data = json_object();
        json_object_set_new(data, "sandbox_id", json_string(b->id));
        if (!json_object_get(data, "state"))
                json_object_set_new(data, "state", json_string(sbx_state_to_string(b->state)));
        if (!json_object_get(data, "reason"))
                json_object_set_new(data, "reason", b->reason[0] ? json_string(b->reason) : json_null());
        json_object_set_new(data, "at", time_json(at));
        char *text = json_dumps(data, JSON_COMPACT);
        json_decref(data);
        int64_t seq = 0;
        (void) STORE_SQL(m,
                "INSERT INTO events (sandbox_id, type, state, reason, at, data_json) VALUES (?,?,?,?,?,?) "
                "RETURNING seq",
                seq_row, &seq, NULL, "ssssis", b->id, type, sbx_state_to_string(b->state), b->reason, at,
                text);
        free(text);
        pthread_mutex_lock(&m->lock);
        if (seq > m->last_seq)
                m->last_seq = seq;
        pthread_cond_broadcast(&m->ev_cond);
        pthread_mutex_unlock(&m->lock);
}

/* A lifecycle transition: checked against the table (lifecycle.c), stored and streamed. The box
 * is the caller's (busy or private). With `only_from` valid, the transition happens only if b is
 * in that state now (a race lost to a destroy is not an error: false, nothing logged); an
 * illegal transition is a bug: refused and logged. */
static bool set_state_from(sbx_mgr *m, box *b, sbx_state only_from, sbx_state state, const char *reason) {
        sbx_error e = {0};
        pthread_mutex_lock(&m->lock);
        sbx_state was = b->state;
        bool lost = only_from != _SBX_STATE_INVALID && was != only_from;
        int r = lost ? 0 : sbx_state_transition_check(was, state, &e);
        if (!lost && r >= 0) {
                b->state = state;
                snprintf(b->reason, sizeof b->reason, "%s", reason ? reason : "");
                b->updated_ms = now_ms();
        }
        pthread_mutex_unlock(&m->lock);
        if (lost)
                return false;
        if (r < 0) {
                sbx_log(SBX_LOG_ERROR, "lifecycle_refused", "sandbox", b->id, "reason", reason, "error",
                        e.message, NULL);
                return false;
        }
        bool own = !tx_held;
        if (own)
                tx_begin(m);
        (void) box_save(m, b);
        emit(m, b, "sandbox.state", NULL);
        if (own)
                tx_end(m);
        sbx_log(SBX_LOG_INFO, "sandbox_state", "sandbox", b->id, "state", sbx_state_to_string(state),
                "reason", reason, NULL);
        return true;
}

static bool set_state(sbx_mgr *m, box *b, sbx_state state, const char *reason) {
        return set_state_from(m, b, _SBX_STATE_INVALID, state, reason);
}

static box *box_find_locked(sbx_mgr *m, const char *id, const char *tenant) {
        for (box *b = m->boxes; b; b = b->next)
                if (streq(b->id, id) && (!tenant || streq(b->tenant, tenant)))
                        return b;
        return NULL;
}

static box *box_get(sbx_mgr *m, const char *id, const char *tenant) {
        pthread_mutex_lock(&m->lock);
        box *b = box_find_locked(m, id, tenant);
        if (b)
                b->refs++;
        pthread_mutex_unlock(&m->lock);
        return b;
}

static void box_free(box *b) {
        if (!b)
                return;
        json_decref(b->consumer);
        json_decref(b->metadata);
        json_decref(b->limits);
        json_decref(b->running);
        json_decref(b->secret_names);
        if (b->sv_pidfd >= 0)
                close(b->sv_pidfd);
        free(b);
}

static void box_put(sbx_mgr *m, box *b) {
        if (!b)
                return;
        pthread_mutex_lock(&m->lock);
        bool last = --b->refs == 0;
        pthread_mutex_unlock(&m->lock);
        if (last)
                box_free(b);
}

/* Out of the live list (destroyed); freed by the last box_put. */
static void box_unlink(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        for (box **pp = &m->boxes; *pp; pp = &(*pp)->next)
                if (*pp == b) {
                        *pp = b->next;
                        b->refs--; /* the list's reference */
                        break;
                }
        pthread_mutex_unlock(&m->lock);
}

/* ---- supervisors --------------------------------------------------------------------------- */

static int sv_connect(const box *b) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", b->sock);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int sv_send(int fd, json_t *req, const int *fds, int nfds) {
        char *text = json_dumps(req, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(3 * sizeof(int))];
        } cbuf;
        memset(&cbuf, 0, sizeof cbuf);
        struct iovec iov = {.iov_base = text, .iov_len = strlen(text)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (nfds > 0) {
                mh.msg_control = cbuf.b;
                mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, (size_t) nfds * sizeof(int));
        }
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        free(text);
        return n < 0 ? -errno : 0;
}

static json_t *sv_recv(int fd, int timeout_ms) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int k;
        do
                k = poll(&pf, 1, timeout_ms);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return NULL;
        size_t cap = 4 * 1024 * 1024;
        char *buf = malloc(cap);
        if (!buf)
                return NULL;
        ssize_t n = recv(fd, buf, cap, 0);
        json_t *j = NULL;
        if (n > 0) {
                json_error_t je;
                j = json_loadb(buf, (size_t) n, 0, &je);
        }
        free(buf);
        return j;
}

/* One request without descriptors, its answer (NULL when the supervisor is not there). */
static json_t *sv_call(const box *b, const char *op, int timeout_ms) {
        int fd = sv_connect(b);
        if (fd < 0)
                return NULL;
        json_t *req = json_pack("{s:s}", "op", op);
        json_t *ans = NULL;
        if (sv_send(fd, req, NULL, 0) >= 0)
                ans = sv_recv(fd, timeout_ms);
        json_decref(req);
        close(fd);
        return ans;
}

static bool pidfd_dead(int pidfd) {
        if (pidfd < 0)
                return true;
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        return poll(&pf, 1, 0) > 0;
}

static json_t *base64_json(const unsigned char *s, size_t n);

static bool secret_name_ok(const char *s) {
        if (!s || !*s || strlen(s) > 128 || streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                            *p == '.' || *p == '_' || *p == '-'))
                        return false;
        return true;
}

/* The secrets b's profile names, from the secrets dir, as the supervisor reads them: a sealed
 * memfd holding {NAME: BASE64}. -1 and nothing when there are none; -errno with msg. */
static int secrets_fd(sbx_mgr *m, box *b, char *msg, size_t msgsz) {
        if (!b->secret_names) {
                sbx_profile *pr = NULL;
                sbx_error e = {0};
                if (sbx_profile_load(b->profile, &pr, &e) < 0) {
                        snprintf(msg, msgsz, "cannot load profile %.200s: %.600s", b->profile, e.message);
                        return -ENOENT;
                }
                b->secret_names = json_array();
                for (char **s = pr->secrets; s && *s; s++)
                        json_array_append_new(b->secret_names, json_string(*s));
                sbx_profile_free(pr);
        }
        if (json_array_size(b->secret_names) == 0)
                return -1;
        if (!m->secrets_dir) {
                snprintf(msg, msgsz, "profile %.200s needs secrets, and this server has no --secrets-dir",
                        b->profile);
                return -ENOKEY;
        }
        json_t *all = json_object();
        size_t i;
        json_t *n;
        int r = 0;
        json_array_foreach(b->secret_names, i, n) {
                const char *name = json_string_value(n);
                char path[PATH_MAX];
                if (!secret_name_ok(name)) {
                        snprintf(msg, msgsz, "secret name '%.130s' is not [A-Za-z0-9._-]", name ? name : "");
                        r = -EINVAL;
                        break;
                }
                snprintf(path, sizeof path, "%.3900s/%s", m->secrets_dir, name);
                int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 65536) {
                        snprintf(msg, msgsz, "secret '%s' is not in the secret store (%.900s: %s)", name,
                                path, fd < 0 ? strerror(errno) : "not a regular file of at most 64 KiB");
                        if (fd >= 0)
                                close(fd);
                        r = -ENOKEY;
                        break;
                }
                char buf[65536];
                ssize_t k = read(fd, buf, sizeof buf);
                close(fd);
                if (k < 0) {
                        snprintf(msg, msgsz, "cannot read secret '%s': %s", name, strerror(errno));
                        r = -EIO;
                        break;
                }
                json_object_set_new(all, name, base64_json((const unsigned char *) buf, (size_t) k));
                explicit_bzero(buf, (size_t) k);
        }
        char *text = r >= 0 ? json_dumps(all, JSON_COMPACT) : NULL;
        json_decref(all);
        if (r < 0)
                return r;
        int fd = memfd_create("sandboxer-secrets", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        size_t len = text ? strlen(text) : 0;
        if (fd < 0 || write(fd, text, len) != (ssize_t) len || lseek(fd, 0, SEEK_SET) < 0) {
                snprintf(msg, msgsz, "cannot hand over the secrets: %s", strerror(errno));
                if (fd >= 0)
                        close(fd);
                fd = -EIO;
        } else
                (void) fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        if (text) {
                explicit_bzero(text, len);
                free(text);
        }
        return fd;
}

/* Start the supervisor for b (double fork: in a session of its own, not our child), wait for
 * its word. 0 with b's pids, backend and scratch filled; -errno with a message in msg. */
/* meanwhile(ud), if given, runs once the supervisor is started (its ~6 ms of start-up overlap
 * whatever it does, e.g. storing the sandbox's first states), or before an early failure. */
typedef void (*spawn_hook)(void *ud);

static int sv_spawn_inner(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook *meanwhile, void *ud);

static int sv_spawn_hooked(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook meanwhile, void *ud) {
        int r = sv_spawn_inner(m, b, budget_used, msg, msgsz, &meanwhile, ud);
        if (meanwhile)
                meanwhile(ud); /* not run yet: an early failure; the states go in in order still */
        return r;
}

static int sv_spawn(sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz) {
        return sv_spawn_hooked(m, b, budget_used, msg, msgsz, NULL, NULL);
}

static int sv_spawn_inner(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook *meanwhile, void *ud) {
        char budget[32], logpath[PATH_MAX + 32];
        snprintf(budget, sizeof budget, "%.3f", budget_used);
        snprintf(logpath, sizeof logpath, "%s/supervisor.log", b->dir);
        char *argv[24];
        int n = 0;
        argv[n++] = m->exe;
        if (!m->supervise_exe_lean)
                argv[n++] = (char *) "supervise";
        argv[n++] = (char *) "--id";
        argv[n++] = b->id;
        argv[n++] = (char *) "--socket";
        argv[n++] = b->sock;
        argv[n++] = (char *) "--state";
        argv[n++] = b->dir;
        argv[n++] = (char *) "--profile";
        argv[n++] = b->profile;
        argv[n++] = (char *) "--ready-fd";
        argv[n++] = (char *) "3";
        argv[n++] = (char *) "--budget-used";
        argv[n++] = budget;
        if (m->policy_file) {
                argv[n++] = (char *) "--policy";
                argv[n++] = m->policy_file;
        }
        int sfd = secrets_fd(m, b, msg, msgsz);
        if (sfd < -1)
                return sfd;
        if (sfd >= 0) {
                argv[n++] = (char *) "--secrets-fd";
                argv[n++] = (char *) "4";
        }
        argv[n] = NULL;
        extern char **environ;

        if (mkdir(b->dir, 0700) < 0 && errno != EEXIST) {
                int r = -errno;
                snprintf(msg, msgsz, "cannot create %.900s: %s", b->dir, strerror(errno));
                safe_close(sfd);
                return r;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                int r = -errno;
                snprintf(msg, msgsz, "pipe: %s", strerror(errno));
                safe_close(sfd);
                return r;
        }
        /* posix_spawn (vfork-like: no copy of this big, threaded process), in a session of its
         * own; it is our child until we reap it, and re-parented to init when we go. */
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        sigset_t none, dfl;
        sigemptyset(&none);
        sigemptyset(&dfl);
        sigaddset(&dfl, SIGPIPE);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &dfl);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawn_file_actions_adddup2(&fa, p[1], 3);
        if (sfd >= 0)
                posix_spawn_file_actions_adddup2(&fa, sfd, 4);
        posix_spawn_file_actions_addclosefrom_np(&fa, sfd >= 0 ? 5 : 4);
        pid_t c;
        int sr = posix_spawn(&c, m->exe, &fa, &at, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        close(p[1]);
        safe_close(sfd);
        if (sr != 0) {
                close(p[0]);
                snprintf(msg, msgsz, "cannot start %.900s: %s", m->exe, strerror(sr));
                return -sr;
        }
        b->sv_child = true;
        if (*meanwhile) {
                (*meanwhile)(ud);
                *meanwhile = NULL;
        }
        char line[4400];
        size_t got = 0;
        int64_t deadline = now_ms() + PROVISION_TIMEOUT_MS;
        while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
                int64_t left = deadline - now_ms();
                struct pollfd pf = {.fd = p[0], .events = POLLIN};
                int k = left > 0 ? poll(&pf, 1, (int) left) : 0;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                ssize_t r = read(p[0], line + got, sizeof line - 1 - got);
                if (r <= 0)
                        break;
                got += (size_t) r;
        }
        close(p[0]);
        line[got] = 0;
        char *nl = strchr(line, '\n');
        if (nl)
                *nl = 0;
        int init_pid = 0, sv_pid = 0;
        char backend[16] = "", scratch[512] = "";
        if (sscanf(line, "ready %d %d %15s %511s", &init_pid, &sv_pid, backend, scratch) == 4 &&
                sv_pid > 0) {
                b->init_pid = init_pid;
                b->sv_pid = sv_pid;
                b->sv_pidfd = (int) syscall(SYS_pidfd_open, sv_pid, 0);
                snprintf(b->backend, sizeof b->backend, "%s", backend);
                snprintf(b->scratch, sizeof b->scratch, "%s", streq(scratch, "-") ? "" : scratch);
                return 0;
        }
        if (strncmp(line, "error ", 6) == 0)
                snprintf(msg, msgsz, "%.1000s", line + 6);
        else if (got == 0)
                snprintf(msg, msgsz, "the supervisor ended without a word (see %.900s)", logpath);
        else
                snprintf(msg, msgsz, "the supervisor said: %.300s", line);
        return -EIO;
}

/* Reports the supervisor wrote that the store has not got (the server was away). */
static int exists_row(void *ud, int n, const char *const *cols) {
        *(bool *) ud = true;
        return 0;
}

static void ingest_exec_reports(sbx_mgr *m, box *b) {
        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/execs", b->dir);
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (de->d_name[0] == '.' || l < 6 || !streq(de->d_name + l - 5, ".json") || l > 80)
                        continue;
                char id[80];
                snprintf(id, sizeof id, "%.*s", (int) (l - 5), de->d_name);
                bool have = false;
                (void) sbx_store_sql(
                        m->store, "SELECT 1 FROM execs WHERE id = ?", exists_row, &have, NULL, "s", id);
                if (have)
                        continue;
                char path[PATH_MAX + 100];
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                json_error_t je;
                json_t *rep = json_load_file(path, 0, &je);
                if (!rep)
                        continue;
                char *text = json_dumps(rep, JSON_COMPACT);
                json_t *code = json_object_get(json_object_get(rep, "exit"), "code");
                (void) sbx_store_sql(m->store,
                        "INSERT OR IGNORE INTO execs (id, sandbox_id, status, exit_code, started_at, "
                        "ended_at, "
                        "report_json) VALUES (?,?,?,?,?,?,?)",
                        NULL, NULL, NULL, "sssiiis", id, b->id,
                        json_string_value(json_object_get(rep, "status")),
                        (int64_t) (json_is_integer(code) ? json_integer_value(code) : -1), now_ms(),
                        now_ms(), text);
                free(text);
                json_decref(rep);
                pthread_mutex_lock(&m->lock);
                b->execs++;
                pthread_mutex_unlock(&m->lock);
                emit(m, b, "sandbox.exec", json_pack("{s:s, s:s}", "exec_id", id, "note", "recovered"));
        }
        closedir(d);
}

/* End the supervisor (and with it the sandbox), and remove what is left of it. */
static void sv_stop(sbx_mgr *m, box *b) {
        if (b->sv_pidfd >= 0 && !pidfd_dead(b->sv_pidfd)) {
                json_t *ans = sv_call(b, "destroy", 5000);
                json_decref(ans);
                struct pollfd pf = {.fd = b->sv_pidfd, .events = POLLIN};
                int k;
                do
                        k = poll(&pf, 1, DESTROY_WAIT_MS);
                while (k < 0 && errno == EINTR);
                if (k == 0) {
                        (void) syscall(SYS_pidfd_send_signal, b->sv_pidfd, SIGKILL, NULL, 0);
                        do
                                k = poll(&pf, 1, DESTROY_WAIT_MS);
                        while (k < 0 && errno == EINTR);
                }
        } else if (b->sv_pidfd < 0 && b->sv_pid > 0) {
                /* no pidfd: ask, and trust the socket going away */
                json_decref(sv_call(b, "destroy", 2000));
        }
        if (b->sv_pidfd >= 0)
                close(b->sv_pidfd);
        b->sv_pidfd = -1;
        if (b->sv_child && b->sv_pid > 0) {
                (void) waitpid(b->sv_pid, NULL, WNOHANG); /* gone by now: no wait */
                b->sv_child = false;
        }
        (void) unlink(b->sock);
        ingest_exec_reports(m, b);
}

static void remove_dir(box *b) {
        (void) sbx_rm_rf(b->dir);
}

/* The whole destroy: destroying → (supervisor ends, leftovers removed) → destroyed. */
static void destroy_box(sbx_mgr *m, box *b, const char *reason) {
        pthread_mutex_lock(&m->lock);
        bool already = b->state == SBX_STATE_DESTROYING; /* a restart finishing one */
        pthread_mutex_unlock(&m->lock);
        if (!already)
                (void) set_state(m, b, SBX_STATE_DESTROYING, reason);
        sv_stop(m, b);
        remove_dir(b);
        set_state(m, b, SBX_STATE_DESTROYED, reason);
        atomic_fetch_add(&m->n_destroyed, 1);
        box_unlink(m, b);
}

/* Claim b for a destroy/recreate (one at a time). */
static bool claim(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        bool ok = !b->busy;
        if (ok)
                b->busy = true;
        pthread_mutex_unlock(&m->lock);
        return ok;
}

/* ---- quotas -------------------------------------------------------------------------------- */

static const char *quota_check(
        sbx_mgr *m, const char *tenant, double memory_mb, bool exec, char *msg, size_t sz) {
        unsigned n = 0, execs = 0;
        double mem = 0;
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b; b = b->next)
                if (streq(b->tenant, tenant)) {
                        n++;
                        execs += b->execs_running;
                        mem += b->memory_mb;
                }
        pthread_mutex_unlock(&m->lock);
        if (!exec && m->o.quota_sandboxes && n >= m->o.quota_sandboxes) {
                snprintf(msg, sz,
                        "tenant '%s' has %u sandboxes alive (quota sandboxes: %u); destroy one first",
                        tenant, n, m->o.quota_sandboxes);
                return "quota.sandboxes";
        }
        if (!exec && m->o.quota_memory_mb > 0 && mem + memory_mb > m->o.quota_memory_mb) {
                snprintf(msg, sz,
                        "tenant '%s' would hold %g MiB of sandbox memory (quota memory_mb: %g); destroy one "
                        "or use a profile with a smaller memory_mb",
                        tenant, mem + memory_mb, m->o.quota_memory_mb);
                return "quota.memory_mb";
        }
        if (exec && m->o.quota_execs && execs >= m->o.quota_execs) {
                snprintf(msg, sz, "tenant '%s' has %u execs running (quota execs: %u); retry when one ends",
                        tenant, execs, m->o.quota_execs);
                return "quota.execs";
        }
        return NULL;
}

/* ---- create -------------------------------------------------------------------------------- */

typedef struct idem_row {
        char *sandbox_id, *body_sha;
        bool found;
} idem_row;

static int idem_cb(void *ud, int n, const char *const *cols) {
        idem_row *r = ud;
        r->found = true;
        r->sandbox_id = cols[0] ? strdup(cols[0]) : NULL;
        r->body_sha = n > 1 && cols[1] ? strdup(cols[1]) : NULL;
        return 0;
}

static int record_cb(void *ud, int n, const char *const *cols) {
        json_error_t je;
        if (cols[0])
                *(json_t **) ud = json_loads(cols[0], 0, &je);
        return 0;
}

static json_t *stored_record(sbx_mgr *m, const char *id, const char *tenant) {
        json_t *rec = NULL;
        (void) sbx_store_sql(m->store, "SELECT record_json FROM sandboxes WHERE id = ? AND tenant = ?",
                record_cb, &rec, NULL, "ss", id, tenant);
        return rec;
}

static bool profile_id_ok(const char *s) {
        if (!s || !*s || strlen(s) > 200)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
                            *p == '-'))
                        return false;
        return true;
}

static json_t *limits_json(const sbx_config *cfg) {
        json_t *l = json_object();
        for (int i = 0; i < _SBX_LIMIT_MAX; i++)
                json_object_set_new(
                        l, sbx_limit_to_string((sbx_limit_id) i), json_real(cfg->limits.value[i]));
        return l;
}

/* Provision b (state provisioning → ready | failed). 0 or an HTTP status with rp filled. */
static unsigned provision_hooked(sbx_mgr *m, box *b, double budget_used, const char *reason,
        sbx_mgr_reply *rp, spawn_hook meanwhile, void *ud) {
        char msg[1200] = "";
        int r = sv_spawn_hooked(m, b, budget_used, msg, sizeof msg, meanwhile, ud);
        if (r < 0) {
                atomic_fetch_add(&m->n_failed, 1);
                set_state(m, b, SBX_STATE_FAILED, "provision_error");
                remove_dir(b);
                (void) unlink(b->sock);
                set_state(m, b, SBX_STATE_DESTROYED, "provision_error");
                box_unlink(m, b);
                return reply_err(
                        rp, 503, "provision_failed", NULL, "the sandbox could not be started: %s", msg);
        }
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = now_ms();
        pthread_mutex_unlock(&m->lock);
        set_state(m, b, SBX_STATE_READY, reason);
        return 0;
}

/* Policy-file changes go to the audit log when they are first seen (at start and at the first
 * create after the file changed), with the digest before and after. */
static void policy_seen(sbx_mgr *m, const sbx_policy *p) {
        if (!p || streq(p->sha256, m->policy_sha))
                return;
        pthread_mutex_lock(&m->lock);
        bool changed = !streq(p->sha256, m->policy_sha);
        char was[65];
        snprintf(was, sizeof was, "%s", m->policy_sha);
        if (changed)
                snprintf(m->policy_sha, sizeof m->policy_sha, "%s", p->sha256);
        pthread_mutex_unlock(&m->lock);
        if (!changed)
                return;
        char path[PATH_MAX + 32], tmp[PATH_MAX + 40], detail[256];
        snprintf(path, sizeof path, "%.4000s/policy.sha256", m->state_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        if (f) {
                fprintf(f, "%s\n", p->sha256);
                if (fclose(f) == 0)
                        (void) rename(tmp, path);
        }
        snprintf(detail, sizeof detail, "sha256 %s (before: %s)", p->sha256, was[0] ? was : "none");
        audit(m, NULL, "policy.load", p->source_file ? p->source_file : "builtin", "ok", detail);
        sbx_log(SBX_LOG_INFO, "policy_loaded", "file", p->source_file ? p->source_file : "builtin", "sha256",
                p->sha256, NULL);
}

static unsigned provision(sbx_mgr *m, box *b, double budget_used, const char *reason, sbx_mgr_reply *rp) {
        return provision_hooked(m, b, budget_used, reason, rp, NULL, NULL);
}

/* A create's first states (requested, provisioning; ready for a pooled one) and its
 * Idempotency-Key, in one transaction. */
typedef struct first_states {
        sbx_mgr *m;
        box *b;
        const char *key, *tenant, *body_sha;
        bool warm;
} first_states;

static void store_first_states(void *ud) {
        first_states *f = ud;
        sbx_mgr *m = f->m;
        box *b = f->b;
        tx_begin(m);
        (void) box_save(m, b);
        emit(m, b, "sandbox.state", NULL);
        if (f->key)
                (void) STORE_SQL(m,
                        "INSERT OR REPLACE INTO idempotency (key, tenant, sandbox_id, created_at, "
                        "body_sha256) "
                        "VALUES (?,?,?,?,?)",
                        NULL, NULL, NULL, "sssis", f->key, f->tenant, b->id, now_ms(), f->body_sha);
        set_state(m, b, SBX_STATE_PROVISIONING, "create");
        if (f->warm) {
                /* started ahead of time: ready now */
                b->last_active_ms = now_ms();
                set_state(m, b, SBX_STATE_READY, "provisioned");
                atomic_fetch_add(&m->n_warm_used, 1);
        }
        tx_end(m);
}

/* ---- the warm pool ------------------------------------------------------------------------- */

static bool warm_profile(sbx_mgr *m, const char *profile) {
        for (char **p = m->warm_profiles; p && *p; p++)
                if (streq(*p, profile))
                        return true;
        return false;
}

/* A live pooled sandbox of that profile, taken out of the pool (NULL: none). */
static box *pool_take(sbx_mgr *m, const char *profile) {
        if (!m->o.warm_pool || !warm_profile(m, profile))
                return NULL;
        for (;;) {
                pthread_mutex_lock(&m->lock);
                box *b = NULL;
                for (box **pp = &m->pool; *pp; pp = &(*pp)->next)
                        if (streq((*pp)->profile, profile)) {
                                b = *pp;
                                *pp = b->next;
                                b->next = NULL;
                                break;
                        }
                pthread_cond_broadcast(&m->ev_cond); /* the filler refills */
                pthread_mutex_unlock(&m->lock);
                if (!b || !pidfd_dead(b->sv_pidfd))
                        return b;
                /* its supervisor died meanwhile: clean up, try the next */
                sv_stop(m, b);
                remove_dir(b);
                box_free(b);
        }
}

static unsigned pool_count(sbx_mgr *m, const char *profile) {
        unsigned n = 0;
        for (box *b = m->pool; b; b = b->next)
                n += streq(b->profile, profile);
        return n;
}

static void *filler_main(void *arg) {
        sbx_mgr *m = arg;
        unsigned failures = 0;
        for (;;) {
                const char *need = NULL;
                pthread_mutex_lock(&m->lock);
                while (!m->stopping) {
                        for (char **p = m->warm_profiles; p && *p && !need; p++)
                                if (pool_count(m, *p) < m->o.warm_pool)
                                        need = *p;
                        if (need)
                                break;
                        pthread_cond_wait(&m->ev_cond, &m->lock);
                }
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
                box *b = calloc(1, sizeof *b);
                if (!b)
                        break;
                b->sv_pidfd = -1;
                b->refs = 1;
                random_id("sbx_", b->id, sizeof b->id);
                snprintf(b->profile, sizeof b->profile, "%s", need);
                snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", m->runtime_dir, b->id);
                snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", m->state_dir, b->id);
                b->secret_names = json_array();
                char msg[1200];
                if (sv_spawn(m, b, 0, msg, sizeof msg) < 0) {
                        sbx_log(SBX_LOG_WARNING, "warm_pool_failed", "profile", need, "error", msg, NULL);
                        remove_dir(b);
                        box_free(b);
                        /* back off: 0.1 s, doubling to 5 s */
                        unsigned ms = 100u << (failures < 6 ? failures : 6);
                        failures++;
                        usleep((ms > 5000 ? 5000 : ms) * 1000);
                        continue;
                }
                failures = 0;
                pthread_mutex_lock(&m->lock);
                b->next = m->pool;
                m->pool = b;
                pthread_mutex_unlock(&m->lock);
        }
        return NULL;
}

static unsigned op_create(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        json_t *body = parse_body(rq, rp, true);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"profile", "ttl_s", "consumer", "metadata", NULL};
        static const char *const ckeys[] = {"harness", "session_id", "run_id", "job_id", NULL};
        unsigned code = 0;
        idem_row idem = {0};
        box *b = NULL;
        const char *who_tenant = rq->who->tenant;
        const char *key = rq->header ? rq->header(rq->ctx, "Idempotency-Key") : NULL;
        char body_sha[65] = "";

        if (!only_keys(body, keys, "", rp))
                goto out;
        json_t *jp = json_object_get(body, "profile"), *jt = json_object_get(body, "ttl_s"),
               *jc = json_object_get(body, "consumer"), *jm = json_object_get(body, "metadata");
        if (jp && !json_is_string(jp)) {
                reply_err(
                        rp, 400, "invalid_argument", "profile", "profile: must be a string (a profile id)");
                goto out;
        }
        const char *profile = jp ? json_string_value(jp) : "profile.default";
        if (!profile_id_ok(profile)) {
                reply_err(rp, 400, "invalid_argument", "profile",
                        "profile: '%.200s' is not a profile id ([a-z0-9._-], at most 200)", profile);
                goto out;
        }
        if (jt && (!json_is_number(jt) || json_number_value(jt) <= 0 ||
                          json_number_value(jt) > 366 * 86400.0)) {
                reply_err(
                        rp, 400, "invalid_argument", "ttl_s", "ttl_s: must be a positive number of seconds");
                goto out;
        }
        if (jc && (!json_is_object(jc) || !only_keys(jc, ckeys, "consumer.", rp) ||
                          !string_map(jc, "consumer", 4, rp))) {
                if (!rp->json)
                        reply_err(rp, 400, "invalid_argument", "consumer",
                                "consumer: must be an object {harness, session_id, run_id, job_id}");
                goto out;
        }
        if (jc) {
                const char *k;
                json_t *v;
                json_object_foreach(jc, k, v) if (json_string_length(v) > 256) {
                        reply_err(rp, 400, "invalid_argument", "consumer", "consumer.%s: at most 256 bytes",
                                k);
                        goto out;
                }
        }
        if (jm && !string_map(jm, "metadata", 64, rp))
                goto out;
        if (key && (strlen(key) == 0 || strlen(key) > 255)) {
                reply_err(rp, 400, "invalid_argument", "Idempotency-Key", "Idempotency-Key: 1 to 255 bytes");
                goto out;
        }

        /* Idempotency: the same key and body answer the same sandbox. */
        if (key) {
                char *canon = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
                sha256_hex(canon ? canon : "", canon ? strlen(canon) : 0, body_sha);
                free(canon);
                (void) sbx_store_sql(m->store,
                        "SELECT sandbox_id, body_sha256 FROM idempotency WHERE key = ? AND tenant = ?",
                        idem_cb, &idem, NULL, "ss", key, who_tenant);
                if (idem.found) {
                        if (idem.body_sha && !streq(idem.body_sha, body_sha)) {
                                reply_err(rp, 409, "conflict", "Idempotency-Key",
                                        "this Idempotency-Key was used with a different body");
                                goto out;
                        }
                        box *live = box_get(m, idem.sandbox_id, who_tenant);
                        json_t *rec = NULL;
                        if (live) {
                                pthread_mutex_lock(&m->lock);
                                rec = box_record(live);
                                pthread_mutex_unlock(&m->lock);
                                box_put(m, live);
                        } else
                                rec = stored_record(m, idem.sandbox_id, who_tenant);
                        if (rec) {
                                rp->code = 200;
                                rp->json = rec;
                                goto out;
                        }
                }
        }

        /* The profile and the policy: what it may be, before anything starts. */
        sbx_request req = {.profile = profile, .policy_file = m->policy_file};
        sbx_error e = {0};
        if (sbx_config_resolve(&req, &cfg, &e) < 0) {
                char buf[1200];
                bool unknown = e.errnum == ENOENT;
                reply_err(rp, unknown ? 422 : 400, unknown ? "unknown_profile" : "invalid_argument",
                        "profile", "%s", sbx_error_format(&e, buf, sizeof buf));
                goto out;
        }
        policy_seen(m, cfg->policy);
        const sbx_profile *pr = cfg->profile;
        double ttl_default = pr->ttl_default_s > 0 ? pr->ttl_default_s : 4 * 3600.0;
        double ttl_max = pr->ttl_max_s > 0 ? pr->ttl_max_s : 24 * 3600.0;
        double ttl = jt ? json_number_value(jt) : ttl_default;
        if (ttl > ttl_max) {
                reply_err(rp, 400, "invalid_argument", "ttl_s",
                        "ttl_s: %g is more than the profile's ttl.max (%g s)", ttl, ttl_max);
                goto out;
        }
        for (char **sn = pr->secrets; sn && *sn; sn++) {
                char path[PATH_MAX];
                snprintf(path, sizeof path, "%.3900s/%.128s", m->secrets_dir ? m->secrets_dir : "", *sn);
                if (!m->secrets_dir || !secret_name_ok(*sn) || access(path, R_OK) < 0) {
                        reply_err(rp, 422, "secret_unavailable", "secrets",
                                "profile %s needs the secret '%s', which %s", profile, *sn,
                                m->secrets_dir ? "is not in the server's secret store"
                                               : "cannot be resolved: the server has no --secrets-dir");
                        goto out;
                }
        }
        char qmsg[512];
        const char *q =
                quota_check(m, who_tenant, cfg->limits.value[SBX_LIMIT_MEMORY_MB], false, qmsg, sizeof qmsg);
        if (q) {
                reply_err(rp, 429, "quota_exceeded", q, "%s", qmsg);
                goto out;
        }

        box *warm = !(pr->secrets && pr->secrets[0]) ? pool_take(m, profile) : NULL;
        b = warm ? warm : calloc(1, sizeof *b);
        if (!b) {
                reply_err(rp, 503, "unavailable", NULL, "out of memory");
                goto out;
        }
        b->refs = 2; /* the list's and ours */
        if (!warm) {
                b->sv_pidfd = -1;
                random_id("sbx_", b->id, sizeof b->id);
        }
        snprintf(b->tenant, sizeof b->tenant, "%s", who_tenant);
        snprintf(b->actor, sizeof b->actor, "%s:%s", rq->who->kind, rq->who->name);
        snprintf(b->profile, sizeof b->profile, "%s", profile);
        b->consumer = jc ? json_deep_copy(jc) : json_object();
        b->metadata = jm ? json_deep_copy(jm) : json_object();
        b->limits = limits_json(cfg);
        json_decref(b->secret_names); /* a pooled one has its own (empty) */
        b->secret_names = json_array();
        for (char **sn = pr->secrets; sn && *sn; sn++)
                json_array_append_new(b->secret_names, json_string(*sn));
        b->created_ms = b->updated_ms = now_ms();
        b->ttl_s = ttl;
        b->expires_ms = b->created_ms + (int64_t) (ttl * 1000);
        b->ttl_max_ms = b->created_ms + (int64_t) (ttl_max * 1000);
        b->idle_s = pr->ttl_idle_s;
        b->budget_s = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        b->memory_mb = cfg->limits.value[SBX_LIMIT_MEMORY_MB];
        if (!warm) {
                snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", m->runtime_dir, b->id);
                snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", m->state_dir, b->id);
        }
        b->state = SBX_STATE_REQUESTED;
        snprintf(b->reason, sizeof b->reason, "create");
        pthread_mutex_lock(&m->lock);
        b->busy = true;
        b->next = m->boxes;
        m->boxes = b;
        pthread_mutex_unlock(&m->lock);
        first_states fs = {
                .m = m, .b = b, .key = key, .tenant = who_tenant, .body_sha = body_sha, .warm = warm};
        if (warm) {
                store_first_states(&fs);
                code = 0;
        } else /* stored while the supervisor starts */
                code = provision_hooked(m, b, 0, "provisioned", rp, store_first_states, &fs);
        pthread_mutex_lock(&m->lock);
        b->busy = false;
        pthread_mutex_unlock(&m->lock);
        if (code) {
                audit(m, rq->who, "sandbox.create", b->id, "failed", NULL);
                goto out;
        }
        atomic_fetch_add(&m->n_created, 1);
        audit(m, rq->who, "sandbox.create", b->id, "ok", profile);
        rp->code = 201;
        pthread_mutex_lock(&m->lock);
        rp->json = box_record(b);
        pthread_mutex_unlock(&m->lock);
out:
        if (b)
                box_put(m, b);
        free(idem.sandbox_id);
        free(idem.body_sha);
        json_decref(body);
        return rp->code;
}

/* ---- get, list ----------------------------------------------------------------------------- */

/* The sandbox id's record for the caller: live, or stored (destroyed); 404 otherwise. */
static unsigned op_get(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        box *b = valid_sandbox_id(id) ? box_get(m, id, rq->who->tenant) : NULL;
        if (b) {
                pthread_mutex_lock(&m->lock);
                rp->json = box_record(b);
                pthread_mutex_unlock(&m->lock);
                box_put(m, b);
                rp->code = 200;
                return 200;
        }
        json_t *rec = valid_sandbox_id(id) ? stored_record(m, id, rq->who->tenant) : NULL;
        if (!rec)
                return reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        rp->code = 200;
        rp->json = rec;
        return 200;
}

typedef struct list_ctx {
        json_t *items;
        char last_created[32], last_id[32];
        int n;
} list_ctx;

static int list_cb(void *ud, int n, const char *const *cols) {
        list_ctx *c = ud;
        json_error_t je;
        json_t *rec = cols[0] ? json_loads(cols[0], 0, &je) : NULL;
        if (rec)
                json_array_append_new(c->items, rec);
        snprintf(c->last_created, sizeof c->last_created, "%s", cols[1] ? cols[1] : "0");
        snprintf(c->last_id, sizeof c->last_id, "%s", cols[2] ? cols[2] : "");
        c->n++;
        return 0;
}

static unsigned op_list(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *state = rq->query(rq->ctx, "state"), *profile = rq->query(rq->ctx, "profile");
        const char *harness = rq->query(rq->ctx, "harness"), *session = rq->query(rq->ctx, "session_id");
        const char *run = rq->query(rq->ctx, "run_id"), *job = rq->query(rq->ctx, "job_id");
        const char *lim = rq->query(rq->ctx, "limit"), *cursor = rq->query(rq->ctx, "cursor");
        if (state && sbx_state_from_string(state) == _SBX_STATE_INVALID) {
                char known[160] = "";
                for (int i = 0; i < _SBX_STATE_MAX; i++)
                        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                                sbx_state_to_string((sbx_state) i));
                return reply_err(rp, 400, "invalid_argument", "state", "state: '%.64s' is not a state (%s)",
                        state, known);
        }
        long limit = 100;
        if (lim) {
                char *end;
                limit = strtol(lim, &end, 10);
                if (*end || limit < 1 || limit > 500)
                        return reply_err(
                                rp, 400, "invalid_argument", "limit", "limit: an integer from 1 to 500");
        }
        int64_t c_created = 0;
        char c_id[32] = "";
        if (cursor) {
                long long cc;
                if (sscanf(cursor, "%lld.%31s", &cc, c_id) != 2 || !valid_sandbox_id(c_id))
                        return reply_err(
                                rp, 400, "invalid_argument", "cursor", "cursor: not one this server gave");
                c_created = cc;
        }
        list_ctx c = {.items = json_array()};
        sbx_error e = {0};
        int r = sbx_store_sql(m->store,
                "SELECT record_json, created_at, id FROM sandboxes WHERE tenant = ?1 "
                "AND (?2 IS NULL AND state != 'destroyed' OR state = ?2) AND (?3 IS NULL OR profile = ?3) "
                "AND (?4 IS NULL OR harness = ?4) AND (?5 IS NULL OR session_id = ?5) "
                "AND (?6 IS NULL OR run_id = ?6) AND (?7 IS NULL OR job_id = ?7) "
                "AND (?8 = '' OR created_at > ?9 OR (created_at = ?9 AND id > ?8)) "
                "ORDER BY created_at, id LIMIT ?10",
                list_cb, &c, &e, "ssssssssii", rq->who->tenant, state, profile, harness, session, run, job,
                c_id, c_created, (int64_t) limit);
        (void) c_id;
        if (r < 0) {
                json_decref(c.items);
                return reply_err(rp, 503, "unavailable", NULL, "the store could not be read: %s", e.message);
        }
        json_t *next = json_null();
        if (c.n == limit) {
                char nc[80];
                snprintf(nc, sizeof nc, "%s.%s", c.last_created, c.last_id);
                json_decref(next);
                next = json_string(nc);
        }
        /* live records are fresher than the stored ones (budget, execs): overlay them */
        size_t i;
        json_t *it;
        json_array_foreach(c.items, i, it) {
                const char *id = json_string_value(json_object_get(it, "id"));
                box *b = id ? box_get(m, id, rq->who->tenant) : NULL;
                if (b) {
                        pthread_mutex_lock(&m->lock);
                        json_array_set_new(c.items, i, box_record(b));
                        pthread_mutex_unlock(&m->lock);
                        box_put(m, b);
                }
        }
        rp->code = 200;
        rp->json = json_pack("{s:o, s:o}", "items", c.items, "next_cursor", next);
        return 200;
}

/* The caller's live sandbox for an operation: 404 unknown, 410 destroyed, 409 not usable now. */
static box *usable_box(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        box *b = valid_sandbox_id(id) ? box_get(m, id, rq->who->tenant) : NULL;
        if (!b) {
                json_t *rec = valid_sandbox_id(id) ? stored_record(m, id, rq->who->tenant) : NULL;
                if (rec) {
                        reply_err(rp, 410, "gone", NULL, "sandbox %s was destroyed (%s)", id,
                                json_string_value(json_object_get(rec, "reason")) ?: "destroyed");
                        json_decref(rec);
                } else
                        reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
                return NULL;
        }
        pthread_mutex_lock(&m->lock);
        bool ok = !b->busy && sbx_state_usable(b->state);
        bool stopping = m->stopping;
        const char *st = sbx_state_to_string(b->state);
        pthread_mutex_unlock(&m->lock);
        if (stopping) { /* an exec started now would be let go of at once */
                reply_err(rp, 503, "unavailable", NULL, "the server is stopping");
                box_put(m, b);
                return NULL;
        }
        if (!ok) {
                reply_err(rp, 409, "conflict", NULL, "sandbox %s is %s%s", id, st,
                        streq(st, "ready") ? " (being recreated or destroyed)" : "");
                box_put(m, b);
                return NULL;
        }
        return b;
}

/* ---- exec ---------------------------------------------------------------------------------- */

typedef struct exec_io {
        /* sink for output as it comes (stream), or NULL to collect */
        void (*sink)(void *ud, int which, const char *data, size_t n);
        void *ud;
        char *out, *err;
        size_t out_len, err_len, out_cap, err_cap;
} exec_io;

static void collect(char **buf, size_t *len, size_t *cap, const char *d, size_t n) {
        if (*len + n + 1 > *cap) {
                size_t nc = (*cap ? *cap * 2 : 65536);
                while (nc < *len + n + 1)
                        nc *= 2;
                char *p = realloc(*buf, nc);
                if (!p)
                        return;
                *buf = p;
                *cap = nc;
        }
        memcpy(*buf + *len, d, n);
        *len += n;
        (*buf)[*len] = 0;
}

static bool mgr_stopping(sbx_mgr *m) {
        pthread_mutex_lock(&m->lock);
        bool stopping = m->stopping;
        pthread_mutex_unlock(&m->lock);
        return stopping;
}

static const char *no_answer(sbx_mgr *m, const char *gone) {
        return mgr_stopping(m)
                       ? "the server is stopping: the exec was left running in the sandbox (the rest "
                         "of its output is not delivered; the next server takes its report in)"
                       : gone;
}

/* Run one request through the supervisor: the command's stdin from in_data, its output through
 * io. Returns the supervisor's answer; NULL when the supervisor is gone, or when the server stops
 * before the exec ends (the exec goes on; a re-adopting server takes its report in): no_answer()
 * says which. */
static json_t *sv_exec(
        sbx_mgr *m, box *b, json_t *req, const char *in_data, size_t in_len, int in_fd, exec_io *io) {
        int fd = sv_connect(b);
        if (fd < 0)
                return NULL;
        int in = -1, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        json_t *ans = NULL;
        if (in_fd >= 0)
                in = fcntl(in_fd, F_DUPFD_CLOEXEC, 3);
        else if (in_data) {
                in = memfd_create("sandboxer-stdin", MFD_CLOEXEC);
                size_t off = 0;
                while (in >= 0 && off < in_len) {
                        ssize_t k = write(in, in_data + off, in_len - off);
                        if (k <= 0)
                                break;
                        off += (size_t) k;
                }
                if (in >= 0)
                        (void) lseek(in, 0, SEEK_SET);
        } else
                in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                goto out;
        int fds[3] = {in, outp[1], errp[1]};
        if (sv_send(fd, req, fds, 3) < 0)
                goto out;
        close(outp[1]);
        close(errp[1]);
        outp[1] = errp[1] = -1;
        in = safe_close(in);
        struct pollfd pf[3] = {{.fd = outp[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN},
                {.fd = m->stop_efd, .events = POLLIN}};
        int open_n = 2;
        char buf[65536];
        while (open_n > 0) {
                int k = poll(pf, 3, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        break;
                if (pf[2].revents)
                        goto out; /* the server stops */
                for (int i = 0; i < 2; i++) {
                        if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t n = read(pf[i].fd, buf, sizeof buf);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                pf[i].fd = -1;
                                open_n--;
                                continue;
                        }
                        if (io->sink)
                                io->sink(io->ud, i + 1, buf, (size_t) n);
                        else if (i == 0)
                                collect(&io->out, &io->out_len, &io->out_cap, buf, (size_t) n);
                        else
                                collect(&io->err, &io->err_len, &io->err_cap, buf, (size_t) n);
                }
        }
        for (;;) { /* the report, unless the server stops first */
                struct pollfd rf[2] = {{.fd = fd, .events = POLLIN}, {.fd = m->stop_efd, .events = POLLIN}};
                int k = poll(rf, 2, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k > 0 && rf[0].revents) /* the report is there: it wins over the stop */
                        ans = sv_recv(fd, -1);
                break;
        }
out:
        safe_close(in);
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
        }
        close(fd);
        return ans;
}

static bool utf8_valid(const unsigned char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                unsigned c = s[i];
                size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
                if (k == 0 || i + k > n || c == 0xc0 || c == 0xc1 || c > 0xf4)
                        return false;
                for (size_t j = 1; j < k; j++)
                        if ((s[i + j] & 0xc0) != 0x80)
                                return false;
                i += k;
        }
        return true;
}

static json_t *base64_json(const unsigned char *s, size_t n) {
        char *o = sbx_base64_encode(s, n);
        json_t *r = o ? json_string(o) : json_null();
        free(o);
        return r;
}

typedef struct exec_args {
        json_t *req; /* for the supervisor */
        char *stdin_data;
        size_t stdin_len;
        bool has_stdin, stream;
        char exec_id[32];
} exec_args;

static void exec_args_done(exec_args *a) {
        json_decref(a->req);
        free(a->stdin_data);
}

static unsigned exec_parse(const sbx_mgr_request *rq, exec_args *a, sbx_mgr_reply *rp) {
        json_t *body = parse_body(rq, rp, false);
        if (!body)
                return rp->code;
        static const char *const keys[] = {
                "argv", "env", "cwd", "timeout_s", "stdin", "stdin_encoding", "stream", NULL};
        if (!only_keys(body, keys, "", rp))
                goto fail;
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *t = json_object_get(body, "timeout_s"),
               *in = json_object_get(body, "stdin"), *enc = json_object_get(body, "stdin_encoding"),
               *stream = json_object_get(body, "stream");
        if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > 1024) {
                reply_err(rp, 400, "invalid_argument", "argv", "argv: must be a non-empty array of strings");
                goto fail;
        }
        size_t i;
        json_t *x;
        json_array_foreach(argv, i, x) if (!json_is_string(x) ||
                                           memchr(json_string_value(x), 0, json_string_length(x)) ||
                                           (i == 0 && json_string_length(x) == 0)) {
                reply_err(rp, 400, "invalid_argument", "argv",
                        "argv[%zu]: must be a string (no NUL; the first not empty)", i);
                goto fail;
        }
        json_t *envv = json_array();
        if (env) {
                if (!string_map(env, "env", 256, rp)) {
                        json_decref(envv);
                        goto fail;
                }
                const char *k;
                json_t *v;
                json_object_foreach(env, k, v) {
                        const char *why = "values may not hold NUL";
                        if (sbx_env_name_check(k, &why) < 0 ||
                                memchr(json_string_value(v), 0, json_string_length(v))) {
                                json_decref(envv);
                                reply_err(rp, 400, "invalid_argument", "env", "env: '%.64s': %s", k, why);
                                goto fail;
                        }
                        char *kv;
                        if (asprintf(&kv, "%s=%s", k, json_string_value(v)) >= 0) {
                                json_array_append_new(envv, json_string(kv));
                                free(kv);
                        }
                }
        }
        if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/' ||
                           json_string_length(cwd) > 4096)) {
                json_decref(envv);
                reply_err(rp, 400, "invalid_argument", "cwd",
                        "cwd: must be an absolute path inside the sandbox");
                goto fail;
        }
        if (t && (!json_is_number(t) || json_number_value(t) <= 0)) {
                json_decref(envv);
                reply_err(rp, 400, "invalid_argument", "timeout_s", "timeout_s: must be a positive number");
                goto fail;
        }
        if (stream && !json_is_boolean(stream)) {
                json_decref(envv);
                reply_err(rp, 400, "invalid_argument", "stream", "stream: must be true or false");
                goto fail;
        }
        if (enc && (!json_is_string(enc) || !(streq(json_string_value(enc), "utf-8") ||
                                                    streq(json_string_value(enc), "base64")))) {
                json_decref(envv);
                reply_err(rp, 400, "invalid_argument", "stdin_encoding", "stdin_encoding: utf-8 or base64");
                goto fail;
        }
        if (in && !json_is_string(in)) {
                json_decref(envv);
                reply_err(rp, 400, "invalid_argument", "stdin", "stdin: must be a string");
                goto fail;
        }
        if (in) {
                a->has_stdin = true;
                if (enc && streq(json_string_value(enc), "base64")) {
                        if (sbx_base64_decode(json_string_value(in), json_string_length(in), false,
                                    &a->stdin_data, &a->stdin_len) < 0) {
                                json_decref(envv);
                                reply_err(rp, 400, "invalid_argument", "stdin", "stdin: not valid base64");
                                goto fail;
                        }
                } else {
                        a->stdin_len = json_string_length(in);
                        a->stdin_data = malloc(a->stdin_len + 1);
                        if (a->stdin_data)
                                memcpy(a->stdin_data, json_string_value(in), a->stdin_len);
                }
        }
        a->stream = stream && json_is_true(stream);
        random_id("exe_", a->exec_id, sizeof a->exec_id);
        a->req = json_pack("{s:s, s:s, s:s, s:O, s:o}", "op", "exec", "kind", "run", "exec_id", a->exec_id,
                "argv", argv, "env", envv);
        if (cwd)
                json_object_set(a->req, "cwd", cwd);
        if (t)
                json_object_set(a->req, "timeout_s", t);
        json_decref(body);
        return 0;
fail:
        json_decref(body);
        return rp->code;
}

/* Before and after an exec: the box is active while any runs; counted, budget, store, event. */
static unsigned exec_begin(sbx_mgr *m, const sbx_mgr_request *rq, box *b, sbx_mgr_reply *rp) {
        char qmsg[512];
        const char *q = quota_check(m, rq->who->tenant, 0, true, qmsg, sizeof qmsg);
        if (q)
                return reply_err(rp, 429, "quota_exceeded", q, "%s", qmsg);
        pthread_mutex_lock(&m->lock);
        bool spent = b->budget_s > 0 && b->budget_used_s >= b->budget_s;
        bool first = !spent && b->execs_running++ == 0;
        b->last_active_ms = now_ms();
        pthread_mutex_unlock(&m->lock);
        if (spent)
                return reply_err(rp, 429, "budget_exhausted", "budget_s",
                        "sandbox %s has spent its budget_s (%g s); create a new one", b->id, b->budget_s);
        if (first)
                (void) set_state_from(m, b, SBX_STATE_READY, SBX_STATE_ACTIVE, "exec");
        return 0;
}

static void running_add(sbx_mgr *m, box *b, const char *exec_id, json_t *argv) {
        pthread_mutex_lock(&m->lock);
        if (!b->running)
                b->running = json_object();
        json_object_set_new(b->running, exec_id,
                json_pack("{s:s, s:s, s:O, s:o}", "exec_id", exec_id, "status", "running", "argv", argv,
                        "started_at", time_json(now_ms())));
        pthread_mutex_unlock(&m->lock);
}

static void running_del(sbx_mgr *m, box *b, const char *exec_id) {
        pthread_mutex_lock(&m->lock);
        if (b->running)
                json_object_del(b->running, exec_id);
        pthread_mutex_unlock(&m->lock);
}

static void exec_end(sbx_mgr *m, box *b, const char *exec_id, json_t *ans) {
        json_t *rep = json_object_get(ans, "report");
        const char *status = json_string_value(json_object_get(rep, "status"));
        json_t *code = json_object_get(json_object_get(rep, "exit"), "code");
        json_t *wall = json_object_get(json_object_get(rep, "usage"), "wall_ms");
        char *text = rep ? json_dumps(rep, JSON_COMPACT) : NULL;
        int64_t t = now_ms();
        tx_begin(m);
        (void) STORE_SQL(m,
                "INSERT OR REPLACE INTO execs (id, sandbox_id, status, exit_code, started_at, ended_at, "
                "report_json) "
                "VALUES (?,?,?,?,?,?,?)",
                NULL, NULL, NULL, "sssiiis", exec_id, b->id, status,
                (int64_t) (json_is_integer(code) ? json_integer_value(code) : -1),
                t - (json_is_integer(wall) ? json_integer_value(wall) : 0), t, text);
        free(text);
        pthread_mutex_lock(&m->lock);
        b->execs++;
        if (json_is_integer(wall))
                b->budget_used_s += (double) json_integer_value(wall) / 1000.0;
        b->last_active_ms = now_ms();
        bool last = --b->execs_running == 0;
        pthread_mutex_unlock(&m->lock);
        atomic_fetch_add(&m->n_execs, 1);
        emit(m, b, "sandbox.exec",
                json_pack("{s:s, s:s?, s:o}", "exec_id", exec_id, "status", status, "exit_code",
                        json_is_integer(code) ? json_integer(json_integer_value(code)) : json_null()));
        pthread_mutex_lock(&m->lock);
        bool still = b->execs_running == 0 && !b->busy;
        pthread_mutex_unlock(&m->lock);
        if (!(last && still && set_state_from(m, b, SBX_STATE_ACTIVE, SBX_STATE_READY, "exec_done")))
                (void) box_save(m, b);
        tx_end(m);
}

static json_t *exec_result(const char *exec_id, json_t *ans, const exec_io *io) {
        json_t *rep = json_object_get(ans, "report");
        const char *status = json_string_value(json_object_get(rep, "status"));
        json_t *ex = json_object_get(rep, "exit");
        json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
        bool text = utf8_valid((const unsigned char *) (io->out ? io->out : ""), io->out_len) &&
                    utf8_valid((const unsigned char *) (io->err ? io->err : ""), io->err_len);
        json_t *r = json_object();
        json_object_set_new(r, "exec_id", json_string(exec_id));
        json_object_set_new(r, "status", json_string(status ? status : "setup_error"));
        json_object_set_new(r, "exit_code",
                json_is_integer(code) ? json_integer(json_integer_value(code)) : json_null());
        json_object_set_new(
                r, "signal", json_is_integer(sig) ? json_integer(json_integer_value(sig)) : json_null());
        json_object_set_new(r, "stdout",
                text ? json_stringn(io->out ? io->out : "", io->out_len)
                     : base64_json((const unsigned char *) io->out, io->out_len));
        json_object_set_new(r, "stderr",
                text ? json_stringn(io->err ? io->err : "", io->err_len)
                     : base64_json((const unsigned char *) io->err, io->err_len));
        json_object_set_new(r, "encoding", json_string(text ? "utf-8" : "base64"));
        json_object_set(r, "report", rep ? rep : json_null());
        return r;
}

typedef struct stream_ctx {
        sbx_mgr *m;
        box *b;
        exec_args a;
        int fd; /* write end */
        bool broken;
        char *carry[3]; /* an incomplete UTF-8 tail per stream */
        size_t carry_len[3];
} stream_ctx;

static void stream_line(stream_ctx *s, json_t *j) {
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!text || s->broken) {
                free(text);
                return;
        }
        size_t n = strlen(text);
        text[n] = '\n';
        for (size_t off = 0; off < n + 1;) {
                ssize_t k = write(s->fd, text + off, n + 1 - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        s->broken = true; /* the client left; the exec goes on to its end */
                        break;
                }
                off += (size_t) k;
        }
        free(text);
}

static void stream_sink(void *ud, int which, const char *data, size_t n) {
        stream_ctx *s = ud;
        bool text = utf8_valid((const unsigned char *) data, n);
        stream_line(s, json_pack("{s:s, s:o, s:s}", "type", which == 1 ? "stdout" : "stderr", "data",
                               text ? json_stringn(data, n) : base64_json((const unsigned char *) data, n),
                               "encoding", text ? "utf-8" : "base64"));
}

static void *stream_thread(void *arg) {
        stream_ctx *s = arg;
        exec_io io = {.sink = stream_sink, .ud = s};
        stream_line(s, json_pack("{s:s, s:s, s:s}", "type", "start", "exec_id", s->a.exec_id, "sandbox_id",
                               s->b->id));
        json_t *ans = sv_exec(
                s->m, s->b, s->a.req, s->a.has_stdin ? s->a.stdin_data : NULL, s->a.stdin_len, -1, &io);
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(s->m, s->b, s->a.exec_id, ans);
                json_t *rep = json_object_get(ans, "report");
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(rep, "violations"), i, v)
                        stream_line(s, json_pack("{s:s, s:O}", "type", "violation", "violation", v));
                json_t *ex = json_object_get(rep, "exit");
                json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
                stream_line(s, json_pack("{s:s, s:s, s:O, s:O, s:O, s:O}", "type", "end", "exec_id",
                                       s->a.exec_id, "status", json_object_get(rep, "status"), "exit_code",
                                       code ? code : json_null(), "signal", sig ? sig : json_null(),
                                       "report", rep));
        } else {
                pthread_mutex_lock(&s->m->lock);
                s->b->execs_running--;
                pthread_mutex_unlock(&s->m->lock);
                /* "detached": the server stopped and let go of an exec that had started */
                stream_line(s,
                        json_pack("{s:s, s:s, s:s, s:n, s:n, s:o}", "type", "end", "exec_id", s->a.exec_id,
                                "status", !ans && mgr_stopping(s->m) ? "detached" : "setup_error",
                                "exit_code", "signal", "error",
                                err_json("unavailable", NULL, "%s",
                                        ans ? json_string_value(json_object_get(ans, "error"))
                                                        ?: "exec failed"
                                            : no_answer(s->m, "the sandbox's supervisor is gone"))));
        }
        json_decref(ans);
        running_del(s->m, s->b, s->a.exec_id);
        close(s->fd);
        sbx_mgr *m = s->m;
        box_put(m, s->b);
        exec_args_done(&s->a);
        free(s);
        worker_done(m);
        return NULL;
}

static unsigned op_exec(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        exec_args a = {0};
        box *b = usable_box(m, rq, id, rp);
        if (!b)
                return rp->code;
        if (exec_parse(rq, &a, rp) || exec_begin(m, rq, b, rp)) {
                exec_args_done(&a);
                box_put(m, b);
                return rp->code;
        }
        audit(m, rq->who, "sandbox.exec", b->id, "started", a.exec_id);
        running_add(m, b, a.exec_id, json_object_get(a.req, "argv"));
        if (a.stream) {
                int p[2];
                stream_ctx *s = calloc(1, sizeof *s);
                if (!s || pipe2(p, O_CLOEXEC) < 0) {
                        free(s);
                        pthread_mutex_lock(&m->lock);
                        b->execs_running--;
                        pthread_mutex_unlock(&m->lock);
                        running_del(m, b, a.exec_id);
                        exec_args_done(&a);
                        box_put(m, b);
                        return reply_err(rp, 503, "unavailable", NULL, "cannot start the stream: %s",
                                strerror(errno));
                }
                s->m = m;
                s->b = b;
                s->a = a;
                s->fd = p[1];
                if (worker_start(m, stream_thread, s) < 0) {
                        close(p[0]);
                        close(p[1]);
                        pthread_mutex_lock(&m->lock);
                        b->execs_running--;
                        pthread_mutex_unlock(&m->lock);
                        running_del(m, b, s->a.exec_id);
                        exec_args_done(&s->a);
                        free(s);
                        box_put(m, b);
                        return reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
                }
                rp->code = 200;
                rp->ctype = "application/x-ndjson";
                rp->stream_fd = p[0];
                return 200;
        }
        exec_io io = {0};
        json_t *ans = sv_exec(m, b, a.req, a.has_stdin ? a.stdin_data : NULL, a.stdin_len, -1, &io);
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(m, b, a.exec_id, ans);
                rp->code = 200;
                rp->json = exec_result(a.exec_id, ans, &io);
        } else {
                pthread_mutex_lock(&m->lock);
                b->execs_running--;
                pthread_mutex_unlock(&m->lock);
                if (ans && json_integer_value(json_object_get(ans, "errno")) == EDQUOT)
                        reply_err(rp, 429, "budget_exhausted", "budget_s", "%s",
                                json_string_value(json_object_get(ans, "error")) ?: "budget spent");
                else if (ans)
                        reply_err(rp, 409, "conflict", NULL, "the exec could not start: %s",
                                json_string_value(json_object_get(ans, "error")) ?: "unknown");
                else
                        reply_err(rp, 503, "unavailable", NULL, "%s",
                                no_answer(
                                        m, "the sandbox's supervisor did not answer (it is gone or busy)"));
        }
        json_decref(ans);
        running_del(m, b, a.exec_id);
        free(io.out);
        free(io.err);
        exec_args_done(&a);
        box_put(m, b);
        return rp->code;
}

/* ---- exec records: what ran, kept in the store (also what ran while the server was away) ---- */

typedef struct execs_ctx {
        json_t *items;
} execs_ctx;

static int execs_cb(void *ud, int n, const char *const *cols) {
        execs_ctx *c = ud;
        json_error_t je;
        json_t *rep = n > 5 && cols[5] ? json_loads(cols[5], 0, &je) : NULL;
        json_t *x = json_object();
        json_object_set_new(x, "exec_id", json_string(cols[0] ? cols[0] : ""));
        json_object_set_new(x, "status", cols[1] ? json_string(cols[1]) : json_null());
        json_object_set_new(x, "exit_code",
                cols[2] && strtoll(cols[2], NULL, 10) >= 0 ? json_integer(strtoll(cols[2], NULL, 10))
                                                           : json_null());
        json_object_set_new(x, "started_at", time_json(cols[3] ? strtoll(cols[3], NULL, 10) : 0));
        json_object_set_new(x, "ended_at", time_json(cols[4] ? strtoll(cols[4], NULL, 10) : 0));
        if (n > 5)
                json_object_set_new(x, "report", rep ? rep : json_null());
        json_array_append_new(c->items, x);
        return 0;
}

/* GET …/execs: those that ended (newest first, at most 500) and those running now;
 * GET …/execs/ID: one, with its report. */
static unsigned op_execs(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *exec_id, sbx_mgr_reply *rp) {
        box *b = valid_sandbox_id(id) ? box_get(m, id, rq->who->tenant) : NULL;
        json_t *rec = b ? NULL : valid_sandbox_id(id) ? stored_record(m, id, rq->who->tenant) : NULL;
        if (!b && !rec)
                return reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        json_decref(rec);
        if (b && b->adopted_inflight)
                ingest_exec_reports(m, b);
        execs_ctx c = {.items = json_array()};
        if (exec_id)
                (void) sbx_store_sql(m->store,
                        "SELECT id, status, exit_code, started_at, ended_at, report_json FROM execs WHERE "
                        "sandbox_id = ? "
                        "AND id = ?",
                        execs_cb, &c, NULL, "ss", id, exec_id);
        else
                (void) sbx_store_sql(m->store,
                        "SELECT id, status, exit_code, started_at, ended_at FROM execs WHERE sandbox_id = ? "
                        "ORDER BY "
                        "ended_at DESC LIMIT 500",
                        execs_cb, &c, NULL, "s", id);
        json_t *running = json_array();
        if (b) {
                pthread_mutex_lock(&m->lock);
                const char *k;
                json_t *v;
                json_object_foreach(b->running, k, v) {
                        if (!exec_id || streq(k, exec_id))
                                json_array_append(running, v);
                }
                pthread_mutex_unlock(&m->lock);
                box_put(m, b);
        }
        if (exec_id) {
                json_t *one = json_array_size(c.items) ? json_incref(json_array_get(c.items, 0)) : NULL;
                if (!one && json_array_size(running))
                        one = json_incref(json_array_get(running, 0));
                json_decref(c.items);
                json_decref(running);
                if (!one)
                        return reply_err(
                                rp, 404, "not_found", NULL, "no exec '%.64s' in sandbox %s", exec_id, id);
                rp->code = 200;
                rp->json = one;
                return 200;
        }
        rp->code = 200;
        rp->json = json_pack("{s:o, s:o}", "items", c.items, "running", running);
        return 200;
}

/* ---- files --------------------------------------------------------------------------------- */

static bool path_ok(const box *b, const char *p, char *why, size_t sz) {
        if (!p || p[0] != '/' || strlen(p) > 4000) {
                snprintf(why, sz, "path: an absolute path inside the sandbox is required");
                return false;
        }
        for (const char *s = p; *s; s++)
                if ((unsigned char) *s < 0x20) {
                        snprintf(why, sz, "path: control characters are not allowed");
                        return false;
                }
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s", p);
        for (char *save = NULL, *t = strtok_r(tmp, "/", &save); t; t = strtok_r(NULL, "/", &save))
                if (streq(t, "..") || streq(t, ".")) {
                        snprintf(why, sz, "path: '.' and '..' components are not allowed");
                        return false;
                }
        const char *roots[] = {b->scratch[0] ? b->scratch : "/tmp", "/workspace"};
        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                size_t l = strlen(roots[i]);
                if (strncmp(p, roots[i], l) == 0 && p[l] == '/' && p[l + 1])
                        return true;
        }
        snprintf(why, sz,
                "path: must be a file under the sandbox's scratch (%.100s) or its workspace (/workspace)",
                b->scratch[0] ? b->scratch : "/tmp");
        return false;
}

static unsigned op_files(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, bool put, sbx_mgr_reply *rp) {
        box *b = usable_box(m, rq, id, rp);
        if (!b)
                return rp->code;
        const char *path = rq->query(rq->ctx, "path");
        char why[256];
        if (!path_ok(b, path, why, sizeof why)) {
                box_put(m, b);
                return reply_err(rp, 400, "invalid_argument", "path", "%s", why);
        }
        if (put && rq->len > FILE_MAX) {
                box_put(m, b);
                return reply_err(rp, 413, "payload_too_large", NULL, "files are at most %llu bytes",
                        (unsigned long long) FILE_MAX);
        }
        json_t *req = json_pack("{s:s, s:s, s:[s], s:I}", "op", "exec", "kind", put ? "put" : "get", "argv",
                path, "output_cap", (json_int_t) FILE_MAX);
        exec_io io = {0};
        json_t *ans =
                sv_exec(m, b, req, put ? (rq->body ? rq->body : "") : NULL, put ? rq->len : 0, -1, &io);
        json_decref(req);
        if (!ans)
                reply_err(rp, 503, "unavailable", NULL, "%s",
                        no_answer(m, "the sandbox's supervisor did not answer"));
        else if (!json_is_true(json_object_get(ans, "ok")) ||
                 json_integer_value(json_object_get(ans, "exit")) < 0) {
                int err = (int) json_integer_value(json_object_get(ans, "errno"));
                if (err == 0 && json_integer_value(json_object_get(ans, "exit")) < 0)
                        err = (int) -json_integer_value(json_object_get(ans, "exit"));
                if (err == ENOENT || err == ENOTDIR)
                        reply_err(rp, 404, "not_found", "path", "%s: no such file in the sandbox", path);
                else if (err == EACCES || err == EPERM || err == EROFS || err == ELOOP)
                        reply_err(rp, 403, "permission_denied", "path", "%s: the sandbox may not %s it (%s)",
                                path, put ? "write" : "read", strerror(err));
                else if (err == EISDIR)
                        reply_err(rp, 400, "invalid_argument", "path", "%s: not a regular file", path);
                else
                        reply_err(
                                rp, 409, "conflict", "path", "%s: %s", path, err ? strerror(err) : "failed");
        } else if (json_integer_value(json_object_get(ans, "exit")) != 0)
                reply_err(rp, 409, "conflict", "path", "%s: the transfer did not complete (%s)", path,
                        json_string_value(json_object_get(json_object_get(ans, "report"), "status")) ?: "?");
        else if (put) {
                rp->code = 200;
                rp->json = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t) rq->len);
                audit(m, rq->who, "sandbox.files.put", b->id, "ok", path);
        } else {
                rp->code = 200;
                rp->raw = io.out ? io.out : strdup("");
                rp->raw_len = io.out_len;
                rp->ctype = "application/octet-stream";
                io.out = NULL;
        }
        json_decref(ans);
        free(io.out);
        free(io.err);
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = now_ms();
        pthread_mutex_unlock(&m->lock);
        box_put(m, b);
        return rp->code;
}

/* ---- ttl, recreate, destroy ---------------------------------------------------------------- */

static unsigned op_ttl(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        json_t *body = parse_body(rq, rp, false);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"extend_s", NULL};
        json_t *x = json_object_get(body, "extend_s");
        if (!only_keys(body, keys, "", rp)) {
                json_decref(body);
                return rp->code;
        }
        if (!json_is_number(x) || json_number_value(x) <= 0 || json_number_value(x) > 366 * 86400.0) {
                json_decref(body);
                return reply_err(
                        rp, 400, "invalid_argument", "extend_s", "extend_s: a positive number of seconds");
        }
        double ext = json_number_value(x);
        json_decref(body);
        box *b = usable_box(m, rq, id, rp);
        if (!b)
                return rp->code;
        pthread_mutex_lock(&m->lock);
        int64_t base = b->expires_ms > now_ms() ? b->expires_ms : now_ms();
        int64_t want = base + (int64_t) (ext * 1000);
        b->expires_ms = want > b->ttl_max_ms ? b->ttl_max_ms : want;
        b->updated_ms = now_ms();
        bool capped = want > b->ttl_max_ms;
        pthread_mutex_unlock(&m->lock);
        (void) box_save(m, b);
        emit(m, b, "sandbox.ttl", json_pack("{s:b}", "capped", capped));
        audit(m, rq->who, "sandbox.ttl", b->id, "ok", capped ? "capped at ttl.max" : NULL);
        pthread_mutex_lock(&m->lock);
        rp->json = box_record(b);
        pthread_mutex_unlock(&m->lock);
        rp->code = 200;
        box_put(m, b);
        return 200;
}

static unsigned op_recreate(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        box *b = usable_box(m, rq, id, rp);
        if (!b)
                return rp->code;
        if (!claim(m, b)) {
                box_put(m, b);
                return reply_err(rp, 409, "conflict", NULL, "sandbox %s is being changed", id);
        }
        set_state(m, b, SBX_STATE_DESTROYING, "recreate");
        sv_stop(m, b);
        remove_dir(b);
        pthread_mutex_lock(&m->lock);
        b->init_pid = b->sv_pid = 0;
        double used = b->budget_used_s;
        pthread_mutex_unlock(&m->lock);
        set_state(m, b, SBX_STATE_PROVISIONING, "recreate");
        unsigned code = provision(m, b, used, "recreate", rp);
        pthread_mutex_lock(&m->lock);
        b->busy = false;
        pthread_mutex_unlock(&m->lock);
        audit(m, rq->who, "sandbox.recreate", b->id, code ? "failed" : "ok", NULL);
        if (!code) {
                pthread_mutex_lock(&m->lock);
                rp->json = box_record(b);
                pthread_mutex_unlock(&m->lock);
                rp->code = 200;
        }
        box_put(m, b);
        return rp->code;
}

static unsigned op_destroy(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        box *b = valid_sandbox_id(id) ? box_get(m, id, rq->who->tenant) : NULL;
        if (!b) {
                json_t *rec = valid_sandbox_id(id) ? stored_record(m, id, rq->who->tenant) : NULL;
                if (!rec)
                        return reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
                rp->code = 200; /* already gone: the final record, again */
                rp->json = rec;
                return 200;
        }
        if (!claim(m, b)) {
                /* another destroy is under way: wait for it, then answer the final record */
                for (int i = 0; i < 300; i++) {
                        pthread_mutex_lock(&m->lock);
                        bool done = b->state == SBX_STATE_DESTROYED;
                        pthread_mutex_unlock(&m->lock);
                        if (done)
                                break;
                        usleep(50000);
                }
        } else {
                destroy_box(m, b, "user_delete");
                audit(m, rq->who, "sandbox.destroy", b->id, "ok", NULL);
        }
        pthread_mutex_lock(&m->lock);
        rp->json = box_record(b);
        pthread_mutex_unlock(&m->lock);
        rp->code = 200;
        box_put(m, b);
        return 200;
}

/* ---- events (SSE) -------------------------------------------------------------------------- */

typedef struct sse_ctx {
        sbx_mgr *m;
        int fd;
        int64_t after;
        char sandbox[32];
        char tenant[128];
        bool broken;
} sse_ctx;

static int sse_row(void *ud, int n, const char *const *cols) {
        sse_ctx *s = ud;
        int64_t seq = strtoll(cols[0], NULL, 10);
        if (seq > s->after)
                s->after = seq;
        if (s->broken)
                return 0;
        char *msg = NULL;
        int k = asprintf(&msg, "id: %s\nevent: %s\ndata: {\"seq\":%s,%s\n\n", cols[0], cols[1], cols[0],
                cols[2] && cols[2][0] == '{' ? cols[2] + 1 : "}");
        if (k < 0)
                return 0;
        for (size_t off = 0; off < (size_t) k;) {
                ssize_t w = write(s->fd, msg + off, (size_t) k - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        s->broken = true;
                        break;
                }
                off += (size_t) w;
        }
        free(msg);
        return 0;
}

static void *sse_thread(void *arg) {
        sse_ctx *s = arg;
        sbx_mgr *m = s->m;
        while (!s->broken) {
                (void) sbx_store_sql(m->store,
                        "SELECT e.seq, e.type, e.data_json FROM events e JOIN sandboxes s ON s.id = "
                        "e.sandbox_id "
                        "WHERE e.seq > ?1 AND s.tenant = ?2 AND (?3 = '' OR e.sandbox_id = ?3) ORDER BY "
                        "e.seq LIMIT 500",
                        sse_row, s, NULL, "iss", s->after, s->tenant, s->sandbox);
                if (s->broken)
                        break;
                pthread_mutex_lock(&m->lock);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 15;
                bool timed_out = false;
                while (m->last_seq <= s->after && !m->stopping && !timed_out)
                        timed_out = pthread_cond_timedwait(&m->ev_cond, &m->lock, &ts) == ETIMEDOUT;
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
                if (timed_out && write(s->fd, ": keep-alive\n\n", 14) < 0)
                        break;
        }
        close(s->fd);
        free(s);
        worker_done(m);
        return NULL;
}

static unsigned op_events(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *sb = rq->query(rq->ctx, "sandbox");
        const char *last = rq->header ? rq->header(rq->ctx, "Last-Event-ID") : NULL;
        const char *after_q = rq->query(rq->ctx, "after");
        if (sb && !valid_sandbox_id(sb))
                return reply_err(rp, 400, "invalid_argument", "sandbox", "sandbox: not a sandbox id");
        int64_t after = 0;
        const char *a = last ? last : after_q;
        if (a) {
                char *end;
                after = strtoll(a, &end, 10);
                if (*end || after < 0)
                        return reply_err(rp, 400, "invalid_argument", last ? "Last-Event-ID" : "after",
                                "Last-Event-ID: an event id (a non-negative integer)");
        }
        sse_ctx *s = calloc(1, sizeof *s);
        int p[2];
        if (!s || pipe2(p, O_CLOEXEC) < 0) {
                free(s);
                return reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
        }
        s->m = m;
        s->fd = p[1];
        s->after = after;
        snprintf(s->sandbox, sizeof s->sandbox, "%s", sb ? sb : "");
        snprintf(s->tenant, sizeof s->tenant, "%s", rq->who->tenant);
        if (worker_start(m, sse_thread, s) < 0) {
                close(p[0]);
                close(p[1]);
                free(s);
                return reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
        }
        rp->code = 200;
        rp->ctype = "text/event-stream";
        rp->stream_fd = p[0];
        return 200;
}

/* ---- routing ------------------------------------------------------------------------------- */

static unsigned method_not_allowed(sbx_mgr_reply *rp, const char *allow) {
        return reply_err(rp, 405, "method_not_allowed", NULL, "use %s", allow);
}

bool sbx_mgr_route(
        sbx_mgr *m, const char *method, const char *path, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        rp->stream_fd = -1;
        bool get = streq(method, "GET"), post = streq(method, "POST"), put = streq(method, "PUT"),
             del = streq(method, "DELETE");
        if (streq(path, "/v1/events")) {
                if (!get)
                        method_not_allowed(rp, "GET");
                else
                        op_events(m, rq, rp);
                return true;
        }
        if (streq(path, "/v1/sandboxes") || streq(path, "/v1/sandboxes/")) {
                if (post)
                        op_create(m, rq, rp);
                else if (get)
                        op_list(m, rq, rp);
                else
                        method_not_allowed(rp, "GET, POST");
                return true;
        }
        if (strncmp(path, "/v1/sandboxes/", 14) != 0)
                return false;
        char id[64];
        const char *rest = path + 14, *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id) {
                reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", rest);
                return true;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        const char *sub = slash ? slash : "";
        if (!*sub) {
                if (get)
                        op_get(m, rq, id, rp);
                else if (del)
                        op_destroy(m, rq, id, rp);
                else
                        method_not_allowed(rp, "GET, DELETE");
        } else if (streq(sub, "/exec")) {
                if (post)
                        op_exec(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/execs") || strncmp(sub, "/execs/", 7) == 0) {
                const char *eid = sub[6] == '/' ? sub + 7 : NULL;
                if (!get)
                        method_not_allowed(rp, "GET");
                else if (eid && (strlen(eid) != 20 || strncmp(eid, "exe_", 4) != 0))
                        reply_err(rp, 404, "not_found", NULL, "no exec '%.64s'", eid);
                else
                        op_execs(m, rq, id, eid, rp);
        } else if (streq(sub, "/files")) {
                if (put || post)
                        op_files(m, rq, id, true, rp);
                else if (get)
                        op_files(m, rq, id, false, rp);
                else
                        method_not_allowed(rp, "GET, PUT, POST");
        } else if (streq(sub, "/ttl")) {
                if (post)
                        op_ttl(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else if (streq(sub, "/recreate")) {
                if (post)
                        op_recreate(m, rq, id, rp);
                else
                        method_not_allowed(rp, "POST");
        } else
                reply_err(rp, 404, "not_found", NULL, "no such endpoint: %s %.200s", method, path);
        return true;
}

/* ---- reaper, reconcile --------------------------------------------------------------------- */

static void *reaper_main(void *arg) {
        sbx_mgr *m = arg;
        for (;;) {
                pthread_mutex_lock(&m->lock);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 250 * 1000000L;
                if (ts.tv_nsec >= 1000000000L)
                        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                if (!m->stopping)
                        (void) pthread_cond_timedwait(&m->ev_cond, &m->lock, &ts);
                if (m->stopping) {
                        pthread_mutex_unlock(&m->lock);
                        break;
                }
                /* pick the work under the lock, do it outside */
                box *todo[64];
                const char *why[64];
                size_t n = 0;
                int64_t t = now_ms();
                for (box *b = m->boxes; b && n < ELEMENTSOF(todo); b = b->next) {
                        if (b->busy || !sbx_state_usable(b->state))
                                continue;
                        const char *w = NULL;
                        if (b->sv_pidfd >= 0 && pidfd_dead(b->sv_pidfd))
                                w = "supervisor_lost";
                        else if (t >= b->expires_ms)
                                w = "ttl_expiry";
                        else if (b->idle_s > 0 && b->execs_running == 0 &&
                                 t - b->last_active_ms >= (int64_t) (b->idle_s * 1000))
                                w = "idle";
                        if (w) {
                                b->busy = true;
                                b->refs++;
                                todo[n] = b;
                                why[n++] = w;
                        }
                }
                box *adopted[16];
                size_t na = 0;
                for (box *b = m->boxes; b && na < ELEMENTSOF(adopted); b = b->next)
                        if (b->adopted_inflight && !b->busy) {
                                b->refs++;
                                adopted[na++] = b;
                        }
                pthread_mutex_unlock(&m->lock);
                /* execs that a previous server started: their reports, once they ended */
                for (size_t i = 0; i < na; i++) {
                        box *b = adopted[i];
                        json_t *info = sv_call(b, "info", 2000);
                        if (!info || json_integer_value(json_object_get(info, "execs_running")) == 0) {
                                ingest_exec_reports(m, b);
                                b->adopted_inflight--;
                        }
                        json_decref(info);
                        box_put(m, b);
                }
                for (size_t i = 0; i < n; i++) {
                        box *b = todo[i];
                        if (streq(why[i], "supervisor_lost")) {
                                atomic_fetch_add(&m->n_failed, 1);
                                set_state(m, b, SBX_STATE_FAILED, why[i]);
                        } else {
                                atomic_fetch_add(&m->n_expired, 1);
                                set_state(m, b, SBX_STATE_EXPIRED, why[i]);
                        }
                        destroy_box(m, b, why[i]);
                        audit(m, NULL, "sandbox.destroy", b->id, "ok", why[i]);
                        box_put(m, b);
                }
        }
        return NULL;
}

typedef struct load_ctx {
        sbx_mgr *m;
        box *list;
} load_ctx;

static int load_cb(void *ud, int n, const char *const *cols) {
        load_ctx *c = ud;
        json_error_t je;
        json_t *rec = cols[0] ? json_loads(cols[0], 0, &je) : NULL;
        if (!rec)
                return 0;
        box *b = calloc(1, sizeof *b);
        if (!b) {
                json_decref(rec);
                return 0;
        }
        b->sv_pidfd = -1;
        b->refs = 1;
#define S(f, k) snprintf(b->f, sizeof b->f, "%s", json_string_value(json_object_get(rec, k)) ?: "")
        S(id, "id");
        S(tenant, "tenant");
        S(actor, "actor");
        S(profile, "profile");
        S(backend, "backend");
        S(reason, "reason");
        S(scratch, "scratch");
#undef S
        b->state = sbx_state_from_string(json_string_value(json_object_get(rec, "state")));
        if (b->state == _SBX_STATE_INVALID) { /* not a state this server knows: destroyed at once */
                sbx_log(SBX_LOG_WARNING, "unknown_state", "sandbox", b->id, "state",
                        json_string_value(json_object_get(rec, "state")), NULL);
                b->state = SBX_STATE_FAILED;
        }
        b->consumer = json_incref(json_object_get(rec, "consumer"));
        b->metadata = json_incref(json_object_get(rec, "metadata"));
        b->limits = json_incref(json_object_get(rec, "limits"));
        b->created_ms = cols[1] ? strtoll(cols[1], NULL, 10) : now_ms();
        b->expires_ms = cols[2] ? strtoll(cols[2], NULL, 10) : now_ms();
        b->updated_ms = now_ms();
        b->last_active_ms = now_ms();
        b->sv_pid = cols[3] ? (pid_t) strtol(cols[3], NULL, 10) : 0;
        json_t *in = NULL;
        if (cols[4])
                in = json_loads(cols[4], 0, &je);
        b->ttl_s = json_number_value(json_object_get(in, "ttl_s"));
        json_decref(in);
        b->idle_s = json_number_value(json_object_get(rec, "idle_s"));
        b->budget_s = json_number_value(json_object_get(rec, "budget_s"));
        b->budget_used_s = json_number_value(json_object_get(rec, "budget_used_s"));
        b->execs = json_integer_value(json_object_get(rec, "execs"));
        b->memory_mb = json_number_value(json_object_get(b->limits, "memory_mb"));
        /* ttl_max_at back from its text: created + (ttl_max_at - created) kept in the record */
        const char *tm = json_string_value(json_object_get(rec, "ttl_max_at"));
        struct tm t = {0};
        int ms = 0;
        if (tm && sscanf(tm, "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                          &t.tm_min, &t.tm_sec, &ms) == 7) {
                t.tm_year -= 1900;
                t.tm_mon -= 1;
                b->ttl_max_ms = (int64_t) timegm(&t) * 1000 + ms;
        } else
                b->ttl_max_ms = b->expires_ms;
        json_decref(rec);
        snprintf(b->sock, sizeof b->sock, "%s/sandboxes/%s.sock", c->m->runtime_dir, b->id);
        snprintf(b->dir, sizeof b->dir, "%s/sandboxes/%s", c->m->state_dir, b->id);
        b->next = c->list;
        c->list = b;
        return 0;
}

/* What a restart finds: each stored sandbox that is not destroyed either has its supervisor
 * answering on its socket (re-adopted, its execs in flight carry on) or is lost (failed, cleaned
 * up, destroyed); supervisor sockets nobody knows are orphans, destroyed. */
static void reconcile(sbx_mgr *m) {
        load_ctx c = {.m = m};
        (void) sbx_store_sql(m->store,
                "SELECT record_json, created_at, expires_at, supervisor_pid, inputs_json FROM sandboxes "
                "WHERE "
                "state != 'destroyed'",
                load_cb, &c, NULL, "");
        while (c.list) {
                box *b = c.list;
                c.list = b->next;
                json_t *info = sv_call(b, "info", 3000);
                if (info && json_is_true(json_object_get(info, "ok")) && !sbx_state_ending(b->state)) {
                        b->sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                        b->init_pid = (pid_t) json_integer_value(json_object_get(info, "init_pid"));
                        b->sv_pidfd = b->sv_pid > 0 ? (int) syscall(SYS_pidfd_open, b->sv_pid, 0) : -1;
                        double used = json_number_value(json_object_get(info, "budget_used_s"));
                        if (used > b->budget_used_s)
                                b->budget_used_s = used;
                        pthread_mutex_lock(&m->lock);
                        b->next = m->boxes;
                        m->boxes = b;
                        pthread_mutex_unlock(&m->lock);
                        ingest_exec_reports(m, b);
                        b->adopted_inflight =
                                json_integer_value(json_object_get(info, "execs_running")) > 0 ? 2 : 0;
                        set_state(m, b, SBX_STATE_READY, "readopted");
                        atomic_fetch_add(&m->n_readopted, 1);
                        char sv[16];
                        snprintf(sv, sizeof sv, "%d", (int) b->sv_pid);
                        sbx_log(SBX_LOG_INFO, "readopted", "sandbox", b->id, "supervisor", sv, NULL);
                } else {
                        pthread_mutex_lock(&m->lock);
                        b->refs++;
                        b->next = m->boxes;
                        m->boxes = b;
                        pthread_mutex_unlock(&m->lock);
                        if (info) {
                                /* alive but on its way out: finish the destroy */
                                b->sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                                b->sv_pidfd =
                                        b->sv_pid > 0 ? (int) syscall(SYS_pidfd_open, b->sv_pid, 0) : -1;
                        } else if (!sbx_state_ending(b->state))
                                set_state(m, b, SBX_STATE_FAILED, "supervisor_lost");
                        destroy_box(m, b, info ? b->reason : "supervisor_lost");
                        box_put(m, b);
                }
                json_decref(info);
        }
        /* orphan supervisors: a socket in the runtime dir that no stored sandbox names */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/sandboxes", m->runtime_dir);
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l != 25 || !streq(de->d_name + 20, ".sock"))
                        continue;
                char id[32];
                snprintf(id, sizeof id, "%.20s", de->d_name);
                pthread_mutex_lock(&m->lock);
                bool known = box_find_locked(m, id, NULL) != NULL;
                pthread_mutex_unlock(&m->lock);
                if (known || !valid_sandbox_id(id))
                        continue;
                box tmp = {.sv_pidfd = -1, .sv_pid = 1};
                if (strlen(dir) + 1 + l >= sizeof tmp.sock)
                        continue;
                snprintf(tmp.sock, sizeof tmp.sock, "%.80s/%.25s", dir, de->d_name);
                json_t *info = sv_call(&tmp, "info", 2000);
                if (info) {
                        tmp.sv_pid = (pid_t) json_integer_value(json_object_get(info, "pid"));
                        tmp.sv_pidfd = (int) syscall(SYS_pidfd_open, tmp.sv_pid, 0);
                        sbx_log(SBX_LOG_INFO, "orphan_destroyed", "supervisor_socket", tmp.sock, NULL);
                }
                json_decref(info);
                json_decref(sv_call(&tmp, "destroy", 2000));
                if (tmp.sv_pidfd >= 0) {
                        struct pollfd pf = {.fd = tmp.sv_pidfd, .events = POLLIN};
                        (void) poll(&pf, 1, DESTROY_WAIT_MS);
                        close(tmp.sv_pidfd);
                }
                (void) unlinkat(dirfd(d), de->d_name, 0);
        }
        if (d)
                closedir(d);
        /* state dirs of sandboxes that are gone */
        snprintf(dir, sizeof dir, "%s/sandboxes", m->state_dir);
        d = opendir(dir);
        while (d && (de = readdir(d))) {
                if (!valid_sandbox_id(de->d_name))
                        continue;
                pthread_mutex_lock(&m->lock);
                bool known = box_find_locked(m, de->d_name, NULL) != NULL;
                pthread_mutex_unlock(&m->lock);
                if (!known) {
                        char p[PATH_MAX + 64];
                        snprintf(p, sizeof p, "%.4000s/%.20s", dir, de->d_name);
                        (void) sbx_rm_rf(p);
                }
        }
        if (d)
                closedir(d);
}

static int max_seq_cb(void *ud, int n, const char *const *cols) {
        *(int64_t *) ud = cols[0] ? strtoll(cols[0], NULL, 10) : 0;
        return 0;
}

int sbx_mgr_new(sbx_store *store, const sbx_mgr_options *o, sbx_mgr **ret, sbx_error *e) {
        sbx_mgr *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->store = store;
        m->o = *o;
        pthread_mutex_init(&m->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_cond_init(&m->ev_cond, &ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&m->workers_cond, &ca);
        pthread_condattr_destroy(&ca);
        m->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->stop_efd < 0) {
                int r = -errno;
                sbx_mgr_free(m);
                return r;
        }
        m->state_dir = strdup(o->state_dir);
        m->runtime_dir = strdup(o->runtime_dir);
        /* sandboxer-supervise next to this program (build tree, bin → libexec), else the verb */
        char lean[PATH_MAX + 64];
        const char *slash = strrchr(o->exe, '/');
        int dl = slash ? (int) (slash - o->exe) : 0;
        for (int i = 0; i < 2 && !m->exe; i++) {
                snprintf(lean, sizeof lean, "%.*s%s", dl, o->exe,
                        i == 0 ? "/sandboxer-supervise" : "/../libexec/sandboxer/sandboxer-supervise");
                if (access(lean, X_OK) == 0) {
                        m->exe = strdup(lean);
                        m->supervise_exe_lean = true;
                }
        }
        if (!m->exe && access(SBX_LIBEXECDIR "/sandboxer-supervise", X_OK) == 0) {
                m->exe = strdup(SBX_LIBEXECDIR "/sandboxer-supervise");
                m->supervise_exe_lean = true;
        }
        if (!m->exe)
                m->exe = strdup(o->exe);
        m->policy_file = o->policy_file ? strdup(o->policy_file) : NULL;
        m->secrets_dir = o->secrets_dir ? strdup(o->secrets_dir) : NULL;
        m->audit_path = o->audit_path ? strdup(o->audit_path) : NULL;
        /* pooled: the profiles that load and name no secrets (resolved at create, not ahead) */
        char *const dflt[] = {(char *) "profile.default", NULL};
        for (char *const *w = o->warm_profiles ? o->warm_profiles : dflt; o->warm_pool && *w; w++) {
                sbx_profile *wp = NULL;
                int r = sbx_profile_load(*w, &wp, e);
                if (r < 0) {
                        r = sbx_error_wrap(e, r, "warm profile %s", *w);
                        sbx_mgr_free(m);
                        return r;
                }
                bool secret = wp->secrets && wp->secrets[0];
                sbx_profile_free(wp);
                if (secret) {
                        r = sbx_error_set(e, EINVAL, "warm pool",
                                "profile %s names secrets: it cannot be pooled (secrets are resolved at "
                                "create)",
                                *w);
                        sbx_mgr_free(m);
                        return r;
                }
                (void) strv_extend(&m->warm_profiles, *w);
        }
        if (!m->state_dir || !m->runtime_dir || !m->exe) {
                sbx_mgr_free(m);
                return -ENOMEM;
        }
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/sandboxes", m->runtime_dir);
        /* 0711 as root, as the library makes it: the landlock backend's scratch lives below it and
         * its run_as user must be able to pass through */
        if (mkdir(m->runtime_dir, geteuid() == 0 ? 0711 : 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", m->runtime_dir);
                sbx_mgr_free(m);
                return r;
        }
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", p);
                sbx_mgr_free(m);
                return r;
        }
        snprintf(p, sizeof p, "%s/sandboxes", m->state_dir);
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", p);
                sbx_mgr_free(m);
                return r;
        }
        (void) sbx_store_sql(store, "SELECT MAX(seq) FROM events", max_seq_cb, &m->last_seq, NULL, "");
        *ret = m;
        return 0;
}

int sbx_mgr_start(sbx_mgr *m, sbx_error *e) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%.4000s/policy.sha256", m->state_dir);
        FILE *f = fopen(path, "re");
        if (f) {
                if (fscanf(f, "%64s", m->policy_sha) != 1)
                        m->policy_sha[0] = 0;
                fclose(f);
        }
        sbx_policy *pol = NULL;
        if (sbx_policy_load(m->policy_file, &pol, e) < 0)
                return -EINVAL;
        policy_seen(m, pol);
        sbx_policy_free(pol);
        reconcile(m);
        if (pthread_create(&m->reaper, NULL, reaper_main, m) != 0)
                return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the reaper thread");
        m->reaper_started = true;
        if (m->o.warm_pool > 0) {
                if (pthread_create(&m->filler, NULL, filler_main, m) != 0)
                        return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the warm pool's thread");
                m->filler_started = true;
        }
        return 0;
}

void sbx_mgr_stop(sbx_mgr *m) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->stopping = true;
        pthread_cond_broadcast(&m->ev_cond);
        pthread_mutex_unlock(&m->lock);
        (void) eventfd_write(m->stop_efd, 1);
}

sbx_mgr *sbx_mgr_free(sbx_mgr *m) {
        (void) sbx_mgr_close(m);
        return NULL;
}

int sbx_mgr_close(sbx_mgr *m) {
        if (!m)
                return 0;
        sbx_mgr_stop(m);
        /* the detached threads first: each ends once its client or its sandbox lets go (an exec
         * waiting on its sandbox is released by stop_efd; a stream writer by its closed pipe) */
        pthread_mutex_lock(&m->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 10;
        while (m->workers > 0)
                if (pthread_cond_timedwait(&m->workers_cond, &m->lock, &until) == ETIMEDOUT)
                        break;
        unsigned left = m->workers;
        pthread_mutex_unlock(&m->lock);
        if (left > 0) {
                /* freeing under a running thread would be a use-after-free: the process is on its
                 * way out, so the manager is left to it */
                char n[16];
                snprintf(n, sizeof n, "%u", left);
                sbx_log(SBX_LOG_WARNING, "stop_threads_left", "count", n, NULL);
                return -EBUSY;
        }
        if (m->reaper_started)
                pthread_join(m->reaper, NULL);
        if (m->filler_started)
                pthread_join(m->filler, NULL);
        while (m->pool) {
                box *b = m->pool;
                m->pool = b->next;
                sv_stop(m, b);
                remove_dir(b);
                box_free(b);
        }
        strv_free(m->warm_profiles);
        if (m->o.stop_sandboxes)
                for (;;) {
                        pthread_mutex_lock(&m->lock);
                        box *b = m->boxes;
                        if (b)
                                b->refs++;
                        pthread_mutex_unlock(&m->lock);
                        if (!b)
                                break;
                        destroy_box(m, b, "server_stop");
                        box_put(m, b);
                }
        else
                while (m->boxes) {
                        box *b = m->boxes;
                        m->boxes = b->next;
                        if (--b->refs == 0)
                                box_free(b);
                }
        free(m->state_dir);
        free(m->runtime_dir);
        free(m->exe);
        free(m->policy_file);
        free(m->secrets_dir);
        free(m->audit_path);
        safe_close(m->stop_efd);
        free(m);
        return 0;
}

void sbx_mgr_metrics(sbx_mgr *m, FILE *f) {
        static const sbx_state states[] = {SBX_STATE_REQUESTED, SBX_STATE_PROVISIONING, SBX_STATE_READY,
                SBX_STATE_ACTIVE, SBX_STATE_EXPIRED, SBX_STATE_FAILED, SBX_STATE_DESTROYING};
        unsigned counts[_SBX_STATE_MAX] = {0}, running = 0;
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b; b = b->next) {
                if (b->state >= 0 && b->state < _SBX_STATE_MAX)
                        counts[b->state]++;
                running += b->execs_running;
        }
        pthread_mutex_unlock(&m->lock);
        fputs("# HELP sandboxer_sandboxes Sandboxes alive, by state.\n# TYPE sandboxer_sandboxes gauge\n",
                f);
        for (size_t i = 0; i < ELEMENTSOF(states); i++)
                fprintf(f, "sandboxer_sandboxes{state=\"%s\"} %u\n", sbx_state_to_string(states[i]),
                        counts[states[i]]);
        fprintf(f,
                "# HELP sandboxer_execs_running Execs running now.\n# TYPE sandboxer_execs_running gauge\n"
                "sandboxer_execs_running %u\n",
                running);
        fprintf(f,
                "# HELP sandboxer_sandboxes_created_total Sandboxes created.\n# TYPE "
                "sandboxer_sandboxes_created_total "
                "counter\nsandboxer_sandboxes_created_total %llu\n"
                "# HELP sandboxer_sandboxes_destroyed_total Sandboxes destroyed.\n# TYPE "
                "sandboxer_sandboxes_destroyed_total counter\nsandboxer_sandboxes_destroyed_total %llu\n"
                "# HELP sandboxer_sandboxes_failed_total Sandboxes that failed (provision, supervisor "
                "lost).\n"
                "# TYPE sandboxer_sandboxes_failed_total counter\nsandboxer_sandboxes_failed_total %llu\n"
                "# HELP sandboxer_sandboxes_expired_total Sandboxes expired (TTL, idle).\n# TYPE "
                "sandboxer_sandboxes_expired_total counter\nsandboxer_sandboxes_expired_total %llu\n"
                "# HELP sandboxer_sandboxes_readopted_total Sandboxes re-adopted after a restart.\n# TYPE "
                "sandboxer_sandboxes_readopted_total counter\nsandboxer_sandboxes_readopted_total %llu\n"
                "# HELP sandboxer_execs_total Execs finished.\n# TYPE sandboxer_execs_total counter\n"
                "sandboxer_execs_total %llu\n"
                "# HELP sandboxer_warm_pool_used_total Creates served from the warm pool.\n# TYPE "
                "sandboxer_warm_pool_used_total counter\nsandboxer_warm_pool_used_total %llu\n",
                (unsigned long long) atomic_load(&m->n_created),
                (unsigned long long) atomic_load(&m->n_destroyed),
                (unsigned long long) atomic_load(&m->n_failed),
                (unsigned long long) atomic_load(&m->n_expired),
                (unsigned long long) atomic_load(&m->n_readopted),
                (unsigned long long) atomic_load(&m->n_execs),
                (unsigned long long) atomic_load(&m->n_warm_used));
}

/* ---- the compat surfaces' exec API ---------------------------------------------------------- */

typedef struct cexec {
        sbx_mgr *m;
        box *b;
        json_t *req;
        int in_fd;
        char exec_id[32];
        sbx_exec_stream_cb cb;
} cexec;

static void cexec_sink(void *ud, int which, const char *data, size_t n) {
        cexec *c = ud;
        if (c->cb.on_output)
                c->cb.on_output(c->cb.userdata, which, data, n);
}

static void *cexec_thread(void *arg) {
        cexec *c = arg;
        exec_io io = {.sink = cexec_sink, .ud = c};
        json_t *ans = sv_exec(c->m, c->b, c->req, NULL, 0, c->in_fd, &io);
        safe_close(c->in_fd);
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(c->m, c->b, c->exec_id, ans);
                if (c->cb.on_end)
                        c->cb.on_end(c->cb.userdata, json_object_get(ans, "report"), NULL);
        } else {
                pthread_mutex_lock(&c->m->lock);
                c->b->execs_running--;
                pthread_mutex_unlock(&c->m->lock);
                if (c->cb.on_end)
                        c->cb.on_end(c->cb.userdata, NULL,
                                ans ? json_string_value(json_object_get(ans, "error")) ?: "the exec failed"
                                    : no_answer(c->m, "the sandbox's supervisor is gone"));
        }
        running_del(c->m, c->b, c->exec_id);
        json_decref(ans);
        json_decref(c->req);
        sbx_mgr *m = c->m;
        box_put(m, c->b);
        free(c);
        worker_done(m);
        return NULL;
}

static const char *no_query(void *ctx, const char *k) {
        return NULL;
}

unsigned sbx_mgr_exec_start(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id,
        const sbx_exec_spec *spec, const sbx_exec_stream_cb *cb, char exec_id[static 32], json_t **err) {
        sbx_mgr_request rq = {.who = who, .query = no_query};
        sbx_mgr_reply rp = {.stream_fd = -1};
        *err = NULL;
        box *b = usable_box(m, &rq, sandbox_id, &rp);
        if (!b) {
                *err = rp.json;
                return rp.code;
        }
        if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0]) {
                box_put(m, b);
                *err = err_json("invalid_argument", "argv", "argv: a non-empty command is required");
                return 400;
        }
        if (exec_begin(m, &rq, b, &rp)) {
                box_put(m, b);
                *err = rp.json;
                return rp.code;
        }
        cexec *c = calloc(1, sizeof *c);
        json_t *argv = json_array(), *env = json_array();
        for (char *const *a = spec->argv; *a; a++)
                json_array_append_new(argv, json_string(*a));
        for (char *const *a = spec->env; a && *a; a++)
                json_array_append_new(env, json_string(*a));
        random_id("exe_", exec_id, 32);
        if (c) {
                c->m = m;
                c->b = b;
                c->cb = *cb;
                c->in_fd = spec->stdin_fd >= 0 ? fcntl(spec->stdin_fd, F_DUPFD_CLOEXEC, 3) : -1;
                snprintf(c->exec_id, sizeof c->exec_id, "%s", exec_id);
                c->req = json_pack("{s:s, s:s, s:s, s:O, s:o}", "op", "exec", "kind", "run", "exec_id",
                        exec_id, "argv", argv, "env", env);
                if (spec->cwd)
                        json_object_set_new(c->req, "cwd", json_string(spec->cwd));
                if (spec->timeout_s > 0)
                        json_object_set_new(c->req, "timeout_s", json_real(spec->timeout_s));
        } else
                json_decref(env);
        audit(m, who, "sandbox.exec", b->id, "started", exec_id);
        running_add(m, b, exec_id, argv);
        json_decref(argv);
        if (!c || worker_start(m, cexec_thread, c) < 0) {
                pthread_mutex_lock(&m->lock);
                b->execs_running--;
                pthread_mutex_unlock(&m->lock);
                running_del(m, b, exec_id);
                if (c) {
                        safe_close(c->in_fd);
                        json_decref(c->req);
                        free(c);
                }
                box_put(m, b);
                *err = err_json("unavailable", NULL, "cannot start the exec's thread");
                return 503;
        }
        return 0;
}

int sbx_mgr_exec_signal(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id, int sig) {
        box *b = valid_sandbox_id(sandbox_id) ? box_get(m, sandbox_id, who->tenant) : NULL;
        if (!b)
                return -ENOENT;
        int r = -ESRCH;
        int fd = sv_connect(b);
        if (fd >= 0) {
                json_t *req =
                        json_pack("{s:s, s:s, s:i}", "op", "signal", "exec_id", exec_id, "signal", sig);
                json_t *ans = sv_send(fd, req, NULL, 0) >= 0 ? sv_recv(fd, 5000) : NULL;
                if (ans && json_is_true(json_object_get(ans, "ok")))
                        r = 0;
                json_decref(req);
                json_decref(ans);
                close(fd);
        }
        box_put(m, b);
        return r;
}
