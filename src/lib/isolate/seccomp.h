/* seccomp.h — the sandbox's seccomp filter: ONE rule table (the kernel's known escape surface,
 * refused; everything else allowed, as Docker, bubblewrap and nsjail do), compiled to BPF in the
 * parent with libseccomp, loaded in the child with two syscalls, written raw for bubblewrap's
 * --seccomp FD and exported as an OCI/Docker profile for podman/docker. x86_64 only.
 *
 * What the compiled program does, in order:
 *   1. arch != AUDIT_ARCH_X86_64 (i386 through int 0x80 / sysenter)   → SECCOMP_RET_KILL_PROCESS
 *   2. nr == -1                                                         → ENOSYS
 *      nr & __X32_SYSCALL_BIT (the x32 ABI)                             → SECCOMP_RET_KILL_PROCESS
 *      nr > sbx_seccomp_max_known_nr()                                  → ENOSYS
 *   3. personality(x), x not in {0, PER_LINUX32, UNAME26, both, 0xffffffff query} → violation
 *   4. the rule table (libseccomp)                                      → violation / ENOSYS
 *   5. everything else                                                  → allow
 * Steps 1–3 are a few hand-written BPF instructions prepended to libseccomp's export, because
 * libseccomp cannot say "nr > N" nor "x not in a set" (one comparison per argument per rule);
 * its program starts with its own arch check, so it runs unchanged after ours (BPF jumps are
 * relative). The ENOSYS ceiling N is the highest number libseccomp resolves for x86_64, capped
 * at SBX_SECCOMP_NR_REVIEWED: syscalls the filter was never reviewed against answer ENOSYS, so
 * libc and runtimes take their fallback paths, and a new mount/namespace syscall cannot slip
 * through a deny-list that does not know its name.
 *
 * A "violation" (a refused call from the table) answers the rule's errno (EPERM, or EACCES for
 * the network rules), or SECCOMP_RET_KILL_PROCESS with kill_on_violation, or
 * SECCOMP_RET_USER_NOTIF with notify (the supervisor then records it and answers the errno
 * sbx_seccomp_classify() names, or kills). Compatibility answers (clone3, the ceiling) are always
 * ENOSYS and never violations: libc falls back to clone, whose flags are in a register.
 *
 * "Exactly one execve" (process.allow_spawn: false, profile.python). A BPF filter has no state
 * and cannot be installed after the exec from outside, and every argument that could mark "the
 * loader's exec" (a path pointer, an fd number, the instruction pointer, a magic register value)
 * can be reproduced by the new image: no notification-free, ptrace-free fence exists. Checked
 * here: execveat(fd, NULL, ..., AT_EMPTY_PATH) — which would let the filter require "fd K, no
 * path" and make K unobtainable with RLIMIT_NOFILE — is EFAULT on 6.18. sandbox2 states the
 * same ("BPF does not have state, we need to inform the Monitor") and uses USER_NOTIF/ptrace.
 * So: SBX_SECCOMP_EXEC_NOTIFY sends every execve/execveat to the supervisor
 * (SECCOMP_RET_USER_NOTIF); it answers SECCOMP_USER_NOTIF_FLAG_CONTINUE to the first one — the
 * loader's, a decision on a count, never on pointer contents — and -EPERM to every later one.
 * It stays a fence when the supervisor fails: once the listener is closed every pending and
 * future notification answers ENOSYS, and it is never "allowed" by default. fork/vfork/clone
 * without CLONE_THREAD (deny_spawn) are plain rules. Where no listener can be installed (EBUSY:
 * already under another listener), exec-once cannot be enforced: the caller must fail closed
 * for allow_spawn: false (or choose SBX_SECCOMP_EXEC_DENY for a filter loaded after the exec by
 * cooperating code). */
#pragma once

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/error.h"

#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* The highest x86_64 syscall number the rule table was reviewed against (Linux 6.17/6.18:
 * file_setattr). Raise it only after reviewing every syscall added in between. */
#define SBX_SECCOMP_NR_REVIEWED 469
/* Upper bound of a program: the kernel's BPF_MAXINSNS. */
#define SBX_SECCOMP_MAX_INSNS 4096

typedef enum sbx_seccomp_exec {
        SBX_SECCOMP_EXEC_ALLOW, /* execve/execveat allowed */
        SBX_SECCOMP_EXEC_DENY, /* every execve/execveat a violation (EPERM): for a filter loaded
                                * after the exec, or a process that must never exec */
        SBX_SECCOMP_EXEC_NOTIFY, /* every execve/execveat to the supervisor (USER_NOTIF): it
                                  * continues the loader's one exec and refuses the rest */
        _SBX_SECCOMP_EXEC_MAX,
        _SBX_SECCOMP_EXEC_INVALID = -EINVAL,
} sbx_seccomp_exec;

typedef struct sbx_seccomp_opts {
        bool deny_inet; /* network denied without a network namespace
                         * (landlock backend): socket(AF_INET/AF_INET6) → EACCES */
        bool inet_tcp_only; /* the landlock backend's egress (no network namespace): socket()
                             * only AF_INET, SOCK_STREAM, TCP (Landlock's TCP rules judge it), no
                             * listen() (an autobound port of the host's), no TCP Fast Open send
                             * (a connect no connect() hook sees) → EACCES */
        bool deny_all_sockets_but_unix_pair; /* profile.python: socket, connect, bind → EACCES;
                                              * socketpair (AF_UNIX) stays allowed */
        bool deny_spawn; /* allow_spawn: false: fork, vfork, clone without
                          * CLONE_THREAD → EPERM (clone3 is ENOSYS anyway) */
        bool deny_metadata; /* chmod/chown/utimes/xattr families → EPERM: what Landlock does not
                             * cover, for backends without a mount namespace (fchmodat2,
                             * setxattrat lie above the ENOSYS ceiling) */
        sbx_seccomp_exec exec; /* see above; SBX_SECCOMP_EXEC_ALLOW = 0 by default */
        bool notify; /* violations → SECCOMP_RET_USER_NOTIF (issue 5) */
        bool kill_on_violation; /* violations → SECCOMP_RET_KILL_PROCESS (without notify) */
        /* With notify: calls that are not refused by the table but worth seeing go to the
         * supervisor too, which reads their arguments as evidence and may refuse them (never
         * allow what a kernel fence refuses: the call continues under Landlock and namespaces). */
        bool observe_network; /* connect, bind, sendto with an address */
        bool observe_exec; /* execve/execveat (process.commands warn|strict: the evidence) */
        bool observe_fs_writes; /* write-intent open/openat/creat, unlink, rename, mkdir, rmdir,
                                 * link, symlink, mknod, truncate (opt-in: costs a round trip) */
} sbx_seccomp_opts;

typedef struct sbx_seccomp_prog {
        struct sock_fprog fprog; /* .filter owned, .len instructions */
} sbx_seccomp_prog;

/* ---- parent side (links libseccomp) ---- */

/* Compile the filter for `o` (NULL = all defaults). Returns 0 and a new program in *ret (free
 * with sbx_seccomp_prog_free), -EOPNOTSUPP when not built for x86_64, -EINVAL for bad options,
 * or libseccomp's -errno, with the story in *e. Never prints. */
int sbx_seccomp_build(const sbx_seccomp_opts *o, sbx_seccomp_prog **ret, sbx_error *e);
/* Accepts NULL; returns NULL. */
sbx_seccomp_prog *sbx_seccomp_prog_free(sbx_seccomp_prog *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_seccomp_prog *, sbx_seccomp_prog_free);
#define _cleanup_seccomp_prog_ _cleanup_(sbx_seccomp_prog_freep)

/* Write the raw program (struct sock_filter array, 8 bytes each, no header) to fd, as
 * bubblewrap's --seccomp FD and the init read it. Retries short writes and EINTR. 0 or -errno. */
int sbx_seccomp_write_bpf(const sbx_seccomp_prog *p, int fd);

/* The same policy as an OCI/Docker seccomp profile (defaultAction SCMP_ACT_ALLOW,
 * architectures [SCMP_ARCH_X86_64], one entry per rule, masked comparisons as
 * {"value": mask, "valueTwo": datum, "op": "SCMP_CMP_MASKED_EQ"}, the reviewed syscalls above the
 * ceiling listed by name with ENOSYS). What JSON cannot say is approximated on the safe side:
 * personality(0xffffffff) (the query) is refused too, and foreign ABIs get the engine's
 * bad-arch action, which runc/crun choose. -EOPNOTSUPP for notify / SBX_SECCOMP_EXEC_NOTIFY (the
 * engine would own the listener, not us). *ret_json is a new NUL-terminated string. */
int sbx_seccomp_export_oci_json(const sbx_seccomp_opts *o, char **ret_json, sbx_error *e);

/* The highest x86_64 syscall number the compiled filter knows; larger ones answer ENOSYS.
 * min(highest number libseccomp resolves, SBX_SECCOMP_NR_REVIEWED): 456 (futex_requeue) with
 * this host's libseccomp 2.5.4 (Debian's table). */
int sbx_seccomp_max_known_nr(void);

/* Name of x86_64 syscall nr for reports ("mount"), also for numbers above libseccomp's table up
 * to SBX_SECCOMP_NR_REVIEWED; NULL when unknown. Static storage, thread-safe. */
const char *sbx_seccomp_syscall_name(int nr);

/* What the filter does with one call, for the supervisor reading a notification (issue 5) and
 * for tests: the same table, evaluated in user space. */
typedef enum sbx_seccomp_action {
        SBX_SECCOMP_ALLOW, /* not refused */
        SBX_SECCOMP_VIOLATION, /* refused by a rule: deny answers .errnum; kill or notify per opts */
        SBX_SECCOMP_ENOSYS, /* compatibility answer (clone3, above the ceiling): no violation */
        SBX_SECCOMP_BADARCH, /* foreign ABI (i386, x32): killed */
        SBX_SECCOMP_EXEC_GATE, /* execve/execveat under SBX_SECCOMP_EXEC_NOTIFY: first continues */
        SBX_SECCOMP_OBSERVE, /* routed to the supervisor to be seen (observe_*): its decision */
        _SBX_SECCOMP_ACTION_MAX,
        _SBX_SECCOMP_ACTION_INVALID = -EINVAL,
} sbx_seccomp_action;

typedef enum sbx_seccomp_category {
        SBX_SECCOMP_CAT_SYSCALL, /* SyscallViolation */
        SBX_SECCOMP_CAT_NETWORK, /* NetworkAccessViolation */
        SBX_SECCOMP_CAT_SPAWN, /* ProcessLimitViolation */
        SBX_SECCOMP_CAT_FS, /* FilesystemWriteViolation */
        _SBX_SECCOMP_CAT_MAX,
        _SBX_SECCOMP_CAT_INVALID = -EINVAL,
} sbx_seccomp_category;

typedef struct sbx_seccomp_match {
        sbx_seccomp_action action;
        sbx_seccomp_category category;
        int errnum; /* positive errno deny mode answers; 0 for ALLOW and BADARCH */
        const char *syscall; /* static name, or NULL when unknown */
        const char *why; /* static: "mount family", "new namespace", ... ; NULL for ALLOW */
} sbx_seccomp_match;

/* Classify one call as the program built from `o` would. 0, or -EINVAL. */
int sbx_seccomp_classify(const sbx_seccomp_opts *o, const struct seccomp_data *d, sbx_seccomp_match *ret);

/* ---- child side: syscalls only, header-only so the static init can use it without linking
 * libseccomp or libsandboxer. Safe between clone and execve (no malloc, no stdio, no locks). ---- */

/* PR_SET_NO_NEW_PRIVS, then seccomp(SECCOMP_SET_MODE_FILTER, flags, fprog). Returns 0, the
 * listener fd (close-on-exec) when flags has SECCOMP_FILTER_FLAG_NEW_LISTENER, or -errno. */
static inline int sbx_seccomp_load_fprog(const struct sock_fprog *fprog, unsigned long flags) {
        if (!fprog || !fprog->filter || fprog->len == 0)
                return -EINVAL;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, fprog);
        if (r < 0)
                return -errno;
        return (int) r;
}

static inline int sbx_seccomp_load(const sbx_seccomp_prog *p) {
        return p ? sbx_seccomp_load_fprog(&p->fprog, 0) : -EINVAL;
}

/* Load with a user-notification listener (SECCOMP_FILTER_FLAG_NEW_LISTENER, plus
 * WAIT_KILLABLE_RECV where the kernel has it (5.19+), so a received notification — the first
 * exec — is not withdrawn and re-sent by an ordinary signal). The fd goes to the supervisor
 * (SCM_RIGHTS) and the loader must close its own copy before its execve, or a dead supervisor
 * would leave that execve waiting on a listener the waiter itself keeps open. -EBUSY when the
 * process is already under a filter with a listener. */
static inline int sbx_seccomp_load_listener(const sbx_seccomp_prog *p, int *ret_listener_fd) {
        if (!p || !ret_listener_fd)
                return -EINVAL;
        int r = sbx_seccomp_load_fprog(
                &p->fprog, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
        if (r == -EINVAL) /* kernel before 5.19: no WAIT_KILLABLE_RECV */
                r = sbx_seccomp_load_fprog(&p->fprog, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if (r < 0)
                return r;
        *ret_listener_fd = r;
        return 0;
}

/* Read a raw program written by sbx_seccomp_write_bpf from fd (until EOF) into buf (n_max
 * instructions, caller's storage: the init uses a static array of SBX_SECCOMP_MAX_INSNS) and
 * point *ret at it. 0, -EINVAL (empty or not a multiple of 8 bytes), -E2BIG, or -errno. */
static inline int sbx_seccomp_read_bpf(
        int fd, struct sock_filter *buf, size_t n_max, struct sock_fprog *ret) {
        size_t got = 0, cap = n_max * sizeof(struct sock_filter);
        for (;;) {
                if (got == cap) {
                        char extra;
                        ssize_t n = read(fd, &extra, 1);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        if (n > 0)
                                return -E2BIG;
                        break;
                }
                ssize_t n = read(fd, (char *) buf + got, cap - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        if (got == 0 || got % sizeof(struct sock_filter) != 0 || got / sizeof(struct sock_filter) > 0xffff)
                return -EINVAL;
        ret->filter = buf;
        ret->len = (unsigned short) (got / sizeof(struct sock_filter));
        return 0;
}
