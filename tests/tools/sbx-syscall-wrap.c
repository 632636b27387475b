/* sbx-syscall-wrap — run a command with chosen syscalls failing, to test fallback and fail-closed
 * paths: a kernel without Landlock or openat2 (ENOSYS), a container runtime that refuses
 * namespaces (EPERM, like Docker's default profile). Everything else is left alone: default
 * allow, foreign architectures allowed, only no_new_privs is added (seccomp needs it unprivileged).
 *
 * usage: sbx-syscall-wrap [--enosys NAME]... [--eperm NAME]... [--eperm-ns] [--kill-foreign] [--listener] --
 *                         COMMAND [ARG]...
 *   NAME      a syscall name for this architecture (landlock_create_ruleset, openat2, clone3, ...)
 *             or a number
 *   --eperm-ns  unshare and setns → EPERM, clone with any CLONE_NEW* flag → EPERM, clone3 → ENOSYS
 *             (its flags are in memory; libc and sandboxer fall back to clone, which is checked)
 *   --kill-foreign  a process making an i386 (int 0x80) or x32 system call is killed (SIGSYS): a
 *             host that refuses the 32-bit ABIs, as some hypervisors do (there it is SIGSEGV)
 *   --listener  an allow-all filter with a seccomp notification listener above COMMAND (its fd
 *             closed): COMMAND runs nested under a listener, as inside another sandbox or
 *             supervisor, where no second listener can be installed (EBUSY)
 * Exit: COMMAND's status; 125 for a usage or filter error, 126/127 when COMMAND cannot run. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int resolve(const char *name) {
        char *end;
        errno = 0;
        long v = strtol(name, &end, 10);
        if (*name && !*end && errno == 0 && v >= 0 && v < 4096)
                return (int) v;
        return seccomp_syscall_resolve_name(name);
}

static int add(scmp_filter_ctx ctx, uint32_t action, const char *name) {
        int nr = resolve(name);
        if (nr == __NR_SCMP_ERROR) {
                fprintf(stderr, "sbx-syscall-wrap: unknown syscall '%s'\n", name);
                return -EINVAL;
        }
        int r = seccomp_rule_add(ctx, action, nr, 0);
        if (r < 0)
                fprintf(stderr, "sbx-syscall-wrap: cannot add a rule for %s: %s\n", name, strerror(-r));
        return r;
}

static int usage(void) {
        fprintf(stderr, "usage: sbx-syscall-wrap [--enosys NAME]... [--eperm NAME]... [--eperm-ns] "
                        "[--kill-foreign] [--listener] -- COMMAND [ARG]...\n");
        return 125;
}

static void releasep(scmp_filter_ctx *c) {
        if (*c)
                seccomp_release(*c);
}

int main(int argc, char **argv) {
        __attribute__((cleanup(releasep))) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx) {
                fprintf(stderr, "sbx-syscall-wrap: seccomp_init failed\n");
                return 125;
        }
        /* Change nothing but the named calls: other ABIs go through untouched. */
        if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW) < 0 ||
                seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) < 0) {
                fprintf(stderr, "sbx-syscall-wrap: cannot set filter attributes\n");
                return 125;
        }

        bool listener = false;
        int i = 1;
        for (; i < argc; i++) {
                const char *a = argv[i];
                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                } else if (strcmp(a, "--enosys") == 0 && i + 1 < argc) {
                        if (add(ctx, SCMP_ACT_ERRNO(ENOSYS), argv[++i]) < 0)
                                return 125;
                } else if (strcmp(a, "--eperm") == 0 && i + 1 < argc) {
                        if (add(ctx, SCMP_ACT_ERRNO(EPERM), argv[++i]) < 0)
                                return 125;
                } else if (strcmp(a, "--listener") == 0) {
                        listener = true;
                } else if (strcmp(a, "--kill-foreign") == 0) {
                        /* Only the native ABI is in the filter: i386 calls are another
                         * architecture, x32 ones fail libseccomp's x32 check; both take this. */
                        if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0) {
                                fprintf(stderr, "sbx-syscall-wrap: cannot set the bad-arch action\n");
                                return 125;
                        }
                } else if (strcmp(a, "--eperm-ns") == 0) {
                        static const unsigned long ns_flags[] = {
                                CLONE_NEWNS,
                                CLONE_NEWCGROUP,
                                CLONE_NEWUTS,
                                CLONE_NEWIPC,
                                CLONE_NEWUSER,
                                CLONE_NEWPID,
                                CLONE_NEWNET,
                        };
                        int r = add(ctx, SCMP_ACT_ERRNO(EPERM), "unshare");
                        if (r >= 0)
                                r = add(ctx, SCMP_ACT_ERRNO(EPERM), "setns");
                        if (r >= 0)
                                r = add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3");
                        for (size_t k = 0; r >= 0 && k < sizeof ns_flags / sizeof ns_flags[0]; k++) {
                                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                        SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[k], ns_flags[k]));
                                if (r < 0)
                                        fprintf(stderr, "sbx-syscall-wrap: cannot add the clone rule: %s\n",
                                                strerror(-r));
                        }
                        if (r < 0)
                                return 125;
                } else
                        return usage();
        }
        if (i >= argc)
                return usage();

        int r = seccomp_load(ctx);
        if (r < 0) {
                fprintf(stderr, "sbx-syscall-wrap: cannot load the filter: %s\n", strerror(-r));
                return 125;
        }
        seccomp_release(ctx);
        ctx = NULL;
        if (listener) {
                struct sock_filter insn[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
                struct sock_fprog prog = {.len = 1, .filter = insn};
                long fd = syscall(
                        SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                if (fd < 0) {
                        fprintf(stderr, "sbx-syscall-wrap: cannot install a listener: %s\n",
                                strerror(errno));
                        return 125;
                }
                close((int) fd); /* the filter stays; nothing ever notifies */
        }

        execvp(argv[i], argv + i);
        int err = errno;
        fprintf(stderr, "sbx-syscall-wrap: %s: %s\n", argv[i], strerror(err));
        return err == ENOENT || err == ENOTDIR ? 127 : 126;
}
