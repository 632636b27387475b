/* microvm-net.c — the relay's side of the channel's write queue, and of network.egress in a
 * microvm sandbox.
 *
 * The queue: once the guest runs, every frame for it goes through one queue written without
 * blocking (the rest on POLLOUT), so the relay never waits on a guest that is itself waiting to
 * write; what the queue can hold is bounded by the windows (stdin, each exec's, each stream's).
 *
 * network.egress: the guest has no network card. The agent listens on 127.0.0.1:3128 (and each
 * service's port) inside and sends each connection as a stream (VM_NOPEN, src/init/vm-stream.h);
 * here each becomes a connection to the supervisor's proxy for that port, on a unix socket the
 * relay made and handed to it as a sandbox's init hands its listeners (SBX_INIT_MSG_EGRESS). The
 * socket's name is gone once it listens: the relay reaches it through /proc/self/fd (an O_PATH
 * descriptor of it), and nothing else on the host can. In a persistent sandbox each connection
 * starts with a header naming the exec it came from (egress-run.h: SBX_EGRESS_OWNER_MAGIC, then
 * the pid of the exec's stand-in, which is the exec's pid for the supervisor), so it lands in
 * that exec's report as on every other backend. */
#include "backend/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend/microvm-internal.h"
#include "basic/io.h"
#include "basic/macro.h"
#include "init/protocol.h"
#include "init/vm-stream.h"
#include "supervise/egress-run.h"

static sbx_buf queue;
static int queue_chan = -1;

bool sbx_vm_queue_flush(int chan) {
        while (queue.n > 0) {
                ssize_t k = send(chan, queue.p, queue.n, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k > 0)
                        sbx_buf_drop(&queue, (size_t) k);
                else if (k < 0 && errno == EINTR)
                        continue;
                else
                        return k < 0 && errno == EAGAIN;
        }
        return true;
}

size_t sbx_vm_queued(void) {
        return queue.n;
}

void sbx_vm_queue_done(void) {
        sbx_buf_done(&queue);
}

static void qput(int chan, uint32_t type, const void *a, size_t na, const void *b, size_t nb) {
        struct sbx_vm_frame h = {.magic = SBX_VM_MAGIC, .type = type, .len = (uint32_t) (na + nb)};
        if (sbx_buf_put(&queue, &h, sizeof h) < 0 || (na && sbx_buf_put(&queue, a, na) < 0) ||
                (nb && sbx_buf_put(&queue, b, nb) < 0))
                return; /* out of memory: the frame is lost (its window's deadline ends it) */
        (void) sbx_vm_queue_flush(chan);
}

void sbx_vm_qframe(int chan, uint32_t type, uint32_t id, const void *p, size_t n) {
        qput(chan, type, &id, 4, p, n);
}

void sbx_vm_qframe_raw(int chan, uint32_t type, const void *p, size_t n) {
        qput(chan, type, p, n, NULL, 0);
}

/* ---- network.egress ------------------------------------------------------------------------ */

#define MAX_PORTS 17 /* the proxy and SBX_REPORT_MAX_SERVICES services */

static struct {
        uint32_t which;
        int path_fd; /* O_PATH of the listening socket's inode; its name is gone */
} ports[MAX_PORTS];
static size_t n_ports;
static sbx_vm_owner_fn owner_pid;

static void stream_send(uint32_t type, uint32_t id, const void *p, size_t n) {
        sbx_vm_qframe(queue_chan, type, id, p, n);
}

/* One listening socket for the supervisor, reachable only through path_fd. */
static int make_listener(int *ret_path_fd) {
        char dir[] = "/tmp/sandboxer-vmnet-XXXXXX";
        if (!mkdtemp(dir))
                return -errno;
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
        int r = 0, s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                r = -errno;
        else if (bind(s, (struct sockaddr *) &a, sizeof a) < 0 || listen(s, 64) < 0 ||
                 (*ret_path_fd = open(a.sun_path, O_PATH | O_CLOEXEC)) < 0)
                r = -errno;
        (void) unlink(a.sun_path);
        (void) rmdir(dir);
        if (r < 0) {
                if (s >= 0)
                        close(s);
                return r;
        }
        return s;
}

int sbx_vm_net_listen(const char *list, const char **what) {
        size_t k = 0;
        for (const char *p = list; p && *p; k++) {
                const char *comma = strchr(p, ',');
                p = comma ? comma + 1 : p + strlen(p);
                if (k >= MAX_PORTS)
                        return (*what = "network.egress: more services than a sandbox has"), -E2BIG;
                int path_fd = -1, s = make_listener(&path_fd);
                if (s < 0)
                        return (*what = "network.egress: a unix socket for the supervisor's proxy"), s;
                uint32_t which = k == 0 ? 0 : (uint32_t) k + 1; /* the proxy, then 2 + i service i */
                struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC,
                        .type = SBX_INIT_MSG_EGRESS,
                        .b = (int32_t) which,
                        .monotonic_ns = sbx_now_ns()};
                int r = sbx_send_with_fd(SBX_INIT_STATUS_FD, &m, sizeof m, s);
                close(s);
                if (r < 0) {
                        close(path_fd);
                        return (*what = "network.egress: hand the socket to the supervisor"), r;
                }
                ports[n_ports].which = which;
                ports[n_ports++].path_fd = path_fd;
        }
        return 0;
}

void sbx_vm_net_start(int chan, sbx_vm_owner_fn owner) {
        queue_chan = chan;
        owner_pid = owner;
        sbx_vm_streams_init(stream_send);
}

/* A connection from the guest (VM_NOPEN: id, which, exec): connected to the proxy's socket. */
static void net_open(const char *d, size_t len) {
        uint32_t v[3];
        if (len != sizeof v)
                return;
        memcpy(v, d, sizeof v);
        int path_fd = -1;
        for (size_t i = 0; i < n_ports; i++)
                if (ports[i].which == v[1])
                        path_fd = ports[i].path_fd;
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d", path_fd);
        int s = path_fd < 0 ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && connect(s, (struct sockaddr *) &a, sizeof a) < 0) {
                close(s);
                s = -1;
        }
        if (s >= 0 && owner_pid) {
                uint32_t h[2] = {SBX_EGRESS_OWNER_MAGIC, (uint32_t) owner_pid(v[2])};
                if (sbx_write_all(s, h, sizeof h) < 0) {
                        close(s);
                        s = -1;
                }
        }
        if (s < 0 || sbx_vm_stream_add(v[0], s) < 0)
                sbx_vm_qframe(queue_chan, SBX_VM_NRESET, v[0], NULL, 0);
}

bool sbx_vm_net_frame(uint32_t type, const char *d, size_t len) {
        if (type == SBX_VM_NOPEN) {
                net_open(d, len);
                return true;
        }
        return sbx_vm_stream_frame(type, d, len);
}

void sbx_vm_net_done(void) {
        sbx_vm_streams_close_all();
        for (size_t i = 0; i < n_ports; i++)
                close(ports[i].path_fd);
        n_ports = 0;
}
