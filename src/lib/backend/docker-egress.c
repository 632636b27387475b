/* docker-egress.c — network.egress on the docker backend.
 *
 * The Engine API passes no descriptors, so the init in the container cannot make the proxy's
 * listening socket and hand it over, as sandboxer's init does on bwrap and podman. The relay
 * (docker.c), which stands in for that init on the status socket, does it from outside instead:
 * once the container runs (NetworkMode none: a network namespace with loopback only), it takes
 * the container's init by State.Pid, enters its network namespace in a short child (setns: the
 * relay itself stays in ours) and listens there at 127.0.0.1:3128 (and each service's port). A
 * socket keeps the namespace it was made in, so the supervisor serves it from the host as it
 * serves the init's. Meanwhile the command waits on the gate (docker-egress.h).
 *
 * setns(CLONE_NEWNET) needs CAP_SYS_ADMIN over the namespace's owning user namespace: root has
 * it over every engine's containers; an ordinary user over none of a rootful engine's, so the
 * backend refuses network.egress unless run as root (docker.c). */
#include "backend/docker-egress.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "init/protocol.h"

/* "NSpid: P ... 1": the process is PID 1 of the innermost pid namespace it lives in, and P is
 * its pid in ours (the /proc we read). */
static int is_ns_init(pid_t pid) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, "NSpid:", 6) == 0) {
                        char *p = line + 6, *end;
                        long first = strtol(p, &end, 10), last = first;
                        int n = 0; /* the fields after the first: one per nested namespace */
                        for (; end != p; n++) {
                                long v = strtol(p = end, &end, 10);
                                if (end == p)
                                        break;
                                last = v;
                        }
                        return first == pid && last == 1 && n >= 1;
                }
        return -ENOENT;
}

static int listen_all(const char *ports, const char **what) {
        const char *p = ports;
        for (int which = 0; *p; which = which == 0 ? 2 : which + 1) {
                char *end;
                unsigned long port = strtoul(p, &end, 10);
                if (end == p || port == 0 || port > 65535 || (*end && *end != ','))
                        return (*what = "network.egress: bad port list"), -EINVAL;
                p = *end ? end + 1 : end;
                _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_in a = {.sin_family = AF_INET,
                        .sin_port = htons((uint16_t) port),
                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                int one = 1;
                if (fd < 0)
                        return (*what = "network.egress: socket"), -errno;
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
                if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 128) < 0)
                        return (*what = which == 0 ? "network.egress: listen on 127.0.0.1 in the container"
                                                   : "network.services: listen on 127.0.0.1 in the "
                                                     "container"),
                               -errno;
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                        .type = SBX_INIT_MSG_EGRESS,
                        .b = which,
                        .monotonic_ns = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec};
                int r = sbx_send_with_fd(SBX_INIT_STATUS_FD, &m, sizeof m, fd);
                if (r < 0)
                        return (*what = "network.egress: hand the socket to the supervisor"), r;
        }
        return 0;
}

int docker_egress_listen(int pidfd, pid_t pid, const char *ports, const char **what) {
        int r = is_ns_init(pid);
        if (r <= 0)
                return (*what = "network.egress: State.Pid is not a container's init in our pid "
                                "namespace (is the engine on this host?)"),
                       r < 0 ? r : -ESRCH;
        /* the child's failing step comes back over the pipe as an index into this table, whose
         * names are the ones listen_all() sets */
        static const char *const steps[] = {"network.egress: enter the container's network namespace "
                                            "(setns: needs CAP_SYS_ADMIN over it)",
                "network.egress: bad port list", "network.egress: socket",
                "network.egress: listen on 127.0.0.1 in the container",
                "network.services: listen on 127.0.0.1 in the container",
                "network.egress: hand the socket to the supervisor"};
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) < 0)
                return (*what = "network.egress: pipe"), -errno;
        _cleanup_close_ int rd = pp[0], wr = pp[1];
        pid_t c = fork();
        if (c < 0)
                return (*what = "network.egress: fork"), -errno;
        if (c == 0) {
                const char *w = steps[0];
                int res[2] = {0, 0}; /* -errno, the step */
                res[0] = setns(pidfd, CLONE_NEWNET) < 0 ? -errno : listen_all(ports, &w);
                for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                        if (streq(steps[i], w))
                                res[1] = (int) i;
                _exit(write(wr, res, sizeof res) == (ssize_t) sizeof res ? 0 : 1);
        }
        wr = safe_close(wr);
        int st, res[2] = {-EIO, 0};
        while (waitpid(c, &st, 0) < 0)
                if (errno != EINTR)
                        return (*what = "network.egress: wait for the child"), -errno;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || read(rd, res, sizeof res) != (ssize_t) sizeof res)
                return (*what = "network.egress: the child making the sockets failed"), -ECHILD;
        if (res[0] < 0)
                *what = steps[(size_t) res[1] % ELEMENTSOF(steps)];
        return res[0];
}
