/* docker-egress.h — network.egress on the docker backend: the relay makes the egress proxy's
 * listening sockets inside the container's network namespace (docker-egress.c). Internal to the
 * backend (docker.c). */
#pragma once

#include <sys/types.h>

/* The container's argv gate: the Entrypoint runs `/bin/sh -c DOCKER_EGRESS_GATE sh TIMEOUT...`,
 * which reads exactly one byte (dd bs=1: the command's stdin is otherwise untouched) and execs
 * the rest only if it is DOCKER_EGRESS_GATE_BYTE: the command must not start before its way out
 * exists. Anything else (the relay failed and closed the stream) ends it with 125. */
#define DOCKER_EGRESS_GATE_BYTE 'G'
#define DOCKER_EGRESS_GATE "[ \"$(dd bs=1 count=1 status=none)\" = G ] || exit 125; exec \"$@\""

/* In the network namespace of the process pidfd (pid: the container's init, State.Pid), listen
 * at 127.0.0.1 on each of ports ("3128[,SERVICE...]", sbx_backend_egress_ports()) and hand each
 * socket over the status socket (fd 3) as the init does (SBX_INIT_MSG_EGRESS: b 0 the proxy, 2 + i
 * service i). The process must be PID 1 of a pid namespace of its own (a container's init, seen
 * from ours): a pid from an engine in another pid namespace names someone else. 0, or -errno with
 * *what set to the step that failed. */
int docker_egress_listen(int pidfd, pid_t pid, const char *ports, const char **what);
