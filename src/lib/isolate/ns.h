/* ns.h — namespaces: the uid/gid maps written from the parent, and what the child does inside
 * its fresh namespaces (hostname, loopback). */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"

#define SBX_NS_ALL                                                                                          \
        (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |          \
                CLONE_NEWCGROUP)

/* Parent side: map `inside_uid` to `outside_uid` (one id each, nothing else is mapped), the same
 * for gids. `allow_setgroups` is only possible for a privileged writer; otherwise "deny" is
 * written first, as the kernel requires for an unprivileged gid_map. */
int sbx_ns_write_maps(pid_t pid, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid, gid_t outside_gid,
        bool allow_setgroups, sbx_error *e);

/* Child side (syscalls only): bring up "lo" in the new network namespace. */
int sbx_ns_loopback_up(void);
