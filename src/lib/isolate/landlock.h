/* landlock.h — Landlock as the second filesystem (and TCP, and scope) fence: a ruleset built
 * in the parent from plain paths and access sets, completed with rules for paths that exist only
 * inside the sandbox, and enforced on the command by its init. Negotiates the kernel's ABI. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

/* Access sets, expressed in ABI-independent terms and masked to what the ABI handles. */
enum {
        SBX_LL_READ = 1u << 0, /* read files, list directories */
        SBX_LL_EXEC = 1u << 1, /* execute files */
        SBX_LL_WRITE = 1u << 2, /* write, truncate, create and remove entries */
        SBX_LL_DEV = 1u << 3, /* ioctl on device files (ABI 5) */
        SBX_LL_LIST = 1u << 4, /* list this directory only... and, as Landlock inherits, those below */
};

typedef struct sbx_landlock_request {
        bool deny_tcp; /* refuse TCP bind and connect (ABI 4+) */
        bool scope_abstract_unix; /* refuse connecting to abstract unix sockets outside (ABI 6+) */
        bool scope_signal; /* refuse signals to processes outside (ABI 6+) */
        int min_abi; /* fail when the kernel offers less (1 = filesystem only) */
} sbx_landlock_request;

typedef struct sbx_landlock_info {
        int abi; /* negotiated */
        uint64_t handled_fs, handled_net, scoped;
} sbx_landlock_info;

/* The kernel's Landlock ABI: 0 when absent or disabled (ENOSYS/EOPNOTSUPP), else ≥ 1. Cached. */
int sbx_landlock_abi(void);

/* Create a ruleset handling every filesystem right the ABI knows (so anything not granted is
 * refused), plus TCP and scopes as requested. A request the ABI cannot meet fails with
 * -EOPNOTSUPP and a message naming the missing feature and the ABI needed. */
int sbx_landlock_ruleset_new(
        const sbx_landlock_request *req, int *ret_fd, sbx_landlock_info *ret_info, sbx_error *e);

/* Add a path rule: `access` (SBX_LL_*) on the hierarchy at path (a file gets only file rights).
 * Syscalls only: usable in the child after pivot_root. `abi` masks the rights. */
int sbx_landlock_add_path(int ruleset_fd, int abi, const char *path, unsigned access);

/* Allow connecting to TCP port `port` (any address) in a ruleset that denies TCP (deny_tcp,
 * ABI 4+): the landlock backend's one way out, its egress proxy on the host's loopback. Landlock
 * judges ports only: the address is the seccomp listener's to check. 0 or -errno. */
int sbx_landlock_allow_connect_port(int ruleset_fd, uint16_t port);
