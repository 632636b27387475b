/* ptrace_init PID|parent — attach to the sandbox's init (inside: our parent). PTRACE_SEIZE, not
 * PTRACE_ATTACH: the same access check, without stopping the target when it succeeds outside. */
#include "attack.h"
#include <sys/ptrace.h>

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: ptrace_init PID|parent");
        pid_t pid = target_pid(argv[1]);
        if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0)
                BLOCKED_ERRNO("PTRACE_SEIZE");
        ESCAPED("seized pid %d", (int) pid);
}
