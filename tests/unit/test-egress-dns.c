/* test-egress-dns.c — the sandbox's resolver (supervise/egress-dns.h): a name gets a synthetic
 * address of 198.18.0.0/15, the same one each time, taken back by unmap; AAAA gets no data,
 * localhost its loopback, what is not a host name NXDOMAIN, a malformed query FORMERR, an
 * answer (QR set) nothing. */
#include <arpa/inet.h>
#include <string.h>

#include "supervise/egress-dns.h"
#include "tap.h"

/* a query for name, type qtype */
static size_t query(unsigned char *q, const char *name, unsigned qtype) {
        static const unsigned char hdr[] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
        memcpy(q, hdr, sizeof hdr);
        size_t o = sizeof hdr;
        const char *p = name;
        while (*p) {
                const char *dot = strchr(p, '.');
                size_t l = dot ? (size_t) (dot - p) : strlen(p);
                q[o++] = (unsigned char) l;
                memcpy(q + o, p, l);
                o += l;
                p += l + (dot ? 1 : 0);
        }
        q[o++] = 0;
        q[o++] = (unsigned char) (qtype >> 8);
        q[o++] = (unsigned char) qtype;
        q[o++] = 0;
        q[o++] = 1;
        return o;
}

static uint32_t answer_a(sbx_egress_dns *d, const char *name, int *rcode, int *ancount) {
        unsigned char q[512], a[512];
        size_t n = query(q, name, 1);
        size_t m = sbx_egress_dns_answer(d, q, n, a, sizeof a);
        *rcode = m >= 12 ? a[3] & 0xf : -1;
        *ancount = m >= 12 ? a[6] << 8 | a[7] : -1;
        if (m < n + 16 || *ancount != 1)
                return 0;
        return (uint32_t) a[m - 4] << 24 | (uint32_t) a[m - 3] << 16 | (uint32_t) a[m - 2] << 8 | a[m - 1];
}

int main(void) {
        sbx_egress_dns *d = NULL;
        ok(sbx_egress_dns_new(&d) == 0 && d, "a resolver");
        int rc, an;
        uint32_t a1 = answer_a(d, "pypi.org", &rc, &an);
        ok(rc == 0 && an == 1 && a1 == 0xC6120001u, "the first name gets 198.18.0.1 (rcode %d, %d answers)",
                rc, an);
        uint32_t a2 = answer_a(d, "Files.PythonHosted.org", &rc, &an);
        ok(a2 == 0xC6120002u, "the next name the next address");
        ok(answer_a(d, "pypi.org", &rc, &an) == a1, "the same name the same address, each time");
        char name[256];
        ok(sbx_egress_dns_unmap(d, a2, name, sizeof name) && strcmp(name, "files.pythonhosted.org") == 0,
                "unmap gives the name back, lowercased: %s", name);
        ok(!sbx_egress_dns_unmap(d, 0xC6120099u, name, sizeof name),
                "an address never handed out has no name");
        ok(!sbx_egress_dns_unmap(d, 0x0A000001u, name, sizeof name), "nor one outside the range");
        ok(answer_a(d, "localhost", &rc, &an) == 0x7f000001u, "localhost is the sandbox's own loopback");

        unsigned char q[512], a[512];
        size_t n = query(q, "pypi.org", 28);
        size_t m = sbx_egress_dns_answer(d, q, n, a, sizeof a);
        ok(m == n && (a[3] & 0xf) == 0 && a[7] == 0 && (a[2] & 0x80), "AAAA: an answer with no data");
        ok(a[0] == 0x12 && a[1] == 0x34 && (a[2] & 1), "the id and RD are kept");

        answer_a(d, "bad_name!.example", &rc, &an);
        ok(rc == 3 && an == 0, "what is not a host name: NXDOMAIN");
        n = query(q, "x.example", 1);
        q[5] = 2; /* two questions claimed */
        m = sbx_egress_dns_answer(d, q, n, a, sizeof a);
        ok(m == 12 && (a[3] & 0xf) == 1, "a malformed query: FORMERR");
        q[5] = 1;
        q[2] |= 0x80;
        ok(sbx_egress_dns_answer(d, q, n, a, sizeof a) == 0, "an answer is not answered");
        ok(sbx_egress_dns_answer(d, q, 5, a, sizeof a) == 0, "nor a runt");
        n = query(q, "x.example", 1);
        ok(sbx_egress_dns_answer(d, q, n - 3, a, sizeof a) == 12, "a cut question: FORMERR");

        uint32_t r;
        ok(sbx_egress_dns_map(d, "", &r) < 0, "an empty name is not mapped");
        sbx_egress_dns_free(d);
        return done_testing();
}
