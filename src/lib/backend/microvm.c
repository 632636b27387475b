/* microvm.c — the `microvm` backend, the strict tier: the command runs in a QEMU microVM
 * (`-M microvm`: no PCI, no firmware, virtio-mmio devices only) whose PID 1 is sandboxer-init as
 * the guest agent (src/init/guest.c). The guest kernel is the host's Debian kernel (or the
 * policy's strict.kernel) made uncompressed, with an initramfs of the init and the modules it
 * needs (src/lib/vm/vm-image.c, both cached by content).
 *
 * Inside the guest the command still runs as uid 1000 under the same seccomp programs (built
 * here, sent over), a Landlock ruleset the agent makes with the guest kernel, and a cgroup v2 group
 * of the guest's that holds memory_mb, pids and the fraction of cpus: the VM is one more wall,
 * not a replacement for the others (DESIGN.md, "Strict tier").
 *
 * The root view: each directory the profile reads is a read-only 9p export (virtio-9p, QEMU's
 * `local` driver), the workspace one read-only or writable; files the profile reads (a few KB:
 * /etc/hosts, /etc/resolv.conf) are sent by value, symlinks as symlinks; /etc/passwd and group are
 * generated; scratch is a tmpfs of scratch_mb in the guest. Nothing else of the host is exported.
 *
 * The control channel: one virtio-serial port (a `virtserialport`: a console port is a terminal
 * and would rewrite bytes) on a socket pair handed to QEMU as its chardev — no path, no host
 * module (vhost-vsock is absent on many hosts). A relay process, the supervisor's child, speaks
 * the channel (src/init/vm-protocol.h): it starts QEMU (its child, killed with it by
 * PR_SET_PDEATHSIG; never -daemonize), sends the run, and stands in for the init on the status
 * socket: the init's own messages come over the channel unchanged, so the supervisor, the output
 * cap, the timeout and the report are every backend's.
 *
 * QEMU exits 0 after a guest power-off, a guest panic (panic=-1 with -no-reboot) and a failed
 * boot alike: the command's status comes only over the channel. A guest that ends without it is a
 * setup error before the command started, the run's failure after; a guest that never says it is
 * ready within the boot deadline is killed. */
#include "basic/debug.h"
#include "backend/common.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/microvm-internal.h"
#include "init/vm-stream.h"
#include "backend/oci.h"
#include "backend/plan.h"
#include "basic/cache.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "init/protocol.h"
#include "init/vm-protocol.h"
#include "vm/vm-image.h"

#define QEMU "qemu-system-x86_64"
#define GUEST_SCRATCH "/tmp"
/* What the guest needs beyond memory_mb: its kernel, the agent, page cache for the 9p exports. */
#define GUEST_OVERHEAD_MB 128
#define GUEST_MIN_MB 192
/* virtio-mmio transports of -M microvm: one is the control port */
#define MAX_SHARES 7
#define MAX_FILE_BYTES (4u << 20)

/* A whole regular file of at most max bytes: 0 with *ret (malloc'ed) and *ret_len, or -errno. */
static int read_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : sbx_read_fd_all(fd, max, ret, ret_len);
}

/* ---- availability ------------------------------------------------------------------------- */

/* KVM usable: /dev/kvm opens read-write, speaks API 12, and makes a VM. The reason otherwise. */
static bool kvm_usable(char *why, size_t size) {
        _cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                snprintf(why, size, "/dev/kvm: %s", strerror(errno));
                return false;
        }
        int v = ioctl(fd, KVM_GET_API_VERSION, 0);
        if (v != KVM_API_VERSION) {
                snprintf(why, size, "/dev/kvm: API version %d, not %d", v, KVM_API_VERSION);
                return false;
        }
        int vm = ioctl(fd, KVM_CREATE_VM, 0);
        if (vm < 0) {
                snprintf(why, size, "/dev/kvm: KVM_CREATE_VM: %s (a host without usable virtualisation)",
                        strerror(errno));
                return false;
        }
        close(vm);
        return true;
}

static int find_qemu(char *path, size_t size, char *reason, size_t rsize) {
        int fd = sbx_backend_open_tool(QEMU, path, size);
        if (fd < 0) {
                snprintf(reason, rsize,
                        QEMU " not found on PATH or in /usr/bin (Debian: apt-get install qemu-system-x86)");
                return -ENOENT;
        }
        close(fd);
        return 0;
}

static int microvm_probe(char *reason, size_t size) {
        char qemu[PATH_MAX], vmlinuz[PATH_MAX], release[128];
        int r = find_qemu(qemu, sizeof qemu, reason, size);
        if (r < 0)
                return r;
        sbx_error e = {0};
        if ((r = sbx_vm_kernel_find(NULL, vmlinuz, sizeof vmlinuz, release, sizeof release, &e)) < 0) {
                snprintf(reason, size, "%s", e.message);
                return r;
        }
        return 0;
}

/* ---- the run, as the relay sends it ------------------------------------------------------- */

typedef struct vm_file {
        char *path;
        char *data;
        size_t len;
        uint32_t mode;
} vm_file;

typedef struct microvm_run {
        char qemu[PATH_MAX];
        char **qemu_argv;
        char *config; /* "key=value\0"... */
        size_t config_len;
        vm_file files[64];
        size_t n_files;
        char *seccomp;
        size_t seccomp_len;
        double boot_timeout_s; /* qemu's start to the agent ready */
        double setup_timeout_s; /* the run sent to the command started (normally < 1 s) */
        bool persist; /* a persistent sandbox: the init serves execs (microvm-serve.c) */
        char egress_ports[256]; /* network.egress: "3128[,SERVICE...]" (microvm-net.c), or empty */
        /* the write ends of the OOM pipe ("O": the guest's cgroup OOM-killed) and of the facts
         * pipe (struct vm_facts); one array: the relay's start moves both */
        int pipes_w[2];
        /* As root, qemu runs as this uid and gid (the plan's: run_as), with /dev/kvm's group for
         * KVM: never host root. */
        bool drop;
        uid_t uid;
        gid_t gid, kvm_gid;
        /* a persistent sandbox: the group the relay joins first thing (with qemu after it), what
         * pause freezes — "0" to each fd (sbx_backend_freeze_group) */
        int cg_fds[8];
        int n_cg_fds;
} microvm_run;

struct vm_facts {
        uint64_t qemu_ns, ready_ns; /* host CLOCK_MONOTONIC: qemu started, the agent ready */
        uint64_t guest_start_ns, guest_ready_ns; /* the guest's boot clock at the agent's start, ready */
        uint64_t peak_bytes;
        int ended; /* the agent said VM_END */
};

static int cfg_add(char **buf, size_t *len, const char *fmt, ...) _printf_(3, 4);
static int cfg_add(char **buf, size_t *len, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = NULL;
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        char *nb = realloc(*buf, *len + (size_t) n + 1);
        if (!nb)
                return -ENOMEM;
        memcpy(nb + *len, s, (size_t) n + 1);
        *buf = nb;
        *len += (size_t) n + 1;
        return 0;
}

static void run_done(microvm_run *m) {
        strv_free(m->qemu_argv);
        free(m->config);
        free(m->seccomp);
        for (size_t i = 0; i < m->n_files; i++) {
                free(m->files[i].path);
                free(m->files[i].data);
        }
}

static int add_file(microvm_run *m, const char *path, const char *data, size_t len, uint32_t mode) {
        if (m->n_files >= ELEMENTSOF(m->files))
                return -E2BIG;
        vm_file *f = &m->files[m->n_files];
        f->path = strdup(path);
        f->data = malloc(len ? len : 1);
        if (!f->path || !f->data) {
                free(f->path);
                free(f->data);
                return -ENOMEM;
        }
        memcpy(f->data, data, len);
        f->len = len;
        f->mode = mode;
        m->n_files++;
        return 0;
}

/* ---- the relay ---------------------------------------------------------------------------- */

static void relay_msg(uint32_t type, int32_t a, int32_t b, const char *text) {
        struct sbx_init_msg msg = {
                .magic = SBX_INIT_MAGIC, .type = type, .a = a, .b = b, .monotonic_ns = sbx_now_ns()};
        if (text)
                snprintf(msg.text, sizeof msg.text, "%s", text);
        (void) send(SBX_INIT_STATUS_FD, &msg, sizeof msg, MSG_NOSIGNAL);
}

int sbx_vm_frame_send(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb) {
        struct sbx_vm_frame h = {.magic = SBX_VM_MAGIC, .type = type, .len = (uint32_t) (na + nb)};
        int r = sbx_write_all(fd, &h, sizeof h);
        if (r >= 0 && na)
                r = sbx_write_all(fd, a, na);
        if (r >= 0 && nb)
                r = sbx_write_all(fd, b, nb);
        return r;
}

/* The last of what QEMU and the guest's console said, for a failure's story. */
static char console[2048];
static size_t console_len;

/* Read what is there: > 0 bytes taken, 0 at the end (or an error). */
ssize_t sbx_vm_console_take(int fd) {
        char buf[1024]; /* smaller than console */
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
                return 0;
        if (console_len + (size_t) n >= sizeof console) {
                size_t drop = console_len + (size_t) n - (sizeof console - 1);
                memmove(console, console + drop, console_len - drop);
                console_len -= drop;
        }
        memcpy(console + console_len, buf, (size_t) n);
        console_len += (size_t) n;
        console[console_len] = 0;
        return n;
}

/* What is left in the console pipe, waiting at most ms for the first of it. */
static void console_drain(int fd, int ms) {
        while (fd >= 0 && poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, ms) > 0 &&
                sbx_vm_console_take(fd) > 0)
                ms = 0;
}

/* The last line of the console that says something, for the 64-byte message. */
static const char *console_last_line(char *buf, size_t size) {
        char *end = console + console_len;
        while (end > console && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
                end--;
        char *start = end;
        while (start > console && start[-1] != '\n')
                start--;
        snprintf(buf, size, "%.*s", (int) (end - start), start);
        return buf;
}

static _noreturn_ void relay_fail(int err, const char *what) {
        char line[256], text[64];
        console_last_line(line, sizeof line);
        dprintf(2, "sandboxer: microvm: %s%s%s\n", what, console_len ? "; the guest's console:\n" : "",
                console_len ? console : "");
        snprintf(text, sizeof text, "microvm: %s", what);
        relay_msg(SBX_INIT_MSG_SETUP_FAILED, err, 0, text);
        _exit(125);
}

static pid_t start_qemu(microvm_run *m, int chan, int con) {
        pid_t relay = getpid();
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        if (m->drop) {
                gid_t groups[1] = {m->kvm_gid};
                if (setgroups(m->kvm_gid ? 1 : 0, groups) < 0 || setresgid(m->gid, m->gid, m->gid) < 0 ||
                        setresuid(m->uid, m->uid, m->uid) < 0) {
                        dprintf(2, "drop to uid %u: %m\n", (unsigned) m->uid);
                        _exit(127);
                }
        }
        /* A session of its own: a terminal's ^C or a `timeout` that signals its process group
         * reaches sandboxer (which cancels the run in order), not qemu directly. After the
         * change of credentials, which clears it: it dies with its relay. */
        (void) setsid();
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != relay)
                _exit(127);
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int c = fcntl(chan, F_DUPFD, 10), o = fcntl(con, F_DUPFD, 10);
        if (nul < 0 || c < 0 || o < 0 || dup2(nul, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 ||
                dup2(c, 3) < 0)
                _exit(127);
        (void) syscall(SYS_close_range, 4, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        extern char **environ;
        execve(m->qemu, m->qemu_argv, environ);
        dprintf(2, "exec %s: %m\n", m->qemu);
        _exit(127);
}

/* Read one frame from the channel (blocking: the guest writes whole frames). */
int sbx_vm_frame_read(int fd, struct sbx_vm_frame *h, char **ret) {
        int r = sbx_read_full(fd, h, sizeof *h);
        if (r < 0)
                return r;
        if (h->magic != SBX_VM_MAGIC || h->len > SBX_VM_FRAME_MAX)
                return -EPROTO;
        _cleanup_free_ char *d = malloc(h->len + 1);
        if (!d)
                return -ENOMEM;
        if (h->len && (r = sbx_read_full(fd, d, h->len)) < 0)
                return r;
        d[h->len] = 0;
        *ret = TAKE_PTR(d);
        return 0;
}

/* Whom qemu runs as: as root, uid and gid (with /dev/kvm's group when it is for KVM). */
static void qemu_identity(microvm_run *m, uid_t uid, gid_t gid, bool kvm) {
        struct stat st;
        m->drop = geteuid() == 0;
        m->uid = uid;
        m->gid = gid;
        m->kvm_gid = kvm && stat("/dev/kvm", &st) == 0 ? st.st_gid : 0;
}

/* The trial boot: the guest under KVM must say it is ready within 5 s (it takes well under
 * one where KVM works; on some paravirtualised hosts /dev/kvm makes VMs whose vCPUs never run,
 * or QEMU aborts setting an MSR). 1 it did, 0 it did not (why says how). */
static int kvm_trial(const sbx_policy *pol, char *why, size_t size) {
        sbx_error e = {0};
        sbx_vm_image img;
        char qemu[PATH_MAX];
        int r;
        if (find_qemu(qemu, sizeof qemu, why, size) < 0)
                return 0;
        {
                _cleanup_close_ int init_fd = sbx_backend_open_init(&e);
                if (init_fd < 0 ||
                        (r = sbx_vm_image_get(pol ? pol->strict_kernel : NULL, init_fd, &img, &e)) < 0) {
                        snprintf(why, size, "%.400s", e.message);
                        return 0;
                }
        }
        _cleanup_(run_done) microvm_run m = {.pipes_w = {-1, -1}};
        snprintf(m.qemu, sizeof m.qemu, "%s", qemu);
        qemu_identity(&m, pol ? pol->run_as : 65534, pol ? pol->run_as : 65534, true);
        const char *const qargs[] = {QEMU, "-M", "microvm,x-option-roms=off", "-cpu", "host", "-accel",
                "kvm", "-smp", "1", "-m", "192M", "-nodefaults", "-no-user-config", "-display", "none",
                "-serial", "stdio", "-no-reboot", "-kernel", img.kernel, "-initrd", img.initrd, "-append",
                "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init cryptomgr.notests", "-device",
                "virtio-serial-device", "-chardev", "socket,id=ctl,fd=3", "-device",
                "virtserialport,chardev=ctl,name=" SBX_VM_PORT_NAME};
        for (size_t i = 0; i < ELEMENTSOF(qargs); i++)
                if (strv_extend(&m.qemu_argv, qargs[i]) < 0)
                        return 0;
        int sp[2], conp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return 0;
        if (pipe2(conp, O_CLOEXEC) < 0) {
                close(sp[0]), close(sp[1]);
                return 0;
        }
        uint64_t t0 = sbx_now_ns();
        pid_t pid = start_qemu(&m, sp[1], conp[1]);
        close(sp[1]), close(conp[1]);
        bool ok = false;
        const char *how = "no answer from the guest within 5 s";
        while (pid > 0) {
                uint64_t now = sbx_now_ns();
                if (now - t0 > 5000000000ull)
                        break;
                struct pollfd p[2] = {{.fd = sp[0], .events = POLLIN}, {.fd = conp[0], .events = POLLIN}};
                if (poll(p, 2, (int) ((t0 + 5000000000ull - now) / 1000000) + 1) <= 0)
                        continue;
                if (p[1].revents & POLLIN)
                        sbx_vm_console_take(conp[0]);
                if (p[0].revents & (POLLIN | POLLHUP)) {
                        struct sbx_vm_frame h;
                        _cleanup_free_ char *d = NULL;
                        if (sbx_vm_frame_read(sp[0], &h, &d) < 0) {
                                how = "qemu ended before the guest was ready";
                                break;
                        }
                        if (h.type == SBX_VM_READY) {
                                ok = true;
                                break;
                        }
                }
        }
        if (pid > 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
        }
        console_drain(conp[0], 0);
        close(sp[0]), close(conp[0]);
        if (!ok) {
                char line[256];
                console_last_line(line, sizeof line);
                snprintf(why, size, "a trial boot under KVM failed: %s%s%s", how, line[0] ? "; qemu: " : "",
                        line);
        } else
                snprintf(why, size, "KVM (a trial boot took %" PRIu64 " ms)", (sbx_now_ns() - t0) / 1000000);
        return ok;
}

/* KVM that works, remembered per boot of the host, qemu binary and guest image: the trial's
 * verdict is kept in the cache ("1 WHY" or "0 WHY"). */
static int kvm_works(const sbx_policy *pol, char *why, size_t size) {
        char dir[PATH_MAX], path[PATH_MAX + 128], boot[64] = "", qemu[PATH_MAX];
        struct stat st;
        if (sbx_cache_dir(dir, sizeof dir) < 0 || find_qemu(qemu, sizeof qemu, why, size) < 0 ||
                stat(qemu, &st) < 0)
                return kvm_trial(pol, why, size);
        _cleanup_close_ int bfd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        ssize_t n = bfd >= 0 ? read(bfd, boot, sizeof boot - 1) : -1;
        boot[n > 0 ? n : 0] = 0;
        boot[strcspn(boot, "\n")] = 0;
        snprintf(path, sizeof path, "%s/microvm-kvm-%s-%jx-%jx%s", dir, boot, (uintmax_t) st.st_ino,
                (uintmax_t) st.st_mtim.tv_sec, pol && pol->strict_kernel ? "-k" : "");
        _cleanup_free_ char *c = NULL;
        size_t len;
        if (sbx_cache_read(path, 4096, &c, &len) >= 0 && len >= 2 && (c[0] == '0' || c[0] == '1')) {
                snprintf(why, size, "%.*s", (int) (len - 2), c + 2);
                return c[0] == '1';
        }
        int ok = kvm_trial(pol, why, size);
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "%d %s", ok, why) >= 0)
                (void) sbx_cache_store(path, line, strlen(line), "microvm-kvm-", 8);
        return ok;
}

int sbx_microvm_accel(const sbx_policy *pol, char *why, size_t size) {
        char kw[512];
        if (kvm_usable(kw, sizeof kw) && kvm_works(pol, kw, sizeof kw)) {
                snprintf(why, size, "%s", kw);
                return 1;
        }
        if (pol && pol->strict_allow_emulation) {
                snprintf(why, size,
                        "QEMU's emulation, TCG (no hardware virtualisation: %s; the policy sets "
                        "strict.allow_emulation: true)",
                        kw);
                return 0;
        }
        snprintf(why, size,
                "no hardware virtualisation here (%s); QEMU's emulation (TCG) would run the guest 10-30x "
                "slower and is off unless the policy file sets strict.allow_emulation: true",
                kw);
        return -EOPNOTSUPP;
}

/* The policy decides whether emulation will do where KVM will not, and names the kernel. */
static int microvm_probe_policy(const sbx_policy *pol, char *reason, size_t size) {
        char vmlinuz[PATH_MAX], release[128];
        sbx_error e = {0};
        if (pol->strict_kernel && sbx_vm_kernel_find(pol->strict_kernel, vmlinuz, sizeof vmlinuz, release,
                                          sizeof release, &e) < 0) {
                snprintf(reason, size, "strict.kernel: %s", e.message);
                return -ENOENT;
        }
        int r = sbx_microvm_accel(pol, reason, size);
        return r < 0 ? r : 0;
}

/* A guest that stopped before its command started: nothing of the command ran (stdin is not read
 * until it starts), so one fresh guest may take its place. */
typedef struct guest {
        pid_t qpid;
        int qfd, chan, con;
} guest;

static void guest_kill(guest *g) {
        if (g->qpid > 0) {
                kill(g->qpid, SIGKILL);
                (void) waitpid(g->qpid, NULL, 0);
        }
        g->qpid = 0;
        g->qfd = safe_close(g->qfd);
        g->chan = safe_close(g->chan);
        g->con = safe_close(g->con);
}

/* Start qemu, wait until the agent is ready, send the run. 0, or -errno with *why (and the
 * console kept for the story). */
static int guest_up(microvm_run *m, struct vm_facts *facts, guest *g, const char **why) {
        int sp[2], conp[2];
        *g = (guest){.qfd = -1, .chan = -1, .con = -1};
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return (*why = "socketpair"), -errno;
        if (pipe2(conp, O_CLOEXEC) < 0) {
                int r = -errno;
                close(sp[0]), close(sp[1]);
                return (*why = "pipe"), r;
        }
        console_len = 0;
        console[0] = 0;
        facts->qemu_ns = sbx_now_ns();
        g->qpid = start_qemu(m, sp[1], conp[1]);
        close(sp[1]);
        close(conp[1]);
        g->chan = sp[0], g->con = conp[0];
        if (g->qpid < 0)
                return (*why = "fork qemu"), -errno;
        g->qfd = (int) syscall(SYS_pidfd_open, g->qpid, 0);

        /* Boot: until the agent says it is ready (or the guest ends, or the deadline). */
        uint64_t deadline = facts->qemu_ns + (uint64_t) (m->boot_timeout_s * 1e9);
        for (bool ready = false; !ready;) {
                uint64_t now = sbx_now_ns();
                if (now >= deadline)
                        return (*why = "the guest did not boot in time"), -ETIMEDOUT;
                struct pollfd p[3] = {{.fd = g->chan, .events = POLLIN}, {.fd = g->con, .events = POLLIN},
                        {.fd = g->qfd, .events = POLLIN}};
                if (poll(p, 3, (int) ((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
                        return (*why = "poll"), -errno;
                if (p[1].revents & (POLLIN | POLLHUP))
                        sbx_vm_console_take(g->con);
                if (p[0].revents & (POLLIN | POLLHUP)) {
                        struct sbx_vm_frame h;
                        _cleanup_free_ char *d = NULL;
                        if (sbx_vm_frame_read(g->chan, &h, &d) < 0) {
                                console_drain(g->con, 200);
                                return (*why = "the guest ended before its agent was ready"), -EPROTO;
                        }
                        if (h.type == SBX_VM_READY && h.len >= 16) {
                                memcpy(&facts->guest_start_ns, d, 8);
                                memcpy(&facts->guest_ready_ns, d + 8, 8);
                                ready = true;
                        } else if (h.type == SBX_VM_FAIL)
                                relay_fail(EIO, d); /* the agent's own refusal: no retry */
                }
                if (!ready && (p[2].revents & POLLIN)) {
                        console_drain(g->con, 0);
                        return (*why = "qemu exited before the guest was ready"), -EIO;
                }
        }
        facts->ready_ns = sbx_now_ns();

        /* The run. */
        int r = sbx_vm_frame_send(g->chan, SBX_VM_CONFIG, m->config, m->config_len, NULL, 0);
        for (size_t i = 0; r >= 0 && i < m->n_files; i++) {
                vm_file *f = &m->files[i];
                char head[PATH_MAX + 8];
                size_t hl = strlen(f->path) + 1;
                memcpy(head, f->path, hl);
                memcpy(head + hl, &f->mode, 4);
                r = sbx_vm_frame_send(g->chan, SBX_VM_FILE, head, hl + 4, f->data, f->len);
        }
        if (r >= 0 && m->seccomp_len)
                r = sbx_vm_frame_send(g->chan, SBX_VM_SECCOMP, m->seccomp, m->seccomp_len, NULL, 0);
        if (r >= 0)
                r = sbx_vm_frame_send(g->chan, SBX_VM_GO, NULL, 0, NULL, 0);
        if (r < 0)
                *why = "send the run to the guest";
        return r;
}

static _noreturn_ void relay_main(microvm_run *m) {
        struct vm_facts facts = {0};
        sigset_t sigs;
        sigemptyset(&sigs);
        int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
        for (size_t i = 0; i < ELEMENTSOF(fwd); i++)
                sigaddset(&sigs, fwd[i]);
        sigprocmask(SIG_BLOCK, &sigs, NULL);
        int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

        guest g;
        const char *why = NULL;
        int attempt = 1, r;
        if (m->n_cg_fds > 0 && (r = sbx_cgroup_self_attach(m->cg_fds, (size_t) m->n_cg_fds)) < 0)
                relay_fail(-r, "cannot join the sandbox's cgroup");
        if (m->egress_ports[0] && (r = sbx_vm_net_listen(m->egress_ports, &why)) < 0)
                relay_fail(-r, why);
        /* One more guest for one that stopped before its command started (under emulation, about
         * 1 run in 100 on a loaded 2-vCPU host stops there: said on stderr with its console). */
        while ((r = guest_up(m, &facts, &g, &why)) < 0) {
                guest_kill(&g);
                if (attempt++ >= 2)
                        relay_fail(-r, why);
                dprintf(2, "sandboxer: microvm: %s; starting a fresh guest (the console: %s)\n", why,
                        console);
        }
        int chan = g.chan, con = g.con, qfd = g.qfd;
        pid_t qpid = g.qpid;
        sbx_vm_net_start(chan, NULL); /* from here on every frame goes through the queue */

        bool started = false, ended = false, stdin_open = true;
        /* stdin in flight, at most (acked by the agent as the command's pipe takes it): the
         * channel's write never waits on a guest that is itself waiting to write */
        uint64_t in_credit = SBX_VM_WINDOW_ONESHOT;
        uint64_t setup_deadline = sbx_now_ns() + (uint64_t) (m->setup_timeout_s * 1e9);
        char buf[65536];
        for (;;) {
                struct pollfd p[5 + SBX_VM_MAX_STREAMS] = {
                        {.fd = chan, .events = POLLIN | (sbx_vm_queued() ? POLLOUT : 0)},
                        /* a retry loses none; no more than the window in flight */
                        {.fd = stdin_open && started && in_credit > 0 ? 0 : -1, .events = POLLIN},
                        {.fd = con, .events = POLLIN},
                        {.fd = qfd, .events = POLLIN},
                        {.fd = sfd, .events = POLLIN},
                };
                /* Until the command runs, the set-up has a deadline of its own: a guest that stops
                 * between its agent's "ready" and the command's start is a setup error with its
                 * console, not a run that waits for the budget. */
                int wait_ms = -1;
                if (!started) {
                        uint64_t now = sbx_now_ns();
                        if (now >= setup_deadline) {
                                console_drain(con, 200);
                                guest_kill(&g);
                                if (attempt++ >= 2)
                                        relay_fail(ETIMEDOUT, "the guest did not start the command in time");
                                dprintf(2,
                                        "sandboxer: microvm: the guest did not start the command in time; "
                                        "starting a fresh guest (the console: %s)\n",
                                        console);
                                if ((r = guest_up(m, &facts, &g, &why)) < 0) {
                                        guest_kill(&g);
                                        relay_fail(-r, why);
                                }
                                chan = g.chan, con = g.con, qfd = g.qfd, qpid = g.qpid;
                                sbx_vm_net_start(chan, NULL);
                                setup_deadline = sbx_now_ns() + (uint64_t) (m->setup_timeout_s * 1e9);
                                continue;
                        }
                        wait_ms = (int) ((setup_deadline - now) / 1000000) + 1;
                }
                sbx_vm_streams_poll(p + 5);
                if (poll(p, ELEMENTSOF(p), wait_ms) < 0 && errno != EINTR)
                        break;
                if ((p[0].revents & POLLOUT) && !sbx_vm_queue_flush(chan))
                        break;
                if (p[2].revents & (POLLIN | POLLHUP)) {
                        sbx_vm_console_take(con);
                        if (p[2].revents & POLLHUP && !(p[2].revents & POLLIN))
                                con = -1;
                }
                if (p[4].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == sizeof si) {
                                uint32_t sig = si.ssi_signo;
                                sbx_vm_qframe_raw(chan, SBX_VM_SIGNAL, &sig, 4);
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        ssize_t n = read(0, buf, in_credit < sizeof buf ? (size_t) in_credit : sizeof buf);
                        if (n > 0) {
                                in_credit -= (uint64_t) n;
                                sbx_vm_qframe_raw(chan, SBX_VM_STDIN, buf, (size_t) n);
                        } else if (n == 0 || errno != EINTR) {
                                sbx_vm_qframe_raw(chan, SBX_VM_STDIN, NULL, 0);
                                stdin_open = false;
                        }
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        struct sbx_vm_frame h;
                        _cleanup_free_ char *d = NULL;
                        if (sbx_vm_frame_read(chan, &h, &d) < 0)
                                break;
                        if (sbx_vm_net_frame(h.type, d, h.len))
                                ; /* a connection's (microvm-net.c) */
                        else if (h.type == SBX_VM_STDOUT || h.type == SBX_VM_STDERR) {
                                if (sbx_write_all(h.type == SBX_VM_STDOUT ? 1 : 2, d, h.len) < 0 &&
                                        h.type == SBX_VM_STDOUT)
                                        (void) 0; /* the supervisor stopped reading: its decision */
                        } else if (h.type == SBX_VM_INIT && h.len == sizeof(struct sbx_init_msg)) {
                                struct sbx_init_msg msg;
                                memcpy(&msg, d, sizeof msg);
                                if (msg.magic != SBX_INIT_MAGIC || msg.type == SBX_INIT_MSG_LISTENER ||
                                        msg.type == SBX_INIT_MSG_EGRESS)
                                        continue;
                                msg.monotonic_ns = sbx_now_ns(); /* the guest's clock is not ours */
                                msg.text[sizeof msg.text - 1] = 0;
                                if (msg.type == SBX_INIT_MSG_STARTED || msg.type == SBX_INIT_MSG_SERVING)
                                        started = true;
                                (void) send(SBX_INIT_STATUS_FD, &msg, sizeof msg, MSG_NOSIGNAL);
                                if (msg.type == SBX_INIT_MSG_SERVING && m->persist) {
                                        ended = sbx_microvm_serve(
                                                chan, con, qfd, sfd, m->pipes_w[0], &facts.peak_bytes);
                                        break;
                                }
                        } else if (h.type == SBX_VM_XINACK && h.len == 8) {
                                uint32_t k;
                                memcpy(&k, d + 4, 4);
                                in_credit += k;
                        } else if (h.type == SBX_VM_OOM) {
                                if (m->pipes_w[0] >= 0)
                                        (void) !write(m->pipes_w[0], "O", 1);
                        } else if (h.type == SBX_VM_FAIL) {
                                dprintf(2, "sandboxer: microvm: %s\n", d);
                                if (!started) {
                                        char text[64];
                                        snprintf(text, sizeof text, "microvm: %s", d);
                                        relay_msg(SBX_INIT_MSG_SETUP_FAILED, EIO, 0, text);
                                        started = true; /* said */
                                }
                        } else if (h.type == SBX_VM_END) {
                                if (h.len >= 8)
                                        memcpy(&facts.peak_bytes, d, 8);
                                ended = true;
                                break;
                        }
                }
                sbx_vm_streams_events(p + 5);
                if (p[3].revents & POLLIN)
                        break; /* qemu is gone; what it sent was read above */
        }
        sbx_vm_net_done();
        kill(qpid, SIGKILL);
        (void) waitpid(qpid, NULL, 0);
        facts.ended = ended;
        if (m->pipes_w[1] >= 0)
                (void) !write(m->pipes_w[1], &facts, sizeof facts);
        if (!ended && m->persist && started) {
                console_drain(con, 0);
                if (console_len)
                        dprintf(2, "sandboxer: microvm: the guest ended; its console:\n%s\n", console);
                _exit(1);
        }
        if (!ended) {
                console_drain(con, 0);
                if (!started)
                        relay_fail(EIO, "the guest ended before its command started");
                dprintf(2, "sandboxer: microvm: the guest ended without its command's status%s%s\n",
                        console_len ? "; the guest's console:\n" : "", console);
                relay_msg(SBX_INIT_MSG_SIGNALED, SIGKILL, 0, "microvm: the guest ended");
                _exit(1);
        }
        _exit(0);
}

static _noreturn_ void relay_run(void *ud) {
        relay_main(ud);
}

static int start_relay(void *ud, int in_fd, int out_fd, int err_fd, int status_fd, pid_t *ret_pid,
        int *ret_pidfd, sbx_error *e) {
        microvm_run *m = ud;
        /* in the child: the pipes' numbers there */
        return sbx_oci_fork_client(in_fd, out_fd, err_fd, status_fd, m->pipes_w, 2, relay_run, m,
                "microvm: relay", ret_pid, ret_pidfd, e);
}

/* ---- translating the plan ----------------------------------------------------------------- */

static bool has_sep(const char *s) {
        return strchr(s, '\x1f') != NULL;
}

/* The profile's binds: directories exported (9p), files sent by value, symlinks as symlinks. */
static int plan_root(const sbx_run_plan *rp, sbx_report *rep, microvm_run *m, char ***qargv, sbx_error *e) {
        size_t n_shares = 0;
        int r;
        for (size_t i = 0; i < rp->n_binds; i++) {
                const sbx_plan_bind *b = &rp->binds[i];
                if (sbx_plan_bind_missing(rep, b))
                        continue;
                if (has_sep(b->target) || (b->at.real && has_sep(b->at.real)))
                        return sbx_error_set(e, EINVAL, "microvm", "%s: a path with a 0x1f byte", b->target);
                if (b->at.kind == SBX_BIND_SYMLINK) {
                        _cleanup_free_ char *text = strndup(b->at.link, b->at.link_len);
                        if (!text || (r = cfg_add(&m->config, &m->config_len, "link=%s\x1f%s", b->target,
                                              text)) < 0)
                                return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
                        (void) sbx_report_add_mount(rep, text, b->target, "symlink");
                        continue;
                }
                struct stat st;
                if (stat(b->at.real, &st) < 0)
                        return sbx_error_set(e, errno, "microvm", "%s: %m", b->at.real);
                if (S_ISREG(st.st_mode)) {
                        if (b->rw)
                                return sbx_error_set(e, EOPNOTSUPP, "microvm",
                                        "%s: a writable file cannot be shared with the guest (9p exports "
                                        "directories): list its directory in filesystem.write, or use "
                                        "--backend native",
                                        b->host);
                        if ((uint64_t) st.st_size > MAX_FILE_BYTES)
                                return sbx_error_set(e, EFBIG, "microvm",
                                        "%s: %jd bytes; a file the profile reads is copied into the guest "
                                        "up to "
                                        "4 MiB (9p exports directories): list its directory instead",
                                        b->host, (intmax_t) st.st_size);
                        _cleanup_free_ char *data = NULL;
                        size_t len = 0;
                        if ((r = read_file(b->at.real, MAX_FILE_BYTES, &data, &len)) < 0)
                                return sbx_error_set(e, -r, "microvm", "%s: %s", b->at.real, strerror(-r));
                        if ((r = add_file(m, b->target, data, len, st.st_mode & 0755)) < 0)
                                return sbx_error_set(
                                        e, -r, "microvm", "too many files in the profile's read list");
                        (void) sbx_report_add_mount(rep, b->at.real, b->target, "copy-ro");
                        continue;
                }
                if (!S_ISDIR(st.st_mode))
                        return sbx_error_set(e, EOPNOTSUPP, "microvm",
                                "%s: neither a directory nor a regular file; the guest cannot have it",
                                b->host);
                if (n_shares >= MAX_SHARES)
                        return sbx_error_set(e, E2BIG, "microvm",
                                "the profile shares more than %d directories with the guest (-M microvm has "
                                "8 "
                                "virtio-mmio slots, one is the control port): list fewer, or their parents",
                                MAX_SHARES);
                if (strchr(b->at.real, ','))
                        return sbx_error_set(e, EINVAL, "microvm",
                                "%s: a path with ',' cannot be named to qemu", b->at.real);
                char tag[16], fsdev[PATH_MAX + 128], dev[96];
                snprintf(tag, sizeof tag, "s%zu", n_shares);
                snprintf(fsdev, sizeof fsdev, "local,id=fs%zu,path=%s,security_model=none%s", n_shares,
                        b->at.real, b->rw ? "" : ",readonly=on");
                snprintf(dev, sizeof dev, "virtio-9p-device,fsdev=fs%zu,mount_tag=%s", n_shares, tag);
                if (strv_extend(qargv, "-fsdev") < 0 || strv_extend(qargv, fsdev) < 0 ||
                        strv_extend(qargv, "-device") < 0 || strv_extend(qargv, dev) < 0 ||
                        cfg_add(&m->config, &m->config_len, "share=%s\x1f%s\x1f%s", tag, b->target,
                                b->rw ? "rw" : "ro") < 0)
                        return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
                if (b->rw && cfg_add(&m->config, &m->config_len, "write=%s", b->target) < 0)
                        return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
                (void) sbx_report_add_mount(rep, b->at.real, b->target, b->rw ? "9p-rw" : "9p-ro");
                n_shares++;
        }
        return 0;
}

static int microvm_run_cfg(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_(run_done) microvm_run m = {.pipes_w = {-1, -1}};
        _cleanup_strv_free_ char **env = NULL;
        int r;

        rep->backend = "microvm";
        rep->isolation = "microvm";
        char reason[512];
        if ((r = find_qemu(m.qemu, sizeof m.qemu, reason, sizeof reason)) < 0)
                return sbx_error_set(e, -r, "microvm", "%s", reason);
        char why[512];
        int accel = sbx_microvm_accel(cfg->policy, why, sizeof why);
        if (accel < 0)
                return sbx_error_set(e, -accel, "microvm", "%s", why);
        bool kvm = accel > 0;
        if (io->tty)
                return sbx_error_set(e, EOPNOTSUPP, "tty",
                        "--tty is not supported on the microvm backend yet; use --backend native or bwrap");
        bool egress = sbx_profile_egress_proxied(pr);
        if (egress && sbx_backend_egress_ports(pr, m.egress_ports, sizeof m.egress_ports) < 0)
                return sbx_error_set(e, EINVAL, "network.services", "too many services, or a malformed one");

        sbx_vm_image img;
        uint64_t t_img = sbx_now_ns();
        {
                _cleanup_close_ int init_fd = sbx_backend_open_init(e);
                if (init_fd < 0)
                        return init_fd;
                if ((r = sbx_vm_image_get(cfg->policy->strict_kernel, init_fd, &img, e)) < 0)
                        return r;
        }
        uint64_t tsc = 0;
        sbx_error te = {0};
        bool have_tsc = sbx_vm_tsc_khz(&tsc, &te) >= 0;

        static const sbx_plan_traits traits = {
                .backend = "microvm", .flags = SBX_PLAN_MOUNT_VIEW, .ws_owner_fix = "use --backend native"};
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;

        qemu_identity(&m, rp.uid, rp.gid, kvm);

        /* Limits: the guest's cgroup (v2), its RAM and vCPUs around it, the supervisor's. */
        uint64_t mem_mb = rp.memory_bytes ? (rp.memory_bytes + (1u << 20) - 1) >> 20 : 1024;
        uint64_t ram_mb = mem_mb + GUEST_OVERHEAD_MB;
        if (ram_mb < GUEST_MIN_MB)
                ram_mb = GUEST_MIN_MB;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int vcpus = rp.cpus > 0 ? (int) ceil(rp.cpus) : 1;
        if (ncpu > 0 && vcpus > ncpu)
                vcpus = (int) ncpu;
        if (vcpus < 1)
                vcpus = 1;
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = SBX_MECH_TMPFS;
        rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] = rp.memory_bytes ? SBX_MECH_CGROUP_V2 : SBX_MECH_NONE;
        rep->limit_mechanism[SBX_LIMIT_PIDS] = rp.pids ? SBX_MECH_CGROUP_V2 : SBX_MECH_NONE;
        rep->limit_mechanism[SBX_LIMIT_CPUS] = rp.cpus > 0 ? SBX_MECH_CGROUP_V2 : SBX_MECH_NONE;

        /* The seccomp rule table, plain (a listener cannot cross out of the guest). */
        sbx_seccomp_opts o = {
                .deny_all_sockets_but_unix_pair = !pr->net_allow && !pr->loopback && !egress,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
        };
        {
                _cleanup_close_ int sfd = -EBADF;
                if ((r = sbx_backend_seccomp_raw_fd(&o, &sfd, e)) < 0)
                        return r;
                struct stat st;
                if (fstat(sfd, &st) < 0 || st.st_size <= 0 || st.st_size > 256 * 1024 ||
                        !(m.seccomp = malloc((size_t) st.st_size)) ||
                        pread(sfd, m.seccomp, (size_t) st.st_size, 0) != st.st_size)
                        return sbx_error_set(e, EIO, "seccomp", "cannot read the seccomp program");
                m.seccomp_len = (size_t) st.st_size;
        }

        const char *cwd = sbx_run_plan_cwd(cfg, &rp, GUEST_SCRATCH);
        if ((r = sbx_backend_build_env(cfg, GUEST_SCRATCH, rp.ws_path, &env)) < 0)
                return sbx_error_set(e, -r, "environment", "out of memory");

        char cmdline[512], ram[32], smp[16];
        snprintf(cmdline, sizeof cmdline,
                "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init cryptomgr.notests random.trust_cpu=on "
                "i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd%s%" PRIu64,
                have_tsc ? " tsc_early_khz=" : "", have_tsc ? tsc : (uint64_t) 0);
        if (!have_tsc)
                cmdline[strlen(cmdline) - 1] = 0; /* the "0" */
        snprintf(ram, sizeof ram, "%" PRIu64 "M", ram_mb);
        snprintf(smp, sizeof smp, "%d", vcpus);
        const char *const qargs[] = {QEMU, "-M", "microvm,x-option-roms=off,rtc=on", "-cpu",
                kvm ? "host" : "max", "-accel", kvm ? "kvm" : "tcg", "-smp", smp, "-m", ram, "-nodefaults",
                "-no-user-config", "-display", "none", "-serial", "stdio", "-no-reboot", "-kernel",
                img.kernel, "-initrd", img.initrd, "-append", cmdline, "-device", "virtio-serial-device",
                "-chardev", "socket,id=ctl,fd=3", "-device",
                "virtserialport,chardev=ctl,name=" SBX_VM_PORT_NAME, "-sandbox",
                "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"};
        for (size_t i = 0; i < ELEMENTSOF(qargs); i++)
                if (strv_extend(&m.qemu_argv, qargs[i]) < 0)
                        return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
        if (!m.qemu_argv)
                return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
        if ((r = plan_root(&rp, rep, &m, &m.qemu_argv, e)) < 0)
                return r;

        /* Who the command is, inside. */
        char passwd[512], group[256];
        snprintf(passwd, sizeof passwd,
                "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                SBX_SANDBOX_UID, SBX_SANDBOX_GID, GUEST_SCRATCH);
        snprintf(group, sizeof group, "root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", SBX_SANDBOX_GID);
        if ((r = add_file(&m, "/etc/passwd", passwd, strlen(passwd), 0644)) < 0 ||
                (r = add_file(&m, "/etc/group", group, strlen(group), 0644)) < 0 ||
                (r = add_file(&m, "/etc/hostname", "sandbox\n", 8, 0644)) < 0)
                return sbx_error_set(e, -r, "microvm", "too many files in the profile's read list");

        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        r = cfg_add(&m.config, &m.config_len, "time=%lld", (long long) now.tv_sec);
        r = r < 0 ? r : cfg_add(&m.config, &m.config_len, "cwd=%s", cwd);
        r = r < 0 ? r : cfg_add(&m.config, &m.config_len, "hostname=sandbox");
        r = r < 0 ? r : cfg_add(&m.config, &m.config_len, "uid=%d", SBX_SANDBOX_UID);
        r = r < 0 ? r : cfg_add(&m.config, &m.config_len, "gid=%d", SBX_SANDBOX_GID);
        /* the guest sees the exports owned by host ids: qemu's are the command's there */
        r = r < 0 ? r
                  : cfg_add(&m.config, &m.config_len, "hostuid=%u", (unsigned) (m.drop ? m.uid : geteuid()));
        r = r < 0 ? r
                  : cfg_add(&m.config, &m.config_len, "hostgid=%u", (unsigned) (m.drop ? m.gid : getegid()));
        r = r < 0 ? r
                  : cfg_add(&m.config, &m.config_len, "scratch=" GUEST_SCRATCH "\x1f%" PRIu64,
                            rp.scratch_bytes ? rp.scratch_bytes : (uint64_t) 64 << 20);
        if (r >= 0 && rp.memory_bytes)
                r = cfg_add(&m.config, &m.config_len, "memory=%" PRIu64, rp.memory_bytes);
        if (r >= 0 && rp.pids)
                r = cfg_add(&m.config, &m.config_len, "pids=%" PRIu64, rp.pids);
        if (r >= 0 && rp.cpus > 0)
                r = cfg_add(
                        &m.config, &m.config_len, "cpu=%" PRIu64 " 100000", (uint64_t) (rp.cpus * 100000));
        STRV_FOREACH(w, pr->fs_write)
                if (r >= 0)
                        r = cfg_add(&m.config, &m.config_len, "write=%s", *w);
        STRV_FOREACH(a, env)
                if (r >= 0)
                        r = cfg_add(&m.config, &m.config_len, "env=%s", *a);
        if (egress && r >= 0)
                r = cfg_add(&m.config, &m.config_len, "egress=%s", m.egress_ports);
        m.persist = io->persist != NULL;
        if (m.persist && r >= 0)
                r = cfg_add(&m.config, &m.config_len, "serve=1");
        for (char *const *a = argv; !m.persist && r >= 0 && *a; a++)
                r = cfg_add(&m.config, &m.config_len, "arg=%s", *a);
        if (r < 0)
                return sbx_error_set(e, ENOMEM, "microvm", "out of memory");
        if (m.config_len > SBX_VM_FRAME_MAX)
                return sbx_error_set(e, E2BIG, "microvm",
                        "the command line and environment are too large for the guest (%zu bytes, at most "
                        "%u)",
                        m.config_len, SBX_VM_FRAME_MAX);
        (void) sbx_report_add_mount(rep, "tmpfs", "/", "tmpfs-ro");
        (void) sbx_report_add_mount(rep, "tmpfs", GUEST_SCRATCH, "tmpfs");
        (void) sbx_report_add_mount(rep, "proc", "/proc", "proc");
        (void) sbx_report_add_mount(rep, "tmpfs", "/dev", "dev");

        rep->microvm.accel = kvm ? "kvm" : "tcg";
        rep->microvm.vcpus = vcpus;
        rep->microvm.memory_mb = (int64_t) ram_mb;
        snprintf(rep->microvm.guest_kernel, sizeof rep->microvm.guest_kernel, "%s", img.release);
        (void) sbx_report_set_fence(rep, "microvm",
                "QEMU -M microvm (%s, %d vCPU, %" PRIu64 " MiB), guest kernel %s, initramfs %s%s",
                kvm ? "KVM" : "TCG emulation", vcpus, ram_mb, img.release, img.digest,
                have_tsc ? "" : "; TSC rate unknown (guest clock may drift)");
        (void) sbx_report_set_fence(
                rep, "namespaces", "the guest's own kernel; in it pid, mount (chroot) for the command");
        (void) sbx_report_set_fence(rep, "seccomp",
                "the rule table in the guest, plain (violations refused, not recorded: a listener cannot "
                "leave the guest)");
        (void) sbx_report_set_fence(rep, "landlock",
                "the guest kernel's: read-only root view, writes to scratch and the writable paths");
        (void) sbx_report_set_fence(rep, "capabilities", "none (bounding set dropped, uid 1000)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set");
        (void) sbx_report_set_fence(rep, "user", "uid %d in the guest; qemu runs as host uid %u",
                SBX_SANDBOX_UID, (unsigned) (m.drop ? m.uid : geteuid()));
        rep->observation = "unavailable";
        m.boot_timeout_s = kvm ? 10 : 45;
        m.setup_timeout_s = kvm ? 5 : 20;
        (void) t_img;

        int oomp[2], factp[2];
        if (pipe2(oomp, O_CLOEXEC | O_NONBLOCK) < 0)
                return sbx_error_set(e, errno, "pipes", "cannot create a pipe: %m");
        if (pipe2(factp, O_CLOEXEC | O_NONBLOCK) < 0) {
                close(oomp[0]), close(oomp[1]);
                return sbx_error_set(e, errno, "pipes", "cannot create a pipe: %m");
        }
        m.pipes_w[0] = oomp[1];
        m.pipes_w[1] = factp[1];
        if (getenv("SANDBOXER_DEBUG_ARGV") && streq(getenv("SANDBOXER_DEBUG_ARGV"), "1"))
                sbx_backend_debug_argv(m.qemu, m.qemu_argv);
        sbx_oci_launch l = {.start = start_relay,
                .userdata = &m,
                .oom_report_fd = oomp[0],
                .timeout_from_start = true,
                .egress = m.egress_ports[0] != 0, /* its sockets come from the relay (microvm-net.c) */
                .persist_envp = env,
                .persist_cwd = cwd};
        /* pause: the relay and its qemu in a group of their own, frozen as one (the guest's vCPUs
         * and devices stop, its memory stays); where none can be had, pause says why */
        if (m.persist)
                l.freeze_cg = sbx_backend_freeze_group(rep, m.cg_fds, ELEMENTSOF(m.cg_fds), &m.n_cg_fds);
        r = sbx_oci_run(cfg, io, rep, &l, e);
        for (int i = 0; i < m.n_cg_fds; i++)
                close(m.cg_fds[i]);
        l.freeze_cg = sbx_backend_cgroup_destroy(l.freeze_cg);
        struct vm_facts facts = {0};
        if (read(factp[0], &facts, sizeof facts) == (ssize_t) sizeof facts &&
                facts.ready_ns > facts.qemu_ns) {
                rep->microvm.boot_ms = (int64_t) ((facts.ready_ns - facts.qemu_ns) / 1000000);
                /* the boot's parts (bench/microvm.sh): qemu until the guest kernel started (the
                 * guest's boot clock counts from there), the kernel until the agent ran, the
                 * agent's modules and port until it was ready */
                if (sbx_debug_enabled() && facts.guest_ready_ns >= facts.guest_start_ns)
                        fprintf(stderr,
                                "sandboxer: microvm boot: qemu %.1f ms, kernel %.1f ms, agent %.1f ms "
                                "(ready at "
                                "%.1f ms)\n",
                                ((double) (facts.ready_ns - facts.qemu_ns) - (double) facts.guest_ready_ns) /
                                        1e6,
                                (double) facts.guest_start_ns / 1e6,
                                (double) (facts.guest_ready_ns - facts.guest_start_ns) / 1e6,
                                (double) (facts.ready_ns - facts.qemu_ns) / 1e6);
        }
        close(oomp[0]), close(oomp[1]), close(factp[0]), close(factp[1]);
        m.pipes_w[0] = m.pipes_w[1] = -1;
        return r;
}

/* A persistent sandbox: a guest whose init serves execs (microvm-serve.c), supervised until it
 * is destroyed. */
static int microvm_start(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        return microvm_run_cfg(cfg, NULL, io, rep, e);
}

static const sbx_cap_decl microvm_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true,
                "a read-only tmpfs root in the guest; read paths as read-only 9p exports"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true,
                "only the profile's read paths are exported to the guest (directories by 9p, files copied)"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "writable 9p exports of the directories"},
        [SBX_CAP_FS_EXEC_RULES] = {false,
                "not built yet: the guest's Landlock ruleset has no execute rules; use --backend native"},
        [SBX_CAP_WORKSPACE_RO] = {true, "a read-only 9p export at workspace.mount"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "a writable 9p export at workspace.mount (files made as qemu's host uid)"},
        [SBX_CAP_SCRATCH] = {true, "a tmpfs in the guest, gone with it"},
        [SBX_CAP_HOME] = {false, "not built yet: use --backend native"},
        [SBX_CAP_NET_DENY] = {true, "the guest has no network device at all"},
        [SBX_CAP_NET_LOOPBACK] = {true, "the guest's own loopback"},
        [SBX_CAP_NET_HOST] = {false, "the guest has no network device; use a container backend"},
        [SBX_CAP_NET_EGRESS] = {true,
                "the agent's 127.0.0.1:3128 in the guest, each connection carried over the control channel "
                "to the supervisor's proxy"},
        [SBX_CAP_PID_ISOLATION] = {true, "a separate kernel; and a pid namespace in it"},
        [SBX_CAP_IPC_ISOLATION] = {true, "a separate kernel"},
        [SBX_CAP_HOSTNAME] = {true, "the guest's hostname, sandbox"},
        [SBX_CAP_IDENTITY] = {true, "uid 1000 in the guest, a generated /etc/passwd and group"},
        [SBX_CAP_SECCOMP] = {true, "the rule table, loaded by the init in the guest (plain: no listener)"},
        [SBX_CAP_LANDLOCK] = {true,
                "the guest kernel's Landlock (read-only root, writable scratch and write paths)"},
        [SBX_CAP_CAPS_DROPPED] = {true, "bounding set dropped, uid 1000 without capabilities"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "set by the init"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "the command runs in a guest kernel, never on the host"},
        [SBX_CAP_SPAWN_FENCE] = {false, "exactly one execve needs the seccomp listener, which cannot leave "
                                        "the guest; use --backend native"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor (the qemu process is killed)"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor"},
        [SBX_CAP_LIMIT_MEMORY] = {true,
                "the guest's cgroup v2 memory.max (the guest's RAM is memory_mb + 128 MiB)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "the guest's cgroup v2 pids.max"},
        [SBX_CAP_LIMIT_CPUS] = {true, "vCPUs rounded up, the fraction by the guest's cgroup v2 cpu.max"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "the guest's tmpfs size"},
        [SBX_CAP_OBSERVE_NETWORK] = {false, "no seccomp listener out of the guest: refused, not recorded"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {false, "no seccomp listener out of the guest"},
        [SBX_CAP_OBSERVE_SYSCALL] = {false, "no seccomp listener out of the guest: refused, not recorded"},
        [SBX_CAP_OBSERVE_PROCESS] = {false, "the guest's pids.events is not relayed yet"},
        [SBX_CAP_OBSERVE_MEMORY] = {true, "the guest's memory.events oom_kill, relayed"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_microvm = {
        .id = SBX_BACKEND_MICROVM,
        .level = SBX_LEVEL_MICROVM,
        .implemented = true,
        .caps = microvm_caps,
        .probe = microvm_probe,
        .probe_policy = microvm_probe_policy,
        .run = microvm_run_cfg,
        .start = microvm_start,
};
