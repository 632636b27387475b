/* proc_init_mem PID|parent — open the init's /proc/PID/mem for writing (rewrite its code). A
 * successful open is the escape; nothing is written. */
#include "attack.h"

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: proc_init_mem PID|parent");
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/mem", (int) target_pid(argv[1]));
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                BLOCKED_ERRNO(path);
        ESCAPED("%s open for writing", path);
}
