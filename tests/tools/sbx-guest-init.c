/* sbx-guest-init.c — PID 1 of the test guest of tests/integration/test-cgroup2-guest.sh: loads
 * the initramfs's modules (virtio-mmio, 9p), makes the host's / (a read-only 9p export, tag
 * "hostroot") the guest's root with tmpfs on /tmp, /run, /var/tmp, /dev/shm and only cgroup2 on
 * /sys/fs/cgroup (nsdelegate), runs the command given after "--" on the kernel command line, and
 * powers the guest off when it ends (its exit status on the console as "sbx-guest: exit N").
 * Before the command, arguments "--9p=TAG:PATH" each mount one more read-only 9p export (tag
 * TAG) at PATH, after the tmpfs above: a checkout or build under /tmp or /run, which the guest's
 * own tmpfs would hide, is seen at its host path (its mount point made in that tmpfs).
 * Static and libc-only: it runs before there is any root to load a library from. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest-modules.h" /* src/init: the guest agent's own */

#define ROOT "/newroot"

static void say(const char *what, int err) {
        dprintf(2, "sbx-guest: %s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
}

static _Noreturn void power_off(void) {
        sync();
        (void) reboot(RB_POWER_OFF);
        for (;;)
                pause();
}

/* mkdir -p ROOT PATH: the mount point of a share, in the guest's tmpfs. */
static int make_dirs(const char *path) {
        char p[4096];
        int n = snprintf(p, sizeof p, "%s%s", ROOT, path);
        if (n < 0 || (size_t) n >= sizeof p)
                return -ENAMETOOLONG;
        for (char *s = p + strlen(ROOT) + 1;; s++) {
                if (*s != '/' && *s != 0)
                        continue;
                char c = *s;
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (!c)
                        return 0;
        }
}

/* "--9p=TAG:PATH": the host's export TAG, read-only at PATH (absolute, no ".." in it). */
static int mount_share(const char *arg) {
        char tag[64];
        const char *path = strchr(arg, ':');
        if (!path || path == arg || (size_t) (path - arg) >= sizeof tag || path[1] != '/' ||
                strstr(path, "/..") || strstr(path, "/./"))
                return -EINVAL;
        memcpy(tag, arg, (size_t) (path - arg));
        tag[path - arg] = 0;
        path++;
        int r = make_dirs(path);
        if (r < 0)
                return r;
        char at[4096];
        snprintf(at, sizeof at, "%s%s", ROOT, path);
        if (mount(tag, at, "9p", MS_RDONLY | MS_NODEV,
                    "trans=virtio,version=9p2000.L,msize=262144,cache=loose") < 0)
                return -errno;
        return 0;
}

/* Each a mount in the new root; a failure ends the guest (the host sees no "sbx-guest: exit"). */
static int setup_root(char **shares, int n_shares) {
        static const struct {
                const char *src, *at, *type;
                unsigned long flags;
                const char *opts;
        } m[] = {
                {"hostroot", ROOT, "9p", MS_RDONLY | MS_NODEV,
                        "trans=virtio,version=9p2000.L,msize=262144,cache=loose"},
                {"proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
                {"sysfs", ROOT "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
                {"cgroup2", ROOT "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                        "nsdelegate"},
                {"devtmpfs", ROOT "/dev", "devtmpfs", MS_NOSUID, "mode=0755"},
                {"devpts", ROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666"},
                {"tmpfs", ROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
                {"tmpfs", ROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
                {"tmpfs", ROOT "/var/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
                {"tmpfs", ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
                {"tracefs", ROOT "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
        };
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
                if (strncmp(m[i].at, ROOT "/dev/", strlen(ROOT "/dev/")) == 0)
                        (void) mkdir(m[i].at, 0755); /* on the devtmpfs just mounted */
                if (mount(m[i].src, m[i].at, m[i].type, m[i].flags, m[i].opts) < 0) {
                        int err = errno;
                        char what[128];
                        snprintf(what, sizeof what, "mount %s on %s", m[i].type, m[i].at);
                        /* tracefs is for one observation only; its absence is the test's to say */
                        say(what, err);
                        if (strcmp(m[i].type, "tracefs") != 0)
                                return -err;
                }
        }
        for (int i = 0; i < n_shares; i++) { /* over the tmpfs just mounted */
                int r = mount_share(shares[i] + strlen("--9p="));
                if (r < 0) {
                        char what[128];
                        snprintf(what, sizeof what, "mount the share %.100s", shares[i] + strlen("--9p="));
                        say(what, -r);
                        return r;
                }
        }
        if (chdir(ROOT) < 0 || mount(ROOT, "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
                chdir("/") < 0)
                return -errno;
        return 0;
}

int main(int argc, char **argv) {
        (void) mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
                mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
                say("mount /proc, /sys", errno);
                power_off();
        }
        int r = sbx_guest_load_modules("sbx-guest");
        if (r < 0)
                say("load the modules", -r);
        int n_shares = 0; /* the "--9p=TAG:PATH" before the command */
        while (1 + n_shares < argc && strncmp(argv[1 + n_shares], "--9p=", strlen("--9p=")) == 0)
                n_shares++;
        r = setup_root(argv + 1, n_shares);
        if (r < 0) {
                say("make the host's / the root", -r);
                power_off();
        }
        argv += n_shares;
        argc -= n_shares;
        if (argc < 2) {
                say("no command after -- on the kernel command line", 0);
                power_off();
        }
        say("root ready", 0);
        pid_t pid = fork();
        if (pid == 0) {
                static char path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            home[] = "HOME=/root", lang[] = "LANG=C.UTF-8", term[] = "TERM=dumb",
                            tmp[] = "TMPDIR=/tmp";
                char *const envp[] = {path, home, lang, term, tmp, NULL};
                setsid();
                execve(argv[1], argv + 1, envp);
                say("execute the command", errno);
                _exit(127);
        }
        int status = 0;
        for (;;) { /* the orphans are ours to reap too */
                pid_t w = wait(&status);
                if (w == pid || (w < 0 && errno != EINTR))
                        break;
        }
        dprintf(2, "sbx-guest: exit %d\n",
                pid < 0             ? 126
                : WIFEXITED(status) ? WEXITSTATUS(status)
                                    : 128 + WTERMSIG(status));
        power_off();
}
