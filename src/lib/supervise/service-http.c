/* service-http.c — see service-http.h. */
#include "supervise/service-http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)

static const char *find_end(const char *buf, size_t n) {
        for (size_t i = 0; i + 3 < n; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
                        return buf + i + 4;
        return NULL;
}

int sbx_http_request_head(
        const char *buf, size_t n, char method[static 24], char path[static 512], size_t *head_len) {
        const char *end = find_end(buf, n);
        if (!end)
                return n >= HEAD_MAX ? -E2BIG : 0;
        const char *eol = memchr(buf, '\r', (size_t) (end - buf));
        const char *sp1 = memchr(buf, ' ', (size_t) (eol - buf));
        if (!sp1 || sp1 == buf || (size_t) (sp1 - buf) >= 24)
                return -EINVAL;
        const char *sp2 = memchr(sp1 + 1, ' ', (size_t) (eol - sp1 - 1));
        if (!sp2 || sp2 == sp1 + 1 || (size_t) (eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
                (sp2[8] != '0' && sp2[8] != '1'))
                return -EINVAL;
        for (const char *p = buf; p < sp1; p++)
                if (*p < 'A' || *p > 'Z')
                        return -EINVAL;
        for (const char *p = sp1 + 1; p < sp2; p++)
                if ((unsigned char) *p <= 0x20 || *p == 0x7f)
                        return -EINVAL;
        snprintf(method, 24, "%.*s", (int) (sp1 - buf), buf);
        snprintf(path, 512, "%.*s", (int) (sp2 - sp1 - 1), sp1 + 1);
        *head_len = (size_t) (end - buf);
        return 1;
}

static bool header_is(const char *line, size_t len, const char *name) {
        size_t l = strlen(name);
        return len > l && line[l] == ':' && strncasecmp(line, name, l) == 0;
}

char *sbx_http_close_head(const char *buf, size_t head_len, size_t *ret_len) {
        bool upgrade = false;
        for (const char *p = buf; p < buf + head_len;) {
                const char *eol = memchr(p, '\n', (size_t) (buf + head_len - p));
                size_t len = eol ? (size_t) (eol - p) : (size_t) (buf + head_len - p);
                if (header_is(p, len, "Upgrade"))
                        upgrade = true;
                p += len + 1;
        }
        char *out = malloc(head_len + 32);
        if (!out)
                return NULL;
        size_t o = 0;
        bool first = true;
        for (const char *p = buf; p < buf + head_len;) {
                const char *eol = memchr(p, '\n', (size_t) (buf + head_len - p));
                size_t len = eol ? (size_t) (eol - p + 1) : (size_t) (buf + head_len - p);
                bool blank = len <= 2 && (p[0] == '\r' || p[0] == '\n');
                if (blank) {
                        if (!upgrade) {
                                memcpy(out + o, "Connection: close\r\n", 19);
                                o += 19;
                        }
                        memcpy(out + o, p, len);
                        o += len;
                        break;
                }
                bool drop = !first && !upgrade &&
                            (header_is(p, len, "Connection") || header_is(p, len, "Keep-Alive") ||
                                    header_is(p, len, "Proxy-Connection"));
                if (!drop) {
                        memcpy(out + o, p, len);
                        o += len;
                }
                first = false;
                p += len;
        }
        out[o] = 0;
        *ret_len = o;
        return out;
}

int sbx_http_status(const char *buf, size_t n) {
        const char *eol = memchr(buf, '\n', n);
        if (!eol)
                return n >= 1024 ? -EINVAL : (n >= 5 && strncmp(buf, "HTTP/", 5) != 0 ? -EINVAL : 0);
        if ((size_t) (eol - buf) < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
                return -EINVAL;
        int code = 0;
        for (int i = 9; i < 12; i++) {
                if (buf[i] < '0' || buf[i] > '9')
                        return -EINVAL;
                code = code * 10 + (buf[i] - '0');
        }
        return code >= 100 ? code : -EINVAL;
}

int sbx_service_dial(const char *target) {
        if (strncmp(target, "unix:", 5) == 0) {
                struct sockaddr_un a = {.sun_family = AF_UNIX};
                if (strlen(target + 5) >= sizeof a.sun_path)
                        return -ENAMETOOLONG;
                strcpy(a.sun_path, target + 5);
                int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (s < 0)
                        return -errno;
                if (connect(s, (struct sockaddr *) &a, sizeof a) < 0) {
                        int r = -errno;
                        close(s);
                        return r;
                }
                return s;
        }
        char host[300];
        const char *colon = strrchr(target, ':');
        if (!colon || colon == target || strlen(target) >= sizeof host)
                return -EINVAL;
        snprintf(host, sizeof host, "%.*s", (int) (colon - target), target);
        if (host[0] == '[' && host[strlen(host) - 1] == ']') {
                memmove(host, host + 1, strlen(host));
                host[strlen(host) - 1] = 0;
        }
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res)
                return -EHOSTUNREACH;
        int last = -ECONNREFUSED;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                /* not blocking while it connects: at most 10 s an address */
                int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0) {
                        last = -errno;
                        continue;
                }
                int err = 0;
                socklen_t el = sizeof err;
                struct pollfd pf = {.fd = s, .events = POLLOUT};
                if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
                        err = errno;
                else if (poll(&pf, 1, 10000) <= 0)
                        err = ETIMEDOUT;
                else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        err = errno;
                if (err == 0 && fcntl(s, F_SETFL, 0) == 0) {
                        freeaddrinfo(res);
                        return s;
                }
                last = -(err ? err : errno);
                close(s);
        }
        freeaddrinfo(res);
        return last;
}
