/* floor-steps.c — the floor prototype (../shared/bench/floor-proto.c: six namespaces, a read-only
 * root with pivot_root and a fresh /proc, Landlock, a seccomp deny-list, rlimits, cgroup v1
 * memory + pids leaves made and removed per run) with sandboxer's remaining pieces added one flag
 * at a time, so that `bench/floor-steps.sh` can say what each piece costs on top of the floor.
 * A measuring tool, not production code: errors end it with 127.
 *
 *   floor-steps [flags] -- CMD ARGS
 *     (always) the floor: -A -f -l -s -r -c1 of floor-proto
 *     -i   an init: the child (PID 1) forks the command and waits for it, as bwrap's does
 *     -x   the init is a program of its own: the child execs this binary as the init first
 *          (implies -i), as sandboxer's sandboxer-init
 *     -d   /dev: a tmpfs with null, zero, full, random, urandom, tty bound in, and a devpts
 *     -e   /etc: passwd, group, hostname written into the root, hosts, resolv.conf,
 *          ld.so.cache and ssl/certs bound read-only
 *     -t   the scratch: /tmp a tmpfs with size= and nr_inodes= limits
 *     -o   loopback up in the network namespace
 *     -C   a cgroup v1 cpu leaf with a CFS quota, made and removed
 *     -L   the seccomp filter loaded with a listener (SECCOMP_FILTER_FLAG_NEW_LISTENER), the
 *          listener handed to the parent over a socket and polled there until the end
 *     -R   a report: the parent writes ~2 KB of JSON to a file in /run and renames it
 *     -S   the child joins its cgroups itself ("0" to each v1 tasks file, right after its id
 *          maps) instead of the parent moving it by pid through cgroup.procs, which takes the
 *          kernel's cgroup_threadgroup_rwsem for writing and can wait for an RCU grace period
 *          (what sandboxer does; floor-proto moves by pid)
 *     -W   the cgroups are made while the child sets up (after the clone), and the child joins
 *          them itself once its mounts are made: an experiment (implies -S)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RWDIR "/tmp/proto-rw"
#define NEWROOT "/tmp/proto-root"
#define V1MEM "/sys/fs/cgroup/memory"
#define V1PIDS "/sys/fs/cgroup/pids"
#define V1CPU "/sys/fs/cgroup/cpu"

struct ll_attr {
        __u64 fs, net, scoped;
};
#define FS_IOCTL_DEV (1ULL << 15)
#define NET_BIND (1ULL << 0)
#define NET_CONNECT (1ULL << 1)
#define SCOPE_UNIX (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

static int o_late_cg, o_self_join, late_pipe = -1;
static char late_tasks[3][320];
static void self_join(void);
static int o_init, o_exec_init, o_dev, o_etc, o_scratch, o_lo, o_cpu, o_listener, o_report;

static void die(const char *m) {
        perror(m);
        _exit(127);
}

static void wfile(const char *p, const char *s, int flags) {
        int fd = open(p, O_WRONLY | O_CLOEXEC | flags, 0644);
        if (fd < 0 || write(fd, s, strlen(s)) < 0)
                die(p);
        close(fd);
}

static struct sock_fprog bpf;

static void build_seccomp(void) {
        scmp_filter_ctx c = seccomp_init(SCMP_ACT_ALLOW);
        if (!c)
                die("seccomp_init");
        int deny[] = {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
                SCMP_SYS(listen), SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(ptrace), SCMP_SYS(mount),
                SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(keyctl), SCMP_SYS(add_key),
                SCMP_SYS(request_key), SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(unshare),
                SCMP_SYS(setns), SCMP_SYS(kexec_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
                SCMP_SYS(delete_module), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                SCMP_SYS(userfaultfd), SCMP_SYS(open_by_handle_at), SCMP_SYS(swapon), SCMP_SYS(swapoff),
                SCMP_SYS(reboot), SCMP_SYS(acct), SCMP_SYS(quotactl), SCMP_SYS(io_uring_setup),
                SCMP_SYS(clone3), SCMP_SYS(fsopen), SCMP_SYS(fsmount), SCMP_SYS(move_mount),
                SCMP_SYS(open_tree)};
        for (size_t i = 0; i < sizeof deny / sizeof *deny; i++)
                if (seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), deny[i], 0))
                        die("rule");
        if (seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)))
                die("rule clone");
        char tmpl[] = "/tmp/proto-bpf-XXXXXX";
        int fd = mkstemp(tmpl);
        unlink(tmpl);
        if (seccomp_export_bpf(c, fd))
                die("export");
        off_t n = lseek(fd, 0, SEEK_END);
        struct sock_filter *f = malloc((size_t) n);
        if (pread(fd, f, (size_t) n, 0) != n)
                die("pread");
        close(fd);
        bpf.len = (unsigned short) (n / (off_t) sizeof(struct sock_filter));
        bpf.filter = f;
        seccomp_release(c);
}

static void ll_path(int rs, const char *p, __u64 acc) {
        struct landlock_path_beneath_attr pb = {.allowed_access = acc};
        pb.parent_fd = open(p, O_PATH | O_CLOEXEC);
        if (pb.parent_fd < 0)
                return;
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
                die("ll add");
        close(pb.parent_fd);
}

static void do_landlock(void) {
        __u64 all = (1ULL << 16) - 1;
        struct ll_attr a = {.fs = all, .net = NET_BIND | NET_CONNECT, .scoped = SCOPE_UNIX | SCOPE_SIGNAL};
        int rs = (int) syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
        if (rs < 0)
                die("ll create");
        __u64 ro = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
        ll_path(rs, "/usr", ro);
        ll_path(rs, "/etc", ro & ~LANDLOCK_ACCESS_FS_EXECUTE);
        ll_path(rs, "/proc", ro & ~LANDLOCK_ACCESS_FS_EXECUTE);
        ll_path(rs, "/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE);
        ll_path(rs, RWDIR,
                all & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK | FS_IOCTL_DEV));
        if (syscall(SYS_landlock_restrict_self, rs, 0))
                die("ll restrict");
        close(rs);
}

static void do_rlimits(void) {
        struct {
                int r;
                rlim_t v;
        } L[] = {{RLIMIT_NOFILE, 256}, {RLIMIT_AS, 1ULL << 30}, {RLIMIT_CPU, 10}, {RLIMIT_FSIZE, 64 << 20},
                {RLIMIT_CORE, 0}};
        for (size_t i = 0; i < sizeof L / sizeof *L; i++) {
                struct rlimit rl = {L[i].v, L[i].v};
                if (setrlimit(L[i].r, &rl))
                        die("setrlimit");
        }
}

static void bind_file(const char *src, const char *dst) {
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
        if (fd < 0)
                die(dst);
        close(fd);
        if (mount(src, dst, NULL, MS_BIND, NULL) ||
                mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL))
                die(dst);
}

static void do_fs(void) {
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
                die("private");
        if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755"))
                die("tmpfs");
        mkdir(NEWROOT "/usr", 0755);
        mkdir(NEWROOT "/proc", 0755);
        mkdir(NEWROOT "/tmp", 01777);
        mkdir(NEWROOT "/oldroot", 0755);
        if (mount("/usr", NEWROOT "/usr", NULL, MS_BIND | MS_REC, NULL))
                die("bind usr");
        if (mount(NULL, NEWROOT "/usr", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL))
                die("ro usr");
        symlink("usr/bin", NEWROOT "/bin");
        symlink("usr/lib", NEWROOT "/lib");
        symlink("usr/lib64", NEWROOT "/lib64");
        if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
                die("proc");
        if (o_scratch && mount("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                                 "mode=1777,size=512m,nr_inodes=65536"))
                die("scratch");
        if (o_dev) {
                static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
                mkdir(NEWROOT "/dev", 0755);
                if (mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                            "mode=0755,size=64k,nr_inodes=64"))
                        die("dev");
                for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
                        char s[64], d[64];
                        snprintf(s, sizeof s, "/dev/%s", nodes[i]);
                        snprintf(d, sizeof d, NEWROOT "/dev/%s", nodes[i]);
                        int fd = open(d, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
                        if (fd < 0)
                                die(d);
                        close(fd);
                        if (mount(s, d, NULL, MS_BIND, NULL))
                                die(d);
                }
                mkdir(NEWROOT "/dev/pts", 0755);
                if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                            "newinstance,ptmxmode=0666,mode=620"))
                        die("devpts");
                symlink("pts/ptmx", NEWROOT "/dev/ptmx");
        }
        if (o_etc) {
                mkdir(NEWROOT "/etc", 0755);
                mkdir(NEWROOT "/etc/ssl", 0755);
                mkdir(NEWROOT "/etc/ssl/certs", 0755);
                wfile(NEWROOT "/etc/passwd", "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n", O_CREAT);
                wfile(NEWROOT "/etc/group", "sandbox:x:1000:\n", O_CREAT);
                wfile(NEWROOT "/etc/hostname", "sandbox\n", O_CREAT);
                bind_file("/etc/hosts", NEWROOT "/etc/hosts");
                bind_file("/etc/resolv.conf", NEWROOT "/etc/resolv.conf");
                bind_file("/etc/ld.so.cache", NEWROOT "/etc/ld.so.cache");
                if (mount("/etc/ssl/certs", NEWROOT "/etc/ssl/certs", NULL, MS_BIND | MS_REC, NULL) ||
                        mount(NULL, NEWROOT "/etc/ssl/certs", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL))
                        die("certs");
        }
        if (o_late_cg) {
                char b;
                if (read(late_pipe, &b, 1) != 1)
                        die("late sync");
                self_join();
        }
        if (syscall(SYS_pivot_root, NEWROOT, NEWROOT "/oldroot"))
                die("pivot_root");
        if (chdir("/"))
                die("chdir");
        if (umount2("/oldroot", MNT_DETACH))
                die("umount old");
        rmdir("/oldroot");
}

static void loopback_up(void) {
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = {0};
        strcpy(ifr.ifr_name, "lo");
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr))
                die("lo");
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(s, SIOCSIFFLAGS, &ifr))
                die("lo up");
        close(s);
}

static void send_fd(int sock, int fd) {
        char c = 'L';
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } cb = {0};
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b, .msg_controllen = sizeof cb.b};
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
        if (sendmsg(sock, &mh, 0) != 1)
                die("sendmsg");
}

static int recv_fd(int sock) {
        char c;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } cb;
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b, .msg_controllen = sizeof cb.b};
        if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        int fd = -1;
        if (h && h->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(h), sizeof fd);
        return fd;
}

static void apply_fences(int lsock) {
        do_landlock();
        if (lsock >= 0) {
                long lfd = syscall(
                        SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &bpf);
                if (lfd < 0)
                        die("listener");
                send_fd(lsock, (int) lfd);
                close((int) lfd);
        } else if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &bpf))
                die("seccomp");
}

static char cg_mem[300], cg_pids[300], cg_cpu[300];

static void make_groups(void) {
        char p[340];
        if (mkdir(cg_mem, 0755) || mkdir(cg_pids, 0755))
                die("mkdir cg1");
        snprintf(p, sizeof p, "%s/memory.limit_in_bytes", cg_mem);
        wfile(p, "268435456", 0);
        snprintf(p, sizeof p, "%s/pids.max", cg_pids);
        wfile(p, "64", 0);
        if (o_cpu) {
                if (mkdir(cg_cpu, 0755))
                        die("mkdir cpu");
                snprintf(p, sizeof p, "%s/cpu.cfs_period_us", cg_cpu);
                wfile(p, "100000", 0);
                snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", cg_cpu);
                wfile(p, "200000", 0);
        }
}

static void self_join(void) {
        for (int k = 0; k < 3 && late_tasks[k][0]; k++)
                wfile(late_tasks[k], "0", 0);
}

/* PID 1: fork the command, wait for everything, exit with the command's status. */
static _Noreturn void be_init(char **cmd) {
        pid_t c = fork();
        if (c < 0)
                die("fork");
        if (c == 0) {
                execvp(cmd[0], cmd);
                die("execvp");
        }
        int st = 0, code = 127;
        pid_t p;
        while ((p = wait(&st)) > 0 || errno == EINTR)
                if (p == c)
                        code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        _exit(code);
}

int main(int argc, char **argv) {
        int i;
        if (argc > 4 && !strcmp(argv[1], "--as-init")) {
                /* the exec'd init: the program from the memfd at argv[2], the listener socket at
                 * argv[3] (-1: none), then the fences, then the command */
                int bfd = atoi(argv[2]), lsock = atoi(argv[3]);
                struct stat bst;
                if (fstat(bfd, &bst))
                        die("bpf memfd");
                bpf.filter = malloc((size_t) bst.st_size);
                if (pread(bfd, bpf.filter, (size_t) bst.st_size, 0) != bst.st_size)
                        die("bpf read");
                bpf.len = (unsigned short) (bst.st_size / (off_t) sizeof(struct sock_filter));
                close(bfd);
                apply_fences(lsock);
                if (lsock >= 0)
                        close(lsock);
                be_init(argv + 4);
        }
        for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
                const char *a = argv[i];
                if (!strcmp(a, "-i"))
                        o_init = 1;
                else if (!strcmp(a, "-x"))
                        o_init = o_exec_init = 1;
                else if (!strcmp(a, "-d"))
                        o_dev = 1;
                else if (!strcmp(a, "-e"))
                        o_etc = 1;
                else if (!strcmp(a, "-t"))
                        o_scratch = 1;
                else if (!strcmp(a, "-o"))
                        o_lo = 1;
                else if (!strcmp(a, "-C"))
                        o_cpu = 1;
                else if (!strcmp(a, "-L"))
                        o_listener = 1;
                else if (!strcmp(a, "-R"))
                        o_report = 1;
                else if (!strcmp(a, "-W"))
                        o_late_cg = o_self_join = 1;
                else if (!strcmp(a, "-S"))
                        o_self_join = 1;
                else {
                        fprintf(stderr, "floor-steps: unknown flag %s\n", a);
                        return 2;
                }
        }
        if (i + 1 >= argc) {
                fprintf(stderr, "floor-steps: no command\n");
                return 2;
        }
        char **cmd = argv + i + 1;
        build_seccomp();
        int exe = -1, bfd = -1;
        if (o_exec_init) {
                exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
                bfd = memfd_create("bpf", 0);
                if (exe < 0 || bfd < 0 ||
                        write(bfd, bpf.filter, bpf.len * sizeof(struct sock_filter)) !=
                                (ssize_t) (bpf.len * sizeof(struct sock_filter)))
                        die("init image / memfd");
        }

        char p[340], own[256] = "", line[512];
        uid_t uid = geteuid();
        gid_t gid = getegid();
        FILE *f = fopen("/proc/self/cgroup", "r");
        while (f && fgets(line, sizeof line, f)) {
                char *c1 = strchr(line, ':');
                if (c1 && !strncmp(c1 + 1, "memory:", 7)) {
                        snprintf(own, sizeof own, "%s", strchr(c1 + 1, ':') + 1);
                        own[strcspn(own, "\n")] = 0;
                }
        }
        if (f)
                fclose(f);
        snprintf(cg_mem, sizeof cg_mem, V1MEM "%s/proto-%d", strcmp(own, "/") ? own : "", getpid());
        snprintf(cg_pids, sizeof cg_pids, V1PIDS "/proto-%d", getpid());
        snprintf(cg_cpu, sizeof cg_cpu, V1CPU "/proto-%d", getpid());
        int latep[2] = {-1, -1};
        if (o_self_join) {
                snprintf(late_tasks[0], sizeof late_tasks[0], "%s/tasks", cg_mem);
                snprintf(late_tasks[1], sizeof late_tasks[1], "%s/tasks", cg_pids);
                if (o_cpu)
                        snprintf(late_tasks[2], sizeof late_tasks[2], "%s/tasks", cg_cpu);
        }
        if (o_late_cg) {
                if (pipe2(latep, O_CLOEXEC))
                        die("pipe");
                late_pipe = latep[0];
        } else
                make_groups();
        int syncp[2], sp[2] = {-1, -1};
        if (pipe2(syncp, O_CLOEXEC))
                die("pipe");
        if (o_listener && socketpair(AF_UNIX, SOCK_SEQPACKET | (o_exec_init ? 0 : SOCK_CLOEXEC), 0, sp))
                die("socketpair");

        struct clone_args ca = {.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                         CLONE_NEWIPC | CLONE_NEWUTS,
                .exit_signal = SIGCHLD};
        pid_t pid = (pid_t) syscall(SYS_clone3, &ca, sizeof ca);
        if (pid < 0)
                die("clone3");
        if (pid == 0) {
                char b;
                close(syncp[1]);
                if (read(syncp[0], &b, 1) != 1)
                        die("sync");
                char m[64];
                wfile("/proc/self/setgroups", "deny", 0);
                snprintf(m, sizeof m, "0 %d 1", uid);
                wfile("/proc/self/uid_map", m, 0);
                snprintf(m, sizeof m, "0 %d 1", gid);
                wfile("/proc/self/gid_map", m, 0);
                if (o_self_join && !o_late_cg)
                        self_join();
                if (o_lo)
                        loopback_up();
                do_fs();
                do_rlimits();
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
                        die("nnp");
                if (o_exec_init) {
                        char *av[64] = {"init", "--as-init"}, b1[16], b2[16];
                        snprintf(b1, sizeof b1, "%d", bfd);
                        snprintf(b2, sizeof b2, "%d", o_listener ? sp[1] : -1);
                        av[2] = b1;
                        av[3] = b2;
                        int k = 4;
                        for (char **c = cmd; *c && k < 63; c++)
                                av[k++] = *c;
                        av[k] = NULL;
                        extern char **environ;
                        syscall(SYS_execveat, exe, "", av, environ, AT_EMPTY_PATH);
                        die("exec init");
                }
                apply_fences(o_listener ? sp[1] : -1);
                if (o_init)
                        be_init(cmd);
                execvp(cmd[0], cmd);
                die("execvp");
        }
        /* the child writes its own maps (as floor-proto does); the parent places it first, or
         * releases it to join by itself */
        if (o_late_cg) {
                close(syncp[0]);
                if (write(syncp[1], "x", 1) != 1)
                        die("sync w");
                make_groups();
                if (write(latep[1], "x", 1) != 1)
                        die("late w");
                close(latep[1]);
                goto placed;
        }
        if (!o_self_join) {
                snprintf(line, sizeof line, "%d", pid);
                snprintf(p, sizeof p, "%s/cgroup.procs", cg_mem);
                wfile(p, line, 0);
                snprintf(p, sizeof p, "%s/cgroup.procs", cg_pids);
                wfile(p, line, 0);
                if (o_cpu) {
                        snprintf(p, sizeof p, "%s/cgroup.procs", cg_cpu);
                        wfile(p, line, 0);
                }
        }
        close(syncp[0]);
        if (write(syncp[1], "x", 1) != 1)
                die("sync w");
placed:
        close(syncp[1]);
        int lfd = -1;
        if (o_listener) {
                close(sp[1]);
                lfd = recv_fd(sp[0]);
                if (lfd < 0)
                        die("recv listener");
        }
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        if (lfd >= 0) {
                struct pollfd pf = {.fd = lfd, .events = POLLIN};
                (void) poll(&pf, 1, 0);
                close(lfd);
        }
        if (rmdir(cg_mem) || rmdir(cg_pids) || (o_cpu && rmdir(cg_cpu)))
                perror("rmdir");
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (o_report) {
                char json[2048], tmp[64];
                int n = snprintf(json, sizeof json, "{\"exit_code\": %d, \"pid\": %d, \"cgroup\": \"%s\"",
                        code, pid, cg_mem);
                while (n < 2000)
                        n += snprintf(
                                json + n, sizeof json - (size_t) n, ", \"k%d\": \"%s\"", n, "value value");
                snprintf(tmp, sizeof tmp, "/run/floor-steps.%d.json", getpid());
                int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || write(fd, json, strlen(json)) < 0)
                        die("report");
                close(fd);
                if (rename(tmp, "/run/floor-steps.json"))
                        die("rename");
        }
        return code;
}
