/* udp_loopback PORT — ping the runner's UDP echo on the host's 127.0.0.1 and wait for the answer
 * (Landlock has no UDP rules: only the network namespace or seccomp stand here). */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: udp_loopback PORT");
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                BLOCKED_ERRNO("socket");
        struct timeval tv = { .tv_sec = 0, .tv_usec = 500000 };
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(argv[1])) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, (struct sockaddr *) &a, sizeof(a)) < 0)
                BLOCKED_ERRNO("connect");
        char buf[16];
        int e = 0;
        for (int i = 0; i < 4; i++) { /* UDP may drop; a refusal comes back as ECONNREFUSED */
                if (send(s, "PING", 4, 0) < 0) {
                        e = errno;
                        continue;
                }
                ssize_t r = recv(s, buf, sizeof(buf) - 1, 0);
                if (r > 0) {
                        buf[r] = 0;
                        if (strncmp(buf, "HOSTDATA", 8) == 0)
                                ESCAPED("127.0.0.1:%s answered %s", argv[1], buf);
                }
                if (r < 0 && errno != EAGAIN)
                        e = errno;
        }
        if (e) {
                errno = e;
                BLOCKED_ERRNO("send/recv");
        }
        BLOCKED("no-answer in 2 s");
}
