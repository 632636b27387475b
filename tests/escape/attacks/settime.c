/* settime — set the system clock (to the time it already says: a success changes nothing). */
#include "attack.h"
#include <time.h>

int main(void) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        if (clock_settime(CLOCK_REALTIME, &t) < 0)
                BLOCKED_ERRNO("clock_settime");
        ESCAPED("set CLOCK_REALTIME");
}
