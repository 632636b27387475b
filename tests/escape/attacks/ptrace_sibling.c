/* ptrace_sibling — PTRACE_ATTACH to another process of our own (a forked child). */
#include "attack.h"
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

int main(void) {
        pid_t c = fork();
        if (c < 0)
                ERROR("fork: %s", ename(errno));
        if (c == 0) {
                alarm(10);
                for (;;)
                        pause();
        }
        long r = ptrace(PTRACE_ATTACH, c, 0, 0);
        int e = errno;
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        if (r < 0) {
                errno = e;
                BLOCKED_ERRNO("PTRACE_ATTACH");
        }
        ESCAPED("attached to pid %d", (int) c);
}
