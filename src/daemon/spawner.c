/* spawner.c — the supervisors' spawner: a small process started with the server, before its
 * descriptors grow (one pidfd per sandbox, connections, the store), that starts each sandbox's
 * supervisor for it. A posix_spawn() from the server itself copies the server's descriptor table
 * into the child and closes it there again: O(sandboxes alive) per create (close_range ~4 % of
 * all CPU at 2,000 sandboxes). The spawner has five descriptors.
 *
 * It is `sandboxer-supervise --spawner-fd 3` (cli/supervise.c, sv_spawner()) on one end of a
 * SOCK_SEQPACKET socketpair. A request is one message: a header, then NUL-terminated strings
 * (the program, its log file, its argv) and, as SCM_RIGHTS, the descriptors it gets as 3 (ready),
 * 4 (secrets) and 5 (configuration); the answer is {errno of the spawn, pid} and the new
 * process's pidfd. The supervisors are the spawner's children (it reaps them); the server
 * watches each through that pidfd. When the spawner is gone (killed, crashed) the server spawns
 * directly, as before, and starts another spawner 10 s later at the earliest. It ends when the
 * server closes its end. */
#include "basic/time-util.h"
#include "daemon/mgr-internal.h"
#include "supervise/sv-protocol.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int64_t now_ms(void) {
        return (int64_t) (sbx_now_ns() / 1000000);
}

static void spawner_drop_locked(sbx_mgr *m, const char *why) {
        m->spawner_tried_ms = now_ms(); /* another 10 s from now at the earliest */
        if (m->spawner_fd >= 0) {
                sbx_log(SBX_LOG_WARNING, "spawner_lost", "reason", why, NULL);
                close(m->spawner_fd);
        }
        m->spawner_fd = -1;
        if (m->spawner_pid > 0) { /* ours: gone, or hung (then ended here) */
                (void) kill(m->spawner_pid, SIGKILL);
                (void) waitpid(m->spawner_pid, NULL, 0);
        }
        m->spawner_pid = 0;
}

static int spawner_start_locked(sbx_mgr *m) {
        m->spawner_tried_ms = now_ms();
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        char *argv[5];
        int n = 0;
        argv[n++] = m->exe;
        if (!m->supervise_exe_lean)
                argv[n++] = (char *) "supervise";
        argv[n++] = (char *) "--spawner-fd";
        argv[n++] = (char *) SBX_SV_STR(SBX_SV_FD_READY);
        argv[n] = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        sbx_sv_spawnattr(&at);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, sv[1], SBX_SV_FD_READY);
        posix_spawn_file_actions_addclosefrom_np(&fa, SBX_SV_FD_READY + 1);
        extern char **environ;
        pid_t pid;
        int sr = posix_spawn(&pid, m->exe, &fa, &at, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        close(sv[1]);
        if (sr != 0) {
                close(sv[0]);
                return -sr;
        }
        m->spawner_fd = sv[0];
        m->spawner_pid = pid;
        return 0;
}

int mgr_spawner_start(sbx_mgr *m) {
        pthread_mutex_lock(&m->spawner_lock);
        int r = m->spawner_fd >= 0 ? 0 : spawner_start_locked(m);
        pthread_mutex_unlock(&m->spawner_lock);
        if (r < 0)
                sbx_log(SBX_LOG_WARNING, "spawner_failed", "error", strerror(-r), NULL);
        return r;
}

void mgr_spawner_stop(sbx_mgr *m) {
        pthread_mutex_lock(&m->spawner_lock);
        if (m->spawner_fd >= 0)
                close(m->spawner_fd); /* its end of the pair closed: it ends */
        m->spawner_fd = -1;
        /* 2 s for it to see that, then the end of it (one stopped or wedged must not hold the
         * server's exit) */
        for (int i = 0; m->spawner_pid > 0 && i < 200; i++) {
                if (waitpid(m->spawner_pid, NULL, WNOHANG) != 0)
                        m->spawner_pid = 0;
                else
                        usleep(10000);
        }
        if (m->spawner_pid > 0) {
                (void) kill(m->spawner_pid, SIGKILL);
                (void) waitpid(m->spawner_pid, NULL, 0);
        }
        m->spawner_pid = 0;
        pthread_mutex_unlock(&m->spawner_lock);
}

/* One request, its answer: 0 (ret_err: the spawn's errno); NOT_ASKED when the request could not
 * be sent (the caller spawns itself); -errno when it was sent and no answer came (the spawner
 * may have started it: the caller must not start a second). */
#define NOT_ASKED 1
static int ask_locked(sbx_mgr *m, const char *buf, size_t len, const int *fds, size_t nfds, pid_t *ret_pid,
        int *ret_pidfd, int *ret_err) {
        union {
                char b[CMSG_SPACE(3 * sizeof(int))];
                struct cmsghdr align;
        } c = {0};
        struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = c.b,
                .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
        ssize_t s;
        while ((s = sendmsg(m->spawner_fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        if (s < 0) {
                if (errno != EMSGSIZE) /* too big for the socket's buffer: this one only */
                        spawner_drop_locked(m, strerror(errno));
                return NOT_ASKED;
        }
        /* the answer: a spawn takes a fraction of a millisecond; 5 s is a spawner that hangs */
        struct pollfd pf = {.fd = m->spawner_fd, .events = POLLIN};
        int k;
        while ((k = poll(&pf, 1, 5000)) < 0 && errno == EINTR)
                ;
        if (k <= 0)
                return k == 0 ? -ETIMEDOUT : -errno;
        int32_t ans[2] = {0, 0};
        union {
                char b[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } rc = {0};
        struct iovec riov = {.iov_base = ans, .iov_len = sizeof ans};
        struct msghdr rm = {
                .msg_iov = &riov, .msg_iovlen = 1, .msg_control = rc.b, .msg_controllen = sizeof rc.b};
        ssize_t r;
        while ((r = recvmsg(m->spawner_fd, &rm, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        int pidfd = -1;
        for (struct cmsghdr *x = CMSG_FIRSTHDR(&rm); x; x = CMSG_NXTHDR(&rm, x))
                if (x->cmsg_level == SOL_SOCKET && x->cmsg_type == SCM_RIGHTS &&
                        x->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&pidfd, CMSG_DATA(x), sizeof(int));
        if (r != (ssize_t) sizeof ans) {
                if (pidfd >= 0)
                        close(pidfd);
                return r < 0 ? -errno : -EPIPE;
        }
        *ret_err = ans[0];
        *ret_pid = ans[1];
        *ret_pidfd = pidfd;
        return 0;
}

/* The supervisor with argv started by the spawner: 0 (*ret_err: the spawn's errno, 0 with *ret_pid
 * and *ret_pidfd), 1 when it was not asked (none, or the request cannot go: the caller spawns
 * itself), -errno when it was asked and did not answer (dropped; the create fails). */
int mgr_spawner_spawn(sbx_mgr *m, const char *logpath, char *const argv[], int ready_fd, int secrets_fd,
        int config_fd, pid_t *ret_pid, int *ret_pidfd, int *ret_err) {
        *ret_pid = 0;
        *ret_pidfd = -1;
        *ret_err = 0;
        /* header, then the program, the log, the argv: each NUL-terminated */
        size_t argc = 0; /* (at most 54 today) */
        while (argc <= SBX_SPAWN_ARGV_MAX && argv[argc])
                argc++;
        if (argc > SBX_SPAWN_ARGV_MAX)
                return NOT_ASKED;
        _cleanup_free_ char *buf = malloc(SBX_SPAWN_MSG_MAX);
        if (!buf)
                return NOT_ASKED;
        sbx_spawn_hdr h = {.magic = SBX_SPAWN_MAGIC,
                .flags =
                        (secrets_fd >= 0 ? SBX_SPAWN_SECRETS : 0) | (config_fd >= 0 ? SBX_SPAWN_CONFIG : 0)};
        size_t len = sizeof h;
        const char *head[2] = {m->exe, logpath};
        for (size_t i = 0; i < 2 + SBX_SPAWN_ARGV_MAX; i++) {
                const char *s = i < 2 ? head[i] : argv[i - 2];
                if (!s)
                        break;
                size_t l = strlen(s) + 1;
                if (len + l > SBX_SPAWN_MSG_MAX)
                        return NOT_ASKED;
                memcpy(buf + len, s, l);
                len += l;
                h.nstr++;
        }
        memcpy(buf, &h, sizeof h);
        int fds[3];
        size_t nfds = 0;
        fds[nfds++] = ready_fd;
        if (secrets_fd >= 0)
                fds[nfds++] = secrets_fd;
        if (config_fd >= 0)
                fds[nfds++] = config_fd;
        pthread_mutex_lock(&m->spawner_lock);
        if (m->spawner_fd < 0 && now_ms() - m->spawner_tried_ms >= 10000)
                (void) spawner_start_locked(m);
        int r = m->spawner_fd >= 0 ? ask_locked(m, buf, len, fds, nfds, ret_pid, ret_pidfd, ret_err)
                                   : NOT_ASKED;
        if (r < 0)
                spawner_drop_locked(m, strerror(-r));
        pthread_mutex_unlock(&m->spawner_lock);
        return r;
}
