/* sv-util.c — the supervisor loop's helpers that need none of its state (supervise.c). */
#include "supervise/sv-util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/macro.h"

int sv_arm_timer(int fd, double seconds) {
        if (seconds <= 0)
                seconds = 1e-6;
        struct itimerspec its = {0};
        its.it_value.tv_sec = (time_t) seconds;
        its.it_value.tv_nsec = (long) ((seconds - (double) its.it_value.tv_sec) * 1e9);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                its.it_value.tv_nsec = 1;
        return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

void sv_write_all(int fd, const char *buf, size_t n, bool *ok) {
        while (n > 0 && *ok) {
                ssize_t k = write(fd, buf, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                                (void) poll(&pfd, 1, 1000);
                                continue;
                        }
                        *ok = false; /* EPIPE and friends: stop forwarding, keep counting */
                        return;
                }
                buf += k;
                n -= (size_t) k;
        }
}

/* Kill and reap every child we have left (all of them the sandbox's: re-parented to us, the
 * subreaper, when the init died before them). */
void sv_reap_orphans(void) {
        for (int round = 0; round < 10000; round++) {
                char path[64], buf[4096];
                snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) gettid());
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (n > 0) {
                        buf[n] = 0;
                        for (char *q = buf; *q;) {
                                char *end;
                                long pid = strtol(q, &end, 10);
                                if (end == q)
                                        break;
                                if (pid > 0)
                                        (void) kill((pid_t) pid, SIGKILL);
                                q = end;
                                while (*q == ' ')
                                        q++;
                        }
                }
                if (waitpid(-1, NULL, __WALL) < 0 && errno == ECHILD)
                        return;
        }
}

const char *sv_family_name(uint64_t f) {
        switch ((int) f) {
        case 1:
                return "unix";
        case 2:
                return "inet";
        case 10:
                return "inet6";
        case 16:
                return "netlink";
        case 17:
                return "packet";
        case 40:
                return "vsock";
        default:
                return NULL;
        }
}

bool sv_under(const char *path, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(path, prefix, l) == 0 &&
               (path[l] == 0 || path[l] == '/' || (l == 1 && prefix[0] == '/'));
}

bool sv_cmd_listed(char *const *list, const char *path) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        for (char *const *i = list; i && *i; i++)
                if (strchr(*i, '/') ? streq(*i, path) : streq(*i, base))
                        return true;
        return false;
}
