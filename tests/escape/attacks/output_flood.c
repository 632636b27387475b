/* output_flood [MiB] — write MiB (default 64) to stderr; the verdict goes to stdout. All of it
 * written is the escape; under a smaller output cap the run is stopped (output_limit). */
#include "attack.h"

int main(int argc, char **argv) {
        long mib = argc > 1 ? atol(argv[1]) : 64;
        static char buf[1 << 16];
        memset(buf, 'x', sizeof(buf));
        for (long i = 0; i < mib * 16; i++)
                if (write(2, buf, sizeof(buf)) < 0)
                        BLOCKED_ERRNO("write after some output");
        ESCAPED("wrote %ld MiB", mib);
}
