/* seccomp-fd.c — the seccomp programs handed to the init (and to bubblewrap), built or read from the cache.
 */
#include "backend/common.h"

#include <fcntl.h>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include "basic/io.h"
#include "basic/cache.h"
#include "basic/sha256.h"
#include "init/protocol.h"

/* Whether this process already runs under a seccomp filter: PR_GET_SECCOMP says 2 (one system
 * call); where a filter refuses that prctl, "Seccomp: 2" in /proc/self/status says it. */
static bool under_seccomp(void) {
        int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (mode >= 0)
                return mode != 0;
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, "Seccomp:", 8) == 0)
                        return atoi(line + 8) != 0;
        return true; /* unknown: keep the fallback */
}

/* The seccomp programs, both from the one rule table, in a sealed memfd the init reads (format
 * in src/init/protocol.h): the observed one (violations go to the supervisor's listener, which
 * records and refuses them; spawning and the one execve are decided there) and the plain one
 * (violations answer their errno on their own) for where no listener can be installed — absent
 * when observation is required, or when one execve (allow_spawn or allow_exec false) needs the
 * listener to let exactly
 * one execve through. The init loads it for itself and everything under it. */
/* The compiled programs are cached in the cache dir (ours alone), keyed by the
 * options and by the identity of the code that compiled them (the file holding this library, or
 * the program itself when linked statically: device, inode, size, mtime), so a rebuild never reads an older
 * table's programs. Compiling costs ~0.4 ms a run; reading the cache ~0.03 ms. */
static int seccomp_cache_path(
        const sbx_seccomp_opts *o, const sbx_seccomp_opts *po, bool obs, bool pl, char *buf, size_t size) {
        char rt[PATH_MAX];
        struct {
                sbx_seccomp_opts o, po;
                bool obs, pl;
                sbx_code_id code;
        } key;
        memset(&key, 0, sizeof key);
        if (sbx_code_identity(&key.code) < 0 || sbx_cache_dir(rt, sizeof rt) < 0)
                return -ENOENT;
        key.o = *o;
        key.po = *po;
        key.obs = obs;
        key.pl = pl;
        char hex[65];
        sha256_hex(&key, sizeof key, hex);
        hex[24] = 0;
        if ((size_t) snprintf(buf, size, "%s/seccomp-%s.bpf", rt, hex) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* The cached blob into fd (a fresh memfd), when it is there, ours, and what it says it is. */
static bool seccomp_cache_read(const char *path, bool obs, bool pl, int fd) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (sbx_cache_read(path, 256 * 1024, &buf, &n) < 0 || n < sizeof(struct sbx_seccomp_blob_header))
                return false;
        struct sbx_seccomp_blob_header h;
        memcpy(&h, buf, sizeof h);
        if (h.magic != SBX_SECCOMP_BLOB_MAGIC || (h.n_observed > 0) != obs || (h.n_plain > 0) != pl ||
                sizeof h + ((size_t) h.n_observed + h.n_plain) * sizeof(struct sock_filter) != n)
                return false;
        return sbx_write_all(fd, buf, n) >= 0;
}

/* The blob in fd (a memfd, written from its start) into the cache; each build keys its own
 * entries, the last 64 are kept. */
static void seccomp_cache_write(const char *path, int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > 256 * 1024)
                return;
        _cleanup_free_ char *buf = malloc((size_t) st.st_size);
        if (buf && pread(fd, buf, (size_t) st.st_size, 0) == st.st_size)
                (void) sbx_cache_store(path, buf, (size_t) st.st_size, "seccomp-", 64);
}

/* One program (no listener) for a tool that loads it itself (bubblewrap's --seccomp FD): the
 * blob layout of the cache (header, then the program as the plain one), the descriptor positioned
 * after the header, so that a reader of FD from its offset sees the raw program. Cached as the
 * others are (~0.2 ms of compiling a run), keyed as a blob with neither program flag, which
 * sbx_backend_build_seccomp never writes. */
int sbx_backend_seccomp_raw_fd(const sbx_seccomp_opts *o, int *ret_fd, sbx_error *e) {
        _cleanup_close_ int fd = memfd_create("sandboxer-tool-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return sbx_error_set(e, errno, "seccomp", "memfd_create: %m");
        char cache[PATH_MAX + 64];
        bool cacheable = seccomp_cache_path(o, o, false, false, cache, sizeof cache) >= 0;
        if (!cacheable || !seccomp_cache_read(cache, false, true, fd)) {
                _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *prog = NULL;
                int r = sbx_seccomp_build(o, &prog, e);
                if (r < 0)
                        return r;
                struct sbx_seccomp_blob_header h = {
                        .magic = SBX_SECCOMP_BLOB_MAGIC, .n_plain = prog->fprog.len};
                if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
                        (r = sbx_write_all(fd, &h, sizeof h)) < 0 ||
                        (r = sbx_write_all(
                                 fd, prog->fprog.filter, prog->fprog.len * sizeof(struct sock_filter))) < 0)
                        return sbx_error_set(
                                e, r < 0 ? -r : errno, "seccomp", "cannot write the seccomp program: %m");
                if (cacheable)
                        seccomp_cache_write(cache, fd);
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                lseek(fd, sizeof(struct sbx_seccomp_blob_header), SEEK_SET) < 0)
                return sbx_error_set(e, errno, "seccomp", "cannot seal the seccomp program: %m");
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int sbx_backend_build_seccomp(const sbx_config *cfg, const sbx_seccomp_opts *extra,
        sbx_seccomp_opts *ret_opts, int *ret_fd, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        sbx_seccomp_opts o = {
                .deny_all_sockets_but_unix_pair =
                        (!pr->net_allow && !pr->loopback && !sbx_profile_egress_proxied(pr)) ||
                        (extra && extra->deny_all_sockets_but_unix_pair),
                .deny_inet = extra && extra->deny_inet,
                .inet_tcp_only = extra && extra->inet_tcp_only,
                .deny_metadata = extra && extra->deny_metadata,
                .deny_spawn = !pr->allow_spawn,
                .exec = sbx_profile_exec_once(pr) ? SBX_SECCOMP_EXEC_NOTIFY : SBX_SECCOMP_EXEC_ALLOW,
                .notify = true,
                /* connect/bind are seen (and refused when they leave the sandbox) where the
                 * network is denied; write-intent calls only on request (a round trip each). */
                .observe_network = !pr->net_allow && !(extra && extra->deny_inet),
                .observe_fs_writes = pr->observe_fs_writes,
                .observe_exec = pr->cmd_mode != SBX_CMD_MODE_OFF,
        };
        _cleanup_(sbx_seccomp_prog_freep) sbx_seccomp_prog *observed = NULL, *plain = NULL;
        /* inet_tcp_only (the landlock backend's egress) needs the listener whatever observe says:
         * Landlock's rule names the proxy's port on any address, the listener holds it to the
         * host's loopback — without it the sandbox does not start (no plain fallback) */
        bool need_listener = o.inet_tcp_only;
        bool want_observed = pr->observe != SBX_OBSERVE_OFF || sbx_profile_exec_once(pr) || need_listener;
        /* The plain program is the fallback for a listener that cannot be installed, which only
         * happens when we already run under a seccomp filter (EBUSY: one listener per chain). */
        bool want_plain = pr->observe != SBX_OBSERVE_REQUIRED && !sbx_profile_exec_once(pr) &&
                          !need_listener && (pr->observe == SBX_OBSERVE_OFF || under_seccomp());
        int r;
        sbx_seccomp_opts po = o;
        po.notify = false;
        po.kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL;
        _cleanup_close_ int fd = memfd_create("sandboxer-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return sbx_error_set(e, errno, "seccomp", "memfd_create: %m");
        char cache[PATH_MAX + 64];
        bool cacheable = seccomp_cache_path(&o, &po, want_observed, want_plain, cache, sizeof cache) >= 0;
        if (cacheable && seccomp_cache_read(cache, want_observed, want_plain, fd))
                goto seal;
        if (cacheable && (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0))
                return sbx_error_set(e, errno, "seccomp", "memfd: %m");
        if (want_observed && (r = sbx_seccomp_build(&o, &observed, e)) < 0)
                return r;
        if (want_plain && (r = sbx_seccomp_build(&po, &plain, e)) < 0)
                return r;
        struct sbx_seccomp_blob_header h = {
                .magic = SBX_SECCOMP_BLOB_MAGIC,
                .n_observed = observed ? observed->fprog.len : 0,
                .n_plain = plain ? plain->fprog.len : 0,
        };
        if ((r = sbx_write_all(fd, &h, sizeof h)) < 0 ||
                (observed && (r = sbx_write_all(fd, observed->fprog.filter,
                                      observed->fprog.len * sizeof(struct sock_filter))) < 0) ||
                (plain && (r = sbx_write_all(fd, plain->fprog.filter,
                                   plain->fprog.len * sizeof(struct sock_filter))) < 0))
                return sbx_error_set(e, r, "seccomp", "cannot write the seccomp programs: %s", strerror(-r));
        if (cacheable)
                seccomp_cache_write(cache, fd);
seal:
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                lseek(fd, 0, SEEK_SET) < 0)
                return sbx_error_set(e, errno, "seccomp", "cannot seal the seccomp programs: %m");
        *ret_opts = o;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
