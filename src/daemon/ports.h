/* ports.h — a sandbox's ports through serve (DESIGN.md, "Ports, PTYs, sessions"): a server
 * listening inside on 127.0.0.1:PORT is reached by path (ANY /v1/sandboxes/ID/ports/PORT/…), by
 * Host with `serve --domain D` (PORT-ID.D), or by a signed path (/v1/p/TOKEN/…) that carries its
 * expiry. HTTP and WebSocket are proxied; the connection inside is made by the sandbox itself
 * (SBX_EXEC_CONNECT), in its own network and under its fences. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes.h"

struct MHD_Connection;
struct MHD_Response;

/* GET /v1/sandboxes/ID/tunnel/PORT with this Upgrade: after the 101, the connection is a raw TCP
 * pipe to 127.0.0.1:PORT inside (sandboxer port-forward). */
#define SBX_PORTS_TUNNEL "sandboxer-tcp"

/* E2B's in-sandbox agent: PORT-ID.D with this port is envd (the compat surface), not a proxy. */
#define SBX_PORTS_ENVD_PORT 49983u

/* Whether the request is for a sandbox's port; if so it is answered: *ret_code and *ret_resp
 * (NULL: close the connection). who is the caller http.c authenticated, or NULL; without one,
 * a preview token (X-Sandboxer-Preview-Token, Daytona's x-daytona-preview-token, E2B's
 * e2b-traffic-access-token), a valid signed path or a sandbox whose ports are public stands for
 * it. raw_uri is the request's target as sent (path and query). */
bool sbx_ports_handle(sbx_mgr *m, struct MHD_Connection *c, const char *method, const char *path,
        const char *raw_uri, const char *body, size_t len, const sbx_caller *who, unsigned *ret_code,
        struct MHD_Response **ret_resp);

/* The domain of Host routing (serve --domain), or NULL. */
const char *sbx_ports_domain(sbx_mgr *m);
/* Host "PORT-ID.DOMAIN[:N]" → its port and sandbox id; false when it is not one. */
bool sbx_ports_host_target(sbx_mgr *m, const char *host, unsigned *ret_port, char ret_id[static 32]);

/* A sandbox's preview token (32 hex digits, derived from the server's port key: the same across
 * restarts): it stands for the sandbox's owner on its ports. false when there is no port key. */
bool sbx_ports_preview_token(sbx_mgr *m, const char *id, char ret[static 33]);
/* A signed token for port of sandbox id, valid until exp (unix seconds): "ID.PORT.EXP.MAC";
 * the path /v1/p/TOKEN/ reaches the port without other credentials until then. */
bool sbx_ports_sign(sbx_mgr *m, const char *id, unsigned port, int64_t exp, char *buf, size_t size);
/* Revoke a signed token before its expiry (kept in memory until then). 0, or -EINVAL when it is
 * not a valid token of sandbox id. */
int sbx_ports_revoke(sbx_mgr *m, const char *id, const char *token);
/* A preview link of a sandbox's port for the caller (its tenant's sandbox): {sandbox_id, port,
 * url, token} and, with expires_s > 0, {signed_url, signed_token, expires_at}; url is
 * http://PORT-ID.DOMAIN/ with --domain, else by path on host (the request's Host). NULL with
 * *ret_code and the error body in *ret_err. */
json_t *sbx_ports_preview(sbx_mgr *m, const sbx_caller *who, const char *id, long port, double expires_s,
        const char *host, unsigned *ret_code, json_t **ret_err);
/* Make a sandbox's ports reachable without credentials (E2B's allowPublicTraffic), or not. */
void sbx_ports_set_public(sbx_mgr *m, const char *id, bool pub);
