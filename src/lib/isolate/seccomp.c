/* seccomp.c — the rule table and everything made from it: the BPF program (libseccomp + a
 * hand-written prefix), the OCI/Docker JSON profile, the user-space classifier and syscall names.
 * See seccomp.h for the policy and the "exactly one execve" design. */
#include "isolate/seccomp.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <linux/audit.h>
#include <linux/personality.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>

#include "basic/cache.h"
#include "basic/jsonw.h"
#include "basic/sha256.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif
#ifndef UNAME26
#define UNAME26 0x0020000
#endif
#define X32_SYSCALL_BIT 0x40000000U
#define SOCK_TYPE_MASK 0xfU /* the kernel's: the type without SOCK_NONBLOCK | SOCK_CLOEXEC */
#define LOW32 0xffffffffULL /* int / unsigned int arguments: the kernel ignores the upper half */

/* Option bits a rule depends on. */
enum {
        OPT_INET = 1U << 0,
        OPT_SOCKETS = 1U << 1,
        OPT_SPAWN = 1U << 2,
        OPT_EXEC_DENY = 1U << 3,
        OPT_EXEC_NOTIFY = 1U << 4,
        OPT_METADATA = 1U << 5,
        OPT_OBSERVE_NET = 1U << 6,
        OPT_OBSERVE_FS = 1U << 7,
        OPT_OBSERVE_EXEC = 1U << 8,
        OPT_INET_TCP = 1U << 9,
};

typedef enum rule_class {
        CLASS_VIOLATION, /* errno / kill / notify per options */
        CLASS_ENOSYS, /* always ERRNO(ENOSYS), never a violation */
        CLASS_GATE, /* always USER_NOTIF: the supervisor decides (the exec gate) */
        CLASS_OBSERVE, /* USER_NOTIF (only with notify): seen, and refused or continued */
} rule_class;

/* One argument condition: (args[arg] & mask) == value, 64-bit (the kernel's seccomp_data); with
 * op ARG_NE args[arg] != value, ARG_GT args[arg] > value (all 64 bits, mask unused: stray upper
 * bits make them true, so a rule that refuses on them fails closed). */
enum { ARG_MASKED_EQ, ARG_NE, ARG_GT };
typedef struct arg_cmp {
        uint8_t arg;
        uint64_t mask, value;
        uint8_t op;
} arg_cmp;

typedef struct rule {
        const char *name;
        int nr; /* x86_64 number, checked against libseccomp when it knows the name */
        rule_class cls;
        sbx_seccomp_category cat;
        int errnum; /* what deny mode answers */
        unsigned when; /* every one of these option bits must be set (0: always) */
        unsigned unless; /* none of these may be set */
        unsigned n_args; /* conditions, ANDed */
        arg_cmp a[2];
        const char *why;
} rule;

#define SYS(n, nr_, why_)                                                                                   \
        { .name = n, .nr = nr_, .cls = CLASS_VIOLATION, .errnum = EPERM, .why = why_ }
#define CLONE_NS(flag)                                                                                      \
        {                                                                                                   \
                .name = "clone", .nr = 56, .errnum = EPERM, .n_args = 1, .a = {{0, flag, flag}},            \
                .why = "new namespace"                                                                      \
        }
#define SOCKET(fam, why_, unless_)                                                                          \
        {                                                                                                   \
                .name = "socket", .nr = 41, .cat = SBX_SECCOMP_CAT_NETWORK, .errnum = EPERM,                \
                .unless = unless_, .n_args = 1, .a = {{0, LOW32, fam}}, .why = why_                         \
        }
#define SOCKET_TYPE(fam, type, why_)                                                                        \
        {                                                                                                   \
                .name = "socket", .nr = 41, .cat = SBX_SECCOMP_CAT_NETWORK, .errnum = EPERM,                \
                .unless = OPT_INET | OPT_SOCKETS, .n_args = 2,                                              \
                .a = {{0, LOW32, fam}, {1, SOCK_TYPE_MASK, type}}, .why = why_                              \
        }
#define INET_TYPE(type)                                                                                     \
        {                                                                                                   \
                .name = "socket", .nr = 41, .cat = SBX_SECCOMP_CAT_NETWORK, .errnum = EACCES,               \
                .when = OPT_INET_TCP, .unless = OPT_INET | OPT_SOCKETS, .n_args = 1,                        \
                .a = {{1, SOCK_TYPE_MASK, type}}, .why = "only TCP over IPv4 (the egress proxy)"            \
        }
#define FASTOPEN(n, nr_, argi)                                                                              \
        {                                                                                                   \
                .name = n, .nr = nr_, .cat = SBX_SECCOMP_CAT_NETWORK, .errnum = EACCES,                     \
                .when = OPT_INET_TCP, .unless = OPT_INET | OPT_SOCKETS, .n_args = 1,                        \
                .a = {{argi, MSG_FASTOPEN, MSG_FASTOPEN}}, .why = "TCP Fast Open (a connect unseen)"        \
        }
#define META(n, nr_)                                                                                        \
        {                                                                                                   \
                .name = n, .nr = nr_, .errnum = EPERM, .when = OPT_METADATA,                                \
                .why = "metadata change (not covered by Landlock)"                                          \
        }
#define FSW(n, nr_)                                                                                         \
        {                                                                                                   \
                .name = n, .nr = nr_, .cls = CLASS_OBSERVE, .cat = SBX_SECCOMP_CAT_FS, .errnum = EACCES,    \
                .when = OPT_OBSERVE_FS, .why = "write outside the writable set"                             \
        }
/* open/openat with write intent: O_WRONLY, O_RDWR, O_CREAT or O_TRUNC in the flags argument */
#define FSW_ONE(n, nr_, argi, mask_, val_)                                                                  \
        {                                                                                                   \
                .name = n, .nr = nr_, .cls = CLASS_OBSERVE, .cat = SBX_SECCOMP_CAT_FS, .errnum = EACCES,    \
                .when = OPT_OBSERVE_FS, .n_args = 1, .a = {{argi, mask_, val_}},                            \
                .why = "write outside the writable set"                                                     \
        }
#define FSW_FLAGS(n, nr_, argi)                                                                             \
        FSW_ONE(n, nr_, argi, 03, 01), FSW_ONE(n, nr_, argi, 03, 02), FSW_ONE(n, nr_, argi, 0100, 0100),    \
                FSW_ONE(n, nr_, argi, 01000, 01000)
#define IOCTL(cmd, why_)                                                                                    \
        { .name = "ioctl", .nr = 16, .errnum = EPERM, .n_args = 1, .a = {{1, LOW32, cmd}}, .why = why_ }

/* THE table. Numbers are x86_64's; names libseccomp 2.5.4 does not know (open_tree_attr) lie
 * above its table, where the ENOSYS ceiling answers for them — sbx_seccomp_build checks that. */
static const rule rules[] = {
        /* mount family: a sandbox's mounts are fixed before the command starts */
        SYS("mount", 165, "mount family"),
        SYS("umount2", 166, "mount family"),
        SYS("open_tree", 428, "mount family"),
        SYS("move_mount", 429, "mount family"),
        SYS("fsopen", 430, "mount family"),
        SYS("fsconfig", 431, "mount family"),
        SYS("fsmount", 432, "mount family"),
        SYS("fspick", 433, "mount family"),
        SYS("mount_setattr", 442, "mount family"),
        SYS("open_tree_attr", 467, "mount family"),
        SYS("pivot_root", 155, "root change"),
        SYS("chroot", 161, "root change"),
        /* namespaces: new ones would give a fresh user namespace full capabilities over them */
        SYS("unshare", 272, "new namespace"),
        SYS("setns", 308, "join namespace"),
        CLONE_NS(CLONE_NEWNS),
        CLONE_NS(CLONE_NEWCGROUP),
        CLONE_NS(CLONE_NEWUTS),
        CLONE_NS(CLONE_NEWIPC),
        CLONE_NS(CLONE_NEWUSER),
        CLONE_NS(CLONE_NEWPID),
        CLONE_NS(CLONE_NEWNET),
        /* clone3 keeps its flags in memory, out of the filter's reach: ENOSYS, libc uses clone */
        {.name = "clone3", .nr = 435, .cls = CLASS_ENOSYS, .errnum = ENOSYS, .why = "flags out of reach"},
        /* other processes' memory and descriptors */
        SYS("ptrace", 101, "process inspection"),
        SYS("process_vm_readv", 310, "process inspection"),
        SYS("process_vm_writev", 311, "process inspection"),
        SYS("pidfd_getfd", 438, "process inspection"),
        /* kernel attack surface with a record of privilege escalations */
        SYS("keyctl", 250, "keyring"),
        SYS("add_key", 248, "keyring"),
        SYS("request_key", 249, "keyring"),
        SYS("bpf", 321, "bpf"),
        SYS("perf_event_open", 298, "perf events"),
        SYS("userfaultfd", 323, "userfaultfd"),
        SYS("io_uring_setup", 425, "io_uring"),
        SYS("io_uring_enter", 426, "io_uring"),
        SYS("io_uring_register", 427, "io_uring"),
        /* the host's kernel, clock and devices */
        SYS("kexec_load", 246, "kexec"),
        SYS("kexec_file_load", 320, "kexec"),
        SYS("init_module", 175, "kernel modules"),
        SYS("finit_module", 313, "kernel modules"),
        SYS("delete_module", 176, "kernel modules"),
        SYS("reboot", 169, "reboot"),
        SYS("swapon", 167, "swap"),
        SYS("swapoff", 168, "swap"),
        SYS("acct", 163, "process accounting"),
        SYS("quotactl", 179, "quota"),
        SYS("quotactl_fd", 443, "quota"),
        SYS("lookup_dcookie", 212, "lookup_dcookie"),
        SYS("open_by_handle_at", 304, "open by handle"),
        SYS("syslog", 103, "kernel log"),
        SYS("settimeofday", 164, "system clock"),
        SYS("clock_settime", 227, "system clock"),
        SYS("vhangup", 153, "terminal hangup"),
        SYS("nfsservctl", 180, "nfsservctl"),
        SYS("iopl", 172, "I/O ports"),
        SYS("ioperm", 173, "I/O ports"),
        SYS("uselib", 134, "uselib"),
        /* typing into the terminal of whoever reads the sandbox's output */
        IOCTL(TIOCSTI, "terminal injection"),
        IOCTL(TIOCLINUX, "terminal injection"),
        /* raw network access below the network namespace's rules */
        SOCKET(AF_PACKET, "packet socket", OPT_SOCKETS),
        SOCKET(AF_VSOCK, "vsock socket", OPT_SOCKETS),
        SOCKET_TYPE(AF_INET, SOCK_RAW, "raw socket"),
        SOCKET_TYPE(AF_INET6, SOCK_RAW, "raw socket"),
        SOCKET_TYPE(AF_INET, SOCK_PACKET, "packet socket"), /* the kernel makes it AF_PACKET */
        /* deny_inet: no network without a network namespace */
        {.name = "socket",
                .nr = 41,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_INET,
                .unless = OPT_SOCKETS,
                .n_args = 1,
                .a = {{0, LOW32, AF_INET}},
                .why = "network denied"},
        {.name = "socket",
                .nr = 41,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_INET,
                .unless = OPT_SOCKETS,
                .n_args = 1,
                .a = {{0, LOW32, AF_INET6}},
                .why = "network denied"},
        /* inet_tcp_only: TCP over IPv4 and nothing else (Landlock judges TCP's ports) */
        {.name = "socket",
                .nr = 41,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_INET_TCP,
                .unless = OPT_INET | OPT_SOCKETS,
                .n_args = 1,
                .a = {{0, ~0ULL, AF_INET, ARG_NE}},
                .why = "only TCP over IPv4 (the egress proxy)"},
        {.name = "socket",
                .nr = 41,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_INET_TCP,
                .unless = OPT_INET | OPT_SOCKETS,
                /* 0 or IPPROTO_TCP (6): what lies above is MPTCP, SCTP, SMC (and 1-5 are no stream
                 * protocols: the kernel refuses them) */
                .n_args = 1,
                .a = {{2, ~0ULL, IPPROTO_TCP, ARG_GT}},
                .why = "only TCP over IPv4 (the egress proxy)"},
        INET_TYPE(SOCK_DGRAM),
        INET_TYPE(SOCK_RDM),
        INET_TYPE(SOCK_SEQPACKET),
        INET_TYPE(SOCK_DCCP),
        {.name = "listen",
                .nr = 50,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_INET_TCP,
                .unless = OPT_INET | OPT_SOCKETS,
                .why = "no listening on the host's network"},
        FASTOPEN("sendto", 44, 3),
        FASTOPEN("sendmsg", 46, 2),
        FASTOPEN("sendmmsg", 307, 3),
        /* deny_all_sockets_but_unix_pair */
        {.name = "socket",
                .nr = 41,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_SOCKETS,
                .why = "sockets denied"},
        {.name = "connect",
                .nr = 42,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_SOCKETS,
                .why = "sockets denied"},
        {.name = "bind",
                .nr = 49,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_SOCKETS,
                .why = "sockets denied"},
        /* deny_spawn: threads only */
        {.name = "fork",
                .nr = 57,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_SPAWN,
                .why = "spawn denied"},
        {.name = "vfork",
                .nr = 58,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_SPAWN,
                .why = "spawn denied"},
        {.name = "clone",
                .nr = 56,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_SPAWN,
                .n_args = 1,
                .a = {{0, CLONE_THREAD, 0}},
                .why = "spawn denied"},
        /* deny_metadata: Landlock does not cover chmod, chown, utimes and xattrs; without a mount
         * namespace the caller's own files are in reach of them */
        META("chmod", 90),
        META("fchmod", 91),
        META("fchmodat", 268),
        META("chown", 92),
        META("fchown", 93),
        META("lchown", 94),
        META("fchownat", 260),
        META("utime", 132),
        META("utimes", 235),
        META("utimensat", 280),
        META("futimesat", 261),
        META("setxattr", 188),
        META("lsetxattr", 189),
        META("fsetxattr", 190),
        META("removexattr", 197),
        META("lremovexattr", 198),
        META("fremovexattr", 199),
        /* exec */
        {.name = "execve",
                .nr = 59,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_EXEC_DENY,
                .why = "exec denied"},
        {.name = "execveat",
                .nr = 322,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_EXEC_DENY,
                .why = "exec denied"},
        {.name = "execve",
                .nr = 59,
                .cls = CLASS_GATE,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_EXEC_NOTIFY,
                .why = "exec after the first"},
        {.name = "execveat",
                .nr = 322,
                .cls = CLASS_GATE,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EPERM,
                .when = OPT_EXEC_NOTIFY,
                .why = "exec after the first"},
        /* observe_network: seen by the supervisor (address as evidence) */
        {.name = "connect",
                .nr = 42,
                .cls = CLASS_OBSERVE,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = ENETUNREACH,
                .when = OPT_OBSERVE_NET,
                .unless = OPT_SOCKETS,
                .why = "outside the network policy"},
        {.name = "bind",
                .nr = 49,
                .cls = CLASS_OBSERVE,
                .cat = SBX_SECCOMP_CAT_NETWORK,
                .errnum = EACCES,
                .when = OPT_OBSERVE_NET,
                .unless = OPT_SOCKETS,
                .why = "outside the network policy"},
        /* observe_exec: every execve seen with its path (process.commands) */
        {.name = "execve",
                .nr = 59,
                .cls = CLASS_OBSERVE,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EACCES,
                .when = OPT_OBSERVE_EXEC,
                .unless = OPT_EXEC_NOTIFY | OPT_EXEC_DENY,
                .why = "process.commands"},
        {.name = "execveat",
                .nr = 322,
                .cls = CLASS_OBSERVE,
                .cat = SBX_SECCOMP_CAT_SPAWN,
                .errnum = EACCES,
                .when = OPT_OBSERVE_EXEC,
                .unless = OPT_EXEC_NOTIFY | OPT_EXEC_DENY,
                .why = "process.commands"},
        /* observe_fs_writes: write intent, seen with its path */
        FSW_FLAGS("open", 2, 1),
        FSW_FLAGS("openat", 257, 2),
        FSW("creat", 85),
        FSW("truncate", 76),
        FSW("unlink", 87),
        FSW("unlinkat", 263),
        FSW("rename", 82),
        FSW("renameat", 264),
        FSW("renameat2", 316),
        FSW("mkdir", 83),
        FSW("mkdirat", 258),
        FSW("rmdir", 84),
        FSW("link", 86),
        FSW("linkat", 265),
        FSW("symlink", 88),
        FSW("symlinkat", 266),
        FSW("mknod", 133),
        FSW("mknodat", 259),
};

/* personality(2) values allowed to be set (Docker's set); everything else but the query is a
 * violation. Done in the BPF prefix: "not in a set" is not a libseccomp rule. */
static const uint32_t personality_ok[] = {
        PER_LINUX, PER_LINUX32, UNAME26, UNAME26 | PER_LINUX32, 0xffffffffU};
#define PERSONALITY_NR 135
/* For the OCI export, which can only say "this bit set": every bit outside the allowed ones. */
#define PERSONALITY_OK_BITS ((uint32_t) (PER_LINUX32 | UNAME26))

/* Syscalls above libseccomp 2.5.4's table, reviewed up to SBX_SECCOMP_NR_REVIEWED: names for
 * reports and for the OCI export's ENOSYS list. */
static const struct {
        int nr;
        const char *name;
} newer_syscalls[] = {
        {451, "cachestat"},
        {452, "fchmodat2"},
        {453, "map_shadow_stack"},
        {454, "futex_wake"},
        {455, "futex_wait"},
        {456, "futex_requeue"},
        {457, "statmount"},
        {458, "listmount"},
        {459, "lsm_get_self_attr"},
        {460, "lsm_set_self_attr"},
        {461, "lsm_list_modules"},
        {462, "mseal"},
        {463, "setxattrat"},
        {464, "getxattrat"},
        {465, "listxattrat"},
        {466, "removexattrat"},
        {467, "open_tree_attr"},
        {468, "file_getattr"},
        {469, "file_setattr"},
};

/* ---- names and the ceiling, computed once per process ---- */

/* Names, resolved one number at a time as they are asked for: a name lookup scans libseccomp's
 * table, so resolving all ~460 up front cost a run with any notification ~0.3 ms. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[SBX_SECCOMP_NR_REVIEWED + 1]; /* owned for the process lifetime */
static bool names_done[SBX_SECCOMP_NR_REVIEWED + 1];

static char *name_resolve(int nr) {
        char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
        for (size_t i = 0; !n && i < ELEMENTSOF(newer_syscalls); i++)
                if (newer_syscalls[i].nr == nr)
                        n = strdup(newer_syscalls[i].name); /* NULL on ENOMEM: unnamed */
        return n;
}

/* The highest number libseccomp names, found from the top down: a name lookup scans
 * libseccomp's table, and resolving all ~460 to find the last costs ~0.3 ms a run; from the top
 * down it is still ~14 scans (~35 µs). The answer depends on the code alone, so it is kept in
 * the cache dir beside the compiled programs, keyed by the code's identity and libseccomp's
 * version: one small read a run. */
static int max_known_fast = -1;
static pthread_once_t max_once = PTHREAD_ONCE_INIT;

static int max_cache_path(char *buf, size_t size) {
        struct {
                sbx_code_id code;
                unsigned lib[3];
                int reviewed;
                uint64_t so_dev, so_ino, so_size;
                int64_t so_mtime_ns;
        } key;
        char dir[PATH_MAX], hex[65];
        memset(&key, 0, sizeof key);
        if (sbx_code_identity(&key.code) < 0 || sbx_cache_dir(dir, sizeof dir) < 0)
                return -ENOENT;
        const struct scmp_version *v = seccomp_version();
        if (v) {
                key.lib[0] = v->major, key.lib[1] = v->minor, key.lib[2] = v->micro;
        }
        key.reviewed = SBX_SECCOMP_NR_REVIEWED;
        /* libseccomp linked dynamically: its own file too (a patch release may keep the version
         * number); in a static program dladdr names the program, which the code identity is */
        Dl_info di;
        struct stat st;
        if (dladdr((void *) seccomp_init, &di) && di.dli_fname && di.dli_fname[0] &&
                stat(di.dli_fname, &st) == 0) {
                key.so_dev = st.st_dev, key.so_ino = st.st_ino, key.so_size = (uint64_t) st.st_size;
                key.so_mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        }
        sha256_hex(&key, sizeof key, hex);
        hex[24] = 0;
        return (size_t) snprintf(buf, size, "%s/seccomp-max-%s", dir, hex) < size ? 0 : -ENAMETOOLONG;
}

static void max_init(void) {
        char path[PATH_MAX + 64];
        bool cacheable = max_cache_path(path, sizeof path) >= 0;
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (cacheable && sbx_cache_read(path, 16, &buf, &n) >= 0 && n > 0 && n < 16) {
                char text[16], *end;
                memcpy(text, buf, n);
                text[n] = 0;
                errno = 0;
                long v = strtol(text, &end, 10);
                char *name = NULL;
                /* checked, not trusted: the number libseccomp must still name (one lookup) */
                if (errno == 0 && end != text && *end == '\n' && v >= 0 && v <= SBX_SECCOMP_NR_REVIEWED &&
                        (name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, (int) v))) {
                        free(name);
                        max_known_fast = (int) v;
                        return;
                }
        }
        max_known_fast = 0;
        for (int nr = SBX_SECCOMP_NR_REVIEWED; nr >= 0; nr--) {
                char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
                if (name) {
                        free(name);
                        max_known_fast = nr;
                        break;
                }
        }
        if (cacheable) {
                char text[16];
                int k = snprintf(text, sizeof text, "%d\n", max_known_fast);
                (void) sbx_cache_store(path, text, (size_t) k, "seccomp-max-", 4);
        }
}

int sbx_seccomp_max_known_nr(void) {
        (void) pthread_once(&max_once, max_init);
        return max_known_fast;
}

const char *sbx_seccomp_syscall_name(int nr) {
        if (nr < 0 || nr > SBX_SECCOMP_NR_REVIEWED)
                return NULL;
        pthread_mutex_lock(&names_lock);
        if (!names_done[nr]) {
                names[nr] = name_resolve(nr);
                names_done[nr] = true;
        }
        const char *n = names[nr];
        pthread_mutex_unlock(&names_lock);
        return n;
}

/* ---- options ---- */

static int opts_bits(const sbx_seccomp_opts *o, unsigned *ret) {
        unsigned b = 0;
        if (!o) {
                *ret = 0;
                return 0;
        }
        switch (o->exec) {
        case SBX_SECCOMP_EXEC_ALLOW:
                break;
        case SBX_SECCOMP_EXEC_DENY:
                b |= OPT_EXEC_DENY;
                break;
        case SBX_SECCOMP_EXEC_NOTIFY:
                b |= OPT_EXEC_NOTIFY;
                break;
        case _SBX_SECCOMP_EXEC_MAX:
        case _SBX_SECCOMP_EXEC_INVALID:
        default:
                return -EINVAL;
        }
        if (o->deny_inet)
                b |= OPT_INET;
        if (o->deny_all_sockets_but_unix_pair)
                b |= OPT_SOCKETS;
        if (o->inet_tcp_only)
                b |= OPT_INET_TCP;
        if (o->deny_spawn)
                b |= OPT_SPAWN;
        if (o->deny_metadata)
                b |= OPT_METADATA;
        if (o->notify && o->observe_network)
                b |= OPT_OBSERVE_NET;
        if (o->notify && o->observe_fs_writes)
                b |= OPT_OBSERVE_FS;
        if (o->notify && o->observe_exec)
                b |= OPT_OBSERVE_EXEC;
        *ret = b;
        return 0;
}

static bool rule_applies(const rule *r, unsigned bits) {
        return (r->when & bits) == r->when && !(r->unless & bits);
}

/* The SECCOMP_RET_* value of a violation under these options. */
static uint32_t violation_ret(const sbx_seccomp_opts *o, int errnum) {
        if (o && o->notify)
                return SECCOMP_RET_USER_NOTIF;
        if (o && o->kill_on_violation)
                return SECCOMP_RET_KILL_PROCESS;
        return SECCOMP_RET_ERRNO | ((uint32_t) errnum & SECCOMP_RET_DATA);
}

static uint32_t rule_ret(const sbx_seccomp_opts *o, const rule *r) {
        switch (r->cls) {
        case CLASS_ENOSYS:
                return SECCOMP_RET_ERRNO | ENOSYS;
        case CLASS_GATE:
        case CLASS_OBSERVE:
                return SECCOMP_RET_USER_NOTIF;
        case CLASS_VIOLATION:
        default:
                return violation_ret(o, r->errnum);
        }
}

static uint32_t libseccomp_action(uint32_t ret) {
        if (ret == SECCOMP_RET_USER_NOTIF)
                return SCMP_ACT_NOTIFY;
        if (ret == SECCOMP_RET_KILL_PROCESS)
                return SCMP_ACT_KILL_PROCESS;
        return SCMP_ACT_ERRNO(ret & SECCOMP_RET_DATA);
}

/* ---- classify ---- */

static bool rule_matches(const rule *r, const struct seccomp_data *d) {
        if ((int) d->nr != r->nr)
                return false;
        for (unsigned i = 0; i < r->n_args; i++)
                if (!(r->a[i].op == ARG_NE         ? d->args[r->a[i].arg] != r->a[i].value
                            : r->a[i].op == ARG_GT ? d->args[r->a[i].arg] > r->a[i].value
                                                   : (d->args[r->a[i].arg] & r->a[i].mask) == r->a[i].value))
                        return false;
        return true;
}

int sbx_seccomp_classify(const sbx_seccomp_opts *o, const struct seccomp_data *d, sbx_seccomp_match *ret) {
        unsigned bits;
        if (!d || !ret || opts_bits(o, &bits) < 0)
                return -EINVAL;

        sbx_seccomp_match m = {.action = SBX_SECCOMP_ALLOW};
        int n = sbx_seccomp_max_known_nr();

        if (d->arch != AUDIT_ARCH_X86_64) {
                m.action = SBX_SECCOMP_BADARCH;
                m.why = "foreign architecture";
        } else if (d->nr == -1) {
                m.action = SBX_SECCOMP_ENOSYS;
                m.errnum = ENOSYS;
                m.why = "no syscall";
        } else if ((uint32_t) d->nr & X32_SYSCALL_BIT) {
                m.action = SBX_SECCOMP_BADARCH;
                m.why = "x32 ABI";
        } else if (d->nr > n) {
                m.action = SBX_SECCOMP_ENOSYS;
                m.errnum = ENOSYS;
                m.syscall = sbx_seccomp_syscall_name(d->nr);
                m.why = "newer than the filter";
        } else if (d->nr == PERSONALITY_NR) {
                uint32_t v = (uint32_t) d->args[0];
                bool okv = false;
                for (size_t i = 0; i < ELEMENTSOF(personality_ok); i++)
                        okv = okv || v == personality_ok[i];
                m.syscall = "personality";
                if (!okv) {
                        m.action = SBX_SECCOMP_VIOLATION;
                        m.errnum = EPERM;
                        m.why = "execution domain";
                }
        } else {
                m.syscall = sbx_seccomp_syscall_name(d->nr);
                for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                        const rule *r = &rules[i];
                        if (!rule_applies(r, bits) || !rule_matches(r, d))
                                continue;
                        m.action = r->cls == CLASS_ENOSYS    ? SBX_SECCOMP_ENOSYS
                                   : r->cls == CLASS_GATE    ? SBX_SECCOMP_EXEC_GATE
                                   : r->cls == CLASS_OBSERVE ? SBX_SECCOMP_OBSERVE
                                                             : SBX_SECCOMP_VIOLATION;
                        m.category = r->cat;
                        m.errnum = r->errnum;
                        m.why = r->why;
                        break;
                }
        }
        *ret = m;
        return 0;
}

/* ---- BPF ---- */

sbx_seccomp_prog *sbx_seccomp_prog_free(sbx_seccomp_prog *p) {
        if (p) {
                free(p->fprog.filter);
                free(p);
        }
        return NULL;
}

static void seccomp_releasep(scmp_filter_ctx *c) {
        if (*c)
                seccomp_release(*c);
}

/* Export a libseccomp context as raw BPF into a fresh array. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_filter **ret, size_t *ret_n) {
        _cleanup_close_ int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
                (size_t) st.st_size > SBX_SECCOMP_MAX_INSNS * sizeof(struct sock_filter))
                return -EINVAL;
        _cleanup_free_ struct sock_filter *insns = malloc((size_t) st.st_size);
        if (!insns)
                return -ENOMEM;
        for (size_t got = 0; got < (size_t) st.st_size;) {
                ssize_t n = pread(fd, (char *) insns + got, (size_t) st.st_size - got, (off_t) got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return -EIO;
                got += (size_t) n;
        }
        *ret_n = (size_t) st.st_size / sizeof(struct sock_filter);
        *ret = TAKE_PTR(insns);
        return 0;
}

#define STMT(c, k_) ((struct sock_filter){.code = (uint16_t) (c), .jt = 0, .jf = 0, .k = (k_)})
#define JUMP(c, k_, t, f) ((struct sock_filter){.code = (uint16_t) (c), .jt = (t), .jf = (f), .k = (k_)})
#define ARG_LO(i) ((uint32_t) (offsetof(struct seccomp_data, args) + 8 * (i))) /* little-endian */

#define PREFIX_MAX 32

/* The hand-written head: arch, x32, -1, the ENOSYS ceiling, personality. Falls through to the
 * instruction after it (libseccomp's program) for everything it does not decide. */
static size_t build_prefix(const sbx_seccomp_opts *o, int ceiling, struct sock_filter *f) {
        /* Indices, fixed by the layout below. */
        enum {
                I_PERS_VALUES = 8,
                N_PERS = ELEMENTSOF(personality_ok),
                I_RET_VIOL = I_PERS_VALUES + N_PERS,
                I_RET_ENOSYS,
                I_RET_KILL,
                I_END,
        };
#define TO(target, from) ((uint8_t) ((target) - (from) -1))
        size_t i = 0;
        f[i] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), i++; /* 0 */
        f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, TO(I_RET_KILL, 1)), i++; /* 1 */
        f[i] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), i++; /* 2 */
        f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, TO(I_RET_ENOSYS, 3), 0), i++; /* 3 */
        f[i] = JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, TO(I_RET_KILL, 4), 0), i++; /* 4 */
        f[i] = JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t) ceiling, TO(I_RET_ENOSYS, 5), 0), i++; /* 5 */
        f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, PERSONALITY_NR, 0, TO(I_END, 6)), i++; /* 6 */
        f[i] = STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)), i++; /* 7 */
        for (size_t k = 0; k < N_PERS; k++, i++)
                f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, personality_ok[k], TO(I_END, i), 0);
        f[i++] = STMT(BPF_RET | BPF_K, violation_ret(o, EPERM));
        f[i++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
        f[i++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#undef TO
        _Static_assert(I_END <= PREFIX_MAX, "prefix too long");
        return i; /* == I_END */
}
int sbx_seccomp_build(const sbx_seccomp_opts *o, sbx_seccomp_prog **ret, sbx_error *e) {
        unsigned bits;
        int r;

        if (!ret)
                return sbx_error_set(e, EINVAL, "seccomp: build", "no place for the program");
#if !defined(__x86_64__)
        return sbx_error_set(e, EOPNOTSUPP, "seccomp: build",
                "the seccomp filter is written for x86_64 only; this build is for another architecture");
#endif
        if (opts_bits(o, &bits) < 0)
                return sbx_error_set(e, EINVAL, "seccomp: build", "invalid seccomp options (exec mode %d)",
                        o ? (int) o->exec : -1);
        int ceiling = sbx_seccomp_max_known_nr();
        if (ceiling < 0)
                return sbx_error_set(e, ENOMEM, "seccomp: build", "libseccomp resolves no x86_64 syscall");
        if (ceiling > SBX_SECCOMP_NR_REVIEWED)
                ceiling = SBX_SECCOMP_NR_REVIEWED;

        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return sbx_error_set(e, ENOMEM, "seccomp: build", "seccomp_init failed");
        /* Native arch only (seccomp_init adds it); anything else is killed by our prefix first. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return sbx_error_set(
                        e, r, "seccomp: build", "cannot set the bad-architecture action: %s", strerror(-r));

        /* A binary tree over the syscall numbers rather than libseccomp's default linear chain:
         * every syscall the sandbox makes walks ~log2(rules) comparisons instead of all of them,
         * and the kernel's allow-cache, which emulates the program once per syscall number when
         * the filter is installed, does the same (install here: 155 us -> 61 us). */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r < 0)
                return sbx_error_set(
                        e, r, "seccomp: build", "cannot ask libseccomp for a binary tree: %s", strerror(-r));

        for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                const rule *ru = &rules[i];
                if (!rule_applies(ru, bits))
                        continue;
                int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, ru->name);
                if (nr == __NR_SCMP_ERROR) {
                        /* Unknown to this libseccomp: fine only where the ceiling answers for it. */
                        if (ru->nr > ceiling)
                                continue;
                        return sbx_error_set(e, EINVAL, "seccomp: build",
                                "libseccomp does not know syscall %s (%d), which the filter must refuse; "
                                "update libseccomp",
                                ru->name, ru->nr);
                }
                if (nr != ru->nr)
                        return sbx_error_set(e, EINVAL, "seccomp: build",
                                "syscall %s is %d for libseccomp but %d in the rule table", ru->name, nr,
                                ru->nr);
                if (nr > ceiling)
                        continue;
                struct scmp_arg_cmp cmp[2];
                for (unsigned k = 0; k < ru->n_args; k++)
                        cmp[k] = ru->a[k].op != ARG_MASKED_EQ
                                         ? (struct scmp_arg_cmp){.arg = ru->a[k].arg,
                                                   .op = ru->a[k].op == ARG_NE ? SCMP_CMP_NE : SCMP_CMP_GT,
                                                   .datum_a = ru->a[k].value}
                                         : (struct scmp_arg_cmp){.arg = ru->a[k].arg,
                                                   .op = SCMP_CMP_MASKED_EQ,
                                                   .datum_a = ru->a[k].mask,
                                                   .datum_b = ru->a[k].value};
                r = seccomp_rule_add_array(ctx, libseccomp_action(rule_ret(o, ru)), nr, ru->n_args, cmp);
                if (r < 0)
                        return sbx_error_set(e, r, "seccomp: build", "cannot add the rule for %s (%s): %s",
                                ru->name, ru->why, strerror(-r));
        }

        _cleanup_free_ struct sock_filter *body = NULL;
        size_t n_body = 0;
        r = export_bpf(ctx, &body, &n_body);
        if (r < 0)
                return sbx_error_set(
                        e, r, "seccomp: build", "cannot export the BPF program: %s", strerror(-r));

        struct sock_filter prefix[PREFIX_MAX];
        size_t n_prefix = build_prefix(o, ceiling, prefix);
        if (n_prefix + n_body > SBX_SECCOMP_MAX_INSNS)
                return sbx_error_set(e, E2BIG, "seccomp: build",
                        "the program has %zu instructions (limit %d)", n_prefix + n_body,
                        SBX_SECCOMP_MAX_INSNS);

        _cleanup_free_ struct sock_filter *all = malloc((n_prefix + n_body) * sizeof *all);
        _cleanup_seccomp_prog_ sbx_seccomp_prog *p = calloc(1, sizeof *p);
        if (!all || !p)
                return sbx_error_set(e, ENOMEM, "seccomp: build", "out of memory");
        memcpy(all, prefix, n_prefix * sizeof *all);
        memcpy(all + n_prefix, body, n_body * sizeof *all);
        p->fprog.len = (unsigned short) (n_prefix + n_body);
        p->fprog.filter = TAKE_PTR(all);
        *ret = TAKE_PTR(p);
        return 0;
}

int sbx_seccomp_write_bpf(const sbx_seccomp_prog *p, int fd) {
        if (!p || !p->fprog.filter || fd < 0)
                return -EINVAL;
        const char *buf = (const char *) p->fprog.filter;
        size_t len = (size_t) p->fprog.len * sizeof(struct sock_filter);
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return -EIO;
                buf += n;
                len -= (size_t) n;
        }
        return 0;
}

/* ---- OCI / Docker JSON ---- */

static const char *oci_action(uint32_t ret) {
        if (ret == SECCOMP_RET_KILL_PROCESS)
                return "SCMP_ACT_KILL_PROCESS";
        return "SCMP_ACT_ERRNO";
}

static void oci_entry_begin(jsonw *w, uint32_t ret, const char *why) {
        jsonw_begin_object(w);
        jsonw_kv_string(w, "action", oci_action(ret));
        if (ret != SECCOMP_RET_KILL_PROCESS)
                jsonw_kv_uint(w, "errnoRet", ret & SECCOMP_RET_DATA);
        if (why)
                jsonw_kv_string(w, "comment", why);
}

static void oci_masked_arg(jsonw *w, unsigned index, uint64_t mask, uint64_t value) {
        jsonw_begin_object(w);
        jsonw_kv_uint(w, "index", index);
        jsonw_kv_uint(w, "value", mask);
        jsonw_kv_uint(w, "valueTwo", value);
        jsonw_kv_string(w, "op", "SCMP_CMP_MASKED_EQ");
        jsonw_end_object(w);
}

static void oci_arg(jsonw *w, const arg_cmp *a) {
        jsonw_begin_object(w);
        jsonw_kv_uint(w, "index", a->arg);
        jsonw_kv_uint(w, "value", a->op != ARG_MASKED_EQ ? a->value : a->mask);
        jsonw_kv_uint(w, "valueTwo", a->op != ARG_MASKED_EQ ? 0 : a->value);
        jsonw_kv_string(w, "op",
                a->op == ARG_NE   ? "SCMP_CMP_NE"
                : a->op == ARG_GT ? "SCMP_CMP_GT"
                                  : "SCMP_CMP_MASKED_EQ");
        jsonw_end_object(w);
}

int sbx_seccomp_export_oci_json(const sbx_seccomp_opts *o, char **ret_json, sbx_error *e) {
        unsigned bits;
        if (!ret_json)
                return sbx_error_set(e, EINVAL, "seccomp: export", "no place for the JSON");
        if (opts_bits(o, &bits) < 0)
                return sbx_error_set(e, EINVAL, "seccomp: export", "invalid seccomp options");
        if (o && (o->notify || o->exec == SBX_SECCOMP_EXEC_NOTIFY))
                return sbx_error_set(e, EOPNOTSUPP, "seccomp: export",
                        "a container engine's seccomp profile cannot hand sandboxer the notification "
                        "listener "
                        "(needed to observe violations and to allow exactly one execve); "
                        "use the native or bwrap backend for this profile");
        int ceiling = MIN(sbx_seccomp_max_known_nr(), SBX_SECCOMP_NR_REVIEWED);

        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, true);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "defaultAction", "SCMP_ACT_ALLOW");
        jsonw_key(&w, "architectures");
        jsonw_begin_array(&w);
        jsonw_string(&w, "SCMP_ARCH_X86_64");
        jsonw_end_array(&w);
        jsonw_key(&w, "syscalls");
        jsonw_begin_array(&w);

        /* Rules without conditions, grouped by (action, why) in table order; the others one
         * entry each. */
        bool done[ELEMENTSOF(rules)] = {false};
        for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                const rule *r = &rules[i];
                if (done[i] || !rule_applies(r, bits) || r->nr > ceiling) /* above: the ENOSYS list */
                        continue;
                uint32_t ret = rule_ret(o, r);
                oci_entry_begin(&w, ret, r->why);
                jsonw_key(&w, "names");
                jsonw_begin_array(&w);
                jsonw_string(&w, r->name);
                if (r->n_args == 0)
                        for (size_t k = i + 1; k < ELEMENTSOF(rules); k++) {
                                const rule *q = &rules[k];
                                if (!done[k] && q->n_args == 0 && rule_applies(q, bits) &&
                                        q->nr <= ceiling && rule_ret(o, q) == ret && streq(q->why, r->why)) {
                                        jsonw_string(&w, q->name);
                                        done[k] = true;
                                }
                        }
                jsonw_end_array(&w);
                if (r->n_args > 0) {
                        jsonw_key(&w, "args");
                        jsonw_begin_array(&w);
                        for (unsigned k = 0; k < r->n_args; k++)
                                oci_arg(&w, &r->a[k]);
                        jsonw_end_array(&w);
                }
                jsonw_end_object(&w);
                done[i] = true;
        }

        /* personality: one entry per forbidden bit (the OCI format ORs entries, ANDs args). */
        for (unsigned bit = 0; bit < 32; bit++) {
                uint32_t m = 1U << bit;
                if (m & PERSONALITY_OK_BITS)
                        continue;
                oci_entry_begin(&w, violation_ret(o, EPERM), "execution domain");
                jsonw_key(&w, "names");
                jsonw_begin_array(&w);
                jsonw_string(&w, "personality");
                jsonw_end_array(&w);
                jsonw_key(&w, "args");
                jsonw_begin_array(&w);
                oci_masked_arg(&w, 0, m, m);
                jsonw_end_array(&w);
                jsonw_end_object(&w);
        }

        /* The ENOSYS ceiling, as far as names reach: reviewed syscalls newer than the filter. */
        bool any = false;
        for (int nr = ceiling + 1; nr <= SBX_SECCOMP_NR_REVIEWED; nr++) {
                const char *name = sbx_seccomp_syscall_name(nr);
                if (!name)
                        continue;
                if (!any) {
                        oci_entry_begin(&w, SECCOMP_RET_ERRNO | ENOSYS, "newer than the filter");
                        jsonw_key(&w, "names");
                        jsonw_begin_array(&w);
                        any = true;
                }
                jsonw_string(&w, name);
        }
        if (any) {
                jsonw_end_array(&w);
                jsonw_end_object(&w);
        }

        jsonw_end_array(&w);
        jsonw_end_object(&w);
        int r = jsonw_finish(&w, true, ret_json, NULL);
        if (r < 0)
                return sbx_error_set(
                        e, r, "seccomp: export", "cannot write the seccomp profile: %s", strerror(-r));
        return 0;
}
