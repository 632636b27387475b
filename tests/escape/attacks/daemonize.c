/* daemonize TAG [SECS] — double fork + setsid: a grandchild (argv carries TAG, so the runner can
 * find it on the host) that sleeps up to 30 s, detached from us. We print STARTED, then sleep
 * SECS ourselves (to be stopped by a timeout). The runner judges: a TAG process left on the host
 * after the run is the escape. */
#include "attack.h"
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

int main(int argc, char **argv) {
        if (argc < 2)
                ERROR("usage: daemonize TAG [SECS]");
        pid_t c = fork();
        if (c < 0)
                ERROR("fork: %s", ename(errno));
        if (c == 0) {
                if (setsid() < 0)
                        _exit(1);
                signal(SIGHUP, SIG_IGN);
                pid_t g = fork();
                if (g != 0)
                        _exit(g < 0);
                int fd = open("/dev/null", O_RDWR);
                dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
                for (int i = 0; i < 300; i++) /* bounded: 30 s at most */
                        nanosleep(&(struct timespec) { 0, 100000000 }, NULL);
                _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                BLOCKED("fork-failed daemon's parent status %d", st);
        printf("STARTED daemon %s\n", argv[1]);
        fflush(stdout);
        if (argc > 2)
                sleep((unsigned) atoi(argv[2]));
        return 0;
}
