/* unshare_user — a new user and mount namespace: full capabilities over fresh namespaces, the
 * start of most kernel exploits from a sandbox. */
#include "attack.h"
#include <sched.h>

int main(void) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                BLOCKED_ERRNO("unshare(CLONE_NEWUSER|CLONE_NEWNS)");
        ESCAPED("in a new user+mount namespace");
}
