/* host_init_environ — read the environment of the host's pid 1. Inside a pid namespace pid 1 is
 * the sandbox's own init: that counts as refused (the host's is out of reach). */
#include "attack.h"

int main(void) {
        char comm[64], buf[65536];
        long c = slurp("/proc/1/comm", comm, sizeof(comm));
        if (c > 0 && strncmp(comm, "sandboxer-init", 14) == 0)
                BLOCKED("pid1-is-sandboxer-init");
        long n = slurp("/proc/1/environ", buf, sizeof(buf));
        if (n < 0) {
                errno = (int) -n;
                BLOCKED_ERRNO("/proc/1/environ");
        }
        ESCAPED("host pid 1 (%.*s) environ: %ld bytes", c > 0 ? (int) c - 1 : 0, comm, n);
}
