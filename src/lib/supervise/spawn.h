/* spawn.h — starting a sandbox: clone into fresh namespaces, map ids, build the root view,
 * drop to the sandbox user and exec the init. Everything is prepared by the caller; the child
 * between clone and execve makes syscalls only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <linux/filter.h>

#include "basic/error.h"
#include "basic/time-util.h"
#include "isolate/mount.h"
#include "isolate/rlimit.h"

typedef struct sbx_spawn_path_rule {
        const char *path; /* inside the new root */
        unsigned access; /* SBX_LL_* */
        bool optional; /* skip when absent */
} sbx_spawn_path_rule;

/* Descriptors the init finds open (see src/init/init.c). */
#define SBX_INIT_SECCOMP_FD 4
#define SBX_INIT_LANDLOCK_FD 5

typedef struct sbx_spawn_params {
        unsigned long clone_flags; /* CLONE_NEW* set; 0 = no namespaces */
        uid_t uid_inside, uid_outside;
        gid_t gid_inside, gid_outside;
        bool allow_setgroups; /* privileged: write "allow" and clear supplementary groups */
        const sbx_mount_plan *mounts; /* NULL = leave the mount view alone */
        const char *hostname; /* NULL = leave */
        bool loopback;
        /* The egress proxy's listening socket and its resolver's (UDP 53): made in the new network
         * namespace at 127.0.0.1 (loopback is brought up for them) and sent over status_fd
         * (SBX_INIT_MSG_EGRESS, b 0 and 1) before the init runs; 0 = none. */
        uint16_t egress_port;
        /* Or (the landlock backend: no network namespace) the proxy's socket on the host's loopback,
         * made by the backend (egress_host_fd ≥ 0 when egress_on_host; taken by the launch), and
         * the credential every connection to it must present (egress_secret, proxy-auth.h). */
        bool egress_on_host;
        /* Or (bwrap: the tool makes the network namespace) the init makes them in there and
         * sends them itself (its --egress-ports): the launch only serves what comes. */
        bool egress_inside;
        int egress_host_fd;
        const char *egress_secret;
        /* network.services: a listening socket each, at 127.0.0.1:port (b 2 + its index) */
        const uint16_t *service_ports;
        size_t n_service_ports;
        int init_fd; /* sandboxer-init, opened O_RDONLY|O_CLOEXEC */
        char *const *init_argv;
        char *const *envp;
        int stdin_fd, stdout_fd, stderr_fd; /* become 0, 1, 2 in the sandbox */
        int status_fd; /* becomes fd 3 of the init */
        sbx_rlimit_plan rlimits;
        int cgroup_fd; /* v2 leaf for CLONE_INTO_CGROUP, or -1 */
        int landlock_fd; /* ruleset for the command (fd 5 of the init), or -1 */
        int landlock_abi;
        const sbx_spawn_path_rule *inside_rules; /* Landlock rules for paths made in the child */
        size_t n_inside_rules;
        int seccomp_fd; /* BPF program for the command only (fd 4 of the init), or -1 */
        const struct sock_fprog *seccomp_base; /* loaded last, before the init runs: the init and
                                                * everything under it, or NULL */
        bool drop_caps; /* ambient/inheritable/permitted/effective all zero */
        bool drop_bounding; /* and the bounding set (needs CAP_SETPCAP) */
        bool switch_ids; /* no user namespace: setgroups/setresgid/setresuid to the
                          * outside ids (root dropping to run_as) */
        int last_cap;
        /* The program is our own init (sandboxer-init), which starts with the mask it inherits
         * and blocks every signal early in its set-up, before anything that could take one;
         * and nothing the sandbox's own group could run out of memory on before the exec (no
         * memory limit, or one well above what a set-up takes): a namespaced start may then
         * share our memory until the exec (spawn.c, do_shared()) and leave our signals blocked
         * across it. Taken only where sbx_spawn_single_threaded() said so. */
        bool share_memory;
        bool setuid_helper; /* the program is a setuid-root sandbox tool (firejail):
                             * no_new_privs is left to it and to the init, which set it */
        /* v1 cgroup `tasks` files (sbx_cgroup_self_attach_fds()) the child writes "0" to before
         * anything else: it joins its groups itself, without the RCU wait a move by pid takes
         * (~10-15 ms on v1). They close on exec. */
        const int *self_attach_fds;
        size_t n_self_attach_fds;
        /* Without a mount namespace: the directory the program starts in (NULL: ours). A sandbox
         * tool's client is started in a private one — podman's conmon writes files there (`oom`
         * when the container's memory ran out). */
        const char *tool_cwd;
        /* Not the spawn's: an audit log socket (sbx_backend_audit_reader()) carried to the
         * supervisor by sbx_backend_launch; 0 or -1 for none. Close-on-exec. */
        int audit_fd;
        /* Called in the parent after clone and before the child goes on (e.g. cgroup v1 attach). */
        int (*after_clone)(pid_t pid, void *userdata, sbx_error *e);
        void *userdata;
} sbx_spawn_params;

typedef struct sbx_spawned {
        pid_t pid;
        int pidfd;
        uint64_t clone_ns, ready_ns; /* CLOCK_MONOTONIC at clone and when init was exec'd */
} sbx_spawned;

/* Start the sandbox. Returns 0 once the init has been exec'd (the child's error pipe closed on
 * exec); on any failure the child is reaped and -errno returned with the story in *e. */
int sbx_spawn(const sbx_spawn_params *p, sbx_spawned *ret, sbx_error *e);

/* The caller's process has one thread whenever it spawns (the `run` verb says so before it
 * runs): only then may a start share its memory (sbx_spawn_params.share_memory). */
void sbx_spawn_single_threaded(bool on);
