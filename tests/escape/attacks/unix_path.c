/* unix_path PATH — connect to the runner's pathname unix socket on the host. */
#include "attack.h"
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

int main(int argc, char **argv) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        if (argc != 2 || strlen(argv[1]) >= sizeof(a.sun_path))
                ERROR("usage: unix_path PATH");
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                BLOCKED_ERRNO("socket");
        struct timeval tv = { .tv_sec = 3 };
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        strcpy(a.sun_path, argv[1]);
        if (connect(s, (struct sockaddr *) &a, sizeof(a)) < 0)
                BLOCKED_ERRNO("connect");
        char buf[16] = { 0 };
        ssize_t r = read(s, buf, sizeof(buf) - 1);
        if (r > 0 && strncmp(buf, "HOSTDATA", 8) == 0)
                ESCAPED("%s answered %s", argv[1], buf);
        BLOCKED("not-host connected, but not to the host listener (%zd bytes)", r);
}
