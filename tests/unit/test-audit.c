/* test-audit.c — the audit record parser of src/lib/isolate/audit.c: netlink framing, the event
 * serial, key=value fields (quoted, bare, hex-encoded), and malformed input. */
#include <errno.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <string.h>

#include "isolate/audit.h"
#include "tap.h"

/* One netlink message of type `type` holding text, appended to buf at *off. */
static void put(char *buf, size_t *off, int type, const char *text) {
        struct nlmsghdr h = {
                .nlmsg_len = (uint32_t) NLMSG_LENGTH(strlen(text)), .nlmsg_type = (uint16_t) type};
        memcpy(buf + *off, &h, sizeof h);
        memcpy(buf + *off + NLMSG_HDRLEN, text, strlen(text));
        *off += NLMSG_ALIGN(h.nlmsg_len);
}

int main(void) {
        char buf[4096] __attribute__((aligned(8)));
        size_t n = 0;
        memset(buf, 0, sizeof buf);
        put(buf, &n, SBX_AUDIT_LANDLOCK_ACCESS,
                "audit(1795475500.045:167): domain=14e514b29 blockers=fs.make_reg path=\"/etc\" dev=\"vda\" "
                "ino=19");
        put(buf, &n, SBX_AUDIT_LANDLOCK_DOMAIN,
                "audit(1795475500.045:167): domain=14e514b29 status=allocated mode=enforcing pid=19333 "
                "uid=0 "
                "exe=\"/usr/bin/python3\" comm=\"python3\"");
        put(buf, &n, SBX_AUDIT_LANDLOCK_ACCESS,
                "audit(1795475500.046:168): domain=14e514b29 blockers=fs.write_file "
                "path=2F746D702F6120622063 "
                "dev=\"vda\" ino=20");

        const void *p = buf;
        size_t len = n;
        sbx_audit_msg m;
        char v[256];
        is_int(sbx_audit_next(&p, &len, &m), 1, "first record taken");
        is_int(m.type, SBX_AUDIT_LANDLOCK_ACCESS, "its type");
        is_int(m.serial, 167, "its event serial");
        ok(sbx_audit_field(m.text, m.len, "domain", false, v, sizeof v) && strcmp(v, "14e514b29") == 0,
                "a bare value: domain=14e514b29");
        ok(sbx_audit_field(m.text, m.len, "path", true, v, sizeof v) && strcmp(v, "/etc") == 0,
                "a quoted value loses its quotes");
        ok(sbx_audit_field(m.text, m.len, "ino", false, v, sizeof v) && strcmp(v, "19") == 0,
                "the last field, to the end of the text");
        ok(!sbx_audit_field(m.text, m.len, "pid", false, v, sizeof v), "an absent key: false");
        ok(!sbx_audit_field(m.text, m.len, "ath", false, v, sizeof v),
                "a key is matched whole, not a suffix");
        ok(!sbx_audit_field(m.text, m.len, "path", true, v, 3), "a value that does not fit: false");

        is_int(sbx_audit_next(&p, &len, &m), 1, "second record taken");
        ok(m.type == SBX_AUDIT_LANDLOCK_DOMAIN && m.serial == 167, "the domain record of the same event");
        ok(sbx_audit_field(m.text, m.len, "pid", false, v, sizeof v) && strcmp(v, "19333") == 0,
                "the pid that made the domain");
        ok(sbx_audit_field(m.text, m.len, "status", false, v, sizeof v) && strcmp(v, "allocated") == 0,
                "status=allocated");

        is_int(sbx_audit_next(&p, &len, &m), 1, "third record taken");
        is_int(m.serial, 168, "a new event");
        ok(sbx_audit_field(m.text, m.len, "path", true, v, sizeof v) && strcmp(v, "/tmp/a b c") == 0,
                "a hex-encoded path (it holds spaces) is decoded");
        ok(sbx_audit_field(m.text, m.len, "path", false, v, sizeof v) &&
                        strcmp(v, "2F746D702F6120622063") == 0,
                "not decoded unless the field is an untrusted string");
        is_int(sbx_audit_next(&p, &len, &m), 0, "then the end");

        /* malformed */
        struct nlmsghdr h = {.nlmsg_len = 4096, .nlmsg_type = 1423};
        memcpy(buf, &h, sizeof h);
        p = buf, len = 64;
        is_int(sbx_audit_next(&p, &len, &m), -EBADMSG, "a length beyond the datagram: -EBADMSG");
        is_int(len, 0, "and the rest is dropped");
        p = buf, len = 7;
        is_int(sbx_audit_next(&p, &len, &m), -EBADMSG, "a datagram shorter than a header: -EBADMSG");
        n = 0;
        put(buf, &n, 1423, "audit(oops): domain=1");
        p = buf, len = n;
        ok(sbx_audit_next(&p, &len, &m) == 1 && m.text == NULL, "no serial: a record without text");
        n = 0;
        put(buf, &n, 1423, "audit(1.2:99999999999999999999999): domain=1");
        p = buf, len = n;
        ok(sbx_audit_next(&p, &len, &m) == 1 && m.text == NULL, "a serial that overflows: no text");
        n = 0;
        put(buf, &n, 1423, "audit(1.2:5): path=2F00 name=\"unterminated");
        p = buf, len = n;
        ok(sbx_audit_next(&p, &len, &m) == 1 && m.text != NULL, "fields follow");
        ok(!sbx_audit_field(m.text, m.len, "path", true, v, sizeof v),
                "a hex value decoding to NUL: refused");
        ok(!sbx_audit_field(m.text, m.len, "name", true, v, sizeof v), "an unterminated quote: refused");

        unsigned char st[64] = {0};
        st[28] = 3;
        is_int(sbx_audit_backlog(st, sizeof st), 3, "the backlog of a status reply");
        is_int(sbx_audit_backlog(st, 16), -EINVAL, "a status reply too short: -EINVAL");
        return done_testing();
}
