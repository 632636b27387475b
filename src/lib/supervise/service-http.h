/* service-http.h — what a host service's proxy needs of HTTP and of its target (DESIGN.md,
 * "Network: egress allowlist and host services"): the request head read and rewritten for one
 * request per connection (so each request is one traced exchange), the response's status line,
 * and the target dialled (a unix socket or host:port). Apart from any proxy, to be tested and
 * fuzzed alone. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A request head in buf[0, n): 1 when whole (method, path — the request target, cut to fit —
 * and *head_len, through its empty line), 0 when more bytes are needed, -EINVAL when it is not an
 * HTTP/1.x request, -E2BIG past 64 KiB. */
int sbx_http_request_head(
        const char *buf, size_t n, char method[static 24], char path[static 512], size_t *head_len);

/* The head as the service takes it: Connection, Keep-Alive and Proxy-Connection dropped and
 * "Connection: close" added — unless it asks for an Upgrade (a WebSocket), which keeps its
 * Connection header and is traced as one exchange. A new string, its length in *ret_len; NULL on
 * ENOMEM. */
char *sbx_http_close_head(const char *buf, size_t head_len, size_t *ret_len);

/* The status code of a response's first line in buf[0, n): > 0 when the line is whole, 0 when
 * more is needed, -EINVAL when it is not "HTTP/1.x NNN". */
int sbx_http_status(const char *buf, size_t n);

/* Connect to a service target: "unix:/path" or "host:port" (a name resolved by the host, an
 * address, "[v6]:port"). A blocking socket, or -errno. */
int sbx_service_dial(const char *target);
