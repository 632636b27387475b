/* launch.c — the one launch path of the init-based backends: spawn, supervise, classify; the kernel audit
 * log as evidence of refused writes. */
#include "backend/common.h"

#include <fcntl.h>

#include "backend/persist.h"
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "basic/debug.h"
#include "basic/strv.h"
#include "isolate/audit.h"
#include "supervise/egress-run.h"

static int attach_cgroup(pid_t pid, void *userdata, sbx_error *e) {
        int r = sbx_cgroup_attach(userdata, pid);
        if (r < 0)
                return sbx_error_set(
                        e, r, "cgroup: attach", "cannot move the sandbox into its cgroup: %s", strerror(-r));
        return 0;
}

static int kill_cgroup(void *userdata) {
        return sbx_cgroup_kill(userdata);
}

/* The host's audit state, as sbx_audit_probe() answers it, remembered for a few seconds in the
 * runtime dir: the kernel answers a status request from a kernel thread it makes for the reply
 * (~0.1 ms), too much to ask before every run where the answer is almost always the same. A
 * stale "on" costs nothing false: the status asked at the end of the run says whether audit was
 * still on, and the report follows it. */
#define AUDIT_STATE_TTL_NS (5 * 1000000000ull)
static int audit_state(void) {
        char rt[PATH_MAX], path[PATH_MAX + 32], buf[16];
        /* the path alone to read (the file's owner is checked); the directory is made, and
         * checked, only to write */
        sbx_backend_runtime_dir_path(rt, sizeof rt);
        snprintf(path, sizeof path, "%s/audit.state", rt);
        struct stat st;
        struct timespec now;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
                clock_gettime(CLOCK_REALTIME, &now) == 0) {
                int64_t age = ((int64_t) now.tv_sec - st.st_mtim.tv_sec) * 1000000000ll +
                              (now.tv_nsec - st.st_mtim.tv_nsec);
                ssize_t n = read(fd, buf, sizeof buf - 1);
                if (age >= 0 && (uint64_t) age < AUDIT_STATE_TTL_NS && n > 0) {
                        buf[n] = 0;
                        char *end;
                        errno = 0;
                        long v = strtol(buf, &end, 10);
                        /* "0\n" or "-ERRNO\n" as written below; anything else is asked again */
                        if (errno == 0 && end != buf && streq(end, "\n") && v <= 0 && v > -4096)
                                return (int) v;
                }
        }
        int r = sbx_audit_probe();
        if (sbx_backend_runtime_dir(rt, sizeof rt) < 0)
                return r;
        char tmp[PATH_MAX + 48];
        snprintf(tmp, sizeof tmp, "%s.%d", path, (int) getpid());
        _cleanup_close_ int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (w >= 0) {
                int k = snprintf(buf, sizeof buf, "%d\n", r);
                if (write(w, buf, (size_t) k) != k || rename(tmp, path) < 0)
                        (void) unlink(tmp);
        }
        return r;
}

int sbx_backend_audit_reader(
        const sbx_config *cfg, const sbx_run_io *io, int ll_abi, bool mounts, sbx_report *rep) {
        const sbx_profile *pr = cfg->profile;
        if (pr->observe_fs_writes)
                return -1; /* the notification is the source: sbx_backend_launch says so */
        char why[200];
        int fd = -1, r;
        if (pr->observe == SBX_OBSERVE_OFF)
                snprintf(why, sizeof why, "observe: off");
        else if (io->persist)
                snprintf(why, sizeof why, "a persistent sandbox does not read the audit log");
        else if (ll_abi < 7)
                snprintf(why, sizeof why, "Landlock ABI %d writes no audit records (7 does)", ll_abi);
        else if (geteuid() != 0)
                snprintf(why, sizeof why, "reading the kernel's audit log needs root");
        else if ((r = audit_state()) < 0)
                snprintf(why, sizeof why, "%s", sbx_audit_why(r));
        else if ((fd = sbx_audit_open()) < 0) {
                snprintf(why, sizeof why, "cannot open the audit log: %s", strerror(-fd));
                fd = -1;
        }
        if (fd >= 0) {
                rep->fs_write_evidence = "landlock_audit";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note, "%s",
                        mounts ? "the kernel's Landlock denial records (the path the kernel resolved; "
                                 "for a creation, its directory), for writes into the sandbox's own "
                                 "tree (/etc/x, /x): a write onto a read-only bind of a host path "
                                 "(/usr, the workspace) is refused by the mount first, and one that "
                                 "the file's permissions refuse, by those first: neither is recorded "
                                 "(observe.fs_writes records them)"
                               : "the kernel's Landlock denial records (the path the kernel resolved; "
                                 "for a creation, its directory); a write that the file's permissions "
                                 "refuse is refused before Landlock and not recorded (observe.fs_writes "
                                 "records it)");
                return fd;
        }
        rep->fs_write_evidence = "none";
        snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                "%s: refused writes are not recorded (observe.fs_writes: true records them, at a cost per "
                "write)",
                why);
        return -1;
}

int sbx_backend_egress_new(const sbx_config *cfg, sbx_report *rep, int host_fd, const char *secret,
        sbx_egress_run **ret, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_close_ int fd = host_fd;
        _cleanup_(sbx_egress_run_freep) sbx_egress_run *egress = NULL;
        int r = sbx_egress_run_new(pr->egress, pr->egress_deny, cfg->policy->net_hosts, &egress, e);
        if (r < 0 || (r = sbx_egress_run_services(egress, pr->net_services, e)) < 0)
                return r;
        bool on_host = fd >= 0;
        if (on_host && (r = sbx_egress_run_on_host(egress, TAKE_FD(fd), secret)) < 0)
                return sbx_error_set(e, -r, "egress",
                        "cannot serve the egress proxy on the host's loopback: %s", strerror(-r));
        /* named now: a persistent sandbox's execs take them from here */
        STRV_FOREACH(sv, pr->net_services) {
                const char *t1 = strchr(*sv, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                _cleanup_free_ char *name = t1 ? strndup(*sv, (size_t) (t1 - *sv)) : NULL,
                                    *target = t2 ? strndup(t1 + 1, (size_t) (t2 - t1 - 1)) : NULL;
                if (!name || !target ||
                        sbx_report_add_service(rep, name, target, strstr(*sv, "\ttcp") != NULL) < 0)
                        return sbx_error_set(e, ENOMEM, "services", "out of memory");
        }
        sbx_report_set_egress_proxy(rep, sbx_egress_run_address(egress));
        (void) sbx_report_set_fence(rep, "egress",
                "only through the supervisor's proxy at %s (HTTP CONNECT, absolute URIs, "
                "SOCKS5), by network.egress%s",
                sbx_egress_run_address(egress),
                on_host ? "; on the host's loopback: a credential per sandbox, "
                          "Landlock allows connecting to that port only"
                        : "");
        *ret = TAKE_PTR(egress);
        return 0;
}

int sbx_backend_launch(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_spawn_params *sp,
        sbx_cgroup *cg, const sbx_seccomp_opts *sc_opts, char *const *writable, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_close_ int oom_fd = -EBADF;
        int outp[2] = {-1, -1}, errp[2] = {-1, -1}, spair[2] = {-1, -1}, master = -1, slave = -1;
        _cleanup_(sbx_egress_run_freep) sbx_egress_run *egress = NULL;
        int r;

        /* network.egress: the supervisor's proxy, on the socket the spawn makes inside (or on
         * the host's loopback, with a credential: the backend made that socket) */
        if (sp->egress_port || sp->egress_on_host || sp->egress_inside) {
                int fd = sp->egress_on_host ? sp->egress_host_fd : -EBADF;
                sp->egress_host_fd = -EBADF;
                if ((r = sbx_backend_egress_new(cfg, rep, fd, sp->egress_secret, &egress, e)) < 0)
                        return r;
        }

        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
                socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, spair) < 0) {
                r = sbx_error_set(e, errno, "pipes", "cannot create pipes: %m");
                goto fail_fds;
        }
        /* The init's credentials come with its messages: the supervisor tells the init's own
         * calls apart by pid, also where a sandbox tool runs between us and it (bwrap). */
        (void) setsockopt(spair[0], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));
        /* Without a pid namespace the init is no PID 1: be the subreaper its orphans come to. */
        bool no_pidns = !(sp->clone_flags & CLONE_NEWPID);
        if (no_pidns && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                r = sbx_error_set(e, errno, "prctl", "cannot become a child subreaper: %m");
                goto fail_fds;
        }
        sp->stdin_fd = io->in_fd;
        sp->stdout_fd = outp[1];
        sp->stderr_fd = errp[1];
        sp->status_fd = spair[1];
        if (io->tty) {
                /* A pseudo-terminal of the sandbox's own: its slave is the command's 0, 1 and 2
                 * (and controlling terminal); we relay the master to the caller's stdio. */
                master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                char name[64];
                if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
                        ptsname_r(master, name, sizeof name) != 0 ||
                        (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
                        r = sbx_error_set(e, errno, "tty", "cannot allocate a pseudo-terminal: %m");
                        goto fail_fds;
                }
                struct winsize ws;
                if (ioctl(io->out_fd, TIOCGWINSZ, &ws) == 0 || ioctl(io->in_fd, TIOCGWINSZ, &ws) == 0)
                        (void) ioctl(master, TIOCSWINSZ, &ws);
                sp->stdin_fd = sp->stdout_fd = sp->stderr_fd = slave;
        }

        /* The child joins its v1 groups itself ("0" to their tasks files) and the cgroup2 group
         * at clone: no pid written to a cgroup.procs, which would wait for an RCU grace period
         * (~10-15 ms, see cgroup.h). The parent moves it by pid only when that cannot be. */
        int cg_fds[_SBX_CG_CONTROLLER_MAX];
        int n_cg_fds = 0;
        sp->cgroup_fd = -1;
        if (cg) {
                sp->cgroup_fd = sbx_cgroup_v2_fd(cg);
                n_cg_fds = sbx_cgroup_self_attach_fds(cg, cg_fds, ELEMENTSOF(cg_fds));
                if (n_cg_fds >= 0) {
                        sp->self_attach_fds = cg_fds;
                        sp->n_self_attach_fds = (size_t) n_cg_fds;
                } else {
                        n_cg_fds = 0;
                        sp->after_clone = attach_cgroup;
                        sp->userdata = cg;
                }
        }

        if (!rep->fs_write_evidence) {
                rep->fs_write_evidence = pr->observe_fs_writes && sc_opts ? "notify" : "none";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note, "%s",
                        pr->observe_fs_writes && sc_opts
                                ? "observe.fs_writes: write-intent calls are routed to the supervisor, "
                                  "which refuses those outside the writable set"
                                : "refused writes are not recorded on this backend (observe.fs_writes: "
                                  "true records them)");
        }

        sbx_spawned sv;
        uint64_t t0 = sbx_now_ns();
        sbx_debug_mark("spawning");
        r = sbx_spawn(sp, &sv, e);
        sbx_debug_mark("init running");
        if (r >= 0 && cg && !io->keep_leftovers)
                (void) sbx_cgroup_gc_dead_siblings(cg); /* see gc_leftovers() */
        for (int i = 0; i < n_cg_fds; i++)
                close(cg_fds[i]);
        close(outp[1]), close(errp[1]), close(spair[1]);
        outp[1] = errp[1] = spair[1] = -1;
        slave = safe_close(slave);
        if (r < 0)
                goto fail_fds;
        rep->setup_ms = (int64_t) ((sv.ready_ns - t0) / 1000000);

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        sbx_supervise_params svp = {
                .pid = sv.pid,
                .pidfd = sv.pidfd,
                .status_fd = spair[0],
                .out_fd = master >= 0 ? master : outp[0],
                .err_fd = master >= 0 ? -1 : errp[0],
                .tty_master = master,
                .tty_in = master >= 0 ? io->in_fd : -1,
                .fwd_out = io->out_fd,
                .fwd_err = io->err_fd,
                .output_cap = sbx_limit_bytes(&cfg->limits, SBX_LIMIT_OUTPUT_MB),
                .start_ns = sv.ready_ns,
                .timeout_s = budget > 0 && budget < timeout ? budget : timeout,
                .grace_s = 2.0,
                .handle_signals = io->handle_signals,
                .oom_fd = -1,
                .seccomp = sc_opts,
                .report = rep,
                .writable = writable,
                .loopback = pr->loopback,
                .cmd_allow = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_allow : NULL,
                .cmd_deny = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_deny : NULL,
                .cmd_strict = pr->cmd_mode == SBX_CMD_MODE_STRICT,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
                .reap_orphans = no_pidns,
                .audit_fd = sp->audit_fd > 0 ? sp->audit_fd : -1,
                .egress = egress,
        };
        if (cg) {
                svp.kill_all = kill_cgroup;
                svp.userdata = cg;
                oom_fd = sbx_cgroup_event_fd(cg);
                svp.oom_fd = oom_fd >= 0 ? oom_fd : -1;
        }
        if (master >= 0) {
                /* the supervisor owns the master now; the unused pipes go */
                outp[0] = safe_close(outp[0]);
                errp[0] = safe_close(errp[0]);
                master = -1;
        }
        if (io->persist) {
                /* the init's stdio: nobody reads it */
                svp.fwd_out = svp.fwd_err = -1;
                const char *cwd = NULL;
                for (char *const *a = sp->init_argv; a && *a && a[1]; a++)
                        if (streq(*a, "--cwd"))
                                cwd = a[1];
                int ctl = fcntl(spair[0], F_DUPFD_CLOEXEC, 3);
                if (ctl < 0)
                        r = sbx_error_set(e, errno, "persist", "dup: %m");
                else
                        r = sbx_persist_attach(
                                io->persist, cfg, rep, &svp, cg, ctl, sv.pid, sv.pidfd, sp->envp, cwd, e);
                if (r < 0) {
                        (void) syscall(SYS_pidfd_send_signal, sv.pidfd, SIGKILL, NULL, 0);
                        svp.timeout_s = 0.001;
                }
        }
        sbx_supervise_result res;
        int r2 = sbx_supervise(&svp, &res, r < 0 ? NULL : e);
        /* the execs' threads first (they settle their connections with the proxy), then the
         * proxy stops and says what it saw */
        if (io->persist)
                sbx_persist_detach(io->persist);
        if (egress)
                (void) sbx_egress_run_to_report(egress, rep, sv.ready_ns);
        if (svp.audit_fd >= 0 && res.audit_off) {
                rep->fs_write_evidence = "none";
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                        "the host's audit was off at the end of the run: refused writes may not all be "
                        "recorded");
        } else if (svp.audit_fd >= 0 && res.audit_lost)
                snprintf(rep->fs_write_note, sizeof rep->fs_write_note,
                        "the kernel's Landlock denial records; some were lost (a burst beyond the "
                        "socket's buffer): the counts are low");
        if (r >= 0)
                r = r2;
        sbx_debug_mark_at("init: command started", res.started_ns);
        sbx_debug_mark_at("init: command ended", res.ended_ns);
        sbx_debug_mark("sandbox gone (supervised)");
        close(sv.pidfd);
        if (r < 0)
                return r;
        if (io->persist && sbx_persist_served(io->persist)) {
                sbx_persist_report_end(rep, &res, t0);
                return 0;
        }

        r = sbx_backend_classify(cfg, rep, &res, &svp, cg, t0, sv.ready_ns, NULL, e);
        sbx_debug_mark("outcome classified");
        if (r < 0)
                return r;
        return 0;

fail_fds:
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
                safe_close(spair[i]);
        }
        safe_close(master);
        safe_close(slave);
        return r;
}
