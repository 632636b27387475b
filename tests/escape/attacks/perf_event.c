/* perf_event — perf_event_open on ourselves, user-space only (allowed at perf_event_paranoid 2):
 * side channels and a large kernel surface. */
#include "attack.h"
#include <linux/perf_event.h>

int main(void) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof(a));
        a.size = sizeof(a);
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
        if (fd < 0)
                BLOCKED_ERRNO("perf_event_open");
        ESCAPED("perf event fd %ld", fd);
}
