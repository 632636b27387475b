/* pivot_root — pivot_root(".", ".") on /: swap the root of our mount namespace. */
#include "attack.h"

int main(void) {
        if (chdir("/") < 0)
                ERROR("chdir /: %s", ename(errno));
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                BLOCKED_ERRNO("pivot_root");
        ESCAPED("pivot_root(\".\", \".\") succeeded");
}
