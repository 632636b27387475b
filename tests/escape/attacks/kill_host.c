/* kill_host PID — SIGKILL a host process of the caller's (a sleep the runner started). */
#include "attack.h"
#include <signal.h>

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: kill_host PID");
        pid_t pid = (pid_t) atoi(argv[1]);
        if (pid <= 1)
                ERROR("refusing pid %d", (int) pid);
        if (kill(pid, SIGKILL) < 0)
                BLOCKED_ERRNO("kill");
        ESCAPED("kill(%d, SIGKILL) succeeded", (int) pid);
}
