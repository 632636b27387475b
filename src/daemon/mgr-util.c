/* mgr-util.c — small helpers the manager's files share: worker threads, time, ids, error bodies, request
 * bodies, store transactions. */
#include "daemon/mgr-internal.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>
#include "basic/base64.h"
#include "daemon/audit.h"

/* ---- small helpers ------------------------------------------------------------------------- */

/* A detached thread that uses the manager: counted while it runs (sbx_mgr_free waits for the
 * count to fall to zero). mgr_worker_done() is the thread's last touch of m. */
int mgr_worker_start(sbx_mgr *m, void *(*fn)(void *), void *arg) {
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

void mgr_worker_done(sbx_mgr *m) {
        pthread_mutex_lock(&m->lock);
        m->workers--;
        pthread_cond_broadcast(&m->workers_cond);
        pthread_mutex_unlock(&m->lock);
}

int64_t mgr_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_t *mgr_time_json(int64_t ms) {
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

void mgr_random_id(const char *prefix, char *buf, size_t size) {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t) sizeof r) {
                uint64_t x =
                        (uint64_t) mgr_now_ms() ^ ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) buf;
                memcpy(r, &x, sizeof r);
        }
        snprintf(buf, size, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4], r[5],
                r[6], r[7]);
}

const char *sbx_id_canon(const char *s, char buf[static 32]) {
        snprintf(buf, 32, "%s", s ? s : "");
        if (strncmp(buf, "sbx-", 4) == 0 && strlen(buf) == 20)
                buf[3] = '_';
        return buf;
}

const char *sbx_id_hostform(const char *id, char buf[static 32]) {
        snprintf(buf, 32, "%s", id ? id : "");
        if (strncmp(buf, "sbx_", 4) == 0)
                buf[3] = '-';
        return buf;
}

bool mgr_valid_sandbox_id(const char *s) {
        if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) != 20)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}
json_t *mgr_err_json(const char *code, const char *field, const char *fmt, ...) {
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
unsigned mgr_reply_err(
        sbx_mgr_reply *rp, unsigned code, const char *ecode, const char *field, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        rp->code = code;
        rp->json = mgr_err_json(ecode, field, "%s", msg);
        return code;
}

void sbx_mgr_reply_done(sbx_mgr_reply *r) {
        json_decref(r->json);
        r->json = NULL;
        free(r->raw);
        r->raw = NULL;
        if (r->upgrade_drop && r->upgrade_ud)
                r->upgrade_drop(r->upgrade_ud);
        r->upgrade = NULL;
        r->upgrade_drop = NULL;
        r->upgrade_ud = NULL;
}

void mgr_audit(sbx_mgr *m, const sbx_caller *who, const char *action, const char *target,
        const char *outcome, const char *detail) {
        if (!m->audit_path)
                return;
        char actor[140];
        snprintf(actor, sizeof actor, "%s:%s", who ? who->kind : "adm", who ? who->name : "sandboxer");
        sbx_error e = {0};
        /* a request's line: written before its reply (a crash of serve loses none, a reader sees
         * it at once), fsynced by the settler beside the reply (settle.c) */
        bool later = mgr_replying();
        int r = sbx_audit_append_x(m->audit_path, actor, action, target, outcome, detail, !later, &e);
        if (later && r >= 0 && !mgr_audit_sync_later(m) && sbx_audit_sync(m->audit_path, &e) < 0)
                r = -EIO;
        if (r < 0) {
                char buf[1200];
                sbx_log(SBX_LOG_ERROR, "audit_failed", "action", action, "error",
                        sbx_error_format(&e, buf, sizeof buf), NULL);
        }
}

/* Parse a request body as a JSON object; a 4xx in rp otherwise. */
json_t *mgr_parse_body(const sbx_mgr_request *rq, sbx_mgr_reply *rp, bool empty_ok) {
        if (rq->len == 0 && empty_ok)
                return json_object();
        if (rq->len > MAX_BODY_JSON) {
                mgr_reply_err(
                        rp, 413, "payload_too_large", NULL, "the body is over %d bytes", MAX_BODY_JSON);
                return NULL;
        }
        json_error_t je;
        json_t *j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
        if (!j) {
                mgr_reply_err(rp, 400, "invalid_json", NULL, "the body is not JSON: %s (line %d, column %d)",
                        je.text, je.line, je.column);
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                mgr_reply_err(rp, 400, "invalid_json", NULL, "the body must be a JSON object");
                return NULL;
        }
        return j;
}

/* Unknown keys are errors. */
bool mgr_only_keys(json_t *o, const char *const *allowed, const char *prefix, sbx_mgr_reply *rp) {
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
                bool ok = false;
                for (const char *const *a = allowed; *a && !ok; a++)
                        ok = streq(*a, k);
                if (!ok) {
                        char field[300];
                        snprintf(field, sizeof field, "%s%s", prefix, k);
                        mgr_reply_err(rp, 400, "invalid_argument", field, "unknown field '%s'", field);
                        return false;
                }
        }
        return true;
}

bool mgr_string_map(json_t *o, const char *field, size_t max_keys, sbx_mgr_reply *rp) {
        if (!json_is_object(o) || json_object_size(o) > max_keys) {
                mgr_reply_err(rp, 400, "invalid_argument", field,
                        "%s: must be an object of at most %zu strings", field, max_keys);
                return false;
        }
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
                if (!json_is_string(v) || strlen(k) > 256 || json_string_length(v) > 4096) {
                        mgr_reply_err(rp, 400, "invalid_argument", field,
                                "%s.%s: values must be strings (keys ≤ 256 bytes, values ≤ 4096)", field, k);
                        return false;
                }
        }
        return true;
}

void mgr_tx_begin(sbx_mgr *m) {
        sbx_store_tx_begin(m->store);
}

void mgr_tx_end(sbx_mgr *m) {
        sbx_store_tx_commit(m->store);
}

void mgr_tx_end_ok(sbx_mgr *m, bool ok) {
        if (ok)
                sbx_store_tx_commit(m->store);
        else /* a ledger movement half written is not kept: each is a pair or nothing */
                sbx_store_tx_rollback(m->store);
}

bool mgr_stopping(sbx_mgr *m) {
        pthread_mutex_lock(&m->lock);
        bool stopping = m->stopping;
        pthread_mutex_unlock(&m->lock);
        return stopping;
}

bool mgr_utf8_valid(const unsigned char *s, size_t n) {
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

json_t *mgr_base64_json(const unsigned char *s, size_t n) {
        char *o = sbx_base64_encode(s, n);
        json_t *r = o ? json_string(o) : json_null();
        free(o);
        return r;
}

const char *sbx_ops_state_dir(sbx_mgr *m) {
        return m->state_dir;
}

int sbx_json_file_save(const char *path, json_t *j, size_t flags) {
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r = fd < 0 ? -errno : json_dumpfd(j, fd, flags) < 0 ? -EIO : fsync(fd) < 0 ? -errno : 0;
        if (fd >= 0)
                close(fd);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

bool mgr_json_has_str(const json_t *a, const char *s) {
        json_t *x;
        size_t i;
        json_array_foreach(a, i, x) if (streq_ptr(json_string_value(x), s)) return true;
        return false;
}

int mgr_cmp_strp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}
