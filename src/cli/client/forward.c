/* forward.c — `sandboxer port-forward ID PORT [LOCAL]`: a local TCP port that reaches port PORT
 * inside a sandbox, as `kubectl port-forward` does. Each local connection is one request to
 * serve, GET /v1/sandboxes/ID/tunnel/PORT with `Upgrade: sandboxer-tcp` (src/daemon/ports.h):
 * after the 101 its bytes go both ways untouched; the connection inside is made by the sandbox
 * itself, so what the sandbox may reach is what this reaches. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/io.h"
#include "basic/macro.h"
#include "cli/client/client.h"
#include "daemon/ports.h"
#include "verbs.h"

typedef struct fwd {
        const conn_opts *o;
        const char *id;
        unsigned port;
        int local;
} fwd;

/* The answer's message when the server would not tunnel (its head and JSON body). */
static void refused(const char *head, size_t n) {
        const char *body = memmem(head, n, "\r\n\r\n", 4);
        json_error_t je;
        json_t *j = body ? json_loadb(body + 4, n - (size_t) (body + 4 - head), 0, &je) : NULL;
        const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        const char *eol = memchr(head, '\r', n);
        cli_error("port-forward: a connection was refused: %s%s%.*s%s", msg ? msg : "", msg ? " (" : "",
                (int) (eol ? eol - head : 0), head, msg ? ")" : "");
        json_decref(j);
}

static void *serve_one(void *arg) {
        fwd *f = arg;
        char path[128], buf[65536];
        snprintf(path, sizeof path, "/v1/sandboxes/%s/tunnel/%u", f->id, f->port);
        size_t off = 0, got = 0;
        int server =
                client_upgrade(f->o, path, "Upgrade: " SBX_PORTS_TUNNEL "\r\n", buf, sizeof buf, &off, &got);
        if (server < 0) {
                if (server == -EPROTO && got)
                        refused(buf, got);
                else if (server == -EPROTO)
                        cli_error("port-forward: the control plane gave no answer");
                else
                        cli_error("port-forward: cannot reach the control plane: %s", strerror(-server));
                close(f->local);
                free(f);
                return NULL;
        }
        bool ok = sbx_write_all(f->local, buf + off, got - off) == 0;
        if (ok)
                (void) sbx_splice_both(f->local, server, NULL, NULL);
        close(server);
        close(f->local);
        free(f);
        return NULL;
}

static int number(const char *s, unsigned lo, unsigned hi, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = s && *s ? strtoul(s, &end, 10) : 0;
        if (!s || !*s || *end || errno || v < lo || v > hi || s[0] == '-')
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int client_port_forward(int argc, char **argv) {
        static const struct option opts[] = {{"address", required_argument, NULL, 'a'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *address = "127.0.0.1";
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 'a')
                        address = optarg;
                else if (c == 'h') {
                        printf("sandboxer port-forward [--address ADDR] [--server ADDR] [--token TOKEN] "
                               "[--json] ID "
                               "PORT [LOCAL]\n\n"
                               "Listen on ADDR:LOCAL (default 127.0.0.1, LOCAL = PORT; 0 picks a free one) "
                               "and carry\n"
                               "each connection to 127.0.0.1:PORT inside sandbox ID, through the control "
                               "plane\n"
                               "(the connection inside is the sandbox's own). Until interrupted. Prints "
                               "where it\n"
                               "listens (with --json: {\"address\", \"port\", \"sandbox_id\", "
                               "\"sandbox_port\"}).\n"
                               "A connection the server refuses (nothing listens inside: 502) is closed, "
                               "saying why.\n\n"
                               "  --address ADDR     the local IPv4 address to listen on\n%s",
                                conn_help);
                        return 0;
                } else {
                        cli_error("port-forward: see 'sandboxer port-forward --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        unsigned port = 0, local = 0;
        if (argc - optind < 2 || argc - optind > 3) {
                cli_error("port-forward: usage: sandboxer port-forward ID PORT [LOCAL]");
                return SBX_EXIT_FAILURE;
        }
        const char *id = argv[optind];
        if (!client_id_ok(id)) {
                cli_error("port-forward: '%s' is not a sandbox id (sbx_…)", id);
                return SBX_EXIT_FAILURE;
        }
        if (number(argv[optind + 1], 1, 65535, &port) < 0) {
                cli_error("port-forward: PORT '%s' is not a port from 1 to 65535", argv[optind + 1]);
                return SBX_EXIT_FAILURE;
        }
        local = port;
        if (argc - optind == 3 && number(argv[optind + 2], 0, 65535, &local) < 0) {
                cli_error("port-forward: LOCAL '%s' is not a port from 0 to 65535", argv[optind + 2]);
                return SBX_EXIT_FAILURE;
        }
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) local)};
        if (inet_pton(AF_INET, address, &sa.sin_addr) != 1) {
                cli_error("port-forward: --address '%s' is not an IPv4 address", address);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        /* the sandbox first: a clear error now rather than at the first connection */
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s", id);
        response r = {0};
        if (client_http(&o, "GET", path, NULL, NULL, NULL, 0, &r, NULL, NULL) < 0)
                return SBX_EXIT_FAILURE;
        if (r.status != 200) {
                int rc = client_api_error(&r);
                free(r.body);
                return rc;
        }
        free(r.body);
        int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        (void) setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ls < 0 || bind(ls, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(ls, 64) < 0) {
                int e = errno;
                if (e == EADDRINUSE)
                        cli_error("port-forward: %s:%u is taken; name another LOCAL port (or 0 for a free "
                                  "one)",
                                address, local);
                else
                        cli_error("port-forward: cannot listen on %s:%u: %s", address, local, strerror(e));
                if (ls >= 0)
                        close(ls);
                return SBX_EXIT_FAILURE;
        }
        socklen_t sl = sizeof sa;
        (void) getsockname(ls, (struct sockaddr *) &sa, &sl);
        local = ntohs(sa.sin_port);
        if (o.json)
                printf("{\"address\":\"%s\",\"port\":%u,\"sandbox_id\":\"%s\",\"sandbox_port\":%u}\n",
                        address, local, id, port);
        else
                printf("Forwarding %s:%u -> port %u of sandbox %s (Ctrl-C to stop)\n", address, local, port,
                        id);
        fflush(stdout);
        for (;;) {
                int cfd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
                                continue;
                        cli_error("port-forward: accept: %m");
                        close(ls);
                        return SBX_EXIT_FAILURE;
                }
                fwd *f = calloc(1, sizeof *f);
                pthread_t t;
                pthread_attr_t at;
                pthread_attr_init(&at);
                pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                if (!f) {
                        close(cfd);
                        continue;
                }
                *f = (fwd){.o = &o, .id = id, .port = port, .local = cfd};
                if (pthread_create(&t, &at, serve_one, f) != 0) {
                        close(cfd);
                        free(f);
                }
                pthread_attr_destroy(&at);
        }
}
