/* vm-stream.c — see vm-stream.h. Built into the static guest agent and into libsandboxer: libc
 * and syscalls only. */
#include "vm-stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vm-protocol.h"

#define CHUNK (16u << 10) /* one NDATA frame, at most */

typedef struct {
        uint32_t id;
        int fd;
        bool used;
        bool read_end; /* our socket read EOF: NEND sent */
        bool peer_end; /* the other side's NEND came: shut our writing half once buf is out */
        bool shut; /* ...done */
        uint64_t credit; /* bytes we may still send (the other side's window) */
        char *buf; /* bytes from the other side waiting for our socket (< the window) */
        size_t len;
} vstream;

static vstream streams[SBX_VM_MAX_STREAMS];
static sbx_vm_stream_send_fn send_fn;

void sbx_vm_streams_init(sbx_vm_stream_send_fn send) {
        send_fn = send;
}

static vstream *find(uint32_t id) {
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++)
                if (streams[i].used && streams[i].id == id)
                        return &streams[i];
        return NULL;
}

static void forget(vstream *s) {
        if (s->fd >= 0)
                close(s->fd);
        free(s->buf);
        *s = (vstream){.fd = -1};
}

static void reset(vstream *s) {
        send_fn(SBX_VM_NRESET, s->id, NULL, 0);
        forget(s);
}

int sbx_vm_stream_add(uint32_t id, int fd) {
        if (find(id)) {
                close(fd);
                return -EEXIST;
        }
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++)
                if (!streams[i].used) {
                        int fl = fcntl(fd, F_GETFL);
                        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
                                int r = -errno;
                                close(fd);
                                return r;
                        }
                        streams[i] =
                                (vstream){.id = id, .fd = fd, .used = true, .credit = SBX_VM_STREAM_WINDOW};
                        return 0;
                }
        close(fd);
        return -ENOSPC;
}

/* Both halves done: forgotten (the other side forgets it on its own, having sent and had NEND). */
static void maybe_done(vstream *s) {
        if (s->peer_end && s->len == 0 && !s->shut) {
                (void) shutdown(s->fd, SHUT_WR);
                s->shut = true;
        }
        if (s->read_end && s->shut)
                forget(s);
}

/* Write what waits for the socket; ack what it took. false: the stream is gone. */
static bool flush(vstream *s) {
        size_t done = 0;
        while (done < s->len) {
                ssize_t k = send(s->fd, s->buf + done, s->len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k > 0)
                        done += (size_t) k;
                else if (k < 0 && errno == EINTR)
                        continue;
                else if (k < 0 && errno == EAGAIN)
                        break;
                else {
                        reset(s);
                        return false;
                }
        }
        if (done) {
                memmove(s->buf, s->buf + done, s->len - done);
                s->len -= done;
                uint32_t n = (uint32_t) done;
                send_fn(SBX_VM_NACK, s->id, &n, sizeof n);
        }
        return true;
}

void sbx_vm_streams_poll(struct pollfd p[SBX_VM_MAX_STREAMS]) {
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++) {
                const vstream *s = &streams[i];
                short ev = 0;
                if (s->used && !s->read_end && s->credit > 0)
                        ev |= POLLIN;
                if (s->used && s->len > 0)
                        ev |= POLLOUT;
                /* nothing wanted: not polled (a hung-up socket would wake us for nothing) */
                p[i] = (struct pollfd){.fd = ev ? s->fd : -1, .events = ev};
        }
}

void sbx_vm_streams_events(const struct pollfd p[SBX_VM_MAX_STREAMS]) {
        char buf[CHUNK];
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++) {
                vstream *s = &streams[i];
                if (!s->used || p[i].fd < 0 || p[i].fd != s->fd || !p[i].revents)
                        continue;
                if (s->len > 0 && (p[i].revents & (POLLOUT | POLLERR | POLLHUP)) && !flush(s))
                        continue;
                if (!s->read_end && s->credit > 0 && (p[i].revents & (POLLIN | POLLERR | POLLHUP))) {
                        size_t want = s->credit < sizeof buf ? (size_t) s->credit : sizeof buf;
                        ssize_t k = recv(s->fd, buf, want, MSG_DONTWAIT);
                        if (k > 0) {
                                s->credit -= (uint64_t) k;
                                send_fn(SBX_VM_NDATA, s->id, buf, (size_t) k);
                        } else if (k == 0) {
                                s->read_end = true;
                                send_fn(SBX_VM_NEND, s->id, NULL, 0);
                        } else if (errno != EINTR && errno != EAGAIN) {
                                reset(s);
                                continue;
                        }
                }
                maybe_done(s);
        }
}

bool sbx_vm_stream_frame(uint32_t type, const char *d, size_t len) {
        if (type != SBX_VM_NDATA && type != SBX_VM_NACK && type != SBX_VM_NEND && type != SBX_VM_NRESET)
                return false;
        if (len < 4)
                return true;
        uint32_t id;
        memcpy(&id, d, 4);
        vstream *s = find(id);
        if (!s)
                return true; /* forgotten here already (a reset crossed it) */
        d += 4, len -= 4;
        if (type == SBX_VM_NRESET) {
                forget(s);
        } else if (type == SBX_VM_NACK) {
                uint32_t n;
                if (len != 4)
                        return reset(s), true;
                memcpy(&n, d, 4);
                s->credit += n;
                if (s->credit > SBX_VM_STREAM_WINDOW) /* more acked than was sent */
                        return reset(s), true;
        } else if (type == SBX_VM_NEND) {
                s->peer_end = true;
                maybe_done(s);
        } else if (s->peer_end || s->len + len > SBX_VM_STREAM_WINDOW) {
                reset(s); /* bytes after the end, or past the window: the other side is broken */
        } else if (len) {
                char *nb = realloc(s->buf, s->len + len);
                if (!nb)
                        return reset(s), true;
                memcpy(nb + s->len, d, len);
                s->buf = nb;
                s->len += len;
                if (flush(s))
                        maybe_done(s);
        }
        return true;
}

size_t sbx_vm_streams_open(void) {
        size_t n = 0;
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++)
                n += streams[i].used;
        return n;
}

void sbx_vm_streams_close_all(void) {
        for (size_t i = 0; i < SBX_VM_MAX_STREAMS; i++)
                if (streams[i].used)
                        forget(&streams[i]);
}
