/* landlock.c — Landlock rulesets: ABI negotiation, rules, enforcement. */
#include "isolate/landlock.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "isolate/landlock-compat.h"

static uint64_t fs_rights_for_abi(int abi) {
        uint64_t r =
                LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
        if (abi >= 2)
                r |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                r |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return r;
}

int sbx_landlock_abi(void) {
        static int cached = -1;
        if (cached >= 0)
                return cached;
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        cached = v < 0 ? 0 : (int) v;
        return cached;
}

int sbx_landlock_ruleset_new(
        const sbx_landlock_request *req, int *ret_fd, sbx_landlock_info *ret_info, sbx_error *e) {
        /* Not cached here: a test may run us under a filter that removes Landlock. */
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        int abi = v < 0 ? 0 : (int) v;
        if (abi < 1)
                return sbx_error_set(e, EOPNOTSUPP, "landlock",
                        "cannot enforce Landlock: kernel ABI 0 (%s; needs 1+, Linux 5.13 with "
                        "CONFIG_SECURITY_LANDLOCK "
                        "and landlock in the lsm= boot list)",
                        v < 0 ? strerror(errno) : "not offered");
        if (abi < req->min_abi)
                return sbx_error_set(e, EOPNOTSUPP, "landlock",
                        "cannot enforce Landlock: kernel ABI %d, this profile needs %d+", abi, req->min_abi);
        if (req->deny_tcp && abi < 4)
                return sbx_error_set(e, EOPNOTSUPP, "landlock",
                        "cannot enforce the network denial with Landlock: kernel ABI %d, TCP rules need 4+ "
                        "(Linux 6.7)",
                        abi);
        if ((req->scope_abstract_unix || req->scope_signal) && abi < 6)
                return sbx_error_set(e, EOPNOTSUPP, "landlock",
                        "cannot scope abstract unix sockets and signals with Landlock: kernel ABI %d, "
                        "scopes need 6+ (Linux 6.12)",
                        abi);

        struct sbx_landlock_ruleset_attr attr = {.handled_access_fs = fs_rights_for_abi(abi)};
        size_t size = sizeof(uint64_t);
        if (req->deny_tcp) {
                attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
                size = 2 * sizeof(uint64_t);
        }
        if (req->scope_abstract_unix || req->scope_signal) {
                if (req->scope_abstract_unix)
                        attr.scoped |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
                if (req->scope_signal)
                        attr.scoped |= LANDLOCK_SCOPE_SIGNAL;
                size = 3 * sizeof(uint64_t);
        }
        int fd = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (fd < 0)
                return sbx_error_set(
                        e, errno, "landlock", "cannot create a Landlock ruleset (ABI %d): %m", abi);
        if (ret_info)
                *ret_info = (sbx_landlock_info){.abi = abi,
                        .handled_fs = attr.handled_access_fs,
                        .handled_net = attr.handled_access_net,
                        .scoped = attr.scoped};
        *ret_fd = fd;
        return 0;
}

int sbx_landlock_add_path(int ruleset_fd, int abi, const char *path, unsigned access) {
        int fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        uint64_t a = 0;
        if (access & SBX_LL_READ)
                a |= LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
        if (access & SBX_LL_LIST)
                a |= LANDLOCK_ACCESS_FS_READ_DIR;
        if (access & SBX_LL_EXEC)
                a |= LANDLOCK_ACCESS_FS_EXECUTE;
        if (access & SBX_LL_WRITE)
                a |= LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                     LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                     LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |
                     LANDLOCK_ACCESS_FS_TRUNCATE;
        if (access & SBX_LL_DEV)
                a |= LANDLOCK_ACCESS_FS_IOCTL_DEV | LANDLOCK_ACCESS_FS_READ_FILE |
                     LANDLOCK_ACCESS_FS_WRITE_FILE;
        if (!S_ISDIR(st.st_mode))
                a &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                     LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                     LANDLOCK_ACCESS_FS_IOCTL_DEV;
        a &= fs_rights_for_abi(abi);
        int r = 0;
        if (a) {
                struct landlock_path_beneath_attr pb = {.allowed_access = a, .parent_fd = fd};
                if (syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                        r = -errno;
        }
        close(fd);
        return r;
}

int sbx_landlock_allow_connect_port(int ruleset_fd, uint16_t port) {
        struct sbx_landlock_net_port_attr np = {
                .allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP, .port = port};
        if (port == 0)
                return -EINVAL; /* port 0 in a rule would be "bind to any ephemeral port" */
        if (syscall(SYS_landlock_add_rule, ruleset_fd, SBX_LANDLOCK_RULE_NET_PORT, &np, 0) < 0)
                return -errno;
        return 0;
}
