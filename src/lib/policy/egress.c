/* egress.c — see egress.h. */
#include "policy/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "policy/policy-internal.h"

typedef struct host_entry {
        char name[254];
        int family;
        unsigned char addr[16];
} host_entry;

/* The rules, swapped whole by sbx_egress_set_rules() while connections are judged: a judge holds
 * a reference to the set it started with, so a swap never frees rules under it. */
typedef struct ruleset {
        unsigned refs;
        egress_rule *allow, *deny;
        char **allow_text, **deny_text;
        size_t n_allow, n_deny;
} ruleset;

struct sbx_egress {
        pthread_mutex_t lock;
        ruleset *rules;
        host_entry *hosts;
        size_t n_hosts;
        sbx_egress_resolver resolve;
        void *userdata;
};

static const char *const reason_names[_SBX_EGRESS_REASON_MAX] = {
        [SBX_EGRESS_ALLOWED] = "allowed",
        [SBX_EGRESS_DENIED_BY_RULE] = "denied_by_rule",
        [SBX_EGRESS_NO_MATCHING_ALLOW] = "no_matching_allow",
        [SBX_EGRESS_MALFORMED_HOST] = "malformed_host",
        [SBX_EGRESS_RESOLVES_TO_DENIED] = "resolves_to_denied",
        [SBX_EGRESS_UNRESOLVED] = "unresolved",
};

const char *sbx_egress_reason_to_string(sbx_egress_reason r) {
        return r >= 0 && r < _SBX_EGRESS_REASON_MAX ? reason_names[r] : NULL;
}

static void ruleset_unref(sbx_egress *g, ruleset *s) {
        if (!s)
                return;
        if (g)
                pthread_mutex_lock(&g->lock);
        bool last = --s->refs == 0;
        if (g)
                pthread_mutex_unlock(&g->lock);
        if (!last)
                return;
        free(s->allow);
        free(s->deny);
        for (size_t i = 0; s->allow_text && i < s->n_allow; i++)
                free(s->allow_text[i]);
        for (size_t i = 0; s->deny_text && i < s->n_deny; i++)
                free(s->deny_text[i]);
        free(s->allow_text);
        free(s->deny_text);
        free(s);
}

static ruleset *ruleset_ref(const sbx_egress *g) {
        sbx_egress *m = (sbx_egress *) g; /* the lock only: the rules are not changed here */
        pthread_mutex_lock(&m->lock);
        ruleset *s = m->rules;
        s->refs++;
        pthread_mutex_unlock(&m->lock);
        return s;
}

sbx_egress *sbx_egress_free(sbx_egress *g) {
        if (!g)
                return NULL;
        ruleset_unref(NULL, g->rules);
        pthread_mutex_destroy(&g->lock);
        free(g->hosts);
        free(g);
        return NULL;
}

static int compile(char *const *in, egress_rule **ret, char ***ret_text, size_t *ret_n, const char *what,
        sbx_error *e) {
        size_t n = 0;
        for (char *const *s = in; s && *s; s++)
                n++;
        *ret = calloc(n + 1, sizeof **ret);
        *ret_text = calloc(n + 1, sizeof **ret_text);
        if (!*ret || !*ret_text)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (egress_parse(in[i], &(*ret)[i]) < 0)
                        return sbx_error_set(e, EINVAL, "egress",
                                "%s rule \"%s\" does not parse (\"host\", \"*.domain\", \"host:port\", an "
                                "address or "
                                "a CIDR)",
                                what, in[i]);
                if (!((*ret_text)[i] = strdup(in[i])))
                        return -ENOMEM;
                *ret_n = i + 1;
        }
        return 0;
}

/* An address literal: "1.2.3.4", "::1", "[::1]". */
static bool parse_literal(const char *host, int *family, unsigned char addr[16]) {
        char buf[64];
        size_t l = strlen(host);
        if (l >= sizeof buf)
                return false;
        if (host[0] == '[' && l > 2 && host[l - 1] == ']') {
                memcpy(buf, host + 1, l - 2);
                buf[l - 2] = 0;
        } else
                memcpy(buf, host, l + 1);
        if (inet_pton(AF_INET, buf, addr) == 1) {
                *family = AF_INET;
                return true;
        }
        if (inet_pton(AF_INET6, buf, addr) == 1) {
                *family = AF_INET6;
                return true;
        }
        return false;
}

static int ruleset_new(char *const *allow, char *const *deny, ruleset **ret, sbx_error *e) {
        ruleset *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->refs = 1;
        int r = compile(allow, &s->allow, &s->allow_text, &s->n_allow, "network.egress", e);
        if (r >= 0)
                r = compile(deny, &s->deny, &s->deny_text, &s->n_deny, "network.egress_deny", e);
        if (r < 0) {
                ruleset_unref(NULL, s);
                return r;
        }
        *ret = s;
        return 0;
}

int sbx_egress_set_rules(sbx_egress *g, char *const *allow, char *const *deny, sbx_error *e) {
        ruleset *s = NULL;
        int r = ruleset_new(allow, deny, &s, e);
        if (r < 0)
                return r;
        pthread_mutex_lock(&g->lock);
        ruleset *old = g->rules;
        g->rules = s;
        pthread_mutex_unlock(&g->lock);
        ruleset_unref(g, old);
        return 0;
}

int sbx_egress_new(char *const *allow, char *const *deny, char *const *hosts, sbx_egress_resolver resolve,
        void *userdata, sbx_egress **ret, sbx_error *e) {
        sbx_egress *g = calloc(1, sizeof *g);
        if (!g)
                return -ENOMEM;
        pthread_mutex_init(&g->lock, NULL);
        g->resolve = resolve;
        g->userdata = userdata;
        int r = ruleset_new(allow, deny, &g->rules, e);
        size_t n = 0;
        for (char *const *s = hosts; s && *s; s++)
                n++;
        if (r >= 0 && !(g->hosts = calloc(n + 1, sizeof *g->hosts)))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *eq = strchr(hosts[i], '=');
                host_entry *h = &g->hosts[i];
                size_t l = eq ? (size_t) (eq - hosts[i]) : 0;
                if (!eq || l == 0 || l >= sizeof h->name || !parse_literal(eq + 1, &h->family, h->addr)) {
                        r = sbx_error_set(e, EINVAL, "network.hosts",
                                "network.hosts entry \"%s\" is not NAME=ADDRESS", hosts[i]);
                        break;
                }
                for (size_t k = 0; k < l; k++)
                        h->name[k] = (char) tolower((unsigned char) hosts[i][k]);
                h->name[l] = 0;
                g->n_hosts = i + 1;
        }
        if (r < 0) {
                sbx_egress_free(g);
                return r;
        }
        *ret = g;
        return 0;
}

static bool in_prefix(const unsigned char *a, const unsigned char *net, unsigned bits) {
        unsigned full = bits / 8, rest = bits % 8;
        if (memcmp(a, net, full) != 0)
                return false;
        return rest == 0 || ((a[full] ^ net[full]) & (unsigned char) (0xff << (8 - rest))) == 0;
}

bool sbx_egress_addr_denied(int family, const unsigned char *a) {
        static const struct {
                unsigned char net[4];
                unsigned bits;
        } v4[] = {
                {{0, 0, 0, 0}, 8}, /* "this network" */
                {{10, 0, 0, 0}, 8}, /* RFC 1918 */
                {{100, 64, 0, 0}, 10}, /* CGNAT */
                {{127, 0, 0, 0}, 8}, /* loopback */
                {{169, 254, 0, 0}, 16}, /* link-local, with the cloud metadata address */
                {{172, 16, 0, 0}, 12}, /* RFC 1918 */
                {{192, 0, 0, 0}, 24}, /* IETF protocol assignments */
                {{192, 168, 0, 0}, 16}, /* RFC 1918 */
                {{198, 18, 0, 0}, 15}, /* benchmarking: the proxy's own synthetic addresses */
                {{224, 0, 0, 0}, 4}, /* multicast */
                {{240, 0, 0, 0}, 4}, /* reserved, broadcast */
        };
        if (family == AF_INET) {
                for (size_t i = 0; i < ELEMENTSOF(v4); i++)
                        if (in_prefix(a, v4[i].net, v4[i].bits))
                                return true;
                return false;
        }
        if (family != AF_INET6)
                return true;
        static const unsigned char unspec[16] = {0}, loop[16] = {[15] = 1},
                                   mapped[12] = {[10] = 0xff, [11] = 0xff},
                                   ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54};
        if (memcmp(a, unspec, 16) == 0 || memcmp(a, loop, 16) == 0 || memcmp(a, ec2, 16) == 0)
                return true;
        if (memcmp(a, mapped, 12) == 0) /* ::ffff:a.b.c.d: judged as the IPv4 address */
                return sbx_egress_addr_denied(AF_INET, a + 12);
        return (a[0] & 0xfe) == 0xfc /* unique-local fc00::/7 */ ||
               (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) /* fe80::/10 */
               || a[0] == 0xff /* multicast */;
}

/* The first rule in list covering want; NULL when none does. */
static const char *covering(const egress_rule *list, char *const *text, size_t n, const egress_rule *want) {
        for (size_t i = 0; i < n; i++)
                if (egress_covers(&list[i], want))
                        return text[i];
        return NULL;
}

static int system_resolve(const char *name, sbx_egress_verdict *v) {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        int r = getaddrinfo(name, NULL, &hints, &ai);
        if (r != 0)
                return r == EAI_NONAME || r == EAI_NODATA ? -ENOENT : -EIO;
        for (struct addrinfo *p = ai; p && v->n_addrs < SBX_EGRESS_ADDRS_MAX; p = p->ai_next) {
                if (p->ai_family == AF_INET) {
                        v->addrs[v->n_addrs].family = AF_INET;
                        memcpy(v->addrs[v->n_addrs++].addr, &((struct sockaddr_in *) p->ai_addr)->sin_addr,
                                4);
                } else if (p->ai_family == AF_INET6) {
                        v->addrs[v->n_addrs].family = AF_INET6;
                        memcpy(v->addrs[v->n_addrs++].addr, &((struct sockaddr_in6 *) p->ai_addr)->sin6_addr,
                                16);
                }
        }
        freeaddrinfo(ai);
        return v->n_addrs ? 0 : -ENOENT;
}

static void verdict(sbx_egress_verdict *v, sbx_egress_reason r, const char *rule, const char *fmt, ...)
        _printf_(4, 5);
static void verdict(sbx_egress_verdict *v, sbx_egress_reason r, const char *rule, const char *fmt, ...) {
        v->reason = r;
        snprintf(v->rule, sizeof v->rule, "%s", rule ? rule : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->why, sizeof v->why, fmt, ap);
        va_end(ap);
}

static void judge(const sbx_egress *g, const ruleset *s, const char *host, unsigned port, bool resolve,
        sbx_egress_verdict *v) {
        *v = (sbx_egress_verdict){0};
        egress_rule want = {.port = port};
        if (!host || port == 0 || port > 65535) {
                verdict(v, SBX_EGRESS_MALFORMED_HOST, NULL, "no host, or no port from 1 to 65535");
                return;
        }
        if (parse_literal(host, &want.family, want.addr)) {
                want.kind = EGRESS_ADDR;
                want.prefix = want.family == AF_INET ? 32 : 128;
                const char *a = covering(s->allow, s->allow_text, s->n_allow, &want);
                const char *d = a ? NULL : covering(s->deny, s->deny_text, s->n_deny, &want);
                if (!a) {
                        verdict(v, d ? SBX_EGRESS_DENIED_BY_RULE : SBX_EGRESS_NO_MATCHING_ALLOW, d,
                                d ? "%s:%u is denied by the rule \"%s\"" : "no egress rule allows %s:%u",
                                host, port, d ? d : "");
                        return;
                }
                /* an address rule names it: the always-denied ranges too, on purpose */
                v->n_addrs = 1;
                v->addrs[0].family = want.family;
                memcpy(v->addrs[0].addr, want.addr, 16);
                verdict(v, SBX_EGRESS_ALLOWED, a, "allowed by \"%s\"", a);
                return;
        }
        if (strchr(host, ':') || egress_parse(host, &want) < 0 || want.kind != EGRESS_HOST ||
                strlen(host) > 253) {
                verdict(v, SBX_EGRESS_MALFORMED_HOST, NULL, "\"%.200s\" is not a host name", host);
                return;
        }
        want.port = port;
        const char *a = covering(s->allow, s->allow_text, s->n_allow, &want);
        const char *d = a ? NULL : covering(s->deny, s->deny_text, s->n_deny, &want);
        if (!a) {
                verdict(v, d ? SBX_EGRESS_DENIED_BY_RULE : SBX_EGRESS_NO_MATCHING_ALLOW, d,
                        d ? "%s:%u is denied by the rule \"%s\"" : "no egress rule allows %s:%u", want.host,
                        port, d ? d : "");
                return;
        }
        if (!resolve) {
                verdict(v, SBX_EGRESS_ALLOWED, a, "allowed by \"%s\" (before resolution)", a);
                return;
        }
        for (size_t i = 0; i < g->n_hosts; i++)
                if (streq(g->hosts[i].name, want.host)) { /* the site's own map: it passes */
                        v->n_addrs = 1;
                        v->addrs[0].family = g->hosts[i].family;
                        memcpy(v->addrs[0].addr, g->hosts[i].addr, 16);
                        verdict(v, SBX_EGRESS_ALLOWED, a, "allowed by \"%s\" (network.hosts)", a);
                        return;
                }
        int r = g->resolve ? g->resolve(want.host, v, g->userdata) : system_resolve(want.host, v);
        if (r < 0 || v->n_addrs == 0) {
                v->n_addrs = 0;
                verdict(v, SBX_EGRESS_UNRESOLVED, a, "%s has no address (%s)", want.host,
                        r == -ENOENT ? "no such name" : "the resolver failed");
                return;
        }
        for (size_t i = 0; i < v->n_addrs; i++)
                if (sbx_egress_addr_denied(v->addrs[i].family, v->addrs[i].addr)) {
                        char text[INET6_ADDRSTRLEN] = "";
                        inet_ntop(v->addrs[i].family, v->addrs[i].addr, text, sizeof text);
                        v->n_addrs = 0;
                        verdict(v, SBX_EGRESS_RESOLVES_TO_DENIED, a,
                                "%s resolves to %s, in a range no name may lead to (loopback, private, "
                                "link-local "
                                "or metadata)",
                                want.host, text);
                        return;
                }
        verdict(v, SBX_EGRESS_ALLOWED, a, "allowed by \"%s\"", a);
}

void sbx_egress_judge(const sbx_egress *g, const char *host, unsigned port, sbx_egress_verdict *v) {
        ruleset *s = ruleset_ref(g);
        judge(g, s, host, port, true, v);
        ruleset_unref((sbx_egress *) g, s);
}

void sbx_egress_match(const sbx_egress *g, const char *host, unsigned port, sbx_egress_verdict *v) {
        ruleset *s = ruleset_ref(g);
        judge(g, s, host, port, false, v);
        ruleset_unref((sbx_egress *) g, s);
}
