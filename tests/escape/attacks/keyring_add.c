/* keyring_add — add a key to the kernel keyring (shared kernel state with a record of bugs). */
#include "attack.h"
#include <linux/keyctl.h>

int main(void) {
        long k = syscall(SYS_add_key, "user", "sbx-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING);
        if (k < 0)
                BLOCKED_ERRNO("add_key");
        ESCAPED("added key %ld", k);
}
