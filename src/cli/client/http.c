/* http.c — the client verbs' HTTP/1.1 client to `sandboxer serve` and their shared options
 * (client.h). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "daemon/http.h"
#include "cli/client/client.h"
#include "verbs.h"

/* ---- HTTP ---------------------------------------------------------------------------------- */

static int dial(const conn_opts *o) {
        if (o->addr.is_unix) {
                struct sockaddr_un sa = {.sun_family = AF_UNIX};
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", o->addr.path);
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return -errno;
                if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                return fd;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", o->addr.port);
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        if (getaddrinfo(o->addr.host, port, &hints, &res) != 0)
                return -EHOSTUNREACH;
        int r = -ECONNREFUSED;
        for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (fd < 0)
                        continue;
                if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                        freeaddrinfo(res);
                        return fd;
                }
                r = -errno;
                close(fd);
        }
        freeaddrinfo(res);
        return r;
}

static int write_all(int fd, const void *buf, size_t n) {
        const char *p = buf;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* A buffered reader over the connection. */
typedef struct rd {
        int fd;
        char buf[65536];
        size_t pos, len;
} rd;

static int rd_fill(rd *r) {
        if (r->pos < r->len)
                return 1;
        ssize_t n;
        do
                n = read(r->fd, r->buf, sizeof r->buf);
        while (n < 0 && errno == EINTR);
        if (n <= 0)
                return n < 0 ? -errno : 0;
        r->pos = 0;
        r->len = (size_t) n;
        return 1;
}

static int rd_line(rd *r, char *out, size_t size) {
        size_t o = 0;
        for (;;) {
                int k = rd_fill(r);
                if (k <= 0)
                        return o ? (int) o : k;
                char c = r->buf[r->pos++];
                if (c == '\n') {
                        if (o && out[o - 1] == '\r')
                                o--;
                        out[o] = 0;
                        return (int) o + 1;
                }
                if (o + 1 < size)
                        out[o++] = c;
        }
}

static ssize_t rd_some(rd *r, char *out, size_t n) {
        int k = rd_fill(r);
        if (k <= 0)
                return k;
        size_t m = r->len - r->pos < n ? r->len - r->pos : n;
        memcpy(out, r->buf + r->pos, m);
        r->pos += m;
        return (ssize_t) m;
}

void client_collect(void *ud, const char *d, size_t n) {
        response *r = ud;
        char *p = realloc(r->body, r->len + n + 1);
        if (!p)
                return;
        r->body = p;
        memcpy(r->body + r->len, d, n);
        r->len += n;
        r->body[r->len] = 0;
}

int client_http(const conn_opts *o, const char *method, const char *path, const char *ctype,
        const char *extra_header, const void *body, size_t len, response *resp, body_sink sink, void *ud) {
        int fd = dial(o);
        if (fd < 0) {
                if (o->addr.is_unix)
                        cli_error("cannot reach the control plane at unix:%s: %s; is 'sandboxer serve' "
                                  "running? "
                                  "(--server ADDR names another)",
                                o->addr.path, strerror(-fd));
                else
                        cli_error("cannot reach the control plane at %s:%u: %s", o->addr.host, o->addr.port,
                                strerror(-fd));
                return fd;
        }
        char head[2048];
        int hl = snprintf(head, sizeof head,
                "%s %s HTTP/1.1\r\nHost: sandboxer\r\nConnection: close\r\nUser-Agent: sandboxer/%s\r\n"
                "Content-Length: %zu\r\n%s%s%s%s%s%s%s",
                method, path, SBX_VERSION, len, ctype ? "Content-Type: " : "", ctype ? ctype : "",
                ctype ? "\r\n" : "", o->token ? "Authorization: Bearer " : "", o->token ? o->token : "",
                o->token ? "\r\n" : "", extra_header ? extra_header : "");
        if (hl < 0 || (size_t) hl >= sizeof head - 3) {
                close(fd);
                cli_error("request too long");
                return -E2BIG;
        }
        memcpy(head + hl, "\r\n", 3);
        hl += 2;
        int r = write_all(fd, head, (size_t) hl);
        if (r >= 0 && len)
                r = write_all(fd, body, len);
        if (r < 0) {
                close(fd);
                cli_error("sending the request failed: %s", strerror(-r));
                return r;
        }
        rd *R = calloc(1, sizeof *R);
        if (!R) {
                close(fd);
                return -ENOMEM;
        }
        R->fd = fd;
        char line[8192];
        r = rd_line(R, line, sizeof line);
        int status = 0;
        if (r <= 0 || sscanf(line, "HTTP/1.%*d %d", &status) != 1) {
                free(R);
                close(fd);
                cli_error("the server's answer is not HTTP");
                return -EPROTO;
        }
        bool chunked = false;
        long long clen = -1;
        while ((r = rd_line(R, line, sizeof line)) > 1) {
                if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line + 18, "chunked"))
                        chunked = true;
                else if (strncasecmp(line, "Content-Length:", 15) == 0)
                        clen = strtoll(line + 15, NULL, 10);
        }
        resp->status = status;
        body_sink out = sink && status < 300 ? sink : client_collect;
        void *oud = sink && status < 300 ? ud : resp;
        char buf[65536];
        if (chunked) {
                for (;;) {
                        if (rd_line(R, line, sizeof line) <= 0)
                                break;
                        unsigned long n = strtoul(line, NULL, 16);
                        if (n == 0)
                                break;
                        while (n > 0) {
                                ssize_t k = rd_some(R, buf, n < sizeof buf ? n : sizeof buf);
                                if (k <= 0)
                                        goto done;
                                out(oud, buf, (size_t) k);
                                n -= (unsigned long) k;
                        }
                        (void) rd_line(R, line, sizeof line); /* the CRLF after the chunk */
                }
        } else {
                long long left = clen;
                while (left != 0) {
                        ssize_t k = rd_some(
                                R, buf, left > 0 && (size_t) left < sizeof buf ? (size_t) left : sizeof buf);
                        if (k <= 0)
                                break;
                        out(oud, buf, (size_t) k);
                        if (left > 0)
                                left -= k;
                }
        }
done:
        free(R);
        close(fd);
        return 0;
}

/* An error answer: "sandboxer: MESSAGE (HTTP 404, not_found)". Always 125. */
int client_api_error(const response *r) {
        json_error_t je;
        json_t *j = r->body ? json_loadb(r->body, r->len, 0, &je) : NULL;
        json_t *e = json_object_get(j, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *code = json_string_value(json_object_get(e, "code"));
        cli_error("%s (HTTP %d%s%s)", msg ? msg : "the server refused the request", r->status,
                code ? ", " : "", code ? code : "");
        json_decref(j);
        return SBX_EXIT_FAILURE;
}

json_t *client_body_json(const response *r) {
        json_error_t je;
        return r->body ? json_loadb(r->body, r->len, 0, &je) : NULL;
}

/* ---- options shared by every client verb ---------------------------------------------------- */

int conn_option(conn_opts *o, int c, const char *arg) {
        sbx_error e = {0};
        char buf[1024];
        switch (c) {
        case O_SERVER:
                if (sbx_listen_addr_parse(arg, &o->addr, &e) < 0) {
                        cli_error("--server: %s", sbx_error_format(&e, buf, sizeof buf));
                        return -EINVAL;
                }
                o->addr_text = arg;
                return 1;
        case O_TOKEN:
                o->token = arg;
                return 1;
        case O_JSON:
                o->json = true;
                return 1;
        default:
                return 0;
        }
}

int conn_finish(conn_opts *o) {
        if (!o->addr_text) {
                sbx_error e = {0};
                char buf[1024];
                if (sbx_listen_addr_default(&o->addr, &e) < 0) {
                        cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                        return -EINVAL;
                }
        }
        if (!o->token) {
                const char *t = getenv("SANDBOXER_TOKEN");
                if (t && *t)
                        o->token = t;
        }
        if (!o->addr.is_unix && !o->token) {
                cli_error("TCP needs a bearer token: --token TOKEN or SANDBOXER_TOKEN ('sandboxer token "
                          "create')");
                return -EINVAL;
        }
        return 0;
}

const char conn_help[] =
        "  --server ADDR      unix:PATH (default: the serve socket in the runtime dir) or HOST:PORT\n"
        "  --token TOKEN      bearer token for TCP (default: $SANDBOXER_TOKEN)\n"
        "  --json             print the server's JSON\n"
        "  -h, --help         this text\n";

bool client_id_ok(const char *s) {
        if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) > 40)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* URL-encode s into out. */
void client_urlenc(const char *s, char *out, size_t size) {
        size_t o = 0;
        for (; *s && o + 4 < size; s++) {
                unsigned char c = (unsigned char) *s;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        strchr("-._~/", c))
                        out[o++] = (char) c;
                else
                        o += (size_t) snprintf(out + o, size - o, "%%%02X", c);
        }
        out[o] = 0;
}

void client_print_json(json_t *j) {
        char *s = json_dumps(j, JSON_INDENT(2));
        if (s) {
                puts(s);
                free(s);
        }
}
