/* guest.h — what the guest agent's files share (guest.c: the boot, the root view, a one-shot
 * command; guest-serve.c: the execs of a persistent sandbox). Syscalls and libc only: this is
 * the static sandboxer-init. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CG "/sys/fs/cgroup/sandbox"

extern int guest_port; /* the control port (vm-protocol.h) */

int write_all(int fd, const void *p, size_t n);
int read_full(int fd, void *p, size_t n);
/* A frame on the port; a port that is gone drops it (the host is gone too). */
void send_frame(uint32_t type, const void *data, size_t len);
void mark(const char *what);
_Noreturn void power_off(void);
/* A number in a cgroup file: the value of `key`, or the file's first number (key NULL); 0 unknown. */
uint64_t cg_value(const char *file, const char *key);

/* SIGCHLD came (sfd, a signalfd): every child that ended is reaped; true when child was one
 * (its wait status in *status). */
bool guest_reap(int sfd, pid_t child, int *status);

/* The sandbox's end over the port: the init's (unless it said its command's: said), the OOM
 * kills of its group, then VM_END with the group's peak memory. */
void guest_end(int status, bool said);

/* A persistent sandbox: relay its execs (VM_EXEC ...) between the port and the init serving
 * on st, until the init (child) ends; then the sandbox's end frames. The init's own stdio:
 * out, err (drained); in: closed at once. */
void guest_serve(int out, int err, int st, int in, pid_t child);

/* network.egress in the guest (guest-net.c). The loopback up, and a listener on 127.0.0.1 at each
 * of ports ("3128[,SERVICE...]": the proxy's, then each service's); NULL: the loopback only.
 * 0, or -errno with *step naming what failed. */
#include <poll.h>
#define GUEST_NET_LISTENERS 17 /* the proxy and SBX_REPORT_MAX_SERVICES services */
#define GUEST_NET_FDS (GUEST_NET_LISTENERS + 64) /* + SBX_VM_MAX_STREAMS (vm-stream.h) */
int guest_net_up(const char *ports, const char **step);
/* Who a connection accepted from inside belongs to (a persistent sandbox's exec id, 0 the
 * sandbox's own); asked while the client holds its end. NULL: 0. */
void guest_net_owner(uint32_t (*owner)(int fd));
/* Which of roots (1 + its index) has the client end of fd (a connection accepted on the guest's
 * loopback) among its processes and their descendants; 0 none. */
size_t guest_net_holder(int fd, const pid_t *roots, size_t n);
/* GUEST_NET_FDS pollfds: the listeners, then the streams. */
void guest_net_poll(struct pollfd p[GUEST_NET_FDS]);
void guest_net_events(const struct pollfd p[GUEST_NET_FDS]);
/* A stream's frame from the host (true), or not one (false). */
bool guest_net_frame(uint32_t type, const char *d, size_t len);
