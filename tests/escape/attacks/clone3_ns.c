/* clone3_ns — clone3 with CLONE_NEWUSER: the flags sit in memory, out of a filter's reach. */
#include "attack.h"
#include <linux/sched.h>
#include <signal.h>
#include <sys/wait.h>

int main(void) {
        struct clone_args a = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
        long r = syscall(SYS_clone3, &a, sizeof(a));
        if (r < 0)
                BLOCKED_ERRNO("clone3(CLONE_NEWUSER)");
        if (r == 0)
                _exit(42);
        int st;
        waitpid((pid_t) r, &st, 0);
        ESCAPED("clone3 made a child in a new user namespace");
}
