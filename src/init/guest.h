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
