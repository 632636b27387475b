/* http.h — the control plane's HTTP server (libmicrohttpd): listeners, authentication (peer
 * uid on the unix socket, bearer tokens on TCP), routing and JSON errors. */
#pragma once

#include <stdbool.h>
#include <sys/un.h>

#include "basic/error.h"
#include "daemon/store.h"

typedef struct sbx_listen_addr {
        bool is_unix;
        char path[sizeof(((struct sockaddr_un *) 0)->sun_path)]; /* unix */
        char host[256]; /* TCP: literal or name */
        unsigned port; /* TCP */
} sbx_listen_addr;

/* Parse "unix:PATH" or "HOST:PORT" ("[V6]:PORT" for IPv6). -EINVAL with a message otherwise. */
int sbx_listen_addr_parse(const char *s, sbx_listen_addr *ret, sbx_error *e);
/* The default unix socket: RUNTIME_DIR/sandboxer.sock (see sbx_runtime_dir). */
int sbx_listen_addr_default(sbx_listen_addr *ret, sbx_error *e);

typedef struct sbx_http_server sbx_http_server;

/* A server answering from `store` (borrowed: must outlive the server). */
int sbx_http_server_new(sbx_store *store, sbx_http_server **ret);
/* The sandboxes behind /v1/sandboxes and /v1/events (borrowed). */
struct sbx_mgr;
void sbx_http_server_set_sandboxes(sbx_http_server *s, struct sbx_mgr *m);
/* TCP listeners opened after this serve HTTPS with this certificate (chain) and key, PEM files
 * (unix sockets stay plain). -EOPNOTSUPP when libmicrohttpd has no TLS; -EINVAL with e. */
int sbx_http_server_set_tls(sbx_http_server *s, const char *cert_file, const char *key_file, sbx_error *e);
/* Open a listener and start serving on it (one internal thread per listener). A unix socket
 * replaces a stale socket file (refusing if a server answers on it, -EADDRINUSE), is created
 * mode 0660 and removed again when the server is freed. */
int sbx_http_server_listen(sbx_http_server *s, const sbx_listen_addr *a, sbx_error *e);
/* Stop every listener, remove the sockets this server created, free. */
sbx_http_server *sbx_http_server_free(sbx_http_server *s);

/* A 101 to a WebSocket (Sec-WebSocket-Accept: accept; Sec-WebSocket-Protocol: protocol, if not
 * NULL): once upgraded, fn(ud, fd, bytes read past the head) runs on a thread of its own and the
 * connection is closed when it returns (fn owns ud). NULL on ENOMEM. */
struct MHD_Response;
/* The same for another protocol (Upgrade: upgrade): what follows the 101 is fn's. */
struct MHD_Response *sbx_http_upgrade_raw(
        void (*fn)(void *ud, int fd, const char *extra, size_t n), void *ud, const char *upgrade);
struct MHD_Response *sbx_http_upgrade_response(void (*fn)(void *ud, int fd, const char *extra, size_t n),
        void *ud, const char *accept, const char *protocol);
