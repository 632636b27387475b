/* clone_newpid — clone(2) with CLONE_NEWUSER|CLONE_NEWPID: a child as pid 1 of a new namespace. */
#include "attack.h"
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

int main(void) {
        long r = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, 0);
        if (r < 0)
                BLOCKED_ERRNO("clone(CLONE_NEWUSER|CLONE_NEWPID)");
        if (r == 0)
                _exit(getpid() == 1 ? 42 : 1);
        int st;
        waitpid((pid_t) r, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 42)
                ESCAPED("a child ran as pid 1 of a new pid namespace");
        ERROR("clone succeeded but the child was not pid 1 (status %d)", st);
}
