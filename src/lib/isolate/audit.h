/* audit.h — the kernel's audit log as a source of evidence: Landlock writes its own denial
 * records there (ABI 7: AUDIT_LANDLOCK_ACCESS, AUDIT_LANDLOCK_DOMAIN), which a process holding
 * CAP_AUDIT_READ receives from the read-only multicast group. Reading changes nothing on the
 * host: whether audit is enabled is the host's choice (auditctl -e 1), never ours. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Record types (linux/audit.h has the first ones; Landlock's are newer than Debian 12's). */
#define SBX_AUDIT_GET 1000
#define SBX_AUDIT_SYSCALL 1300
#define SBX_AUDIT_EOE 1320
#define SBX_AUDIT_LANDLOCK_ACCESS 1423
#define SBX_AUDIT_LANDLOCK_DOMAIN 1424

/* 0 when this process can read the audit log and audit is enabled; otherwise -errno:
 * -ENOTCONN audit disabled, -EPERM not root, -ECONNREFUSED not in the initial namespaces,
 * -EAFNOSUPPORT no audit in the kernel. Asks the kernel (AUDIT_GET, which it answers from a
 * kernel thread made for the reply: ~0.1 ms), so callers cache it. */
int sbx_audit_probe(void);
/* What a probe's answer means for a person: the cause and the fix. */
const char *sbx_audit_why(int err);

/* A non-blocking, close-on-exec socket on the read-only log group (AUDIT_NLGRP_READLOG), with a
 * receive buffer large enough for a burst of denials; -errno. */
int sbx_audit_open(void);

/* Ask, on fd, for the audit status; its reply (type SBX_AUDIT_GET) comes back on fd among the
 * records, and sbx_audit_backlog() reads how many records the kernel still holds from it. */
int sbx_audit_request_status(int fd);
/* The backlog of an AUDIT_GET reply's payload, or -EINVAL when it is too short. */
int sbx_audit_backlog(const void *payload, size_t len);
/* Whether the reply says audit is enabled (1, 0), or -EINVAL. */
int sbx_audit_enabled(const void *payload, size_t len);

/* One record of a datagram received from the socket. */
typedef struct sbx_audit_msg {
        int type;
        uint64_t serial; /* the event it belongs to: audit(SECONDS.MILLIS:SERIAL) */
        const char *text; /* after "audit(...): ", not NUL-terminated */
        size_t len;
        const void *payload; /* the raw payload (for binary replies such as AUDIT_GET) */
        size_t payload_len;
} sbx_audit_msg;

/* The next record of a received datagram at *buf, *len (advanced past it): 1 when one was taken,
 * 0 at the end, -EBADMSG for a malformed message (the rest of the datagram is dropped). Libc
 * only: unit-tested and fuzzed on arbitrary bytes. */
int sbx_audit_next(const void **buf, size_t *len, sbx_audit_msg *ret);

/* The value of `key` in a record's text (key=value pairs separated by spaces), into buf (NUL
 * terminated, truncated to size): a "quoted" value without its quotes; with `untrusted`, an
 * unquoted value of hex digits is decoded (the kernel hex-encodes strings holding spaces,
 * quotes or control characters). false when the key is absent or the value does not fit. */
bool sbx_audit_field(const char *text, size_t len, const char *key, bool untrusted, char *buf, size_t size);
