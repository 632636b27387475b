/* personality — turn off address-space randomisation and make reads imply exec for our
 * children (what an exploit wants before it execs its victim). */
#include "attack.h"
#include <sys/personality.h>

int main(void) {
        if (personality(PER_LINUX | ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC) < 0)
                BLOCKED_ERRNO("personality");
        int now = personality(0xffffffff);
        if (now & ADDR_NO_RANDOMIZE)
                ESCAPED("personality 0x%x: ASLR off for our children", now);
        BLOCKED("ignored personality stays 0x%x", now);
}
