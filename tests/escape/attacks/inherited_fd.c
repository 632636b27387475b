/* inherited_fd — scan descriptors 3..1023 for one the caller left open on its secret file. */
#include "attack.h"

int main(void) {
        char buf[64];
        int open_fds = 0;
        for (int fd = 3; fd < 1024; fd++) {
                if (fcntl(fd, F_GETFD) < 0)
                        continue;
                open_fds++;
                ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
                if (r < 0)
                        r = read(fd, buf, sizeof(buf) - 1);
                if (r > 0) {
                        buf[r] = 0;
                        if (strncmp(buf, "SBXSECRET", 9) == 0)
                                ESCAPED("fd %d: %.40s", fd, buf);
                }
        }
        BLOCKED("not-found (%d descriptors above 2 open)", open_fds);
}
