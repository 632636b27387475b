/* keyctl_session — join a named session keyring with keyctl (reach keys shared by name). */
#include "attack.h"
#include <linux/keyctl.h>

int main(void) {
        long k = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "sbx-escape");
        if (k < 0)
                BLOCKED_ERRNO("keyctl(KEYCTL_JOIN_SESSION_KEYRING)");
        ESCAPED("joined session keyring %ld", k);
}
