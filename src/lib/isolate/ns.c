/* ns.c — uid/gid maps and network namespace set-up. */
#include "isolate/ns.h"

#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int write_proc(pid_t pid, const char *file, const char *text, sbx_error *e) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, file);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(e, errno, "userns: open map", "cannot open %s: %m", path);
        ssize_t n = write(fd, text, strlen(text));
        int r = n < 0 ? -errno : 0;
        close(fd);
        if (r < 0)
                return sbx_error_set(e, r, "userns: write map", "cannot write '%.*s' to %s: %s",
                        (int) strcspn(text, "\n"), text, path, strerror(-r));
        return 0;
}

int sbx_ns_write_maps(pid_t pid, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid, gid_t outside_gid,
        bool allow_setgroups, sbx_error *e) {
        char buf[64];
        int r;

        snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned) inside_uid, (unsigned) outside_uid);
        r = write_proc(pid, "uid_map", buf, e);
        if (r < 0)
                return r;
        r = write_proc(pid, "setgroups", allow_setgroups ? "allow" : "deny", e);
        if (r < 0 && r != -ENOENT)
                return r;
        snprintf(buf, sizeof buf, "%u %u 1\n", (unsigned) inside_gid, (unsigned) outside_gid);
        return write_proc(pid, "gid_map", buf, e);
}

int sbx_ns_loopback_up(void) {
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct ifreq ifr = {0};
        memcpy(ifr.ifr_name, "lo", 3);
        int r = 0;
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                r = -errno;
        else {
                ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
                if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                        r = -errno;
        }
        close(fd);
        return r;
}
