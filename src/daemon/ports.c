/* ports.c — a sandbox's ports through serve (ports.h). Per request: the caller is checked (its
 * token's tenant, or a preview token, a signed path, public ports), the sandbox makes the TCP
 * connection to its own 127.0.0.1:PORT (SBX_EXEC_CONNECT: in its network namespace, under its
 * Landlock domain and seccomp filter) and hands the socket out; the request goes there as
 * HTTP/1.1 with `Connection: close` (serve's bearer token and the preview tokens stripped:
 * credentials of the control plane never reach the sandbox), and the answer comes back as it
 * is read — its framing (Content-Length, chunked, to the end) undone and redone by
 * libmicrohttpd. An upgrade the server inside accepts (a WebSocket: 101) becomes a byte pipe
 * both ways. */
#include <ctype.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "basic/io.h"
#include "basic/sha256.h"
#include "daemon/http.h"
#include "daemon/mgr-internal.h"
#include "daemon/ports.h"

#define HEAD_MAX (64 * 1024)
#define IDLE_MS (120 * 1000) /* the server inside silent this long: 504, or the end */

/* ---- tokens ---------------------------------------------------------------------------------- */

/* Under m->lock: the port key, made at the first use (state dir: port-key, 0600). */
static bool key_locked(sbx_mgr *m) {
        if (m->port_key_loaded)
                return true;
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/port-key", m->state_dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                ssize_t n = read(fd, m->port_key, sizeof m->port_key);
                close(fd);
                m->port_key_loaded = n == (ssize_t) sizeof m->port_key;
                return m->port_key_loaded;
        }
        if (getrandom(m->port_key, sizeof m->port_key, 0) != (ssize_t) sizeof m->port_key)
                return false;
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return false;
        bool ok =
                write(fd, m->port_key, sizeof m->port_key) == (ssize_t) sizeof m->port_key && fsync(fd) == 0;
        close(fd);
        if (!ok || rename(tmp, path) < 0) {
                unlink(tmp);
                return false;
        }
        m->port_key_loaded = true;
        return true;
}

/* 32 hex digits of HMAC(port key, text). */
bool mgr_mac(sbx_mgr *m, const char *text, char ret[static 33]) {
        uint8_t d[SHA256_DIGEST_SIZE];
        pthread_mutex_lock(&m->lock);
        bool ok = key_locked(m);
        if (ok)
                hmac_sha256(m->port_key, sizeof m->port_key, text, strlen(text), d);
        pthread_mutex_unlock(&m->lock);
        if (!ok)
                return false;
        for (size_t i = 0; i < 16; i++)
                snprintf(ret + 2 * i, 3, "%02x", d[i]);
        return true;
}

bool mgr_same(const char *a, const char *b) { /* in constant time for equal lengths */
        size_t n = strlen(a);
        if (n != strlen(b))
                return false;
        unsigned char d = 0;
        for (size_t i = 0; i < n; i++)
                d |= (unsigned char) (a[i] ^ b[i]);
        return d == 0;
}

bool sbx_ports_preview_token(sbx_mgr *m, const char *id, char ret[static 33]) {
        char text[64];
        snprintf(text, sizeof text, "sandboxer-preview-v1 %s", id);
        return mgr_mac(m, text, ret);
}

bool sbx_ports_sign(sbx_mgr *m, const char *id, unsigned port, int64_t exp, char *buf, size_t size) {
        char text[96], h[33];
        snprintf(text, sizeof text, "sandboxer-signed-v1 %s %u %lld", id, port, (long long) exp);
        if (!mgr_mac(m, text, h))
                return false;
        return (size_t) snprintf(buf, size, "%s.%u.%lld.%s", id, port, (long long) exp, h) < size;
}

/* A signed token: 0 and its parts when it is valid now; 403 with why otherwise. */
static unsigned check_signed(
        sbx_mgr *m, const char *token, char id[static 32], unsigned *port, char *why, size_t size) {
        char copy[128];
        snprintf(why, size, "the signed URL is not valid (altered, or of another server)");
        if (strlen(token) >= sizeof copy)
                return 403;
        snprintf(copy, sizeof copy, "%s", token);
        char *save = NULL, *pid = strtok_r(copy, ".", &save), *pp = strtok_r(NULL, ".", &save),
             *pe = strtok_r(NULL, ".", &save), *pm = strtok_r(NULL, ".", &save);
        if (!pid || !pp || !pe || !pm || strtok_r(NULL, ".", &save) || !mgr_valid_sandbox_id(pid))
                return 403;
        char *end;
        long p = strtol(pp, &end, 10);
        long long exp = *end ? 0 : strtoll(pe, &end, 10);
        if (*end || p < 1 || p > 65535 || exp <= 0)
                return 403;
        char want[128];
        if (!sbx_ports_sign(m, pid, (unsigned) p, exp, want, sizeof want) || !mgr_same(want, token))
                return 403;
        if (exp <= mgr_now_ms() / 1000) {
                snprintf(why, size, "the signed URL has expired (at %lld)", exp);
                return 403;
        }
        pthread_mutex_lock(&m->lock);
        bool revoked = json_object_get(m->revoked, pm) != NULL;
        pthread_mutex_unlock(&m->lock);
        if (revoked) {
                snprintf(why, size, "the signed URL was expired by its owner");
                return 403;
        }
        snprintf(id, 32, "%s", pid);
        *port = (unsigned) p;
        return 0;
}

int sbx_ports_revoke(sbx_mgr *m, const char *id, const char *token) {
        char tid[32], why[128];
        unsigned port;
        if (check_signed(m, token, tid, &port, why, sizeof why) || !streq(tid, id))
                return -EINVAL;
        const char *dot = strrchr(token, '.');
        long long exp = strtoll(strchr(strchr(token, '.') + 1, '.') + 1, NULL, 10);
        int64_t now = mgr_now_ms() / 1000;
        pthread_mutex_lock(&m->lock);
        const char *k;
        json_t *v, *tmp;
        json_object_foreach_safe(m->revoked, tmp, k, v) { /* the expired ones need no revoking */
                if (json_integer_value(v) <= now)
                        json_object_del(m->revoked, k);
        }
        json_object_set_new(m->revoked, dot + 1, json_integer(exp));
        pthread_mutex_unlock(&m->lock);
        return 0;
}

void sbx_ports_set_public(sbx_mgr *m, const char *id, bool pub) {
        pthread_mutex_lock(&m->lock);
        box *b = mgr_box_find_locked(m, id, NULL);
        if (b)
                b->ports_public = pub;
        pthread_mutex_unlock(&m->lock);
}

const char *sbx_ports_domain(sbx_mgr *m) {
        return m->domain;
}

bool sbx_ports_host_target(sbx_mgr *m, const char *host, unsigned *ret_port, char ret_id[static 32]) {
        if (!m->domain || !host)
                return false;
        char h[300];
        snprintf(h, sizeof h, "%s", host);
        char *colon = strrchr(h, ':');
        if (colon && !strchr(colon, ']'))
                *colon = 0;
        size_t hl = strlen(h), dl = strlen(m->domain);
        if (hl < dl + 2 || h[hl - dl - 1] != '.' || strcasecmp(h + hl - dl, m->domain) != 0)
                return false;
        h[hl - dl - 1] = 0;
        char *dash = strchr(h, '-');
        if (!dash)
                return false;
        *dash = 0;
        char *end;
        long p = strtol(h, &end, 10);
        char canon[32];
        sbx_id_canon(dash + 1, canon); /* a host name has "sbx-HEX" ('_' may not be there) */
        for (char *q = canon; *q; q++)
                *q = (char) tolower((unsigned char) *q);
        if (*end || end == h || p < 0 || !mgr_valid_sandbox_id(canon))
                return false;
        *ret_port = p > 65535 ? 0 : (unsigned) p; /* 0: out of range, said by the caller */
        snprintf(ret_id, 32, "%s", canon);
        return true;
}

/* ---- the connection inside ------------------------------------------------------------------- */

/* A connected socket to 127.0.0.1:port inside b: 0, or the status with why. */
static unsigned connect_inside(sbx_mgr *m, box *b, unsigned port, int *ret_fd, char *why, size_t size) {
        int sp[2];
        *ret_fd = -1;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
                snprintf(why, size, "socketpair: %s", strerror(errno));
                return 503;
        }
        char ps[16];
        snprintf(ps, sizeof ps, "%u", port);
        json_t *req = json_pack(
                "{s:s, s:s, s:[s]}", "op", SBX_SV_OP_EXEC, "kind", SBX_SV_KIND_CONNECT, "argv", ps);
        exec_io io = {0};
        json_t *ans = mgr_sv_exec(m, b, req, NULL, 0, sp[1], &io);
        json_decref(req);
        free(io.out);
        free(io.err);
        close(sp[1]);
        unsigned code = 0;
        json_int_t ex = json_integer_value(json_object_get(ans, "exit"));
        int err = (int) json_integer_value(json_object_get(ans, "errno"));
        if (!err && ex < 0)
                err = (int) -ex;
        if (!ans) {
                snprintf(why, size, "%s", mgr_no_answer(m, "the sandbox's supervisor did not answer"));
                code = 503;
        } else if (err == ECONNREFUSED) {
                snprintf(why, size, "nothing listens on 127.0.0.1:%u inside sandbox %s", port, b->id);
                code = 502;
        } else if (err == EACCES || err == EPERM) {
                snprintf(why, size,
                        "sandbox %s's fences refuse a TCP connection to port %u (%s backend: its network "
                        "is denied)",
                        b->id, port, b->backend);
                code = 403;
        } else if (err || ex != 0 || !json_is_true(json_object_get(ans, "ok"))) {
                snprintf(why, size, "cannot reach port %u inside sandbox %s: %s", port, b->id,
                        err ? strerror(err)
                            : json_string_value(json_object_get(json_object_get(ans, "report"), "status"))
                                      ?: "failed");
                code = 502;
        } else {
                union {
                        struct cmsghdr h;
                        char b[CMSG_SPACE(sizeof(int))];
                } cbuf;
                char t;
                struct iovec iov = {.iov_base = &t, .iov_len = 1};
                struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf.b,
                        .msg_controllen = sizeof cbuf.b};
                ssize_t n = recvmsg(sp[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
                if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                        c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
                else {
                        snprintf(why, size, "the sandbox did not hand the connection out");
                        code = 502;
                }
        }
        json_decref(ans);
        close(sp[0]);
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        return code;
}

/* ---- the answer from inside ------------------------------------------------------------------ */

typedef struct upstream {
        int fd;
        char buf[16384];
        size_t off, have;
        enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF } mode;
        uint64_t left; /* LENGTH: bytes left; CHUNKED: of the current chunk */
        bool last_chunk;
} upstream;

static void upstream_free(void *cls) {
        upstream *u = cls;
        if (!u)
                return;
        safe_close(u->fd);
        free(u);
}

/* More bytes into u->buf (after compacting): > 0, 0 at the end, < 0 on error or silence. */
static ssize_t fill(upstream *u) {
        if (u->off == u->have)
                u->off = u->have = 0;
        else if (u->off > 0 && u->have == sizeof u->buf) {
                memmove(u->buf, u->buf + u->off, u->have - u->off);
                u->have -= u->off;
                u->off = 0;
        }
        if (u->have == sizeof u->buf)
                return -1;
        struct pollfd p = {.fd = u->fd, .events = POLLIN};
        int k;
        do
                k = poll(&p, 1, IDLE_MS);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return -1;
        ssize_t n;
        do
                n = read(u->fd, u->buf + u->have, sizeof u->buf - u->have);
        while (n < 0 && errno == EINTR);
        if (n > 0)
                u->have += (size_t) n;
        return n;
}

/* A line (CRLF or LF ended, without it) of at most size-1 bytes: false at the end or on error. */
static bool line(upstream *u, char *out, size_t size) {
        for (;;) {
                char *nl = memchr(u->buf + u->off, '\n', u->have - u->off);
                if (nl) {
                        size_t l = (size_t) (nl - (u->buf + u->off));
                        size_t k = l && u->buf[u->off + l - 1] == '\r' ? l - 1 : l;
                        if (k >= size)
                                return false;
                        memcpy(out, u->buf + u->off, k);
                        out[k] = 0;
                        u->off += l + 1;
                        return true;
                }
                if (fill(u) <= 0)
                        return false;
        }
}

static ssize_t body_read(void *cls, uint64_t pos, char *out, size_t max) {
        upstream *u = cls;
        for (;;) {
                if (u->mode == BODY_NONE || (u->mode == BODY_LENGTH && u->left == 0))
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (u->mode == BODY_CHUNKED && u->left == 0) {
                        char l[256];
                        if (u->last_chunk)
                                return MHD_CONTENT_READER_END_OF_STREAM;
                        if (!line(u, l, sizeof l))
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                        if (!*l) /* the CRLF after a chunk's data */
                                continue;
                        char *end;
                        unsigned long long n = strtoull(l, &end, 16);
                        if (end == l)
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                        if (n == 0) { /* the trailers, to their empty line */
                                while (line(u, l, sizeof l) && *l)
                                        ;
                                u->last_chunk = true;
                                return MHD_CONTENT_READER_END_OF_STREAM;
                        }
                        u->left = n;
                }
                if (u->off == u->have) {
                        ssize_t n = fill(u);
                        if (n == 0 && u->mode == BODY_EOF)
                                return MHD_CONTENT_READER_END_OF_STREAM;
                        if (n <= 0)
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                }
                size_t n = u->have - u->off;
                if (n > max)
                        n = max;
                if (u->mode != BODY_EOF && n > u->left)
                        n = (size_t) u->left;
                memcpy(out, u->buf + u->off, n);
                u->off += n;
                if (u->mode != BODY_EOF)
                        u->left -= n;
                return (ssize_t) n;
        }
}

static bool hop_by_hop(const char *name) {
        static const char *const hop[] = {"Connection", "Keep-Alive", "Proxy-Authenticate",
                "Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
                "Host", "Authorization", "X-Sandboxer-Preview-Token", "x-daytona-preview-token",
                "e2b-traffic-access-token", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
                NULL};
        for (const char *const *h = hop; *h; h++)
                if (strcasecmp(name, *h) == 0)
                        return true;
        return false;
}

typedef struct head_out {
        char *buf;
        size_t len, cap;
        bool upgrade; /* the WebSocket headers pass too */
} head_out;

static void put(head_out *h, const char *s) {
        size_t n = strlen(s);
        if (h->len + n + 1 > h->cap) {
                size_t cap = h->cap ? h->cap * 2 : 4096;
                while (cap < h->len + n + 1)
                        cap *= 2;
                char *p = realloc(h->buf, cap);
                if (!p)
                        return;
                h->buf = p;
                h->cap = cap;
        }
        memcpy(h->buf + h->len, s, n + 1);
        h->len += n;
}

static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        head_out *h = cls;
        if (!key || !value || strpbrk(key, "\r\n") || strpbrk(value, "\r\n"))
                return MHD_YES;
        bool ws = h->upgrade && (strcasecmp(key, "Upgrade") == 0 || strcasecmp(key, "Connection") == 0);
        if (hop_by_hop(key) && !ws)
                return MHD_YES;
        if (ws && strcasecmp(key, "Connection") == 0)
                return MHD_YES; /* said below */
        put(h, key);
        put(h, ": ");
        put(h, value);
        put(h, "\r\n");
        return MHD_YES;
}

/* ---- WebSocket (any upgrade) ----------------------------------------------------------------- */

typedef struct pipe_ctx {
        upstream *u; /* its fd; what it read past the 101 goes to the client first */
} pipe_ctx;

static void pipe_both(void *ud, int cfd, const char *extra, size_t n) {
        pipe_ctx *p = ud;
        upstream *u = p->u;
        (void) fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) & ~O_NONBLOCK);
        bool ok = (sbx_write_all(u->fd, extra, n) == 0) &&
                  (sbx_write_all(cfd, u->buf + u->off, u->have - u->off) == 0);
        if (ok)
                (void) sbx_splice_both(cfd, u->fd, NULL, NULL);
        upstream_free(u);
        free(p);
}

/* ---- the request --------------------------------------------------------------------------- */

static struct MHD_Response *text_response(const char *msg) {
        return MHD_create_response_from_buffer(strlen(msg), (void *) msg, MHD_RESPMEM_MUST_COPY);
}

static unsigned err(struct MHD_Response **resp, unsigned code, const char *ecode, const char *fmt, ...)
        _printf_(4, 5);
static unsigned err(struct MHD_Response **resp, unsigned code, const char *ecode, const char *fmt, ...) {
        char msg[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code", ecode, "message", msg);
        char *t = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        *resp = text_response(t ? t : "{}");
        free(t);
        if (*resp)
                MHD_add_response_header(*resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        return code;
}

/* Forward the request on fd and answer with what comes back. */
static unsigned forward(struct MHD_Connection *c, int fd, const char *method, const char *target,
        unsigned port, const char *prefix, const char *body, size_t len, struct MHD_Response **resp) {
        const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
        const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
        bool upgrade = up && conn && strcasestr(conn, "upgrade");
        head_out h = {.upgrade = upgrade};
        char line_buf[512];
        put(&h, method);
        put(&h, " ");
        put(&h, target);
        put(&h, " HTTP/1.1\r\n");
        snprintf(line_buf, sizeof line_buf, "Host: localhost:%u\r\n", port);
        put(&h, line_buf);
        MHD_get_connection_values(c, MHD_HEADER_KIND, copy_header, &h);
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        if (host && !strpbrk(host, "\r\n")) {
                put(&h, "X-Forwarded-Host: ");
                put(&h, host);
                put(&h, "\r\n");
        }
        put(&h, "X-Forwarded-Proto: http\r\n");
        if (prefix) {
                put(&h, "X-Forwarded-Prefix: ");
                put(&h, prefix);
                put(&h, "\r\n");
        }
        put(&h, upgrade ? "Connection: Upgrade\r\n" : "Connection: close\r\n");
        if (len || (!streq(method, "GET") && !streq(method, "HEAD") && !upgrade)) {
                snprintf(line_buf, sizeof line_buf, "Content-Length: %zu\r\n", len);
                put(&h, line_buf);
        }
        put(&h, "\r\n");
        bool sent = h.buf && (sbx_write_all(fd, h.buf, h.len) == 0) &&
                    (!len || (sbx_write_all(fd, body, len) == 0));
        free(h.buf);
        upstream *u = calloc(1, sizeof *u);
        if (!u) {
                close(fd);
                return err(resp, 503, "unavailable", "out of memory");
        }
        u->fd = fd;
        if (!sent) {
                upstream_free(u);
                return err(resp, 502, "bad_gateway", "the server on port %u closed the connection", port);
        }
        /* the status line and the headers, past any 1xx but a 101 */
        char l[8192];
        int status = 0;
        for (;;) {
                if (!line(u, l, sizeof l) || strncmp(l, "HTTP/1.", 7) != 0 || strlen(l) < 12) {
                        upstream_free(u);
                        return err(resp, 502, "bad_gateway",
                                "the server on port %u gave no HTTP answer (or none within %d s)", port,
                                IDLE_MS / 1000);
                }
                status = atoi(l + 9);
                if (status < 100 || status > 599) {
                        upstream_free(u);
                        return err(resp, 502, "bad_gateway", "the server on port %u answered status %d",
                                port, status);
                }
                if (status >= 200 || status == 101)
                        break;
                while (line(u, l, sizeof l) && *l) /* a 1xx's headers */
                        ;
        }
        json_t *hdrs = json_array();
        long long clen = -1;
        bool chunked = false;
        size_t head_bytes = 0;
        while (line(u, l, sizeof l) && *l) {
                head_bytes += strlen(l);
                char *colon = strchr(l, ':');
                if (!colon || head_bytes > HEAD_MAX)
                        continue;
                *colon = 0;
                const char *v = colon + 1;
                while (*v == ' ' || *v == '\t')
                        v++;
                if (strcasecmp(l, "Content-Length") == 0)
                        clen = strtoll(v, NULL, 10);
                else if (strcasecmp(l, "Transfer-Encoding") == 0)
                        chunked = strcasestr(v, "chunked") != NULL;
                bool ws = status == 101 && (strcasecmp(l, "Upgrade") == 0);
                if (!hop_by_hop(l) || ws)
                        json_array_append_new(hdrs, json_pack("[s, s]", l, v));
        }
        if (status == 101 && upgrade) {
                pipe_ctx *p = calloc(1, sizeof *p);
                const char *accept = NULL;
                size_t i;
                json_t *kv;
                json_array_foreach(hdrs, i, kv) if (strcasecmp(json_string_value(json_array_get(kv, 0)),
                                                            "Sec-WebSocket-Accept") == 0) accept =
                        json_string_value(json_array_get(kv, 1));
                *resp = p ? sbx_http_upgrade_response(pipe_both, p, accept ? accept : "", NULL) : NULL;
                if (!*resp) {
                        free(p);
                        upstream_free(u);
                        json_decref(hdrs);
                        return err(resp, 503, "unavailable", "cannot upgrade the connection");
                }
                p->u = u;
                json_array_foreach(hdrs, i, kv) {
                        const char *k = json_string_value(json_array_get(kv, 0));
                        if (strcasecmp(k, "Upgrade") != 0 && strcasecmp(k, "Sec-WebSocket-Accept") != 0)
                                MHD_add_response_header(*resp, k, json_string_value(json_array_get(kv, 1)));
                }
                json_decref(hdrs);
                return 101;
        }
        bool no_body = streq(method, "HEAD") || status == 204 || status == 304 || status == 101;
        u->mode = no_body ? BODY_NONE : chunked ? BODY_CHUNKED : clen >= 0 ? BODY_LENGTH : BODY_EOF;
        u->left = u->mode == BODY_LENGTH ? (uint64_t) clen : 0;
        uint64_t size = u->mode == BODY_LENGTH ? (uint64_t) clen
                        : u->mode == BODY_NONE ? 0
                                               : MHD_SIZE_UNKNOWN;
        *resp = MHD_create_response_from_callback(size, 32 * 1024, body_read, u, upstream_free);
        if (!*resp) {
                upstream_free(u);
                json_decref(hdrs);
                return err(resp, 503, "unavailable", "out of memory");
        }
        size_t i;
        json_t *kv;
        json_array_foreach(hdrs, i, kv) {
                MHD_add_response_header(*resp, json_string_value(json_array_get(kv, 0)),
                        json_string_value(json_array_get(kv, 1)));
        }
        json_decref(hdrs);
        return status == 101 ? 502 : (unsigned) status;
}

/* /v1/sandboxes/ID + sub + REST: REST, or NULL when path is not one (ids are 20 characters). */
static const char *sandbox_sub(const char *path, const char *sub) {
        size_t n = strlen(path), l = strlen(sub);
        if (n < 34 + l || strncmp(path, "/v1/sandboxes/", 14) != 0 || strncmp(path + 34, sub, l) != 0)
                return NULL;
        return path + 34 + l;
}

bool sbx_ports_handle(sbx_mgr *m, struct MHD_Connection *c, const char *method, const char *path,
        const char *raw_uri, const char *body, size_t len, const sbx_caller *who, unsigned *ret_code,
        struct MHD_Response **ret_resp) {
        char id[32] = "", id_canon[32], why[512];
        unsigned port = 0;
        bool signed_ok = false, by_host = false, tunnel = false;
        const char *query = raw_uri ? strchr(raw_uri, '?') : NULL, *p = NULL;
        char target[8192], prefix[160] = "";
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        *ret_resp = NULL;
        if (sbx_ports_host_target(m, host, &port, id)) {
                if (port == SBX_PORTS_ENVD_PORT)
                        return false; /* E2B's envd: the compat surface's */
                by_host = true;
                snprintf(target, sizeof target, "%s", raw_uri && raw_uri[0] == '/' ? raw_uri : "/");
        } else if ((p = sandbox_sub(path, "/ports/"))) {
                snprintf(id, sizeof id, "%.20s", path + 14);
                sbx_id_canon(id, id_canon); /* E2B's host form too */
                snprintf(id, sizeof id, "%s", id_canon);
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p || (*end && *end != '/')) {
                        *ret_code = err(ret_resp, 400, "invalid_argument", "port: a number from 1 to 65535");
                        return true;
                }
                port = v < 1 || v > 65535 ? 0 : (unsigned) v;
                snprintf(prefix, sizeof prefix, "/v1/sandboxes/%s/ports/%ld", id, v);
                snprintf(target, sizeof target, "%s%s", *end ? end : "/", query ? query : "");
        } else if ((p = sandbox_sub(path, "/tunnel/"))) {
                snprintf(id, sizeof id, "%.20s", path + 14);
                sbx_id_canon(id, id_canon); /* E2B's host form too */
                snprintf(id, sizeof id, "%s", id_canon);
                char *end;
                long v = strtol(p, &end, 10);
                port = end == p || *end || v < 1 || v > 65535 ? 0 : (unsigned) v;
                const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
                if (!up || strcasecmp(up, SBX_PORTS_TUNNEL) != 0) {
                        *ret_code = err(ret_resp, 426, "upgrade_required",
                                "a tunnel is an upgrade: send Upgrade: %s and Connection: Upgrade "
                                "(sandboxer "
                                "port-forward does)",
                                SBX_PORTS_TUNNEL);
                        return true;
                }
                tunnel = true;
        } else if (strncmp(path, "/v1/p/", 6) == 0) {
                const char *t = path + 6, *slash = strchr(t, '/');
                char token[128];
                size_t tl = slash ? (size_t) (slash - t) : strlen(t);
                snprintf(token, sizeof token, "%.*s", (int) (tl < sizeof token ? tl : 0), t);
                unsigned code = check_signed(m, token, id, &port, why, sizeof why);
                if (code) {
                        *ret_code = err(ret_resp, code, "forbidden", "%s", why);
                        return true;
                }
                signed_ok = true;
                snprintf(prefix, sizeof prefix, "/v1/p/%s", token);
                snprintf(target, sizeof target, "%s%s", slash ? slash : "/", query ? query : "");
        } else
                return false;
        if (port == 0) {
                *ret_code = err(ret_resp, 400, "invalid_argument", "port: a number from 1 to 65535");
                return true;
        }
        /* who may: the sandbox's tenant, a preview token of it, the signed path, public ports */
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, NULL) : NULL;
        if (!b) {
                *ret_code = err(ret_resp, 404, "not_found", "no sandbox '%.64s'", id);
                return true;
        }
        char tenant[128];
        pthread_mutex_lock(&m->lock);
        snprintf(tenant, sizeof tenant, "%s", b->tenant);
        bool pub = b->ports_public;
        pthread_mutex_unlock(&m->lock);
        mgr_box_put(m, b);
        char want[33];
        const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Sandboxer-Preview-Token");
        if (!tok)
                tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-daytona-preview-token");
        if (!tok)
                tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "e2b-traffic-access-token");
        bool allowed = signed_ok || pub || (who && streq(who->tenant, tenant)) ||
                       (tok && sbx_ports_preview_token(m, id, want) && mgr_same(tok, want));
        if (!allowed) {
                *ret_code = err(ret_resp, who ? 404 : 401, who ? "not_found" : "unauthenticated",
                        who ? "no sandbox '%.64s'"
                            : "sandbox %s's ports are private: send serve's bearer token, its preview token "
                              "(X-Sandboxer-Preview-Token), or use a signed URL",
                        id);
                return true;
        }
        sbx_caller owner = {.kind = "agt"};
        snprintf(owner.tenant, sizeof owner.tenant, "%s", tenant);
        sbx_mgr_reply rp = {.stream_fd = -1};
        b = mgr_usable_box(m, &owner, id, &rp);
        if (!b) {
                const char *msg =
                        json_string_value(json_object_get(json_object_get(rp.json, "error"), "message"));
                *ret_code =
                        err(ret_resp, rp.code, "unavailable", "%s", msg ? msg : "the sandbox is not usable");
                sbx_mgr_reply_done(&rp);
                return true;
        }
        int fd;
        unsigned code = connect_inside(m, b, port, &fd, why, sizeof why);
        mgr_box_put(m, b);
        if (code) {
                *ret_code = err(ret_resp, code,
                        code == 502   ? "bad_gateway"
                        : code == 403 ? "forbidden"
                                      : "unavailable",
                        "%s", why);
                return true;
        }
        if (tunnel) { /* raw bytes both ways from the 101 on */
                upstream *u = calloc(1, sizeof *u);
                pipe_ctx *pc = u ? calloc(1, sizeof *pc) : NULL;
                *ret_resp = pc ? sbx_http_upgrade_raw(pipe_both, pc, SBX_PORTS_TUNNEL) : NULL;
                if (!*ret_resp) {
                        free(pc);
                        free(u);
                        close(fd);
                        *ret_code = err(ret_resp, 503, "unavailable", "cannot upgrade the connection");
                        return true;
                }
                u->fd = fd;
                pc->u = u;
                *ret_code = 101;
                return true;
        }
        *ret_code = forward(c, fd, method, target, port, by_host ? NULL : prefix, body, len, ret_resp);
        return true;
}

/* ---- preview links ------------------------------------------------------------------------- */

json_t *sbx_ports_preview(sbx_mgr *m, const sbx_caller *who, const char *id, long port, double expires_s,
        const char *host, unsigned *ret_code, json_t **ret_err) {
        *ret_err = NULL;
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        if (!b) {
                *ret_code = 404;
                *ret_err = mgr_err_json("not_found", NULL, "no sandbox '%.64s'", id);
                return NULL;
        }
        mgr_box_put(m, b);
        if (port < 1 || port > 65535) {
                *ret_code = 400;
                *ret_err = mgr_err_json("invalid_argument", "port", "port: a number from 1 to 65535");
                return NULL;
        }
        if (expires_s < 0 || expires_s > 7 * 86400.0) {
                *ret_code = 400;
                *ret_err = mgr_err_json("invalid_argument", "expires_s",
                        "expires_s: seconds from 1 to 604800 (a week); none for an unsigned link");
                return NULL;
        }
        char token[33], base[400], url[800];
        if (!sbx_ports_preview_token(m, id, token)) {
                *ret_code = 503;
                *ret_err =
                        mgr_err_json("unavailable", NULL, "cannot make the port key in the state directory");
                return NULL;
        }
        if (!host || !*host || strpbrk(host, "/\r\n \\"))
                host = "localhost";
        snprintf(base, sizeof base, "http://%.300s", host);
        if (m->domain)
                snprintf(url, sizeof url, "http://%ld-%s.%s/", port, id, m->domain);
        else
                snprintf(url, sizeof url, "%s/v1/sandboxes/%s/ports/%ld/", base, id, port);
        json_t *j = json_pack(
                "{s:s, s:i, s:s, s:s}", "sandbox_id", id, "port", (int) port, "url", url, "token", token);
        if (expires_s > 0) {
                int64_t exp = mgr_now_ms() / 1000 + (int64_t) (expires_s + 0.999);
                char st[128], su[700];
                if (!sbx_ports_sign(m, id, (unsigned) port, exp, st, sizeof st)) {
                        json_decref(j);
                        *ret_code = 503;
                        *ret_err = mgr_err_json("unavailable", NULL, "cannot sign: no port key");
                        return NULL;
                }
                snprintf(su, sizeof su, "%s/v1/p/%s/", base, st);
                json_object_set_new(j, "signed_url", json_string(su));
                json_object_set_new(j, "signed_token", json_string(st));
                json_object_set_new(j, "expires_at", mgr_time_json(exp * 1000));
        }
        *ret_code = 200;
        return j;
}

unsigned mgr_op_previews(
        sbx_mgr *m, const sbx_mgr_request *rq, const char *id, const char *token, sbx_mgr_reply *rp) {
        if (token) { /* DELETE: revoke a signed link */
                box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, rq->who->tenant) : NULL;
                if (!b)
                        return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
                mgr_box_put(m, b);
                if (sbx_ports_revoke(m, id, token) < 0)
                        return mgr_reply_err(rp, 404, "not_found", "token",
                                "no valid signed link '%.100s' of sandbox %s (expired, altered, or "
                                "another's)",
                                token, id);
                mgr_audit(m, rq->who, "sandbox.preview.revoke", id, "ok", NULL);
                rp->code = 200;
                rp->json = json_pack("{s:b}", "revoked", 1);
                return 200;
        }
        json_t *body = mgr_parse_body(rq, rp, false);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"port", "expires_s", NULL};
        json_t *jp = json_object_get(body, "port"), *je = json_object_get(body, "expires_s");
        if (!mgr_only_keys(body, keys, "", rp)) {
                json_decref(body);
                return rp->code;
        }
        if (!json_is_integer(jp) || (je && !json_is_number(je))) {
                const char *field = json_is_integer(jp) ? "expires_s" : "port"; /* before body goes */
                json_decref(body);
                return mgr_reply_err(rp, 400, "invalid_argument", field,
                        "port: an integer from 1 to 65535 is required; expires_s a number of seconds");
        }
        unsigned code;
        json_t *e = NULL;
        json_t *j = sbx_ports_preview(m, rq->who, id, (long) json_integer_value(jp),
                je ? json_number_value(je) : 0, rq->header(rq->ctx, "Host"), &code, &e);
        json_decref(body);
        rp->code = code;
        rp->json = j ? j : e;
        if (j)
                mgr_audit(m, rq->who, "sandbox.preview", id, "ok", NULL);
        return code;
}
