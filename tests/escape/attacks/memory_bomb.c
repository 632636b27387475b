/* memory_bomb [MiB] — touch MiB (default 256) of memory, 8 MiB at a time. Getting all of it is
 * the escape; under a smaller limit it is killed (the report says memory_limit). */
#include "attack.h"
#include <sys/mman.h>

int main(int argc, char **argv) {
        long mib = argc > 1 ? atol(argv[1]) : 256, got = 0;
        for (; got < mib; got += 8) {
                char *p = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        BLOCKED("%s mmap after %ld MiB", ename(errno), got);
                for (long i = 0; i < (8 << 20); i += 4096)
                        p[i] = 1;
        }
        ESCAPED("touched %ld MiB", got);
}
