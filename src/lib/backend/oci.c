/* oci.c — the parts the podman and docker backends share (see oci.h): the base root filesystem,
 * the bind plan, the sandbox's cgroup at an engine-usable path, and the supervised launch of an
 * engine client. */
#include "backend/oci.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "backend/persist.h"
#include "basic/debug.h"
#include "basic/rm-rf.h"
#include "basic/cache.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "supervise/egress-run.h"
#include "supervise/supervise.h"

/* Bump when the skeleton changes: a new directory is made beside the old one. */
#define BASE_VERSION "base-v1"

/* The merged-/usr links a host may have at its root, reproduced as they are. */
static const char *const root_links[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
static const char *const base_dirs[] = {
        "usr", "etc", "proc", "dev", "sys", "tmp", "run", "var", "var/tmp", "home", "workspace", "mnt"};
static const char passwd[] = "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                             "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"
                             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group[] = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n";
static const struct {
        const char *path, *content;
} base_files[] = {
        {"etc/passwd", passwd}, {"etc/group", group}, {"etc/hostname", "sandbox\n"},
        {"etc/hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n"}, {"etc/resolv.conf", ""},
        {".sandboxer-init", ""}, /* the mount point of the init */
};

static int cache_dir(char *buf, size_t size) {
        const char *env = secure_getenv("SANDBOXER_CACHE_DIR");
        if (env && env[0] == '/')
                snprintf(buf, size, "%s", env);
        else if (geteuid() == 0)
                snprintf(buf, size, "/var/cache/sandboxer");
        else if ((env = getenv("XDG_CACHE_HOME")) && env[0] == '/')
                snprintf(buf, size, "%s/sandboxer", env);
        else if ((env = getenv("HOME")) && env[0] == '/')
                snprintf(buf, size, "%s/.cache/sandboxer", env);
        else
                return -ENOENT;
        /* mkdir -p, one level of parents is enough for the defaults */
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", buf);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = 0;
                (void) mkdir(parent, 0755);
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int write_file_at(int dfd, const char *path, const char *content) {
        _cleanup_close_ int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        size_t n = strlen(content);
        if (n > 0 && write(fd, content, n) != (ssize_t) n)
                return -EIO;
        return 0;
}

static int fill_skeleton(int dfd) {
        for (size_t i = 0; i < ELEMENTSOF(base_dirs); i++)
                if (mkdirat(dfd, base_dirs[i], 0755) < 0)
                        return -errno;
        if (fchmodat(dfd, "tmp", 01777, 0) < 0 || fchmodat(dfd, "var/tmp", 01777, 0) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(root_links); i++) {
                char host[64], link[PATH_MAX];
                snprintf(host, sizeof host, "/%s", root_links[i]);
                ssize_t n = readlink(host, link, sizeof link - 1);
                if (n <= 0)
                        continue; /* absent, or a real directory: bound when the profile reads it */
                link[n] = 0;
                if (symlinkat(link, dfd, root_links[i]) < 0)
                        return -errno;
        }
        if (symlinkat("/proc/mounts", dfd, "etc/mtab") < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(base_files); i++) {
                int r = write_file_at(dfd, base_files[i].path, base_files[i].content);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sbx_oci_base_rootfs(char *buf, size_t size, sbx_error *e) {
        char dir[PATH_MAX];
        int r = cache_dir(dir, sizeof dir);
        if (r < 0)
                return sbx_error_set(e, -r, "base rootfs",
                        "no cache directory for the base root filesystem (%s); set SANDBOXER_CACHE_DIR",
                        strerror(-r));
        if ((size_t) snprintf(buf, size, "%s/%s", dir, BASE_VERSION) >= size)
                return sbx_error_set(
                        e, ENAMETOOLONG, "base rootfs", "cache directory path too long: %s", dir);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
                return 0;
        char tmp[PATH_MAX];
        if ((size_t) snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, BASE_VERSION) >= sizeof tmp ||
                !mkdtemp(tmp))
                return sbx_error_set(e, errno, "base rootfs", "cannot create %s: %m", tmp);
        _cleanup_close_ int dfd = open(tmp, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dfd < 0 || fchmod(dfd, 0755) < 0 || (r = fill_skeleton(dfd)) < 0) {
                int err = dfd < 0 ? errno : r < 0 ? -r : errno;
                (void) sbx_rm_rf(tmp);
                return sbx_error_set(e, err, "base rootfs",
                        "cannot build the base root filesystem in %s: %s", tmp, strerror(err));
        }
        if (rename(tmp, buf) < 0) {
                int err = errno;
                (void) sbx_rm_rf(tmp);
                /* another run made it first */
                if ((err != EEXIST && err != ENOTEMPTY) || stat(buf, &st) < 0)
                        return sbx_error_set(e, err, "base rootfs", "cannot rename %s to %s: %s", tmp, buf,
                                strerror(err));
        }
        return 0;
}

/* ---- a ustar archive of the skeleton ------------------------------------------------------ */

typedef struct tarbuf {
        char *p;
        size_t len, cap;
} tarbuf;

static int tar_reserve(tarbuf *t, size_t n) {
        if (t->len + n <= t->cap)
                return 0;
        size_t cap = MAX(t->cap * 2, t->len + n + 4096);
        char *p = realloc(t->p, cap);
        if (!p)
                return -ENOMEM;
        t->p = p;
        t->cap = cap;
        return 0;
}

static int tar_entry(
        tarbuf *t, const char *name, char type, unsigned mode, const char *link, const char *data) {
        size_t dlen = data ? strlen(data) : 0, padded = (dlen + 511) / 512 * 512;
        if (strlen(name) >= 100 || (link && strlen(link) >= 100) || tar_reserve(t, 512 + padded) < 0)
                return -ENOMEM;
        char *h = t->p + t->len;
        memset(h, 0, 512 + padded);
        snprintf(h, 100, "%s", name);
        snprintf(h + 100, 8, "%07o", mode);
        snprintf(h + 108, 8, "%07o", 0);
        snprintf(h + 116, 8, "%07o", 0);
        if (snprintf(h + 124, 12, "%011lo", (unsigned long) (dlen & 077777777777)) < 0)
                return -EINVAL;
        snprintf(h + 136, 12, "%011o", 0);
        h[156] = type;
        if (link)
                snprintf(h + 157, 100, "%s", link);
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int i = 0; i < 512; i++)
                sum += (unsigned char) h[i];
        snprintf(h + 148, 8, "%06o", sum);
        if (dlen)
                memcpy(h + 512, data, dlen);
        t->len += 512 + padded;
        return 0;
}

int sbx_oci_base_tar(char **ret, size_t *ret_size, sbx_error *e) {
        tarbuf t = {0};
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(base_dirs) && r >= 0; i++)
                r = tar_entry(&t, base_dirs[i], '5',
                        streq(base_dirs[i], "tmp") || streq(base_dirs[i], "var/tmp") ? 01777 : 0755, NULL,
                        NULL);
        for (size_t i = 0; i < ELEMENTSOF(root_links) && r >= 0; i++) {
                char host[64], link[PATH_MAX];
                snprintf(host, sizeof host, "/%s", root_links[i]);
                ssize_t n = readlink(host, link, sizeof link - 1);
                if (n <= 0)
                        continue;
                link[n] = 0;
                r = tar_entry(&t, root_links[i], '2', 0777, link, NULL);
        }
        if (r >= 0)
                r = tar_entry(&t, "etc/mtab", '2', 0777, "/proc/mounts", NULL);
        for (size_t i = 0; i < ELEMENTSOF(base_files) && r >= 0; i++)
                r = tar_entry(&t, base_files[i].path, '0', 0644, NULL, base_files[i].content);
        if (r >= 0 && (r = tar_reserve(&t, 1024)) >= 0) {
                memset(t.p + t.len, 0, 1024); /* two zero blocks end the archive */
                t.len += 1024;
        }
        if (r < 0) {
                free(t.p);
                return sbx_error_set(e, ENOMEM, "base rootfs", "out of memory");
        }
        *ret = t.p;
        *ret_size = t.len;
        return 0;
}

/* ---- binds -------------------------------------------------------------------------------- */

static bool base_has_link(const char *target) {
        for (size_t i = 0; i < ELEMENTSOF(root_links); i++)
                if (target[0] == '/' && streq(target + 1, root_links[i]))
                        return true;
        return false;
}

static int add_bind(char ***b, sbx_report *rep, const sbx_plan_bind *pb, sbx_error *e) {
        const char *target = pb->target, *real = pb->at.real;
        if (sbx_plan_bind_missing(rep, pb))
                return 0;
        if (pb->at.kind == SBX_BIND_SYMLINK && base_has_link(target)) {
                (void) sbx_report_add_mount(rep, real, target, "symlink");
                return 0; /* the base has the same link */
        }
        if (strpbrk(real, ",:") || strpbrk(target, ",:"))
                return sbx_error_set(e, EINVAL, "mount plan",
                        "cannot bind %s at %s into a container: the engine's mount syntax cannot carry ',' "
                        "or ':' in a path; use --backend bwrap or native",
                        real, target);
        (void) sbx_report_add_mount(rep, real, target, pb->rw ? "bind-rw" : "bind-ro");
        if (strv_extend(b, real) < 0 || strv_extend(b, target) < 0 ||
                strv_extend(b, pb->rw ? "rw" : "ro") < 0)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
        return 0;
}

int sbx_oci_binds(const sbx_run_plan *rp, sbx_report *rep, char ***ret_binds, sbx_error *e) {
        _cleanup_strv_free_ char **b = NULL;
        int r;
        /* read paths (parents first), write paths, the workspace: the plan's order */
        for (size_t i = 0; i < rp->n_binds; i++)
                if ((r = add_bind(&b, rep, &rp->binds[i], e)) < 0)
                        return r;
        *ret_binds = TAKE_PTR(b);
        return 0;
}

/* ---- limits ------------------------------------------------------------------------------- */

/* /proc/self/cgroup with every path "/": the probe then puts the sandboxes' base at the root of
 * every hierarchy, one path for all of them, as an engine's --cgroup-parent needs. */
static char *root_self_cgroup(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return NULL;
        char line[512], *out = NULL;
        size_t len = 0;
        _cleanup_fclose_ FILE *m = open_memstream(&out, &len);
        if (!m)
                return NULL;
        while (fgets(line, sizeof line, f)) {
                char *last = strrchr(line, ':');
                if (!last)
                        continue;
                fprintf(m, "%.*s:/\n", (int) (last - line), line);
        }
        if (fflush(m) != 0) {
                fclose(m);
                m = NULL;
                free(out);
                return NULL;
        }
        fclose(m);
        m = NULL;
        return out;
}

int sbx_oci_engine_limits(const sbx_config *cfg, sbx_report *rep, const char *ignored_why, sbx_error *e) {
        static const sbx_limit_id lims[] = {SBX_LIMIT_MEMORY_MB, SBX_LIMIT_PIDS, SBX_LIMIT_CPUS};
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = SBX_MECH_TMPFS;
        struct stat st;
        sbx_mechanism m = stat("/sys/fs/cgroup/memory", &st) == 0 ? SBX_MECH_CGROUP_V1 : SBX_MECH_CGROUP_V2;
        for (size_t i = 0; i < ELEMENTSOF(lims); i++) {
                if (ignored_why && !cfg->policy->best_effort[lims[i]])
                        return sbx_error_set(e, EOPNOTSUPP, "limits",
                                "cannot enforce limits.%s here: %s; or list %s under enforce.best_effort in "
                                "the policy file",
                                sbx_limit_to_string(lims[i]), ignored_why, sbx_limit_to_string(lims[i]));
                rep->limit_mechanism[lims[i]] = ignored_why ? SBX_MECH_NONE : m;
        }
        return 0;
}

int sbx_oci_plan_limits(
        const sbx_config *cfg, sbx_report *rep, sbx_cgroup **ret_cg, bool *ret_engine_limits, sbx_error *e) {
        rep->limit_mechanism[SBX_LIMIT_TIMEOUT_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_BUDGET_S] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_OUTPUT_MB] = SBX_MECH_SUPERVISOR;
        rep->limit_mechanism[SBX_LIMIT_SCRATCH_MB] = SBX_MECH_TMPFS;
        *ret_cg = NULL;
        *ret_engine_limits = true;

        sbx_cgroup *cg = NULL;
        if (geteuid() == 0) {
                _cleanup_free_ char *self = root_self_cgroup();
                sbx_cgroup_probe_result probe = {0};
                if (self && sbx_cgroup_probe("/sys/fs/cgroup", self, &probe) >= 0) {
                        sbx_error ce = {0};
                        if (sbx_backend_cgroup_for_run(cfg, rep, &probe, 0, &cg, &ce) < 0) {
                                cg = NULL;
                                /* what killed runs left may be in the way: now, as nothing
                                 * waits (else once the engine starts: sbx_oci_run()) */
                                (void) sbx_cgroup_gc_dead_owners(&probe, NULL);
                                sbx_oci_cgroup_sweep(NULL);
                        }
                }
                sbx_cgroup_probe_result_done(&probe);
        }
        /* All three in our group, or the engine enforces them (no evidence of ours then). */
        bool ours = cg && sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_MEMORY) != SBX_CG_NONE &&
                    sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_PIDS) != SBX_CG_NONE &&
                    sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_CPUS) != SBX_CG_NONE;
        if (!ours) {
                sbx_backend_cgroup_destroy(cg);
                return sbx_oci_engine_limits(cfg, rep, NULL, e);
        }
        rep->limit_mechanism[SBX_LIMIT_MEMORY_MB] = sbx_backend_cg_mechanism(cg, SBX_CG_LIMIT_MEMORY);
        rep->limit_mechanism[SBX_LIMIT_PIDS] = sbx_backend_cg_mechanism(cg, SBX_CG_LIMIT_PIDS);
        rep->limit_mechanism[SBX_LIMIT_CPUS] = sbx_backend_cg_mechanism(cg, SBX_CG_LIMIT_CPUS);
        *ret_cg = cg;
        *ret_engine_limits = false;
        return 0;
}

int sbx_oci_cgroup_parent(sbx_cgroup *cg, char *buf, size_t size) {
        const char *name = sbx_cgroup_name(cg);
        if (!name)
                return -EINVAL;
        return (size_t) snprintf(buf, size, "/sandboxer/%s", name) < size ? 0 : -ENAMETOOLONG;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

void sbx_oci_cgroup_gc(const char *root, bool dry_run, char ***removed, char ***errors) {
        _cleanup_closedir_ DIR *d = opendir(root);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                char dir[PATH_MAX];
                if ((size_t) snprintf(dir, sizeof dir, "%s/%s/sandboxer", root, de->d_name) >= sizeof dir)
                        continue;
                _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_strv_free_ char **dead = NULL;
                if (fd < 0 || sbx_owned_dead_scan(fd, &dead) < 0)
                        continue;
                STRV_FOREACH(n, dead) {
                        /* with what the engine made below it (runc's libpod-... group), which a
                         * plain rmdir() would leave it busy with */
                        char sub[PATH_MAX + 256];
                        snprintf(sub, sizeof sub, "%s/%s", dir, *n);
                        int k = dry_run ? 0 : sbx_cgroup_remove_tree(sub);
                        if (k < 0) {
                                char *msg = NULL;
                                if (errors && asprintf(&msg, "%s/%s: %s", dir, *n, strerror(-k)) >= 0)
                                        (void) strv_consume(errors, msg);
                                continue;
                        }
                        char *path = NULL;
                        if (removed && asprintf(&path, "%s/%s", dir, *n) >= 0)
                                (void) strv_consume(removed, path);
                }
        }
}

void sbx_oci_cgroup_sweep(const char *name) {
        if (!name) {
                sbx_oci_cgroup_gc("/sys/fs/cgroup", false, NULL, NULL);
                return;
        }
        _cleanup_closedir_ DIR *root = opendir("/sys/fs/cgroup");
        struct dirent *de;
        while (root && (de = readdir(root))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[PATH_MAX];
                if ((size_t) snprintf(path, sizeof path, "/sys/fs/cgroup/%s/sandboxer/%s", de->d_name,
                            name) < sizeof path)
                        (void) sbx_cgroup_remove_tree(path); /* with the engine's group below it */
        }
}

/* json into buf's path, atomically (a temporary file renamed over it), unless it is there. */
static int seccomp_file_write(const char *json, const char *buf, sbx_error *e) {
        if (access(buf, R_OK) == 0)
                return 0;
        char tmp[PATH_MAX];
        if ((size_t) snprintf(tmp, sizeof tmp, "%s.XXXXXX", buf) >= sizeof tmp)
                return sbx_error_set(e, ENAMETOOLONG, "seccomp", "path too long: %s", buf);
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(e, errno, "seccomp", "cannot write %s: %m", tmp);
        size_t n = strlen(json);
        if (write(fd, json, n) != (ssize_t) n || fchmod(fd, 0644) < 0 || rename(tmp, buf) < 0) {
                int err = errno ? errno : EIO;
                (void) unlink(tmp);
                return sbx_error_set(e, err, "seccomp", "cannot write %s: %s", buf, strerror(err));
        }
        return 0;
}

/* Without a build identity: the file named for its content, written once, then reused. */
static int seccomp_file_by_content(const char *json, char *buf, size_t size, sbx_error *e) {
        int r;
        char dir[PATH_MAX], hex[65];
        if ((r = sbx_backend_runtime_dir(dir, sizeof dir)) < 0)
                return sbx_error_set(e, -r, "seccomp", "no runtime directory: %s", strerror(-r));
        sha256_hex(json, strlen(json), hex);
        if ((size_t) snprintf(buf, size, "%s/seccomp-%.16s.json", dir, hex) >= size)
                return sbx_error_set(e, ENAMETOOLONG, "seccomp", "runtime directory path too long: %s", dir);
        return seccomp_file_write(json, buf, e);
}

int sbx_oci_seccomp_file_for(const sbx_seccomp_opts *o, char *buf, size_t size, sbx_error *e) {
        struct {
                sbx_seccomp_opts o;
                sbx_code_id code;
        } key;
        char dir[PATH_MAX], hex[65];
        _cleanup_free_ char *json = NULL;
        int r;
        memset(&key, 0, sizeof key);
        key.o = *o;
        if (sbx_code_identity(&key.code) < 0) {
                /* no build to key by: named for its content, built every time */
                if ((r = sbx_seccomp_export_oci_json(o, &json, e)) < 0)
                        return r;
                return seccomp_file_by_content(json, buf, size, e);
        }
        if ((r = sbx_backend_runtime_dir(dir, sizeof dir)) < 0)
                return sbx_error_set(e, -r, "seccomp", "no runtime directory: %s", strerror(-r));
        sha256_hex(&key, sizeof key, hex);
        if ((size_t) snprintf(buf, size, "%s/seccomp-opts-%.16s.json", dir, hex) >= size)
                return sbx_error_set(e, ENAMETOOLONG, "seccomp", "runtime directory path too long: %s", dir);
        if (access(buf, R_OK) == 0)
                return 0;
        if ((r = sbx_seccomp_export_oci_json(o, &json, e)) < 0)
                return r;
        /* each build names its own: the runtime directory keeps the last few */
        sbx_cache_prune(dir, "seccomp-opts-", 16);
        return seccomp_file_write(json, buf, e);
}

/* ---- launch ------------------------------------------------------------------------------- */

static int kill_cgroup(void *userdata) {
        return sbx_cgroup_kill(userdata);
}

static void note_cgroup_end(void *userdata) {
        sbx_cgroup_note_end(userdata);
}

int sbx_oci_fork_client(int in_fd, int out_fd, int err_fd, int status_fd, int *keep, size_t n_keep,
        _noreturn_ void (*main)(void *ud), void *ud, const char *what, pid_t *ret_pid, int *ret_pidfd,
        sbx_error *e) {
        pid_t ppid = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return sbx_error_set(e, errno, what, "fork: %m");
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != ppid)
                        _exit(125);
                int src[4] = {in_fd, out_fd, err_fd, status_fd}, hi[4];
                for (int i = 0; i < 4; i++)
                        if ((hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0)
                                _exit(125);
                for (int i = 0; i < 4; i++)
                        if (dup2(hi[i], i) < 0)
                                _exit(125);
                for (size_t k = 0; k < n_keep; k++)
                        if ((keep[k] = fcntl(keep[k], F_DUPFD_CLOEXEC, 4)) < 0)
                                _exit(125);
                for (int i = 0; i < 4; i++)
                        close(hi[i]);
                main(ud);
        }
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                int err = errno;
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return sbx_error_set(e, err, what, "pidfd_open: %s", strerror(err));
        }
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}

int sbx_oci_run(const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, const sbx_oci_launch *l,
        sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        _cleanup_close_ int oom_fd = -EBADF, pidfd = -EBADF;
        int outp[2] = {-1, -1}, errp[2] = {-1, -1}, spair[2] = {-1, -1};
        _cleanup_(sbx_egress_run_freep) sbx_egress_run *egress = NULL;
        int r;

        if (l->egress && (r = sbx_backend_egress_new(cfg, rep, -EBADF, NULL, &egress, e)) < 0)
                return r;
        if (io->tty)
                return sbx_error_set(e, EOPNOTSUPP, "tty",
                        "--tty is not supported on the %s backend (the engine's terminal is not relayed by "
                        "sandboxer); use --backend native or bwrap",
                        rep->backend);
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
                socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, spair) < 0) {
                r = sbx_error_set(e, errno, "pipes", "cannot create pipes: %m");
                goto fail_fds;
        }
        /* The listener's sender is the init, not the client we spawned: its pid comes with it. */
        (void) setsockopt(spair[0], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));

        pid_t pid;
        uint64_t t0 = sbx_now_ns();
        sbx_debug_mark("spawning the engine client");
        r = l->start(l->userdata, io->in_fd, outp[1], errp[1], spair[1], &pid, &pidfd, e);
        close(outp[1]), close(errp[1]), close(spair[1]);
        outp[1] = errp[1] = spair[1] = -1;
        if (r < 0)
                goto fail_fds;
        uint64_t ready = sbx_now_ns();
        /* The groups that killed runs left, ours and those runc made in hierarchies we do not
         * use: removed while the engine starts (podman takes ~100 ms to), not before. */
        if (l->cg && !io->keep_leftovers) {
                (void) sbx_cgroup_gc_dead_siblings(l->cg);
                sbx_oci_cgroup_sweep(NULL);
        }
        rep->setup_ms = (int64_t) ((ready - t0) / 1000000);

        double timeout = cfg->limits.value[SBX_LIMIT_TIMEOUT_S];
        double budget = cfg->limits.value[SBX_LIMIT_BUDGET_S];
        sbx_supervise_params svp = {
                .pid = pid,
                .pidfd = pidfd,
                .status_fd = spair[0],
                .out_fd = outp[0],
                .err_fd = errp[0],
                .tty_master = -1,
                .tty_in = -1,
                .fwd_out = io->out_fd,
                .fwd_err = io->err_fd,
                .output_cap = sbx_limit_bytes(&cfg->limits, SBX_LIMIT_OUTPUT_MB),
                .start_ns = ready,
                .timeout_s = l->timeout_from_start            ? budget
                             : budget > 0 && budget < timeout ? budget
                                                              : timeout,
                .command_timeout_s = l->timeout_from_start ? timeout : 0,
                .grace_s = 2.0,
                .handle_signals = io->handle_signals,
                .oom_fd = -1,
                .seccomp = l->seccomp,
                .report = rep,
                .writable = l->writable,
                .loopback = pr->loopback,
                .cmd_allow = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_allow : NULL,
                .cmd_deny = pr->cmd_mode != SBX_CMD_MODE_OFF ? pr->cmd_deny : NULL,
                .cmd_strict = pr->cmd_mode == SBX_CMD_MODE_STRICT,
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
                .reap_orphans = false,
                .egress = egress,
        };
        if (l->cg) {
                svp.kill_all = kill_cgroup;
                svp.on_end = note_cgroup_end;
                svp.userdata = l->cg;
                oom_fd = sbx_cgroup_event_fd(l->cg);
                svp.oom_fd = oom_fd >= 0 ? oom_fd : -1;
        }
        if (io->persist) {
                /* the client's own stdio: nobody reads it; execs have their timeouts */
                svp.command_timeout_s = 0;
                int ctl = fcntl(spair[0], F_DUPFD_CLOEXEC, 3);
                if (ctl < 0)
                        r = sbx_error_set(e, errno, "persist", "dup: %m");
                else
                        r = sbx_persist_attach(io->persist, cfg, rep, &svp, l->cg ?: l->freeze_cg, ctl, pid,
                                pidfd, l->persist_envp, l->persist_cwd, e);
                if (r < 0) {
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        svp.timeout_s = 0.001;
                }
        }
        outp[0] = errp[0] = spair[0] = -1; /* the supervisor owns them now */
        sbx_supervise_result res;
        int r2 = sbx_supervise(&svp, &res, r < 0 ? NULL : e);
        sbx_debug_mark("engine client gone (supervised)");
        if (io->persist)
                sbx_persist_detach(io->persist);
        if (r >= 0)
                r = r2;
        if (r < 0)
                return r;
        if (io->persist && sbx_persist_served(io->persist)) {
                sbx_persist_report_end(rep, &res, t0);
                return 0;
        }
        if (egress)
                (void) sbx_egress_run_to_report(egress, rep, ready);

        bool engine_oom = false;
        if (l->oom_report_fd >= 0) {
                char c;
                engine_oom = read(l->oom_report_fd, &c, 1) == 1 && c == 'O';
        }

        sbx_classify_opts co = {.container_usage = true, .engine = true, .engine_oom = engine_oom};
        return sbx_backend_classify_ex(cfg, rep, &res, &svp, l->cg, t0, ready, &co, e);

fail_fds:
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
                safe_close(spair[i]);
        }
        return r;
}

int sbx_oci_run_quiet(const char *tool, char *const *argv, char *const *envp) {
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
                        _exit(127);
                (void) syscall(SYS_close_range, 3, ~0U, 0);
                execve(tool, argv, envp);
                _exit(127);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
