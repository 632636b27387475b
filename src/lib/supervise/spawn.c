/* spawn.c — clone3 into the sandbox's namespaces and run the child's set-up sequence. */
#include "supervise/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/debug.h"
#include "basic/host.h"
#include "init/protocol.h"
#include "isolate/caps.h"
#include "isolate/cgroup.h"
#include "isolate/childerr.h"
#include "isolate/landlock.h"
#include "isolate/ns.h"

/* SANDBOXER_DEBUG_TIMING: the child's steps, stamped into a page it shares with us (the child
 * makes no call but clock_gettime for it) and printed once the init runs. NULL: not asked. */
enum {
        CM_RELEASED,
        CM_CGROUPS,
        CM_IDS,
        CM_NET,
        CM_MOUNTS,
        CM_LANDLOCK,
        CM_FDS,
        CM_PRIVS,
        CM_SECCOMP,
        _CM_MAX
};
static const char *const child_mark_names[_CM_MAX] = {
        [CM_RELEASED] = "child: released (id maps written)",
        [CM_CGROUPS] = "child: in its cgroups",
        [CM_IDS] = "child: ids, hostname",
        [CM_NET] = "child: loopback, egress sockets",
        [CM_MOUNTS] = "child: mount plan executed",
        [CM_LANDLOCK] = "child: landlock rules, rlimits",
        [CM_FDS] = "child: descriptors placed",
        [CM_PRIVS] = "child: capabilities dropped",
        [CM_SECCOMP] = "child: base filter loaded, exec",
};
static uint64_t *child_marks;
static void child_mark(int i) {
        if (child_marks) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                child_marks[i] = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
        }
}

static _noreturn_ void child_die(int errfd, const sbx_child_error *ce) {
        ssize_t n = write(errfd, ce, sizeof *ce);
        _exit(n == (ssize_t) sizeof *ce ? 125 : 126);
}

/* The egress proxy's socket, listening in the sandbox's network namespace, out to the supervisor:
 * the sandbox keeps an empty namespace and the proxy runs outside it. */
static int send_egress_listener(int status_fd, int type, uint16_t port, int which) {
        int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_in a = {
                .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int one = 1, r = 0;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0))
                r = -errno;
        else {
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_EGRESS, .b = which};
                r = sbx_send_with_fd(status_fd, &m, sizeof m, fd);
        }
        close(fd);
        return r;
}

/* Runs in the child: syscalls only. syncfd < 0: nothing to wait for (the vfork-style spawn,
 * sharing the parent's memory while the parent sleeps); *unblock: the signal mask to restore
 * just before the exec (NULL: leave it). */
static _noreturn_ void child_main(
        const sbx_spawn_params *p, int syncfd, int errfd, const sigset_t *unblock) {
        sbx_child_error ce = {0};
        char c;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
                sbx_child_fail(&ce, errno, "prctl(PR_SET_PDEATHSIG)", NULL);
                child_die(errfd, &ce);
        }
        if (syncfd >= 0) {
                /* Wait for the parent to write our id maps and place us in our cgroup. */
                ssize_t n;
                do
                        n = read(syncfd, &c, 1);
                while (n < 0 && errno == EINTR);
                if (n != 1)
                        _exit(125); /* parent gone or failed: it reports */
                close(syncfd);
        }
        child_mark(CM_RELEASED);

        /* Into our v1 cgroups before anything else (we are still the only thread). */
        if (p->n_self_attach_fds > 0) {
                int r0 = sbx_cgroup_self_attach(p->self_attach_fds, p->n_self_attach_fds);
                if (r0 < 0) {
                        sbx_child_fail(&ce, r0, "cgroup: join the sandbox's cgroups", NULL);
                        child_die(errfd, &ce);
                }
        }

        child_mark(CM_CGROUPS);
        /* The cgroup namespace is made now, after we joined our cgroups, so that
         * the sandbox's own cgroup is its root ("/" in /proc/self/cgroup). */
        if ((p->clone_flags & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0) {
                sbx_child_fail(&ce, errno, "unshare(CLONE_NEWCGROUP)", NULL);
                child_die(errfd, &ce);
        }

        /* Become the sandbox user at once: files we create (mount points, /etc/passwd) need an
         * owner that exists in the namespace. We keep our capabilities in the new user namespace
         * (its uid 0 is not mapped, so no "root gives up its uid" rule drops them); execve of the
         * init as a non-zero uid drops them all. */
        if (p->clone_flags & CLONE_NEWUSER) {
                /* The system calls themselves, not libc's wrappers: those change every thread of
                 * the process (glibc's __nptl_setxid, musl's __synccall) — our parent's threads,
                 * which are not ours to signal or lock, least of all from a child sharing their
                 * memory or from a new pid namespace where their ids mean nothing. */
                if (p->allow_setgroups && syscall(SYS_setgroups, 0, NULL) < 0) {
                        sbx_child_fail(&ce, errno, "setgroups", NULL);
                        child_die(errfd, &ce);
                }
                if (syscall(SYS_setresgid, p->gid_inside, p->gid_inside, p->gid_inside) < 0) {
                        sbx_child_fail(&ce, errno, "setresgid", NULL);
                        child_die(errfd, &ce);
                }
                if (syscall(SYS_setresuid, p->uid_inside, p->uid_inside, p->uid_inside) < 0) {
                        sbx_child_fail(&ce, errno, "setresuid", NULL);
                        child_die(errfd, &ce);
                }
        }

        if (p->hostname && sethostname(p->hostname, strlen(p->hostname)) < 0) {
                sbx_child_fail(&ce, errno, "sethostname", p->hostname);
                child_die(errfd, &ce);
        }
        child_mark(CM_IDS);
        if (p->loopback || p->egress_port) {
                int r = sbx_ns_loopback_up();
                if (r < 0) {
                        sbx_child_fail(&ce, r, "bring up loopback", "lo");
                        child_die(errfd, &ce);
                }
        }
        if (p->egress_port) {
                int r = send_egress_listener(p->status_fd, SOCK_STREAM, p->egress_port, 0);
                if (r < 0) {
                        sbx_child_fail(&ce, r, "egress proxy: listen on 127.0.0.1 in the sandbox", NULL);
                        child_die(errfd, &ce);
                }
                r = send_egress_listener(p->status_fd, SOCK_DGRAM, 53, 1);
                if (r < 0) {
                        sbx_child_fail(
                                &ce, r, "egress proxy: the resolver's 127.0.0.1:53 in the sandbox", NULL);
                        child_die(errfd, &ce);
                }
                for (size_t i = 0; i < p->n_service_ports; i++)
                        if ((r = send_egress_listener(
                                     p->status_fd, SOCK_STREAM, p->service_ports[i], 2 + (int) i)) < 0) {
                                sbx_child_fail(&ce, r,
                                        "network.services: listen on 127.0.0.1 in the sandbox", NULL);
                                child_die(errfd, &ce);
                        }
        }
        child_mark(CM_NET);
        if (p->mounts && sbx_mount_plan_execute(p->mounts, &ce) < 0)
                child_die(errfd, &ce);
        child_mark(CM_MOUNTS);

        /* Landlock rules for what exists only in here: scratch, /proc, /dev, generated files. */
        for (size_t i = 0; p->landlock_fd >= 0 && i < p->n_inside_rules; i++) {
                int r = sbx_landlock_add_path(
                        p->landlock_fd, p->landlock_abi, p->inside_rules[i].path, p->inside_rules[i].access);
                if (r < 0 && !(r == -ENOENT && p->inside_rules[i].optional)) {
                        sbx_child_fail(&ce, r, "landlock: add rule", p->inside_rules[i].path);
                        child_die(errfd, &ce);
                }
        }

        int failed_res = 0;
        int r = sbx_rlimit_apply(&p->rlimits, &failed_res);
        if (r < 0) {
                sbx_child_fail(&ce, r, "setrlimit", NULL);
                child_die(errfd, &ce);
        }

        child_mark(CM_LANDLOCK);
        /* stdio, the status socket at 3, the seccomp program at 4, the Landlock ruleset at 5,
         * and nothing else; the init binary (6) and the error pipe (7) close on exec. Everything
         * is first moved above the low numbers so that no dup2 clobbers a source. */
        int src[8] = {p->stdin_fd, p->stdout_fd, p->stderr_fd, p->status_fd, p->seccomp_fd, p->landlock_fd,
                p->init_fd, errfd};
        int hi[8];
        for (int i = 0; i < 8; i++) {
                hi[i] = -1;
                if (src[i] < 0)
                        continue;
                hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16);
                if (hi[i] < 0) {
                        sbx_child_fail(&ce, errno, "dup", NULL);
                        child_die(errfd, &ce);
                }
        }
        errfd = hi[7];
        for (int i = 0; i < 8; i++) {
                if (hi[i] < 0)
                        continue;
                if (dup3(hi[i], i, i >= 6 ? O_CLOEXEC : 0) < 0) {
                        sbx_child_fail(&ce, errno, "dup3", NULL);
                        child_die(errfd, &ce);
                }
        }
        errfd = 7;
        if (syscall(SYS_close_range, 8, ~0U, 0) < 0) {
                sbx_child_fail(&ce, errno, "close_range", NULL);
                child_die(errfd, &ce);
        }
        for (int i = 4; i <= 5; i++) /* unused slots stay closed */
                if (hi[i] < 0)
                        (void) close(i);

        child_mark(CM_FDS);
        if (p->tool_cwd && !(p->clone_flags & CLONE_NEWNS) && chdir(p->tool_cwd) < 0) {
                sbx_child_fail(&ce, errno, "chdir", p->tool_cwd);
                child_die(errfd, &ce);
        }
        if (p->drop_bounding) {
                int r2 = sbx_caps_drop_bounding(p->last_cap);
                if (r2 < 0) {
                        sbx_child_fail(&ce, r2, "drop the capability bounding set", NULL);
                        child_die(errfd, &ce);
                }
        }
        if (p->switch_ids) {
                if ((p->allow_setgroups && syscall(SYS_setgroups, 0, NULL) < 0) ||
                        syscall(SYS_setresgid, p->gid_outside, p->gid_outside, p->gid_outside) < 0 ||
                        syscall(SYS_setresuid, p->uid_outside, p->uid_outside, p->uid_outside) < 0) {
                        sbx_child_fail(&ce, errno, "switch to the sandbox's uid", NULL);
                        child_die(errfd, &ce);
                }
        }
        if (p->drop_caps) {
                int r2 = sbx_caps_clear();
                if (r2 < 0) {
                        sbx_child_fail(&ce, r2, "drop capabilities", NULL);
                        child_die(errfd, &ce);
                }
        }

        child_mark(CM_PRIVS);
        /* Credentials changed: the parent-death signal was reset; arm it again. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
                (!p->setuid_helper && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)) {
                sbx_child_fail(&ce, errno, "prctl", NULL);
                child_die(errfd, &ce);
        }
        if (getppid() == 0 && !(p->clone_flags & CLONE_NEWPID))
                _exit(125);

        /* Last: the base filter covers the init too, so that the command cannot get an
         * unfiltered process by taking over its init (e.g. through /proc/1/mem). */
        if (p->seccomp_base && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, p->seccomp_base) < 0) {
                sbx_child_fail(&ce, errno, "load the seccomp filter", NULL);
                child_die(errfd, &ce);
        }

        child_mark(CM_SECCOMP);
        if (unblock)
                (void) sigprocmask(SIG_SETMASK, unblock, NULL);
        syscall(SYS_execveat, 6, "", p->init_argv, p->envp, AT_EMPTY_PATH);
        /* A tool that is a script (a wrapper named podman or bwrap): its interpreter opens it as
         * /dev/fd/6, which close-on-exec took away, and the kernel answers ENOENT. It keeps that
         * descriptor, its own file, read-only. Tried only after the failure: an ELF pays nothing. */
        int err = errno;
        char magic[2];
        if (err == ENOENT && pread(6, magic, sizeof magic, 0) == 2 && magic[0] == '#' && magic[1] == '!' &&
                fcntl(6, F_SETFD, 0) == 0) {
                syscall(SYS_execveat, 6, "", p->init_argv, p->envp, AT_EMPTY_PATH);
                err = errno;
        }
        sbx_child_fail(&ce, err, "execute", p->init_argv[0]);
        child_die(errfd, &ce);
}

static pid_t do_clone(const sbx_spawn_params *p, int *ret_pidfd) {
        struct clone_args args = {
                .flags = (p->clone_flags & ~(unsigned long) CLONE_NEWCGROUP) | CLONE_PIDFD |
                         CLONE_CLEAR_SIGHAND,
                .pidfd = (uint64_t) (uintptr_t) ret_pidfd,
                .exit_signal = SIGCHLD,
        };
        if (p->cgroup_fd >= 0) {
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t) p->cgroup_fd;
        }
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0 || (errno != ENOSYS && errno != E2BIG))
                return (pid_t) pid;
        /* clone3 unavailable (old kernel, or a filter answering ENOSYS): classic clone. The
         * cgroup is then joined by pid in after_clone, before the child goes on. */
        return (pid_t) syscall(SYS_clone,
                ((p->clone_flags & ~(unsigned long) CLONE_NEWCGROUP) | CLONE_PIDFD | SIGCHLD), NULL,
                ret_pidfd, NULL, 0);
}

/* The vfork-style start, where the child waits for nothing of ours: no id maps to write (no
 * user namespace, nor any other: the child only drops privileges and execs) and no move by pid.
 * The child shares our memory and runs on a stack of its own while we sleep until its exec
 * (CLONE_VFORK), so no page tables are copied and neither side takes copy-on-write faults
 * afterwards. Not where a cgroup2 group is entered at clone: CLONE_INTO_CGROUP is clone3's,
 * and clone3 starts no function on a new stack. Our signals are blocked across it: a handler
 * of a library caller's must not run on the child's stack in our memory; the child restores
 * the mask just before its exec. */
#define VFORK_STACK_SIZE (256 * 1024)

struct vfork_args {
        const sbx_spawn_params *p;
        int errfd;
        const sigset_t *mask;
};

static int vfork_child(void *arg) {
        const struct vfork_args *a = arg;
        child_main(a->p, -1, a->errfd, a->mask);
}

/* AddressSanitizer cannot follow a function run on a stack it did not make: it warns at every
 * call of a noreturn function there (google/sanitizers#189). The sanitizer build forks. */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_VFORK_SPAWN 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_VFORK_SPAWN 0
#endif
#endif
#ifndef SBX_VFORK_SPAWN
#define SBX_VFORK_SPAWN 1
#endif

static bool vfork_style(const sbx_spawn_params *p) {
        return SBX_VFORK_SPAWN && p->clone_flags == 0 && !p->after_clone && p->cgroup_fd < 0;
}

/* The namespaced start where no cgroup2 group is entered at clone (a cgroup v1 host, or none):
 * the child shares our memory (CLONE_VM) on a stack of its own, without CLONE_VFORK (we must
 * write its id maps while it waits). No page tables are copied at clone, the child's exec has
 * no copy of our memory to tear down, and neither side takes copy-on-write faults. The child
 * makes system calls only and touches no memory of ours but its parameters, its stack and
 * child_marks; our signals stay blocked in it through its exec (it runs no handler of ours:
 * clone() cannot clear them as clone3 does), and the init it execs blocks them all anyway. */
struct shared_args {
        const sbx_spawn_params *p;
        int syncfd, errfd, parent_ends[2];
};

static int shared_child(void *arg) {
        const struct shared_args *a = arg;
        /* our copy of the descriptor table holds the parent's ends too */
        close(a->parent_ends[0]);
        close(a->parent_ends[1]);
        child_main(a->p, a->syncfd, a->errfd, NULL);
}

/* Set by a caller that knows its process has one thread when it spawns (the `run` verb): the
 * library's other callers (the control plane's supervisor, library users) may have more, and
 * a child sharing their memory would race them. */
static bool single_threaded;
void sbx_spawn_single_threaded(bool on) {
        single_threaded = on;
}

/* fs.suid_dumpable: 0 makes the kernel mark our shared memory "not dumpable" at the moment the
 * child's credentials change, so that no process of the sandbox's host uid can ptrace the
 * child — and through it write our memory — before its exec. Any other value leaves a window:
 * the fork-style start is taken instead. */
static bool suid_dumpable_off(void) {
        char b[8] = {0};
        int fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, b, sizeof b - 1);
        close(fd);
        return n > 0 && b[0] == '0';
}

static bool shared_style(const sbx_spawn_params *p) {
        if (!SBX_VFORK_SPAWN || !single_threaded || p->clone_flags == 0 || p->cgroup_fd >= 0 ||
                !p->share_memory)
                return false;
        /* Before 5.16 a core-dumping signal in the child killed every process sharing its
         * memory (and so us); the OOM killer still does, which share_memory's caller rules out
         * for the sandbox's own group (a memory limit too small for the set-up is not shared). */
        if (sbx_host_kernel_version() < 5016)
                return false;
        bool ids_change = p->uid_outside != geteuid() || p->gid_outside != getegid();
        return !ids_change || suid_dumpable_off();
}

/* The stack, with a page below it that faults: an overflow must not write our memory. */
#define SHARED_GUARD 4096
static pid_t do_shared(
        const sbx_spawn_params *p, const int syncp[2], const int errp[2], int *ret_pidfd, void **ret_stack) {
        char *map = mmap(NULL, SHARED_GUARD + VFORK_STACK_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (map == MAP_FAILED)
                return -1;
        if (mprotect(map, SHARED_GUARD, PROT_NONE) < 0) {
                (void) munmap(map, SHARED_GUARD + VFORK_STACK_SIZE);
                return -1;
        }
        char *stack = map + SHARED_GUARD;
        struct shared_args *a = (struct shared_args *) stack; /* at the stack's far end */
        *a = (struct shared_args){
                .p = p, .syncfd = syncp[0], .errfd = errp[1], .parent_ends = {syncp[1], errp[0]}};
        pid_t pid = clone(shared_child, stack + VFORK_STACK_SIZE,
                (int) ((p->clone_flags & ~(unsigned long) CLONE_NEWCGROUP) | CLONE_VM | CLONE_PIDFD |
                        SIGCHLD),
                a, ret_pidfd);
        if (pid < 0) {
                int err = errno;
                (void) munmap(map, SHARED_GUARD + VFORK_STACK_SIZE);
                errno = err;
                return -1;
        }
        *ret_stack = map;
        return pid;
}

static pid_t do_vfork(const sbx_spawn_params *p, int errfd, int *ret_pidfd) {
        void *stack = mmap(NULL, VFORK_STACK_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (stack == MAP_FAILED)
                return -1;
        sigset_t all, old;
        sigfillset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, &old);
        struct vfork_args a = {.p = p, .errfd = errfd, .mask = &old};
        pid_t pid = clone(vfork_child, (char *) stack + VFORK_STACK_SIZE,
                CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &a, ret_pidfd);
        int err = errno;
        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        (void) munmap(stack, VFORK_STACK_SIZE);
        errno = err;
        return pid;
}

int sbx_spawn(const sbx_spawn_params *p, sbx_spawned *ret, sbx_error *e) {
        int syncp[2] = {-1, -1}, errp[2];
        bool vf = vfork_style(p), shared = !vf && shared_style(p);
        void *shared_stack = NULL;
        /* A child sharing our memory that changes its credentials (setresuid to the sandbox's
         * uid) also makes that memory "not dumpable" (the flag is the mm's): ours, until its
         * exec. We put back what we were after. */
        int dumpable = shared ? prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) : -1;
        /* While it shares our memory our signals wait: a handler of a library caller's must not
         * run (it could change errno under the child, which shares it, or interrupt our wait). */
        sigset_t all, saved;
        sigfillset(&all);
        if (!vf && pipe2(syncp, O_CLOEXEC) < 0)
                return sbx_error_set(e, errno, "spawn: pipe", "cannot create a pipe: %m");
        if (pipe2(errp, O_CLOEXEC) < 0) {
                int r = sbx_error_set(e, errno, "spawn: pipe", "cannot create a pipe: %m");
                safe_close(syncp[0]);
                safe_close(syncp[1]);
                return r;
        }

        if (sbx_debug_enabled() && !child_marks) {
                void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                child_marks = m == MAP_FAILED ? NULL : m;
        }
        if (child_marks)
                memset(child_marks, 0, _CM_MAX * sizeof *child_marks);
        int pidfd = -1;
        if (shared)
                (void) sigprocmask(SIG_SETMASK, &all, &saved);
        uint64_t t0 = sbx_now_ns();
        pid_t pid = vf       ? do_vfork(p, errp[1], &pidfd)
                    : shared ? do_shared(p, syncp, errp, &pidfd, &shared_stack)
                             : do_clone(p, &pidfd);
        if (pid < 0) {
                int err = errno;
                if (shared)
                        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
                safe_close(syncp[0]), safe_close(syncp[1]), close(errp[0]), close(errp[1]);
                if (err == EPERM || err == ENOSPC || err == EUSERS)
                        return sbx_error_set(e, err, "spawn: clone", "cannot create namespaces: %s%s",
                                strerror(err),
                                err == ENOSPC ? " (user.max_user_namespaces is exhausted or 0; raise it "
                                                "with sysctl)"
                                              : " (user namespaces refused here, e.g. inside a container's "
                                                "seccomp "
                                                "profile or with kernel.unprivileged_userns_clone=0; see "
                                                "'sandboxer doctor', or use --backend landlock)");
                return sbx_error_set(
                        e, err, "spawn: clone", "cannot start the sandbox: clone: %s", strerror(err));
        }
        if (pid == 0) {
                close(syncp[1]);
                close(errp[0]);
                child_main(p, syncp[0], errp[1], NULL);
        }
        safe_close(syncp[0]);
        close(errp[1]);
        uint64_t t_cloned = child_marks ? sbx_now_ns() : 0;

        int r = 0;
        if (p->clone_flags & CLONE_NEWUSER)
                r = sbx_ns_write_maps(pid, p->uid_inside, p->uid_outside, p->gid_inside, p->gid_outside,
                        p->allow_setgroups, e);
        if (r >= 0 && p->after_clone)
                r = p->after_clone(pid, p->userdata, e);
        uint64_t t_maps = child_marks ? sbx_now_ns() : 0;
        if (r >= 0 && !vf && write(syncp[1], "x", 1) != 1)
                r = sbx_error_set(e, errno, "spawn: sync", "cannot release the sandbox child: %m");
        safe_close(syncp[1]);

        if (r >= 0) {
                sbx_child_error ce;
                ssize_t n;
                do
                        n = read(errp[0], &ce, sizeof ce);
                while (n < 0 && errno == EINTR);
                if (n == (ssize_t) sizeof ce) {
                        ce.step[sizeof ce.step - 1] = ce.path[sizeof ce.path - 1] = 0;
                        char step[96];
                        snprintf(step, sizeof step, "sandbox setup: %s", ce.step);
                        r = sbx_error_set(e, ce.errnum, step, "sandbox setup failed: %s%s%s: %s", ce.step,
                                ce.path[0] ? " " : "", ce.path, strerror(ce.errnum));
                } else if (n != 0)
                        r = sbx_error_set(
                                e, EIO, "sandbox setup", "sandbox setup failed: the child died before exec");
        }
        close(errp[0]);

        if (r < 0) {
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void) waitpid(pid, NULL, 0);
                close(pidfd);
                if (shared_stack) /* it no longer runs on it */
                        (void) munmap(shared_stack, SHARED_GUARD + VFORK_STACK_SIZE);
                if (dumpable == 1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1)
                        (void) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
                if (shared)
                        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
                return r;
        }
        if (shared_stack) /* it has exec'd: its memory is its own */
                (void) munmap(shared_stack, SHARED_GUARD + VFORK_STACK_SIZE);
        if (dumpable == 1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1)
                (void) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        if (shared)
                (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        if (child_marks) {
                sbx_debug_mark_at("clone3 returned", t_cloned);
                sbx_debug_mark_at("id maps written", t_maps);
                for (int i = 0; i < _CM_MAX; i++)
                        sbx_debug_mark_at(child_mark_names[i], child_marks[i]);
        }
        ret->pid = pid;
        ret->pidfd = pidfd;
        ret->clone_ns = t0;
        ret->ready_ns = sbx_now_ns();
        return 0;
}
