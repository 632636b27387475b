/* suid_euid — planted setuid-root by the runner; run by setuid_exec. Root after exec is the
 * escape. */
#include "attack.h"

int main(void) {
        if (geteuid() == 0)
                ESCAPED("euid 0 after exec (uid %d)", (int) getuid());
        BLOCKED("euid-not-root euid %d", (int) geteuid());
}
