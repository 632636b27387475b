/* cgroup-probe.c — what the host offers a sandbox: the layout (v1, v2, hybrid), for each
 * controller its hierarchy, our own group there, and whether we may make groups below it (root,
 * or a delegated group), with the reason and the fix where not. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "basic/strv.h"
#include "isolate/cgroup-internal.h"

/* ---- probe ---- */

static void controller_probe_done(sbx_cgroup_controller_probe *c) {
        free(c->mount);
        free(c->own);
        free(c->base);
        *c = (sbx_cgroup_controller_probe){};
}

void sbx_cgroup_probe_result_done(sbx_cgroup_probe_result *p) {
        if (!p)
                return;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                controller_probe_done(&p->ctl[i]);
        controller_probe_done(&p->v2);
        free(p->root);
        p->root = NULL;
}

static void set_reason(sbx_cgroup_controller_probe *c, int errnum, const char *fmt, ...) _printf_(3, 4);
static void set_reason(sbx_cgroup_controller_probe *c, int errnum, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, sizeof c->reason, fmt, ap);
        va_end(ap);
        c->errnum = errnum < 0 ? -errnum : errnum;
        c->usable = false;
}

static int controller_probe_fill(
        sbx_cgroup_controller_probe *c, sbx_cg_version v, const char *mount, const char *own, bool real) {
        c->version = v;
        c->real = real;
        c->mount = strdup(mount);
        c->own = strdup(own);
        if (!c->mount || !c->own)
                return -ENOMEM;
        _cleanup_free_ char *owndir = NULL;
        if (cg_path_join(&owndir, mount, own) < 0 || cg_path_join(&c->base, owndir, CG_BASE_NAME) < 0)
                return -ENOMEM;
        return 0;
}

static bool own_is_user_delegated(const char *own) {
        return strstr(own, "/user@") != NULL;
}

/* Can we create groups under c->base? Sets usable or the reason. */
static int check_writable(sbx_cgroup_controller_probe *c, const char *what) {
        _cleanup_free_ char *owndir = NULL;
        if (cg_path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        /* The base first: it normally exists (it is kept between runs), and may be delegated
         * even where our own cgroup is not writable. One faccessat() in the common case. */
        const char *dir = c->base;
        int k = faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS);
        if (k < 0 && errno == ENOENT) {
                dir = owndir;
                k = faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS);
                if (k < 0 && errno == ENOENT) {
                        set_reason(c, ENOENT,
                                "%s: this process's cgroup %s is not visible under %s (a container without "
                                "its own cgroup namespace?)",
                                what, c->own, c->mount);
                        return 0;
                }
        }
        if (k < 0) {
                int err = errno;
                if (geteuid() != 0 && c->version == SBX_CG_V2 && !own_is_user_delegated(c->own))
                        set_reason(c, err,
                                "%s: %s is not writable (%s) and is not in the user's delegated subtree "
                                "(user@%u.service); run under a delegated scope: systemd-run --user --scope "
                                "-p Delegate=yes sandboxer ...",
                                what, dir, strerror(err), (unsigned) geteuid());
                else if (geteuid() != 0)
                        set_reason(c, err,
                                "%s: %s is not writable (%s); run sandboxer as root, or delegate this "
                                "cgroup "
                                "to uid %u",
                                what, dir, strerror(err), (unsigned) geteuid());
                else
                        set_reason(c, err,
                                "%s: %s is not writable (%s); mount the cgroup filesystem read-write", what,
                                dir, strerror(err));
                return 0;
        }
        c->usable = true;
        return 0;
}

/* v2 domain controllers: the "no internal processes" rule. Our own cgroup must either delegate
 * the controller to its children already, be the root, or hold no processes (then we may enable
 * it); if it holds only us, we can move into a leaf (move_self). */
static int check_v2_subtree(sbx_cgroup_controller_probe *c, const char *name) {
        _cleanup_free_ char *owndir = NULL;
        if (cg_path_join(&owndir, c->mount, c->own) < 0)
                return -ENOMEM;
        if (cg_word_at(owndir, "cgroup.subtree_control", name))
                return 0;
        bool is_root = streq(c->own, "/");
        if (!is_root) {
                _cleanup_free_ char *procs = NULL;
                (void) cg_read_at(owndir, "cgroup.procs", &procs);
                size_t n = 0;
                bool only_self = true;
                for (char *l = procs; l && *l;) {
                        size_t len = strcspn(l, "\n");
                        if (len > 0) {
                                n++;
                                if (strtol(l, NULL, 10) != (long) getpid())
                                        only_self = false;
                        }
                        l += len;
                        if (*l)
                                l++;
                }
                if (n > 0 && !only_self) {
                        set_reason(c, EBUSY,
                                "cgroup v2 %s: %s holds processes and does not delegate %s to child cgroups "
                                "(no internal processes rule); run sandboxer alone in a delegated scope: "
                                "systemd-run %s--scope -p Delegate=yes sandboxer ...",
                                name, c->own, name, geteuid() == 0 ? "" : "--user ");
                        return 0;
                }
                if (n > 0) {
                        c->move_self = true;
                        snprintf(c->reason, sizeof c->reason,
                                "cgroup v2 %s: %s holds this process and does not delegate %s to child "
                                "cgroups "
                                "(no internal processes rule); sandboxer must move itself into a leaf "
                                "cgroup "
                                "(or run under: systemd-run %s--scope -p Delegate=yes sandboxer ...)",
                                name, c->own, name, geteuid() == 0 ? "" : "--user ");
                }
        }
        _cleanup_free_ char *sc = NULL;
        if (cg_path_join(&sc, owndir, "cgroup.subtree_control") < 0)
                return -ENOMEM;
        if (faccessat(AT_FDCWD, sc, W_OK, AT_EACCESS) < 0 && errno != ENOENT) {
                int err = errno;
                set_reason(c, err,
                        "cgroup v2 %s: cannot enable it for child cgroups: %s is not writable (%s); run "
                        "under a delegated scope: systemd-run %s--scope -p Delegate=yes sandboxer ...",
                        name, sc, strerror(err), geteuid() == 0 ? "" : "--user ");
        }
        return 0;
}

typedef struct v1_line {
        char *joined; /* "cpu,cpuacct" */
        char *path;
} v1_line;

int sbx_cgroup_probe(const char *root, const char *self_cgroup, sbx_cgroup_probe_result *ret) {
        _cleanup_free_ char *text = NULL, *v2_own = NULL, *v2_mount = NULL;
        v1_line v1[_SBX_CG_CONTROLLER_MAX] = {};
        sbx_cgroup_probe_result p = {};
        int r;

        if (!root || !ret)
                return -EINVAL;
        if (!self_cgroup) {
                r = cg_read_text("/proc/self/cgroup", &text);
                if (r < 0)
                        return r;
                self_cgroup = text;
        }
        p.root = strdup(root);
        if (!p.root)
                return -ENOMEM;

        /* "ID:CONTROLLERS:PATH" lines; "0::PATH" is cgroup2. */
        for (const char *l = self_cgroup; *l;) {
                size_t len = strcspn(l, "\n");
                const char *c1 = memchr(l, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t) (c1 + 1 - l)) : NULL;
                if (c2) {
                        size_t clen = (size_t) (c2 - c1 - 1);
                        const char *path = c2 + 1;
                        size_t plen = len - (size_t) (path - l);
                        if (clen == 0 && strncmp(l, "0:", 2) == 0) {
                                free(v2_own);
                                v2_own = strndup(path, plen);
                                if (!v2_own)
                                        goto oom;
                        }
                        for (size_t i = 0; clen > 0 && i < _SBX_CG_CONTROLLER_MAX; i++) {
                                /* is sbx_cg_controller_to_string(i) one of the comma-separated names? */
                                size_t nl = strlen(sbx_cg_controller_to_string(i));
                                for (const char *w = c1 + 1; w < c2;) {
                                        size_t wl = strcspn(w, ",:");
                                        if (wl == nl &&
                                                strncmp(w, sbx_cg_controller_to_string(i), nl) == 0 &&
                                                !v1[i].joined) {
                                                v1[i].joined = strndup(c1 + 1, clen);
                                                v1[i].path = strndup(path, plen);
                                                if (!v1[i].joined || !v1[i].path)
                                                        goto oom;
                                        }
                                        w += wl + 1;
                                }
                        }
                }
                l += len;
                if (*l)
                        l++;
        }

        /* The cgroup2 hierarchy: at the root (unified host) or at ROOT/unified (hybrid). statfs()
         * tells a real one at once; a fake tree (tests) is recognised by its files. */
        bool v2_real = false;
        if (cg_path_join(&v2_mount, root, "unified") < 0)
                goto oom;
        if (cg_fs_is(root, CGROUP2_SUPER_MAGIC)) {
                free(v2_mount);
                v2_mount = strdup(root);
                if (!v2_mount)
                        goto oom;
                v2_real = true;
        } else if (cg_fs_is(v2_mount, CGROUP2_SUPER_MAGIC))
                v2_real = true;
        else if (cg_exists_at(root, "cgroup.controllers")) {
                free(v2_mount);
                v2_mount = strdup(root);
                if (!v2_mount)
                        goto oom;
        } else if (!cg_exists_at(v2_mount, "cgroup.controllers"))
                v2_mount = (free(v2_mount), NULL);
        if (v2_mount && !v2_own)
                set_reason(&p.v2, ENOENT, "cgroup2: mounted at %s but /proc/self/cgroup has no 0:: line",
                        v2_mount);
        else if (v2_mount) {
                if (controller_probe_fill(&p.v2, SBX_CG_V2, v2_mount, v2_own, v2_real) < 0)
                        goto oom;
                if (check_writable(&p.v2, "cgroup2") < 0)
                        goto oom;
                /* cgroup.kill (5.14+) kills a whole group at once, stopped and frozen tasks too.
                 * The root cgroup has none, so ask the base (kept between runs), else our own. */
                if (p.v2.usable && p.v2.real)
                        p.v2_kill = cg_exists_at(p.v2.base, "cgroup.kill") ||
                                    (!streq(p.v2.own, "/") && cg_v2_own_has_kill(&p.v2));
        } else
                set_reason(&p.v2, ENOENT, "cgroup2: not mounted at %s or %s/unified", root, root);

        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                sbx_cgroup_controller_probe *c = &p.ctl[i];
                const char *name = sbx_cg_controller_to_string(i);
                char what[64];

                if (v1[i].joined) {
                        _cleanup_free_ char *mount = NULL;
                        bool real = false;
                        if (cg_path_join(&mount, root, v1[i].joined) < 0)
                                goto oom;
                        int m = cg_v1_mounted(mount, &real);
                        if (m == 0 && !streq(v1[i].joined, name)) {
                                free(mount);
                                if (cg_path_join(&mount, root, name) < 0)
                                        goto oom;
                                m = cg_v1_mounted(mount, &real);
                        }
                        if (m == 0) {
                                set_reason(c, ENOENT,
                                        "cgroup v1 %s: listed in /proc/self/cgroup but not mounted at %s/%s",
                                        name, root, v1[i].joined);
                                continue;
                        }
                        if (controller_probe_fill(c, SBX_CG_V1, mount, v1[i].path, real) < 0)
                                goto oom;
                        snprintf(what, sizeof what, "cgroup v1 %s", name);
                        if (check_writable(c, what) < 0)
                                goto oom;
                        continue;
                }
                if (p.v2.version != SBX_CG_V2) {
                        set_reason(c, ENOENT, "no %s controller: no cgroup v1 hierarchy has it and %s", name,
                                p.v2.reason);
                        continue;
                }
                if (i == SBX_CG_CPUACCT || i == SBX_CG_FREEZER) {
                        /* Core cgroup2 features: cpu.stat, cgroup.freeze, cgroup.kill. */
                        if (controller_probe_fill(c, SBX_CG_V2, p.v2.mount, p.v2.own, p.v2.real) < 0)
                                goto oom;
                        c->usable = p.v2.usable;
                        c->errnum = p.v2.errnum;
                        memcpy(c->reason, p.v2.reason, sizeof c->reason);
                        continue;
                }
                _cleanup_free_ char *owndir = NULL;
                if (cg_path_join(&owndir, p.v2.mount, p.v2.own) < 0)
                        goto oom;
                if (!cg_word_at(owndir, "cgroup.controllers", name)) {
                        set_reason(c, EOPNOTSUPP,
                                "no %s controller: cgroup2 does not offer it to %s (not in its "
                                "cgroup.controllers) "
                                "and no cgroup v1 hierarchy has it; %s",
                                name, p.v2.own,
                                geteuid() == 0
                                        ? "enable it in the parents' cgroup.subtree_control"
                                        : "run under a delegated scope: systemd-run --user --scope -p "
                                          "Delegate=yes sandboxer ...");
                        continue;
                }
                if (controller_probe_fill(c, SBX_CG_V2, p.v2.mount, p.v2.own, p.v2.real) < 0)
                        goto oom;
                snprintf(what, sizeof what, "cgroup v2 %s", name);
                if (check_writable(c, what) < 0)
                        goto oom;
                if (c->usable && check_v2_subtree(c, name) < 0)
                        goto oom;
        }

        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                free(v1[i].joined);
                free(v1[i].path);
        }
        *ret = p;
        return 0;
oom:
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++) {
                free(v1[i].joined);
                free(v1[i].path);
        }
        sbx_cgroup_probe_result_done(&p);
        return -ENOMEM;
}

const char *sbx_cgroup_probe_layout(const sbx_cgroup_probe_result *p) {
        bool any_v1 = false;
        for (size_t i = 0; i < _SBX_CG_CONTROLLER_MAX; i++)
                if (p->ctl[i].version == SBX_CG_V1)
                        any_v1 = true;
        if (p->v2.version == SBX_CG_V2)
                return any_v1 ? "hybrid" : "v2";
        return any_v1 ? "v1" : "none";
}
