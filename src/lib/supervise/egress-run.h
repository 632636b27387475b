/* egress-run.h — one sandbox's egress proxy as its supervisor runs it (DESIGN.md, "Network:
 * egress allowlist and host services"): the rules compiled from the profile's network.egress and
 * the policy's network.hosts, the proxy serving the listening socket made in the sandbox's own
 * network namespace (its 127.0.0.1:3128, handed out by the spawn before the init runs), and what
 * it saw, kept for the supervisor's loop:
 *
 * - each refusal is queued and the event fd becomes readable: the loop records it as a
 *   NetworkAccessViolation at once (and ends the sandbox under on_violation: kill);
 * - each allowed connection, when it ends, is kept with its bytes and duration (the first
 *   SBX_REPORT_MAX_CONNS; the rest counted) and goes into the report's `egress` at the end.
 *
 * The proxy's threads call in under the run's lock; the loop takes from it the same way. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "policy/egress.h"
#include <sys/socket.h>
#include "report/report.h"

#define SBX_EGRESS_PROXY_PORT 3128
#define SBX_EGRESS_DNS_PORT 53

/* A connection to the proxy on a unix socket comes from the microvm backend's relay
 * (microvm-net.c), which carries it from the guest; in a persistent sandbox it starts with 8 bytes
 * no guest can write: this magic (u32) and the host pid (u32) that stands for the guest exec it
 * came from (0: the sandbox's own), read here in place of the walk a TCP client is found by. */
#define SBX_EGRESS_OWNER_MAGIC 0x4f584253u /* "SBXO" */

typedef struct sbx_egress_refusal {
        char host[256];
        unsigned port;
        const char *via; /* the protocol: "connect", "http", "socks5" */
        sbx_egress_reason reason;
        char rule[300];
        uint64_t at_ns; /* CLOCK_MONOTONIC */
        bool recorded; /* handed to the sink already: the loop only acts on it (kill) */
} sbx_egress_refusal;

/* A refusal's evidence, as a NetworkAccessViolation's detail: host, port, via ("proxy"),
 * protocol, reason, rule (pointing into f). Returns the count. */
#define SBX_EGRESS_DETAILS 6
size_t sbx_egress_refusal_details(const sbx_egress_refusal *f, sbx_detail d[SBX_EGRESS_DETAILS]);

/* A persistent sandbox's routing: owner(pid) names the exec the connecting process belongs to
 * (0: the sandbox's own), asked at each connection's start; sink(owner, …) gets each
 * connection's end — let through (allowed) or refused — from the proxy's threads. */
typedef uint64_t (*sbx_egress_owner_fn)(void *userdata, int pid);
typedef void (*sbx_egress_sink_fn)(void *userdata, uint64_t owner, const sbx_report_conn *allowed,
        const sbx_egress_refusal *refused, const sbx_report_request *request);

typedef struct sbx_egress_run sbx_egress_run;

/* allow: network.egress; deny: deny rules (E2B's denyOut), may be NULL; hosts: the policy's
 * network.hosts ("name=address"), may be NULL. -EINVAL naming a rule that does not parse. */
int sbx_egress_run_new(
        char *const *allow, char *const *deny, char *const *hosts, sbx_egress_run **ret, sbx_error *e);
/* The profile's network.services ("name\ttarget\tport\tenv\tprotocol"): each served on the
 * socket the spawn makes at its port (which 2 + its index). */
int sbx_egress_run_services(sbx_egress_run *r, char *const *services, sbx_error *e);
/* The sandbox's rules, replaced while it runs (sbx_egress_set_rules). */
int sbx_egress_run_set_rules(sbx_egress_run *r, char *const *allow, char *const *deny, sbx_error *e);
/* Whether port is one of the services' (a connect to 127.0.0.1:port inside is the way to it). */
bool sbx_egress_run_service_port(const sbx_egress_run *r, unsigned port);
sbx_egress_run *sbx_egress_run_free(sbx_egress_run *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_egress_run *, sbx_egress_run_free);

/* Before the start: route each connection by the process that made it (a descendant of
 * init_pid, the sandbox's init as the host sees it, found by the client's socket) through owner
 * and sink instead of keeping it. */
void sbx_egress_run_route(
        sbx_egress_run *r, int init_pid, sbx_egress_owner_fn owner, sbx_egress_sink_fn sink, void *userdata);
/* route is also where a proxy on the host's loopback (sbx_egress_run_on_host) starts: called
 * once the init runs, with owner and sink NULL for a sandbox that is not persistent. */

/* The landlock backend's proxy: no network namespace of its own, so it listens on the host's
 * loopback (listen_fd: bound to 127.0.0.1 and a port the kernel chose, listening; taken, also on
 * failure) where anything of the host could reach it, and every connection must present the
 * credential sbx:pass (proxy-auth.h; pass SBX_PROXY_SECRET_LEN characters, copied). No resolver
 * and no transparent path there: connects elsewhere are refused as the seccomp listener refuses
 * them. The port (> 0), or -errno. */
int sbx_egress_run_on_host(sbx_egress_run *r, int listen_fd, const char *pass);
/* Where the proxy listens: "127.0.0.1:3128" inside the sandbox's namespace, or the host port. */
const char *sbx_egress_run_address(const sbx_egress_run *r);
/* Whether a connect() from inside to addr:port (IPv4, host order) is a way out the run serves:
 * the proxy, its resolver, a service; on the host's loopback none: a connect() to the proxy's
 * port is made by the supervisor (sbx_egress_run_transparent), never let through to the kernel,
 * which would read the address again (and Landlock's rule names the port only). */
bool sbx_egress_run_way_out(const sbx_egress_run *r, uint32_t addr, unsigned port);

/* Wait (up to timeout_ms) until the connections of owner have ended and reached the sink: an
 * exec's report is complete only then. */
void sbx_egress_run_settle(sbx_egress_run *r, uint64_t owner, int timeout_ms);

/* An eventfd, readable while refusals wait to be taken. */
int sbx_egress_run_event_fd(const sbx_egress_run *r);
/* Serve listen_fd (taken, also on failure). -EALREADY when one is served already. */
int sbx_egress_run_start(sbx_egress_run *r, int listen_fd);
bool sbx_egress_run_started(const sbx_egress_run *r);
/* Serve a socket the spawn made (SBX_INIT_MSG_EGRESS, taken): which 0 the proxy's listening one
 * (sbx_egress_run_start), 1 the resolver's UDP 127.0.0.1:53 (egress-dns.h), 2 + i service i's.
 * -EALREADY when served already. */
int sbx_egress_run_serve(sbx_egress_run *r, int which, int fd);

/* The transparent path (a connect() the seccomp listener caught): the rules' verdict on where it
 * goes, without resolution — addr (text) taken back to its name when the sandbox's resolver
 * handed it out, the name or address into host. */
void sbx_egress_run_check(
        sbx_egress_run *r, const char *addr, unsigned port, char *host, size_t size, sbx_egress_verdict *v);
/* ...and when allowed: connect fd (the process's own socket, a copy of it) to the proxy, which
 * then takes it to host:port. 0 or -errno. */
int sbx_egress_run_redirect(sbx_egress_run *r, int fd, const char *host, unsigned port);

/* On the host's loopback (sbx_egress_run_on_host) there is no transparent path: a connect() to
 * 127.0.0.1 and the proxy's port is made on the process's socket here (1, *err its result),
 * anything else is not ours (0).
 * All of the transparent path for one connect() the seccomp listener caught (the target sa as
 * read once from the caller's memory; the caller pid; its socket fd_num; the notification id,
 * checked with the listener after the socket is taken): 1 done — connected to the proxy, *err 0
 * or the -errno of the attempt; -1 refused by the rules, *refused filled (the caller records it
 * and answers ECONNREFUSED); 0 not ours (loopback, not TCP, the socket out of reach). */
int sbx_egress_run_transparent(sbx_egress_run *r, const struct sockaddr *sa, size_t len, int pid, int fd_num,
        int listener_fd, uint64_t notif_id, sbx_egress_refusal *refused, int *err);

/* One refusal more in the counts (one the caller recorded itself). */
void sbx_egress_run_count_refused(sbx_egress_run *r);

/* The refusals queued since the last call, up to max (the rest stay queued). */
size_t sbx_egress_run_take(sbx_egress_run *r, sbx_egress_refusal *out, size_t max);
/* Stop the proxy: the connections in flight end (and are kept). Idempotent. */
void sbx_egress_run_stop(sbx_egress_run *r);
/* Into the report: the proxy's address, the counts, the bytes, the connections (times relative to
 * start_ns). Stops the proxy first. */
int sbx_egress_run_to_report(sbx_egress_run *r, sbx_report *rep, uint64_t start_ns);
