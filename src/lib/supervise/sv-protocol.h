/* sv-protocol.h — the protocol between the control plane (src/daemon/supervisors.c, exec.c,
 * files.c, reaper.c) and the supervisor of one persistent sandbox (`sandboxer supervise`,
 * src/cli/supervise.c): one header both sides build from, so that neither spells a name or a
 * number the other does not know.
 *
 * Start: the server spawns the supervisor with the descriptors below and reads one line from
 * SBX_SV_FD_READY: "ready INIT_PID SUPERVISOR_PID BACKEND SCRATCH HOME" (SBX_SV_READY_FMT; "-" for an
 * empty field) once the sandbox runs, or "error SENTENCE" (SBX_SV_ERROR_PREFIX) when it could
 * not start.
 *
 * Requests: a unix socket (SOCK_SEQPACKET, mode 0600), one JSON object each way per request (at
 * most SBX_SV_REQ_MAX bytes in, SBX_SV_ANS_MAX out), one request at a time on a connection; an
 * exec's answer says "keep": true when its connection takes another request after it (the server
 * keeps a few such for the next execs: no connect, no thread started per exec):
 *   {"op":"exec","exec_id":ID,"kind":"run|put|get","argv":[...],"env":["K=V"...],"cwd":DIR,
 *    "timeout_s":N,"output_cap":BYTES,"tty":{"cols":N,"rows":N},"long_lived":BOOL}
 *      + SCM_RIGHTS [stdin, stdout, stderr]   (tty: stdin is a unix socket the PTY's master
 *      arrives on, SCM_RIGHTS, as the command starts; long_lived: docs/long-lived.md)
 *      → {"ok":true,"exit":N,"long_lived":BOOL,"keep":true,"report":{...}}
 *        | {"ok":false,"errno":N,"error":"..."}
 *      ("long_lived": true|false|"if_allowed" in; out: whether it was)
 *      (put: stdin is the file's bytes, argv[0] its path; get: stdout is the file)
 *   {"op":"info"} → {"ok":true,"init_pid":N,"execs_running":N,"budget_used_s":X,"pid":N,
 *      "frozen":BOOL,"usage":{...}}
 *   {"op":"signal","exec_id":ID,"signal":N} → {"ok":true} | errno ESRCH (no such exec running)
 *   {"op":"freeze","frozen":BOOL} → {"ok":true,"frozen":BOOL} | errno EOPNOTSUPP (it cannot freeze
 *      here), EBUSY (an exec is starting), ESRCH: pause (true) or resume (false) the sandbox
 *      (sbx_sandbox_freeze); "info" says "frozen" too
 *   {"op":"destroy"} → {"ok":true}, then the sandbox ends and the supervisor exits.
 *   {"op":"network","egress":[RULE...],"egress_deny":[RULE...]} → {"ok":true} | errno ENOTCONN
 *      (no egress proxy), EPERM (outside the policy), EINVAL: the egress rules replaced
 * Each exec's report is also appended to STATE/execs.log (SBX_SV_EXEC_LOG: "EXEC_ID LENGTH\n",
 * the report's LENGTH bytes, "\n") just after the answer, so that nothing is lost when the server
 * is not there to take it, or stops before it stored it. (Earlier supervisors wrote
 * STATE/execs/EXEC_ID.json, one file each: a server still reads those.) */
#pragma once

#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>

/* The descriptors the supervisor is started with (--ready-fd, --secrets-fd, --config-fd). */
#define SBX_SV_FD_READY 3
#define SBX_SV_FD_SECRETS 4 /* {NAME: BASE64}, a sealed memfd */
#define SBX_SV_FD_CONFIG 5 /* the resolved profile and policy (sbx_config_encode), a sealed memfd */
#define SBX_SV_STR_(x) #x
#define SBX_SV_STR(x) SBX_SV_STR_(x) /* "3" for SBX_SV_FD_READY, in an argv */

#define SBX_SV_READY_FMT "ready %d %d %s %s %s\n"
#define SBX_SV_ERROR_PREFIX "error "

#define SBX_SV_REQ_MAX (256 * 1024)
#define SBX_SV_EXEC_LOG "execs.log"
/* An exec id as both sides accept it (it names a record of SBX_SV_EXEC_LOG): 1 to 64 of
 * [a-z0-9_-]; id need not end at len. */
static inline bool sbx_sv_exec_id_ok(const char *id, size_t len) {
        if (len < 1 || len > 64)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '_' ||
                            id[i] == '-'))
                        return false;
        return true;
}
#define SBX_SV_ANS_MAX (4 * 1024 * 1024)

#define SBX_SV_OP_EXEC "exec"
#define SBX_SV_OP_INFO "info"
#define SBX_SV_OP_SIGNAL "signal"
#define SBX_SV_OP_DESTROY "destroy"
#define SBX_SV_OP_NETWORK "network"
#define SBX_SV_OP_FREEZE "freeze"

#define SBX_SV_LONG_LIVED_IF_ALLOWED "if_allowed" /* "long_lived": long-lived if the profile allows */
#define SBX_SV_KIND_RUN "run"
#define SBX_SV_KIND_PUT "put"
#define SBX_SV_KIND_GET "get"
#define SBX_SV_KIND_CONNECT "connect"

/* The supervisors' spawner (daemon/spawner.c, cli/supervise.c's --spawner-fd): a request is one
 * SOCK_SEQPACKET message — this header, then nstr NUL-terminated strings (the program, its log
 * file, its argv) — with the descriptors it gets as SBX_SV_FD_READY, _SECRETS (flag) and _CONFIG
 * (flag), in that order, as SCM_RIGHTS. The answer: int32 {errno of the spawn, pid}, with the
 * process's pidfd as SCM_RIGHTS when it started. */
#define SBX_SPAWN_MAGIC 0x53425853u /* "SBXS" */
#define SBX_SPAWN_SECRETS 1u
#define SBX_SPAWN_CONFIG 2u
#define SBX_SPAWN_MSG_MAX 98304
#define SBX_SPAWN_ARGV_MAX 64
typedef struct sbx_spawn_hdr {
        uint32_t magic, flags, nstr;
} sbx_spawn_hdr;

/* How a supervisor (or the spawner) is started, by the server or by the spawner: a session of its
 * own, no signal blocked, SIGPIPE and SIGCHLD at their defaults. */
static inline void sbx_sv_spawnattr(posix_spawnattr_t *at) {
        sigset_t none, dfl;
        sigemptyset(&none);
        sigemptyset(&dfl);
        sigaddset(&dfl, SIGPIPE);
        sigaddset(&dfl, SIGCHLD);
        posix_spawnattr_init(at);
        posix_spawnattr_setsigmask(at, &none);
        posix_spawnattr_setsigdefault(at, &dfl);
        posix_spawnattr_setflags(at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

/* A supervisor's descriptors: /dev/null in, its log out (appended), ready at SBX_SV_FD_READY, the
 * secrets (else /dev/null when a config follows) and the config at theirs. ready, secrets and
 * config must not be among 3..5 themselves (one would be overwritten before its turn). The
 * highest descriptor it gets. */
static inline int sbx_sv_spawn_fds(
        posix_spawn_file_actions_t *fa, const char *logpath, int ready, int secrets, int config) {
        posix_spawn_file_actions_init(fa);
        posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(fa, 1, 2);
        posix_spawn_file_actions_adddup2(fa, ready, SBX_SV_FD_READY);
        if (secrets >= 0)
                posix_spawn_file_actions_adddup2(fa, secrets, SBX_SV_FD_SECRETS);
        else if (config >= 0) /* the config stays at its number */
                posix_spawn_file_actions_addopen(fa, SBX_SV_FD_SECRETS, "/dev/null", O_RDONLY, 0);
        if (config >= 0)
                posix_spawn_file_actions_adddup2(fa, config, SBX_SV_FD_CONFIG);
        return config >= 0 ? SBX_SV_FD_CONFIG : secrets >= 0 ? SBX_SV_FD_SECRETS : SBX_SV_FD_READY;
}
