/* userfaultfd — a userfaultfd (user-mode faults only, allowed unprivileged): stalls kernel
 * copies at will, the race window of many exploits. */
#include "attack.h"
#include <linux/userfaultfd.h>

int main(void) {
        long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
        if (fd < 0)
                BLOCKED_ERRNO("userfaultfd");
        ESCAPED("userfaultfd fd %ld", fd);
}
