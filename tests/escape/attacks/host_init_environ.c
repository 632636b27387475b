/* host_init_environ [PID] — read the environment of a host process: pid 1 (default) or PID. Inside
 * a pid namespace pid 1 is the sandbox's own init: that counts as refused (the host's is out of
 * reach). */
#include "attack.h"

int main(int argc, char **argv) {
        char path[64], comm[64], buf[65536];
        const char *pid = argc > 1 ? argv[1] : "1";
        snprintf(path, sizeof(path), "/proc/%s/comm", pid);
        long c = slurp(path, comm, sizeof(comm));
        /* "sandboxer-init", or ".sandboxer-init" where a sandbox tool binds it in under that name */
        if (c > 0 && (strncmp(comm, "sandboxer-init", 14) == 0 || strncmp(comm, ".sandboxer-init", 15) == 0))
                BLOCKED("pid1-is-sandboxer-init");
        snprintf(path, sizeof(path), "/proc/%s/environ", pid);
        long n = slurp(path, buf, sizeof(buf));
        if (n < 0) {
                errno = (int) -n;
                BLOCKED_ERRNO(path);
        }
        ESCAPED("%s (%.*s): %ld bytes", path, c > 0 ? (int) c - 1 : 0, comm, n);
}
