/* test-egress.c — the egress judge (policy/egress.h): every reason, names and wildcards with and
 * without ports, address rules naming denied ranges, the policy's host map passing, names that
 * resolve into denied ranges refused, allow beating deny, malformed hosts, and the always-denied
 * ranges themselves. A fake resolver stands in for DNS. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/egress.h"
#include "tap.h"

#define S(x) ((char *) (x))

/* names → one address: what a DNS server would answer */
static int fake_resolve(const char *name, sbx_egress_verdict *v, void *ud) {
        static const char *const map[][2] = {{"pypi.org", "151.101.0.223"},
                {"files.pythonhosted.org", "2a04:4e42::223"}, {"localhost", "127.0.0.1"},
                {"evil.example.com", "169.254.169.254"}, {"inner.example.com", "10.1.2.3"},
                {"api.github.com", "140.82.112.6"}, {"raw.githubusercontent.com", "185.199.108.133"},
                {"v6local.example.com", "fd00::1"}};
        (void) ud;
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
                if (strcmp(map[i][0], name) == 0) {
                        int f = strchr(map[i][1], ':') ? AF_INET6 : AF_INET;
                        v->addrs[0].family = f;
                        inet_pton(f, map[i][1], v->addrs[0].addr);
                        v->n_addrs = 1;
                        return 0;
                }
        return -ENOENT;
}

static void judge(const sbx_egress *g, const char *host, unsigned port, sbx_egress_reason want,
        const char *rule, const char *name) {
        sbx_egress_verdict v;
        sbx_egress_judge(g, host, port, &v);
        is_str(sbx_egress_reason_to_string(v.reason), sbx_egress_reason_to_string(want), "%s: %s", name,
                v.why);
        if (rule)
                is_str(v.rule, rule, "%s: the rule", name);
        if (want == SBX_EGRESS_ALLOWED)
                ok(v.n_addrs > 0, "%s: somewhere to connect", name);
        else
                ok(v.n_addrs == 0 && v.why[0], "%s: nowhere to connect, and why", name);
}

static bool denied(const char *text) {
        unsigned char a[16];
        int f = strchr(text, ':') ? AF_INET6 : AF_INET;
        inet_pton(f, text, a);
        return sbx_egress_addr_denied(f, a);
}

int main(void) {
        char *allow[] = {S("pypi.org"), S("*.pythonhosted.org:443"), S("10.20.0.0/16:5432"), S("localhost"),
                S("evil.example.com"), S("api.github.com"), S("[::1]:8080"), S("service.test"),
                S("v6local.example.com"), NULL};
        char *deny[] = {S("*.githubusercontent.com"), S("api.github.com"), S("203.0.113.0/24"), NULL};
        char *hosts[] = {S("service.test=127.0.0.1"), S("PyPI.org=151.101.64.223"), NULL};
        sbx_egress *g = NULL;
        sbx_error e = {0};
        ok(sbx_egress_new(allow, deny, hosts, fake_resolve, NULL, &g, &e) == 0 && g, "the rules compile");

        judge(g, "pypi.org", 443, SBX_EGRESS_ALLOWED, "pypi.org", "an exact name");
        judge(g, "PYPI.ORG", 80, SBX_EGRESS_ALLOWED, "pypi.org", "names are case-insensitive, any port");
        judge(g, "files.pythonhosted.org", 443, SBX_EGRESS_ALLOWED, "*.pythonhosted.org:443",
                "a wildcard with its port");
        judge(g, "files.pythonhosted.org", 80, SBX_EGRESS_NO_MATCHING_ALLOW, "", "a wildcard's other port");
        judge(g, "pythonhosted.org", 443, SBX_EGRESS_NO_MATCHING_ALLOW, NULL,
                "a wildcard does not cover the domain itself");
        judge(g, "example.org", 443, SBX_EGRESS_NO_MATCHING_ALLOW, NULL, "a name no rule names");
        judge(g, "10.20.3.4", 5432, SBX_EGRESS_ALLOWED, "10.20.0.0/16:5432",
                "an address rule names a private range");
        judge(g, "10.20.3.4", 22, SBX_EGRESS_NO_MATCHING_ALLOW, NULL, "...on its port only");
        judge(g, "10.21.0.1", 5432, SBX_EGRESS_NO_MATCHING_ALLOW, NULL, "...in its range only");
        judge(g, "[::1]", 8080, SBX_EGRESS_ALLOWED, "[::1]:8080", "a bracketed IPv6 literal");
        judge(g, "::1", 8080, SBX_EGRESS_ALLOWED, "[::1]:8080", "a bare IPv6 literal");
        judge(g, "localhost", 80, SBX_EGRESS_RESOLVES_TO_DENIED, "localhost",
                "an allowed name resolving to loopback is refused");
        judge(g, "evil.example.com", 80, SBX_EGRESS_RESOLVES_TO_DENIED, NULL,
                "...or to the metadata address");
        judge(g, "v6local.example.com", 80, SBX_EGRESS_RESOLVES_TO_DENIED, NULL,
                "...or to a unique-local address");
        judge(g, "service.test", 8000, SBX_EGRESS_ALLOWED, "service.test",
                "the policy's host map passes, loopback too");
        judge(g, "pypi.org", 443, SBX_EGRESS_ALLOWED, NULL, "the host map wins over DNS");
        sbx_egress_verdict v;
        sbx_egress_judge(g, "pypi.org", 443, &v);
        char text[64] = "";
        inet_ntop(v.addrs[0].family, v.addrs[0].addr, text, sizeof text);
        is_str(text, "151.101.64.223", "...its address (the map is matched case-insensitively)");
        judge(g, "api.github.com", 443, SBX_EGRESS_ALLOWED, "api.github.com", "allow beats deny");
        judge(g, "raw.githubusercontent.com", 443, SBX_EGRESS_DENIED_BY_RULE, "*.githubusercontent.com",
                "a deny rule");
        judge(g, "203.0.113.9", 443, SBX_EGRESS_DENIED_BY_RULE, "203.0.113.0/24", "a deny rule by CIDR");
        judge(g, "nope.invalid", 443, SBX_EGRESS_NO_MATCHING_ALLOW, NULL,
                "not allowed: not resolved either");
        char *allow2[] = {S("nope.invalid"), NULL};
        sbx_egress *g2 = NULL;
        ok(sbx_egress_new(allow2, NULL, NULL, fake_resolve, NULL, &g2, &e) == 0, "a second set of rules");
        judge(g2, "nope.invalid", 443, SBX_EGRESS_UNRESOLVED, NULL, "an allowed name without an address");
        /* the rules replaced while it runs (updateNetwork): the new set judges from now on */
        char *allow3[] = {S("pypi.org"), NULL}, *deny3[] = {S("nope.invalid"), NULL};
        ok(sbx_egress_set_rules(g2, allow3, deny3, &e) == 0, "the rules are replaced");
        judge(g2, "nope.invalid", 443, SBX_EGRESS_DENIED_BY_RULE, "nope.invalid",
                "the old allow rule is gone, the new deny rule names it");
        judge(g2, "pypi.org", 443, SBX_EGRESS_ALLOWED, "pypi.org", "the new allow rule allows");
        char *bad3[] = {S("not a rule"), NULL};
        ok(sbx_egress_set_rules(g2, NULL, bad3, &e) == -EINVAL && strstr(e.message, "egress_deny"),
                "a deny rule that does not parse is refused, naming the key: %s", e.message);
        judge(g2, "pypi.org", 443, SBX_EGRESS_ALLOWED, "pypi.org", "and the rules before it stay");
        sbx_egress_free(g2);
        static const char *const bad[] = {
                "", "a b", "exa_mple..com", "*.pypi.org", "a:b", "-x.com", "x.com.", "http://x.com", "x/y"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                judge(g, bad[i], 443, SBX_EGRESS_MALFORMED_HOST, NULL, bad[i][0] ? bad[i] : "an empty host");
        judge(g, "pypi.org", 0, SBX_EGRESS_MALFORMED_HOST, NULL, "port 0");
        judge(g, "pypi.org", 65536, SBX_EGRESS_MALFORMED_HOST, NULL, "port 65536");
        judge(g, NULL, 443, SBX_EGRESS_MALFORMED_HOST, NULL, "no host");

        static const char *const no[] = {"127.0.0.1", "127.255.0.9", "10.0.0.1", "172.16.0.1",
                "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
                "255.255.255.255", "198.18.0.1", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1",
                "ff02::1", "::ffff:127.0.0.1", "::ffff:10.1.1.1", "fd00:ec2::254"};
        for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
                ok(denied(no[i]), "%s is always denied", no[i]);
        static const char *const yes[] = {"1.1.1.1", "172.32.0.1", "172.15.255.255", "151.101.0.223",
                "2a04:4e42::223", "::ffff:8.8.8.8", "192.169.0.1", "100.128.0.1"};
        for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
                ok(!denied(yes[i]), "%s is not", yes[i]);

        char *badrule[] = {S("not a rule"), NULL};
        sbx_egress *g3 = NULL;
        ok(sbx_egress_new(badrule, NULL, NULL, NULL, NULL, &g3, &e) == -EINVAL &&
                        strstr(e.message, "not a rule"),
                "a rule that does not parse is refused, named: %s", e.message);
        char *badhost[] = {S("x=not-an-address"), NULL};
        ok(sbx_egress_new(NULL, NULL, badhost, NULL, NULL, &g3, &e) == -EINVAL &&
                        strstr(e.message, "x=not-an-address"),
                "a host map entry that is not NAME=ADDRESS: %s", e.message);
        is_str(sbx_egress_reason_to_string(_SBX_EGRESS_REASON_MAX), NULL, "no name past the last reason");

        /* the rules alone (the transparent path's check at connect()): no resolution */
        sbx_egress_verdict mv;
        sbx_egress_match(g, "evil.example.com", 443, &mv);
        ok(mv.reason == SBX_EGRESS_ALLOWED && mv.n_addrs == 0,
                "match: an allowed name whose address is denied passes the rules (the proxy refuses it)");
        sbx_egress_match(g, "other.example.org", 443, &mv);
        ok(mv.reason == SBX_EGRESS_NO_MATCHING_ALLOW, "match: a name no rule allows");
        sbx_egress_match(g, "api.github.com", 443, &mv);
        ok(mv.reason == SBX_EGRESS_ALLOWED, "match: allow beats deny, as the judge has it");
        sbx_egress_match(g, "203.0.113.5", 80, &mv);
        ok(mv.reason == SBX_EGRESS_DENIED_BY_RULE, "match: an address a deny rule covers");
        sbx_egress_match(g, "bad host", 80, &mv);
        ok(mv.reason == SBX_EGRESS_MALFORMED_HOST, "match: a malformed host");
        sbx_egress_free(g);
        return done_testing();
}
