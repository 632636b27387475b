/* client.c — the API client verbs: `sandboxer create|ls|get|exec|cp|extend|recreate|destroy|
 * events`, speaking HTTP/1.1 to `sandboxer serve` on its unix socket (default) or over TCP with a
 * bearer token. Human output by default, the server's JSON with --json. A small HTTP client of
 * our own (Content-Length and chunked bodies, one request per connection): the control plane's
 * requests are simple, and it keeps libcurl's dependency tree out of the program. */
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
#include "verbs.h"

typedef struct conn_opts {
        sbx_listen_addr addr;
        const char *addr_text;
        const char *token;
        bool json;
} conn_opts;

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

/* The body goes to sink(data, n) as it arrives (streams), or is collected. */
typedef void (*body_sink)(void *ud, const char *data, size_t n);

typedef struct response {
        int status;
        char *body;
        size_t len;
} response;

static void collect(void *ud, const char *d, size_t n) {
        response *r = ud;
        char *p = realloc(r->body, r->len + n + 1);
        if (!p)
                return;
        r->body = p;
        memcpy(r->body + r->len, d, n);
        r->len += n;
        r->body[r->len] = 0;
}

static int http(const conn_opts *o, const char *method, const char *path, const char *ctype,
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
        body_sink out = sink && status < 300 ? sink : collect;
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
static int api_error(const response *r) {
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

static json_t *body_json(const response *r) {
        json_error_t je;
        return r->body ? json_loadb(r->body, r->len, 0, &je) : NULL;
}

/* ---- options shared by every client verb ---------------------------------------------------- */

enum { O_SERVER = 0x200, O_TOKEN, O_JSON };
#define CONN_OPTIONS                                                                                        \
        {"server", required_argument, NULL, O_SERVER}, {"token", required_argument, NULL, O_TOKEN},         \
                {"json", no_argument, NULL, O_JSON}, {                                                      \
                "help", no_argument, NULL, 'h'                                                              \
        }

static int conn_option(conn_opts *o, int c, const char *arg) {
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

static int conn_finish(conn_opts *o) {
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

static const char conn_help[] =
        "  --server ADDR      unix:PATH (default: the serve socket in the runtime dir) or HOST:PORT\n"
        "  --token TOKEN      bearer token for TCP (default: $SANDBOXER_TOKEN)\n"
        "  --json             print the server's JSON\n"
        "  -h, --help         this text\n";

static bool id_ok(const char *s) {
        if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) > 40)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* URL-encode s into out. */
static void urlenc(const char *s, char *out, size_t size) {
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

static void print_json(json_t *j) {
        char *s = json_dumps(j, JSON_INDENT(2));
        if (s) {
                puts(s);
                free(s);
        }
}

/* ---- create ------------------------------------------------------------------------------------ */

static int client_create(int argc, char **argv) {
        static const struct option opts[] = {{"profile", required_argument, NULL, 'p'},
                {"ttl", required_argument, NULL, 't'}, {"harness", required_argument, NULL, 'H'},
                {"session-id", required_argument, NULL, 'S'}, {"run-id", required_argument, NULL, 'R'},
                {"job-id", required_argument, NULL, 'J'}, {"meta", required_argument, NULL, 'm'},
                {"idempotency-key", required_argument, NULL, 'k'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        json_t *body = json_object(), *consumer = json_object(), *meta = json_object();
        const char *key = NULL;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                switch (c) {
                case 'p':
                        json_object_set_new(body, "profile", json_string(optarg));
                        break;
                case 't': {
                        char *end;
                        double t = strtod(optarg, &end);
                        if (*end || t <= 0) {
                                cli_error("create: --ttl: '%s' is not a positive number of seconds", optarg);
                                goto out;
                        }
                        json_object_set_new(body, "ttl_s", json_real(t));
                        break;
                }
                case 'H':
                case 'S':
                case 'R':
                case 'J':
                        json_object_set_new(consumer,
                                c == 'H'   ? "harness"
                                : c == 'S' ? "session_id"
                                : c == 'R' ? "run_id"
                                           : "job_id",
                                json_string(optarg));
                        break;
                case 'm': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                cli_error("create: --meta: '%s' is not KEY=VALUE", optarg);
                                goto out;
                        }
                        char k2[257];
                        snprintf(k2, sizeof k2, "%.*s", (int) (eq - optarg), optarg);
                        json_object_set_new(meta, k2, json_string(eq + 1));
                        break;
                }
                case 'k':
                        key = optarg;
                        break;
                case 'h':
                        printf("sandboxer create [--profile NAME] [--ttl SECONDS] [--harness H] "
                               "[--session-id S]\n"
                               "                 [--run-id R] [--job-id J] [--meta KEY=VALUE]... "
                               "[--idempotency-key K]\n"
                               "                 [--server ADDR] [--token TOKEN] [--json]\n\n"
                               "Create a persistent sandbox and print its id (the record with "
                               "--json).\n\n%s",
                                conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("create: see 'sandboxer create --help'");
                        goto out;
                }
        }
        if (optind < argc) {
                cli_error("create: unexpected argument '%s'", argv[optind]);
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        if (json_object_size(consumer))
                json_object_set(body, "consumer", consumer);
        if (json_object_size(meta))
                json_object_set(body, "metadata", meta);
        char *text = json_dumps(body, JSON_COMPACT);
        char hdr[300] = "";
        if (key)
                snprintf(hdr, sizeof hdr, "Idempotency-Key: %.255s\r\n", key);
        response r = {0};
        if (text && http(&o, "POST", "/v1/sandboxes", "application/json", key ? hdr : NULL, text,
                            strlen(text), &r, NULL, NULL) >= 0) {
                if (r.status >= 300)
                        rc = api_error(&r);
                else {
                        json_t *j = body_json(&r);
                        if (o.json)
                                print_json(j);
                        else
                                puts(json_string_value(json_object_get(j, "id")) ?: "?");
                        json_decref(j);
                        rc = 0;
                }
        }
        free(text);
        free(r.body);
out:
        json_decref(body);
        json_decref(consumer);
        json_decref(meta);
        return rc;
}

/* ---- ls, get --------------------------------------------------------------------------------------- */

static const char *age(const char *iso, char *buf, size_t size) {
        struct tm t = {0};
        if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &t)) {
                snprintf(buf, size, "-");
                return buf;
        }
        long d = (long) (time(NULL) - timegm(&t));
        bool future = d < 0;
        if (future)
                d = -d;
        if (d < 120)
                snprintf(buf, size, "%s%lds", future ? "in " : "", d);
        else if (d < 7200)
                snprintf(buf, size, "%s%ldm", future ? "in " : "", d / 60);
        else
                snprintf(buf, size, "%s%ldh", future ? "in " : "", d / 3600);
        return buf;
}

static int client_ls(int argc, char **argv) {
        static const struct option opts[] = {{"state", required_argument, NULL, 's'},
                {"profile", required_argument, NULL, 'p'}, {"harness", required_argument, NULL, 'H'},
                {"session-id", required_argument, NULL, 'S'}, {"run-id", required_argument, NULL, 'R'},
                {"job-id", required_argument, NULL, 'J'}, {"limit", required_argument, NULL, 'l'},
                CONN_OPTIONS, {0}};
        static const char *const keys[] = {
                "state", "profile", "harness", "session_id", "run_id", "job_id", "limit"};
        static const char letters[] = "spHSRJl";
        conn_opts o = {0};
        char q[2048] = "";
        size_t ql = 0;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                const char *l = c > 0 && c < 128 ? strchr(letters, c) : NULL;
                if (l) {
                        char enc[512];
                        urlenc(optarg, enc, sizeof enc);
                        ql += (size_t) snprintf(
                                q + ql, sizeof q - ql, "%c%s=%s", ql ? '&' : '?', keys[l - letters], enc);
                        if (ql >= sizeof q)
                                return SBX_EXIT_FAILURE;
                        continue;
                }
                if (c == 'h') {
                        printf("sandboxer ls [--state S] [--profile P] [--harness H] [--session-id S] "
                               "[--run-id R]\n"
                               "             [--job-id J] [--limit N] [--server ADDR] [--token TOKEN] "
                               "[--json]\n\n"
                               "List the caller's sandboxes (destroyed ones only with --state "
                               "destroyed).\n\n%s",
                                conn_help);
                        return 0;
                }
                cli_error("ls: see 'sandboxer ls --help'");
                return SBX_EXIT_FAILURE;
        }
        if (optind < argc) {
                cli_error("ls: unexpected argument '%s'", argv[optind]);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[2200];
        snprintf(path, sizeof path, "/v1/sandboxes%s", q);
        response r = {0};
        if (http(&o, "GET", path, NULL, NULL, NULL, 0, &r, NULL, NULL) < 0)
                return SBX_EXIT_FAILURE;
        int rc = 0;
        if (r.status >= 300)
                rc = api_error(&r);
        else {
                json_t *j = body_json(&r);
                if (o.json)
                        print_json(j);
                else {
                        printf("%-22s %-12s %-22s %-9s %-6s %s\n", "ID", "STATE", "PROFILE", "BACKEND",
                                "AGE", "EXPIRES");
                        size_t i;
                        json_t *x;
                        json_array_foreach(json_object_get(j, "items"), i, x) {
                                char a1[32], a2[32];
                                printf("%-22s %-12s %-22s %-9s %-6s %s\n",
                                        json_string_value(json_object_get(x, "id")) ?: "-",
                                        json_string_value(json_object_get(x, "state")) ?: "-",
                                        json_string_value(json_object_get(x, "profile")) ?: "-",
                                        json_string_value(json_object_get(x, "backend")) ?: "-",
                                        age(json_string_value(json_object_get(x, "created_at")), a1,
                                                sizeof a1),
                                        age(json_string_value(json_object_get(x, "expires_at")), a2,
                                                sizeof a2));
                        }
                }
                json_decref(j);
        }
        free(r.body);
        return rc;
}

/* get, extend, recreate, destroy: one id, one request, the record back. */
static int client_simple(const char *verb, int argc, char **argv) {
        static const struct option opts[] = {CONN_OPTIONS, {0}};
        conn_opts o = {0};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 'h') {
                        bool ext = streq(verb, "extend");
                        printf("sandboxer %s ID%s [--server ADDR] [--token TOKEN] [--json]\n\n%s\n\n%s",
                                verb, ext ? " SECONDS" : "",
                                streq(verb, "get") ? "Print a sandbox's record."
                                : ext ? "Extend a sandbox's TTL by SECONDS (capped by the profile's "
                                        "ttl.max)."
                                : streq(verb, "recreate")
                                        ? "Destroy a sandbox and provision it again (same id, profile, "
                                          "inputs)."
                                        : "Destroy a sandbox (also fine when it already was).",
                                conn_help);
                        return 0;
                }
                cli_error("%s: see 'sandboxer %s --help'", verb, verb);
                return SBX_EXIT_FAILURE;
        }
        bool ext = streq(verb, "extend");
        if (argc - optind != (ext ? 2 : 1)) {
                cli_error("%s: usage: sandboxer %s ID%s", verb, verb, ext ? " SECONDS" : "");
                return SBX_EXIT_FAILURE;
        }
        const char *id = argv[optind];
        if (!id_ok(id)) {
                cli_error("%s: '%s' is not a sandbox id (sbx_ and hex digits)", verb, id);
                return SBX_EXIT_FAILURE;
        }
        char body[64] = "";
        if (ext) {
                char *end;
                double s = strtod(argv[optind + 1], &end);
                if (*end || s <= 0) {
                        cli_error("extend: '%s' is not a positive number of seconds", argv[optind + 1]);
                        return SBX_EXIT_FAILURE;
                }
                snprintf(body, sizeof body, "{\"extend_s\":%.3f}", s);
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s%s", id,
                ext                       ? "/ttl"
                : streq(verb, "recreate") ? "/recreate"
                                          : "");
        const char *method = streq(verb, "get") ? "GET" : streq(verb, "destroy") ? "DELETE" : "POST";
        response r = {0};
        if (http(&o, method, path, ext ? "application/json" : NULL, NULL, body, strlen(body), &r, NULL,
                    NULL) < 0)
                return SBX_EXIT_FAILURE;
        int rc = 0;
        if (r.status >= 300)
                rc = api_error(&r);
        else {
                json_t *j = body_json(&r);
                if (o.json)
                        print_json(j);
                else if (streq(verb, "get")) {
                        const char *k;
                        json_t *v;
                        json_object_foreach(j, k, v) {
                                char *s = json_is_string(v) ? NULL
                                                            : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                                printf("%-15s %s\n", k, s ? s : json_string_value(v));
                                free(s);
                        }
                } else
                        printf("%s %s%s%s\n", id, json_string_value(json_object_get(j, "state")) ?: "?",
                                ext ? " until " : "",
                                ext ? json_string_value(json_object_get(j, "expires_at")) ?: "?" : "");
                json_decref(j);
        }
        free(r.body);
        return rc;
}

/* ---- exec ------------------------------------------------------------------------------------------ */

static int exit_of(json_t *res) {
        json_t *code = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        const char *st = json_string_value(json_object_get(res, "status"));
        if (st && streq(st, "timeout"))
                return SBX_EXIT_TIMEOUT;
        if (json_is_integer(sig))
                return 128 + (int) json_integer_value(sig);
        if (json_is_integer(code))
                return (int) json_integer_value(code);
        return SBX_EXIT_FAILURE;
}

static void put_data(FILE *f, json_t *data, json_t *enc) {
        const char *s = json_string_value(data);
        if (!s)
                return;
        if (enc && json_string_value(enc) && streq(json_string_value(enc), "base64")) {
                char *bytes = NULL;
                size_t n = 0;
                if (sbx_base64_decode(s, strlen(s), false, &bytes, &n) >= 0)
                        fwrite(bytes, 1, n, f);
                free(bytes);
        } else
                fwrite(s, 1, json_string_length(data), f);
        fflush(f);
}

typedef struct stream_state {
        char line[1 << 20];
        size_t len;
        int exit;
        bool ended;
} stream_state;

static void stream_sink(void *ud, const char *d, size_t n) {
        stream_state *s = ud;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != '\n') {
                        if (s->len + 1 < sizeof s->line)
                                s->line[s->len++] = d[i];
                        continue;
                }
                s->line[s->len] = 0;
                json_error_t je;
                json_t *ev = json_loads(s->line, 0, &je);
                s->len = 0;
                const char *t = json_string_value(json_object_get(ev, "type"));
                if (t && streq(t, "stdout"))
                        put_data(stdout, json_object_get(ev, "data"), json_object_get(ev, "encoding"));
                else if (t && streq(t, "stderr"))
                        put_data(stderr, json_object_get(ev, "data"), json_object_get(ev, "encoding"));
                else if (t && streq(t, "end")) {
                        s->exit = exit_of(ev);
                        s->ended = true;
                        json_t *err = json_object_get(json_object_get(ev, "error"), "message");
                        if (err)
                                cli_error("%s", json_string_value(err));
                }
                json_decref(ev);
        }
}

static int client_exec(int argc, char **argv) {
        static const struct option opts[] = {{"timeout", required_argument, NULL, 't'},
                {"env", required_argument, NULL, 'e'}, {"cwd", required_argument, NULL, 'c'},
                {"stdin", no_argument, NULL, 'i'}, {"stream", no_argument, NULL, 's'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        json_t *body = json_object(), *env = json_object();
        bool with_stdin = false, stream = false;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                switch (c) {
                case 't': {
                        char *end;
                        double t = strtod(optarg, &end);
                        if (*end || t <= 0) {
                                cli_error(
                                        "exec: --timeout: '%s' is not a positive number of seconds", optarg);
                                goto out;
                        }
                        json_object_set_new(body, "timeout_s", json_real(t));
                        break;
                }
                case 'e': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                cli_error("exec: --env: '%s' is not NAME=VALUE", optarg);
                                goto out;
                        }
                        char name[257];
                        snprintf(name, sizeof name, "%.*s", (int) (eq - optarg), optarg);
                        json_object_set_new(env, name, json_string(eq + 1));
                        break;
                }
                case 'c':
                        json_object_set_new(body, "cwd", json_string(optarg));
                        break;
                case 'i':
                        with_stdin = true;
                        break;
                case 's':
                        stream = true;
                        break;
                case 'h':
                        printf("sandboxer exec ID [--timeout S] [--env NAME=VALUE]... [--cwd DIR] [--stdin] "
                               "[--stream]\n"
                               "                  [--server ADDR] [--token TOKEN] [--json] -- COMMAND "
                               "[ARG]...\n\n"
                               "Run COMMAND in the sandbox ID: its output on ours, its exit status ours "
                               "(124 timeout,\n"
                               "128+N signal, 125 when the request itself failed). --stdin sends our "
                               "standard input;\n"
                               "--stream prints output as it comes; --json prints the result with its "
                               "report.\n\n%s",
                                conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("exec: see 'sandboxer exec --help'");
                        goto out;
                }
        }
        if (argc - optind < 2 || !id_ok(argv[optind])) {
                cli_error("exec: usage: sandboxer exec ID [OPTION]... -- COMMAND [ARG]...");
                goto out;
        }
        const char *id = argv[optind++];
        if (optind < argc && streq(argv[optind], "--"))
                optind++;
        if (optind >= argc) {
                cli_error("exec: no command given");
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        json_t *av = json_array();
        for (int i = optind; i < argc; i++)
                json_array_append_new(av, json_string(argv[i]));
        json_object_set_new(body, "argv", av);
        if (json_object_size(env))
                json_object_set(body, "env", env);
        if (with_stdin) {
                response in = {0};
                char buf[65536];
                ssize_t n;
                while ((n = read(0, buf, sizeof buf)) > 0)
                        collect(&in, buf, (size_t) n);
                /* bytes as they are: base64 keeps binary input intact */
                char *enc = sbx_base64_encode(in.body ? in.body : "", in.len);
                if (enc) {
                        json_object_set_new(body, "stdin", json_string(enc));
                        json_object_set_new(body, "stdin_encoding", json_string("base64"));
                }
                free(enc);
                free(in.body);
        }
        if (stream && !o.json)
                json_object_set_new(body, "stream", json_true());
        char *text = json_dumps(body, JSON_COMPACT);
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", id);
        response r = {0};
        stream_state *ss = stream && !o.json ? calloc(1, sizeof *ss) : NULL;
        if (text && http(&o, "POST", path, "application/json", NULL, text, strlen(text), &r,
                            ss ? stream_sink : NULL, ss) >= 0) {
                if (r.status >= 300)
                        rc = api_error(&r);
                else if (ss)
                        rc = ss->ended ? ss->exit : SBX_EXIT_FAILURE;
                else {
                        json_t *j = body_json(&r);
                        if (o.json)
                                print_json(j);
                        else {
                                put_data(stdout, json_object_get(j, "stdout"),
                                        json_object_get(j, "encoding"));
                                put_data(stderr, json_object_get(j, "stderr"),
                                        json_object_get(j, "encoding"));
                        }
                        rc = exit_of(j);
                        json_decref(j);
                }
        }
        free(ss);
        free(text);
        free(r.body);
out:
        json_decref(body);
        json_decref(env);
        return rc;
}

/* ---- cp -------------------------------------------------------------------------------------------- */

static int split_remote(const char *s, char id[64], const char **path) {
        const char *colon = strchr(s, ':');
        if (!colon || (size_t) (colon - s) >= 64)
                return 0;
        snprintf(id, 64, "%.*s", (int) (colon - s), s);
        if (!id_ok(id))
                return 0;
        *path = colon + 1;
        return 1;
}

static int client_cp(int argc, char **argv) {
        static const struct option opts[] = {CONN_OPTIONS, {0}};
        conn_opts o = {0};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 'h') {
                        printf("sandboxer cp SRC DST [--server ADDR] [--token TOKEN] [--json]\n\n"
                               "Copy a file into or out of a sandbox: exactly one of SRC and DST is ID:PATH "
                               "(a path\n"
                               "under the sandbox's scratch or workspace); the other a local file, or - "
                               "for\n"
                               "standard input/output. Done inside the sandbox, under its fences.\n\n%s",
                                conn_help);
                        return 0;
                }
                cli_error("cp: see 'sandboxer cp --help'");
                return SBX_EXIT_FAILURE;
        }
        if (argc - optind != 2) {
                cli_error("cp: usage: sandboxer cp SRC DST (one of them ID:PATH)");
                return SBX_EXIT_FAILURE;
        }
        char sid[64], did[64];
        const char *spath = NULL, *dpath = NULL;
        int sr = split_remote(argv[optind], sid, &spath), dr = split_remote(argv[optind + 1], did, &dpath);
        if (sr == dr) {
                cli_error("cp: exactly one of SRC and DST must be ID:PATH");
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char enc[4096], path[4300];
        response r = {0};
        int rc = 0;
        if (dr) { /* upload */
                const char *local = argv[optind];
                FILE *f = streq(local, "-") ? stdin : fopen(local, "re");
                if (!f) {
                        cli_error("cp: cannot read %s: %m", local);
                        return SBX_EXIT_FAILURE;
                }
                response data = {0};
                char buf[65536];
                size_t n;
                while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                        collect(&data, buf, n);
                if (f != stdin)
                        fclose(f);
                urlenc(dpath, enc, sizeof enc);
                snprintf(path, sizeof path, "/v1/sandboxes/%s/files?path=%s", did, enc);
                if (http(&o, "PUT", path, "application/octet-stream", NULL, data.body ? data.body : "",
                            data.len, &r, NULL, NULL) < 0)
                        rc = SBX_EXIT_FAILURE;
                else if (r.status >= 300)
                        rc = api_error(&r);
                else if (o.json)
                        fwrite(r.body, 1, r.len, stdout);
                free(data.body);
        } else { /* download */
                const char *local = argv[optind + 1];
                urlenc(spath, enc, sizeof enc);
                snprintf(path, sizeof path, "/v1/sandboxes/%s/files?path=%s", sid, enc);
                if (http(&o, "GET", path, NULL, NULL, NULL, 0, &r, NULL, NULL) < 0)
                        rc = SBX_EXIT_FAILURE;
                else if (r.status >= 300)
                        rc = api_error(&r);
                else {
                        FILE *f = streq(local, "-") ? stdout : fopen(local, "we");
                        if (!f || fwrite(r.body ? r.body : "", 1, r.len, f) != r.len ||
                                (f != stdout && fclose(f) != 0)) {
                                cli_error("cp: cannot write %s: %m", local);
                                rc = SBX_EXIT_FAILURE;
                        }
                }
        }
        free(r.body);
        return rc;
}

/* ---- events ---------------------------------------------------------------------------------------- */

typedef struct sse_state {
        char line[1 << 16];
        size_t len;
        char id[32];
        char event[64];
        bool json;
} sse_state;

static void sse_sink(void *ud, const char *d, size_t n) {
        sse_state *s = ud;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != '\n') {
                        if (s->len + 1 < sizeof s->line)
                                s->line[s->len++] = d[i];
                        continue;
                }
                s->line[s->len] = 0;
                s->len = 0;
                if (strncmp(s->line, "id: ", 4) == 0)
                        snprintf(s->id, sizeof s->id, "%s", s->line + 4);
                else if (strncmp(s->line, "event: ", 7) == 0)
                        snprintf(s->event, sizeof s->event, "%s", s->line + 7);
                else if (strncmp(s->line, "data: ", 6) == 0) {
                        if (s->json) {
                                puts(s->line + 6);
                        } else {
                                json_error_t je;
                                json_t *j = json_loads(s->line + 6, 0, &je);
                                const char *what = streq(s->event, "sandbox.exec") ? "exec"
                                                   : streq(s->event, "sandbox.ttl")
                                                           ? "ttl"
                                                           : json_string_value(json_object_get(j, "state"));
                                printf("%-6s %-12s %-22s %s%s%s\n", s->id, what ? what : "?",
                                        json_string_value(json_object_get(j, "sandbox_id")) ?: "-",
                                        json_string_value(json_object_get(j, "reason")) ?: "",
                                        json_object_get(j, "exec_id") ? " " : "",
                                        json_string_value(json_object_get(j, "exec_id")) ?: "");
                                json_decref(j);
                        }
                        fflush(stdout);
                }
        }
}

static int client_events(int argc, char **argv) {
        static const struct option opts[] = {{"sandbox", required_argument, NULL, 's'},
                {"last-event-id", required_argument, NULL, 'l'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *sb = NULL, *last = NULL;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 's')
                        sb = optarg;
                else if (c == 'l')
                        last = optarg;
                else if (c == 'h') {
                        printf("sandboxer events [--sandbox ID] [--last-event-id N] [--server ADDR] "
                               "[--token TOKEN] [--json]\n\n"
                               "Follow the lifecycle events (every one stored since N, then live ones), one "
                               "line each:\n"
                               "ID STATE|exec|ttl SANDBOX REASON, or the event's JSON with --json. Until "
                               "interrupted.\n\n%s",
                                conn_help);
                        return 0;
                } else {
                        cli_error("events: see 'sandboxer events --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        if (optind < argc || (sb && !id_ok(sb))) {
                cli_error("events: usage: sandboxer events [--sandbox ID] [--last-event-id N]");
                return SBX_EXIT_FAILURE;
        }
        if (last) {
                char *end;
                long long v = strtoll(last, &end, 10);
                if (*end || v < 0) {
                        cli_error("events: --last-event-id: '%s' is not an event id", last);
                        return SBX_EXIT_FAILURE;
                }
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[128], hdr[96] = "";
        snprintf(path, sizeof path, "/v1/events%s%s", sb ? "?sandbox=" : "", sb ? sb : "");
        if (last)
                snprintf(hdr, sizeof hdr, "Last-Event-ID: %.40s\r\n", last);
        sse_state *s = calloc(1, sizeof *s);
        if (!s)
                return SBX_EXIT_FAILURE;
        s->json = o.json;
        response r = {0};
        int rc = 0;
        if (http(&o, "GET", path, NULL, last ? hdr : NULL, NULL, 0, &r, sse_sink, s) < 0)
                rc = SBX_EXIT_FAILURE;
        else if (r.status >= 300)
                rc = api_error(&r);
        free(s);
        free(r.body);
        return rc;
}

int verb_client(int argc, char **argv) {
        signal(SIGPIPE, SIG_IGN);
        const char *v = argv[0];
        if (streq(v, "create"))
                return client_create(argc, argv);
        if (streq(v, "ls"))
                return client_ls(argc, argv);
        if (streq(v, "exec"))
                return client_exec(argc, argv);
        if (streq(v, "cp"))
                return client_cp(argc, argv);
        if (streq(v, "events"))
                return client_events(argc, argv);
        if (streq(v, "get") || streq(v, "extend") || streq(v, "recreate") || streq(v, "destroy"))
                return client_simple(v, argc, argv);
        cli_error("unknown client verb '%s'", v);
        return SBX_EXIT_FAILURE;
}
