/* doctor.c — `sandboxer doctor [--json]`: the kernel features sandboxer relies on, and for each
 * backend whether it can run here or exactly why not. Exit 0 when at least one backend can. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "basic/error.h"
#include "basic/host.h"
#include "basic/jsonw.h"
#include "isolate/cgroup.h"
#include "isolate/probe.h"
#include "policy/policy.h"
#include "verbs.h"

/* which libc this CLI is linked against (src/cli/meson.build: musl where it can be) */
#ifdef __GLIBC__
#define CLI_LIBC "glibc"
#else
#define CLI_LIBC "musl"
#endif

enum {
        F_NAMESPACES,
        F_LANDLOCK,
        F_SECCOMP,
        F_SECCOMP_NOTIFY,
        F_NO_NEW_PRIVS,
        F_LANDLOCK_AUDIT,
        F_PIDFD_OPEN,
        F_CLONE3,
        F_CLOSE_RANGE,
        F_OPENAT2,
        F_MOUNT_SETATTR,
        F_CGROUP,
        F_CGROUP_MEMORY,
        F_CGROUP_PIDS,
        F_CGROUP_CPU,
        F_CGROUP_FREEZER,
        F_SYSCALLS_32BIT,
        _F_MAX,
};

static const char *const feature_names[_F_MAX] = {
        [F_NAMESPACES] = "namespaces",
        [F_LANDLOCK] = "landlock",
        [F_SECCOMP] = "seccomp",
        [F_SECCOMP_NOTIFY] = "seccomp_user_notif",
        [F_NO_NEW_PRIVS] = "no_new_privs",
        [F_LANDLOCK_AUDIT] = "landlock_audit",
        [F_PIDFD_OPEN] = "pidfd_open",
        [F_CLONE3] = "clone3",
        [F_CLOSE_RANGE] = "close_range",
        [F_OPENAT2] = "openat2",
        [F_MOUNT_SETATTR] = "mount_setattr",
        [F_CGROUP] = "cgroup",
        [F_CGROUP_MEMORY] = "cgroup_memory",
        [F_CGROUP_PIDS] = "cgroup_pids",
        [F_CGROUP_CPU] = "cgroup_cpu",
        [F_CGROUP_FREEZER] = "cgroup_freezer",
        [F_SYSCALLS_32BIT] = "syscalls_32bit",
};

/* Why a backend cannot run here, for programs (doctor --json "cause"): a test suite tells a
 * tool it was meant to have (tool_missing after setup installed it: a failure) from what the
 * host refuses (a skip with the reason). */
typedef enum backend_cause {
        CAUSE_NONE, /* it can run */
        CAUSE_NOT_IMPLEMENTED,
        CAUSE_TOOL_MISSING, /* its program (bwrap, firejail, podman, docker) is not in PATH */
        CAUSE_HOST, /* the kernel, the permissions or the environment refuse it */
        _CAUSE_MAX,
} backend_cause;

static const char *const cause_names[_CAUSE_MAX] = {
        [CAUSE_NONE] = "none",
        [CAUSE_NOT_IMPLEMENTED] = "not_implemented",
        [CAUSE_TOOL_MISSING] = "tool_missing",
        [CAUSE_HOST] = "host",
};

typedef struct backend_line {
        const char *name;
        bool available;
        backend_cause cause;
        char reason[1024];
} backend_line;

static const char *doctor_policy; /* --policy FILE, or NULL: the default */

static void help(void) {
        printf("Usage: sandboxer doctor [--json] [--policy FILE]\n\n"
               "Probe the kernel features sandboxer relies on (namespaces in a trial child, Landlock,\n"
               "seccomp and its user notification, cgroup controllers, ...) and say for each backend\n"
               "whether it can run here, or why not and how to fix it.\n\n"
               "  --json     print one JSON object {kernel, landlock_abi, cgroup, unprivileged,\n"
               "             features: {NAME: {available, detail}}, backends: {NAME: {available, reason,\n"
               "             cause, implemented, level, persistent: {yes, how}, capabilities: {CAP:\n"
               "             {yes, how}}}}}; cause is\n"
               "             none, not_implemented, tool_missing (its program is not in PATH) or host\n"
               "  --policy FILE  judge the backends under this site policy (default: the one\n"
               "             `run` would use: /etc/sandboxer/policy.yaml, else the built-in); it decides\n"
               "             whether the microvm backend may use QEMU's emulation without KVM\n"
               "             (strict.allow_emulation) and its kernel (strict.kernel)\n"
               "  -h, --help show this help\n\n"
               "Exit status: 0 when at least one backend can run on this host, 1 when none can,\n"
               "125 on bad arguments.\n");
}

static void probe_all(sbx_probe_result res[_F_MAX]) {
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (!sbx_host_unprivileged()) {
                /* As root the command runs as the policy's run_as uid: try exactly that mapping. */
                sbx_policy *pol = NULL;
                uid = gid = 65534;
                if (sbx_policy_load(doctor_policy, &pol, NULL) >= 0 && pol) {
                        uid = gid = pol->run_as;
                        sbx_policy_free(pol);
                }
        }

        for (int i = 0; i < _F_MAX; i++) {
                int r;
                switch (i) {
                case F_NAMESPACES:
                        r = sbx_probe_namespaces(uid, gid, &res[i]);
                        break;
                case F_LANDLOCK:
                        r = sbx_probe_landlock(&res[i]);
                        break;
                case F_SECCOMP:
                        r = sbx_probe_seccomp(&res[i]);
                        break;
                case F_SECCOMP_NOTIFY:
                        r = sbx_probe_seccomp_notify(&res[i]);
                        break;
                case F_NO_NEW_PRIVS:
                        r = sbx_probe_no_new_privs(&res[i]);
                        break;
                case F_LANDLOCK_AUDIT:
                        r = sbx_probe_landlock_audit(&res[i]);
                        break;
                case F_PIDFD_OPEN:
                        r = sbx_probe_pidfd_open(&res[i]);
                        break;
                case F_CLONE3:
                        r = sbx_probe_clone3(&res[i]);
                        break;
                case F_CLOSE_RANGE:
                        r = sbx_probe_close_range(&res[i]);
                        break;
                case F_OPENAT2:
                        r = sbx_probe_openat2(&res[i]);
                        break;
                case F_MOUNT_SETATTR:
                        r = sbx_probe_mount_setattr(&res[i]);
                        break;
                case F_CGROUP:
                        r = sbx_probe_cgroup(&res[i]);
                        break;
                case F_CGROUP_MEMORY:
                        r = sbx_probe_cgroup_controller("memory", &res[i]);
                        break;
                case F_CGROUP_PIDS:
                        r = sbx_probe_cgroup_controller("pids", &res[i]);
                        break;
                case F_CGROUP_CPU:
                        r = sbx_probe_cgroup_controller("cpu", &res[i]);
                        break;
                case F_CGROUP_FREEZER:
                        r = sbx_probe_cgroup_controller("freezer", &res[i]);
                        break;
                case F_SYSCALLS_32BIT:
                        r = sbx_probe_syscalls_32bit(&res[i]);
                        break;
                default:
                        r = -EINVAL;
                        break;
                }
                if (r < 0) {
                        res[i] = (sbx_probe_result){.available = false, .errnum = -r};
                        snprintf(res[i].detail, sizeof res[i].detail, "the probe could not run: %s",
                                strerror(-r));
                }
        }
}

/* First executable `name` in $PATH, into buf; false if none. */
static bool find_in_path(const char *name, char *buf, size_t size) {
        const char *path = getenv("PATH");
        if (isempty(path))
                path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        for (const char *p = path; *p;) {
                size_t l = strcspn(p, ":");
                if (l > 0 && (size_t) snprintf(buf, size, "%.*s/%s", (int) l, p, name) < size &&
                        access(buf, X_OK) == 0)
                        return true;
                p += l;
                if (*p == ':')
                        p++;
        }
        return false;
}

/* Append "; more" (or "more" when empty). */
static void append(char *buf, size_t size, const char *more) {
        size_t l = strlen(buf);
        if (l < size)
                snprintf(buf + l, size - l, "%s%s", l ? "; " : "", more);
}

/* What the host lacks for backend `id`, into missing (empty when nothing). `found` describes
 * what is there (for a backend that is not implemented yet). */
static void requirements(sbx_backend_id id, const sbx_probe_result res[_F_MAX], char *missing, size_t msize,
        char *found, size_t fsize, bool *ret_tool_missing) {
        char path[4096], b[1100];
        const char *binary = NULL;
        missing[0] = found[0] = 0;
        *ret_tool_missing = false;

        switch (id) {
        case SBX_BACKEND_NATIVE:
                if (!res[F_NAMESPACES].available) {
                        snprintf(b, sizeof b, "namespaces: %s", res[F_NAMESPACES].detail);
                        append(missing, msize, b);
                }
                if (!res[F_SECCOMP].available) {
                        snprintf(b, sizeof b, "seccomp: %s", res[F_SECCOMP].detail);
                        append(missing, msize, b);
                }
                snprintf(found, fsize, "namespaces and mounts work, seccomp filters");
                return;
        case SBX_BACKEND_LANDLOCK:
                if (!res[F_LANDLOCK].available) {
                        snprintf(b, sizeof b, "landlock: %s", res[F_LANDLOCK].detail);
                        append(missing, msize, b);
                }
                if (!res[F_SECCOMP].available) {
                        snprintf(b, sizeof b, "seccomp: %s", res[F_SECCOMP].detail);
                        append(missing, msize, b);
                }
                if (!res[F_NO_NEW_PRIVS].available) {
                        snprintf(b, sizeof b, "no_new_privs: %s", res[F_NO_NEW_PRIVS].detail);
                        append(missing, msize, b);
                }
                snprintf(found, fsize, "the kernel has what it needs (%s, seccomp, no_new_privs)",
                        res[F_LANDLOCK].detail);
                return;
        case SBX_BACKEND_BWRAP:
                binary = "bwrap";
                break;
        case SBX_BACKEND_FIREJAIL:
                binary = "firejail";
                break;
        case SBX_BACKEND_PODMAN:
                binary = "podman";
                break;
        case SBX_BACKEND_DOCKER:
                binary = "docker";
                break;
        case SBX_BACKEND_MICROVM:
                binary = "qemu-system-x86_64";
                break;
        case SBX_BACKEND_AUTO:
        case _SBX_BACKEND_MAX:
        case _SBX_BACKEND_INVALID:
        default:
                return;
        }

        if (find_in_path(binary, path, sizeof path)) {
                snprintf(found, fsize, "%s found at %.1024s", binary, path);
                struct stat st;
                bool setuid_root = stat(path, &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0;
                bool nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
                /* bwrap makes its namespaces as the caller (Debian's is not setuid): what the trial
                 * child could not do, bwrap cannot either */
                if (id == SBX_BACKEND_BWRAP && !res[F_NAMESPACES].available && !(setuid_root && !nnp)) {
                        snprintf(b, sizeof b, "namespaces: %s", res[F_NAMESPACES].detail);
                        append(missing, msize, b);
                }
                /* firejail gains root from its setuid bit, which no_new_privs (inherited from a
                 * container or another sandbox) makes void; and a filter that refuses namespaces
                 * refuses them to root as well */
                if (id == SBX_BACKEND_FIREJAIL && sbx_host_unprivileged() && nnp)
                        append(missing, msize,
                                "no_new_privs is set on this process (inherited from a container or another "
                                "sandbox): firejail's setuid bit cannot give it the privileges it needs; "
                                "run as "
                                "root, or use --backend landlock");
                if (id == SBX_BACKEND_FIREJAIL && !res[F_NAMESPACES].available &&
                        strstr(res[F_NAMESPACES].detail, "seccomp filter")) {
                        snprintf(b, sizeof b, "namespaces: %s", res[F_NAMESPACES].detail);
                        append(missing, msize, b);
                }
        } else {
                snprintf(b, sizeof b, "%s not found in PATH", binary);
                append(missing, msize, b);
                *ret_tool_missing = true;
        }
}

static void check_backends(
        const sbx_probe_result res[_F_MAX], backend_line lines[_SBX_BACKEND_MAX], size_t *ret_n) {
        size_t n = 0;
        for (sbx_backend_id id = SBX_BACKEND_NATIVE; id < _SBX_BACKEND_MAX; id++) {
                backend_line *bl = &lines[n++];
                const sbx_backend *b = sbx_backend_get(id);
                char missing[2048], found[1200];
                bool tool_missing;

                *bl = (backend_line){.name = sbx_backend_to_string(id), .cause = CAUSE_HOST};
                requirements(id, res, missing, sizeof missing, found, sizeof found, &tool_missing);

                if (!b || !b->implemented) {
                        bl->cause = CAUSE_NOT_IMPLEMENTED;
                        /* Say so; do not pretend (DESIGN.md). */
                        if (missing[0])
                                snprintf(bl->reason, sizeof bl->reason,
                                        "not implemented in this build of sandboxer; the host also lacks: "
                                        "%s",
                                        missing);
                        else
                                snprintf(bl->reason, sizeof bl->reason,
                                        "not implemented in this build of sandboxer (%s)",
                                        found[0] ? found : "nothing to probe");
                        continue;
                }
                if (missing[0]) {
                        snprintf(bl->reason, sizeof bl->reason, "%s", missing);
                        if (tool_missing)
                                bl->cause = CAUSE_TOOL_MISSING;
                        continue;
                }
                if (b->probe) {
                        char why[512] = "";
                        if (b->probe(why, sizeof why) < 0) {
                                snprintf(bl->reason, sizeof bl->reason, "%s",
                                        why[0] ? why : "its own probe failed");
                                continue;
                        }
                }
                /* what the site policy allows of it (the microvm backend's emulation, kernel) */
                char accel[600] = "";
                if (b->probe_policy) {
                        sbx_policy *pol = NULL;
                        char why[512] = "";
                        int r = sbx_policy_load(doctor_policy, &pol, NULL);
                        if (r >= 0 && pol) {
                                r = b->probe_policy(pol, why, sizeof why);
                                if (r >= 0 && id == SBX_BACKEND_MICROVM)
                                        (void) sbx_microvm_accel(pol, accel, sizeof accel);
                        }
                        sbx_policy_free(pol);
                        if (r < 0) {
                                snprintf(bl->reason, sizeof bl->reason, "%s",
                                        why[0] ? why : "the site policy could not be read");
                                continue;
                        }
                }
                bl->available = true;
                bl->cause = CAUSE_NONE;
                snprintf(bl->reason, sizeof bl->reason, "ready: %s%s%s (isolation level %s)", found,
                        accel[0] ? "; " : "", accel, sbx_level_to_string(b->level));
        }
        *ret_n = n;
}

/* What `serve`'s persistence can use here: a freezer for pause (a cgroup2 group of the
 * sandbox's own, or the v1 freezer, usable by this user), and a checkpointer for memory across a
 * host restart (CRIU: found or not; sandboxer does not use it — Debian 12's 3.17 fails on these
 * kernels — so a paused sandbox's memory lives as long as its supervisor). */
static void persistence_facts(bool *freezer, char *fdetail, size_t fsize, char *cdetail, size_t csize) {
        sbx_cgroup_probe_result p = {0};
        *freezer = false;
        if (sbx_cgroup_probe("/sys/fs/cgroup", NULL, &p) >= 0) {
                bool v2 = p.v2.usable && p.v2.real, v1 = p.ctl[SBX_CG_FREEZER].usable &&
                                                         p.ctl[SBX_CG_FREEZER].real &&
                                                         p.ctl[SBX_CG_FREEZER].version == SBX_CG_V1;
                *freezer = v2 || v1;
                snprintf(fdetail, fsize, "%s",
                        v2   ? "cgroup2 cgroup.freeze (a group of each sandbox's own): pause and snapshots"
                        : v1 ? "the v1 freezer: pause and snapshots"
                             : "no cgroup this user may freeze: pause is refused, snapshots read running "
                               "sandboxes");
                sbx_cgroup_probe_result_done(&p);
        } else
                snprintf(fdetail, fsize, "the cgroups could not be probed: pause is refused");
        const char *path = getenv("PATH");
        char found[PATH_MAX] = "";
        for (const char *d = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin"; *d && !found[0];) {
                const char *c = strchr(d, ':');
                size_t l = c ? (size_t) (c - d) : strlen(d);
                char cand[PATH_MAX];
                snprintf(cand, sizeof cand, "%.*s/criu", (int) l, d);
                if (access(cand, X_OK) == 0)
                        snprintf(found, sizeof found, "%s", cand);
                d += l + (c ? 1 : 0);
        }
        snprintf(cdetail, csize,
                "%s%s: memory is not kept across a host restart (a paused sandbox's memory lives with its "
                "supervisor; snapshots keep files)",
                found[0] ? "CRIU at " : "no CRIU", found[0] ? found : "");
}

static int print_json(const char *kernel, int landlock_abi, const sbx_probe_result res[_F_MAX],
        const backend_line *lines, size_t n) {
        _cleanup_jsonw_ jsonw w;
        _cleanup_free_ char *text = NULL;

        jsonw_init(&w, true);
        jsonw_begin_object(&w);
        jsonw_key(&w, "build");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "version", SBX_VERSION);
        jsonw_kv_string(&w, "libc", CLI_LIBC);
        /* hooks only tests use (-Dtest_hooks): a build people run has none */
        jsonw_kv_bool(&w, "test_hooks", SBX_TEST_HOOKS);
        jsonw_end_object(&w);
        jsonw_kv_string(&w, "kernel", kernel);
        if (landlock_abi >= 0)
                jsonw_kv_int(&w, "landlock_abi", landlock_abi);
        else
                jsonw_kv_null(&w, "landlock_abi");
        jsonw_kv_string(&w, "cgroup", sbx_cgroup_layout_to_string(sbx_host_cgroup_layout()));
        jsonw_kv_bool(&w, "unprivileged", sbx_host_unprivileged());

        jsonw_key(&w, "features");
        jsonw_begin_object(&w);
        for (int i = 0; i < _F_MAX; i++) {
                jsonw_key(&w, feature_names[i]);
                jsonw_begin_object(&w);
                jsonw_kv_bool(&w, "available", res[i].available);
                jsonw_kv_string(&w, "detail", res[i].detail);
                if (!res[i].available && res[i].errnum > 0) {
                        jsonw_kv_string(&w, "step", res[i].step[0] ? res[i].step : NULL);
                        jsonw_kv_string(&w, "errno", sbx_errno_name(res[i].errnum));
                }
                jsonw_end_object(&w);
        }
        jsonw_end_object(&w);

        bool fz;
        char fdetail[200], cdetail[PATH_MAX + 200];
        persistence_facts(&fz, fdetail, sizeof fdetail, cdetail, sizeof cdetail);
        jsonw_key(&w, "persistence");
        jsonw_begin_object(&w);
        jsonw_key(&w, "freezer");
        jsonw_begin_object(&w);
        jsonw_kv_bool(&w, "available", fz);
        jsonw_kv_string(&w, "detail", fdetail);
        jsonw_end_object(&w);
        jsonw_key(&w, "checkpoint");
        jsonw_begin_object(&w);
        jsonw_kv_bool(&w, "available", false);
        jsonw_kv_string(&w, "detail", cdetail);
        jsonw_end_object(&w);
        jsonw_end_object(&w);

        jsonw_key(&w, "backends");
        jsonw_begin_object(&w);
        for (size_t i = 0; i < n; i++) {
                jsonw_key(&w, lines[i].name);
                jsonw_begin_object(&w);
                jsonw_kv_bool(&w, "available", lines[i].available);
                jsonw_kv_string(&w, "reason", lines[i].reason);
                jsonw_kv_string(&w, "cause", cause_names[lines[i].cause]);
                const sbx_backend *b = sbx_backend_get(sbx_backend_from_string(lines[i].name));
                jsonw_kv_bool(&w, "implemented", b && b->implemented);
                jsonw_kv_string(&w, "level", b ? sbx_level_to_string(b->level) : NULL);
                /* persistence is a capability of the backend (serve's sandboxes) */
                jsonw_key(&w, "persistent");
                jsonw_begin_object(&w);
                jsonw_kv_bool(&w, "yes", b && b->start);
                jsonw_kv_string(&w, "how",
                        b && b->start         ? "the init serves execs in the running sandbox"
                        : b && b->persist_why ? b->persist_why
                                              : "not implemented");
                jsonw_end_object(&w);
                jsonw_key(&w, "capabilities");
                jsonw_begin_object(&w);
                for (int c = 0; c < _SBX_CAP_MAX; c++) {
                        const sbx_cap_decl *d = sbx_backend_cap(b, (sbx_cap) c);
                        jsonw_key(&w, sbx_cap_to_string((sbx_cap) c));
                        jsonw_begin_object(&w);
                        jsonw_kv_bool(&w, "yes", d->yes);
                        jsonw_kv_string(&w, "how", d->how);
                        jsonw_end_object(&w);
                }
                jsonw_end_object(&w);
                jsonw_end_object(&w);
        }
        jsonw_end_object(&w);
        jsonw_end_object(&w);

        int r = jsonw_finish(&w, true, &text, NULL);
        if (r < 0) {
                cli_error("cannot format the doctor report: %s", strerror(-r));
                return r;
        }
        fputs(text, stdout);
        return 0;
}

static void print_table(const char *kernel, int landlock_abi, const sbx_probe_result res[_F_MAX],
        const backend_line *lines, size_t n) {
        int w = (int) strlen("FEATURE");
        for (int i = 0; i < _F_MAX; i++)
                w = MAX(w, (int) strlen(feature_names[i]));
        for (size_t i = 0; i < n; i++)
                w = MAX(w, (int) strlen(lines[i].name));

        printf("sandboxer %s (this CLI linked against %s)\n", SBX_VERSION, CLI_LIBC);
        printf("kernel %s, Landlock ABI %d, cgroup %s, running as %s\n\n", kernel, landlock_abi,
                sbx_cgroup_layout_to_string(sbx_host_cgroup_layout()),
                sbx_host_unprivileged() ? "an ordinary user" : "root");
        printf("%-*s  %-6s  %s\n", w, "FEATURE", "STATUS", "DETAIL");
        for (int i = 0; i < _F_MAX; i++)
                printf("%-*s  %-6s  %s\n", w, feature_names[i], res[i].available ? "yes" : "no",
                        res[i].detail);
        bool fz;
        char fdetail[200], cdetail[PATH_MAX + 200];
        persistence_facts(&fz, fdetail, sizeof fdetail, cdetail, sizeof cdetail);
        printf("%-*s  %-6s  %s\n", w, "freezer", fz ? "yes" : "no", fdetail);
        printf("%-*s  %-6s  %s\n", w, "checkpoint", "no", cdetail);
        printf("\n%-*s  %-6s  %s\n", w, "BACKEND", "STATUS", "REASON");
        for (size_t i = 0; i < n; i++)
                printf("%-*s  %-6s  %s\n", w, lines[i].name, lines[i].available ? "yes" : "no",
                        lines[i].reason);

        /* What each backend declares it enforces, limits and observes (docs/backends.md says
         * why for each "no"). */
        int cw = (int) strlen("CAPABILITY");
        for (int c = 0; c < _SBX_CAP_MAX; c++)
                cw = MAX(cw, (int) strlen(sbx_cap_to_string((sbx_cap) c)));
        printf("\n%-*s", cw, "CAPABILITY");
        for (size_t i = 0; i < n; i++)
                printf("  %-10s", lines[i].name);
        printf("\n%-*s", cw, "level");
        for (size_t i = 0; i < n; i++) {
                const sbx_backend *b = sbx_backend_get(sbx_backend_from_string(lines[i].name));
                printf("  %-10s", b && b->implemented ? sbx_level_to_string(b->level) : "-");
        }
        printf("\n");
        for (int c = 0; c < _SBX_CAP_MAX; c++) {
                printf("%-*s", cw, sbx_cap_to_string((sbx_cap) c));
                for (size_t i = 0; i < n; i++) {
                        const sbx_backend *b = sbx_backend_get(sbx_backend_from_string(lines[i].name));
                        printf("  %-10s", !b || !b->implemented                  ? "-"
                                          : sbx_backend_cap(b, (sbx_cap) c)->yes ? "yes"
                                                                                 : "no");
                }
                printf("\n");
        }
        printf("(- = not implemented; `sandboxer doctor --json` and docs/backends.md give each reason)\n");
}

int verb_doctor(int argc, char **argv) {
        bool json = false;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--json"))
                        json = true;
                else if (streq(argv[i], "--policy") && i + 1 < argc) {
                        doctor_policy = argv[++i];
                        sbx_policy *pol = NULL;
                        sbx_error pe = {0};
                        if (sbx_policy_load(doctor_policy, &pol, &pe) < 0) {
                                cli_error("doctor: %s", pe.message);
                                return SBX_EXIT_FAILURE;
                        }
                        sbx_policy_free(pol);
                } else if (streq(argv[i], "--policy")) {
                        cli_error("doctor: --policy needs a FILE");
                        return SBX_EXIT_FAILURE;
                } else if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
                        help();
                        return 0;
                } else {
                        cli_error("doctor: unknown argument '%s'; usage: sandboxer doctor [--json] "
                                  "[--policy FILE]",
                                argv[i]);
                        return SBX_EXIT_FAILURE;
                }
        }

        char kernel[128] = "unknown";
        (void) sbx_host_kernel_release(kernel, sizeof kernel);
        int abi = sbx_host_landlock_abi();

        sbx_probe_result res[_F_MAX];
        backend_line lines[_SBX_BACKEND_MAX];
        size_t n = 0;
        probe_all(res);
        check_backends(res, lines, &n);

        if (json) {
                if (print_json(kernel, abi, res, lines, n) < 0)
                        return SBX_EXIT_FAILURE;
        } else
                print_table(kernel, abi, res, lines, n);
        fflush(stdout);

        for (size_t i = 0; i < n; i++)
                if (lines[i].available)
                        return 0;
        return 1;
}
