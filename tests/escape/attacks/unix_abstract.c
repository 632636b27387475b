/* unix_abstract NAME — connect to the runner's abstract unix socket "@NAME" on the host. */
#include "attack.h"
#include <stddef.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

int main(int argc, char **argv) {
        if (argc != 2 || strlen(argv[1]) > 100)
                ERROR("usage: unix_abstract NAME");
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                BLOCKED_ERRNO("socket");
        struct timeval tv = { .tv_sec = 3 };
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        size_t l = strlen(argv[1]);
        memcpy(a.sun_path + 1, argv[1], l);
        if (connect(s, (struct sockaddr *) &a, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + l)) < 0)
                BLOCKED_ERRNO("connect");
        char buf[16] = { 0 };
        ssize_t r = read(s, buf, sizeof(buf) - 1);
        if (r > 0 && strncmp(buf, "HOSTDATA", 8) == 0)
                ESCAPED("@%s answered %s", argv[1], buf);
        BLOCKED("not-host connected, but not to the host listener (%zd bytes)", r);
}
