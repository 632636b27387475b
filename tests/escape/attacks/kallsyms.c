/* kallsyms — kernel symbol addresses from /proc/kallsyms (defeats KASLR). Zeroed addresses count
 * as refused. */
#include "attack.h"

int main(void) {
        FILE *f = fopen("/proc/kallsyms", "re");
        if (!f)
                BLOCKED_ERRNO("/proc/kallsyms");
        unsigned long long a;
        char t, name[256];
        int lines = 0;
        while (fscanf(f, "%llx %c %255s%*[^\n]", &a, &t, name) == 3) {
                lines++;
                if (a != 0)
                        ESCAPED("%s at 0x%llx", name, a);
        }
        BLOCKED("zeroed %d symbols, every address 0", lines);
}
