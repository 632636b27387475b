/* setuid_exec [PATH] — exec the setuid-root copy of suid_euid the runner planted (default
 * ./suid-euid); that program prints the verdict from its effective uid. */
#include "attack.h"

int main(int argc, char **argv) {
        const char *p = argc > 1 ? argv[1] : "./suid-euid";
        execl(p, p, (char *) NULL);
        BLOCKED_ERRNO("execve of the setuid binary");
}
