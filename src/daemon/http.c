/* http.c — libmicrohttpd listeners, who is asking (SO_PEERCRED or a bearer token), the routes
 * that exist so far (/healthz, /metrics, /v1/profiles) and the JSON error shape. Everything
 * else is 404: endpoints are absent until built, never stubs. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/debug.h"
#include "basic/jsonw.h"
#include "daemon/compat/compat.h"
#include "daemon/http.h"
#include "daemon/ports.h"
#include "daemon/log.h"
#include "daemon/sandboxes.h"
#include "isolate/mount.h"
#include "policy/policy.h"

#define MAX_LISTENERS 16
#define MAX_CODE 600

typedef struct listener {
        struct sbx_http_server *srv;
        struct MHD_Daemon *mhd;
        sbx_listen_addr addr;
        dev_t dev; /* of the socket file we created (unix) */
        ino_t ino;
} listener;

struct sbx_http_server {
        sbx_store *store;
        sbx_mgr *mgr;
        char *tls_cert, *tls_key; /* PEM: TCP listeners serve HTTPS (unix sockets stay plain) */
        listener *l[MAX_LISTENERS];
        size_t n;
        _Atomic uint64_t codes[MAX_CODE];
};

/* Who sent a request. */
typedef struct actor {
        char kind[4]; /* adm | agt | atm */
        char name[128];
        char tenant[128];
} actor;

int sbx_listen_addr_parse(const char *s, sbx_listen_addr *ret, sbx_error *e) {
        sbx_listen_addr a = {};
        static const char hint[] = "expected unix:PATH or HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080)";

        if (!s || !*s)
                return sbx_error_set(e, EINVAL, "listen", "empty listen address; %s", hint);
        if (strncmp(s, "unix:", 5) == 0) {
                if (!s[5])
                        return sbx_error_set(e, EINVAL, "listen", "'%s': no socket path; %s", s, hint);
                if (strlen(s + 5) >= sizeof a.path)
                        return sbx_error_set(e, ENAMETOOLONG, "listen",
                                "'%s': socket path longer than %zu bytes", s, sizeof a.path - 1);
                a.is_unix = true;
                strcpy(a.path, s + 5);
                *ret = a;
                return 0;
        }
        const char *colon, *host = s;
        size_t hlen;
        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || close[1] != ':')
                        return sbx_error_set(
                                e, EINVAL, "listen", "invalid listen address '%s'; %s", s, hint);
                host = s + 1;
                hlen = (size_t) (close - host);
                colon = close + 1;
        } else {
                colon = strrchr(s, ':');
                if (!colon || strchr(s, ':') != colon)
                        return sbx_error_set(
                                e, EINVAL, "listen", "invalid listen address '%s'; %s", s, hint);
                hlen = (size_t) (colon - s);
        }
        if (hlen == 0 || hlen >= sizeof a.host)
                return sbx_error_set(
                        e, EINVAL, "listen", "invalid listen address '%s': no host; %s", s, hint);
        char *end;
        errno = 0;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || port > 65535 || colon[1] == '-' || colon[1] == '+')
                return sbx_error_set(e, EINVAL, "listen", "invalid port in '%s' (0-65535); %s", s, hint);
        memcpy(a.host, host, hlen);
        a.port = (unsigned) port;
        *ret = a;
        return 0;
}

int sbx_listen_addr_default(sbx_listen_addr *ret, sbx_error *e) {
        _cleanup_free_ char *dir = NULL;
        int r = sbx_runtime_dir(&dir);
        if (r < 0)
                return sbx_error_set(e, r, "listen",
                        "no runtime dir for the default socket (XDG_RUNTIME_DIR unset); pass --listen "
                        "unix:PATH");
        sbx_listen_addr a = {.is_unix = true};
        if ((size_t) snprintf(a.path, sizeof a.path, "%s/sandboxer.sock", dir) >= sizeof a.path)
                return sbx_error_set(
                        e, ENAMETOOLONG, "listen", "socket path %s/sandboxer.sock too long", dir);
        *ret = a;
        return 0;
}

/* ---- responses ---- */

static enum MHD_Result respond(listener *l, struct MHD_Connection *c, unsigned code, const char *ctype,
        char *body, size_t len, const char *extra_header, const char *extra_value) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        if (extra_header)
                MHD_add_response_header(resp, extra_header, extra_value);
        enum MHD_Result ret = MHD_queue_response(c, code, resp);
        MHD_destroy_response(resp);
        if (code < MAX_CODE)
                atomic_fetch_add(&l->srv->codes[code], 1);
        return ret;
}

static enum MHD_Result respond_jsonw(listener *l, struct MHD_Connection *c, unsigned code, jsonw *w,
        const char *extra_header, const char *extra_value) {
        char *text;
        size_t len;
        if (jsonw_finish(w, true, &text, &len) < 0) {
                static const char oom[] =
                        "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}\n";
                text = strdup(oom);
                if (!text)
                        return MHD_NO;
                len = strlen(text);
                code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        }
        return respond(l, c, code, "application/json", text, len, extra_header, extra_value);
}

static enum MHD_Result respond_error(listener *l, struct MHD_Connection *c, unsigned code, const char *ecode,
        const char *message, const char *extra_header, const char *extra_value) {
        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        jsonw_key(&w, "error");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "code", ecode);
        jsonw_kv_string(&w, "message", message);
        jsonw_end_object(&w);
        jsonw_end_object(&w);
        return respond_jsonw(l, c, code, &w, extra_header, extra_value);
}

/* ---- authentication ---- */

/* A uid's name, as the user database says — kept 30 s: asking it reads /etc/passwd (NSS), which
 * cost each request on the unix socket more than the rest of its authentication. */
static void user_name(uid_t uid, char *buf, size_t size) {
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static struct {
                uid_t uid;
                time_t at;
                char name[128];
        } seen[16];
        static unsigned next;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        time_t now = ts.tv_sec + 1; /* 0 is "empty" */
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < ELEMENTSOF(seen); i++)
                if (seen[i].at && seen[i].uid == uid && now - seen[i].at < 30) {
                        snprintf(buf, size, "%s", seen[i].name);
                        pthread_mutex_unlock(&lock);
                        return;
                }
        pthread_mutex_unlock(&lock);
        struct passwd pw, *res = NULL;
        char tmp[1024];
        if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
                snprintf(buf, size, "%s", res->pw_name);
        else
                snprintf(buf, size, "uid-%u", (unsigned) uid);
        pthread_mutex_lock(&lock);
        unsigned k = next++ % ELEMENTSOF(seen);
        seen[k].uid = uid;
        seen[k].at = now;
        snprintf(seen[k].name, sizeof seen[k].name, "%s", buf);
        pthread_mutex_unlock(&lock);
}

/* 0 with *a filled, or an HTTP status (401) and a message for the client. */
static unsigned authenticate(listener *l, struct MHD_Connection *c, actor *a, const char **ret_msg) {
        *a = (actor){};
        if (l->addr.is_unix) {
                const union MHD_ConnectionInfo *ci =
                        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
                struct ucred uc;
                socklen_t len = sizeof uc;
                if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0) {
                        *ret_msg = "cannot tell who is connecting (SO_PEERCRED failed)";
                        return MHD_HTTP_UNAUTHORIZED;
                }
                user_name(uc.uid, a->name, sizeof a->name);
                /* The socket's owner and root administer; anyone else the 0660 mode lets in (the
                 * socket's group) is an agent in a tenant of their own. */
                if (uc.uid == 0 || uc.uid == geteuid())
                        strcpy(a->kind, "adm");
                else {
                        strcpy(a->kind, "agt");
                        snprintf(a->tenant, sizeof a->tenant, "uid-%u", (unsigned) uc.uid);
                }
                return 0;
        }

        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
                *ret_msg = "a bearer token is required on TCP: 'Authorization: Bearer TOKEN' "
                           "(tokens come from 'sandboxer token create')";
                return MHD_HTTP_UNAUTHORIZED;
        }
        h += 7;
        while (*h == ' ')
                h++;
        sbx_token_info t = {};
        int r = sbx_store_token_lookup(l->srv->store, h, &t, NULL);
        if (r == -EKEYREVOKED) {
                *ret_msg = "this token has been revoked";
                return MHD_HTTP_UNAUTHORIZED;
        }
        if (r < 0) {
                *ret_msg = "unknown token";
                return MHD_HTTP_UNAUTHORIZED;
        }
        snprintf(a->kind, sizeof a->kind, "%s", t.actor);
        snprintf(a->name, sizeof a->name, "%s", t.name);
        snprintf(a->tenant, sizeof a->tenant, "%s", t.tenant);
        sbx_token_info_clear(&t);
        return 0;
}

/* ---- routes ---- */

static enum MHD_Result get_healthz(listener *l, struct MHD_Connection *c) {
        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "status", "ok");
        jsonw_end_object(&w);
        return respond_jsonw(l, c, MHD_HTTP_OK, &w, NULL, NULL);
}

static enum MHD_Result get_profiles(listener *l, struct MHD_Connection *c) {
        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        jsonw_key(&w, "items");
        jsonw_begin_array(&w);
        for (const char *const *id = sbx_builtin_profile_ids(); id && *id; id++) {
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                sbx_error e = {};
                jsonw_begin_object(&w);
                jsonw_kv_string(&w, "id", *id);
                if (sbx_profile_load(*id, &p, &e) >= 0) {
                        jsonw_kv_string(&w, "version", p->version);
                        jsonw_kv_string(&w, "source", p->source_file);
                } else {
                        char buf[1024];
                        jsonw_kv_null(&w, "version");
                        jsonw_kv_string(&w, "error", sbx_error_format(&e, buf, sizeof buf));
                }
                jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
        return respond_jsonw(l, c, MHD_HTTP_OK, &w, NULL, NULL);
}

static enum MHD_Result get_metrics(listener *l, struct MHD_Connection *c) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return MHD_NO;
        if (l->srv->mgr)
                sbx_mgr_metrics(l->srv->mgr, f);
        fputs("# HELP sandboxer_up Whether the sandboxer control plane is serving.\n"
              "# TYPE sandboxer_up gauge\n"
              "sandboxer_up 1\n"
              "# HELP sandboxer_http_requests_total HTTP requests answered, by status code.\n"
              "# TYPE sandboxer_http_requests_total counter\n",
                f);
        for (unsigned code = 100; code < MAX_CODE; code++) {
                uint64_t n = atomic_load(&l->srv->codes[code]);
                if (n)
                        fprintf(f, "sandboxer_http_requests_total{code=\"%u\"} %llu\n", code,
                                (unsigned long long) n);
        }
        if (fclose(f) != 0) {
                free(text);
                return MHD_NO;
        }
        return respond(l, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL, NULL);
}

static const struct route {
        const char *path;
        enum MHD_Result (*get)(listener *l, struct MHD_Connection *c);
} routes[] = {
        {"/healthz", get_healthz},
        {"/metrics", get_metrics},
        {"/v1/profiles", get_profiles},
};

/* A path some surface serves: the native API (/v1/...) and the routes above. (E2B's and Daytona's
 * take theirs before this is asked.) */
static bool known_path(const char *url) {
        if (streq(url, "/v1") || strncmp(url, "/v1/", 4) == 0)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(routes); i++)
                if (streq(url, routes[i].path))
                        return true;
        return false;
}

static void log_request(listener *l, const char *method, const char *url, unsigned code, const actor *a) {
        char scode[16], who[160];
        snprintf(scode, sizeof scode, "%u", code);
        snprintf(who, sizeof who, "%s:%s", a->kind[0] ? a->kind : "-", a->name[0] ? a->name : "-");
        sbx_log(SBX_LOG_INFO, "request", "listener", l->addr.is_unix ? "unix" : "tcp", "method", method,
                "path", url, "code", scode, "actor", who, "tenant", a->tenant[0] ? a->tenant : "-", NULL);
}

/* One request's body as it arrives; bodies over the limit are read and dropped (413 after). */
typedef struct req_ctx {
        char *uri; /* the request's target as sent (with its query: the ports proxy passes it on) */
        bool seen; /* handle() has been called for it */
        char *body;
        size_t len, cap;
        bool too_large;
} req_ctx;

/* libmicrohttpd's first word on a request: its raw target, kept in the request's context. */
static void *uri_logged(void *cls, const char *uri, struct MHD_Connection *c) {
        req_ctx *r = calloc(1, sizeof *r);
        if (r)
                r->uri = strdup(uri ? uri : "");
        return r;
}

#define BODY_MAX (64u * 1024 * 1024 + 4096)

static void request_completed(
        void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode t) {
        sbx_mgr_request_end();
        req_ctx *r = *req_cls;
        if (r) {
                free(r->body);
                free(r->uri);
                free(r);
                *req_cls = NULL;
        }
}

static const char *query_arg(void *ctx, const char *key) {
        return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static const char *header_arg(void *ctx, const char *key) {
        return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, key);
}

/* A stream's body: read from the pipe the operation's thread writes, to its end. Blocking is
 * fine: each connection has its own thread. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
        int fd = (int) (intptr_t) cls;
        for (;;) {
                ssize_t n = read(fd, buf, max);
                if (n > 0)
                        return n;
                if (n < 0 && errno == EINTR)
                        continue;
                return MHD_CONTENT_READER_END_OF_STREAM;
        }
}

static void stream_free(void *cls) {
        close((int) (intptr_t) cls);
}

/* An upgraded connection (a WebSocket): served on a thread of its own, closed when done. */
typedef struct upgraded {
        void (*fn)(void *ud, int fd, const char *extra, size_t n);
        void *ud;
        int fd;
        char *extra;
        size_t n;
        struct MHD_UpgradeResponseHandle *urh;
} upgraded;

static void *upgraded_main(void *arg) {
        upgraded *u = arg;
        u->fn(u->ud, u->fd, u->extra, u->n);
        (void) MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        free(u->extra);
        free(u);
        return NULL;
}

static void upgrade_handler(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra_in,
        size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
        upgraded *u = cls;
        u->fd = sock;
        u->urh = urh;
        if (extra_in_size && (u->extra = malloc(extra_in_size)))
                memcpy(u->extra, extra_in, u->n = extra_in_size);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, upgraded_main, u) != 0)
                upgraded_main(u); /* inline: this connection's thread is ours anyway */
        pthread_attr_destroy(&at);
}

struct MHD_Response *sbx_http_upgrade_raw(
        void (*fn)(void *ud, int fd, const char *extra, size_t n), void *ud, const char *upgrade) {
        upgraded *u = calloc(1, sizeof *u);
        struct MHD_Response *resp = u ? MHD_create_response_for_upgrade(upgrade_handler, u) : NULL;
        if (!resp) {
                free(u);
                return NULL;
        }
        *u = (upgraded){.fn = fn, .ud = ud, .fd = -1};
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, upgrade);
        return resp;
}

struct MHD_Response *sbx_http_upgrade_response(void (*fn)(void *ud, int fd, const char *extra, size_t n),
        void *ud, const char *accept, const char *protocol) {
        upgraded *u = calloc(1, sizeof *u);
        struct MHD_Response *resp = u ? MHD_create_response_for_upgrade(upgrade_handler, u) : NULL;
        if (!resp) {
                free(u);
                return NULL;
        }
        *u = (upgraded){.fn = fn, .ud = ud, .fd = -1};
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
        if (protocol)
                MHD_add_response_header(resp, "Sec-WebSocket-Protocol", protocol);
        return resp;
}

static enum MHD_Result respond_mgr(listener *l, struct MHD_Connection *c, sbx_mgr_reply *rp) {
        sbx_debug_mark("serve: answering");
        enum MHD_Result ret;
        if (rp->code == 101 && rp->upgrade) {
                struct MHD_Response *resp =
                        sbx_http_upgrade_response(rp->upgrade, rp->upgrade_ud, rp->ws_accept, NULL);
                if (!resp)
                        return respond_error(
                                l, c, 503, "unavailable", "cannot upgrade the connection", NULL, NULL);
                rp->upgrade_ud = NULL; /* the session's from here (its fn frees it) */
                ret = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
                MHD_destroy_response(resp);
                atomic_fetch_add(&l->srv->codes[101], 1);
                return ret;
        }
        if (rp->stream_fd >= 0) {
                struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
                        stream_read, (void *) (intptr_t) rp->stream_fd, stream_free);
                if (!resp) {
                        close(rp->stream_fd);
                        return MHD_NO;
                }
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->ctype);
                MHD_add_response_header(resp, "Cache-Control", "no-store");
                ret = MHD_queue_response(c, rp->code, resp);
                MHD_destroy_response(resp);
                if (rp->code < MAX_CODE)
                        atomic_fetch_add(&l->srv->codes[rp->code], 1);
                return ret;
        }
        if (rp->raw) {
                char *raw = rp->raw;
                rp->raw = NULL;
                return respond(l, c, rp->code, rp->ctype ? rp->ctype : "application/octet-stream", raw,
                        rp->raw_len, NULL, NULL);
        }
        char *text = rp->json ? json_dumps(rp->json, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        if (!text)
                return respond_error(
                        l, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "out of memory", NULL, NULL);
        size_t n = strlen(text);
        char *t2 = realloc(text, n + 2);
        if (t2) {
                text = t2;
                text[n++] = '\n';
                text[n] = 0;
        }
        return respond(l, c, rp->code, "application/json", text, n, NULL, NULL);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
        const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls) {
        listener *l = cls;
        actor a;
        const char *msg = NULL;
        unsigned code;
        char buf[512];

        if (!*req_cls) /* the URI callback could not allocate it */
                return MHD_NO;
        req_ctx *rc = *req_cls;
        if (!rc->seen) {
                rc->seen = true;
                /* a body its length says is over the limit: refused before it is read (a client
                 * that sent Expect: 100-continue sends none of it) */
                const char *cl =
                        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > BODY_MAX) {
                        actor none = {0};
                        log_request(l, method, url, 413, &none);
                        snprintf(buf, sizeof buf, "the body is %.30s bytes, over the %u a request may carry",
                                cl, BODY_MAX);
                        return respond_error(l, c, 413, "payload_too_large", buf, NULL, NULL);
                }
                return MHD_YES;
        }
        if (*upload_data_size) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (rc->too_large || rc->len + n > BODY_MAX) {
                        rc->too_large = true;
                        return MHD_YES;
                }
                if (rc->len + n + 1 > rc->cap) {
                        size_t cap = rc->cap ? rc->cap : 16384;
                        while (cap < rc->len + n + 1)
                                cap *= 2;
                        char *p = realloc(rc->body, cap);
                        if (!p) {
                                rc->too_large = true;
                                return MHD_YES;
                        }
                        rc->body = p;
                        rc->cap = cap;
                }
                memcpy(rc->body + rc->len, upload_data, n);
                rc->len += n;
                rc->body[rc->len] = 0;
                return MHD_YES;
        }

        sbx_mgr_request_begin();
        sbx_debug_mark("serve: request read");
        code = authenticate(l, c, &a, &msg);
        /* A sandbox's ports (ports.h): by path, signed path or Host; they check the caller
         * themselves (a preview token or a signed path stands for one) */
        if (l->srv->mgr && !rc->too_large) {
                sbx_caller pw = {0};
                snprintf(pw.kind, sizeof pw.kind, "%s", a.kind);
                snprintf(pw.name, sizeof pw.name, "%s", a.name);
                snprintf(pw.tenant, sizeof pw.tenant, "%s", a.tenant[0] ? a.tenant : "default");
                unsigned pcode = 0;
                struct MHD_Response *presp = NULL;
                if (sbx_ports_handle(l->srv->mgr, c, method, url, rc->uri, rc->body, rc->len,
                            code ? NULL : &pw, &pcode, &presp)) {
                        log_request(l, method, url, pcode, &a);
                        if (!presp)
                                return MHD_NO;
                        enum MHD_Result ret = MHD_queue_response(c, pcode, presp);
                        MHD_destroy_response(presp);
                        if (pcode < MAX_CODE)
                                atomic_fetch_add(&l->srv->codes[pcode], 1);
                        return ret;
                }
        }
        /* E2B and Daytona (src/daemon/compat/): they authenticate what we could not themselves */
        if (l->srv->mgr && !rc->too_large) {
                sbx_caller cw = {0};
                snprintf(cw.kind, sizeof cw.kind, "%s", a.kind);
                snprintf(cw.name, sizeof cw.name, "%s", a.name);
                snprintf(cw.tenant, sizeof cw.tenant, "%s", a.tenant[0] ? a.tenant : "default");
                unsigned ccode = 0;
                struct MHD_Response *cresp = NULL;
                if (sbx_compat_handle(l->srv->mgr, l->srv->store, c, method, url, rc->body, rc->len,
                            code ? NULL : &cw, &ccode, &cresp)) {
                        log_request(l, method, url, ccode, &a);
                        if (!cresp)
                                return MHD_NO;
                        enum MHD_Result ret = MHD_queue_response(c, ccode, cresp);
                        MHD_destroy_response(cresp);
                        if (ccode < MAX_CODE)
                                atomic_fetch_add(&l->srv->codes[ccode], 1);
                        return ret;
                }
        }
        /* A path no surface serves is not found, whoever asks: answering 401 there would send an
         * SDK's user to check their credentials for an endpoint that does not exist. */
        if (code && !known_path(url)) {
                snprintf(buf, sizeof buf,
                        "no such endpoint: %s %.400s (sandboxer serves /v1/..., E2B's /sandboxes, Daytona's "
                        "/api/...)",
                        method, url);
                log_request(l, method, url, MHD_HTTP_NOT_FOUND, &a);
                return respond_error(l, c, MHD_HTTP_NOT_FOUND, "not_found", buf, NULL, NULL);
        }
        if (code) {
                log_request(l, method, url, code, &a);
                return respond_error(l, c, code, "unauthenticated", msg, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                        "Bearer realm=\"sandboxer\"");
        }
        if (rc->too_large) {
                log_request(l, method, url, 413, &a);
                return respond_error(l, c, 413, "payload_too_large", "the body is too large", NULL, NULL);
        }
        if (l->srv->mgr) {
                sbx_caller who = {0};
                snprintf(who.kind, sizeof who.kind, "%s", a.kind);
                snprintf(who.name, sizeof who.name, "%s", a.name);
                snprintf(who.tenant, sizeof who.tenant, "%s", a.tenant[0] ? a.tenant : "default");
                sbx_mgr_request rq = {.who = &who,
                        .body = rc->body,
                        .len = rc->len,
                        .query = query_arg,
                        .header = header_arg,
                        .ctx = c,
                        .uri = rc->uri};
                sbx_mgr_reply rp = {.stream_fd = -1};
                if (sbx_mgr_route(l->srv->mgr, method, url, &rq, &rp)) {
                        log_request(l, method, url, rp.code, &a);
                        enum MHD_Result ret = respond_mgr(l, c, &rp);
                        sbx_mgr_reply_done(&rp);
                        return ret;
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
                if (!streq(url, routes[i].path))
                        continue;
                if (!streq(method, MHD_HTTP_METHOD_GET)) {
                        snprintf(buf, sizeof buf, "%s does not take %s; use GET", url, method);
                        log_request(l, method, url, MHD_HTTP_METHOD_NOT_ALLOWED, &a);
                        return respond_error(l, c, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", buf,
                                "Allow", "GET");
                }
                log_request(l, method, url, MHD_HTTP_OK, &a);
                return routes[i].get(l, c);
        }
        snprintf(buf, sizeof buf, "no such endpoint: %s %.400s", method, url);
        log_request(l, method, url, MHD_HTTP_NOT_FOUND, &a);
        return respond_error(l, c, MHD_HTTP_NOT_FOUND, "not_found", buf, NULL, NULL);
}

/* ---- listeners ---- */

void sbx_http_server_set_sandboxes(sbx_http_server *s, sbx_mgr *m) {
        s->mgr = m;
}

int sbx_http_server_new(sbx_store *store, sbx_http_server **ret) {
        sbx_http_server *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->store = store;
        *ret = s;
        return 0;
}

/* Make room for a socket at path: nothing there, or a stale socket (nobody answers) removed. */
static int clear_stale_socket(const char *path, sbx_error *e) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : sbx_error_set(e, errno, "listen", "stat %s: %m", path);
        if (!S_ISSOCK(st.st_mode))
                return sbx_error_set(e, EEXIST, "listen",
                        "%s exists and is not a socket; remove it or choose another path", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return sbx_error_set(e, errno, "listen", "socket: %m");
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        memcpy(sa.sun_path, path, strlen(path) + 1); /* fits: checked at parse */
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0)
                return sbx_error_set(
                        e, EADDRINUSE, "listen", "a server already answers on %s; stop it first", path);
        if (errno != ECONNREFUSED && errno != ENOENT)
                return sbx_error_set(e, errno, "listen", "probe %s: %m", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return sbx_error_set(e, errno, "listen", "remove stale socket %s: %m", path);
        return 0;
}

static int open_unix(listener *l, sbx_error *e) {
        const char *path = l->addr.path;
        int r;

        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                r = sbx_mkdir_p(dir, 0755);
                if (r < 0)
                        return sbx_error_set(e, r, "listen", "cannot create %s: %s", dir, strerror(-r));
        }
        r = clear_stale_socket(path, e);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return sbx_error_set(e, errno, "listen", "socket: %m");
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        memcpy(sa.sun_path, path, strlen(path) + 1); /* fits: checked at parse */
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return sbx_error_set(e, errno, "listen", "bind %s: %m", path);
        /* Until this chmod the umask applies, which never grants more than 0660 would to others. */
        struct stat st;
        if (chmod(path, 0660) < 0 || lstat(path, &st) < 0) {
                r = sbx_error_set(e, errno, "listen", "chmod 0660 %s: %m", path);
                (void) unlink(path);
                return r;
        }
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        if (listen(fd, 128) < 0) {
                r = sbx_error_set(e, errno, "listen", "listen %s: %m", path);
                (void) unlink(path);
                return r;
        }
        return TAKE_FD(fd);
}

static int open_tcp(listener *l, sbx_error *e) {
        struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM},
                        *ai = NULL;
        char port[8];
        snprintf(port, sizeof port, "%u", l->addr.port);
        int g = getaddrinfo(l->addr.host, port, &hints, &ai);
        if (g != 0)
                return sbx_error_set(
                        e, EADDRNOTAVAIL, "listen", "cannot resolve %s: %s", l->addr.host, gai_strerror(g));
        _cleanup_close_ int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
                freeaddrinfo(ai);
                return sbx_error_set(e, errno, "listen", "socket: %m");
        }
        int one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        int r = bind(fd, ai->ai_addr, ai->ai_addrlen);
        freeaddrinfo(ai);
        if (r < 0)
                return sbx_error_set(e, errno, "listen", "bind %s:%u: %m", l->addr.host, l->addr.port);
        if (listen(fd, 128) < 0)
                return sbx_error_set(e, errno, "listen", "listen %s:%u: %m", l->addr.host, l->addr.port);
        return TAKE_FD(fd);
}

static void remove_socket(listener *l) {
        struct stat st;
        /* Only our own socket: another server may have replaced it since. */
        if (l->addr.is_unix && l->ino && lstat(l->addr.path, &st) == 0 && st.st_dev == l->dev &&
                st.st_ino == l->ino)
                (void) unlink(l->addr.path);
}

static char *read_pem(const char *path, sbx_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                sbx_error_set(e, errno, "tls", "%s: %m", path);
                return NULL;
        }
        if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > 1024 * 1024) {
                sbx_error_set(
                        e, EINVAL, "tls", "%s: not a PEM file (a regular file of at most 1 MiB)", path);
                return NULL;
        }
        char *buf = calloc(1, (size_t) st.st_size + 1);
        if (!buf || read(fd, buf, (size_t) st.st_size) != st.st_size || !strstr(buf, "-----BEGIN ")) {
                free(buf);
                sbx_error_set(e, EINVAL, "tls", "%s: not PEM (no -----BEGIN line)", path);
                return NULL;
        }
        return buf;
}

int sbx_http_server_set_tls(sbx_http_server *s, const char *cert_file, const char *key_file, sbx_error *e) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
                return sbx_error_set(
                        e, EOPNOTSUPP, "tls", "this libmicrohttpd was built without TLS (GnuTLS)");
        char *cert = read_pem(cert_file, e);
        char *key = cert ? read_pem(key_file, e) : NULL;
        if (!key) {
                free(cert);
                return -EINVAL;
        }
        free(s->tls_cert);
        if (s->tls_key)
                explicit_bzero(s->tls_key, strlen(s->tls_key));
        free(s->tls_key);
        s->tls_cert = cert;
        s->tls_key = key;
        return 0;
}

int sbx_http_server_listen(sbx_http_server *s, const sbx_listen_addr *a, sbx_error *e) {
        if (s->n >= MAX_LISTENERS)
                return sbx_error_set(e, E2BIG, "listen", "at most %d listeners", MAX_LISTENERS);
        listener *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->srv = s;
        l->addr = *a;
        int fd = a->is_unix ? open_unix(l, e) : open_tcp(l, e);
        if (fd < 0) {
                free(l);
                return fd;
        }
        /* A thread per connection: an exec or an event stream blocks its own connection only. */
        bool tls = !a->is_unix && s->tls_cert;
        struct MHD_OptionItem tls_opts[] = {
                {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert},
                {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
                {MHD_OPTION_END, 0, NULL},
        };
        l->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                          MHD_USE_POLL | MHD_ALLOW_UPGRADE | (tls ? MHD_USE_TLS : 0),
                0, NULL, NULL, handle, l, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_LISTEN_SOCKET,
                (MHD_socket) fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 300,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 64 * 1024, MHD_OPTION_NOTIFY_COMPLETED,
                request_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK, uri_logged, NULL,
                MHD_OPTION_THREAD_STACK_SIZE, (size_t) 512 * 1024, MHD_OPTION_END);
        if (!l->mhd) {
                close(fd);
                remove_socket(l);
                free(l);
                return sbx_error_set(e, EIO, "listen", "libmicrohttpd could not start on %s%s",
                        a->is_unix ? a->path : a->host,
                        tls ? " with this certificate and key (is the key the certificate's? both PEM?)"
                            : "");
        }
        s->l[s->n++] = l;
        return 0;
}

sbx_http_server *sbx_http_server_free(sbx_http_server *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++) {
                MHD_stop_daemon(s->l[i]->mhd); /* closes the listening socket */
                remove_socket(s->l[i]);
                free(s->l[i]);
        }
        free(s->tls_cert);
        if (s->tls_key)
                explicit_bzero(s->tls_key, strlen(s->tls_key));
        free(s->tls_key);
        free(s);
        return NULL;
}
