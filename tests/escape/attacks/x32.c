/* x32 — a syscall through the x32 ABI (nr | 0x40000000). Expected to be killed. */
#include "attack.h"

int main(void) {
#if defined(__x86_64__)
        long r = syscall(0x40000000L | 39 /* getpid */);
        if (r < 0)
                BLOCKED_ERRNO("x32 getpid");
        ESCAPED("x32 getpid returned %ld", r);
#else
        ERROR("x86_64 only");
#endif
}
