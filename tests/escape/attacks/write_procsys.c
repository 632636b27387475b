/* write_procsys [FILE] — write a host kernel setting (default kernel/core_pattern, the classic
 * container escape). Writes back the value it read, so a success changes nothing. */
#include "attack.h"

int main(int argc, char **argv) {
        char path[256], buf[4096];
        snprintf(path, sizeof(path), "/proc/sys/%s", argc > 1 ? argv[1] : "kernel/core_pattern");
        long n = slurp(path, buf, sizeof(buf));
        if (n < 0) {
                errno = (int) -n;
                BLOCKED_ERRNO("read");
        }
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                BLOCKED_ERRNO(path);
        if (write(fd, buf, (size_t) n) < 0) {
                int e = errno;
                close(fd);
                errno = e;
                BLOCKED_ERRNO("write");
        }
        close(fd);
        ESCAPED("wrote %s (same value back)", path);
}
