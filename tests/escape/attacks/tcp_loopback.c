/* tcp_loopback PORT — reach the runner's TCP listener on the host's 127.0.0.1 and read its
 * greeting. */
#include "attack.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: tcp_loopback PORT");
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                BLOCKED_ERRNO("socket");
        struct timeval tv = { .tv_sec = 3 };
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(argv[1])) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, (struct sockaddr *) &a, sizeof(a)) < 0)
                BLOCKED_ERRNO("connect");
        char buf[16] = { 0 };
        ssize_t r = read(s, buf, sizeof(buf) - 1);
        if (r > 0 && strncmp(buf, "HOSTDATA", 8) == 0)
                ESCAPED("127.0.0.1:%s answered %s", argv[1], buf);
        if (r < 0)
                BLOCKED_ERRNO("connected to something that is not the host listener, read");
        BLOCKED("not-host connected to a listener that is not the host's (%zd bytes)", r);
}
