/* guest.c — sandboxer-init as PID 1 of a microvm guest: the guest agent. The kernel starts /init
 * from the initramfs sandboxer built (src/lib/vm/vm-image.c) with no arguments; the agent mounts
 * what a kernel leaves to its init, loads the modules the image lists (virtio-mmio, the console
 * port, 9p) with finit_module, opens the control port (vm-protocol.h) and says it is ready. The
 * host's relay then sends the run: the root view (9p exports of the profile's directories, small
 * files by value, symlinks), the limits, the seccomp programs and the command. The agent builds a
 * read-only root on a tmpfs, holds the command in a cgroup v2 group of its own (memory, pids,
 * cpu.max), and starts sandboxer-init itself — the very program every other backend runs — in a
 * fresh pid and mount namespace, chrooted into that root, as uid 1000 with no capabilities, under
 * a Landlock ruleset made here (the host's cannot cross into the guest) and the seccomp programs
 * from the host. The init reports on its fd 3 as always; the agent relays those messages, the
 * output and the end over the port, and powers the guest off.
 *
 * The VM is one more wall, not a replacement for the others (DESIGN.md, "Strict tier"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "vm-protocol.h"
#include "guest.h"
#include "guest-modules.h"

int sbx_guest_main(void);

#define ROOT "/newroot"
/* The init in the root view, read-only: where the command's own exec of it comes from (an exec
 * of the initramfs's /init by descriptor, from the command's mount namespace, is refused). */
#define INIT_INSIDE "/.sandboxer-init"

int guest_port = -1;

static uint64_t boot_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

int write_all(int fd, const void *p, size_t n) {
        const char *c = p;
        while (n > 0) {
                ssize_t k = write(fd, c, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -errno;
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int read_full(int fd, void *p, size_t n) {
        char *c = p;
        while (n > 0) {
                ssize_t k = read(fd, c, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EPIPE;
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

void send_frame(uint32_t type, const void *data, size_t len) {
        struct sbx_vm_frame h = {.magic = SBX_VM_MAGIC, .type = type, .len = (uint32_t) len};
        if (guest_port < 0 || write_all(guest_port, &h, sizeof h) < 0)
                return;
        if (len > 0)
                (void) write_all(guest_port, data, len);
}

static void send_u64(uint32_t type, uint64_t v) {
        send_frame(type, &v, sizeof v);
}

/* A set-up step failed: said over the port (and on the console, for a port that is not up). */
static void fail(const char *step, int err) {
        char text[256];
        int n = snprintf(text, sizeof text, "guest agent: %s: %s", step, strerror(err));
        dprintf(2, "sandboxer: %s\n", text);
        send_frame(SBX_VM_FAIL, text, (size_t) n);
}

/* Progress on the console: what the host's relay shows of a guest that stopped on its way (the
 * console is read only for a failure's story). */
void mark(const char *what) {
        dprintf(2, "sandboxer-agent: %s (%.3f s)\n", what, (double) boot_ns() / 1e9);
}

_Noreturn void power_off(void) {
        sync();
        (void) reboot(RB_POWER_OFF);
        for (;;)
                pause();
}

static int mkdir_p(const char *path, mode_t mode) {
        char buf[4096];
        size_t n = strlen(path);
        if (n >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text));
        close(fd);
        return r;
}

bool guest_reap(int sfd, pid_t child, int *status) {
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) > 0)
                ;
        bool reaped = false;
        int s;
        pid_t w;
        while ((w = waitpid(-1, &s, WNOHANG)) > 0)
                if (w == child)
                        reaped = true, *status = s;
        return reaped;
}

/* ---- boot --------------------------------------------------------------------------------- */

/* The control port: the virtio-serial port named SBX_VM_PORT_NAME (its node appears once the
 * console driver has probed the device). */
static int open_port(void) {
        for (int tries = 0; tries < 500; tries++) {
                DIR *d = opendir("/sys/class/virtio-ports");
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        if (de->d_name[0] == '.')
                                continue;
                        char path[300], name[128] = "";
                        snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", de->d_name);
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        ssize_t n = read(fd, name, sizeof name - 1);
                        close(fd);
                        if (n > 0 && name[n - 1] == '\n')
                                n--;
                        name[n > 0 ? n : 0] = 0;
                        if (strcmp(name, SBX_VM_PORT_NAME) != 0)
                                continue;
                        snprintf(path, sizeof path, "/dev/%s", de->d_name);
                        fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
                        if (fd >= 0) {
                                closedir(d);
                                return fd;
                        }
                }
                if (d)
                        closedir(d);
                usleep(10000);
        }
        return -ENODEV;
}

/* ---- the run's configuration -------------------------------------------------------------- */

#define MAX_ITEMS 1024
static char *cfg_buf;
static size_t cfg_len;
static char *args[MAX_ITEMS + 8], *envs[MAX_ITEMS + 1];
static size_t n_args, n_envs;
static const char *cwd = "/", *hostname = "sandbox";
static uint64_t mem_max, pids_max, cpu_quota, cpu_period;
static unsigned uid = 1000, gid = 1000;
/* The host uid and gid the command's writes land as (qemu's, which own a writable export): the
 * command's uid 1000 is mapped to them in a user namespace of its own, so the guest kernel's
 * permission checks on the exports see the owner (0: no mapping). */
static unsigned host_uid, host_gid;
static char *writes[64];
static size_t n_writes;
static const char *egress_ports; /* network.egress: the listeners' ports (guest-net.c) */
static bool serve; /* a persistent sandbox: the init serves execs (guest-serve.c) */
static int seccomp_fd = -1;

static const char *field(char **p, char *end) {
        char *s = *p;
        if (s >= end)
                return NULL;
        char *sep = memchr(s, '\x1f', (size_t) (end - s));
        if (sep) {
                *sep = 0;
                *p = sep + 1;
        } else
                *p = end;
        return s;
}

static int mount_share(char *v) {
        char *end = v + strlen(v), *p = v;
        const char *tag = field(&p, end), *target = field(&p, end), *mode = field(&p, end);
        if (!tag || !target || !mode)
                return -EINVAL;
        char at[4096];
        snprintf(at, sizeof at, ROOT "%s", target);
        int r = mkdir_p(at, 0755);
        if (r < 0)
                return r;
        bool ro = strcmp(mode, "ro") == 0;
        /* read-only exports may be cached freely; a writable one is uncached (the host sees
         * every write at once, and so does a later run) */
        char opts[128];
        snprintf(opts, sizeof opts, "trans=virtio,version=9p2000.L,msize=262144,%s",
                ro ? "cache=loose" : "cache=none");
        unsigned long fl = MS_NOSUID | MS_NODEV | (ro ? MS_RDONLY : 0);
        return mount(tag, at, "9p", fl, opts) < 0 ? -errno : 0;
}

static int apply_entry(char *kv, const char **step) {
        char *eq = strchr(kv, '=');
        if (!eq)
                return (*step = "config"), -EINVAL;
        *eq = 0;
        char *k = kv, *v = eq + 1;
        char at[4096];
        int r = 0;
        if (strcmp(k, "arg") == 0 && n_args < MAX_ITEMS)
                args[n_args++] = v;
        else if (strcmp(k, "env") == 0 && n_envs < MAX_ITEMS)
                envs[n_envs++] = v;
        else if (strcmp(k, "cwd") == 0)
                cwd = v;
        else if (strcmp(k, "hostname") == 0)
                hostname = v;
        else if (strcmp(k, "egress") == 0)
                egress_ports = v;
        else if (strcmp(k, "serve") == 0)
                serve = strcmp(v, "1") == 0;
        else if (strcmp(k, "memory") == 0)
                mem_max = strtoull(v, NULL, 10);
        else if (strcmp(k, "pids") == 0)
                pids_max = strtoull(v, NULL, 10);
        else if (strcmp(k, "cpu") == 0)
                (void) sscanf(v, "%lu %lu", (unsigned long *) &cpu_quota, (unsigned long *) &cpu_period);
        else if (strcmp(k, "uid") == 0)
                uid = (unsigned) strtoul(v, NULL, 10);
        else if (strcmp(k, "gid") == 0)
                gid = (unsigned) strtoul(v, NULL, 10);
        else if (strcmp(k, "hostuid") == 0)
                host_uid = (unsigned) strtoul(v, NULL, 10);
        else if (strcmp(k, "hostgid") == 0)
                host_gid = (unsigned) strtoul(v, NULL, 10);
        else if (strcmp(k, "write") == 0 && n_writes < 64)
                writes[n_writes++] = v;
        else if (strcmp(k, "time") == 0) {
                struct timespec ts = {0};
                ts.tv_sec = (time_t) strtoll(v, NULL, 10);
                (void) clock_settime(CLOCK_REALTIME, &ts);
        } else if (strcmp(k, "dir") == 0) {
                snprintf(at, sizeof at, ROOT "%s", v);
                r = mkdir_p(at, 0755);
                *step = "make a directory of the root view";
        } else if (strcmp(k, "link") == 0) {
                char *p = v, *end = v + strlen(v);
                const char *target = field(&p, end), *text = field(&p, end);
                if (!target || !text)
                        return (*step = "config: link"), -EINVAL;
                snprintf(at, sizeof at, ROOT "%s", target);
                char *slash = strrchr(at, '/');
                if (slash && slash != at) {
                        *slash = 0;
                        (void) mkdir_p(at, 0755);
                        *slash = '/';
                }
                r = symlink(text, at) < 0 && errno != EEXIST ? -errno : 0;
                *step = "make a symlink of the root view";
        } else if (strcmp(k, "share") == 0) {
                r = mount_share(v);
                *step = "mount a 9p export of the host";
        } else if (strcmp(k, "scratch") == 0) {
                char *p = v, *end = v + strlen(v);
                const char *path = field(&p, end), *bytes = field(&p, end);
                if (!path || !bytes)
                        return (*step = "config: scratch"), -EINVAL;
                snprintf(at, sizeof at, ROOT "%s", path);
                char opts[96];
                /* owned by the kernel's id of the command's uid (its namespace's map: hostuid) */
                bool mapped = host_uid != 0 && host_gid != 0;
                snprintf(opts, sizeof opts, "size=%s,mode=0700,uid=%u,gid=%u", bytes,
                        mapped ? host_uid : uid, mapped ? host_gid : gid);
                *step = "mount the scratch tmpfs";
                if ((r = mkdir_p(at, 0755)) >= 0 &&
                        mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                        r = -errno;
                if (r >= 0 && n_writes < 64)
                        writes[n_writes++] = (char *) path;
        }
        return r;
}

/* A file of the root view, by value: "path\0", u32 mode, bytes. */
static int put_file(const char *data, size_t len) {
        const char *nul = memchr(data, 0, len);
        if (!nul || (size_t) (nul - data) + 1 + 4 > len)
                return -EINVAL;
        uint32_t mode;
        memcpy(&mode, nul + 1, 4);
        const char *body = nul + 5;
        size_t n = len - (size_t) (body - data);
        char at[4096];
        snprintf(at, sizeof at, ROOT "%s", data);
        char *slash = strrchr(at, '/');
        if (slash && slash != at) {
                *slash = 0;
                (void) mkdir_p(at, 0755);
                *slash = '/';
        }
        int fd = open(at, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, body, n);
        (void) fchmod(fd, mode & 0755); /* never set-id */
        close(fd);
        return r;
}

static int make_dev(void) {
        static const struct {
                const char *name;
                unsigned maj, min;
        } nodes[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9},
                {"tty", 5, 0}};
        if (mkdir_p(ROOT "/dev", 0755) < 0 ||
                mount("tmpfs", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
                return -errno;
        for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
                char p[64];
                snprintf(p, sizeof p, ROOT "/dev/%s", nodes[i].name);
                if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) < 0 || chmod(p, 0666) < 0)
                        return -errno;
        }
        (void) symlink("/proc/self/fd", ROOT "/dev/fd");
        (void) symlink("/proc/self/fd/0", ROOT "/dev/stdin");
        (void) symlink("/proc/self/fd/1", ROOT "/dev/stdout");
        (void) symlink("/proc/self/fd/2", ROOT "/dev/stderr");
        (void) symlink("pts/ptmx", ROOT "/dev/ptmx");
        if (mkdir(ROOT "/dev/pts", 0755) < 0 || mkdir(ROOT "/dev/shm", 01777) < 0 ||
                mount("devpts", ROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                        "newinstance,ptmxmode=0666,mode=0620") < 0)
                return -errno;
        return chmod(ROOT "/dev/shm", 01777) < 0 ? -errno : 0;
}

static int copy_init(void) {
        int in = open("/init", O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return -errno;
        int out = open(ROOT INIT_INSIDE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        if (out < 0) {
                close(in);
                return -errno;
        }
        char buf[65536];
        ssize_t n;
        int r = 0;
        while (r >= 0 && (n = read(in, buf, sizeof buf)) != 0)
                r = n < 0 ? (errno == EINTR ? 0 : -errno) : write_all(out, buf, (size_t) n);
        close(in);
        close(out);
        return r;
}

static int make_cgroup(void) {
        char v[64];
        int r;
        if (mkdir(CG, 0755) < 0 && errno != EEXIST)
                return -errno;
        if ((r = write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory +pids +cpu")) < 0)
                return r;
        if (mem_max) {
                snprintf(v, sizeof v, "%llu", (unsigned long long) mem_max);
                if ((r = write_file(CG "/memory.max", v)) < 0)
                        return r;
                (void) write_file(CG "/memory.swap.max", "0");
        }
        if (pids_max) {
                snprintf(v, sizeof v, "%llu", (unsigned long long) pids_max);
                if ((r = write_file(CG "/pids.max", v)) < 0)
                        return r;
        }
        if (cpu_quota && cpu_period) {
                snprintf(v, sizeof v, "%llu %llu", (unsigned long long) cpu_quota,
                        (unsigned long long) cpu_period);
                if ((r = write_file(CG "/cpu.max", v)) < 0)
                        return r;
        }
        return 0;
}

uint64_t cg_value(const char *file, const char *key) {
        char buf[1024];
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        if (!key)
                return strtoull(buf, NULL, 10);
        size_t kl = strlen(key);
        for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
                        return strtoull(p + kl + 1, NULL, 10);
        return 0;
}

/* ---- the command -------------------------------------------------------------------------- */

/* Landlock (the guest kernel's ABI): read and execute everywhere in the root view, write only
 * to scratch, /dev's nodes, and the writable paths. -1 where the kernel has no Landlock. */
static int make_landlock(void) {
        int abi = (int) syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi < 1)
                return -1;
        uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
        if (abi >= 2)
                all |= LANDLOCK_ACCESS_FS_REFER;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
        if (abi >= 3)
                all |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
        struct landlock_ruleset_attr ra = {.handled_access_fs = all};
        int fd = (int) syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
        if (fd < 0)
                return -1;
        uint64_t ro =
                LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
        struct {
                const char *path;
                uint64_t access;
        } rules[80];
        size_t n = 0;
        rules[n++] = (typeof(rules[0])){ROOT, ro};
        rules[n++] = (typeof(rules[0])){ROOT "/dev", ro | LANDLOCK_ACCESS_FS_WRITE_FILE};
        char paths[64][4096];
        for (size_t i = 0; i < n_writes && n < 80; i++) {
                snprintf(paths[i], sizeof paths[i], ROOT "%s", writes[i]);
                rules[n++] = (typeof(rules[0])){paths[i], all};
        }
        for (size_t i = 0; i < n; i++) {
                struct landlock_path_beneath_attr pb = {.allowed_access = rules[i].access & all};
                pb.parent_fd = open(rules[i].path, O_PATH | O_CLOEXEC);
                if (pb.parent_fd < 0)
                        continue;
                long k = syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
                int err = errno;
                close(pb.parent_fd);
                if (k < 0) {
                        close(fd);
                        errno = err;
                        return -1;
                }
        }
        return fd;
}

/* The child: pid 1 of a fresh pid namespace, in a mount namespace of its own; it becomes
 * sandboxer-init in the root view as uid 1000. fds: in, out, err, status. */
static _Noreturn void command_child(int fds[4], int go) {
        const char *step = "wait for the user namespace's map";
        int stfd = fds[3];
        char g;
        if (read(go, &g, 1) != 1) /* the agent maps our ids and puts us in the cgroup first */
                goto fail;
        close(go);
        step = "make mounts private";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                goto fail;
        step = "mount proc";
        if (mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                goto fail;
        int ll = make_landlock();
        /* above the numbers they go to */
        int hi[6] = {-1, -1, -1, -1, -1, -1};
        int src[6] = {fds[0], fds[1], fds[2], fds[3], seccomp_fd, ll};
        step = "arrange descriptors";
        for (int i = 0; i < 6; i++)
                if (src[i] >= 0 && (hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 32)) < 0)
                        goto fail;
        for (int i = 0; i < 6; i++)
                if (hi[i] >= 0 && dup2(hi[i], i) < 0)
                        goto fail;
        stfd = 3;
        (void) syscall(SYS_close_range, 6, ~0U, 0);
        step = "chroot into the root view";
        if (chroot(ROOT) < 0 || chdir("/") < 0)
                goto fail;
        step = "drop privileges";
        for (int c = 0; c <= 63; c++)
                (void) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                goto fail;
        static const char *argv[MAX_ITEMS + 16];
        size_t k = 0;
        argv[k++] = "sandboxer-init";
        argv[k++] = "--cwd";
        argv[k++] = cwd;
        if (seccomp_fd >= 0) {
                argv[k++] = "--seccomp-fd";
                argv[k++] = "4";
        }
        if (ll >= 0) {
                argv[k++] = "--landlock-fd";
                argv[k++] = "5";
        }
        if (serve)
                argv[k++] = "--serve";
        else {
                argv[k++] = "--";
                for (size_t i = 0; i < n_args; i++)
                        argv[k++] = args[i];
        }
        argv[k] = NULL;
        envs[n_envs] = NULL;
        step = "exec sandboxer-init";
        execve(INIT_INSIDE, (char **) argv, envs);
fail:;
        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = SBX_INIT_MSG_SETUP_FAILED, .a = errno};
        snprintf(m.text, sizeof m.text, "guest: %s", step);
        (void) send(stfd, &m, sizeof m, MSG_NOSIGNAL);
        _exit(125);
}

/* Stdin from the host, held here until the command's pipe takes it. */
static char *in_buf;
static size_t in_len;
static bool in_eof;

/* Stdin bytes the command's pipe took (or that were dropped): the host's window opens again
 * (SBX_VM_XINACK, exec id 0: the one-shot command). */
static void stdin_taken(size_t n) {
        uint32_t a[2] = {0, (uint32_t) n};
        if (n)
                send_frame(SBX_VM_XINACK, a, sizeof a);
}

static void relay(int out, int err, int st, int in, pid_t child) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        bool child_done = false, ended = false;
        int status = 0;
        char buf[65536];
        (void) fcntl(in, F_SETFL, O_NONBLOCK);
        for (;;) {
                if (child_done && out < 0 && err < 0 && st < 0)
                        break;
                struct pollfd p[6 + GUEST_NET_FDS] = {
                        {.fd = guest_port, .events = POLLIN}, /* always: the host's window bounds stdin */
                        {.fd = out, .events = POLLIN},
                        {.fd = err, .events = POLLIN},
                        {.fd = st, .events = POLLIN},
                        {.fd = in, .events = in_len > 0 ? POLLOUT : 0},
                        {.fd = sfd, .events = POLLIN},
                };
                guest_net_poll(p + 6);
                if (poll(p, 6 + GUEST_NET_FDS, -1) < 0 && errno != EINTR)
                        break;
                if (p[0].revents & POLLIN) {
                        struct sbx_vm_frame h;
                        if (read_full(guest_port, &h, sizeof h) < 0 || h.magic != SBX_VM_MAGIC ||
                                h.len > SBX_VM_FRAME_MAX)
                                power_off(); /* the host is gone or speaks nonsense */
                        char *d = h.len ? malloc(h.len) : NULL;
                        if (h.len && (!d || read_full(guest_port, d, h.len) < 0))
                                power_off();
                        if (guest_net_frame(h.type, d, h.len))
                                ;
                        else if (h.type == SBX_VM_STDIN && h.len == 0)
                                in_eof = true;
                        else if (h.type == SBX_VM_STDIN && in >= 0) {
                                char *nb = realloc(in_buf, in_len + h.len);
                                if (nb) {
                                        memcpy(nb + in_len, d, h.len);
                                        in_buf = nb;
                                        in_len += h.len;
                                } else
                                        stdin_taken(h.len); /* lost: counted as taken */
                        } else if (h.type == SBX_VM_STDIN)
                                stdin_taken(h.len); /* its stdin is closed: dropped */
                        else if (h.type == SBX_VM_SIGNAL && h.len == 4) {
                                uint32_t sig;
                                memcpy(&sig, d, 4);
                                (void) kill(child, (int) sig);
                        }
                        free(d);
                }
                if (in >= 0 && in_len > 0 && (p[4].revents & (POLLOUT | POLLERR | POLLHUP))) {
                        ssize_t k = write(in, in_buf, in_len);
                        if (k > 0) {
                                memmove(in_buf, in_buf + k, in_len - (size_t) k);
                                in_len -= (size_t) k;
                                stdin_taken((size_t) k);
                        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                                close(in);
                                in = -1;
                                stdin_taken(in_len);
                                in_len = 0;
                        }
                }
                if (in >= 0 && in_eof && in_len == 0) {
                        close(in);
                        in = -1;
                }
                for (int i = 1; i <= 2; i++) {
                        int *fd = i == 1 ? &out : &err;
                        if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t k = read(*fd, buf, sizeof buf);
                        if (k > 0)
                                send_frame(i == 1 ? SBX_VM_STDOUT : SBX_VM_STDERR, buf, (size_t) k);
                        else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
                                close(*fd);
                                *fd = -1;
                        }
                }
                if (st >= 0 && (p[3].revents & (POLLIN | POLLHUP | POLLERR))) {
                        struct sbx_init_msg m;
                        union {
                                struct cmsghdr h;
                                char b[CMSG_SPACE(sizeof(int) * 4)];
                        } cb;
                        struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
                        struct msghdr mh = {.msg_iov = &iov,
                                .msg_iovlen = 1,
                                .msg_control = cb.b,
                                .msg_controllen = sizeof cb.b};
                        ssize_t k = recvmsg(st, &mh, MSG_CMSG_CLOEXEC);
                        /* a descriptor (a listener) cannot cross into the host: closed */
                        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); k > 0 && c; c = CMSG_NXTHDR(&mh, c))
                                if (c->cmsg_type == SCM_RIGHTS)
                                        for (size_t j = 0; j < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                                j++) {
                                                int fd;
                                                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
                                                close(fd);
                                        }
                        if (k == (ssize_t) sizeof m && m.magic == SBX_INIT_MAGIC) {
                                if (m.type == SBX_INIT_MSG_EXITED || m.type == SBX_INIT_MSG_SIGNALED ||
                                        m.type == SBX_INIT_MSG_EXEC_FAILED ||
                                        m.type == SBX_INIT_MSG_SETUP_FAILED)
                                        ended = true;
                                send_frame(SBX_VM_INIT, &m, sizeof m);
                        } else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                                close(st);
                                st = -1;
                        }
                }
                guest_net_events(p + 6);
                if ((p[5].revents & POLLIN) && guest_reap(sfd, child, &status))
                        child_done = true;
        }
        guest_end(status, ended);
}

void guest_end(int status, bool said) {
        /* The init died without saying how its command ended (killed itself: the OOM killer's
         * choice, say), or a serving init ended: its own end stands for the command's. */
        if (!said) {
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC};
                m.type = WIFSIGNALED(status) ? SBX_INIT_MSG_SIGNALED : SBX_INIT_MSG_EXITED;
                m.a = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
                snprintf(m.text, sizeof m.text, "the guest's init ended");
                send_frame(SBX_VM_INIT, &m, sizeof m);
        }
        uint64_t ooms = cg_value(CG "/memory.events", "oom_kill");
        if (ooms)
                send_u64(SBX_VM_OOM, ooms);
        send_u64(SBX_VM_END, cg_value(CG "/memory.peak", NULL));
}

static int take_config(void) {
        const char *step = "read the configuration";
        int r;
        bool root_made = false;
        for (;;) {
                struct sbx_vm_frame h;
                if ((r = read_full(guest_port, &h, sizeof h)) < 0)
                        goto fail;
                r = -EPROTO;
                if (h.magic != SBX_VM_MAGIC || h.len > SBX_VM_FRAME_MAX)
                        goto fail;
                char *d = malloc(h.len + 1);
                if (!d) {
                        r = -ENOMEM;
                        goto fail;
                }
                if (h.len && (r = read_full(guest_port, d, h.len)) < 0)
                        goto fail;
                d[h.len] = 0;
                if (!root_made && h.type != SBX_VM_GO) {
                        step = "mount the root tmpfs";
                        if (mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0) {
                                r = -errno;
                                goto fail;
                        }
                        root_made = true;
                }
                if (h.type == SBX_VM_CONFIG) {
                        cfg_buf = d, cfg_len = h.len; /* kept: args and env point into it */
                        for (char *p = cfg_buf, *next; p < cfg_buf + cfg_len; p = next) {
                                next = p + strlen(p) + 1; /* before the entry is cut at its '=' */
                                if (*p && (r = apply_entry(p, &step)) < 0)
                                        goto fail;
                        }
                } else if (h.type == SBX_VM_FILE) {
                        step = "write a file of the root view";
                        r = put_file(d, h.len);
                        free(d);
                        if (r < 0)
                                goto fail;
                } else if (h.type == SBX_VM_SECCOMP) {
                        step = "take the seccomp programs";
                        seccomp_fd = memfd_create("sandboxer-seccomp", MFD_CLOEXEC);
                        if (seccomp_fd < 0 || write_all(seccomp_fd, d, h.len) < 0 ||
                                lseek(seccomp_fd, 0, SEEK_SET) < 0) {
                                r = -errno;
                                goto fail;
                        }
                        free(d);
                } else if (h.type == SBX_VM_GO) {
                        free(d);
                        break;
                } else
                        free(d);
        }
        mark("configuration taken, exports mounted");
        step = "make /dev";
        if ((r = make_dev()) < 0)
                goto fail;
        step = "put the init into the root view";
        if ((r = copy_init()) < 0)
                goto fail;
        step = "make /proc";
        if ((r = mkdir_p(ROOT "/proc", 0555)) < 0)
                goto fail;
        step = "set the hostname";
        if (sethostname(hostname, strlen(hostname)) < 0) {
                r = -errno;
                goto fail;
        }
        step = "make the sandbox's cgroup";
        if ((r = make_cgroup()) < 0)
                goto fail;
        step = "make the root view read-only";
        if (mount(NULL, ROOT, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
                r = -errno;
                goto fail;
        }
        return 0;
fail:
        fail(step, -r);
        return r;
}

int sbx_guest_main(void) {
        uint64_t t_start = boot_ns();
        (void) setsid();
        (void) mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
        int con = open("/dev/console", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (con >= 0) {
                for (int i = 0; i < 3; i++)
                        (void) dup2(con, i);
                if (con > 2)
                        close(con);
        }
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
                mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
                mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                        "nsdelegate") < 0) {
                fail("mount /proc, /sys, /sys/fs/cgroup", errno);
                power_off();
        }
        (void) mkdir(ROOT, 0755);
        /* Allocations are refused only by the sandbox's memory.max (an OOM kill with its evidence,
         * as on the host), not by the guest's small RAM at mmap time (overcommit's heuristic
         * refuses one larger than RAM + swap). */
        (void) write_file("/proc/sys/vm/overcommit_memory", "1");
        int r = sbx_guest_load_modules("sandboxer: guest agent");
        guest_port = open_port();
        if (guest_port < 0) {
                fail("open the control port (" SBX_VM_PORT_NAME ")", r < 0 ? -r : ENODEV);
                power_off();
        }
        uint64_t ready[2] = {t_start, boot_ns()};
        send_frame(SBX_VM_READY, ready, sizeof ready);

        if (take_config() < 0) {
                send_u64(SBX_VM_END, 0);
                power_off();
        }
        const char *nstep = NULL;
        if ((r = guest_net_up(egress_ports, &nstep)) < 0 && egress_ports) {
                fail(nstep, -r);
                send_u64(SBX_VM_END, 0);
                power_off();
        }
        int in[2], out[2], err[2], st[2];
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
                socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) < 0) {
                fail("pipes", errno);
                send_u64(SBX_VM_END, 0);
                power_off();
        }
        int gop[2];
        bool userns = host_uid != 0 && host_gid != 0;
        if (pipe2(gop, O_CLOEXEC) < 0) {
                fail("pipes", errno);
                send_u64(SBX_VM_END, 0);
                power_off();
        }
        pid_t child = (pid_t) syscall(
                SYS_clone, CLONE_NEWPID | CLONE_NEWNS | (userns ? CLONE_NEWUSER : 0) | SIGCHLD, 0, 0, 0, 0);
        if (child < 0) {
                fail("clone the command's namespaces", errno);
                send_u64(SBX_VM_END, 0);
                power_off();
        }
        if (child == 0) {
                int fds[4] = {in[0], out[1], err[1], st[1]};
                close(gop[1]);
                command_child(fds, gop[0]);
        }
        close(gop[0]);
        close(in[0]), close(out[1]), close(err[1]), close(st[1]);
        char path[64], map[64], pid[16];
        const char *step = "join the sandbox's cgroup";
        snprintf(pid, sizeof pid, "%d", (int) child);
        int r2 = write_file(CG "/cgroup.procs", pid);
        if (r2 >= 0 && userns) {
                step = "map the command's uid";
                snprintf(path, sizeof path, "/proc/%d/uid_map", (int) child);
                snprintf(map, sizeof map, "%u %u 1\n", uid, host_uid);
                r2 = write_file(path, map);
                if (r2 >= 0) {
                        step = "map the command's gid";
                        snprintf(path, sizeof path, "/proc/%d/gid_map", (int) child);
                        snprintf(map, sizeof map, "%u %u 1\n", gid, host_gid);
                        r2 = write_file(path, map);
                }
        }
        if (r2 < 0) {
                kill(child, SIGKILL);
                fail(step, -r2);
        } else
                (void) !write(gop[1], "g", 1);
        mark("the command's process released");
        close(gop[1]);
        if (serve)
                guest_serve(out[0], err[0], st[0], in[1], child);
        else
                relay(out[0], err[0], st[0], in[1], child);
        power_off();
}
