/* egress-proxy.h — a sandbox's egress proxy (DESIGN.md, "Network: egress allowlist and host
 * services"): run by its supervisor, outside the sandbox, on a listening socket the sandbox
 * reaches (its 127.0.0.1:3128). Each connection speaks HTTP (CONNECT, or a request with an
 * absolute http:// URI) or SOCKS5 — the first byte tells which; each target is judged by the
 * sandbox's egress rules (policy/egress.h) before anything is connected, and every connection
 * is reported: an allowed one when it ends (bytes each way, duration), a refused one at once
 * (its reason and rule). A refusal is told apart from a network failure: HTTP 403 with a header
 * X-Sandboxer-Refused: REASON, SOCKS5 reply 2 ("not allowed by ruleset"); an allowed target that
 * cannot be reached is 502 / SOCKS5 reply 4 or 5. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/egress.h"

typedef struct sbx_egress_event {
        bool allowed;
        const char *host;
        unsigned port;
        const char *via; /* "connect", "http", "socks5", "transparent" */
        sbx_egress_reason reason;
        const char *rule; /* the rule that decided, "" none */
        const char *why; /* refused: the sentence the client got */
        /* allowed, at the end: bytes out of and into the sandbox, and how long it lasted */
        uint64_t bytes_up, bytes_down;
        double ms;
        bool unreachable; /* allowed, but nothing answered there (502 / SOCKS5 4, 5) */
        uint64_t owner; /* whose connection it is (the identify hook's answer), 0 unknown */
        /* a host service's proxy (sbx_egress_service_start): its name, and for http one request:
         * its method, target and the response's status (0 none: the service did not answer); a
         * tcp service's connection has method NULL */
        const char *service;
        const char *method, *path;
        int status;
} sbx_egress_event;

/* A host service (network.services): where its proxy connects each connection. */
typedef struct sbx_service_target {
        const char *name;
        const char *target; /* "unix:/path" or "host:port" */
        bool tcp; /* protocol tcp: connections and bytes traced; else http: each request */
} sbx_service_target;

/* Called from the proxy's threads (one per connection): serialize inside when it writes shared
 * state. */
typedef void (*sbx_egress_event_fn)(void *userdata, const sbx_egress_event *ev);

/* Optional hooks, called from a connection's thread. */
typedef struct sbx_egress_proxy_hooks {
        /* whose connection fd (the accepted socket) is — e.g. the exec of a persistent sandbox the
         * connecting process belongs to — asked before its request is read, while the client
         * still holds its end; 0 when unknown */
        uint64_t (*identify)(void *userdata, int fd);
        /* a transparent connection (a connect() the supervisor redirected here): where it was
         * going, by the client's port — true with host (a name or an address) and port filled,
         * and the connection is piped there once judged, with no request read */
        bool (*transparent)(void *userdata, int fd, char *host, size_t size, unsigned *port);
        /* an address the sandbox's resolver handed out for a name: the name (true) */
        bool (*unmap)(void *userdata, const char *addr, char *name, size_t size);
        /* a proxy others can reach (the host's loopback: the landlock backend): the credential each
         * connection must present (proxy-auth.h), else it is refused before anything is judged —
         * HTTP 407, SOCKS5 no acceptable method or a failed RFC 1929 status. NULL: none asked.
         * Borrowed: must outlive the proxy. */
        const char *user, *pass;
} sbx_egress_proxy_hooks;

typedef struct sbx_egress_proxy sbx_egress_proxy;

/* Serve on listen_fd (taken: closed at stop) with rules (borrowed: must outlive the proxy). 0, or
 * -errno when its thread cannot start. */
int sbx_egress_proxy_start(int listen_fd, const sbx_egress *rules, sbx_egress_event_fn fn,
        const sbx_egress_proxy_hooks *hooks, void *userdata, sbx_egress_proxy **ret);
/* A host service's proxy on listen_fd (taken): every connection goes to t's target (copied),
 * nothing is judged; each HTTP request (one per connection: "Connection: close" is added) or
 * each tcp connection is an event with service set. */
int sbx_egress_service_start(int listen_fd, const sbx_service_target *t, sbx_egress_event_fn fn,
        const sbx_egress_proxy_hooks *hooks, void *userdata, sbx_egress_proxy **ret);
/* Wait up to timeout_ms until no connection of owner is in flight (their events have come).
 * false on the timeout. */
bool sbx_egress_proxy_settle(sbx_egress_proxy *p, uint64_t owner, int timeout_ms);
/* Stop accepting, end the connections in flight (their events come), wait for their threads. */
sbx_egress_proxy *sbx_egress_proxy_stop(sbx_egress_proxy *p);
