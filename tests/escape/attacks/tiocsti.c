/* tiocsti — push a character into a terminal's input queue (TIOCSTI), what a sandboxed command
 * would do to the terminal of whoever runs it. Done on a pty of our own made our controlling
 * terminal, so the call's own permission holds outside and only a fence can refuse it. Only when
 * no pty can be made (a backend without /dev/pts) does it try an inherited terminal: outside a
 * pty can always be made, so the outside run never types into the tester's terminal. */
#include "attack.h"
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

int main(void) {
        int p[2];
        if (pipe(p) < 0)
                ERROR("pipe");
        pid_t c = fork(); /* a session leader cannot setsid: do it in a child */
        if (c < 0)
                ERROR("fork: %s", ename(errno));
        if (c == 0) {
                int m, s, res[2] = { 0, 0 };
                if (openpty(&m, &s, NULL, NULL, NULL) < 0)
                        res[0] = 1, res[1] = errno;
                else if (setsid() < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
                        res[0] = 1, res[1] = errno;
                else {
                        char ch = '#';
                        if (ioctl(s, TIOCSTI, &ch) < 0)
                                res[0] = 2, res[1] = errno;
                }
                (void) !write(p[1], res, sizeof(res));
                _exit(0);
        }
        close(p[1]);
        int res[2] = { 3, 0 };
        (void) !read(p[0], res, sizeof(res));
        waitpid(c, NULL, 0);
        if (res[0] == 0)
                ESCAPED("TIOCSTI injected a character into a terminal");
        if (res[0] == 2) {
                errno = res[1];
                BLOCKED_ERRNO("ioctl(TIOCSTI)");
        }
        if (res[0] == 1) { /* no pty of our own: an inherited terminal is the only target left */
                for (int fd = 0; fd < 3; fd++)
                        if (isatty(fd)) {
                                char ch = '#';
                                if (ioctl(fd, TIOCSTI, &ch) == 0)
                                        ESCAPED("TIOCSTI injected into the inherited terminal on fd %d", fd);
                                BLOCKED_ERRNO("ioctl(TIOCSTI) on the inherited terminal");
                        }
                BLOCKED("no-terminal no pty of its own (%s) and none inherited", ename(res[1]));
        }
        ERROR("the pty child died");
}
