/* see_host_pid PID — see a host process (the runner's sleep): its /proc entry and command line. */
#include "attack.h"

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: see_host_pid PID");
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", argv[1]);
        long n = slurp(path, buf, sizeof(buf));
        if (n < 0) {
                errno = (int) -n;
                BLOCKED_ERRNO(path);
        }
        const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
        if (n == 0 || strcmp(base, "sleep") != 0)
                BLOCKED("not-host pid %s is another process here (%.20s)", argv[1], buf);
        ESCAPED("host pid %s visible: %s %s", argv[1], buf, buf + strlen(buf) + 1);
}
