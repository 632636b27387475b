/* probe.c — feature probes for `sandboxer doctor` and backend availability: trial children for
 * namespaces and seccomp notification, cheap syscalls for the rest, and for every "no" the
 * reason and the fix. */
#include "isolate/probe.h"

#include "isolate/audit.h"
#include "isolate/landlock.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/error.h"
#include "basic/host.h"
#include "isolate/childerr.h"
#include "isolate/ns.h"

#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
/* Older libc headers: the numbers are shared by every architecture since 5.1 (alpha aside). */
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

#define FIX_LANDLOCK "or use --backend landlock, which needs no namespaces"

static int result(sbx_probe_result *ret, bool available, int errnum, const char *step, const char *fmt, ...)
        _printf_(5, 6);
static int result(
        sbx_probe_result *ret, bool available, int errnum, const char *step, const char *fmt, ...) {
        va_list ap;
        *ret = (sbx_probe_result){.available = available, .errnum = errnum < 0 ? -errnum : errnum};
        snprintf(ret->step, sizeof ret->step, "%s", step ? step : "");
        va_start(ap, fmt);
        vsnprintf(ret->detail, sizeof ret->detail, fmt, ap);
        va_end(ap);
        return available ? 1 : 0;
}

/* First line of a small file, without the newline. */
static int read_line(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static long read_long(const char *path, long fallback) {
        char b[64];
        if (read_line(path, b, sizeof b) < 0)
                return fallback;
        char *end;
        errno = 0;
        long v = strtol(b, &end, 10);
        return errno || end == b ? fallback : v;
}

/* A field of /proc/self/status ("Seccomp", "Seccomp_filters"), -1 when absent. */
static long status_field(const char *name) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t l = strlen(name);
        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, name, l) == 0 && line[l] == ':')
                        return strtol(line + l + 1, NULL, 10);
        return -1;
}

static bool in_container(void) {
        return access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0;
}

/* ---- namespaces ---------------------------------------------------------------------------- */

#define PROBE_NS_FLAGS                                                                                      \
        (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |          \
                CLONE_NEWCGROUP)

/* fork()-like clone with namespace flags: the child continues on a copy of the stack. Only
 * syscalls may follow in the child (no atfork handlers ran, libc's cached tid is stale). */
static pid_t raw_clone(unsigned long flags) {
#if defined(__s390x__) || defined(__s390__) || defined(__CRIS__)
        return (pid_t) syscall(__NR_clone, NULL, flags);
#else
        return (pid_t) syscall(__NR_clone, flags, NULL, NULL, NULL, 0);
#endif
}

static ssize_t read_full(int fd, void *buf, size_t n) {
        size_t got = 0;
        while (got < n) {
                ssize_t k = read(fd, (char *) buf + got, n - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                got += (size_t) k;
        }
        return (ssize_t) got;
}

/* The trial child, inside its new namespaces: syscalls only. */
static _noreturn_ void ns_trial_child(int sync_fd, int res_fd) {
        sbx_child_error ce = {};
        char c;
        ssize_t n;
        struct stat st;
        const char *target = NULL;
        static const char *const targets[] = {"/tmp", "/mnt", "/run", "/dev"};
        static const char *const procdirs[] = {"/tmp/proc", "/mnt/proc", "/run/proc", "/dev/proc"};
        size_t i;

        do
                n = read(sync_fd, &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
                _exit(2); /* the parent gave up */

        for (i = 0; i < ELEMENTSOF(targets); i++)
                if (stat(targets[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                        target = targets[i];
                        break;
                }
        if (!target) {
                sbx_child_fail(&ce, ENOENT, "mount tmpfs", "/tmp");
                goto out;
        }

        /* Create files as the mapped uid/gid 1000, as the command will; the child's own ids may
         * be unmapped here (root outside, mapped to run_as), and the kernel refuses to create
         * inodes for an unmapped fsuid (EOVERFLOW). Capabilities in the namespace are kept. */
        (void) setfsgid(1000);
        (void) setfsuid(1000);

        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                sbx_child_fail(&ce, errno, "make mounts private", "/");
                goto out;
        }
        if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") < 0) {
                sbx_child_fail(&ce, errno, "mount tmpfs", target);
                goto out;
        }
        if (mkdir(procdirs[i], 0555) < 0) {
                sbx_child_fail(&ce, errno, "mkdir", procdirs[i]);
                goto out;
        }
        if (mount("proc", procdirs[i], "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
                sbx_child_fail(&ce, errno, "mount proc", procdirs[i]);
                goto out;
        }
        int r = sbx_ns_loopback_up();
        if (r < 0)
                sbx_child_fail(&ce, r, "loopback up", "lo");
out:
        (void) !write(res_fd, &ce, sizeof ce);
        _exit(0);
}

static const char *const ns_names[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
static const unsigned long ns_flags[] = {
        CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP};

/* Which namespace type does the kernel not know? Each tried alone (with a user namespace, so no
 * privilege is needed), in a child that exits at once. */
static const char *unsupported_namespace(void) {
        for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
                pid_t pid = raw_clone(CLONE_NEWUSER | ns_flags[i] | SIGCHLD);
                if (pid == 0)
                        _exit(0);
                if (pid > 0)
                        (void) waitpid(pid, NULL, 0);
                else if (errno == EINVAL)
                        return ns_names[i];
        }
        return NULL;
}

static int explain_clone_failure(int err, sbx_probe_result *ret) {
        bool unpriv = sbx_host_unprivileged();
        char b[512];

        switch (err) {
        case EPERM:
        case EACCES:
                if (status_field("Seccomp") == 2)
                        return result(ret, false, err, "clone",
                                "creating namespaces was refused (%s) by a seccomp filter on this process, "
                                "such as Docker's default seccomp profile, which refuses clone/unshare with "
                                "namespace flags; fix: run the container with --security-opt "
                                "seccomp=unconfined "
                                "(or a profile allowing them), " FIX_LANDLOCK,
                                strerror(err));
                if (unpriv && read_long("/proc/sys/kernel/unprivileged_userns_clone", 1) == 0)
                        return result(ret, false, err, "clone",
                                "unprivileged user namespaces are disabled "
                                "(kernel.unprivileged_userns_clone = 0); "
                                "fix: sysctl -w kernel.unprivileged_userns_clone=1, run as "
                                "root, " FIX_LANDLOCK);
                if (unpriv && read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 1)
                        return result(ret, false, err, "clone",
                                "AppArmor restricts unprivileged user namespaces "
                                "(kernel.apparmor_restrict_unprivileged_userns = 1); fix: an AppArmor "
                                "profile for "
                                "sandboxer allowing 'userns,', or sysctl -w "
                                "kernel.apparmor_restrict_unprivileged_userns=0, " FIX_LANDLOCK);
                if (in_container())
                        return result(ret, false, err, "clone",
                                "creating namespaces was refused (%s) inside this container: its runtime "
                                "denies them (seccomp, missing capabilities or an LSM); fix: run the "
                                "container with --security-opt seccomp=unconfined --security-opt "
                                "apparmor=unconfined, " FIX_LANDLOCK,
                                strerror(err));
                return result(ret, false, err, "clone",
                        "creating namespaces was refused (%s): a security module (SELinux, AppArmor, "
                        "user-namespace restrictions) denies it, or this process runs in a chroot, where "
                        "user namespaces cannot be created; " FIX_LANDLOCK,
                        strerror(err));

        case ENOSPC: {
                /* Name the limits set to zero, and the command that raises each. */
                char fix[512] = "";
                b[0] = 0;
                for (size_t i = 0; i < ELEMENTSOF(ns_names); i++) {
                        char p[96];
                        snprintf(p, sizeof p, "/proc/sys/user/max_%s_namespaces", ns_names[i]);
                        if (read_long(p, -1) != 0)
                                continue;
                        size_t l = strlen(b), k = strlen(fix);
                        snprintf(b + l, sizeof b - l, "%suser.max_%s_namespaces = 0", l ? ", " : "",
                                ns_names[i]);
                        snprintf(fix + k, sizeof fix - k, "%ssysctl -w user.max_%s_namespaces=15000",
                                k ? " and " : "", ns_names[i]);
                }
                if (b[0])
                        return result(ret, false, err, "clone",
                                "namespaces are disabled by sysctl (%s); fix: %s, " FIX_LANDLOCK, b, fix);
                return result(ret, false, err, "clone",
                        "a namespace count limit is exhausted (ENOSPC; see "
                        "/proc/sys/user/max_*_namespaces); "
                        "fix: raise it with sysctl or end leftover sandboxes, " FIX_LANDLOCK);
        }

        case EINVAL: {
                const char *which = unsupported_namespace();
                if (which)
                        return result(ret, false, err, "clone",
                                "the kernel does not support %s namespaces (built without "
                                "it); " FIX_LANDLOCK,
                                which);
                return result(ret, false, err, "clone",
                        "clone with namespace flags failed: %s; " FIX_LANDLOCK, strerror(err));
        }

        case EUSERS:
                return result(ret, false, err, "clone",
                        "user namespaces are nested too deeply here (EUSERS, limit 32); " FIX_LANDLOCK);

        default:
                return result(ret, false, err, "clone",
                        "clone with namespace flags failed: %s; " FIX_LANDLOCK, strerror(err));
        }
}

/* Paths mounted over inside /proc (what container runtimes mask), comma-separated. */
static void proc_overmounts(char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[1024];
        size_t l = 0;
        buf[0] = 0;
        while (f && fgets(line, sizeof line, f)) {
                char mnt[512];
                /* id parent major:minor root mount-point ... */
                if (sscanf(line, "%*d %*d %*s %*s %511s", mnt) != 1)
                        continue;
                if (strncmp(mnt, "/proc/", 6) != 0 || strncmp(mnt, "/proc/sys/fs/binfmt_misc", 24) == 0)
                        continue;
                int k = snprintf(buf + l, size - l, "%s%s", l ? ", " : "", mnt);
                if (k < 0 || (size_t) k >= size - l) {
                        buf[l] = 0;
                        break;
                }
                l += (size_t) k;
        }
}

static int explain_child_failure(const sbx_child_error *ce, sbx_probe_result *ret) {
        int err = ce->errnum;
        bool refused = err == EPERM || err == EACCES;

        if (streq(ce->step, "mount proc") && refused) {
                char masked[400];
                proc_overmounts(masked, sizeof masked);
                return result(ret, false, err, ce->step,
                        "namespaces work, but a fresh /proc cannot be mounted in them (%s): the kernel "
                        "allows "
                        "it only where a fully visible /proc is already mounted, and here parts of /proc "
                        "are "
                        "mounted over%s%s%s, as container runtimes do to mask them; fix: run the container "
                        "with --security-opt systempaths=unconfined (docker) or --security-opt unmask=ALL "
                        "(podman), " FIX_LANDLOCK,
                        strerror(err), masked[0] ? " (" : "", masked, masked[0] ? ")" : "");
        }
        if (refused && (streq(ce->step, "make mounts private") || streq(ce->step, "mount tmpfs"))) {
                if (sbx_host_unprivileged() &&
                        read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 1)
                        return result(ret, false, err, ce->step,
                                "namespaces were created but mounting in them was refused (%s): AppArmor "
                                "restricts unprivileged user namespaces "
                                "(kernel.apparmor_restrict_unprivileged_userns = 1); fix: an AppArmor "
                                "profile "
                                "for sandboxer allowing 'userns,', " FIX_LANDLOCK,
                                strerror(err));
                return result(ret, false, err, ce->step,
                        "namespaces were created but mounting in them was refused (%s at '%s' on %s): a "
                        "security module (AppArmor, SELinux) denies mounts in user "
                        "namespaces; " FIX_LANDLOCK,
                        strerror(err), ce->step, ce->path);
        }
        return result(ret, false, err, ce->step,
                "namespaces were created but '%s' on %s failed inside them: %s", ce->step, ce->path,
                strerror(err));
}

int sbx_probe_namespaces(uid_t outside_uid, gid_t outside_gid, sbx_probe_result *ret) {
        _cleanup_close_ int sync_r = -EBADF, sync_w = -EBADF, res_r = -EBADF, res_w = -EBADF;
        int p[2];

        if (!ret)
                return -EINVAL;
        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        sync_r = p[0], sync_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        res_r = p[0], res_w = p[1];

        pid_t pid = raw_clone(PROBE_NS_FLAGS | SIGCHLD);
        if (pid < 0)
                return explain_clone_failure(errno, ret);
        if (pid == 0) {
                sync_w = safe_close(sync_w);
                res_r = safe_close(res_r);
                ns_trial_child(sync_r, res_w);
        }
        sync_r = safe_close(sync_r);
        res_w = safe_close(res_w);

        sbx_error e = {};
        int r = sbx_ns_write_maps(pid, 1000, outside_uid, 1000, outside_gid, false, &e);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                char b[sizeof e.message + 32];
                return result(ret, false, -r, "uid_map",
                        "a user namespace was created but its uid/gid map (1000 → %u/%u) was refused: %s; "
                        "an unprivileged caller can only map its own uid, a privileged one needs CAP_SETUID "
                        "and CAP_SETGID; " FIX_LANDLOCK,
                        (unsigned) outside_uid, (unsigned) outside_gid, sbx_error_format(&e, b, sizeof b));
        }

        sbx_child_error ce = {};
        ssize_t n = write(sync_w, "x", 1);
        if (n == 1)
                n = read_full(res_r, &ce, sizeof ce);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t) sizeof ce)
                return result(ret, false, EIO, "trial child",
                        "the trial child in new namespaces ended without reporting (%s %d)",
                        WIFSIGNALED(status) ? "signal" : "exit status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (ce.errnum != 0)
                return explain_child_failure(&ce, ret);

        return result(ret, true, 0, NULL,
                "user, mount, pid, net, ipc, uts and cgroup namespaces; uid/gid map 1000 → %u/%u; "
                "tmpfs, /proc and loopback inside",
                (unsigned) outside_uid, (unsigned) outside_gid);
}

/* ---- Landlock, seccomp ----------------------------------------------------------------------- */

int sbx_probe_landlock(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi >= 1)
                return result(ret, true, 0, NULL, "Landlock ABI %ld", abi);
        int err = abi < 0 ? errno : EOPNOTSUPP;
        switch (err) {
        case ENOSYS:
                return result(ret, false, err, "landlock_create_ruleset",
                        "no Landlock: the kernel is older than 5.13 or built without "
                        "CONFIG_SECURITY_LANDLOCK "
                        "(or a seccomp filter hides the syscall)");
        case EOPNOTSUPP:
                return result(ret, false, err, "landlock_create_ruleset",
                        "Landlock is built but not enabled; fix: add landlock to the lsm= kernel boot "
                        "parameter (see /sys/kernel/security/lsm)");
        default:
                return result(ret, false, err, "landlock_create_ruleset",
                        "landlock_create_ruleset refused: %s (a seccomp filter of a container runtime?)",
                        strerror(err));
        }
}

static int seccomp_action_avail(uint32_t action) {
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                return negative_errno();
        return 0;
}

int sbx_probe_seccomp(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (mode < 0)
                return result(ret, false, errno, "prctl(PR_GET_SECCOMP)",
                        "no seccomp: the kernel is built without CONFIG_SECCOMP (%s)", strerror(errno));
        int r = seccomp_action_avail(SECCOMP_RET_KILL_PROCESS);
        if (r == -ENOSYS)
                return result(ret, false, ENOSYS, "seccomp(2)",
                        "the seccomp(2) syscall is missing (kernel older than 3.17, or filtered)");
        if (r == -EOPNOTSUPP)
                return result(ret, false, EOPNOTSUPP, "SECCOMP_GET_ACTION_AVAIL",
                        "SECCOMP_RET_KILL_PROCESS is not supported (kernel older than 4.14)");
        if (r < 0)
                return result(ret, false, -r, "SECCOMP_GET_ACTION_AVAIL", "seccomp action query failed: %s",
                        strerror(-r));
        long filters = status_field("Seccomp_filters");
        if (mode == 2)
                return result(ret, true, 0, NULL,
                        "filter mode with RET_KILL_PROCESS; this process is already under %ld filter(s), "
                        "sandboxes stack theirs on top",
                        filters > 0 ? filters : 1);
        return result(ret, true, 0, NULL, "filter mode with RET_KILL_PROCESS");
}

int sbx_probe_seccomp_notify(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        int r = seccomp_action_avail(SECCOMP_RET_USER_NOTIF);
        if (r == -EOPNOTSUPP)
                return result(ret, false, EOPNOTSUPP, "SECCOMP_GET_ACTION_AVAIL",
                        "SECCOMP_RET_USER_NOTIF is not supported (kernel older than 5.0): runs are enforced "
                        "but refusals are not observed (report observation: unavailable)");
        if (r < 0)
                return result(ret, false, -r, "SECCOMP_GET_ACTION_AVAIL",
                        "seccomp user notification unavailable: %s", strerror(-r));

        /* Whether a listener can be installed here: not when an ancestor filter already has one. */
        pid_t pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                struct sock_filter insn[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
                struct sock_fprog prog = {.len = 1, .filter = insn};
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(errno & 0xff);
                long fd = syscall(
                        SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                _exit(fd < 0 ? (errno & 0xff) : 0);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        if (!WIFEXITED(status))
                return result(ret, false, EIO, "trial child", "the seccomp trial child died by signal %d",
                        WTERMSIG(status));
        int err = WEXITSTATUS(status);
        if (err == 0)
                return result(
                        ret, true, 0, NULL, "SECCOMP_RET_USER_NOTIF; a listener can be installed here");
        if (err == EBUSY)
                return result(ret, false, err, "SECCOMP_FILTER_FLAG_NEW_LISTENER",
                        "this process is already under a seccomp filter with a notification listener "
                        "(nested "
                        "in another sandbox or supervisor): runs are enforced but refusals are not observed "
                        "(report observation: unavailable; profiles with observe: required fail)");
        return result(ret, false, err, "SECCOMP_FILTER_FLAG_NEW_LISTENER",
                "installing a seccomp notification listener failed: %s", strerror(err));
}

/* ---- syscalls -------------------------------------------------------------------------------- */

static int missing_syscall(sbx_probe_result *ret, const char *name, const char *since, int err) {
        if (err == ENOSYS)
                return result(ret, false, err, name,
                        "%s is missing (kernel older than %s, or a seccomp filter answers ENOSYS)", name,
                        since);
        return result(ret, false, err, name, "%s failed: %s", name, strerror(err));
}

int sbx_probe_pidfd_open(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        long fd = syscall(__NR_pidfd_open, getpid(), 0);
        if (fd < 0)
                return missing_syscall(ret, "pidfd_open", "5.3", errno);
        safe_close((int) fd);
        return result(ret, true, 0, NULL, "process file descriptors");
}

int sbx_probe_clone3(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        /* A size below CLONE_ARGS_SIZE_VER0 is refused with EINVAL before anything happens; ENOSYS
         * means no clone3 (Docker's default seccomp profile answers ENOSYS on purpose). */
        long pid = syscall(__NR_clone3, NULL, 0);
        if (pid == 0)
                _exit(0); /* cannot happen; but never continue in a child */
        if (pid > 0)
                (void) waitpid((pid_t) pid, NULL, 0);
        else if (errno == ENOSYS)
                return missing_syscall(ret, "clone3", "5.3", errno);
        return result(ret, true, 0, NULL, "clone3 (CLONE_INTO_CGROUP from 5.7)");
}

int sbx_probe_close_range(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        /* An empty range at the very top closes nothing. */
        if (syscall(__NR_close_range, ~0U, ~0U, 0) < 0)
                return missing_syscall(ret, "close_range", "5.9", errno);
        return result(ret, true, 0, NULL, "close_range");
}

int sbx_probe_openat2(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return negative_errno();
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(__NR_openat2, root, ".", &how, sizeof how);
        if (fd < 0)
                return missing_syscall(ret, "openat2", "5.6", errno);
        safe_close((int) fd);
        return result(ret, true, 0, NULL, "openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS");
}

int sbx_probe_mount_setattr(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        /* A bad descriptor is refused after the syscall is found: EBADF/EINVAL mean present. */
        if (syscall(__NR_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno == ENOSYS)
                return missing_syscall(ret, "mount_setattr", "5.12", errno);
        return result(ret, true, 0, NULL, "mount_setattr (idmapped mounts where the file system has them)");
}

int sbx_probe_no_new_privs(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        int v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        if (v < 0)
                return result(ret, false, errno, "prctl(PR_GET_NO_NEW_PRIVS)",
                        "no_new_privs is not supported (kernel older than 3.5)");
        return result(ret, true, 0, NULL, v ? "supported (already set on this process)" : "supported");
}

int sbx_probe_landlock_audit(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        if (sbx_landlock_abi() < 7)
                return result(ret, false, EOPNOTSUPP, "landlock",
                        "Landlock ABI < 7 writes no denial records (Linux 6.15+); refused writes are "
                        "recorded only with observe.fs_writes");
        int r = sbx_audit_probe();
        if (r < 0)
                return result(ret, false, -r, "audit",
                        "%s; refused writes are recorded only with observe.fs_writes", sbx_audit_why(r));
        return result(ret, true, 0, NULL,
                "the kernel's Landlock denial records are readable: refused writes are recorded at no "
                "cost to allowed ones");
}

/* ---- 32-bit system calls ---------------------------------------------------------------------- */

void sbx_probe_signal_default(int sig) {
        /* the kernel's struct for x86_64 (and most others): handler, flags, restorer, mask */
        struct {
                void (*handler)(int);
                unsigned long flags;
                void (*restorer)(void);
                unsigned long mask;
        } sa = {.handler = SIG_DFL};
        (void) syscall(SYS_rt_sigaction, sig, &sa, NULL, sizeof sa.mask);
}

#if defined(__x86_64__)
/* One trial child: getpid through the i386 ABI (int $0x80) or the x32 one (nr | 0x40000000).
 * Exits 0 when it returned the pid, 1 for ENOSYS, 2 for another error; a host that refuses the
 * ABI kills the child (SIGSEGV from a general protection fault, SIGSYS from a filter). */
static int trial_32bit(bool i386, int *ret_status) {
        pid_t pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                sbx_probe_signal_default(SIGSEGV);
                sbx_probe_signal_default(SIGSYS);
                sbx_probe_signal_default(SIGILL);
                long r;
                if (i386)
                        __asm__ volatile("int $0x80"
                                         : "=a"(r)
                                         : "a"(20L /* i386 getpid */)
                                         : "memory", "cc");
                else
                        r = syscall(0x40000000L | SYS_getpid) < 0 ? -errno : 1;
                _exit(r > 0 ? 0 : r == -ENOSYS ? 1 : 2);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        *ret_status = status;
        return 0;
}
#endif

/* How one ABI fared, from its trial child's wait status: true when the host accepts it. */
static bool describe_32bit(const char *abi, int status, char *buf, size_t size) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                snprintf(buf, size,
                        "%s: accepted by the host; every sandbox's filter kills a process that uses it",
                        abi);
                return true;
        }
        if (WIFEXITED(status))
                snprintf(buf, size, "%s: not in this kernel (%s): nothing to filter", abi,
                        WEXITSTATUS(status) == 1 ? "ENOSYS" : "the call failed");
        else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
                snprintf(buf, size,
                        "%s: refused above us: a seccomp filter this process runs under killed the trial "
                        "(SIGSYS)",
                        abi);
        else if (WIFSIGNALED(status))
                snprintf(buf, size,
                        "%s: refused by the host: the trial died by signal %d%s (emulation off in the "
                        "kernel, ia32_emulation=0, or refused by the hypervisor)",
                        abi, WTERMSIG(status), WTERMSIG(status) == SIGSEGV ? " (SIGSEGV)" : "");
        else
                snprintf(buf, size, "%s: the trial ended oddly (status %#x)", abi, (unsigned) status);
        return false;
}

int sbx_probe_syscalls_32bit_from(int i386_status, int x32_status, sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        char a[300], b[300];
        bool i386 = describe_32bit("i386 (int 0x80)", i386_status, a, sizeof a);
        bool x32 = describe_32bit("x32", x32_status, b, sizeof b);
        return result(
                ret, i386 || x32, i386 || x32 ? 0 : ENOSYS, i386 || x32 ? NULL : "int 0x80", "%s; %s", a, b);
}

int sbx_probe_syscalls_32bit(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
#if defined(__x86_64__)
        int si = 0, sx = 0, r;
        if ((r = trial_32bit(true, &si)) < 0 || (r = trial_32bit(false, &sx)) < 0)
                return r;
        return sbx_probe_syscalls_32bit_from(si, sx, ret);
#else
        return result(ret, false, EOPNOTSUPP, NULL,
                "no compat ABI probed on this architecture; the filter kills every foreign one");
#endif
}

/* ---- cgroups --------------------------------------------------------------------------------- */

/* Our cgroup path in the hierarchy of `controller` (v1), or in the unified one (NULL). */
static int own_cgroup(const char *controller, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return negative_errno();
        char line[1024];
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = 0;
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = 0;
                const char *ctls = c1 + 1, *path = c2 + 1;
                bool match = false;
                if (!controller)
                        match = strncmp(line, "0:", 2) == 0 && ctls[0] == 0;
                else {
                        size_t l = strlen(controller);
                        for (const char *p = ctls; *p;) {
                                size_t k = strcspn(p, ",");
                                if (k == l && strncmp(p, controller, l) == 0)
                                        match = true;
                                p += k;
                                if (*p == ',')
                                        p++;
                        }
                }
                if (match) {
                        snprintf(buf, size, "%s", path);
                        return 0;
                }
        }
        return -ENOENT;
}

static bool is_fs(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) == 0 && (long) s.f_type == magic;
}

int sbx_probe_cgroup(sbx_probe_result *ret) {
        if (!ret)
                return -EINVAL;
        sbx_cgroup_layout l = sbx_host_cgroup_layout();
        char own[512] = "?";
        switch (l) {
        case SBX_CGROUP_V2:
                (void) own_cgroup(NULL, own, sizeof own);
                return result(ret, true, 0, NULL, "v2 (unified) at /sys/fs/cgroup; our cgroup %s", own);
        case SBX_CGROUP_HYBRID:
                (void) own_cgroup(NULL, own, sizeof own);
                return result(ret, true, 0, NULL,
                        "hybrid: v1 controller hierarchies under /sys/fs/cgroup, cgroup2 at "
                        "/sys/fs/cgroup/unified (our cgroup there %s)",
                        own);
        case SBX_CGROUP_V1:
                return result(ret, true, 0, NULL, "v1: one hierarchy per controller under /sys/fs/cgroup");
        case SBX_CGROUP_NONE:
        case _SBX_CGROUP_MAX:
        case _SBX_CGROUP_INVALID:
        default:
                return result(ret, false, ENOENT, "statfs /sys/fs/cgroup",
                        "no cgroup file system at /sys/fs/cgroup: memory, pids and cpu limits fall back to "
                        "rlimits or fail; fix: mount cgroup2 at /sys/fs/cgroup");
        }
}

static int writable(const char *dir) {
        if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) < 0)
                return negative_errno();
        return 0;
}

static int controller_result(
        sbx_probe_result *ret, const char *controller, const char *where, const char *dir) {
        int r = writable(dir);
        if (r == 0)
                return result(ret, true, 0, NULL, "%s; our cgroup %s is writable", where, dir);
        return result(ret, false, -r, "cgroup write",
                "%s, but our cgroup %s is not writable (%s): sandboxes cannot get their own %s cgroup; fix: "
                "run as root, or from a delegated cgroup (systemd-run --user --scope -p Delegate=yes ...)%s",
                where, dir, strerror(-r), controller,
                r == -EROFS ? ", or mount /sys/fs/cgroup read-write in the container" : "");
}

int sbx_probe_cgroup_controller(const char *controller, sbx_probe_result *ret) {
        if (!controller || !ret || strchr(controller, '/') || strlen(controller) > 32)
                return -EINVAL;

        sbx_cgroup_layout l = sbx_host_cgroup_layout();
        char own[512], dir[1024], where[600];

        /* v1 (or the v1 side of hybrid): a hierarchy of its own. */
        if (l == SBX_CGROUP_V1 || l == SBX_CGROUP_HYBRID) {
                char mnt[64];
                snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", controller);
                if (is_fs(mnt, 0x27e0eb /* CGROUP_SUPER_MAGIC */) &&
                        own_cgroup(controller, own, sizeof own) == 0) {
                        snprintf(dir, sizeof dir, "%s%s", mnt, streq(own, "/") ? "" : own);
                        snprintf(where, sizeof where, "v1 hierarchy %s", mnt);
                        return controller_result(ret, controller, where, dir);
                }
        }

        if (l == SBX_CGROUP_V2 || l == SBX_CGROUP_HYBRID) {
                const char *base = l == SBX_CGROUP_V2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
                if (own_cgroup(NULL, own, sizeof own) < 0)
                        snprintf(own, sizeof own, "/");
                snprintf(dir, sizeof dir, "%s%s", base, streq(own, "/") ? "" : own);

                bool have;
                if (streq(controller, "freezer")) {
                        /* v2 freezes with cgroup.freeze (core, since 5.2), absent in the root cgroup. */
                        char p[1100];
                        snprintf(p, sizeof p, "%s/cgroup.freeze", dir);
                        have = access(p, F_OK) == 0 ||
                               (streq(own, "/") && sbx_host_kernel_version() >= 5002);
                } else {
                        char p[1100], list[512];
                        snprintf(p, sizeof p, "%s/cgroup.controllers", dir);
                        have = false;
                        if (read_line(p, list, sizeof list) == 0)
                                for (char *save = NULL, *t = strtok_r(list, " ", &save); t && !have;
                                        t = strtok_r(NULL, " ", &save))
                                        have = streq(t, controller);
                }
                if (have) {
                        snprintf(where, sizeof where, "cgroup v2 at %s", base);
                        return controller_result(ret, controller, where, dir);
                }
                return result(ret, false, ENOENT, "cgroup.controllers",
                        "the %s controller is not available in our cgroup %s%s; fix: enable it in the "
                        "parent's cgroup.subtree_control (or delegate it to this user)",
                        controller, dir,
                        l == SBX_CGROUP_HYBRID ? " and is not mounted as a v1 hierarchy either" : "");
        }

        if (l == SBX_CGROUP_V1)
                return result(ret, false, ENOENT, "statfs",
                        "the %s controller is not mounted (no /sys/fs/cgroup/%s hierarchy)", controller,
                        controller);
        return result(
                ret, false, ENOENT, "statfs /sys/fs/cgroup", "no cgroup file system at /sys/fs/cgroup");
}
