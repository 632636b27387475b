/* int80 — a syscall through the i386 ABI (int $0x80), where a filter written for x86_64 numbers
 * would read the wrong table. Expected to be killed; prints only if the call returns. */
#include "attack.h"

int main(void) {
#if defined(__x86_64__)
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20 /* i386 getpid */) : "memory");
        if (r < 0) {
                errno = (int) -r;
                BLOCKED_ERRNO("int $0x80 getpid");
        }
        ESCAPED("i386 getpid returned %ld", r);
#else
        ERROR("x86_64 only");
#endif
}
