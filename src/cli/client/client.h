/* client.h — what the API client verbs share (src/cli/client/): the connection options, the HTTP
 * client to `sandboxer serve` (libcurl: a unix socket, or TCP with a bearer token; bodies
 * collected or streamed to a sink as they come) and helpers. One file per verb:
 * create.c, ls.c (ls, and get/extend/recreate/destroy), exec.c, cp.c, events.c; main.c picks. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/http.h"

typedef struct conn_opts {
        sbx_listen_addr addr;
        const char *addr_text;
        const char *token;
        bool json;
} conn_opts;

/* The body goes to sink(data, n) as it arrives (streams), or is collected. */
typedef void (*body_sink)(void *ud, const char *data, size_t n);

typedef struct response {
        int status;
        char *body;
        size_t len;
} response;

enum { O_SERVER = 0x200, O_TOKEN, O_JSON };
#define CONN_OPTIONS                                                                                        \
        {"server", required_argument, NULL, O_SERVER}, {"token", required_argument, NULL, O_TOKEN},         \
                {"json", no_argument, NULL, O_JSON}, {                                                      \
                "help", no_argument, NULL, 'h'                                                              \
        }
extern const char conn_help[];

int client_http(const conn_opts *o, const char *method, const char *path, const char *ctype,
        const char *extra_header, const void *body, size_t len, response *resp, body_sink sink, void *ud);
/* The answer read from fd, once the request is sent (client_http's second half, apart for
 * fuzz/fuzz-http-response.c): the status line, the headers, then the body (chunked or
 * Content-Length, else to the end) to sink when the status is < 300, else collected into resp.
 * 0, or -EPROTO (said on stderr) when it is not HTTP, -ENOMEM. fd is left open. */
int client_http_response(int fd, response *resp, body_sink sink, void *ud);
int client_api_error(const response *r);
json_t *client_body_json(const response *r);
/* A local file (- standard input) read whole into data; written whole from r's body (- standard
 * output). 0, or -1 said on stderr as "VERB: ...". */
int client_read_local(const char *verb, const char *local, response *data);
int client_write_local(const char *verb, const char *local, const response *r);
/* A body_sink that appends to the response (ud) it is given. */
void client_collect(void *ud, const char *d, size_t n);
int conn_option(conn_opts *o, int c, const char *arg);
int conn_finish(conn_opts *o);
bool client_id_ok(const char *s);
void client_urlenc(const char *s, char *out, size_t size);
void client_print_json(json_t *j);

/* the verbs, argv[0] their name; each returns the exit status */
int client_create(int argc, char **argv);
int client_ls(int argc, char **argv);
int client_simple(const char *verb, int argc, char **argv);
/* snapshot ID | snapshot ls | snapshot rm SNAPSHOT, and restore SNAPSHOT (snap.c) */
int client_snapshot(const char *verb, int argc, char **argv);
/* volume create|ls|rm|cp|mkdir (volume.c) */
int client_volume(int argc, char **argv);
/* host add|ls|rm (host.c) */
int client_host(int argc, char **argv);
int client_estimate(int argc, char **argv);
/* credits [grant|ledger], meters (credits.c) */
int client_credits(int argc, char **argv);
int client_meters(int argc, char **argv);
/* node, peer add|ls|rm, deal (deal.c) */
int client_node(int argc, char **argv);
int client_peer(int argc, char **argv);
int client_deal(int argc, char **argv);
int client_exec(int argc, char **argv);
/* exec --tty (tty.c): body holds argv and the rest; POST it with tty, attach, relay. */
/* A socket to the server (unix or TCP, as o says): the fd, or -errno. */
int client_connect(const conn_opts *o);
/* GET path on a new connection asking for an upgrade (headers: the Upgrade line and its own,
 * each ending in CRLF; the token added): the fd once the server answered 101, what it sent past
 * its head in buf[*ret_off, *ret_len); else -errno, or -EPROTO with the server's answer in
 * buf[0, *ret_len) (NUL-terminated). */
int client_upgrade(const conn_opts *o, const char *path, const char *headers, char *buf, size_t size,
        size_t *ret_off, size_t *ret_len);
int client_port_forward(int argc, char **argv);
int client_exec_tty(const conn_opts *o, const char *id, json_t *body);
int client_cp(int argc, char **argv);
int client_events(int argc, char **argv);
