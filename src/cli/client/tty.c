/* tty.c — `sandboxer exec --tty`: the command on a terminal of the sandbox's own (POST …/exec with
 * tty), attached over a WebSocket (GET …/execs/ID/attach): our terminal raw, keys in, output out,
 * our window's size followed (SIGWINCH → a resize frame), the exec's exit status ours. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "basic/ws.h"
#include "cli/verbs.h"
#include "cli/client/client.h"
#include "sandboxer/sandboxer.h"

int client_connect(const conn_opts *o) {
        if (o->addr.is_unix) {
                struct sockaddr_un sa = {.sun_family = AF_UNIX};
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", o->addr.path);
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0)
                        return fd;
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return -e;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", o->addr.port);
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        if (getaddrinfo(o->addr.host, port, &hints, &ai) != 0)
                return -EHOSTUNREACH;
        int fd = -ECONNREFUSED;
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
                int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (s >= 0 && connect(s, a->ai_addr, a->ai_addrlen) == 0) {
                        fd = s;
                        break;
                }
                if (s >= 0)
                        close(s);
        }
        freeaddrinfo(ai);
        return fd;
}

typedef struct attach {
        int fd;
        sbx_ws_reader r;
        int exit; /* from the end frame; -1 until then */
        int wake[2]; /* the reader's end wakes the main loop */
        pthread_mutex_t wlock;
} attach;

static void *reader_main(void *arg) {
        attach *a = arg;
        for (;;) {
                int op;
                char *d = NULL;
                size_t n = 0;
                if (sbx_ws_recv(&a->r, &op, &d, &n) < 0)
                        break;
                if (op == SBX_WS_BINARY) {
                        for (size_t off = 0; off < n;) {
                                ssize_t k = write(1, d + off, n - off);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k <= 0)
                                        break;
                                off += (size_t) k;
                        }
                } else if (op == SBX_WS_TEXT) {
                        json_error_t je;
                        json_t *j = json_loadb(d, n, 0, &je), *ex = json_object_get(j, "exit");
                        if (ex) {
                                json_t *code = json_object_get(ex, "exit_code"),
                                       *sig = json_object_get(ex, "signal");
                                a->exit = json_is_integer(code)  ? (int) json_integer_value(code)
                                          : json_is_integer(sig) ? 128 + (int) json_integer_value(sig)
                                                                 : SBX_EXIT_FAILURE;
                                const char *st = json_string_value(json_object_get(ex, "status"));
                                if (st && streq(st, "timeout"))
                                        a->exit = 124;
                        }
                        json_decref(j);
                } else if (op == SBX_WS_CLOSE) {
                        free(d);
                        break;
                }
                free(d);
        }
        if (write(a->wake[1], "x", 1) < 0) {
        }
        return NULL;
}

static volatile sig_atomic_t winch;
static void on_winch(int sig) {
        (void) sig;
        winch = 1;
}

static void send_size(attach *a) {
        struct winsize ws;
        if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row)
                return;
        char t[96];
        snprintf(t, sizeof t, "{\"resize\":{\"cols\":%u,\"rows\":%u}}", ws.ws_col, ws.ws_row);
        pthread_mutex_lock(&a->wlock);
        (void) sbx_ws_send(a->fd, SBX_WS_TEXT, t, strlen(t), true);
        pthread_mutex_unlock(&a->wlock);
}

int client_upgrade(const conn_opts *o, const char *path, const char *headers, char *buf, size_t size,
        size_t *ret_off, size_t *ret_len) {
        int fd = client_connect(o);
        if (fd < 0)
                return fd;
        char head[2048];
        int hl = snprintf(head, sizeof head,
                "GET %s HTTP/1.1\r\nHost: sandboxer\r\n%sConnection: Upgrade\r\n%s%s%s\r\n", path, headers,
                o->token ? "Authorization: Bearer " : "", o->token ? o->token : "", o->token ? "\r\n" : "");
        if (hl < 0 || (size_t) hl >= sizeof head || sbx_write_all(fd, head, (size_t) hl) < 0) {
                close(fd);
                return -EIO;
        }
        size_t got = 0;
        char *end = NULL;
        while (!end && got < size - 1) {
                ssize_t k = read(fd, buf + got, size - 1 - got);
                if (k <= 0)
                        break;
                got += (size_t) k;
                buf[got] = 0;
                end = strstr(buf, "\r\n\r\n");
        }
        buf[got] = 0;
        *ret_len = got;
        if (!end || strncmp(buf, "HTTP/1.1 101", 12) != 0) {
                /* the rest of a short refusal's body, when it is there already */
                ssize_t k = got < size - 1 ? recv(fd, buf + got, size - 1 - got, MSG_DONTWAIT) : 0;
                if (k > 0)
                        *ret_len = got += (size_t) k;
                buf[got] = 0;
                close(fd);
                return -EPROTO;
        }
        *ret_off = (size_t) (end + 4 - buf);
        return fd;
}

/* Attach to the terminal exec at attach_path; our stdin is its keyboard. The exit status. */
static int attach_run(const conn_opts *o, const char *attach_path) {
        unsigned char raw[16];
        if (getrandom(raw, sizeof raw, 0) != sizeof raw)
                memset(raw, 7, sizeof raw);
        char *key = sbx_base64_encode(raw, sizeof raw), hdrs[256], buf[4096];
        snprintf(hdrs, sizeof hdrs,
                "Upgrade: websocket\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
                key ? key : "");
        free(key);
        size_t off = 0, got = 0;
        int fd = client_upgrade(o, attach_path, hdrs, buf, sizeof buf, &off, &got);
        if (fd == -EPROTO) {
                char *nl = strchr(buf, '\r');
                if (nl)
                        *nl = 0;
                cli_error(
                        "exec --tty: the server did not attach the terminal (%s)", got ? buf : "no answer");
                return SBX_EXIT_FAILURE;
        }
        if (fd < 0) {
                cli_error("exec --tty: cannot reach the control plane: %s", strerror(-fd));
                return SBX_EXIT_FAILURE;
        }
        attach a = {.fd = fd, .exit = -1, .wake = {-1, -1}};
        pthread_mutex_init(&a.wlock, NULL);
        sbx_ws_reader_init(&a.r, fd, buf + off, got - off);
        struct termios saved;
        bool rawmode = isatty(0) && tcgetattr(0, &saved) == 0;
        if (rawmode) {
                struct termios t = saved;
                cfmakeraw(&t);
                (void) tcsetattr(0, TCSANOW, &t);
        }
        struct sigaction sa = {.sa_handler = on_winch};
        sigaction(SIGWINCH, &sa, NULL);
        pthread_t rt;
        if (pipe2(a.wake, O_CLOEXEC) < 0 || pthread_create(&rt, NULL, reader_main, &a) != 0) {
                if (rawmode)
                        (void) tcsetattr(0, TCSANOW, &saved);
                cli_error("exec --tty: %m");
                close(fd);
                return SBX_EXIT_FAILURE;
        }
        bool in_open = true;
        for (;;) {
                if (winch) {
                        winch = 0;
                        send_size(&a);
                }
                struct pollfd pf[2] = {
                        {.fd = in_open ? 0 : -1, .events = POLLIN}, {.fd = a.wake[0], .events = POLLIN}};
                int k = poll(pf, 2, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 || pf[1].revents)
                        break;
                if (pf[0].revents) {
                        char in[4096];
                        ssize_t n = read(0, in, sizeof in);
                        if (n <= 0) {
                                /* our input ended (not a terminal): ^D to its terminal, then wait */
                                in_open = false;
                                n = 1;
                                in[0] = 4;
                        }
                        pthread_mutex_lock(&a.wlock);
                        int w = sbx_ws_send(fd, SBX_WS_BINARY, in, (size_t) n, true);
                        pthread_mutex_unlock(&a.wlock);
                        if (w < 0)
                                break;
                }
        }
        (void) shutdown(fd, SHUT_RDWR);
        pthread_join(rt, NULL);
        if (rawmode)
                (void) tcsetattr(0, TCSANOW, &saved);
        close(fd);
        close(a.wake[0]);
        close(a.wake[1]);
        pthread_mutex_destroy(&a.wlock);
        if (a.exit < 0) {
                cli_error("exec --tty: the connection ended before the exec did (it goes on: attach again "
                          "with GET %s)",
                        attach_path);
                return SBX_EXIT_FAILURE;
        }
        return a.exit;
}

int client_exec_tty(const conn_opts *o, const char *id, json_t *body) {
        struct winsize ws = {.ws_col = 80, .ws_row = 24};
        if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row)
                ws = (struct winsize){.ws_col = 80, .ws_row = 24};
        json_object_set_new(body, "tty", json_pack("{s:i, s:i}", "cols", ws.ws_col, "rows", ws.ws_row));
        char *text = json_dumps(body, JSON_COMPACT), path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", id);
        response r = {0};
        int rc = SBX_EXIT_FAILURE;
        if (text && client_http(o, "POST", path, "application/json", NULL, text, strlen(text), &r, NULL,
                            NULL) >= 0) {
                if (r.status >= 300)
                        rc = client_api_error(&r);
                else {
                        json_t *j = client_body_json(&r);
                        const char *at = json_string_value(json_object_get(j, "attach"));
                        if (o->json)
                                client_print_json(j);
                        rc = at ? attach_run(o, at) : SBX_EXIT_FAILURE;
                        json_decref(j);
                }
        }
        free(text);
        free(r.body);
        return rc;
}
