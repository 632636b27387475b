/* persist.c — persistent sandboxes (see persist.h). */
#include "backend/persist.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "basic/debug.h"
#include "basic/strv.h"
#include "init/protocol.h"
#include "supervise/egress-run.h"

typedef struct exec_slot {
        char id[72];
        int pidfd; /* the exec's process's */
        pid_t pid; /* as we see it; 0 until it said hello (it becomes the command) */
        int pending_sig; /* signalled before its hello: sent once it is known */
        bool exec_seen;
        uint64_t start_ns;
        sbx_report *rep;
        uint64_t serial; /* the egress proxy's owner key for its connections */
        /* its timeout's clock (the supervise loop's timer): held while the sandbox is frozen */
        int timer_fd;
        struct itimerspec held;
        uint64_t paused_ns; /* time it spent frozen: not charged to the budget */
        struct exec_slot *next;
} exec_slot;

struct sbx_sandbox {
        unsigned refs; /* sbx_sandbox_ref(): its memory outlives the run for those holding one */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        sbx_serve_hooks hooks;
        /* set by attach, valid while serving */
        const sbx_config *cfg;
        sbx_report *rep; /* the sandbox's own report (loop thread) */
        sbx_cgroup *cg;
        int ctl_fd;
        pid_t init_pid;
        int init_pidfd;
        char **envp;
        char *cwd;
        bool serving, gone;
        unsigned active;
        double budget_used_s;
        const char *backend; /* static string */
        bool served; /* the init said it was serving: its end is the sandbox's end, not a failure */
        bool frozen; /* paused (sbx_sandbox_freeze) since frozen_ns */
        uint64_t frozen_ns;
        exec_slot *execs;
        uint64_t next_serial;
        struct sbx_egress_run *egress; /* the sandbox's egress proxy, or NULL */
        sbx_notify_route rt;
        /* execs sent to the init whose process is not known yet: the loop holds notifications
         * it cannot place meanwhile (route_hold), asked again on hold_fd (an eventfd) */
        unsigned starting;
        int hold_fd;
};

sbx_sandbox *sbx_sandbox_new_internal(const sbx_serve_hooks *hooks) {
        sbx_sandbox *sb = calloc(1, sizeof *sb);
        if (!sb)
                return NULL;
        pthread_mutex_init(&sb->lock, NULL);
        pthread_cond_init(&sb->cond, NULL);
        sb->hold_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); /* -1: nothing is held */
        if (hooks)
                sb->hooks = *hooks;
        else
                sb->hooks.extra_fd = -1;
        sb->ctl_fd = -1;
        sb->init_pidfd = -1;
        sb->refs = 1;
        return sb;
}

_public_ sbx_sandbox *sbx_sandbox_ref(sbx_sandbox *sb) {
        if (sb)
                __atomic_add_fetch(&sb->refs, 1, __ATOMIC_RELAXED);
        return sb;
}

_public_ void sbx_sandbox_unref(sbx_sandbox *sb) {
        if (!sb || __atomic_sub_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        safe_close(sb->ctl_fd);
        safe_close(sb->hold_fd);
        strv_free(sb->envp);
        free(sb->cwd);
        pthread_mutex_destroy(&sb->lock);
        pthread_cond_destroy(&sb->cond);
        free(sb);
}

/* Under the lock: the sandbox no longer serves, and what its launch owns (the init's pidfd, the
 * cgroup, the report, the egress proxy) is no longer reached through it. */
static void forget_launch_locked(sbx_sandbox *sb) {
        sb->gone = true;
        sb->serving = false;
        sb->init_pidfd = -1;
        sb->cg = NULL;
        sb->rep = NULL;
        sb->egress = NULL;
}

/* The run is over: what it pointed into (its configuration, cgroup, report) goes with it, and
 * the calls still made on a sandbox someone holds answer as for one that is gone. */
sbx_sandbox *sbx_sandbox_free_internal(sbx_sandbox *sb) {
        if (!sb)
                return NULL;
        pthread_mutex_lock(&sb->lock);
        forget_launch_locked(sb);
        sb->cfg = NULL;
        sb->init_pid = 0;
        pthread_mutex_unlock(&sb->lock);
        sbx_sandbox_unref(sb);
        return NULL;
}

static pid_t parent_of(pid_t pid) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* the name may hold anything: skip past its end */
        int ppid = 0;
        char state;
        if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
                return 0;
        return (pid_t) ppid;
}

/* The exec pid belongs to: its own process or a descendant of it (only itself: self_only).
 * Lock held. */
static exec_slot *slot_of(sbx_sandbox *sb, pid_t pid, bool self_only) {
        pid_t p = pid;
        for (int depth = 0; depth < 64 && p > 1; depth++) {
                for (exec_slot *x = sb->execs; x; x = x->next)
                        if (x->pid == p)
                                return x;
                if (self_only)
                        return NULL;
                p = parent_of(p);
        }
        return NULL;
}

static bool route_exec_first(void *ud, pid_t pid) {
        sbx_sandbox *sb = ud;
        pthread_mutex_lock(&sb->lock);
        exec_slot *x = slot_of(sb, pid, true);
        bool first = x && !x->exec_seen;
        if (first)
                x->exec_seen = true;
        pthread_mutex_unlock(&sb->lock);
        return first;
}

static void route_record(void *ud, pid_t pid, sbx_violation_kind kind, const char *action,
        const char *syscall, const sbx_detail *d, size_t n) {
        sbx_sandbox *sb = ud;
        pthread_mutex_lock(&sb->lock);
        exec_slot *x = slot_of(sb, pid, false);
        sbx_report *rep = x ? x->rep : sb->rep;
        uint64_t t0 = x ? x->start_ns : 0;
        if (rep)
                (void) sbx_report_add_violation(rep, kind, action,
                        t0 ? (int64_t) ((sbx_now_ns() - t0) / 1000000) : 0, syscall, d, n);
        pthread_mutex_unlock(&sb->lock);
}

/* The egress proxy: a connection is its exec's from its start (by the process that made it) to
 * its end, which the exec's end waits for (sbx_egress_run_settle). */
static uint64_t route_conn_owner(void *ud, int pid) {
        sbx_sandbox *sb = ud;
        pthread_mutex_lock(&sb->lock);
        exec_slot *x = pid > 0 ? slot_of(sb, (pid_t) pid, false) : NULL;
        uint64_t key = x ? x->serial : 0;
        pthread_mutex_unlock(&sb->lock);
        return key;
}

static void route_conn_end(void *ud, uint64_t owner, const sbx_report_conn *allowed,
        const sbx_egress_refusal *refused, const sbx_report_request *request) {
        sbx_sandbox *sb = ud;
        pthread_mutex_lock(&sb->lock);
        exec_slot *x = NULL;
        for (exec_slot *i = sb->execs; owner && i && !x; i = i->next)
                if (i->serial == owner)
                        x = i;
        sbx_report *rep = x ? x->rep : sb->rep;
        int64_t at = x ? (int64_t) ((sbx_now_ns() - x->start_ns) / 1000000) : 0;
        if (rep && request) { /* a host service's */
                sbx_report_request k = *request;
                k.at_ms = at;
                (void) sbx_report_add_request(rep, &k);
        } else if (rep && allowed) {
                sbx_report_conn k = *allowed;
                k.at_ms = at;
                (void) sbx_report_add_conn(rep, &k);
        } else if (rep && refused) {
                sbx_detail d[SBX_EGRESS_DETAILS];
                size_t nd = sbx_egress_refusal_details(refused, d);
                bool kill = sb->cfg && sb->cfg->profile->on_violation == SBX_ON_VIOLATION_KILL;
                /* the transparent path refuses at the connect() itself */
                const char *call = refused->via && streq(refused->via, "transparent") ? "connect" : NULL;
                (void) sbx_report_add_violation(
                        rep, SBX_VIOLATION_NETWORK_ACCESS, kill ? "killed" : "denied", at, call, d, nd);
                rep->egress_refused++;
        }
        pthread_mutex_unlock(&sb->lock);
}

/* A process of no exec we know while one is starting may be that exec's (its process runs
 * before its hello reaches us): its first execve and violations wait until we know. */
static bool route_hold(void *ud, pid_t pid) {
        sbx_sandbox *sb = ud;
        pthread_mutex_lock(&sb->lock);
        bool hold = sb->starting > 0 && !slot_of(sb, pid, false);
        pthread_mutex_unlock(&sb->lock);
        return hold;
}

/* One start less pending (its process known, or it never started): what waits is asked again. */
static void start_settled(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        sb->starting--;
        pthread_mutex_unlock(&sb->lock);
        if (sb->hold_fd >= 0)
                (void) !write(sb->hold_fd, &(uint64_t){1}, sizeof(uint64_t));
}

static const sbx_notify_route *route_for(sbx_sandbox *sb) {
        sb->rt = (sbx_notify_route){.exec_first = route_exec_first,
                .hold = sb->hold_fd >= 0 ? route_hold : NULL,
                .hold_fd = sb->hold_fd,
                .record = route_record,
                .conn_owner = route_conn_owner,
                .conn_end = route_conn_end,
                .userdata = sb};
        return &sb->rt;
}

bool sbx_persist_served(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        bool s = sb->served;
        pthread_mutex_unlock(&sb->lock);
        return s;
}

static void on_serving(void *ud, const char *observation) {
        sbx_sandbox *sb = ud;
        sbx_debug_mark("serving");
        pthread_mutex_lock(&sb->lock);
        if (sb->rep)
                sb->rep->observation = observation;
        sb->serving = sb->served = true;
        pthread_mutex_unlock(&sb->lock);
        if (sb->hooks.on_ready)
                sb->hooks.on_ready(sb, sb->hooks.userdata);
}

static void on_extra(void *ud) {
        sbx_sandbox *sb = ud;
        if (sb->hooks.on_extra)
                sb->hooks.on_extra(sb->hooks.userdata);
}

int sbx_persist_attach(sbx_sandbox *sb, const sbx_config *cfg, sbx_report *rep, sbx_supervise_params *svp,
        sbx_cgroup *cg, int ctl_fd, pid_t init_pid, int init_pidfd, char *const *envp, const char *cwd,
        sbx_error *e) {
        pthread_mutex_lock(&sb->lock);
        sb->cfg = cfg;
        sb->rep = rep;
        sb->cg = cg;
        sb->ctl_fd = ctl_fd;
        sb->init_pid = init_pid;
        sb->init_pidfd = init_pidfd;
        sb->egress = svp->egress;
        sb->envp = strv_copy(envp);
        sb->backend = rep->backend;
        sb->cwd = cwd ? strdup(cwd) : NULL;
        pthread_mutex_unlock(&sb->lock);
        if (!sb->envp || (cwd && !sb->cwd))
                return sbx_error_set(e, ENOMEM, "persist", "out of memory");
        svp->timeout_s = 0; /* execs have theirs; the sandbox ends by kill, TTL or budget */
        /* An exec's memory bomb ends that exec (the kernel's OOM kill in the sandbox's group, then
         * its init ends what is left of the exec's session; its report says memory_limit), not
         * the sandbox and every other exec with it — as in a microvm guest. */
        svp->oom_fd = -1;
        svp->output_cap = 0;
        svp->fwd_out = svp->fwd_err = -1;
        svp->route = route_for(sb);
        svp->on_serving = on_serving;
        svp->extra_fd = sb->hooks.extra_fd;
        svp->on_extra = sb->hooks.on_extra ? on_extra : NULL;
        svp->extra_userdata = sb;
        return 0;
}

void sbx_persist_report_end(sbx_report *rep, const sbx_supervise_result *res, uint64_t t0) {
        rep->wall_ms = (int64_t) ((res->reaped_ns - t0) / 1000000);
        rep->teardown_ms = (int64_t) ((sbx_now_ns() - res->reaped_ns) / 1000000);
        rep->status = res->violation_killed ? SBX_STATUS_VIOLATION : SBX_STATUS_EXITED;
        rep->has_exit_code = true;
        rep->exit_code = 0;
        rep->cli_exit = 0;
        rep->observation = res->listener ? "active" : res->observation_unavailable ? "unavailable" : "off";
}

void sbx_persist_detach(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        sb->gone = true;
        sb->serving = false;
        while (sb->active > 0)
                pthread_cond_wait(&sb->cond, &sb->lock);
        forget_launch_locked(sb); /* the egress proxy: stopped and freed by the launch after this */
        pthread_mutex_unlock(&sb->lock);
}

_public_ void sbx_sandbox_kill(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        if (!sb->gone) {
                if (sb->cg)
                        (void) sbx_cgroup_kill(sb->cg);
                if (sb->init_pidfd >= 0)
                        (void) syscall(SYS_pidfd_send_signal, sb->init_pidfd, SIGKILL, NULL, 0);
                /* a v1 freezer holds a SIGKILL until the thaw (v2's takes it frozen) */
                if (sb->frozen && sb->cg)
                        (void) sbx_cgroup_freeze(sb->cg, false, 1000);
                sb->frozen = false;
        }
        pthread_mutex_unlock(&sb->lock);
}

static int fail(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);

/* Hold (or give back) the timeout clocks of the execs running: a frozen exec is not timed. */
static void hold_timers(sbx_sandbox *sb, bool hold, uint64_t paused_ns) {
        static const struct itimerspec off = {{0, 0}, {0, 0}};
        for (exec_slot *x = sb->execs; x; x = x->next) {
                if (x->timer_fd < 0)
                        continue;
                if (hold) {
                        if (timerfd_gettime(x->timer_fd, &x->held) < 0)
                                x->held = off;
                        (void) timerfd_settime(x->timer_fd, 0, &off, NULL);
                } else {
                        if (x->held.it_value.tv_sec || x->held.it_value.tv_nsec)
                                (void) timerfd_settime(x->timer_fd, 0, &x->held, NULL);
                        x->held = off;
                        x->paused_ns += paused_ns;
                }
        }
}

_public_ int sbx_sandbox_freeze(sbx_sandbox *sb, bool frozen, char **ret_error) {
        if (ret_error)
                *ret_error = NULL;
        pthread_mutex_lock(&sb->lock);
        int r = 0;
        bool starting = false;
        for (exec_slot *x = sb->execs; x; x = x->next)
                starting = starting || x->pid == 0;
        if (!sb->serving || sb->gone)
                r = fail(ret_error, -ESRCH, "the sandbox is not running");
        else if (sb->frozen == frozen)
                r = 0; /* as asked already */
        else if (!sb->cg)
                r = fail(ret_error, -EOPNOTSUPP,
                        "the sandbox has no cgroup to freeze: this user has no delegated cgroup here "
                        "(sandboxer doctor says why and how to get one)");
        else if (frozen && starting)
                r = fail(ret_error, -EBUSY,
                        "an exec is starting in the sandbox; pause it once that exec runs");
        else {
                uint64_t now = sbx_now_ns();
                if (frozen)
                        hold_timers(sb, true, 0);
                int k = sbx_cgroup_freeze(sb->cg, frozen, 5000);
                if (k < 0) {
                        if (frozen) {
                                (void) sbx_cgroup_freeze(sb->cg, false, 1000);
                                hold_timers(sb, false, 0);
                        }
                        r = fail(ret_error, k,
                                k == -EOPNOTSUPP ? "the sandbox's cgroups cannot freeze here (no cgroup2 "
                                                   "group and no v1 freezer)"
                                                 : "cannot %s the sandbox's cgroup: %s",
                                frozen ? "freeze" : "thaw", strerror(-k));
                } else {
                        if (!frozen)
                                hold_timers(sb, false, now - sb->frozen_ns);
                        sb->frozen = frozen;
                        sb->frozen_ns = frozen ? now : 0;
                }
        }
        pthread_mutex_unlock(&sb->lock);
        return r;
}

_public_ bool sbx_sandbox_frozen(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        bool f = sb->frozen;
        pthread_mutex_unlock(&sb->lock);
        return f;
}

/* sig to an exec's process and its process group (it leads one: the pipeline it runs) — the
 * group only while the pidfd says its pid is still its own. 0 or -errno. */
static int signal_exec_process(int pidfd, pid_t pid, int sig) {
        if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
                return -errno;
        (void) kill(-pid, sig);
        return 0;
}

_public_ int sbx_sandbox_signal_exec(sbx_sandbox *sb, const char *id, int sig) {
        int r = -ESRCH;
        pthread_mutex_lock(&sb->lock);
        for (exec_slot *x = sb->execs; x && id && *id; x = x->next)
                if (streq(x->id, id) && x->pid == 0) {
                        x->pending_sig = sig; /* not started yet: at its start */
                        r = 0;
                        break;
                } else if (streq(x->id, id)) {
                        r = signal_exec_process(x->pidfd, x->pid, sig);
                        break;
                }
        pthread_mutex_unlock(&sb->lock);
        return r;
}

_public_ int sbx_sandbox_set_egress(
        sbx_sandbox *sb, char *const *allow, char *const *deny, char **ret_error) {
        char msg[600] = "";
        int r = 0;
        pthread_mutex_lock(&sb->lock);
        if (!sb->egress || sb->gone) {
                r = -ENOTCONN;
                snprintf(msg, sizeof msg,
                        "the sandbox has no egress proxy: it was made without network rules (create it with "
                        "network.egress or network.egress_deny, even an empty allow list with a deny rule, "
                        "to change them later)");
        }
        for (char *const *a = allow; r == 0 && a && *a; a++)
                if (!sbx_policy_egress_allowed(sb->cfg->policy, *a)) {
                        r = -EPERM;
                        snprintf(msg, sizeof msg,
                                "network.egress \"%.200s\" is not allowed by the policy "
                                "(network.egress_allowed); "
                                "add it there or leave it out",
                                *a);
                }
        if (r == 0) {
                sbx_error e = {0};
                /* under the lock: the proxy is not stopped meanwhile (detach takes it) */
                r = sbx_egress_run_set_rules(sb->egress, allow, deny, &e);
                if (r < 0)
                        sbx_error_format(&e, msg, sizeof msg);
        }
        pthread_mutex_unlock(&sb->lock);
        if (r < 0 && ret_error)
                *ret_error = strdup(msg[0] ? msg : strerror(-r));
        return r;
}

_public_ int sbx_sandbox_init_pid(sbx_sandbox *sb) {
        return (int) sb->init_pid;
}

_public_ const char *sbx_sandbox_scratch(sbx_sandbox *sb) {
        STRV_FOREACH(kv, sb->envp)
                if (strncmp(*kv, "TMPDIR=", 7) == 0)
                        return *kv + 7;
        return NULL;
}

_public_ const char *sbx_sandbox_home(sbx_sandbox *sb) {
        return sb->cfg && sb->cfg->profile ? sb->cfg->profile->fs_home : NULL;
}

_public_ const char *sbx_sandbox_backend(sbx_sandbox *sb) {
        return sb->backend;
}

/* Where the cgroup keeps no CPU account (cgroup v1 without cpuacct): the processes the group
 * holds, each one's own and its reaped children's time (/proc/PID/stat), which is every process
 * that ran in it (the init reaps what the others leave). Their count too. */
static void cpu_from_procs(sbx_cgroup *cg, double *ret_cpu_s, int64_t *ret_pids) {
        const char *dir = NULL;
        for (int c = 0; c < _SBX_CG_CONTROLLER_MAX && !dir; c++)
                dir = sbx_cgroup_path(cg, (sbx_cg_controller) c);
        char path[4200];
        if (!dir || snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int) sizeof path)
                return;
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        long hz = sysconf(_SC_CLK_TCK);
        unsigned long long ticks = 0;
        int64_t n = 0;
        int pid;
        while (fscanf(f, "%d", &pid) == 1) {
                char sp[64], buf[1024];
                snprintf(sp, sizeof sp, "/proc/%d/stat", pid);
                FILE *s = fopen(sp, "re");
                size_t k = s ? fread(buf, 1, sizeof buf - 1, s) : 0;
                if (s)
                        fclose(s);
                buf[k] = 0;
                const char *r = strrchr(buf, ')'); /* after the command name */
                unsigned long long ut, st, cut, cst;
                if (r && sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
                                 &ut, &st, &cut, &cst) == 4) {
                        ticks += ut + st + cut + cst;
                        n++;
                }
        }
        fclose(f);
        if (*ret_cpu_s < 0 && hz > 0 && n > 0)
                *ret_cpu_s = (double) ticks / (double) hz;
        if (*ret_pids < 0)
                *ret_pids = n;
}

/* Without a cgroup (an unprivileged host user without delegation): the init and its descendants
 * (/proc/PID/task/TID/children), their CPU time with their reaped children's, their resident
 * memory. */
typedef struct tree_usage {
        unsigned long long ticks, rss_pages;
        int64_t n;
} tree_usage;

static void tree_add(pid_t pid, tree_usage *u, int depth) {
        char p[96], buf[1024];
        snprintf(p, sizeof p, "/proc/%d/stat", (int) pid);
        FILE *f = fopen(p, "re");
        size_t k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
                fclose(f);
        buf[k] = 0;
        const char *r = strrchr(buf, ')');
        unsigned long long ut, st, cut, cst;
        long rss;
        if (!r || sscanf(r + 2,
                          "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %*d %*d "
                          "%*u %*u %ld",
                          &ut, &st, &cut, &cst, &rss) != 5)
                return;
        u->ticks += ut + st + cut + cst;
        u->rss_pages += rss > 0 ? (unsigned long long) rss : 0;
        u->n++;
        if (depth > 64 || u->n > 100000)
                return;
        snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int) pid, (int) pid);
        f = fopen(p, "re");
        int c;
        while (f && fscanf(f, "%d", &c) == 1)
                tree_add((pid_t) c, u, depth + 1);
        if (f)
                fclose(f);
}

static int usage_read_locked(sbx_sandbox *sb, sbx_sandbox_usage *ret);
_public_ int sbx_sandbox_usage_read(sbx_sandbox *sb, sbx_sandbox_usage *ret) {
        /* under the lock: the run's end (sbx_persist_detach) takes it before its cgroup goes */
        pthread_mutex_lock(&sb->lock);
        int r = usage_read_locked(sb, ret);
        pthread_mutex_unlock(&sb->lock);
        return r;
}

static int usage_read_locked(sbx_sandbox *sb, sbx_sandbox_usage *ret) {
        *ret = (sbx_sandbox_usage){.cpu_s = -1,
                .cpus = -1,
                .memory_bytes = -1,
                .memory_limit_bytes = -1,
                .pids = -1,
                .disk_used_bytes = -1,
                .disk_total_bytes = -1};
        sbx_cgroup_stats st;
        if (sb->cg && sbx_cgroup_stats_read_some(sb->cg, SBX_CG_STAT_ALL, &st) >= 0) {
                if (st.cpu_usage_usec != SBX_CG_UNKNOWN)
                        ret->cpu_s = (double) st.cpu_usage_usec / 1e6;
                if (st.memory_current_bytes != SBX_CG_UNKNOWN)
                        ret->memory_bytes = (int64_t) st.memory_current_bytes;
                if (st.pids_current != SBX_CG_UNKNOWN)
                        ret->pids = (int64_t) st.pids_current;
        }
        if (sb->cg && (ret->cpu_s < 0 || ret->pids < 0))
                cpu_from_procs(sb->cg, &ret->cpu_s, &ret->pids);
        if ((ret->cpu_s < 0 || ret->memory_bytes < 0 || ret->pids < 0) && sb->init_pid > 0) {
                tree_usage t = {0};
                long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
                tree_add(sb->init_pid, &t, 0);
                if (t.n > 0) {
                        if (ret->cpu_s < 0 && hz > 0)
                                ret->cpu_s = (double) t.ticks / (double) hz;
                        if (ret->memory_bytes < 0 && page > 0)
                                ret->memory_bytes = (int64_t) (t.rss_pages * (unsigned long long) page);
                        if (ret->pids < 0)
                                ret->pids = t.n - 1; /* not the init */
                }
        }
        if (sb->cfg) {
                const sbx_limits *l = &sb->cfg->limits;
                if (l->set[SBX_LIMIT_CPUS])
                        ret->cpus = l->value[SBX_LIMIT_CPUS];
                if (sbx_limit_bytes(l, SBX_LIMIT_MEMORY_MB))
                        ret->memory_limit_bytes = (int64_t) sbx_limit_bytes(l, SBX_LIMIT_MEMORY_MB);
        }
        /* the scratch as the sandbox sees it, through its init's root */
        const char *scratch = sbx_sandbox_scratch(sb);
        char path[4200];
        struct statvfs fs;
        /* (a guest's scratch is not in the relay's root: unknown there) */
        if (scratch && sb->init_pid > 0 && !streq_ptr(sb->backend, "microvm") &&
                snprintf(path, sizeof path, "/proc/%d/root%s", (int) sb->init_pid, scratch) <
                        (int) sizeof path &&
                statvfs(path, &fs) == 0) {
                ret->disk_total_bytes = (int64_t) (fs.f_blocks * fs.f_frsize);
                ret->disk_used_bytes = (int64_t) ((fs.f_blocks - fs.f_bfree) * fs.f_frsize);
        }
        return 0;
}

_public_ unsigned sbx_sandbox_execs_running(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        unsigned n = sb->active;
        pthread_mutex_unlock(&sb->lock);
        return n;
}

_public_ double sbx_sandbox_budget_used(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        double d = sb->budget_used_s;
        pthread_mutex_unlock(&sb->lock);
        return d;
}

_public_ void sbx_sandbox_add_budget_used(sbx_sandbox *sb, double seconds) {
        pthread_mutex_lock(&sb->lock);
        if (seconds > 0)
                sb->budget_used_s += seconds;
        pthread_mutex_unlock(&sb->lock);
}

static int fail(char **ret_error, int r, const char *fmt, ...) {
        if (ret_error) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

/* The request for the init: header, cwd, argv, env (the sandbox's, overridden by the exec's). */
/* The sandbox group's oom_kill count (0 unknown; a microvm's is in its guest, whose agent says
 * SBX_INIT_MSG_OOM itself). The exec is active: its sandbox's group stays. */
static uint64_t exec_ooms(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        sbx_cgroup *cg = sb->cg;
        pthread_mutex_unlock(&sb->lock);
        sbx_cgroup_stats st;
        if (cg && sbx_cgroup_stats_read_some(cg, SBX_CG_STAT_OOM, &st) >= 0 &&
                st.oom_kills != SBX_CG_UNKNOWN)
                return st.oom_kills;
        return 0;
}

static int build_request(sbx_sandbox *sb, const sbx_exec_request *req, char **ret, size_t *ret_len) {
        _cleanup_strv_free_ char **env = strv_copy(sb->envp);
        if (!env)
                return -ENOMEM;
        STRV_FOREACH(kv, req->env) {
                const char *eq = strchr(*kv, '=');
                if (!eq || eq == *kv)
                        return -EINVAL;
                size_t nl = (size_t) (eq - *kv) + 1;
                bool replaced = false;
                for (char **o = env; *o && !replaced; o++)
                        if (strncmp(*o, *kv, nl) == 0) {
                                char *c = strdup(*kv);
                                if (!c)
                                        return -ENOMEM;
                                free(*o);
                                *o = c;
                                replaced = true;
                        }
                if (!replaced && strv_extend(&env, *kv) < 0)
                        return -ENOMEM;
        }
        const char *cwd = req->cwd ? req->cwd : sb->cwd ? sb->cwd : "";
        size_t len = strlen(cwd) + 1;
        size_t n_argv = strv_length(req->argv), n_env = strv_length(env);
        STRV_FOREACH(a, req->argv)
                len += strlen(*a) + 1;
        STRV_FOREACH(a, env)
                len += strlen(*a) + 1;
        if (len > SBX_INIT_REQ_MAX || n_argv == 0 || n_argv > 1024 || n_env > 1024)
                return -E2BIG;
        char *buf = malloc(sizeof(struct sbx_init_req) + len);
        if (!buf)
                return -ENOMEM;
        struct sbx_init_req *h = (struct sbx_init_req *) buf;
        *h = (struct sbx_init_req){.magic = SBX_INIT_REQ_MAGIC,
                .op = req->op == SBX_EXEC_PUT_FILE   ? SBX_INIT_OP_PUT
                      : req->op == SBX_EXEC_GET_FILE ? SBX_INIT_OP_GET
                      : req->op == SBX_EXEC_CONNECT  ? SBX_INIT_OP_CONNECT
                                                     : SBX_INIT_OP_EXEC,
                .n_argv = (uint32_t) n_argv,
                .n_env = (uint32_t) n_env,
                .len = (uint32_t) len,
                .tty = req->tty_cols && req->tty_rows ? SBX_INIT_TTY(req->tty_cols, req->tty_rows) : 0,
                .flags = sb->hold_fd >= 0 ? SBX_INIT_REQ_OWN_PIDFD : 0};
        char *p = buf + sizeof *h;
        p = stpcpy(p, cwd) + 1;
        STRV_FOREACH(a, req->argv)
                p = stpcpy(p, *a) + 1;
        STRV_FOREACH(a, env)
                p = stpcpy(p, *a) + 1;
        *ret = buf;
        *ret_len = sizeof *h + len;
        return 0;
}

static int send_request(int ctl, const char *buf, size_t len, const int fds[4]) {
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(4 * sizeof(int))];
        } cbuf;
        memset(&cbuf, 0, sizeof cbuf);
        struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b, .msg_controllen = sizeof cbuf.b};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(4 * sizeof(int));
        memcpy(CMSG_DATA(c), fds, 4 * sizeof(int));
        ssize_t n;
        do
                n = sendmsg(ctl, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : 0;
}

/* The exec's hello: its pid as we see it (credentials), within 10 s. */
static int wait_hello(int xs, pid_t *ret, int *ret_pidfd, struct sbx_init_msg *m) {
        struct pollfd pf = {.fd = xs, .events = POLLIN};
        int k;
        do
                k = poll(&pf, 1, 10000);
        while (k < 0 && errno == EINTR);
        if (k == 0)
                return -ETIMEDOUT;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
        } cbuf;
        struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cbuf, .msg_controllen = sizeof cbuf};
        ssize_t n = recvmsg(xs, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n != (ssize_t) sizeof *m || m->magic != SBX_INIT_MAGIC)
                return -EPROTO;
        struct ucred cred = {0};
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                        c->cmsg_len == CMSG_LEN(sizeof cred))
                        memcpy(&cred, CMSG_DATA(c), sizeof cred);
                else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        int fds[4], nf = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        memcpy(fds, CMSG_DATA(c), (size_t) (nf > 4 ? 4 : nf) * sizeof(int));
                        for (int i = 0; i < nf && i < 4; i++)
                                if (i == 0 && nf == 1 && *ret_pidfd < 0)
                                        *ret_pidfd = fds[0]; /* its own pidfd: it goes on, no GO */
                                else
                                        close(fds[i]);
                }
        if (m->type != SBX_INIT_MSG_RUNNER || cred.pid <= 0) {
                *ret_pidfd = safe_close(*ret_pidfd);
                return m->type != SBX_INIT_MSG_RUNNER ? -ECHILD /* the init refused: m says why */
                                                      : -EPROTO;
        }
        *ret = cred.pid;
        return 0;
}

_public_ int sbx_sandbox_exec(
        sbx_sandbox *sb, const sbx_exec_request *req, char **ret_report, char **ret_error) {
        _cleanup_(sbx_report_freep) sbx_report *rep = NULL;
        _cleanup_free_ char *rbuf = NULL;
        int xs[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        _cleanup_close_ int null_fd = -EBADF, pidfd = -EBADF;
        size_t rlen = 0;
        int r;
        exec_slot slot = {.timer_fd = -1};
        bool registered = false, starting = false;

        if (ret_report)
                *ret_report = NULL;
        if (ret_error)
                *ret_error = NULL;
        if (!req || !req->argv || !req->argv[0])
                return fail(ret_error, -EINVAL, "no command given");
        if (req->timeout_s < 0)
                return fail(ret_error, -EINVAL, "timeout_s must not be negative");

        pthread_mutex_lock(&sb->lock);
        if (!sb->serving || sb->gone) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, -ESRCH, "the sandbox is not running");
        }
        if (sb->frozen) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, -EBUSY, "the sandbox is paused: resume it first");
        }
        const sbx_config *cfg = sb->cfg;
        if (req->long_lived && !sbx_config_long_lived(cfg)) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, -EPERM,
                        !cfg->profile->long_lived
                                ? "%s does not allow long-lived execs (set process.long_lived: true in the "
                                  "profile, or give the exec a timeout)"
                                : "the policy file %s does not allow long-lived execs (set "
                                  "process.long_lived_allowed: true there)",
                        !cfg->profile->long_lived ? cfg->profile->id : cfg->policy->source_file);
        }
        if ((req->tty_cols || req->tty_rows) &&
                (req->tty_cols == 0 || req->tty_rows == 0 || req->tty_cols > SBX_TTY_MAX ||
                        req->tty_rows > SBX_TTY_MAX)) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, -EINVAL, "a terminal's cols and rows are 1 to %d", SBX_TTY_MAX);
        }
        /* budget_s counts bounded execs; a long-lived one is bounded by the sandbox's life */
        double budget = req->long_lived ? 0 : cfg->limits.value[SBX_LIMIT_BUDGET_S];
        double left = budget > 0 ? budget - sb->budget_used_s : 0;
        if (budget > 0 && left <= 0) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, -EDQUOT, "the sandbox's budget_s (%g s) is spent", budget);
        }
        r = sbx_report_new(&rep);
        if (r >= 0)
                r = sbx_report_copy_setup(rep, sb->rep);
        if (r >= 0)
                r = build_request(sb, req, &rbuf, &rlen);
        if (r < 0) {
                pthread_mutex_unlock(&sb->lock);
                return fail(ret_error, r,
                        r == -E2BIG    ? "the command, environment and working directory are too large"
                        : r == -EINVAL ? "env entries must be NAME=VALUE"
                                       : "out of memory");
        }
        sb->active++;
        int ctl = sb->ctl_fd;
        pthread_mutex_unlock(&sb->lock);

        double timeout = req->long_lived ? 0 : cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        const char *timeout_key = NULL;
        if (req->timeout_s > 0 && (timeout <= 0 || req->timeout_s < timeout))
                timeout = req->timeout_s, timeout_key = "exec.timeout_s";
        if (budget > 0 && (timeout <= 0 || left < timeout))
                timeout = left, timeout_key = "budget_s";
        uint64_t cap =
                req->output_cap ? req->output_cap : sbx_limit_bytes(&cfg->limits, SBX_LIMIT_OUTPUT_MB);

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xs) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
                pipe2(errp, O_CLOEXEC) < 0) {
                r = fail(ret_error, -errno, "cannot create the exec's pipes: %m");
                goto out;
        }
        (void) setsockopt(xs[0], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));
        int in = req->in_fd;
        if (in < 0) {
                null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                in = null_fd;
        }
        /* the sandbox group's OOM kills so far: one during the exec that ends it is its memory limit */
        uint64_t ooms0 = exec_ooms(sb);
        uint64_t t0 = sbx_now_ns();
        /* known (by id) from before its request goes: a signal that comes before its hello is
         * held for it (pending_sig), not answered "no such exec" */
        snprintf(slot.id, sizeof slot.id, "%s", req->id ? req->id : "");
        slot.start_ns = t0;
        slot.rep = rep;
        slot.pidfd = -1;
        slot.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (slot.timer_fd < 0) {
                r = fail(ret_error, -errno, "cannot create the exec's timer: %m");
                goto out;
        }
        pthread_mutex_lock(&sb->lock);
        slot.serial = ++sb->next_serial;
        slot.next = sb->execs;
        sb->execs = &slot;
        registered = true;
        sb->starting++;
        starting = true;
        pthread_mutex_unlock(&sb->lock);
        r = send_request(ctl, rbuf, rlen, (int[4]){xs[1], in, outp[1], errp[1]});
        xs[1] = safe_close(xs[1]);
        outp[1] = safe_close(outp[1]);
        errp[1] = safe_close(errp[1]);
        if (r < 0) {
                r = fail(ret_error, -ESRCH, "the sandbox is not running (its init: %s)", strerror(-r));
                goto out;
        }
        struct sbx_init_msg hello;
        pid_t pid = 0;
        r = wait_hello(xs[0], &pid, &pidfd, &hello);
        if (r == -ECHILD) {
                hello.text[sizeof hello.text - 1] = 0;
                r = fail(ret_error, -EIO, "the sandbox's init refused the exec: %s: %s", hello.text,
                        strerror(hello.a));
                goto out;
        }
        if (r < 0) {
                r = fail(ret_error, r, "the sandbox's init did not start the exec: %s", strerror(-r));
                goto out;
        }
#if SBX_TEST_HOOKS
        /* Test hook (-Dtest_hooks=true only): the exec's env SBXTEST_HELLO_DELAY_MS=N (not a
         * SANDBOXER_ name: the API refuses those) makes us slow to take its hello, so that what
         * it does meanwhile must be held. */
        STRV_FOREACH(kv, req->env)
                if (strncmp(*kv, "SBXTEST_HELLO_DELAY_MS=", 23) == 0)
                        (void) usleep((useconds_t) atoi(*kv + 23) * 1000);
#endif
        /* It sent its own pidfd and went on; else (no pidfd_open there) it waits for GO, and
         * until then it cannot be gone and its pid not reused: ours made now is its. */
        bool go_wanted = pidfd < 0;
        if (go_wanted)
                pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = fail(ret_error, -ESRCH, "the exec's process is gone: %m");
                goto out;
        }
        pthread_mutex_lock(&sb->lock);
        slot.pid = pid;
        slot.pidfd = pidfd;
        int pending = slot.pending_sig;
        pthread_mutex_unlock(&sb->lock);
        start_settled(sb);
        starting = false;
        struct sbx_init_msg go = {
                .magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_GO, .monotonic_ns = sbx_now_ns()};
        if (go_wanted && send(xs[0], &go, sizeof go, MSG_NOSIGNAL) < 0) {
                r = fail(ret_error, -ESRCH, "the exec's process is gone: %m");
                goto out;
        }
        if (pending)
                (void) signal_exec_process(pidfd, pid, pending);

        sbx_supervise_params svp = {
                .pid = pid,
                .pidfd = pidfd,
                .status_fd = xs[0],
                .out_fd = outp[0],
                .err_fd = errp[0],
                .tty_master = -1,
                .tty_in = -1,
                .fwd_out = req->out_fd,
                .fwd_err = req->err_fd,
                .output_cap = cap,
                .start_ns = t0,
                .timeout_s = timeout,
                .timer_fd = &slot.timer_fd,
                .grace_s = 2.0,
                .oom_fd = -1,
                .report = rep,
                .not_child = true,
                .extra_fd = -1,
        };
        xs[0] = outp[0] = errp[0] = -1; /* the loop owns them now */
        sbx_supervise_result res;
        sbx_error e = {0};
        r = sbx_supervise(&svp, &res, &e);
        if (r >= 0 && !res.oom && res.end == SBX_SV_SIGNALED && res.signal == SIGKILL &&
                exec_ooms(sb) > ooms0)
                res.oom = true;
        /* An exec that started and ended without a word of its init's (the init itself gone):
         * it was killed with the sandbox, not a set-up failure. */
        if (r >= 0 && res.end == SBX_SV_SETUP_FAILED && res.started_ns) {
                res.end = SBX_SV_SIGNALED;
                res.signal = SIGKILL;
                res.ended_ns = sbx_now_ns();
        }
        /* its connections through the egress proxy end with its processes: wait for their
         * records, which go into its report */
        pthread_mutex_lock(&sb->lock);
        struct sbx_egress_run *egress = sb->egress; /* kept until this exec is no more active */
        pthread_mutex_unlock(&sb->lock);
        if (egress)
                sbx_egress_run_settle(egress, slot.serial, 2000);
        pthread_mutex_lock(&sb->lock);
        for (exec_slot **pp = &sb->execs; *pp; pp = &(*pp)->next)
                if (*pp == &slot) {
                        *pp = slot.next;
                        break;
                }
        registered = false;
        double used = (double) (sbx_now_ns() - t0 - slot.paused_ns) / 1e9;
        if (!req->long_lived)
                sb->budget_used_s += used;
        if (r >= 0) {
                r = sbx_backend_classify(cfg, rep, &res, &svp, NULL, t0, t0, timeout_key, &e);
                if (r < 0 && res.end == SBX_SV_EXEC_FAILED)
                        r = 0;
        }
        pthread_mutex_unlock(&sb->lock);
        if (r < 0) {
                if (res.end == SBX_SV_SETUP_FAILED && !res.killed && req->op != SBX_EXEC_RUN)
                        r = fail(ret_error, -EIO, "%s", e.message);
                else
                        r = fail(ret_error, r, "%s", e.message);
                rep->status = SBX_STATUS_SETUP_ERROR;
                rep->cli_exit = 125;
                (void) sbx_report_set_error(rep, "%s", e.message);
        } else {
                r = rep->cli_exit;
                if (res.end == SBX_SV_EXEC_FAILED && req->op != SBX_EXEC_RUN)
                        r = -res.exec_errno; /* a file that could not be opened, read or written */
        }
        if (ret_report)
                (void) sbx_report_to_json(rep, false, ret_report);

out:
        pthread_mutex_lock(&sb->lock);
        if (registered)
                for (exec_slot **pp = &sb->execs; *pp; pp = &(*pp)->next)
                        if (*pp == &slot) {
                                *pp = slot.next;
                                break;
                        }
        sb->active--;
        pthread_cond_broadcast(&sb->cond);
        pthread_mutex_unlock(&sb->lock);
        if (starting) /* it never became known: what waited for it goes on */
                start_settled(sb);
        safe_close(slot.timer_fd); /* out of the list: no freeze touches it now */
        for (int i = 0; i < 2; i++) {
                safe_close(xs[i]);
                safe_close(outp[i]);
                safe_close(errp[i]);
        }
        return r;
}

_public_ bool sbx_sandbox_long_lived_allowed(sbx_sandbox *sb) {
        pthread_mutex_lock(&sb->lock);
        bool ok = sbx_config_long_lived(sb->cfg);
        pthread_mutex_unlock(&sb->lock);
        return ok;
}
