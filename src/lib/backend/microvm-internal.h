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

/* A persistent sandbox whose init said it serves: relay the supervisor's exec requests (on fd 3,
 * with their four descriptors) to the guest and the execs' messages, output and ends back, until
 * the guest ends (true: its agent said VM_END, *ret_peak its cgroup's peak), qemu exits, the
 * supervisor goes or a termination signal comes on sfd (false). oom_w: where "O" says the
 * guest's cgroup OOM-killed. */
bool sbx_microvm_serve(int chan, int con, int qfd, int sfd, int oom_w, uint64_t *ret_peak);
