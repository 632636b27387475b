/* test-seccomp.c — the seccomp filter against the real kernel: every refused call is made with
 * raw syscall() in a forked child under the filter and must answer its errno, and, under
 * kill_on_violation, must die of SIGSYS (proof that the filter and not the kernel refused it);
 * compatibility answers (clone3, numbers above the table) stay ENOSYS; the i386 and x32 ABIs are
 * killed; the user-space classifier agrees with the kernel on every probe; the user-notification
 * path (deny through the supervisor, fail closed without it, exactly one execve); the raw BPF for
 * bwrap and the init; the OCI JSON describes the same policy; sbx-syscall-wrap. */
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/personality.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "isolate/probe.h"
#include "isolate/seccomp.h"
#include "tap.h"

#if !defined(__x86_64__)
int main(void) {
        printf("1..0 # SKIP the seccomp filter is x86_64 only\n");
        return 0;
}
#else

#define PTY_FD 100
#define X32_BIT 0x40000000L
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

extern char **environ;

/* ---- running a child under a filter ---- */

typedef struct probe {
        const char *what;
        long nr;
        uint64_t a[6];
        int want; /* errno under the default (deny) filter; 0 = must succeed */
} probe;

static _noreturn_ void child_run(const sbx_seccomp_prog *p, const probe *pr) {
        if (p && sbx_seccomp_load(p) < 0)
                _exit(250);
        long r = syscall(pr->nr, pr->a[0], pr->a[1], pr->a[2], pr->a[3], pr->a[4], pr->a[5]);
        if (r == 0 && (pr->nr == SYS_clone || pr->nr == SYS_fork || pr->nr == SYS_vfork))
                _exit(0); /* a process that should not exist */
        _exit(r < 0 ? (errno & 0xff) : 0);
}

/* Wait status of a child that loads p (NULL: none) and makes the call. */
static int run_probe(const sbx_seccomp_prog *p, const probe *pr) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0)
                child_run(p, pr);
        int st;
        if (waitpid(pid, &st, 0) < 0)
                return -1;
        return st;
}

/* Wait status of a child that loads p and runs fn (its return value is the exit code). */
static int run_fn(const sbx_seccomp_prog *p, int (*fn)(void)) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                if (p && sbx_seccomp_load(p) < 0)
                        _exit(250);
                _exit(fn() & 0xff);
        }
        int st;
        if (waitpid(pid, &st, 0) < 0)
                return -1;
        return st;
}

static bool exited_with(int st, int code) {
        return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == code;
}
static bool killed_by_sigsys(int st) {
        return st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
}
static const char *describe(int st, char *buf, size_t n) {
        if (st < 0)
                snprintf(buf, n, "fork/wait failed");
        else if (WIFEXITED(st))
                snprintf(buf, n, "exit %d (%s)", WEXITSTATUS(st),
                         WEXITSTATUS(st) == 250 ? "filter did not load" : strerrorname_np(WEXITSTATUS(st)) ?: "?");
        else if (WIFSIGNALED(st))
                snprintf(buf, n, "signal %d", WTERMSIG(st));
        else
                snprintf(buf, n, "status %d", st);
        return buf;
}

static bool expect_exit(int st, int code, const char *what) {
        char b[128];
        bool r = ok(exited_with(st, code), "%s", what);
        if (!r)
                diag("got %s", describe(st, b, sizeof b));
        return r;
}

static sbx_seccomp_prog *build(const sbx_seccomp_opts *o) {
        sbx_seccomp_prog *p = NULL;
        sbx_error e = {0};
        int r = sbx_seccomp_build(o, &p, &e);
        if (r < 0) {
                char b[1024];
                diag("build failed: %s", sbx_error_format(&e, b, sizeof b));
                return NULL;
        }
        return p;
}

static struct seccomp_data data_of(const probe *pr) {
        struct seccomp_data d = {.nr = (int) pr->nr, .arch = AUDIT_ARCH_X86_64};
        for (int i = 0; i < 6; i++)
                d.args[i] = pr->a[i];
        return d;
}

/* ---- probes ---- */

static const char NOPATH[] = "/nonexistent-sbx-test";

#define P(what_, nr_, want_, ...) ((probe){.what = what_, .nr = nr_, .want = want_, .a = {__VA_ARGS__}})
#define S(s) ((uint64_t) (uintptr_t) (s))

static size_t violation_probes(probe *v) {
        size_t n = 0;
        v[n++] = P("mount", SYS_mount, EPERM, S("none"), S(NOPATH), S("tmpfs"), 0, 0);
        v[n++] = P("umount2", SYS_umount2, EPERM, S(NOPATH), 0);
        v[n++] = P("fsopen", SYS_fsopen, EPERM, S("tmpfs"), 0);
        v[n++] = P("fsconfig", SYS_fsconfig, EPERM, (uint64_t) -1, 0, 0, 0, 0);
        v[n++] = P("fsmount", SYS_fsmount, EPERM, (uint64_t) -1, 0, 0);
        v[n++] = P("fspick", SYS_fspick, EPERM, (uint64_t) AT_FDCWD, S(NOPATH), 0);
        v[n++] = P("move_mount", SYS_move_mount, EPERM, (uint64_t) -1, S(""), (uint64_t) -1, S(""), 0);
        v[n++] = P("open_tree", SYS_open_tree, EPERM, (uint64_t) AT_FDCWD, S(NOPATH), 0);
        v[n++] = P("mount_setattr", SYS_mount_setattr, EPERM, (uint64_t) -1, S(""), 0, 0, 0);
        v[n++] = P("pivot_root", SYS_pivot_root, EPERM, S(NOPATH), S(NOPATH));
        v[n++] = P("chroot", SYS_chroot, EPERM, S(NOPATH));
        v[n++] = P("unshare(CLONE_NEWUSER)", SYS_unshare, EPERM, CLONE_NEWUSER);
        v[n++] = P("unshare(0)", SYS_unshare, EPERM, 0);
        v[n++] = P("setns", SYS_setns, EPERM, (uint64_t) -1, 0);
        v[n++] = P("clone(CLONE_NEWUSER)", SYS_clone, EPERM, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        v[n++] = P("clone(CLONE_NEWNET)", SYS_clone, EPERM, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
        v[n++] = P("clone(CLONE_NEWNS|CLONE_NEWPID)", SYS_clone, EPERM, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD,
                0, 0, 0, 0);
        v[n++] = P("ptrace", SYS_ptrace, EPERM, PTRACE_PEEKDATA, 1, 0, 0);
        v[n++] = P("process_vm_readv", SYS_process_vm_readv, EPERM, 1, 0, 0, 0, 0, 0);
        v[n++] = P("process_vm_writev", SYS_process_vm_writev, EPERM, 1, 0, 0, 0, 0, 0);
        v[n++] = P("pidfd_getfd", SYS_pidfd_getfd, EPERM, (uint64_t) -1, 0, 0);
        v[n++] = P("keyctl", SYS_keyctl, EPERM, 0, (uint64_t) -1, 0);
        v[n++] = P("add_key", SYS_add_key, EPERM, S("user"), S("sbx"), 0, 0, (uint64_t) -2);
        v[n++] = P("request_key", SYS_request_key, EPERM, S("user"), S("sbx"), 0, 0);
        v[n++] = P("bpf", SYS_bpf, EPERM, (uint64_t) -1, 0, 0);
        v[n++] = P("perf_event_open", SYS_perf_event_open, EPERM, 0, 0, (uint64_t) -1, (uint64_t) -1, 0);
        v[n++] = P("userfaultfd", SYS_userfaultfd, EPERM, 0);
        v[n++] = P("io_uring_setup", SYS_io_uring_setup, EPERM, 0, 0);
        v[n++] = P("io_uring_enter", SYS_io_uring_enter, EPERM, (uint64_t) -1, 0, 0, 0, 0, 0);
        v[n++] = P("io_uring_register", SYS_io_uring_register, EPERM, (uint64_t) -1, 0, 0, 0);
        v[n++] = P("kexec_load", SYS_kexec_load, EPERM, 0, 0, 0, 0);
        v[n++] = P("kexec_file_load", SYS_kexec_file_load, EPERM, (uint64_t) -1, (uint64_t) -1, 0, 0, 0);
        v[n++] = P("init_module", SYS_init_module, EPERM, 0, 0, S(""));
        v[n++] = P("finit_module", SYS_finit_module, EPERM, (uint64_t) -1, S(""), 0);
        v[n++] = P("delete_module", SYS_delete_module, EPERM, S("sbx_nonexistent"), O_NONBLOCK);
        v[n++] = P("reboot", SYS_reboot, EPERM, 0, 0, 0, 0);
        v[n++] = P("swapon", SYS_swapon, EPERM, S(NOPATH), 0);
        v[n++] = P("swapoff", SYS_swapoff, EPERM, S(NOPATH));
        v[n++] = P("acct", SYS_acct, EPERM, S(NOPATH));
        v[n++] = P("quotactl", SYS_quotactl, EPERM, 0, 0, 0, 0);
        v[n++] = P("quotactl_fd", SYS_quotactl_fd, EPERM, (uint64_t) -1, 0, 0, 0);
        v[n++] = P("lookup_dcookie", SYS_lookup_dcookie, EPERM, 0, 0, 0);
        v[n++] = P("open_by_handle_at", SYS_open_by_handle_at, EPERM, (uint64_t) -1, 0, 0);
        v[n++] = P("syslog", SYS_syslog, EPERM, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, 0, 0);
        v[n++] = P("settimeofday", SYS_settimeofday, EPERM, 0, 0);
        v[n++] = P("clock_settime", SYS_clock_settime, EPERM, CLOCK_REALTIME, 0);
        v[n++] = P("vhangup", SYS_vhangup, EPERM, 0);
        v[n++] = P("nfsservctl", SYS_nfsservctl, EPERM, 0, 0, 0);
        v[n++] = P("iopl", SYS_iopl, EPERM, 0);
        v[n++] = P("ioperm", SYS_ioperm, EPERM, 0, 0, 0);
        v[n++] = P("uselib", SYS_uselib, EPERM, S(NOPATH));
        v[n++] = P("ioctl(TIOCSTI)", SYS_ioctl, EPERM, PTY_FD, TIOCSTI, S("x"));
        v[n++] = P("ioctl(TIOCSTI | garbage << 32)", SYS_ioctl, EPERM, PTY_FD,
                0xdeadbeef00000000ULL | TIOCSTI, S("x"));
        v[n++] = P("ioctl(TIOCLINUX)", SYS_ioctl, EPERM, PTY_FD, TIOCLINUX, S("\x0b"));
        v[n++] = P("socket(AF_PACKET)", SYS_socket, EPERM, AF_PACKET, SOCK_RAW, 0);
        v[n++] = P("socket(AF_PACKET | garbage << 32)", SYS_socket, EPERM, (1ULL << 32) | AF_PACKET,
                SOCK_DGRAM, 0);
        v[n++] = P("socket(AF_VSOCK)", SYS_socket, EPERM, AF_VSOCK, SOCK_STREAM, 0);
        v[n++] = P("socket(AF_INET, SOCK_RAW)", SYS_socket, EPERM, AF_INET, SOCK_RAW, IPPROTO_ICMP);
        v[n++] = P("socket(AF_INET, SOCK_RAW|SOCK_CLOEXEC|SOCK_NONBLOCK)", SYS_socket, EPERM, AF_INET,
                SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMP);
        v[n++] = P("socket(AF_INET6, SOCK_RAW)", SYS_socket, EPERM, AF_INET6, SOCK_RAW, 58);
        v[n++] = P("socket(AF_INET, SOCK_PACKET)", SYS_socket, EPERM, AF_INET, SOCK_PACKET, 0);
        v[n++] = P("personality(ADDR_NO_RANDOMIZE)", SYS_personality, EPERM, ADDR_NO_RANDOMIZE);
        v[n++] = P("personality(READ_IMPLIES_EXEC | garbage << 32)", SYS_personality, EPERM,
                (7ULL << 32) | READ_IMPLIES_EXEC);
        return n;
}

static size_t allowed_probes(probe *v) {
        size_t n = 0;
        v[n++] = P("getpid", SYS_getpid, 0);
        v[n++] = P("personality(0xffffffff) query", SYS_personality, 0, 0xffffffffULL);
        v[n++] = P("personality(PER_LINUX)", SYS_personality, 0, PER_LINUX);
        static struct winsize ws;
        v[n++] = P("ioctl(TIOCGWINSZ)", SYS_ioctl, 0, PTY_FD, TIOCGWINSZ, S(&ws));
        v[n++] = P("socket(AF_INET, SOCK_DGRAM)", SYS_socket, 0, AF_INET, SOCK_DGRAM, 0);
        v[n++] = P("socket(AF_UNIX, SOCK_STREAM)", SYS_socket, 0, AF_UNIX, SOCK_STREAM, 0);
        v[n++] = P("socket(AF_NETLINK)", SYS_socket, 0, AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */);
        v[n++] = P("kcmp", SYS_kcmp, 0, (uint64_t) getpid(), (uint64_t) getpid(), 0 /* KCMP_FILE */, 0, 0);
        return n;
}

/* ---- tests ---- */

static void test_rules(const sbx_seccomp_prog *deny, const sbx_seccomp_prog *kill) {
        probe v[96];
        size_t n = violation_probes(v);
        char b[128];
        for (size_t i = 0; i < n; i++) {
                int st = run_probe(deny, &v[i]);
                if (!ok(exited_with(st, v[i].want), "%s refused with %s", v[i].what,
                            strerrorname_np(v[i].want)))
                        diag("got %s", describe(st, b, sizeof b));
                st = run_probe(kill, &v[i]);
                if (!ok(killed_by_sigsys(st), "%s killed under kill_on_violation", v[i].what))
                        diag("got %s", describe(st, b, sizeof b));
                struct seccomp_data d = data_of(&v[i]);
                sbx_seccomp_match m = {0};
                int r = sbx_seccomp_classify(NULL, &d, &m);
                ok(r == 0 && m.action == SBX_SECCOMP_VIOLATION && m.errnum == v[i].want && m.why,
                        "classify: %s is a violation (%s)", v[i].what, m.why ?: "-");
        }
        n = allowed_probes(v);
        for (size_t i = 0; i < n; i++) {
                int st = run_probe(kill, &v[i]);
                /* Allowed means the filter let it through: the kernel may still refuse it, but
                 * never with a kill. */
                ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 250, "%s allowed (%s)", v[i].what,
                        describe(st, b, sizeof b));
                struct seccomp_data d = data_of(&v[i]);
                sbx_seccomp_match m;
                ok(sbx_seccomp_classify(NULL, &d, &m) == 0 && m.action == SBX_SECCOMP_ALLOW,
                        "classify: %s allowed", v[i].what);
        }
}

static int newer_than_filter(void) {
        /* Every number above the ceiling up to the reviewed table answers ENOSYS; exit 0 if so. */
        for (int nr = sbx_seccomp_max_known_nr() + 1; nr <= SBX_SECCOMP_NR_REVIEWED; nr++)
                if (syscall(nr, -1L, 0L, 0L, 0L, 0L, 0L) != -1 || errno != ENOSYS)
                        return nr - 256 > 0 ? nr - 256 : 1;
        return 0;
}
static int kernel_has_newer(void) {
        /* How many of those the kernel itself implements (not ENOSYS without a filter). */
        int n = 0;
        for (int nr = sbx_seccomp_max_known_nr() + 1; nr <= SBX_SECCOMP_NR_REVIEWED; nr++)
                if (syscall(nr, -1L, 0L, 0L, 0L, 0L, 0L) != -1 || errno != ENOSYS)
                        n++;
        return n;
}

static void test_enosys(const sbx_seccomp_prog *deny, const sbx_seccomp_prog *kill) {
        char b[128];
        int max = sbx_seccomp_max_known_nr();
        diag("highest syscall number the filter knows: %d (%s); reviewed up to %d", max,
                sbx_seccomp_syscall_name(max) ?: "?", SBX_SECCOMP_NR_REVIEWED);
        ok(max >= 435 && max <= SBX_SECCOMP_NR_REVIEWED,
                "the ceiling is past clone3 and within the reviewed table");

        probe clone3 = P("clone3", SYS_clone3, ENOSYS, 0, 0);
        int ctl = run_probe(NULL, &clone3);
        ok(!exited_with(ctl, ENOSYS), "control: the kernel has clone3 (%s)", describe(ctl, b, sizeof b));
        ok(exited_with(run_probe(deny, &clone3), ENOSYS), "clone3 answers ENOSYS");
        ok(exited_with(run_probe(kill, &clone3), ENOSYS),
                "clone3 answers ENOSYS under kill_on_violation too");

        const long nrs[] = {470, 500, 1000, -1};
        for (size_t i = 0; i < ELEMENTSOF(nrs); i++) {
                probe p = P("nr", nrs[i], ENOSYS, 0);
                ok(exited_with(run_probe(deny, &p), ENOSYS), "syscall %ld answers ENOSYS", nrs[i]);
                ok(exited_with(run_probe(kill, &p), ENOSYS), "syscall %ld answers ENOSYS under kill",
                        nrs[i]);
        }
        if (max < SBX_SECCOMP_NR_REVIEWED) {
                int st = run_fn(NULL, kernel_has_newer);
                int have = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                diag("the kernel implements %d of the syscalls %d..%d", have, max + 1,
                        SBX_SECCOMP_NR_REVIEWED);
                ok(exited_with(run_fn(deny, newer_than_filter), 0),
                        "syscalls %d..%d answer ENOSYS under the filter", max + 1, SBX_SECCOMP_NR_REVIEWED);
        } else
                skip(1, "libseccomp knows every reviewed syscall");

        struct seccomp_data d = {.nr = 1000, .arch = AUDIT_ARCH_X86_64};
        sbx_seccomp_match m;
        ok(sbx_seccomp_classify(NULL, &d, &m) == 0 && m.action == SBX_SECCOMP_ENOSYS,
                "classify: 1000 is ENOSYS");
        d.nr = SYS_clone3;
        ok(sbx_seccomp_classify(NULL, &d, &m) == 0 && m.action == SBX_SECCOMP_ENOSYS && m.errnum == ENOSYS,
                "classify: clone3 is ENOSYS, not a violation");
}

static int do_int80_getpid(void) {
        long r;
        sbx_probe_signal_default(SIGSEGV); /* not ASan's handler: a host's refusal is a death */
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L /* i386 getpid */) : "memory", "cc");
        return r == getpid() ? 0 : 1;
}
static int do_x32_getpid(void) {
        long r = syscall(X32_BIT | SYS_getpid);
        return r < 0 ? errno : 0;
}

static void test_foreign_abis(const sbx_seccomp_prog *deny) {
        char b[128];
        int ctl = run_fn(NULL, do_int80_getpid);
        if (exited_with(ctl, 0)) {
                int st = run_fn(deny, do_int80_getpid);
                if (!ok(killed_by_sigsys(st), "i386 int $0x80 getpid killed"))
                        diag("got %s", describe(st, b, sizeof b));
        } else {
                /* some hosts refuse it themselves (SIGSEGV: emulation off, or a hypervisor) */
                char why[256];
                snprintf(why, sizeof why,
                        "this host refuses i386 system calls without any filter (%s): the check would "
                        "be vacuous",
                        describe(ctl, b, sizeof b));
                skip(1, why);
        }

        /* doctor's probe agrees with what was just seen, and judges each ending */
        sbx_probe_result pr;
        ok(sbx_probe_syscalls_32bit(&pr) >= 0 &&
                        strstr(pr.detail, exited_with(ctl, 0) ? "i386 (int 0x80): accepted"
                                                              : "i386 (int 0x80): refused"),
                "probe: the i386 ABI as the trial here found it");
        diag("probe: %s", pr.detail);
        ok(sbx_probe_syscalls_32bit_from(W_EXITCODE(0, 0), W_EXITCODE(1, 0), &pr) == 1 &&
                        strstr(pr.detail, "i386 (int 0x80): accepted by the host") &&
                        strstr(pr.detail, "x32: not in this kernel (ENOSYS)"),
                "probe: i386 accepted, x32 ENOSYS: available, each said");
        ok(sbx_probe_syscalls_32bit_from(SIGSEGV, W_EXITCODE(1, 0), &pr) == 0 && pr.errnum == ENOSYS &&
                        strstr(pr.detail, "i386 (int 0x80): refused by the host") &&
                        strstr(pr.detail, "SIGSEGV"),
                "probe: int 0x80 dying by SIGSEGV is the host's refusal (unavailable)");
        ok(sbx_probe_syscalls_32bit_from(SIGSYS, SIGSYS, &pr) == 0 &&
                        strstr(pr.detail, "i386 (int 0x80): refused above us: a seccomp filter") &&
                        strstr(pr.detail, "x32: refused above us"),
                "probe: SIGSYS is a filter above us");
        ok(sbx_probe_syscalls_32bit_from(W_EXITCODE(2, 0), W_EXITCODE(0, 0), &pr) == 1 &&
                        strstr(pr.detail, "i386 (int 0x80): not in this kernel (the call failed)") &&
                        strstr(pr.detail, "x32: accepted"),
                "probe: x32 alone accepted: available");
        ok(sbx_probe_syscalls_32bit_from(0, 0, NULL) == -EINVAL, "probe: NULL result refused");
        ctl = run_fn(NULL, do_x32_getpid);
        diag("x32 getpid without a filter: %s", describe(ctl, b, sizeof b));
        if (WIFSIGNALED(ctl))
                skip(1, "this host kills x32 system calls without any filter: the check would be vacuous");
        else {
                int st = run_fn(deny, do_x32_getpid);
                if (!ok(killed_by_sigsys(st), "x32 getpid (nr | 0x40000000) killed"))
                        diag("got %s", describe(st, b, sizeof b));
        }

        struct seccomp_data d = {.nr = 20, .arch = AUDIT_ARCH_I386};
        sbx_seccomp_match m;
        ok(sbx_seccomp_classify(NULL, &d, &m) == 0 && m.action == SBX_SECCOMP_BADARCH,
                "classify: i386 is killed");
        d = (struct seccomp_data){.nr = (int) (X32_BIT | SYS_getpid), .arch = AUDIT_ARCH_X86_64};
        ok(sbx_seccomp_classify(NULL, &d, &m) == 0 && m.action == SBX_SECCOMP_BADARCH,
                "classify: x32 is killed");
}

static void *thread_fn(void *arg) {
        return arg;
}
static int do_pthread(void) {
        pthread_t t;
        void *ret = NULL;
        int r = pthread_create(&t, NULL, thread_fn, (void *) 42);
        if (r != 0)
                return r;
        r = pthread_join(t, &ret);
        return r != 0 ? r : ret == (void *) 42 ? 0 : 1;
}
static int do_fork(void) {
        pid_t p = fork();
        if (p < 0)
                return errno;
        if (p == 0)
                _exit(7);
        int st;
        return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : 1;
}
static int do_posix_spawn(void) {
        pid_t p;
        char *argv[] = {(char *) "true", NULL};
        int r = posix_spawn(&p, "/bin/true", NULL, NULL, argv, environ);
        if (r != 0)
                return r;
        int st;
        return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
static int do_execve(void) {
        char *argv[] = {(char *) "true", NULL};
        execve("/bin/true", argv, environ);
        return errno;
}

static void test_spawn(const sbx_seccomp_prog *deny) {
        sbx_seccomp_opts o = {.deny_spawn = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *nospawn = build(&o);
        o = (sbx_seccomp_opts){.exec = SBX_SECCOMP_EXEC_DENY};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *noexec = build(&o);
        if (!ok(nospawn && noexec, "spawn and exec filters build")) {
                skip(9, "no filter");
                return;
        }
        expect_exit(run_fn(deny, do_pthread), 0, "threads work");
        expect_exit(run_fn(deny, do_fork), 0, "fork works without deny_spawn");
        expect_exit(run_fn(deny, do_posix_spawn), 0, "posix_spawn works without deny_spawn");
        expect_exit(run_fn(nospawn, do_pthread), 0, "threads work under deny_spawn");
        expect_exit(run_fn(nospawn, do_fork), EPERM, "fork fails with EPERM under deny_spawn");
        probe vf = P("vfork", SYS_vfork, EPERM, 0);
        expect_exit(run_probe(nospawn, &vf), EPERM, "vfork fails with EPERM under deny_spawn");
        expect_exit(run_fn(nospawn, do_posix_spawn), EPERM,
                "posix_spawn (clone3 → ENOSYS → clone) fails with EPERM under deny_spawn");
        expect_exit(run_fn(nospawn, do_execve), 0, "execve still allowed by deny_spawn alone");
        expect_exit(run_fn(noexec, do_execve), EPERM, "execve fails with EPERM under EXEC_DENY");
}

static int do_inet_stream(void) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        return fd < 0 ? errno : 0;
}
static int do_inet6_dgram(void) {
        int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        return fd < 0 ? errno : 0;
}
static int do_unix(void) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        return fd < 0 ? errno : 0;
}
static int do_socketpair(void) {
        int sv[2];
        return socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 ? errno : write(sv[0], "x", 1) == 1 ? 0 : 1;
}
static int do_connect(void) {
        struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/nonexistent-sbx"};
        return connect(0, (struct sockaddr *) &a, sizeof a) < 0 ? errno : 0;
}
static int do_bind(void) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        return bind(0, (struct sockaddr *) &a, sizeof(sa_family_t)) < 0 ? errno : 0;
}

static void test_network(void) {
        sbx_seccomp_opts o = {.deny_inet = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *noinet = build(&o);
        o = (sbx_seccomp_opts){.deny_all_sockets_but_unix_pair = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *nosock = build(&o);
        if (!ok(noinet && nosock, "network filters build")) {
                skip(9, "no filter");
                return;
        }
        expect_exit(run_fn(noinet, do_inet_stream), EACCES, "deny_inet: socket(AF_INET) EACCES");
        expect_exit(run_fn(noinet, do_inet6_dgram), EACCES, "deny_inet: socket(AF_INET6) EACCES");
        expect_exit(run_fn(noinet, do_unix), 0, "deny_inet: socket(AF_UNIX) works");
        probe raw = P("raw", SYS_socket, EACCES, AF_INET, SOCK_RAW, 1);
        expect_exit(run_probe(noinet, &raw), EACCES, "deny_inet: raw socket EACCES");
        probe pkt = P("packet", SYS_socket, EPERM, AF_PACKET, SOCK_RAW, 0);
        expect_exit(run_probe(noinet, &pkt), EPERM, "deny_inet: packet socket still EPERM");
        expect_exit(run_fn(nosock, do_unix), EACCES, "no sockets: socket(AF_UNIX) EACCES");
        expect_exit(run_fn(nosock, do_socketpair), 0, "no sockets: socketpair(AF_UNIX) works");
        expect_exit(run_fn(nosock, do_connect), EACCES, "no sockets: connect EACCES");
        expect_exit(run_fn(nosock, do_bind), EACCES, "no sockets: bind EACCES");
}

/* inet_tcp_only (the landlock backend's egress): TCP over IPv4 and nothing else of the network */
static void test_inet_tcp_only(void) {
        sbx_seccomp_opts o = {.inet_tcp_only = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *tcp = build(&o);
        if (!ok(tcp, "the inet_tcp_only filter builds")) {
                skip(12, "no filter");
                return;
        }
        expect_exit(run_fn(tcp, do_inet_stream), 0, "inet_tcp_only: socket(AF_INET, SOCK_STREAM, 0) works");
        probe tcp6 =
                P("tcp", SYS_socket, 0, AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
        expect_exit(run_probe(tcp, &tcp6), 0, "inet_tcp_only: IPPROTO_TCP with flags works");
        expect_exit(run_fn(tcp, do_inet6_dgram), EACCES, "inet_tcp_only: socket(AF_INET6) EACCES");
        expect_exit(run_fn(tcp, do_unix), EACCES, "inet_tcp_only: socket(AF_UNIX) EACCES (host sockets)");
        expect_exit(run_fn(tcp, do_socketpair), 0, "inet_tcp_only: socketpair(AF_UNIX) works");
        probe udp = P("udp", SYS_socket, EACCES, AF_INET, SOCK_DGRAM, 0);
        expect_exit(run_probe(tcp, &udp), EACCES, "inet_tcp_only: UDP EACCES");
        probe mptcp = P("mptcp", SYS_socket, EACCES, AF_INET, SOCK_STREAM, 262);
        expect_exit(run_probe(tcp, &mptcp), EACCES, "inet_tcp_only: MPTCP (another stream protocol) EACCES");
        probe hi = P("family with upper bits", SYS_socket, EACCES, (1ULL << 32) | AF_INET, SOCK_STREAM, 0);
        expect_exit(run_probe(tcp, &hi), EACCES, "inet_tcp_only: AF_INET with stray upper bits EACCES");
        probe lis = P("listen", SYS_listen, EACCES, (uint64_t) -1, 1);
        expect_exit(run_probe(tcp, &lis), EACCES, "inet_tcp_only: listen EACCES (no autobound host port)");
        probe tfo = P("sendto fastopen", SYS_sendto, EACCES, (uint64_t) -1, 0, 0, MSG_FASTOPEN, 0, 0);
        expect_exit(run_probe(tcp, &tfo), EACCES, "inet_tcp_only: sendto(MSG_FASTOPEN) EACCES");
        probe tfo2 = P("sendmsg fastopen", SYS_sendmsg, EACCES, (uint64_t) -1, 0, MSG_FASTOPEN);
        expect_exit(run_probe(tcp, &tfo2), EACCES, "inet_tcp_only: sendmsg(MSG_FASTOPEN) EACCES");
        probe snd = P("sendto", SYS_sendto, EBADF, (uint64_t) -1, 0, 0, 0, 0, 0);
        expect_exit(run_probe(tcp, &snd), EBADF, "inet_tcp_only: a plain sendto reaches the kernel (EBADF)");
}

/* ---- user notification ---- */

static int send_fd(int sock, int fd) {
        char c = 'f';
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u = {0};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        return sendmsg(sock, &mh, 0) == 1 ? 0 : -errno;
}
static int recv_fd(int sock) {
        char c;
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u;
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
        if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        if (!cm || cm->cmsg_type != SCM_RIGHTS)
                return -1;
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        return fd;
}

/* Receive one notification within 5 s. 0, or -1 on timeout/error. */
static int notif_recv(int listener, struct seccomp_notif *n) {
        struct pollfd pfd = {.fd = listener, .events = POLLIN};
        if (poll(&pfd, 1, 5000) != 1)
                return -1;
        memset(n, 0, sizeof *n);
        return ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0 ? -1 : 0;
}
static int notif_send(int listener, uint64_t id, int error, uint32_t flags) {
        struct seccomp_notif_resp resp = {.id = id, .error = error, .flags = flags};
        return ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 ? -errno : 0;
}

/* Child: load with a listener, hand it over, close our copy, then act. */
static pid_t start_notified(const sbx_seccomp_prog *p, int sock, int (*fn)(void)) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        int lfd;
        if (sbx_seccomp_load_listener(p, &lfd) < 0)
                _exit(250);
        if (send_fd(sock, lfd) < 0)
                _exit(251);
        close(lfd);
        close(sock);
        _exit(fn() & 0xff);
}

static int do_mount_twice(void) {
        /* First answered by the supervisor, second after it closed the listener: 16*a + b. */
        int a = syscall(SYS_mount, "none", NOPATH, "tmpfs", 0, NULL) < 0 ? errno : 0;
        int b = syscall(SYS_mount, "none", NOPATH, "tmpfs", 0, NULL) < 0 ? errno : 0;
        return a == EPERM && b == ENOSYS ? 0 : 1;
}

static int do_exec_self_second(void) {
        char *argv[] = {(char *) "test-seccomp", (char *) "--second-exec", NULL};
        execve("/proc/self/exe", argv, environ);
        return errno;
}

static void test_notify(void) {
        char b[128];
        sbx_seccomp_opts on = {.notify = true};
        sbx_seccomp_opts og = {.exec = SBX_SECCOMP_EXEC_NOTIFY, .deny_spawn = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *p = build(&on);
        _cleanup_seccomp_prog_ sbx_seccomp_prog *gate = build(&og);
        if (!ok(p && gate, "notify filters build")) {
                skip(8, "no filter");
                return;
        }

        /* Violations through the supervisor; fail closed once it is gone. */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return (void) skip(8, "socketpair");
        pid_t pid = start_notified(p, sv[1], do_mount_twice);
        close(sv[1]);
        int lfd = recv_fd(sv[0]);
        close(sv[0]);
        struct seccomp_notif n;
        bool got = lfd >= 0 && notif_recv(lfd, &n) == 0;
        sbx_seccomp_match m = {0};
        if (got)
                (void) sbx_seccomp_classify(&on, &n.data, &m);
        ok(got && n.data.nr == SYS_mount && m.action == SBX_SECCOMP_VIOLATION &&
                        streq_ptr(m.syscall, "mount"),
                "notify: the supervisor sees mount as a violation (%s)", m.why ?: "-");
        ok(got && notif_send(lfd, n.id, -m.errnum, 0) == 0, "notify: the supervisor answers -%s",
                strerrorname_np(m.errnum) ?: "?");
        if (lfd >= 0)
                close(lfd);
        int st;
        waitpid(pid, &st, 0);
        ok(exited_with(st, 0),
                "notify: mount got EPERM from the supervisor, then ENOSYS with the listener closed (%s)",
                describe(st, b, sizeof b));

        /* Exactly one execve: the loader's continues, the image's own is refused. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return (void) skip(5, "socketpair");
        pid = start_notified(gate, sv[1], do_exec_self_second);
        close(sv[1]);
        lfd = recv_fd(sv[0]);
        close(sv[0]);
        unsigned execs = 0, refused = 0;
        for (;;) {
                if (lfd < 0 || notif_recv(lfd, &n) < 0)
                        break;
                (void) sbx_seccomp_classify(&og, &n.data, &m);
                if (m.action != SBX_SECCOMP_EXEC_GATE) {
                        (void) notif_send(lfd, n.id, -EPERM, 0);
                        continue;
                }
                if (execs++ == 0)
                        (void) notif_send(lfd, n.id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
                else {
                        (void) notif_send(lfd, n.id, -EPERM, 0);
                        refused++;
                }
                if (execs == 2)
                        break;
        }
        ok(execs == 2, "exec gate: two execve notifications (got %u)", execs);
        ok(refused == 1, "exec gate: the second one refused");
        if (lfd >= 0)
                close(lfd);
        waitpid(pid, &st, 0);
        ok(exited_with(st, 42), "exec gate: the first exec ran the command, its own execve got EPERM (%s)",
                describe(st, b, sizeof b));
        struct seccomp_data d = {.nr = SYS_execveat, .arch = AUDIT_ARCH_X86_64};
        ok(sbx_seccomp_classify(&og, &d, &m) == 0 && m.action == SBX_SECCOMP_EXEC_GATE &&
                        m.category == SBX_SECCOMP_CAT_SPAWN,
                "classify: execveat goes to the gate");
        d.nr = SYS_fork;
        ok(sbx_seccomp_classify(&og, &d, &m) == 0 && m.action == SBX_SECCOMP_VIOLATION &&
                        m.category == SBX_SECCOMP_CAT_SPAWN && m.errnum == EPERM,
                "classify: fork is a spawn violation");
}

/* The second image of the exec-gate test: its own execve must be refused. */
static int second_exec_main(void) {
        char *argv[] = {(char *) "true", NULL};
        execve("/bin/true", argv, environ);
        return errno == EPERM ? 42 : 43;
}

/* ---- raw BPF and OCI JSON ---- */

static int do_mount(void) {
        return syscall(SYS_mount, "none", NOPATH, "tmpfs", 0, NULL) < 0 ? errno : 0;
}

static void test_raw_bpf(const sbx_seccomp_prog *deny) {
        int fd = memfd_create("bpf", MFD_CLOEXEC);
        ok(fd >= 0 && sbx_seccomp_write_bpf(deny, fd) == 0, "write_bpf");
        struct stat st;
        ok(fd >= 0 && fstat(fd, &st) == 0 && st.st_size % 8 == 0 &&
                        st.st_size == (off_t) deny->fprog.len * 8,
                "write_bpf wrote %u instructions, a multiple of 8 bytes", deny->fprog.len);
        /* Read it back the way the init does, and load that. */
        static struct sock_filter buf[SBX_SECCOMP_MAX_INSNS];
        struct sock_fprog fp = {0};
        ok(fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 &&
                        sbx_seccomp_read_bpf(fd, buf, ELEMENTSOF(buf), &fp) == 0 &&
                        fp.len == deny->fprog.len && memcmp(buf, deny->fprog.filter, fp.len * 8) == 0,
                "read_bpf reads it back");
        sbx_seccomp_prog copy = {.fprog = fp};
        int s = run_fn(&copy, do_mount);
        ok(exited_with(s, EPERM), "the program read back refuses mount");
        if (fd >= 0)
                close(fd);
}

static int name_to_nr(const char *name) {
        for (int nr = 0; nr <= SBX_SECCOMP_NR_REVIEWED; nr++)
                if (streq_ptr(sbx_seccomp_syscall_name(nr), name))
                        return nr;
        return -1;
}

/* Every entry of the JSON, flattened by python3 to "errno name [index mask value]...", must be
 * refused with that errno (or ENOSYS) by the classifier — the BPF's own table. */
static void test_oci_json(void) {
        sbx_error e = {0};
        _cleanup_free_ char *json = NULL;
        ok(sbx_seccomp_export_oci_json(NULL, &json, &e) == 0 && json, "OCI JSON export");
        if (!json)
                return (void) skip(6, "no JSON");
        const char *must[] = {"\"mount\"", "\"clone3\"", "\"ptrace\"", "\"ioctl\"", "\"socket\"",
                "\"SCMP_CMP_MASKED_EQ\"", "\"personality\"", "\"defaultAction\": \"SCMP_ACT_ALLOW\""};
        bool all = true;
        for (size_t i = 0; i < ELEMENTSOF(must); i++)
                if (!strstr(json, must[i])) {
                        diag("missing %s", must[i]);
                        all = false;
                }
        ok(all, "the JSON names the rules");

        sbx_seccomp_opts ko = {.kill_on_violation = true};
        _cleanup_free_ char *kj = NULL;
        ok(sbx_seccomp_export_oci_json(&ko, &kj, NULL) == 0 && kj && strstr(kj, "SCMP_ACT_KILL_PROCESS"),
                "kill_on_violation exports SCMP_ACT_KILL_PROCESS");
        sbx_seccomp_opts no = {.notify = true};
        _cleanup_free_ char *nj = NULL;
        ok(sbx_seccomp_export_oci_json(&no, &nj, &e) == -EOPNOTSUPP, "notify cannot be exported");

        if (system("python3 -c 'pass' >/dev/null 2>&1") != 0)
                return (void) skip(2, "no python3 to parse the JSON");
        char path[] = "/tmp/test-seccomp-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t) strlen(json)) {
                if (fd >= 0)
                        close(fd), unlink(path);
                return (void) skip(2, "cannot write the JSON");
        }
        close(fd);
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                "python3 -c 'import json,sys\n"
                "d=json.load(open(sys.argv[1]))\n"
                "assert d[\"defaultAction\"]==\"SCMP_ACT_ALLOW\" and "
                "d[\"architectures\"]==[\"SCMP_ARCH_X86_64\"]\n"
                "for s in d[\"syscalls\"]:\n"
                "  for n in s[\"names\"]:\n"
                "    print(s.get(\"errnoRet\",0), n, *[x for a in s.get(\"args\",[]) for x in "
                "(a[\"index\"], a[\"value\"], a[\"valueTwo\"])])\n"
                "' %s",
                path);
        FILE *f = popen(cmd, "r");
        unsigned entries = 0, bad = 0;
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
                int err, used;
                char name[64];
                if (sscanf(line, "%d %63s%n", &err, name, &used) < 2)
                        continue;
                entries++;
                struct seccomp_data d = {.nr = name_to_nr(name), .arch = AUDIT_ARCH_X86_64};
                unsigned idx;
                unsigned long long mask, val;
                int k;
                for (const char *q = line + used; sscanf(q, "%u %llu %llu%n", &idx, &mask, &val, &k) == 3;
                        q += k)
                        if (idx < 6)
                                d.args[idx] = (d.args[idx] & ~mask) | val;
                sbx_seccomp_match m;
                bool good = d.nr >= 0 && sbx_seccomp_classify(NULL, &d, &m) == 0 &&
                            (m.action == SBX_SECCOMP_VIOLATION || m.action == SBX_SECCOMP_ENOSYS) &&
                            m.errnum == err;
                if (!good && bad++ < 5)
                        diag("JSON entry not refused the same by the filter: %s", line);
        }
        int pst = f ? pclose(f) : -1;
        unlink(path);
        ok(pst == 0 && entries > 50, "python3 parses the JSON (%u syscall entries)", entries);
        ok(entries > 0 && bad == 0, "every JSON entry is refused the same way by the filter's table");
}

/* ---- sbx-syscall-wrap ---- */

static int wrapped_main(void) {
        /* Run under: sbx-syscall-wrap --enosys openat2 --eperm landlock_create_ruleset --eperm-ns */
        int fails = 0;
        if (syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) != -1 || errno != ENOSYS)
                fails |= 1;
        if (syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */) != -1 || errno != EPERM)
                fails |= 2;
        if (syscall(SYS_unshare, CLONE_NEWUSER) != -1 || errno != EPERM)
                fails |= 4;
        if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
                fails |= 8;
        if (syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0) != -1 || errno != EPERM)
                fails |= 16;
        if (do_pthread() != 0 || do_fork() != 0) /* clone3 → clone fallback works */
                fails |= 32;
        return fails;
}

static void test_wrapper(void) {
        char self[4096], wrap[4200];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
                return (void) skip(2, "no /proc/self/exe");
        self[n] = 0;
        char *slash = strrchr(self, '/');
        snprintf(wrap, sizeof wrap, "%.*s/tools/sbx-syscall-wrap", (int) (slash - self), self);
        if (access(wrap, X_OK) < 0)
                return (void) skip(2, "sbx-syscall-wrap not built next to the test");
        char b[128];
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
                char *argv[] = {wrap, (char *) "--enosys", (char *) "openat2", (char *) "--eperm",
                        (char *) "landlock_create_ruleset", (char *) "--eperm-ns", (char *) "--", self,
                        (char *) "--wrapped", NULL};
                execv(wrap, argv);
                _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        ok(exited_with(st, 0),
                "sbx-syscall-wrap: ENOSYS/EPERM as asked, namespaces refused, clone fallback works (%s)",
                describe(st, b, sizeof b));
        pid = fork();
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 2);
                char *argv[] = {wrap, (char *) "--enosys", (char *) "no_such_syscall", (char *) "--",
                        (char *) "/bin/true", NULL};
                execv(wrap, argv);
                _exit(127);
        }
        waitpid(pid, &st, 0);
        ok(exited_with(st, 125), "sbx-syscall-wrap: an unknown name is an error (%s)",
                describe(st, b, sizeof b));
}

int main(int argc, char **argv) {
        /* Images run under a filter: _exit, so no exit-time machinery (a sanitizer's leak
         * check clones a tracer) runs under deny_spawn. */
        if (argc == 2 && streq(argv[1], "--second-exec"))
                _exit(second_exec_main());
        if (argc == 2 && streq(argv[1], "--wrapped"))
                _exit(wrapped_main());
        /* A pty slave at a known fd for the ioctl probes. */
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        int pty = -1;
        if (m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0)
                pty = open(ptsname(m), O_RDWR | O_NOCTTY);
        if (pty < 0 || dup2(pty, PTY_FD) < 0)
                diag("no pty: the ioctl probes run on a bad fd (the filter refuses before the kernel "
                     "looks)");

        sbx_seccomp_opts ko = {.kill_on_violation = true};
        _cleanup_seccomp_prog_ sbx_seccomp_prog *deny = build(NULL);
        _cleanup_seccomp_prog_ sbx_seccomp_prog *kill = build(&ko);
        if (!ok(deny && kill, "build the default and the kill filters")) {
                return done_testing();
        }
        diag("program: %u instructions", deny->fprog.len);
        sbx_seccomp_opts bad = {.exec = (sbx_seccomp_exec) 7};
        sbx_seccomp_prog *none = NULL;
        ok(sbx_seccomp_build(&bad, &none, NULL) == -EINVAL && !none, "invalid options are refused");

        test_rules(deny, kill);
        test_enosys(deny, kill);
        test_foreign_abis(deny);
        test_spawn(deny);
        test_network();
        test_inet_tcp_only();
        test_notify();
        test_raw_bpf(deny);
        test_oci_json();
        test_wrapper();
        ok(streq_ptr(sbx_seccomp_syscall_name(SYS_mount), "mount") &&
                        streq_ptr(sbx_seccomp_syscall_name(467), "open_tree_attr") &&
                        !sbx_seccomp_syscall_name(5000),
                "syscall names, also above libseccomp's table");
        return done_testing();
}
#endif
