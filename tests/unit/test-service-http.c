/* test-service-http.c — what a host service's proxy needs of HTTP (supervise/service-http.h): the
 * request head parsed, rewritten to end the connection after the answer (an Upgrade kept), the
 * answer's status line, and dialling a unix socket. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "supervise/service-http.h"
#include "tap.h"

int main(void) {
        char method[24], path[512];
        size_t head = 0;
        const char *req = "POST /v1/items?x=1 HTTP/1.1\r\nHost: core\r\nConnection: keep-alive\r\n"
                          "Keep-Alive: timeout=5\r\nContent-Length: 4\r\n\r\nbody";
        ok(sbx_http_request_head(req, strlen(req), method, path, &head) == 1 &&
                        strcmp(method, "POST") == 0 && strcmp(path, "/v1/items?x=1") == 0 &&
                        head == strlen(req) - 4,
                "a request head: method, target, its length");
        ok(sbx_http_request_head(req, 20, method, path, &head) == 0, "a partial head asks for more");
        ok(sbx_http_request_head("get / HTTP/1.1\r\n\r\n", 18, method, path, &head) == -EINVAL,
                "a lowercase method is not HTTP");
        ok(sbx_http_request_head("GET / HTTP/2.0\r\n\r\n", 18, method, path, &head) == -EINVAL,
                "nor HTTP/2");
        ok(sbx_http_request_head("GET  HTTP/1.1\r\n\r\n", 17, method, path, &head) == -EINVAL,
                "nor an empty target");
        size_t len = 0;
        sbx_http_request_head(req, strlen(req), method, path, &head);
        char *w = sbx_http_close_head(req, head, &len);
        ok(w && strstr(w, "Connection: close\r\n\r\n") && !strstr(w, "keep-alive") &&
                        !strstr(w, "Keep-Alive") && strstr(w, "Content-Length: 4") && strlen(w) == len,
                "the rewrite: Connection and Keep-Alive dropped, Connection: close added, the rest kept");
        free(w);
        const char *up = "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
        sbx_http_request_head(up, strlen(up), method, path, &head);
        w = sbx_http_close_head(up, head, &len);
        ok(w && strcmp(w, up) == 0, "an Upgrade keeps its head as it is");
        free(w);
        ok(sbx_http_status("HTTP/1.1 204 No Content\r\n", 25) == 204, "a status line");
        ok(sbx_http_status("HTTP/1.1 20", 11) == 0, "a partial one asks for more");
        ok(sbx_http_status("SSH-2.0-x\r\n", 11) == -EINVAL, "what is not HTTP");
        ok(sbx_http_status("HTTP/1.1 abc x\r\n", 16) == -EINVAL, "a status that is not a number");
        ok(sbx_service_dial("unix:/nonexistent/x.sock") == -ENOENT, "dialling a missing socket: ENOENT");
        ok(sbx_service_dial("nocolon") == -EINVAL, "a target without a port");
        char dir[] = "/tmp/test-service-http.XXXXXX", sp[64];
        if (mkdtemp(dir)) {
                snprintf(sp, sizeof sp, "unix:%s/s", dir);
                int l = socket(AF_UNIX, SOCK_STREAM, 0);
                struct sockaddr_un a = {.sun_family = AF_UNIX};
                snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
                bool listening =
                        l >= 0 && bind(l, (struct sockaddr *) &a, sizeof a) == 0 && listen(l, 1) == 0;
                int c = listening ? sbx_service_dial(sp) : -1;
                ok(c >= 0, "dialling a listening unix socket");
                if (c >= 0)
                        close(c);
                if (l >= 0)
                        close(l);
                unlink(a.sun_path);
                rmdir(dir);
        }
        return done_testing();
}
