/* audit.c — reading Landlock's denial records from the kernel's audit log (see audit.h). */
#include "isolate/audit.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "basic/macro.h"

#ifndef NETLINK_AUDIT
#define NETLINK_AUDIT 9
#endif
#define AUDIT_NLGRP_READLOG 1

/* The leading fields of struct audit_status (linux/audit.h), as every kernel since 2.6 has them. */
struct status_head {
        uint32_t mask, enabled, failure, pid, rate_limit, backlog_limit, lost, backlog;
};

static int request(int fd, uint16_t type, const void *payload, size_t len) {
        struct {
                struct nlmsghdr h;
                char data[64];
        } m;
        if (len > sizeof m.data)
                return -EINVAL;
        memset(&m, 0, sizeof m);
        m.h.nlmsg_len = (uint32_t) NLMSG_LENGTH(len);
        m.h.nlmsg_type = type;
        m.h.nlmsg_flags = NLM_F_REQUEST;
        m.h.nlmsg_seq = 1;
        if (len)
                memcpy(m.data, payload, len);
        struct sockaddr_nl k = {.nl_family = AF_NETLINK};
        if (sendto(fd, &m, m.h.nlmsg_len, 0, (struct sockaddr *) &k, sizeof k) < 0)
                return -errno;
        return 0;
}

int sbx_audit_request_status(int fd) {
        return request(fd, SBX_AUDIT_GET, NULL, 0);
}

int sbx_audit_backlog(const void *payload, size_t len) {
        struct status_head st;
        if (len < sizeof st)
                return -EINVAL;
        memcpy(&st, payload, sizeof st);
        return (int) (st.backlog > INT32_MAX ? INT32_MAX : st.backlog);
}

int sbx_audit_enabled(const void *payload, size_t len) {
        struct status_head st;
        if (len < sizeof st)
                return -EINVAL;
        memcpy(&st, payload, sizeof st);
        return st.enabled != 0;
}

const char *sbx_audit_why(int err) {
        switch (err) {
        case 0:
                return "the host's audit is on";
        case -ENOTCONN:
                return "the host's audit is disabled (auditctl -e 1 turns it on; add '-a never,task' to "
                       "keep "
                       "syscall auditing off)";
        case -EPERM:
                return "reading audit needs CAP_AUDIT_CONTROL and CAP_AUDIT_READ (root)";
        case -ECONNREFUSED:
                return "audit is not offered in this namespace (a container)";
        case -EAFNOSUPPORT:
        case -EPROTONOSUPPORT:
                return "no audit in this kernel (CONFIG_AUDIT)";
        default:
                return "the kernel did not answer its audit status";
        }
}

int sbx_audit_probe(void) {
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
        if (fd < 0)
                return -errno;
        int r = sbx_audit_request_status(fd);
        for (int tries = 0; r >= 0 && tries < 4; tries++) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, 200) <= 0)
                        return -ETIMEDOUT;
                char buf[1024] __attribute__((aligned(8)));
                ssize_t n = recv(fd, buf, sizeof buf, 0);
                if (n < (ssize_t) sizeof(struct nlmsghdr))
                        return n < 0 ? -errno : -EBADMSG;
                struct nlmsghdr *h = (struct nlmsghdr *) buf;
                if (h->nlmsg_type == NLMSG_ERROR && (size_t) n >= NLMSG_LENGTH(sizeof(int))) {
                        int err;
                        memcpy(&err, NLMSG_DATA(h), sizeof err);
                        if (err == 0)
                                continue; /* an acknowledgement: the status follows */
                        return err;
                }
                if (h->nlmsg_type != SBX_AUDIT_GET || h->nlmsg_len > (size_t) n)
                        return -EBADMSG;
                int on = sbx_audit_enabled(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN);
                return on < 0 ? -EBADMSG : on ? 0 : -ENOTCONN;
        }
        return r < 0 ? r : -EBADMSG;
}

int sbx_audit_open(void) {
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = 1u << (AUDIT_NLGRP_READLOG - 1)};
        if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        /* a burst of denials between two reads: 1 MiB holds thousands of records */
        int sz = 1 << 20;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
        return fd;
}

int sbx_audit_next(const void **buf, size_t *len, sbx_audit_msg *ret) {
        if (*len == 0)
                return 0;
        struct nlmsghdr h;
        if (*len < sizeof h) {
                *len = 0;
                return -EBADMSG;
        }
        memcpy(&h, *buf, sizeof h);
        if (h.nlmsg_len < sizeof h || h.nlmsg_len > *len) {
                *len = 0;
                return -EBADMSG;
        }
        const char *p = (const char *) *buf + NLMSG_HDRLEN, *end = (const char *) *buf + h.nlmsg_len;
        size_t adv = NLMSG_ALIGN(h.nlmsg_len);
        if (adv > *len)
                adv = *len;
        *buf = (const char *) *buf + adv;
        *len -= adv;

        *ret = (sbx_audit_msg){
                .type = h.nlmsg_type, .payload = p, .payload_len = p <= end ? (size_t) (end - p) : 0};
        /* text records: "audit(1795475500.045:167): key=value ..." (a NUL may end it) */
        size_t n = ret->payload_len;
        const char *nul = memchr(p, 0, n);
        if (nul)
                n = (size_t) (nul - p);
        if (n > 6 && memcmp(p, "audit(", 6) == 0) {
                const char *close = memchr(p, ')', n);
                const char *colon = close ? memchr(p, ':', (size_t) (close - p)) : NULL;
                if (colon) {
                        uint64_t serial = 0;
                        bool digits = false;
                        for (const char *c = colon + 1; c < close; c++) {
                                if (*c < '0' || *c > '9' || serial > UINT64_MAX / 10 - 10) {
                                        digits = false;
                                        break;
                                }
                                serial = serial * 10 + (uint64_t) (*c - '0');
                                digits = true;
                        }
                        if (digits) {
                                ret->serial = serial;
                                const char *t = close + 1;
                                const char *e = p + n;
                                if (t < e && *t == ':')
                                        t++;
                                while (t < e && *t == ' ')
                                        t++;
                                ret->text = t;
                                ret->len = (size_t) (e - t);
                        }
                }
        }
        return 1;
}

static int hexval(char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
}

bool sbx_audit_field(const char *text, size_t len, const char *key, bool untrusted, char *buf, size_t size) {
        size_t kl = strlen(key);
        if (!text || size == 0 || kl == 0)
                return false;
        const char *end = text + len;
        for (const char *p = text; p + kl < end; p++) {
                /* a key starts the text or follows a space, and is followed by '=' */
                if ((p != text && p[-1] != ' ') || memcmp(p, key, kl) != 0 || p[kl] != '=')
                        continue;
                const char *v = p + kl + 1, *ve;
                bool quoted = v < end && *v == '"';
                if (quoted) {
                        v++;
                        ve = memchr(v, '"', (size_t) (end - v));
                        if (!ve)
                                return false;
                } else {
                        ve = v;
                        while (ve < end && *ve != ' ')
                                ve++;
                }
                size_t vl = (size_t) (ve - v);
                bool hex = untrusted && !quoted && vl > 0 && vl % 2 == 0;
                for (size_t i = 0; hex && i < vl; i++)
                        hex = hexval(v[i]) >= 0;
                if (hex) {
                        if (vl / 2 >= size)
                                return false;
                        size_t o = 0;
                        for (size_t i = 0; i < vl; i += 2) {
                                char c = (char) (hexval(v[i]) * 16 + hexval(v[i + 1]));
                                if (c == 0)
                                        return false; /* a path holds no NUL */
                                buf[o++] = c;
                        }
                        buf[o] = 0;
                        return true;
                }
                if (vl >= size)
                        return false;
                memcpy(buf, v, vl);
                buf[vl] = 0;
                return true;
        }
        return false;
}
