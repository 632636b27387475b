/* landlock-compat.h — Landlock constants newer than the system's <linux/landlock.h>. Debian 12's
 * headers describe ABI 2; the kernel we run on may offer 7. Each definition is used only when the
 * system header lacks it; the ABI actually offered is negotiated at run time. */
#pragma once

#include <linux/landlock.h>
#include <stdint.h>

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0) /* ABI 4 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0) /* ABI 7 */
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif

/* The ruleset attribute as of ABI 6; its size passed to the kernel follows the ABI. */
struct sbx_landlock_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net; /* ABI 4+ */
        uint64_t scoped; /* ABI 6+ */
};

#define SBX_LANDLOCK_RULE_NET_PORT 2
struct sbx_landlock_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
} __attribute__((packed));
