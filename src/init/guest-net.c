/* guest-net.c — the guest's network: its loopback, up (the guest has no other interface), and
 * network.egress's way out. The agent listens on 127.0.0.1 at the proxy's port (3128) and each
 * host service's, in the guest's one network namespace (the command shares it), and each
 * connection it accepts becomes a stream on the control port (VM_NOPEN, then vm-stream.h): the
 * host's relay connects it to the supervisor's proxy, which judges and records it as on every
 * backend. Nothing inside can reach past the guest except through these. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest.h"
#include "vm-protocol.h"
#include "vm-stream.h"

_Static_assert(GUEST_NET_FDS == GUEST_NET_LISTENERS + SBX_VM_MAX_STREAMS, "guest.h's GUEST_NET_FDS");

static int listeners[GUEST_NET_LISTENERS] = {[0 ... GUEST_NET_LISTENERS - 1] = -1};
static uint32_t which_of[GUEST_NET_LISTENERS];
static uint32_t next_id = 1;
static uint32_t (*owner_fn)(int fd);

static void net_send(uint32_t type, uint32_t id, const void *p, size_t n) {
        char buf[4 + 16384 + 8];
        if (n > sizeof buf - 4)
                n = sizeof buf - 4;
        memcpy(buf, &id, 4);
        if (n)
                memcpy(buf + 4, p, n);
        send_frame(type, buf, 4 + n);
}

static int lo_up(void) {
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -errno;
        struct ifreq ifr = {0};
        strcpy(ifr.ifr_name, "lo");
        int r = 0;
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
                r = -errno;
        else if (!(ifr.ifr_flags & IFF_UP)) {
                ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
                if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
                        r = -errno;
        }
        close(s);
        return r;
}

int guest_net_up(const char *ports, const char **step) {
        sbx_vm_streams_init(net_send);
        int r = lo_up();
        if (r < 0)
                return (*step = "bring the loopback up"), r;
        size_t k = 0;
        for (const char *p = ports; p && *p;) {
                char *end;
                unsigned long port = strtoul(p, &end, 10);
                if (end == p || port == 0 || port > 65535 || (*end && *end != ',') ||
                        k >= GUEST_NET_LISTENERS)
                        return (*step = "config: egress"), -EINVAL;
                p = *end ? end + 1 : end;
                int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0)
                        return (*step = "network.egress: socket"), -errno;
                int one = 1;
                (void) setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
                struct sockaddr_in a = {.sin_family = AF_INET,
                        .sin_port = htons((uint16_t) port),
                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                if (bind(s, (struct sockaddr *) &a, sizeof a) < 0 || listen(s, 64) < 0) {
                        r = -errno;
                        close(s);
                        return (*step = "network.egress: listen on 127.0.0.1 in the guest"), r;
                }
                /* the order of the host's ports (sbx_backend_egress_ports): the proxy, then the
                 * services, as SBX_INIT_MSG_EGRESS numbers them */
                which_of[k] = k == 0 ? 0 : (uint32_t) k + 1;
                listeners[k++] = s;
        }
        return 0;
}

/* The inode of the socket connected from 127.0.0.1:port to 127.0.0.1:server (the guest's TCP
 * table; the command shares the agent's network namespace). 0 when not found. */
static unsigned long client_inode(unsigned port, unsigned server) {
        FILE *f = fopen("/proc/net/tcp", "re");
        if (!f)
                return 0;
        char want[32], srv[32], line[512], local[64], rem[64];
        snprintf(want, sizeof want, "0100007F:%04X", port);
        snprintf(srv, sizeof srv, "0100007F:%04X", server);
        unsigned long ino = 0, found = 0;
        while (!found && fgets(line, sizeof line, f))
                if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, rem, &ino) == 3 &&
                        strcmp(local, want) == 0 && strcmp(rem, srv) == 0)
                        found = ino;
        fclose(f);
        return found;
}

static bool holds(pid_t pid, const char *link) {
        char path[64], buf[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        DIR *d = opendir(path);
        bool yes = false;
        for (struct dirent *de; d && !yes && (de = readdir(d));) {
                ssize_t n =
                        de->d_name[0] == '.' ? -1 : readlinkat(dirfd(d), de->d_name, buf, sizeof buf - 1);
                if (n > 0) {
                        buf[n] = 0;
                        yes = strcmp(buf, link) == 0;
                }
        }
        if (d)
                closedir(d);
        return yes;
}

#define WALK_MAX 1024

/* Whether pid or one of its descendants (a walk by the children lists of their threads) holds
 * the socket link names. */
static bool subtree_holds(pid_t root, const char *link) {
        static pid_t q[WALK_MAX];
        size_t head = 0, tail = 0;
        q[tail++] = root;
        while (head < tail) {
                pid_t pid = q[head++];
                if (holds(pid, link))
                        return true;
                char path[64];
                snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
                DIR *d = opendir(path);
                for (struct dirent *de; d && (de = readdir(d));) {
                        if (de->d_name[0] == '.')
                                continue;
                        char cp[320];
                        snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", (int) pid, de->d_name);
                        FILE *f = fopen(cp, "re");
                        int c;
                        while (f && tail < WALK_MAX && fscanf(f, "%d", &c) == 1)
                                q[tail++] = c;
                        if (f)
                                fclose(f);
                }
                if (d)
                        closedir(d);
        }
        return false;
}

size_t guest_net_holder(int fd, const pid_t *roots, size_t n) {
        struct sockaddr_in peer, me;
        socklen_t pl = sizeof peer, ml = sizeof me;
        if (n == 0 || getpeername(fd, (struct sockaddr *) &peer, &pl) < 0 || peer.sin_family != AF_INET ||
                getsockname(fd, (struct sockaddr *) &me, &ml) < 0)
                return 0;
        unsigned long ino = client_inode(ntohs(peer.sin_port), ntohs(me.sin_port));
        if (!ino)
                return 0;
        char link[48];
        snprintf(link, sizeof link, "socket:[%lu]", ino);
        for (size_t i = 0; i < n; i++)
                if (subtree_holds(roots[i], link))
                        return i + 1;
        return 0;
}

void guest_net_owner(uint32_t (*owner)(int fd)) {
        owner_fn = owner;
}

void guest_net_poll(struct pollfd p[GUEST_NET_FDS]) {
        /* a full table: new connections wait in the listeners' backlog */
        bool room = sbx_vm_streams_open() < SBX_VM_MAX_STREAMS;
        for (size_t i = 0; i < GUEST_NET_LISTENERS; i++)
                p[i] = (struct pollfd){.fd = room ? listeners[i] : -1, .events = POLLIN};
        sbx_vm_streams_poll(p + GUEST_NET_LISTENERS);
}

void guest_net_events(const struct pollfd p[GUEST_NET_FDS]) {
        for (size_t i = 0; i < GUEST_NET_LISTENERS; i++) {
                if (listeners[i] < 0 || !(p[i].revents & POLLIN))
                        continue;
                if (sbx_vm_streams_open() >= SBX_VM_MAX_STREAMS)
                        continue;
                int fd = accept4(listeners[i], NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        continue;
                uint32_t id = next_id++;
                uint32_t open[2] = {which_of[i], owner_fn ? owner_fn(fd) : 0};
                if (sbx_vm_stream_add(id, fd) < 0)
                        continue;
                net_send(SBX_VM_NOPEN, id, open, sizeof open);
        }
        sbx_vm_streams_events(p + GUEST_NET_LISTENERS);
}

bool guest_net_frame(uint32_t type, const char *d, size_t len) {
        return sbx_vm_stream_frame(type, d, len);
}
