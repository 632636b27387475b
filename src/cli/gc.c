/* gc.c — `sandboxer gc`: remove what runs killed with SIGKILL left behind: sandbox cgroups whose
 * processes are all gone, and the run_* entries in the runtime dir (scratch directories, a
 * wrapper backend's profile or working directory) whose owning process (named in the entry's
 * name, or in the "pid" file of the older "run-*" layout) is dead. Never touches anything
 * that is still in use. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "backend/common.h"
#include "backend/oci.h"
#include "basic/jsonw.h"
#include "basic/missing.h"
#include "basic/strv.h"
#include "isolate/cgroup.h"
#include "verbs.h"

#define GC_DEFAULT_MIN_AGE_S 5

static void help(void) {
        printf("sandboxer gc [--json] [--dry-run] [--min-age S] [--runtime-dir DIR]\n\n"
               "Remove what killed runs left behind: sandbox cgroups (under this process's cgroup,\n"
               "\"sandboxer\" subtree) whose processes are all gone, and the run_* entries in the\n"
               "runtime dir (scratch, a wrapper backend's profile or working directory) whose\n"
               "owning process is dead. Groups younger than --min-age\n"
               "seconds (default %d) are left alone: they may belong to a run being set up.\n\n"
               "  --json             print {\"dry_run\", \"cgroups\": [...], \"scratch\": [...], "
               "\"errors\": [...]}\n"
               "  --dry-run          list, remove nothing\n"
               "  --min-age S        leave cgroups younger than S seconds\n"
               "  --runtime-dir DIR  default $SANDBOXER_RUNTIME_DIR, /run/sandboxer as root,\n"
               "                     else $XDG_RUNTIME_DIR/sandboxer\n"
               "Environment: SANDBOXER_CGROUP_ROOT (default /sys/fs/cgroup).\n",
                GC_DEFAULT_MIN_AGE_S);
}

/* The runtime directory runs use (sbx_backend_runtime_dir(): SANDBOXER_RUNTIME_DIR, /run/sandboxer
 * as root, $XDG_RUNTIME_DIR/sandboxer, else /tmp/sandboxer-UID), or the one given. */
static int runtime_dir(const char *flag, bool dry_run, char **ret) {
        char buf[PATH_MAX];
        if (flag)
                snprintf(buf, sizeof buf, "%s", flag);
        else if (dry_run)
                sbx_backend_runtime_dir_path(buf, sizeof buf); /* a dry run creates nothing either */
        else {
                int r = sbx_backend_runtime_dir(buf, sizeof buf);
                if (r < 0)
                        return r;
        }
        char *p = strdup(buf);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static bool is_mount_root(int dir_fd, const char *name, bool *ret) {
        struct statx sx;
        if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &sx) < 0)
                return false;
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return false; /* cannot tell: the caller refuses to descend */
        *ret = (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
        return true;
}

/* Remove parent_fd/name and everything below it, never descending into another mount: a mount point
 * is detached first (root only; a bind mount of a workspace loses nothing), else left (-EBUSY). */
static int rm_tree_at(int parent_fd, const char *name, const char *path) {
        struct stat st;
        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (!S_ISDIR(st.st_mode))
                return unlinkat(parent_fd, name, 0) < 0 && errno != ENOENT ? negative_errno() : 0;

        bool mnt;
        if (!is_mount_root(parent_fd, name, &mnt))
                return -EOPNOTSUPP;
        if (mnt) {
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return -EBUSY;
                if (!is_mount_root(parent_fd, name, &mnt) || mnt)
                        return -EBUSY;
        }

        int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *sub = NULL;
                if (asprintf(&sub, "%s/%s", path, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                int k = rm_tree_at(dirfd(d), de->d_name, sub);
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        if (r < 0)
                return r;
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

/* Hook for scratch/run directories: "run_<id>.<pid>.<pidns>" entries whose owner (in the name) is
 * dead, and the older "run-*" entries whose "pid" file names a dead process. An entry whose owner
 * cannot be told is kept (no way to tell it is not in use). */
static int gc_runtime(const char *dir, bool dry_run, char ***removed, char ***errors) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd2 < 0)
                return negative_errno();
        DIR *d = fdopendir(fd2);
        if (!d) {
                close(fd2);
                return negative_errno();
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                bool owned = strncmp(de->d_name, "run_", 4) == 0;
                if (!owned && strncmp(de->d_name, "run-", 4) != 0)
                        continue;
                _cleanup_free_ char *path = NULL, *pidfile = NULL;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
                        break;
                if (owned) {
                        /* run_<id>.<pid>.<pidns>: the owner is in the name */
                        if (!sbx_owned_name_dead(de->d_name))
                                continue;
                } else {
                        /* run-<id>/pid: the layout of sandboxer before 2026-11-24 */
                        if (asprintf(&pidfile, "%s/pid", path) < 0)
                                break;
                        FILE *f = fopen(pidfile, "re");
                        if (!f)
                                continue;
                        long pid = 0;
                        int n = fscanf(f, "%ld", &pid);
                        fclose(f);
                        if (n != 1 || pid <= 0)
                                continue;
                        if (kill((pid_t) pid, 0) == 0 || errno == EPERM)
                                continue; /* its run is alive */
                }
                int r = dry_run ? 0 : rm_tree_at(dfd, de->d_name, path);
                if (r < 0) {
                        char *msg = NULL;
                        if (asprintf(&msg, "%s: %s", path, strerror(-r)) >= 0)
                                (void) strv_consume(errors, msg);
                        continue;
                }
                (void) strv_extend(removed, path);
        }
        closedir(d);
        return 0;
}

int verb_gc(int argc, char **argv) {
        enum { ARG_MIN_AGE = 0x100, ARG_RUNTIME_DIR };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"json", no_argument, NULL, 'j'},
                {"dry-run", no_argument, NULL, 'n'},
                {"min-age", required_argument, NULL, ARG_MIN_AGE},
                {"runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR},
                {},
        };
        bool json = false, dry_run = false;
        unsigned min_age = GC_DEFAULT_MIN_AGE_S;
        const char *rt_flag = NULL;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'j':
                        json = true;
                        break;
                case 'n':
                        dry_run = true;
                        break;
                case ARG_MIN_AGE: {
                        char *end;
                        errno = 0;
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || v > 86400 * 365) {
                                cli_error("gc: --min-age wants seconds, not '%s'", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        min_age = (unsigned) v;
                        break;
                }
                case ARG_RUNTIME_DIR:
                        rt_flag = optarg;
                        break;
                case '?':
                        cli_error("gc: see 'sandboxer gc --help'");
                        return SBX_EXIT_FAILURE;
                default:
                        return SBX_EXIT_FAILURE;
                }
        if (optind < argc) {
                cli_error("gc: unexpected argument '%s'; usage: sandboxer gc [--json] [--dry-run]",
                        argv[optind]);
                return SBX_EXIT_FAILURE;
        }

        _cleanup_strv_free_ char **cgroups = NULL, **scratch = NULL, **errors = NULL;
        const char *root = getenv("SANDBOXER_CGROUP_ROOT");
        sbx_cgroup_probe_result probe;
        int r = sbx_cgroup_probe(root ? root : "/sys/fs/cgroup", NULL, &probe);
        if (r < 0) {
                char *msg = NULL;
                if (asprintf(&msg, "cgroups: cannot probe: %s", strerror(-r)) >= 0)
                        (void) strv_consume(&errors, msg);
        } else {
                sbx_cgroup_gc_options o = {.dry_run = dry_run, .min_age_s = min_age};
                r = sbx_cgroup_gc(&probe, &o, &cgroups);
                if (r < 0) {
                        char *msg = NULL;
                        if (asprintf(&msg, "cgroups: %s", strerror(-r)) >= 0)
                                (void) strv_consume(&errors, msg);
                }
                sbx_cgroup_probe_result_done(&probe);
                /* and what an OCI runtime made below ours in the v1 hierarchies sandboxer does not
                 * use itself (blkio, devices, cpuset, name=systemd) */
                sbx_oci_cgroup_gc(root ? root : "/sys/fs/cgroup", dry_run, &cgroups, &errors);
        }

        _cleanup_free_ char *rt = NULL;
        r = runtime_dir(rt_flag, dry_run, &rt);
        if (r < 0) {
                char *msg = NULL;
                if (asprintf(&msg, "the runtime directory: %s%s", strerror(-r),
                            r == -EPERM ? " (not ours: owned by another uid or writable by others)" : "") >=
                        0)
                        (void) strv_consume(&errors, msg);
        } else {
                /* and where the landlock backend puts its scratch when that is elsewhere
                 * (sbx_backend_scratch_dir(): /dev/shm/sandboxer as root on a disk /run) */
                char sd[PATH_MAX];
                sbx_backend_scratch_dir_path(sd, sizeof sd);
                const char *dirs[] = {rt, !rt_flag && !streq(sd, rt) ? sd : NULL};
                for (size_t i = 0; i < ELEMENTSOF(dirs) && dirs[i]; i++) {
                        r = gc_runtime(dirs[i], dry_run, &scratch, &errors);
                        if (r < 0) {
                                char *msg = NULL;
                                if (asprintf(&msg, "%s: %s", dirs[i], strerror(-r)) >= 0)
                                        (void) strv_consume(&errors, msg);
                        }
                }
        }

        if (json) {
                _cleanup_jsonw_ jsonw w;
                _cleanup_free_ char *out = NULL;
                jsonw_init(&w, true);
                jsonw_begin_object(&w);
                jsonw_kv_bool(&w, "dry_run", dry_run);
                const char *keys[] = {"cgroups", "scratch", "errors"};
                char **lists[] = {cgroups, scratch, errors};
                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        jsonw_key(&w, keys[i]);
                        jsonw_begin_array(&w);
                        STRV_FOREACH(s, lists[i])
                                jsonw_string(&w, *s);
                        jsonw_end_array(&w);
                }
                jsonw_end_object(&w);
                if (jsonw_finish(&w, true, &out, NULL) < 0) {
                        cli_error("gc: out of memory");
                        return SBX_EXIT_FAILURE;
                }
                fputs(out, stdout);
        } else {
                const char *verb = dry_run ? "would remove" : "removed";
                STRV_FOREACH(s, cgroups)
                        printf("%s cgroup %s\n", verb, *s);
                STRV_FOREACH(s, scratch)
                        printf("%s scratch %s\n", verb, *s);
                STRV_FOREACH(s, errors)
                        cli_error("gc: %s", *s);
                printf("%s %zu leftover(s)\n", verb, strv_length(cgroups) + strv_length(scratch));
        }
        fflush(stdout);
        return strv_length(errors) > 0 ? 1 : 0;
}
