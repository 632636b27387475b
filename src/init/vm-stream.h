/* vm-stream.h — connections across the microvm's control channel (vm-protocol.h: VM_NOPEN,
 * VM_NDATA, VM_NACK, VM_NEND, VM_NRESET): the egress proxy's, and a host service's. The guest has
 * no network card; the agent listens on 127.0.0.1:3128 (and each service's port) in the guest,
 * and each connection it accepts becomes a stream on the port, which the host's relay connects
 * to the supervisor's proxy — the same proxy, rules and report every backend has.
 *
 * One table per process, the same code on both sides (the static guest agent, the host's relay):
 * a stream is a socket here and an id on the channel. Each direction has a window of
 * SBX_VM_STREAM_WINDOW bytes sent and not yet taken by the other side's socket (acked by VM_NACK), so a
 * connection whose reader is slow stops only itself; the bytes waiting for a socket are held
 * here, never more than the window. An end (the socket read EOF) is VM_NEND, and the other side
 * shuts its socket's writing half once everything before it is written; an error on either side
 * is VM_NRESET, and both forget the stream. Single-threaded; nothing here blocks. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_VM_MAX_STREAMS 64
/* Each direction's window, per stream: what one side may hold for a socket of the other's. */
#define SBX_VM_STREAM_WINDOW (64u << 10)

/* How a frame reaches the other side: type, the stream's id, then n bytes of p. */
typedef void (*sbx_vm_stream_send_fn)(uint32_t type, uint32_t id, const void *p, size_t n);

void sbx_vm_streams_init(sbx_vm_stream_send_fn send);
/* A new stream on fd (a connected socket, taken: made non-blocking; closed on failure). 0, or
 * -ENOSPC when the table is full, -EEXIST when id is in use. */
int sbx_vm_stream_add(uint32_t id, int fd);
/* SBX_VM_MAX_STREAMS pollfds, one per slot (fd -1 when idle or nothing is wanted of it). */
void sbx_vm_streams_poll(struct pollfd p[SBX_VM_MAX_STREAMS]);
/* What poll said of them: read (within the window) and send, write what waits. */
void sbx_vm_streams_events(const struct pollfd p[SBX_VM_MAX_STREAMS]);
/* A frame from the other side (d: its payload, id first). true when it was a stream's
 * (NDATA, NACK, NEND, NRESET), handled or dropped (an unknown id, a malformed one). */
bool sbx_vm_stream_frame(uint32_t type, const char *d, size_t len);
/* Streams open now. */
size_t sbx_vm_streams_open(void);
/* Forget every stream (their sockets closed; nothing sent). */
void sbx_vm_streams_close_all(void);
