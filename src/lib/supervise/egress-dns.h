/* egress-dns.h — the sandbox's resolver, run by its supervisor (DESIGN.md, "Network": nothing
 * inside resolves names itself). The sandbox's /etc/resolv.conf names 127.0.0.1; the spawn makes
 * that UDP socket (port 53) in the sandbox's own network namespace and hands it out, and this
 * answers on it from outside: each name gets a synthetic address of its own from 198.18.0.0/15
 * (the benchmarking range, never a real destination), kept for the sandbox's life, so that a
 * connect() to it — redirected to the egress proxy — is judged and resolved by name, by the
 * proxy, outside. Nothing is resolved here: a denied name gets an address too, and its
 * connection is refused (and recorded) with the name. A (IN) questions get the address, AAAA and
 * the rest an empty answer (clients fall back to IPv4), a name that is not a host name NXDOMAIN. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sbx_egress_dns sbx_egress_dns;

int sbx_egress_dns_new(sbx_egress_dns **ret);
/* Stops the server first. */
sbx_egress_dns *sbx_egress_dns_free(sbx_egress_dns *d);

/* Answer on fd (a bound UDP socket, taken) in a thread of its own. 0 or -errno. */
int sbx_egress_dns_start(sbx_egress_dns *d, int fd);
void sbx_egress_dns_stop(sbx_egress_dns *d);
bool sbx_egress_dns_started(const sbx_egress_dns *d);

/* The address for name (allocated now if new): 0 with *ret (host order), or -ENOSPC / -EINVAL. */
int sbx_egress_dns_map(sbx_egress_dns *d, const char *name, uint32_t *ret);
/* The name an address (host order) was handed out for: true and name filled. */
bool sbx_egress_dns_unmap(sbx_egress_dns *d, uint32_t addr, char *name, size_t size);

/* The answer to one query (what the server sends): its length, or 0 to send nothing. */
size_t sbx_egress_dns_answer(
        sbx_egress_dns *d, const unsigned char *q, size_t n, unsigned char *out, size_t size);

#define SBX_EGRESS_DNS_BASE 0xC6120000u /* 198.18.0.0 */
#define SBX_EGRESS_DNS_MASK 0xFFFE0000u /* /15 */
