/* vm-protocol.h — the microvm backend's control channel: the host's relay (a child of the
 * supervisor, src/lib/backend/microvm.c) and the guest agent (sandboxer-init as PID 1 of the
 * guest, guest.c) speak it over one virtio-serial port, a byte stream that needs no host module
 * (vhost-vsock is absent on many hosts). Frames: a header, then `len` bytes. The init's own
 * messages (protocol.h) travel inside VM_INIT frames, unchanged, so the host's supervisor and
 * report are the ones every backend has.
 *
 * Order: the agent says VM_READY once its modules are loaded and the port is open; the host sends
 * VM_CONFIG, any VM_FILE, VM_SECCOMP, then VM_GO; the agent builds the root, starts the command
 * under sandboxer-init and relays. At the end: VM_OOM (when the guest's cgroup saw an OOM kill),
 * VM_END (every byte of output was sent before it). Stdin: VM_STDIN frames, one of length 0 at
 * its end, at most SBX_VM_WINDOW_ONESHOT in flight (the agent acks with VM_XINACK, id 0). A
 * signal for the command: VM_SIGNAL (4 bytes, the number). VM_FAIL: the agent could not set up
 * (text: the step and errno), sent before VM_END.
 *
 * A persistent sandbox (serve=1): the init says SBX_INIT_MSG_SERVING in a VM_INIT frame; then
 * each exec is a VM_EXEC, the init's messages on the exec's socket come back as VM_XMSG, its
 * output as VM_XOUT/VM_XERR, and VM_XEND closes it. The descriptors the native init takes with
 * a request (protocol.h) cannot cross a serial port: the host's relay keeps them and the agent
 * makes their guest ends; a terminal or a connection (an fd to pass out) is refused. */
#pragma once

#include <stdint.h>

#define SBX_VM_MAGIC 0x53425856u /* "SBXV" */
#define SBX_VM_PORT_NAME "org.sandboxer.ctl" /* the virtserialport's name= */
#define SBX_VM_FRAME_MAX (256u * 1024u) /* a frame's payload, at most */

enum {
        /* host -> guest */
        SBX_VM_CONFIG = 1, /* "key=value\0" entries (below) */
        SBX_VM_FILE = 2, /* a file of the root view: "path\0" u32 mode (LE), then its bytes */
        SBX_VM_SECCOMP = 3, /* the seccomp blob (protocol.h: header and programs) */
        SBX_VM_GO = 4, /* nothing more: start */
        SBX_VM_STDIN = 5, /* bytes for the command's stdin; length 0: its end */
        SBX_VM_SIGNAL = 6, /* u32 signal number, for the command (through the init) */
        /* a persistent sandbox (config serve=1): its execs, each named by a u32 id the host
         * picks, first in the payload */
        SBX_VM_EXEC = 7, /* id, then a struct sbx_init_req and its strings (protocol.h) */
        SBX_VM_XIN = 8, /* id, bytes for the exec's stdin; the id alone: its end */
        SBX_VM_XGO = 9, /* id: the host's supervisor knows the exec's process (SBX_INIT_MSG_GO) */
        SBX_VM_XSIG = 10, /* id, u32 signal number: to the exec's process and its group */
        SBX_VM_XOUTACK = 11, /* id, u32: bytes of the exec's output the host's pipes took */
        /* guest -> host */
        SBX_VM_READY = 16, /* 2 x u64, ns since the guest's boot: the agent started; it is ready */
        SBX_VM_INIT = 17, /* a struct sbx_init_msg from the init, as it sent it */
        SBX_VM_STDOUT = 18,
        SBX_VM_STDERR = 19,
        SBX_VM_OOM = 20, /* u64 the guest cgroup's memory.events oom_kill count */
        SBX_VM_FAIL = 21, /* text: what the agent could not do */
        SBX_VM_END = 22, /* u64 the command's peak memory (memory.peak, bytes; 0 unknown) */
        SBX_VM_XMSG = 23, /* id, a struct sbx_init_msg the exec's socket carried (RUNNER: the
                           * host's stand-in process sends it, so that its pid is the exec's) */
        SBX_VM_XOUT = 24, /* id, bytes of the exec's stdout */
        SBX_VM_XERR = 25, /* id, bytes of its stderr */
        SBX_VM_XEND = 26, /* id: the exec's socket closed and its output was sent: it is over */
        SBX_VM_XINACK = 27, /* id, u32: bytes of the exec's stdin its pipe took */
        SBX_VM_NOPEN = 28, /* id (the guest picks it), u32 which (SBX_INIT_MSG_EGRESS's b: 0 the
                            * proxy, 2 + i service i), u32 the exec's id (0: the sandbox's own) —
                            * a connection to the egress proxy (or a service) in the guest */
        /* both ways: a connection's bytes (vm-stream.h), each named by the id of its NOPEN */
        SBX_VM_NDATA = 32, /* id, bytes */
        SBX_VM_NACK = 33, /* id, u32: bytes of NDATA its socket took (SBX_VM_WINDOW) */
        SBX_VM_NEND = 34, /* id: nothing more this way (the socket read its end) */
        SBX_VM_NRESET = 35, /* id: the connection is gone (an error, a refusal to connect) */
};

/* A persistent sandbox's execs at once, at most (each side's table). */
#define SBX_VM_MAX_EXECS 64
/* Flow control, per exec and direction: at most this many bytes of its stdin (of its output)
 * sent and not yet taken by the pipe on the other side (acked by XINACK, XOUTACK). One exec
 * that does not read its stdin, or whose reader is slow, stops only itself: the port is always
 * read on both sides, and neither side blocks writing to it for long. */
#define SBX_VM_WINDOW (256u << 10)
/* A one-shot command's stdin (VM_STDIN, acked by XINACK with id 0): its relay writes the channel
 * directly, so the window stays below what the channel holds unread (a unix socket's buffer),
 * and that write never waits on a guest that is itself waiting to write its output. */
#define SBX_VM_WINDOW_ONESHOT (128u << 10)

/* VM_CONFIG keys (each may repeat where it says so):
 *   arg=S        the command's argv, in order (repeats)
 *   env=K=V      its environment (repeats)
 *   cwd=PATH     its working directory
 *   hostname=S
 *   share=TAG\x1fTARGET\x1fro|rw   a 9p export of the host, mounted at TARGET (repeats)
 *   link=TARGET\x1fTEXT            a symlink in the root view (repeats)
 *   dir=PATH                       a directory of the root view (repeats)
 *   scratch=PATH\x1fBYTES          the scratch tmpfs (owned by the sandbox user, 0700)
 *   home=PATH                      filesystem.home: a writable directory there
 *   write=PATH   writable for Landlock besides scratch and /dev (repeats)
 *   memory=BYTES, pids=N, cpu=QUOTA_US PERIOD_US   the guest cgroup's limits (0/absent: none)
 *   uid=N, gid=N  whom the command runs as (1000)
 *   egress=PORT[,PORT...]  network.egress: the agent listens on 127.0.0.1:PORT in the guest (the
 *                first the proxy's, then each service's) and carries each connection to the
 *                host's supervisor on the channel (VM_NOPEN, vm-stream.h)
 *   serve=1      a persistent sandbox: no arg=; the init serves SBX_VM_EXEC requests (one process
 *                each, from inside), the agent multiplexes their sockets and stdio on the port
 */

struct sbx_vm_frame {
        uint32_t magic;
        uint32_t type;
        uint32_t len;
        uint32_t reserved;
};
