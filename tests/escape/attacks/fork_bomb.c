/* fork_bomb [N] — fork until refused, at most N (default 256) children, each waiting for us to go.
 * N forks is the escape: the limit did not hold. */
#include "attack.h"
#include <signal.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 256, made = 0, e = 0, p[2];
        if (pipe(p) < 0)
                ERROR("pipe");
        for (; made < n; made++) {
                pid_t c = fork();
                if (c < 0) {
                        e = errno;
                        break;
                }
                if (c == 0) { /* wait for the parent to close the pipe (or die), then go */
                        char x;
                        close(p[1]);
                        alarm(30);
                        (void) !read(p[0], &x, 1);
                        _exit(0);
                }
        }
        close(p[1]);
        while (wait(NULL) > 0)
                ;
        if (made >= n)
                ESCAPED("%d forks, none refused", made);
        errno = e;
        BLOCKED("%s after %d forks", ename(e), made);
}
