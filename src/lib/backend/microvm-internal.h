/* microvm-internal.h — what the microvm backend's relay (microvm.c) shares with its persistent
 * sandbox's exec relay (microvm-serve.c). Both run in the relay process, the supervisor's child
 * that stands in for the init on the status socket (fd 3). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "init/vm-protocol.h"

/* A frame on the channel: its header, then a and b. 0 or -errno. */
int sbx_vm_frame_send(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb);
/* One frame from the channel (blocking: the guest writes whole frames); *ret owned, NUL-ended. */
int sbx_vm_frame_read(int fd, struct sbx_vm_frame *h, char **ret);
/* Take what the console pipe holds into the story kept for a failure: > 0 bytes, 0 at its end. */
ssize_t sbx_vm_console_take(int fd);

/* The channel's write queue, once the guest runs (microvm-net.c): a frame is queued, then sent as
 * far as the channel takes it without blocking; the rest goes on POLLOUT (flush: false when the
 * channel is gone). qframe's payload is the id, then p. */
void sbx_vm_qframe(int chan, uint32_t type, uint32_t id, const void *p, size_t n);
void sbx_vm_qframe_raw(int chan, uint32_t type, const void *p, size_t n);
bool sbx_vm_queue_flush(int chan);
size_t sbx_vm_queued(void);
void sbx_vm_queue_done(void);

/* network.egress through the channel (microvm-net.c). listen: a unix socket per port of list
 * ("3128[,SERVICE...]", sbx_backend_egress_ports), each handed to the supervisor as
 * SBX_INIT_MSG_EGRESS on SBX_INIT_STATUS_FD; 0 or -errno with *what. start: the streams' frames
 * go to chan; owner (a persistent sandbox's, else NULL) names the host pid of a guest exec id,
 * 0 for the sandbox's own. frame: a VM_NOPEN or a stream's frame from the guest (true), or not
 * one. done: every stream and listener closed. */
typedef pid_t (*sbx_vm_owner_fn)(uint32_t exec);
int sbx_vm_net_listen(const char *list, const char **what);
void sbx_vm_net_start(int chan, sbx_vm_owner_fn owner);
bool sbx_vm_net_frame(uint32_t type, const char *d, size_t len);
void sbx_vm_net_done(void);

/* A persistent sandbox whose init said it serves: relay the supervisor's exec requests (on fd 3,
 * with their four descriptors) to the guest and the execs' messages, output and ends back, until
 * the guest ends (true: its agent said VM_END, *ret_peak its cgroup's peak), qemu exits, the
 * supervisor goes or a termination signal comes on sfd (false). oom_w: where "O" says the
 * guest's cgroup OOM-killed. */
bool sbx_microvm_serve(int chan, int con, int qfd, int sfd, int oom_w, uint64_t *ret_peak);
