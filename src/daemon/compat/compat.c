/* compat.c — what the E2B and Daytona surfaces share: the dispatch from http.c, their
 * authentication by sandboxer tokens, in-process calls of the native routes and of the exec API,
 * stream bodies, multipart, base64, path translation and the little state they keep per
 * sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "policy/policy.h"

/* ---- dispatch ------------------------------------------------------------------------------ */

bool sbx_compat_handle(sbx_mgr *m, sbx_store *store, struct MHD_Connection *c, const char *method,
        const char *url, const char *body, size_t len, const sbx_caller *who, unsigned *ret_code,
        struct MHD_Response **ret_resp) {
        cx_req rq = {.m = m,
                .store = store,
                .conn = c,
                .method = method,
                .url = url,
                .body = body ? body : "",
                .len = body ? len : 0,
                .who = who};
        bool mine = cx_e2b_handle(&rq) || cx_daytona_handle(&rq);
        if (!mine)
                return false;
        *ret_code = rq.code;
        *ret_resp = rq.resp;
        return true;
}

const char *cx_header(cx_req *rq, const char *name) {
        if (!rq->conn)
                return rq->header ? rq->header(rq->ctx, name) : NULL;
        return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *cx_query(cx_req *rq, const char *name) {
        if (!rq->conn)
                return rq->query ? rq->query(rq->ctx, name) : NULL;
        return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool cx_auth_token(cx_req *rq, const char *token) {
        sbx_token_info t = {0};
        if (!token || !*token || sbx_store_token_lookup(rq->store, token, &t, NULL) < 0)
                return false;
        snprintf(rq->caller.kind, sizeof rq->caller.kind, "%s", t.actor);
        snprintf(rq->caller.name, sizeof rq->caller.name, "%s", t.name);
        snprintf(rq->caller.tenant, sizeof rq->caller.tenant, "%s",
                t.tenant && *t.tenant ? t.tenant : "default");
        sbx_token_info_clear(&t);
        return true;
}

bool cx_auth_who(cx_req *rq) {
        if (!rq->who)
                return false;
        rq->caller = *rq->who;
        if (!rq->caller.tenant[0])
                snprintf(rq->caller.tenant, sizeof rq->caller.tenant, "default");
        return true;
}

/* ---- responses ----------------------------------------------------------------------------- */

void cx_respond(cx_req *rq, unsigned code, const char *ctype, const void *body, size_t len) {
        if (rq->resp)
                MHD_destroy_response(rq->resp);
        rq->resp = MHD_create_response_from_buffer(len, (void *) body, MHD_RESPMEM_MUST_COPY);
        rq->code = code;
        if (rq->resp && ctype)
                MHD_add_response_header(rq->resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        if (rq->resp)
                MHD_add_response_header(rq->resp, "Cache-Control", "no-store");
}

void cx_respond_json(cx_req *rq, unsigned code, json_t *j) {
        char *text = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        if (!text) {
                static const char oom[] = "{\"code\":503,\"message\":\"out of memory\"}";
                cx_respond(rq, 503, "application/json", oom, strlen(oom));
                return;
        }
        cx_respond(rq, code, "application/json", text, strlen(text));
        free(text);
}

void cx_add_header(cx_req *rq, const char *name, const char *value) {
        if (rq->resp)
                MHD_add_response_header(rq->resp, name, value);
}

/* ---- the operations, for the caller (ops.h) -------------------------------------------------- */

unsigned cx_limit(const char *text) {
        if (!text)
                return 100;
        long l = strtol(text, NULL, 10);
        return (unsigned) (l < 1 ? 1 : l > 500 ? 500 : l);
}

unsigned cx_file_put(
        cx_req *rq, const char *id, const char *path, const void *data, size_t len, json_t **ret_err) {
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_file_write(rq->m, &rq->caller, id, path, data, len, &rp);
        if (code == 404) {
                /* as envd and Daytona's toolbox do: the parent directories first */
                sbx_mgr_reply_done(&rp);
                cx_run r;
                char *argv[] = {(char *) "/bin/sh", (char *) "-c",
                        (char *) "mkdir -p -- \"$(dirname -- \"$1\")\"", (char *) "sh", (char *) path, NULL};
                (void) cx_exec(rq, id, argv, NULL, NULL, 0, NULL, 0, &r);
                cx_run_done(&r);
                code = sbx_ops_file_write(rq->m, &rq->caller, id, path, data, len, &rp);
        }
        if (code != 200 && ret_err)
                *ret_err = json_incref(rp.json);
        sbx_mgr_reply_done(&rp);
        return code;
}

json_t *cx_record(cx_req *rq, const char *id, unsigned *code) {
        if (!id || strlen(id) > 64 || strchr(id, '/') || strchr(id, '?')) {
                *code = 404;
                return NULL;
        }
        sbx_mgr_reply rp;
        *code = sbx_ops_get(rq->m, &rq->caller, id, &rp);
        json_t *rec = NULL;
        if (*code == 200 && rp.json) {
                rec = rp.json;
                rp.json = NULL;
        }
        sbx_mgr_reply_done(&rp);
        return rec;
}

bool cx_record_live(const json_t *rec) {
        const char *st = json_string_value(json_object_get(rec, "state"));
        return st && (streq(st, "ready") || streq(st, "active") || streq(st, "paused"));
}

int64_t cx_record_ms(const json_t *rec, const char *field) {
        const char *s = json_string_value(json_object_get(rec, field));
        if (!s)
                return 0;
        struct tm tm = {0};
        const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!rest)
                return 0;
        int64_t ms = (int64_t) timegm(&tm) * 1000;
        if (*rest == '.')
                ms += strtol(rest + 1, NULL, 10) % 1000;
        return ms;
}

int64_t cx_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- exec to its end ------------------------------------------------------------------------ */

typedef struct run_ctx {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        atomic_int refs;
        bool ended;
        cx_run *r;
} run_ctx;

static void run_ctx_unref(run_ctx *c) {
        if (atomic_fetch_sub(&c->refs, 1) != 1)
                return;
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        free(c);
}

static void append(char **buf, size_t *len, const char *d, size_t n) {
        char *p = realloc(*buf, *len + n + 1);
        if (!p)
                return;
        memcpy(p + *len, d, n);
        *len += n;
        p[*len] = 0;
        *buf = p;
}

static void run_output(void *ud, int fd, const char *data, size_t n) {
        run_ctx *c = ud;
        pthread_mutex_lock(&c->lock);
        if (fd == 2)
                append(&c->r->err, &c->r->err_len, data, n);
        else
                append(&c->r->out, &c->r->out_len, data, n);
        append(&c->r->both, &c->r->both_len, data, n);
        pthread_mutex_unlock(&c->lock);
}

static void run_end(void *ud, const json_t *report, const char *error) {
        run_ctx *c = ud;
        pthread_mutex_lock(&c->lock);
        cx_run *r = c->r;
        if (report) {
                const json_t *ex = json_object_get(report, "exit");
                json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
                r->exit_code = json_is_integer(code) ? (int) json_integer_value(code) : -1;
                r->signal = json_is_integer(sig) ? (int) json_integer_value(sig) : 0;
                snprintf(r->status, sizeof r->status, "%s",
                        json_string_value(json_object_get(report, "status")) ?: "exited");
                const char *e = json_string_value(json_object_get(report, "error"));
                if (e)
                        r->error = strdup(e);
        } else {
                r->exit_code = -1;
                r->error = strdup(error ? error : "the exec failed");
        }
        c->ended = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        run_ctx_unref(c);
}

void cx_run_done(cx_run *r) {
        free(r->out);
        free(r->err);
        free(r->both);
        free(r->error);
        json_decref(r->refusal);
        *r = (cx_run){0};
}

unsigned cx_exec(cx_req *rq, const char *sandbox_id, char *const *argv, char *const *env, const char *cwd,
        double timeout_s, const void *in, size_t in_len, cx_run *r) {
        *r = (cx_run){.exit_code = -1};
        run_ctx *c = calloc(1, sizeof *c);
        if (!c) {
                r->http = 503;
                r->refusal = json_pack(
                        "{s:{s:s, s:s}}", "error", "code", "unavailable", "message", "out of memory");
                return 503;
        }
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->cond, NULL);
        atomic_init(&c->refs, 2);
        c->r = r;
        int p[2] = {-1, -1};
        if (in && pipe2(p, O_CLOEXEC) < 0)
                p[0] = p[1] = -1;
        sbx_exec_spec spec = {
                .argv = argv, .env = env, .cwd = cwd, .timeout_s = timeout_s, .stdin_fd = in ? p[0] : -1};
        sbx_exec_stream_cb cb = {.on_output = run_output, .on_end = run_end, .userdata = c};
        char exec_id[32];
        json_t *err = NULL;
        unsigned code = sbx_mgr_exec_start(rq->m, &rq->caller, sandbox_id, &spec, &cb, exec_id, &err);
        safe_close(p[0]);
        if (code) {
                safe_close(p[1]);
                r->http = code;
                r->refusal = err;
                atomic_fetch_sub(&c->refs, 1); /* the callbacks' reference: they will not run */
                run_ctx_unref(c);
                return code;
        }
        if (p[1] >= 0) {
                const char *d = in;
                for (size_t off = 0; off < in_len;) {
                        ssize_t w = write(p[1], d + off, in_len - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        off += (size_t) w;
                }
                safe_close(p[1]);
        }
        pthread_mutex_lock(&c->lock);
        while (!c->ended)
                pthread_cond_wait(&c->cond, &c->lock);
        pthread_mutex_unlock(&c->lock);
        run_ctx_unref(c);
        return 0;
}

/* ---- streams -------------------------------------------------------------------------------- */

#define STREAM_MAX (32u * 1024 * 1024)

struct cx_stream {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        atomic_int refs;
        char *buf;
        size_t off, len;
        bool done, gone;
        char *keepalive;
        size_t keepalive_len;
        double keepalive_s;
};

cx_stream *cx_stream_new(const void *keepalive, size_t keepalive_len, double keepalive_s) {
        cx_stream *s = calloc(1, sizeof *s);
        if (!s)
                return NULL;
        pthread_mutex_init(&s->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &ca);
        pthread_condattr_destroy(&ca);
        atomic_init(&s->refs, 1);
        if (keepalive && keepalive_len) {
                s->keepalive = malloc(keepalive_len);
                if (s->keepalive) {
                        memcpy(s->keepalive, keepalive, keepalive_len);
                        s->keepalive_len = keepalive_len;
                }
        }
        s->keepalive_s = keepalive_s;
        return s;
}

void cx_stream_unref(cx_stream *s) {
        if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
                return;
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s->buf);
        free(s->keepalive);
        free(s);
}

bool cx_stream_gone(cx_stream *s) {
        pthread_mutex_lock(&s->lock);
        bool gone = s->gone;
        pthread_mutex_unlock(&s->lock);
        return gone;
}

bool cx_stream_write(cx_stream *s, const void *data, size_t n) {
        pthread_mutex_lock(&s->lock);
        bool ok = !s->gone && !s->done;
        if (ok && s->len - s->off + n > STREAM_MAX)
                ok = false, s->gone = true; /* a reader this far behind is taken as gone */
        if (ok) {
                if (s->off > 0 && s->off == s->len)
                        s->off = s->len = 0;
                char *p = realloc(s->buf, s->len + n);
                if (p) {
                        memcpy(p + s->len, data, n);
                        s->buf = p;
                        s->len += n;
                } else
                        ok = false;
        }
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return ok;
}

void cx_stream_clear(cx_stream *s) {
        pthread_mutex_lock(&s->lock);
        s->off = s->len = 0;
        pthread_mutex_unlock(&s->lock);
}

void cx_stream_close(cx_stream *s) {
        pthread_mutex_lock(&s->lock);
        s->done = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max) {
        cx_stream *s = cls;
        pthread_mutex_lock(&s->lock);
        while (s->off == s->len && !s->done) {
                if (s->keepalive_s <= 0) {
                        pthread_cond_wait(&s->cond, &s->lock);
                        continue;
                }
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += (time_t) s->keepalive_s;
                if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT && s->off == s->len &&
                        !s->done && s->keepalive) {
                        size_t n = MIN(max, s->keepalive_len);
                        memcpy(out, s->keepalive, n);
                        pthread_mutex_unlock(&s->lock);
                        return (ssize_t) n;
                }
        }
        ssize_t ret;
        if (s->off < s->len) {
                size_t n = MIN(max, s->len - s->off);
                memcpy(out, s->buf + s->off, n);
                s->off += n;
                ret = (ssize_t) n;
        } else
                ret = MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_unlock(&s->lock);
        return ret;
}

static void stream_free(void *cls) {
        cx_stream *s = cls;
        pthread_mutex_lock(&s->lock);
        s->gone = true;
        pthread_mutex_unlock(&s->lock);
        cx_stream_unref(s);
}

struct MHD_Response *cx_stream_response(cx_stream *s, const char *ctype) {
        atomic_fetch_add(&s->refs, 1);
        struct MHD_Response *r =
                MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_free);
        if (!r) {
                cx_stream_unref(s);
                return NULL;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        MHD_add_response_header(r, "Cache-Control", "no-store");
        return r;
}

/* ---- request checks ---------------------------------------------------------------------- */

bool cx_string_map_ok(const json_t *o, bool env_names) {
        if (!o || json_is_null(o))
                return true;
        if (!json_is_object(o))
                return false;
        const char *k, *why;
        json_t *v;
        json_object_foreach((json_t *) o, k, v) {
                if (!json_is_string(v) || (env_names && sbx_env_name_check(k, &why) < 0))
                        return false;
        }
        return true;
}

/* ---- base64 --------------------------------------------------------------------------------- */

char *cx_b64_encode(const void *data, size_t n) {
        return sbx_base64_encode(data, n);
}

/* Standard or URL alphabet, padding optional (protobuf JSON accepts both). */
int cx_b64_decode(const char *s, size_t n, char **ret, size_t *ret_len) {
        return sbx_base64_decode(s, n, true, ret, ret_len);
}

/* ---- multipart ------------------------------------------------------------------------------ */

static const char *memmem_s(const char *h, size_t hl, const char *n, size_t nl) {
        return memmem(h, hl, n, nl);
}

/* The value of PARAM="…" (or unquoted) in a header line [s, e). */
static bool header_param(const char *s, const char *e, const char *param, char *out, size_t size) {
        size_t pl = strlen(param);
        for (const char *p = s; p + pl < e; p++) {
                if (strncasecmp(p, param, pl) != 0 || p[pl] != '=' ||
                        (p > s && p[-1] != ' ' && p[-1] != ';' && p[-1] != '\t'))
                        continue;
                const char *v = p + pl + 1, *ve;
                if (*v == '"') {
                        v++;
                        ve = v;
                        while (ve < e && *ve != '"')
                                ve++;
                } else {
                        ve = v;
                        while (ve < e && *ve != ';' && *ve != ' ' && *ve != '\r')
                                ve++;
                }
                size_t n = MIN((size_t) (ve - v), size - 1);
                memcpy(out, v, n);
                out[n] = 0;
                return true;
        }
        return false;
}

int cx_multipart(const char *ctype, const char *body, size_t len, cx_part *parts, size_t max) {
        char boundary[256];
        if (!ctype || strncasecmp(ctype, "multipart/form-data", 19) != 0 ||
                !header_param(ctype, ctype + strlen(ctype), "boundary", boundary + 2, sizeof boundary - 2))
                return -EINVAL;
        boundary[0] = boundary[1] = '-';
        size_t bl = strlen(boundary);
        const char *end = body + len;
        const char *p = memmem_s(body, len, boundary, bl);
        size_t n = 0;
        while (p && n < max) {
                p += bl;
                if (end - p >= 2 && p[0] == '-' && p[1] == '-')
                        break; /* the closing delimiter */
                if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
                        p += 2;
                const char *hend = memmem_s(p, (size_t) (end - p), "\r\n\r\n", 4);
                if (!hend)
                        return -EINVAL;
                cx_part *pt = &parts[n];
                *pt = (cx_part){0};
                for (const char *line = p; line < hend;) {
                        const char *le = memmem_s(line, (size_t) (hend - line), "\r\n", 2);
                        if (!le)
                                le = hend;
                        if (strncasecmp(line, "Content-Disposition:", 20) == 0) {
                                header_param(line + 20, le, "name", pt->name, sizeof pt->name);
                                header_param(line + 20, le, "filename", pt->filename, sizeof pt->filename);
                        }
                        line = le + 2;
                }
                const char *data = hend + 4;
                /* the part ends at CRLF + the delimiter */
                char delim[260];
                snprintf(delim, sizeof delim, "\r\n%s", boundary);
                const char *next = memmem_s(data, (size_t) (end - data), delim, bl + 2);
                if (!next)
                        return -EINVAL;
                pt->data = data;
                pt->len = (size_t) (next - data);
                n++;
                p = next + 2;
        }
        return (int) n;
}

/* ---- paths ---------------------------------------------------------------------------------- */

char *cx_path(const char *p, const char *scratch, const char *const *homes) {
        if (!p || !*p || strlen(p) > 4000)
                return NULL;
        if (!scratch || !*scratch)
                scratch = "/tmp";
        char *r = NULL;
        if (p[0] == '~' && (p[1] == '/' || !p[1])) {
                if (asprintf(&r, "%s%s", scratch, p + 1) < 0)
                        return NULL;
        } else if (p[0] != '/') {
                if (asprintf(&r, "%s/%s", scratch, p) < 0)
                        return NULL;
        } else {
                for (const char *const *h = homes; h && *h; h++) {
                        size_t l = strlen(*h);
                        if (strncmp(p, *h, l) == 0 && (p[l] == '/' || !p[l])) {
                                if (asprintf(&r, "%s%s", scratch, p + l) < 0)
                                        return NULL;
                                break;
                        }
                }
                if (!r)
                        r = strdup(p);
        }
        if (!r)
                return NULL;
        /* no trailing slash (but "/"), no empty components */
        size_t l = strlen(r);
        while (l > 1 && r[l - 1] == '/')
                r[--l] = 0;
        char *w = r;
        for (const char *s = r; *s; s++)
                if (!(s[0] == '/' && s[1] == '/'))
                        *w++ = *s;
        *w = 0;
        return r;
}

/* ---- per-sandbox state ---------------------------------------------------------------------- */

/* ---- per sandbox: kept by the manager, on the sandbox's record ---------------------------------- */

void cx_box_set(sbx_mgr *m, const char *id, const sbx_caller *who, json_t *env, char ret_token[static 65]) {
        (void) sbx_mgr_surface_set(m, id, who, env, ret_token);
}

bool cx_box_get(sbx_mgr *m, const char *id, const char *token, sbx_caller *ret_who, char ***ret_env) {
        json_t *env = NULL;
        bool ok = sbx_mgr_surface_get(m, id, token, ret_who, ret_env ? &env : NULL);
        if (ok && ret_env) {
                size_t n = json_object_size(env), i = 0;
                char **v = calloc(n + 1, sizeof *v);
                const char *k;
                json_t *val;
                if (v)
                        json_object_foreach(env, k, val) {
                                if (json_is_string(val) &&
                                        asprintf(&v[i], "%s=%s", k, json_string_value(val)) >= 0)
                                        i++;
                        }
                *ret_env = v;
        }
        json_decref(env);
        return ok;
}

void cx_strv_free(char **v) {
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

/* ---- text ----------------------------------------------------------------------------------- */

/* The length of the UTF-8 sequence at s[0..n): k > 0 when whole and valid, 0 when invalid, -1
 * when it may be the start of one cut short. */
static int utf8_seq(const unsigned char *s, size_t n) {
        unsigned c = s[0];
        int k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (k == 0 || c == 0xc0 || c == 0xc1 || c > 0xf4)
                return 0;
        for (int j = 1; j < k; j++) {
                if ((size_t) j >= n)
                        return -1;
                if ((s[j] & 0xc0) != 0x80)
                        return 0;
        }
        return k;
}

json_t *cx_utf8_text(const char *s, size_t n, bool final, size_t *used) {
        const unsigned char *u = (const unsigned char *) s;
        char *o = malloc(n * 3 + 1); /* each byte at worst U+FFFD */
        size_t i = 0, k = 0;
        if (!o) {
                *used = n;
                return json_string("");
        }
        while (i < n) {
                int l = utf8_seq(u + i, n - i);
                if (l < 0 && !final)
                        break; /* waits for its continuation */
                if (l <= 0) {
                        memcpy(o + k, "\xef\xbf\xbd", 3);
                        k += 3;
                        i++;
                        continue;
                }
                memcpy(o + k, s + i, (size_t) l);
                k += (size_t) l;
                i += (size_t) l;
        }
        *used = i;
        json_t *j = json_stringn(o, k);
        free(o);
        return j ? j : json_string("");
}

bool cx_random_hex(char *buf, size_t bytes) {
        unsigned char r[64];
        if (bytes > sizeof r || getrandom(r, bytes, 0) != (ssize_t) bytes) {
                buf[0] = 0;
                return false;
        }
        for (size_t i = 0; i < bytes; i++)
                snprintf(buf + 2 * i, 3, "%02x", r[i]);
        return true;
}
