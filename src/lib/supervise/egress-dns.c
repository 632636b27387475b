/* egress-dns.c — see egress-dns.h. */
#include "supervise/egress-dns.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/macro.h"

#define NAMES_MAX 65534 /* 198.18.0.1 .. 198.19.255.254 is room for 131070: keep it smaller */
#define NAME_LEN 254

struct sbx_egress_dns {
        pthread_mutex_t lock;
        char (*names)[NAME_LEN];
        size_t n;
        int fd, stop_fd;
        pthread_t thread;
        bool running;
};

int sbx_egress_dns_new(sbx_egress_dns **ret) {
        sbx_egress_dns *d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        d->fd = d->stop_fd = -1;
        pthread_mutex_init(&d->lock, NULL);
        *ret = d;
        return 0;
}

void sbx_egress_dns_stop(sbx_egress_dns *d) {
        if (!d || !d->running)
                return;
        uint64_t one = 1;
        (void) !write(d->stop_fd, &one, sizeof one);
        pthread_join(d->thread, NULL);
        d->running = false;
        d->fd = safe_close(d->fd);
        d->stop_fd = safe_close(d->stop_fd);
}

sbx_egress_dns *sbx_egress_dns_free(sbx_egress_dns *d) {
        if (!d)
                return NULL;
        sbx_egress_dns_stop(d);
        safe_close(d->fd);
        free(d->names);
        pthread_mutex_destroy(&d->lock);
        free(d);
        return NULL;
}

bool sbx_egress_dns_started(const sbx_egress_dns *d) {
        return d && d->running;
}

/* A host name as the egress rules take one: labels of letters, digits, '-' and '_', lowercase. */
static bool host_name(const char *s) {
        size_t n = strlen(s), label = 0;
        if (n == 0 || n >= NAME_LEN)
                return false;
        for (const char *p = s; *p; p++) {
                if (*p == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                } else if (isalnum((unsigned char) *p) || *p == '-' || *p == '_') {
                        if (++label > 63)
                                return false;
                } else
                        return false;
        }
        return label > 0;
}

int sbx_egress_dns_map(sbx_egress_dns *d, const char *name, uint32_t *ret) {
        if (!host_name(name))
                return -EINVAL;
        pthread_mutex_lock(&d->lock);
        int r = 0;
        size_t i;
        for (i = 0; i < d->n; i++)
                if (streq(d->names[i], name))
                        break;
        if (i == d->n) {
                if (d->n >= NAMES_MAX)
                        r = -ENOSPC;
                else {
                        if (d->n % 256 == 0) {
                                char(*nn)[NAME_LEN] = reallocarray(d->names, d->n + 256, NAME_LEN);
                                if (!nn)
                                        r = -ENOMEM;
                                else
                                        d->names = nn;
                        }
                        if (r == 0)
                                snprintf(d->names[d->n++], NAME_LEN, "%s", name);
                }
        }
        pthread_mutex_unlock(&d->lock);
        if (r == 0)
                *ret = SBX_EGRESS_DNS_BASE + 1 + (uint32_t) i;
        return r;
}

bool sbx_egress_dns_unmap(sbx_egress_dns *d, uint32_t addr, char *name, size_t size) {
        if (!d || (addr & SBX_EGRESS_DNS_MASK) != SBX_EGRESS_DNS_BASE || addr == SBX_EGRESS_DNS_BASE)
                return false;
        size_t i = addr - SBX_EGRESS_DNS_BASE - 1;
        pthread_mutex_lock(&d->lock);
        bool found = i < d->n;
        if (found)
                snprintf(name, size, "%s", d->names[i]);
        pthread_mutex_unlock(&d->lock);
        return found;
}

/* The question's name, lowercased, without the root's dot; *end past its class. */
static int question(
        const unsigned char *q, size_t n, char *name, size_t size, uint16_t *qtype, size_t *end) {
        size_t i = 12, o = 0;
        for (;;) {
                if (i >= n)
                        return -EINVAL;
                unsigned len = q[i++];
                if (len == 0)
                        break;
                if (len > 63 || i + len > n || o + len + 2 > size)
                        return -EINVAL; /* compression has no place in a question */
                if (o > 0)
                        name[o++] = '.';
                for (unsigned k = 0; k < len; k++)
                        name[o++] = (char) tolower(q[i + k]);
                i += len;
        }
        name[o] = 0;
        if (i + 4 > n)
                return -EINVAL;
        *qtype = (uint16_t) (q[i] << 8 | q[i + 1]);
        *end = i + 4;
        return 0;
}

size_t sbx_egress_dns_answer(
        sbx_egress_dns *d, const unsigned char *q, size_t n, unsigned char *out, size_t size) {
        if (n < 12 || size < 512 || (q[2] & 0x80)) /* too short, or itself an answer */
                return 0;
        char name[NAME_LEN + 2];
        uint16_t qtype = 0;
        size_t end = 0;
        unsigned qd = (unsigned) (q[4] << 8 | q[5]);
        int opcode = (q[2] >> 3) & 0xf;
        bool ok =
                qd == 1 && opcode == 0 && question(q, n, name, sizeof name, &qtype, &end) == 0 && end <= 300;
        /* the header: the id, QR, the opcode and RD kept, RA set */
        memcpy(out, q, 2);
        out[2] = (unsigned char) (0x80 | (q[2] & 0x79));
        out[3] = 0x80;
        memset(out + 4, 0, 8);
        if (!ok) {
                out[3] |= opcode == 0 ? 1 : 4; /* FORMERR, NOTIMP */
                return 12;
        }
        memcpy(out + 12, q + 12, end - 12);
        out[5] = 1; /* the question, echoed */
        size_t o = end;
        uint32_t a = 0;
        if (streq(name, "localhost") || (strlen(name) > 10 && streq(name + strlen(name) - 10, ".localhost")))
                a = 0x7f000001; /* the sandbox's own */
        else if (sbx_egress_dns_map(d, name, &a) < 0) {
                out[3] |= 3; /* NXDOMAIN: not a host name (or the table is full) */
                return o;
        }
        if (qtype == 1 /* A */ || qtype == 255 /* ANY */) {
                static const unsigned char rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};
                memcpy(out + o, rr, sizeof rr);
                o += sizeof rr;
                out[o++] = (unsigned char) (a >> 24);
                out[o++] = (unsigned char) (a >> 16);
                out[o++] = (unsigned char) (a >> 8);
                out[o++] = (unsigned char) a;
                out[7] = 1;
        }
        return o; /* AAAA and the rest: no data (the client goes on with A) */
}

static void *serve(void *arg) {
        sbx_egress_dns *d = arg;
        unsigned char q[1500], a[1500];
        for (;;) {
                struct pollfd pf[2] = {
                        {.fd = d->fd, .events = POLLIN}, {.fd = d->stop_fd, .events = POLLIN}};
                if (poll(pf, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pf[1].revents)
                        break;
                struct sockaddr_storage from;
                socklen_t fl = sizeof from;
                ssize_t k = recvfrom(d->fd, q, sizeof q, MSG_DONTWAIT, (struct sockaddr *) &from, &fl);
                if (k <= 0)
                        continue;
                size_t m = sbx_egress_dns_answer(d, q, (size_t) k, a, sizeof a);
                if (m > 0)
                        (void) sendto(
                                d->fd, a, m, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *) &from, fl);
        }
        return NULL;
}

int sbx_egress_dns_start(sbx_egress_dns *d, int fd) {
        if (d->running) {
                close(fd);
                return -EALREADY;
        }
        d->fd = fd;
        d->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (d->stop_fd < 0) {
                int r = -errno;
                d->fd = safe_close(d->fd);
                return r;
        }
        int r = -pthread_create(&d->thread, NULL, serve, d);
        if (r < 0) {
                d->fd = safe_close(d->fd);
                d->stop_fd = safe_close(d->stop_fd);
                return r;
        }
        d->running = true;
        return 0;
}
