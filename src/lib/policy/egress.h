/* egress.h — judging one outbound connection of a sandbox against its egress rules (DESIGN.md,
 * "Network: egress allowlist and host services"): what the egress proxy asks for each CONNECT,
 * each request with an absolute URI, each SOCKS5 request, before it connects anywhere.
 *
 * The rules are the profile's network.egress (allow) and, for the SDK surfaces that have them,
 * deny rules (E2B's denyOut): a connection an allow rule covers is allowed (allow beats deny, as
 * E2B orders them), else one a deny rule covers is denied_by_rule, else no_matching_allow. A name
 * is resolved by the proxy, never inside the sandbox: through the policy's network.hosts map
 * first (the site's own choice: it passes whatever the address), else the host's resolver, and
 * an address in an always-denied range (loopback, link-local with the cloud metadata addresses,
 * RFC 1918, CGNAT, unique-local, unspecified, multicast) is refused as resolves_to_denied — no
 * DNS answer leads around the list. An address literal is allowed only when an address rule
 * covers it, which is how a profile names a denied range on purpose ("10.20.0.0/16:5432"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

typedef enum sbx_egress_reason {
        SBX_EGRESS_ALLOWED,
        SBX_EGRESS_DENIED_BY_RULE,
        SBX_EGRESS_NO_MATCHING_ALLOW,
        SBX_EGRESS_MALFORMED_HOST,
        SBX_EGRESS_RESOLVES_TO_DENIED,
        SBX_EGRESS_UNRESOLVED, /* the name has no address (the proxy answers 502, not a violation) */
        _SBX_EGRESS_REASON_MAX,
} sbx_egress_reason;

/* "allowed", "denied_by_rule", "no_matching_allow", "malformed_host", "resolves_to_denied",
 * "unresolved". */
const char *sbx_egress_reason_to_string(sbx_egress_reason r);

#define SBX_EGRESS_ADDRS_MAX 8

typedef struct sbx_egress_verdict {
        sbx_egress_reason reason;
        char rule[300]; /* the rule that allowed or denied it; "" when none did */
        /* allowed: where to connect, in the resolver's order */
        size_t n_addrs;
        struct {
                int family; /* AF_INET, AF_INET6 */
                unsigned char addr[16];
        } addrs[SBX_EGRESS_ADDRS_MAX];
        char why[300]; /* a sentence for the refusal */
} sbx_egress_verdict;

typedef struct sbx_egress sbx_egress;

/* Resolve a name: up to max addresses into the verdict's addrs (n_addrs set); 0 or -errno.
 * NULL in sbx_egress_new: the host's resolver (getaddrinfo). For tests. */
typedef int (*sbx_egress_resolver)(const char *name, sbx_egress_verdict *v, void *userdata);

/* Compile the rules: allow and deny are egress rules ("host", "*.domain", "host:port",
 * "10.0.0.0/8", "[::1]:443"); hosts is the policy's name map as "name=address" strings. Each
 * may be NULL. -EINVAL naming a rule that does not parse. */
int sbx_egress_new(char *const *allow, char *const *deny, char *const *hosts, sbx_egress_resolver resolve,
        void *userdata, sbx_egress **ret, sbx_error *e);
sbx_egress *sbx_egress_free(sbx_egress *g);

/* Replace the allow and deny rules (a running sandbox's network changed: E2B's updateNetwork):
 * the connections judged from now on see the new rules; those open stay open. 0, or -EINVAL
 * naming a rule that does not parse (the old rules stay). Safe while other threads judge. */
int sbx_egress_set_rules(sbx_egress *g, char *const *allow, char *const *deny, sbx_error *e);

/* The verdict on host:port (host a name, an IPv4 address or an IPv6 one, bracketed or not). */
void sbx_egress_judge(const sbx_egress *g, const char *host, unsigned port, sbx_egress_verdict *ret);

/* The rules alone, no resolution: what can be said at once, without blocking (the transparent
 * path's check at connect()); an allowed name has no addresses yet (the proxy resolves it). */
void sbx_egress_match(const sbx_egress *g, const char *host, unsigned port, sbx_egress_verdict *ret);

/* Whether an address is in one of the always-denied ranges (family AF_INET or AF_INET6). */
bool sbx_egress_addr_denied(int family, const unsigned char *addr);
