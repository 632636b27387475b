/* supervise.c — `sandboxer supervise`: the supervisor of one persistent sandbox (DESIGN.md
 * vocabulary). Started by `sandboxer serve` in a session of its own, it owns the sandbox — its
 * init, seccomp listener, cgroup, scratch — and takes requests on a unix socket (SOCK_SEQPACKET,
 * mode 0600), one per connection: JSON, with the exec's stdin/stdout/stderr passed as
 * descriptors. It outlives a restart of the server, which re-adopts it by its socket; if it dies,
 * its sandbox dies with it (the init's parent-death signal). Internal: not for people to run.
 *
 * The protocol with the server: supervise/sv-protocol.h. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <spawn.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/time-util.h"
#include "init/protocol.h"
#include "sandboxer/sandboxer.h"
#include "supervise/sv-protocol.h"
#include "verbs.h"

static struct {
        const char *id, *socket_path, *state_dir;
        int listen_fd;
        int ready_fd;
        sbx_sandbox *sb;
        double budget_carry;
} S = {.listen_fd = -1, .ready_fd = -1};

static void say_ready(const char *line) {
        if (S.ready_fd < 0)
                return;
        size_t n = strlen(line);
        if (write(S.ready_fd, line, n) != (ssize_t) n) {
                /* the server is gone: it will find us by our socket */
        }
        close(S.ready_fd);
        S.ready_fd = -1;
}

/* An answer that could not be sent whole: its connection is closed after it (the server then
 * sees the end, not a wait for an answer that never comes). */
static __thread bool reply_failed;

static void reply(int fd, json_t *j) {
        char *s = json_dumps(j, JSON_COMPACT);
        size_t n = s ? strlen(s) : 0;
        if (!s || send(fd, s, n, MSG_NOSIGNAL) != (ssize_t) n)
                reply_failed = true;
        free(s);
        json_decref(j);
}

/* j with "report": the report's own JSON text spliced in (ours, made by sbx_report_to_json):
 * not parsed and printed again on its way through (a report is kilobytes; that was ~0.15 ms
 * an exec). */
static void reply_with_report(int fd, json_t *j, const char *report) {
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        size_t n = s ? strlen(s) : 0;
        if (!report || n < 2 || s[n - 1] != '}') {
                if (!s || send(fd, s, n, MSG_NOSIGNAL) != (ssize_t) n)
                        reply_failed = true;
                free(s);
                return;
        }
        static const char key[] = ",\"report\":";
        size_t rl = strlen(report);
        size_t total = n - 1 + sizeof key - 1 + rl + 1;
        char *out = malloc(total);
        if (out) {
                memcpy(out, s, n - 1);
                memcpy(out + n - 1, key, sizeof key - 1);
                memcpy(out + n - 1 + sizeof key - 1, report, rl);
                out[total - 1] = '}';
        }
        if (!out || send(fd, out, total, MSG_NOSIGNAL) != (ssize_t) total)
                reply_failed = true;
        free(out);
        free(s);
}

static void reply_err(int fd, int err, const char *msg) {
        reply(fd, json_pack("{s:b, s:i, s:s}", "ok", 0, "errno", err, "error", msg ? msg : strerror(err)));
}

static char **strv_from_json(json_t *a, bool *bad) {
        if (!a || json_is_null(a))
                return NULL;
        if (!json_is_array(a) || json_array_size(a) > 4096) {
                *bad = true;
                return NULL;
        }
        char **v = calloc(json_array_size(a) + 1, sizeof(char *));
        if (!v) {
                *bad = true;
                return NULL;
        }
        size_t i;
        json_t *x;
        json_array_foreach(a, i, x) {
                if (!json_is_string(x) || !(v[i] = strdup(json_string_value(x)))) {
                        *bad = true;
                        break;
                }
        }
        return v;
}

static void strv_free_simple(char **v) {
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

static void save_report(const char *exec_id, const char *report) {
        if (!S.state_dir || !exec_id || !sbx_sv_exec_id_ok(exec_id, strlen(exec_id)) || !report)
                return;
        /* One file, appended to, kept open: a record is "EXEC_ID LENGTH\n" then the report's
         * LENGTH bytes and "\n", in one write (O_APPEND: whole, whatever the threads). Not a
         * file per exec: creating an inode costs ext4 more than the rest of this process's part
         * of an exec (its search past recently deleted ones). No fsync: the log is for a server
         * that restarts while this supervisor lives on (a process crash, not a power loss, which
         * ends the sandbox too). */
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static int fd = -1;
        static bool cut; /* a record was cut short (the disk full): none after it, a reader stops there */
        pthread_mutex_lock(&lock);
        if (fd < 0 && !cut) {
                char path[4200];
                snprintf(path, sizeof path, "%s/" SBX_SV_EXEC_LOG, S.state_dir);
                fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        }
        if (fd >= 0 && !cut) {
                size_t rl = strlen(report);
                char head[128];
                int hl = snprintf(head, sizeof head, "%s %zu\n", exec_id, rl);
                struct iovec iov[3] = {{.iov_base = head, .iov_len = (size_t) hl},
                        {.iov_base = (void *) report, .iov_len = rl},
                        {.iov_base = (void *) "\n", .iov_len = 1}};
                ssize_t k = writev(fd, iov, 3);
                /* nothing written: the next may be; part of it: the log ends there (the report
                 * still went to the server; only a restart would miss it) */
                cut = k > 0 && (size_t) k != (size_t) hl + rl + 1;
        }
        pthread_mutex_unlock(&lock);
}

/* The sandbox's egress rules replaced (the control plane checked their shape; the policy is
 * checked here, against the one the sandbox was made with). */
static void handle_network(int fd, json_t *req) {
        bool bad = false;
        char **allow = strv_from_json(json_object_get(req, "egress"), &bad),
             **deny = strv_from_json(json_object_get(req, "egress_deny"), &bad);
        char *msg = NULL;
        int r = bad ? -EINVAL : sbx_sandbox_set_egress(S.sb, allow, deny, &msg);
        if (r < 0)
                reply_err(fd, -r, bad ? "egress and egress_deny must be arrays of strings" : msg);
        else
                reply(fd, json_pack("{s:b}", "ok", 1));
        free(msg);
        strv_free_simple(allow);
        strv_free_simple(deny);
}

static void handle_exec(int fd, json_t *req, int fds[3]) {
        bool bad = false;
        char **argv = strv_from_json(json_object_get(req, "argv"), &bad);
        char **env = strv_from_json(json_object_get(req, "env"), &bad);
        const char *kind = json_string_value(json_object_get(req, "kind"));
        const char *cwd = json_string_value(json_object_get(req, "cwd"));
        const char *exec_id = json_string_value(json_object_get(req, "exec_id"));
        json_t *t = json_object_get(req, "timeout_s"), *cap = json_object_get(req, "output_cap");
        json_t *tty = json_object_get(req, "tty");
        json_int_t cols = json_integer_value(json_object_get(tty, "cols")),
                   rows = json_integer_value(json_object_get(tty, "rows"));
        sbx_exec_request er = {
                .op = !kind || strcmp(kind, "run") == 0        ? SBX_EXEC_RUN
                      : strcmp(kind, "put") == 0               ? SBX_EXEC_PUT_FILE
                      : strcmp(kind, "get") == 0               ? SBX_EXEC_GET_FILE
                      : strcmp(kind, SBX_SV_KIND_CONNECT) == 0 ? SBX_EXEC_CONNECT
                                                               : (sbx_exec_op) -1,
                .argv = argv,
                .env = env,
                .cwd = cwd,
                .timeout_s = json_is_number(t) ? json_number_value(t) : 0,
                .in_fd = fds[0],
                .out_fd = fds[1],
                .err_fd = fds[2],
                .id = exec_id,
                .output_cap = json_is_integer(cap) && json_integer_value(cap) > 0
                                      ? (uint64_t) json_integer_value(cap)
                                      : 0,
                .tty_cols = cols > 0 && cols <= SBX_TTY_MAX ? (unsigned) cols : 0,
                .tty_rows = rows > 0 && rows <= SBX_TTY_MAX ? (unsigned) rows : 0,
                .long_lived = json_is_true(json_object_get(req, "long_lived")) ||
                              (json_is_string(json_object_get(req, "long_lived")) &&
                                      strcmp(json_string_value(json_object_get(req, "long_lived")),
                                              SBX_SV_LONG_LIVED_IF_ALLOWED) == 0 &&
                                      sbx_sandbox_long_lived_allowed(S.sb)),
        };
        if (tty && !(er.tty_cols && er.tty_rows))
                bad = true;
        if (bad || !argv || !argv[0] || (int) er.op < 0 ||
                (exec_id && !sbx_sv_exec_id_ok(exec_id, strlen(exec_id)))) {
                reply_err(fd, EINVAL, "malformed exec request");
                goto out;
        }
        char *report = NULL, *error = NULL;
        int r = sbx_sandbox_exec(S.sb, &er, &report, &error);
        /* the command's descriptors go before the answer: the reader sees their end first */
        for (int i = 0; i < 3; i++)
                if (fds[i] >= 0) {
                        close(fds[i]);
                        fds[i] = -1;
                }
        if (r < 0 && !report)
                reply_err(fd, -r, error);
        else {
                /* keep: this connection takes another request after this one (the server may
                 * keep it for the next exec) */
                json_t *ans = json_pack(
                        "{s:b, s:i, s:b, s:b}", "ok", 1, "exit", r, "long_lived", er.long_lived, "keep", 1);
                if (r < 0 && ans) {
                        json_object_set_new(ans, "errno", json_integer(-r));
                        json_object_set_new(ans, "error", json_string(error ? error : strerror(-r)));
                }
                reply_with_report(fd, ans, report);
        }
        /* After the answer, off the exec's path: the file is only for a server that restarts
         * without having stored the answer, and this process lives on to write it. */
        save_report(exec_id, report);
        free(report);
        free(error);
out:
        strv_free_simple(argv);
        strv_free_simple(env);
}

/* Requests in flight: the sandbox may end while one is answered (an exec whose violation ended
 * it: on_violation kill), and the process must not exit under it — its report would be lost to
 * the server and to the audit log. */
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conns_done = PTHREAD_COND_INITIALIZER;
static unsigned conns;
/* The sandbox is gone and S.sb may be freed: a request that comes now on a kept connection is
 * answered ESRCH without it. */
static bool closing;

static void conns_add(int d) {
        pthread_mutex_lock(&conns_lock);
        conns = (unsigned) ((int) conns + d);
        if (conns == 0)
                pthread_cond_broadcast(&conns_done);
        pthread_mutex_unlock(&conns_lock);
}

/* Wait (at most timeout_ms) for the requests in flight to be answered. */
static void conns_wait(int timeout_ms) {
        struct timespec until;
        sbx_deadline_realtime(timeout_ms, &until);
        pthread_mutex_lock(&conns_lock);
        while (conns > 0 && pthread_cond_timedwait(&conns_done, &conns_lock, &until) == 0)
                ;
        pthread_mutex_unlock(&conns_lock);
}

/* One request on fd, answered; false when there is none (the server closed the connection). */
static bool one_request(int fd, char *buf, bool first) {
        int fds[3] = {-1, -1, -1};
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(3 * sizeof(int))];
        } cbuf;
        struct iovec iov = {.iov_base = buf, .iov_len = SBX_SV_REQ_MAX};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cbuf, .msg_controllen = sizeof cbuf};
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        bool gone = false;
        if (n > 0) {
                pthread_mutex_lock(&conns_lock);
                gone = closing;
                if (!gone && !first)
                        conns++;
                else if (gone && first) /* (its count, taken when it connected) */
                        conns--;
                pthread_mutex_unlock(&conns_lock);
        }
        if (gone) {
                reply_err(fd, ESRCH, "the sandbox is not running");
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                        int d;
                                        memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
                                        close(d);
                                }
                return false;
        }
        if (n > 0) {
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                memcpy(fds, CMSG_DATA(c), (k > 3 ? 3 : k) * sizeof(int));
                        }
                buf[n] = 0;
                json_error_t je;
                json_t *req = json_loads(buf, 0, &je);
                const char *op = json_string_value(json_object_get(req, "op"));
                if (!op)
                        reply_err(fd, EINVAL, "malformed request");
                else if (strcmp(op, SBX_SV_OP_EXEC) == 0)
                        handle_exec(fd, req, fds);
                else if (strcmp(op, SBX_SV_OP_INFO) == 0) {
                        sbx_sandbox_usage u;
                        (void) sbx_sandbox_usage_read(S.sb, &u);
                        reply(fd, json_pack("{s:b, s:b, s:i, s:i, s:f, s:i, s:{s:f, s:f, s:I, s:I, s:I, "
                                            "s:I, s:I}}",
                                          "ok", 1, "frozen", sbx_sandbox_frozen(S.sb), "init_pid",
                                          sbx_sandbox_init_pid(S.sb), "execs_running",
                                          (int) sbx_sandbox_execs_running(S.sb), "budget_used_s",
                                          sbx_sandbox_budget_used(S.sb), "pid", (int) getpid(), "usage",
                                          "cpu_s", u.cpu_s, "cpus", u.cpus, "memory_bytes",
                                          (json_int_t) u.memory_bytes, "memory_limit_bytes",
                                          (json_int_t) u.memory_limit_bytes, "pids", (json_int_t) u.pids,
                                          "disk_used_bytes", (json_int_t) u.disk_used_bytes,
                                          "disk_total_bytes", (json_int_t) u.disk_total_bytes));
                } else if (strcmp(op, SBX_SV_OP_SIGNAL) == 0) {
                        json_t *sig = json_object_get(req, "signal");
                        const char *id = json_string_value(json_object_get(req, "exec_id"));
                        int r = !json_is_integer(sig) || json_integer_value(sig) < 1 ||
                                                json_integer_value(sig) > 64 || !id
                                        ? -EINVAL
                                        : sbx_sandbox_signal_exec(S.sb, id, (int) json_integer_value(sig));
                        if (r < 0)
                                reply_err(fd, -r, r == -ESRCH ? "no such exec is running" : NULL);
                        else
                                reply(fd, json_pack("{s:b}", "ok", 1));
                } else if (strcmp(op, SBX_SV_OP_FREEZE) == 0) {
                        json_t *f = json_object_get(req, "frozen");
                        char *why = NULL;
                        int r = !json_is_boolean(f) ? -EINVAL
                                                    : sbx_sandbox_freeze(S.sb, json_is_true(f), &why);
                        if (r < 0)
                                reply_err(fd, -r, why ? why : "frozen: true or false");
                        else
                                reply(fd, json_pack("{s:b, s:b}", "ok", 1, "frozen",
                                                  sbx_sandbox_frozen(S.sb)));
                        free(why);
                } else if (strcmp(op, SBX_SV_OP_NETWORK) == 0)
                        handle_network(fd, req);
                else if (strcmp(op, SBX_SV_OP_DESTROY) == 0) {
                        sbx_sandbox_kill(S.sb);
                        reply(fd, json_pack("{s:b}", "ok", 1));
                } else
                        reply_err(fd, EINVAL, "unknown op");
                json_decref(req);
        }
        for (int i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        if (n > 0 || first) /* (the first was counted when its connection came) */
                conns_add(-1);
        bool failed = reply_failed;
        reply_failed = false;
        return n > 0 && !failed;
}

/* One connection: its requests, one after another, until the server closes it (it may keep one
 * an exec was answered on for the next: "keep"). conns counts the request being answered, not
 * the connection waiting for one. */
static void *conn_thread(void *arg) {
        int fd = (int) (intptr_t) arg;
        char *buf = malloc(SBX_SV_REQ_MAX + 1);
        if (!buf)
                conns_add(-1); /* (its first request's count) */
        for (bool first = true; buf; first = false) {
                if (!one_request(fd, buf, first))
                        break;
        }
        free(buf);
        close(fd);
        return NULL;
}

static void on_conn(void *ud) {
        int c = accept4(S.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
                return;
        /* the connection's own reads block; only the accept is non-blocking */
        int fl = fcntl(c, F_GETFL);
        (void) fcntl(c, F_SETFL, fl & ~O_NONBLOCK);
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 256 * 1024);
        conns_add(1);
        if (pthread_create(&t, &a, conn_thread, (void *) (intptr_t) c) != 0) {
                close(c);
                conns_add(-1);
        }
        pthread_attr_destroy(&a);
}

static void on_ready(sbx_sandbox *sb, void *ud) {
        /* our connections' threads use it until the last has answered, which may be after
         * sbx_run_serve() returns: held until then */
        S.sb = sbx_sandbox_ref(sb);
        if (S.budget_carry > 0)
                sbx_sandbox_add_budget_used(sb, S.budget_carry);
        char line[4200];
        const char *scratch = sbx_sandbox_scratch(sb), *home = sbx_sandbox_home(sb);
        snprintf(line, sizeof line, SBX_SV_READY_FMT, sbx_sandbox_init_pid(sb), (int) getpid(),
                sbx_sandbox_backend(sb) ? sbx_sandbox_backend(sb) : "-", scratch ? scratch : "-",
                home ? home : "-");
        say_ready(line);
}

static int listen_on(const char *path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        mode_t old = umask(0077);
        int r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0 || listen(fd, 128) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* --secrets-fd: {"NAME": "BASE64", ...} from the server, read once; never in argv or env. */
static int read_secrets(sbx_run *run, int fd) {
        json_error_t je;
        FILE *f = fdopen(fd, "r");
        if (!f)
                return -errno;
        json_t *j = json_loadf(f, 0, &je);
        fclose(f);
        if (!json_is_object(j)) {
                json_decref(j);
                return -EINVAL;
        }
        const char *k;
        json_t *v;
        int r = 0;
        json_object_foreach(j, k, v) {
                const char *s = json_string_value(v);
                if (!s) {
                        r = -EINVAL;
                        break;
                }
                char *buf = NULL;
                size_t o = 0;
                r = sbx_base64_decode(s, strlen(s), false, &buf, &o);
                if (r >= 0)
                        r = sbx_run_add_secret(run, k, buf, o);
                if (buf) {
                        explicit_bzero(buf, o);
                        free(buf);
                }
                if (r < 0)
                        break;
        }
        json_decref(j);
        return r;
}

/* --config-fd: the profile and policy as the server resolved them at create (its
 * sbx_config_encode() bytes), read to the end; used instead of --profile and --policy, so that a
 * file edited between the create and this start is not read again. */
static int read_config(sbx_run *run, int fd) {
        size_t n = 0, cap = 16384;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (n == cap) {
                        char *nb = cap < 4 * 1024 * 1024 ? realloc(buf, cap * 2) : NULL;
                        if (!nb) {
                                free(buf);
                                return -E2BIG;
                        }
                        buf = nb;
                        cap *= 2;
                }
                ssize_t k = read(fd, buf + n, cap - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = -errno;
                        free(buf);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        close(fd);
        int r = n > 0 ? sbx_run_set_resolved_config(run, buf, n) : -ENODATA;
        free(buf);
        return r;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: sandboxer supervise --id ID --socket PATH --state DIR [--profile NAME|FILE]\n"
                   "                           [--policy FILE] [--backend NAME] [--workspace DIR]\n"
                   "                           [--ready-fd N] [--budget-used SECONDS] [--secrets-fd N]\n"
                   "                           [--config-fd N] [--volume HOST:TARGET:ro|rw]...\n\n"
                   "The supervisor of one persistent sandbox, started by 'sandboxer serve' (internal:\n"
                   "it is not meant to be run by hand). It starts the sandbox and serves requests on\n"
                   "the unix socket PATH until the sandbox is destroyed.\n\n"
                   "  --id ID             the sandbox id (names it in logs)\n"
                   "  --socket PATH       where to listen (SOCK_SEQPACKET, mode 0600)\n"
                   "  --state DIR         where exec reports are kept (DIR/execs/EXEC_ID.json)\n"
                   "  --profile NAME|FILE the profile (default profile.default)\n"
                   "  --policy FILE       the site policy file\n"
                   "  --backend NAME      native or landlock (default: the policy's choice)\n"
                   "  --workspace DIR     the host directory mounted as the workspace\n"
                   "  --volume HOST:TARGET:ro|rw  a volume's filesystem bound at TARGET (repeatable)\n"
                   "  --ready-fd N        write 'ready INIT_PID PID BACKEND SCRATCH' or\n"
                   "                      'error MESSAGE' there, once\n"
                   "  --budget-used S     seconds of budget_s already spent (recreate)\n"
                   "  --secrets-fd N      the profile's secrets, JSON {NAME: BASE64}, read from N\n"
                   "  --config-fd N       the profile and policy as the server resolved them (bytes of\n"
                   "                      this build's own format), read from N; --profile and --policy\n"
                   "                      then only name them\n"
                   "  --spawner-fd N      instead: the server's spawner of supervisors, its requests\n"
                   "                      on the socket N (started once by 'sandboxer serve')\n"
                   "  -h, --help          this text\n");
}

/* ---- the spawner ---------------------------------------------------------------------------- */

/* One request (daemon/spawner.c has the whole story): the supervisor started with the
 * descriptors it came with as 3, 4, 5, its output appended to its log. The spawn's errno; *pid. */
static int spawn_one(const char *buf, size_t len, int *fds, size_t nfds, pid_t *pid) {
        sbx_spawn_hdr h;
        if (len < sizeof h)
                return EINVAL;
        memcpy(&h, buf, sizeof h);
        size_t want = 1 + !!(h.flags & SBX_SPAWN_SECRETS) + !!(h.flags & SBX_SPAWN_CONFIG);
        if (h.magic != SBX_SPAWN_MAGIC || h.nstr < 3 || h.nstr > 2 + SBX_SPAWN_ARGV_MAX || nfds != want)
                return EINVAL;
        const char *str[2 + SBX_SPAWN_ARGV_MAX + 1];
        const char *p = buf + sizeof h, *end = buf + len;
        for (uint32_t i = 0; i < h.nstr; i++) {
                const char *z = memchr(p, 0, (size_t) (end - p));
                if (!z)
                        return EINVAL;
                str[i] = p;
                p = z + 1;
        }
        str[h.nstr] = NULL;
        /* above 3..5, so that none is overwritten before its own turn */
        for (size_t i = 0; i < nfds; i++)
                if (fds[i] < 10) {
                        int n = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
                        if (n < 0)
                                return errno;
                        close(fds[i]);
                        fds[i] = n;
                }
        int ready = fds[0], sec = h.flags & SBX_SPAWN_SECRETS ? fds[1] : -1,
            cfg = h.flags & SBX_SPAWN_CONFIG ? fds[nfds - 1] : -1;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sbx_sv_spawnattr(&at);
        (void) sbx_sv_spawn_fds(&fa, str[1], ready, sec, cfg);
        /* nothing else to close: every other descriptor here is close-on-exec */
        extern char **environ;
        int r = posix_spawn(pid, str[0], &fa, &at, (char *const *) (str + 2), environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        return r;
}

/* The loop: a request, a spawn, the answer with the child's pidfd (taken before this process
 * could reap it); its children reaped as they end (SIGCHLD through a signalfd). Ends when the
 * server closes its end. */
static int sv_spawner(int fd) {
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, NULL);
        int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        char *buf = malloc(SBX_SPAWN_MSG_MAX);
        if (!buf)
                return SBX_EXIT_FAILURE;
        for (;;) {
                struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
                if (poll(pf, sigfd >= 0 ? 2 : 1, sigfd >= 0 ? -1 : 1000) < 0 && errno != EINTR)
                        break;
                struct signalfd_siginfo si;
                while (sigfd >= 0 && read(sigfd, &si, sizeof si) > 0)
                        ;
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                union {
                        char b[CMSG_SPACE(3 * sizeof(int))];
                        struct cmsghdr align;
                } c = {0};
                struct iovec iov = {.iov_base = buf, .iov_len = SBX_SPAWN_MSG_MAX};
                struct msghdr mh = {
                        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof c.b};
                ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0) /* the server is gone */
                        break;
                int fds[3];
                size_t nfds = 0;
                for (struct cmsghdr *x = CMSG_FIRSTHDR(&mh); x; x = CMSG_NXTHDR(&mh, x))
                        if (x->cmsg_level == SOL_SOCKET && x->cmsg_type == SCM_RIGHTS) {
                                size_t k = (x->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                for (size_t i = 0; i < k; i++) {
                                        int f;
                                        memcpy(&f, CMSG_DATA(x) + i * sizeof(int), sizeof f);
                                        if (nfds < 3)
                                                fds[nfds++] = f;
                                        else
                                                close(f);
                                }
                        }
                pid_t pid = 0;
                int err = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
                                  ? E2BIG
                                  : spawn_one(buf, (size_t) n, fds, nfds, &pid);
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                int pidfd = err == 0 ? (int) syscall(SYS_pidfd_open, pid, 0) : -1;
                int32_t ans[2] = {err, err == 0 ? pid : 0};
                int s;
                if (pidfd >= 0)
                        s = sbx_send_with_fd(fd, ans, sizeof ans, pidfd);
                else {
                        ssize_t k;
                        while ((k = send(fd, ans, sizeof ans, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                                ;
                        s = k < 0 ? -errno : 0;
                }
                if (pidfd >= 0)
                        close(pidfd);
                if (s < 0)
                        break;
        }
        free(buf);
        if (sigfd >= 0)
                close(sigfd);
        return 0; /* the children left are re-parented to init (or a subreaper) */
}

int verb_supervise(int argc, char **argv) {
        static const struct option opts[] = {
                {"id", required_argument, NULL, 'i'},
                {"socket", required_argument, NULL, 's'},
                {"state", required_argument, NULL, 'd'},
                {"profile", required_argument, NULL, 'p'},
                {"policy", required_argument, NULL, 'P'},
                {"backend", required_argument, NULL, 'b'},
                {"workspace", required_argument, NULL, 'w'},
                {"volume", required_argument, NULL, 'V'},
                {"ready-fd", required_argument, NULL, 'r'},
                {"budget-used", required_argument, NULL, 'u'},
                {"secrets-fd", required_argument, NULL, 'S'},
                {"config-fd", required_argument, NULL, 'C'},
                {"spawner-fd", required_argument, NULL, 'X'},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        sbx_run *run = sbx_run_new();
        if (!run) {
                cli_error("out of memory");
                return SBX_EXIT_FAILURE;
        }
        /* the server that started this supervisor removes the cgroups killed ones left (its
         * reaper: at start, when a supervisor dies, every minute), not each create */
        (void) sbx_run_set_sweep_leftovers(run, false);
        int c, rc = 0, li = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, &li)) >= 0) {
                switch (c) {
                case 'i':
                        S.id = optarg;
                        break;
                case 's':
                        S.socket_path = optarg;
                        break;
                case 'd':
                        S.state_dir = optarg;
                        break;
                case 'p':
                        rc = sbx_run_set_profile(run, optarg);
                        break;
                case 'P':
                        rc = sbx_run_set_policy_file(run, optarg);
                        break;
                case 'b':
                        rc = sbx_run_set_backend(run, optarg);
                        break;
                case 'w':
                        rc = sbx_run_set_workspace(run, optarg);
                        break;
                case 'V': { /* HOST:TARGET:ro|rw */
                        char *copy = strdup(optarg), *t = copy ? strchr(copy, ':') : NULL,
                             *a = t ? strrchr(t + 1, ':') : NULL;
                        if (!a || (strcmp(a + 1, "ro") != 0 && strcmp(a + 1, "rw") != 0)) {
                                free(copy);
                                cli_error("--volume: '%s' is not HOST:TARGET:ro|rw", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        *t = *a = 0;
                        rc = sbx_run_add_volume(run, copy, t + 1, strcmp(a + 1, "rw") == 0);
                        free(copy);
                        break;
                }
                case 'r': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*end || v < 3 || v > 1023 || fcntl((int) v, F_GETFD) < 0) {
                                cli_error("--ready-fd: '%s' is not an open descriptor", optarg);
                                sbx_run_free(run);
                                return SBX_EXIT_FAILURE;
                        }
                        S.ready_fd = (int) v;
                        (void) fcntl(S.ready_fd, F_SETFD, FD_CLOEXEC);
                        break;
                }
                case 'u': {
                        char *end;
                        S.budget_carry = strtod(optarg, &end);
                        if (*end || S.budget_carry < 0) {
                                cli_error("--budget-used: '%s' is not a number of seconds", optarg);
                                sbx_run_free(run);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                }
                case 'S': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*end || v < 3 || v > 1023 || read_secrets(run, (int) v) < 0) {
                                cli_error("--secrets-fd: '%s' is not a descriptor with the secrets (JSON)",
                                        optarg);
                                sbx_run_free(run);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                }
                case 'C': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        int cr = *end || v < 3 || v > 1023 ? -EBADF : read_config(run, (int) v);
                        if (cr < 0) {
                                cli_error("--config-fd: '%s' is not a descriptor with the resolved "
                                          "configuration (%s)",
                                        optarg, strerror(-cr));
                                sbx_run_free(run);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                }
                case 'X': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*end || v < 3 || v > 1023 || fcntl((int) v, F_GETFD) < 0 || argc != optind) {
                                cli_error(
                                        "--spawner-fd: '%s' is not an open descriptor (and it comes alone)",
                                        optarg);
                                sbx_run_free(run);
                                return SBX_EXIT_FAILURE;
                        }
                        sbx_run_free(run);
                        return sv_spawner((int) v);
                }
                case 'h':
                        usage(stdout);
                        sbx_run_free(run);
                        return 0;
                default:
                        usage(stderr);
                        sbx_run_free(run);
                        return SBX_EXIT_FAILURE;
                }
                if (rc < 0) {
                        cli_error("--%s: %s", opts[li].name, strerror(-rc));
                        sbx_run_free(run);
                        return SBX_EXIT_FAILURE;
                }
        }
        if (!S.id || !S.socket_path || !S.state_dir || optind != argc) {
                cli_error("supervise needs --id, --socket and --state (and no other arguments)");
                usage(stderr);
                sbx_run_free(run);
                return SBX_EXIT_FAILURE;
        }
        if (mkdir(S.state_dir, 0700) < 0 && errno != EEXIST) {
                cli_error("cannot create %s: %m", S.state_dir);
                say_ready("error cannot create the state directory\n");
                sbx_run_free(run);
                return SBX_EXIT_FAILURE;
        }
        S.listen_fd = listen_on(S.socket_path);
        if (S.listen_fd < 0) {
                cli_error("cannot listen on %s: %s", S.socket_path, strerror(-S.listen_fd));
                say_ready("error cannot listen on the supervisor socket\n");
                sbx_run_free(run);
                return SBX_EXIT_FAILURE;
        }
        sbx_serve_hooks hooks = {.on_ready = on_ready, .extra_fd = S.listen_fd, .on_extra = on_conn};
        signal(SIGPIPE, SIG_IGN);
        int r = sbx_run_serve(run, &hooks);
        /* gone: no more connections; those in flight answered (an exec's report: bounded, each
         * has its answer by now or never will), then the final report beside the execs' */
        (void) unlink(S.socket_path);
        close(S.listen_fd);
        conns_wait(5000);
        pthread_mutex_lock(&conns_lock);
        bool drained = conns == 0;
        closing = true; /* a kept connection's next request finds no sandbox, not freed memory */
        pthread_mutex_unlock(&conns_lock);
        if (drained && S.sb) /* else a thread still answers: the process exits under it */
                sbx_sandbox_unref(S.sb);
        char path[4200];
        snprintf(path, sizeof path, "%s/sandbox.json", S.state_dir);
        const char *rep = sbx_run_report_json(run);
        FILE *f = rep ? fopen(path, "we") : NULL;
        if (f) {
                fputs(rep, f);
                fclose(f);
        }
        if (r != 0) {
                char line[1200];
                const char *err = sbx_run_error(run);
                snprintf(line, sizeof line, SBX_SV_ERROR_PREFIX "%s\n",
                        err ? err : "the sandbox could not be started");
                for (char *p = line + 6; *p && p[1]; p++)
                        if (*p == '\n')
                                *p = ' ';
                say_ready(line);
                cli_error("%s", err ? err : "the sandbox could not be started");
        }
        sbx_run_free(run);
        return r == 0 ? 0 : SBX_EXIT_FAILURE;
}
