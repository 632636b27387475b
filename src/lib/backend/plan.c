/* plan.c — the run plan (see plan.h): computed once, translated by each backend. */
#include "backend/plan.h"

#include <math.h>
#include <sys/stat.h>

#include "basic/strv.h"

/* One host path for a bind at target, resolved the one way every backend binds: absent (or a
 * dangling link) is missing; a symlink bound at its own path whose target the read paths cover
 * anyway stays a symlink, as on the host (/bin -> usr/bin); anything else binds its real path. */
static int resolve_bind(
        const char *host, const char *target, char *const *reads, sbx_bind *ret, sbx_error *e) {
        struct stat st;
        *ret = (sbx_bind){.kind = SBX_BIND_MISSING};
        if (lstat(host, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return sbx_error_set(e, errno, "mount plan", "cannot stat %s: %m", host);
        }
        ret->real = realpath(host, NULL);
        if (!ret->real) {
                if (errno == ENOENT) /* a dangling symlink */
                        return 0;
                return sbx_error_set(e, errno, "mount plan", "cannot resolve %s: %m", host);
        }
        ret->kind = SBX_BIND_PATH;
        if (S_ISLNK(st.st_mode) && streq(host, target) && reads && sbx_path_covered(reads, ret->real)) {
                char link[PATH_MAX];
                ssize_t n = readlink(host, link, sizeof link - 1);
                if (n < 0)
                        return sbx_error_set(e, errno, "mount plan", "cannot read link %s: %m", host);
                if (!(ret->link = strndup(link, (size_t) n)))
                        return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
                ret->link_len = (size_t) n;
                ret->kind = SBX_BIND_SYMLINK;
        }
        return 0;
}

/* Into the array plan_binds() sized for all of them. */
static int add_bind(sbx_run_plan *p, const char *host, const char *target, bool rw, bool workspace,
        char *const *reads, sbx_error *e) {
        sbx_plan_bind *b = &p->binds[p->n_binds++];
        *b = (sbx_plan_bind){.host = host, .target = target, .rw = rw, .workspace = workspace};
        return resolve_bind(host, target, reads, &b->at, e);
}

/* The workspace: where it is, whose it is, and whether this backend may use it. */
static int plan_workspace(const sbx_config *cfg, const sbx_plan_traits *t, sbx_run_plan *p, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        if (!cfg->workspace || pr->ws_access == SBX_ACCESS_NONE)
                return 0;
        p->ws = pr->ws_access;
        p->ws_host = cfg->workspace;
        p->ws_target = pr->ws_mount ? pr->ws_mount : "/workspace";
        p->ws_path = t->flags & SBX_PLAN_MOUNT_VIEW ? p->ws_target : p->ws_host;
        p->ws_rw = p->ws == SBX_ACCESS_RW ? p->ws_path : NULL;
        struct stat st;
        p->ws_real = realpath(cfg->workspace, NULL);
        if (!p->ws_real || stat(p->ws_real, &st) < 0)
                return sbx_error_set(
                        e, errno, "workspace", "cannot use the workspace %s: %m", cfg->workspace);
        p->ws_owner = st.st_uid;
        p->ws_group = st.st_gid;

        bool as_run_as = p->root || (t->flags & SBX_PLAN_RUN_AS);
        if (p->ws == SBX_ACCESS_RW && p->root && (t->flags & SBX_PLAN_WS_IDMAP)) {
                /* The idmapped mount gives run_as's writes to the owner: never to root. */
                if (p->ws_owner == 0)
                        return sbx_error_set(e, EPERM, "workspace",
                                "refusing a writable workspace owned by root (%s): the sandbox's files "
                                "would land on the host as root's; chown it to an ordinary user, or use "
                                "workspace.access: ro",
                                p->ws_real);
        } else if (p->ws == SBX_ACCESS_RW && as_run_as && p->ws_owner != p->uid)
                /* No idmapped mount: what the command writes lands as its uid. */
                return sbx_error_set(e, EPERM, "workspace",
                        "refusing a writable workspace on the %s backend: the command runs as uid %u and "
                        "what it writes would land owned by it, not by the workspace's owner (uid %u); %s",
                        t->backend, (unsigned) p->uid, (unsigned) p->ws_owner,
                        t->ws_owner_fix ? t->ws_owner_fix : "use --backend native");
        if (t->flags & SBX_PLAN_WS_REACH)
                return sbx_backend_check_reachable(p->ws_host, p->uid, p->gid, p->ws == SBX_ACCESS_RW, e);
        return 0;
}

/* The mount view: read paths sorted (parents first), write paths, the workspace; each resolved. */
static int plan_binds(const sbx_config *cfg, const sbx_plan_traits *t, sbx_run_plan *p, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        p->reads = strv_copy(pr->fs_read);
        if (!p->reads && pr->fs_read)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
#if SBX_TEST_HOOKS
        /* Test hook (-Dtest_hooks=true only): widen the mount view (read-only) WITHOUT a Landlock
         * rule, so tests can show that Landlock alone refuses what the mount setup would have
         * allowed. */
        const char *extra = secure_getenv("SANDBOXER_TEST_EXTRA_RO_BIND");
        if ((t->flags & SBX_PLAN_TEST_EXTRA_BIND) && extra && extra[0] == '/' &&
                strv_extend(&p->reads, extra) < 0)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
#endif
        sbx_backend_sort_paths(p->reads);
        p->binds = calloc(strv_length(p->reads) + strv_length(pr->fs_write) + 1, sizeof *p->binds);
        if (!p->binds)
                return sbx_error_set(e, ENOMEM, "mount plan", "out of memory");
        int r;
        STRV_FOREACH(i, p->reads)
                if ((r = add_bind(p, *i, *i, false, false, p->reads, e)) < 0)
                        return r;
        STRV_FOREACH(i, pr->fs_write)
                if ((r = add_bind(p, *i, *i, true, false, NULL, e)) < 0)
                        return r;
        if (p->ws != SBX_ACCESS_NONE &&
                (r = add_bind(p, p->ws_host, p->ws_target, p->ws == SBX_ACCESS_RW, true, NULL, e)) < 0)
                return r;
        return 0;
}

int sbx_run_plan_make(const sbx_config *cfg, const sbx_plan_traits *t, sbx_run_plan *ret, sbx_error *e) {
        *ret = (sbx_run_plan){0};
        ret->root = geteuid() == 0;
        bool as_run_as = ret->root || (t->flags & SBX_PLAN_RUN_AS);
        ret->uid = as_run_as ? cfg->policy->run_as : getuid();
        ret->gid = as_run_as ? cfg->policy->run_as : getgid();

        const sbx_limits *lim = &cfg->limits;
        ret->memory_bytes = sbx_limit_bytes(lim, SBX_LIMIT_MEMORY_MB);
        ret->scratch_bytes = sbx_limit_bytes(lim, SBX_LIMIT_SCRATCH_MB);
        ret->output_bytes = sbx_limit_bytes(lim, SBX_LIMIT_OUTPUT_MB);
        ret->pids = (uint64_t) lim->value[SBX_LIMIT_PIDS];
        ret->cpus = lim->value[SBX_LIMIT_CPUS];
        ret->home = cfg->profile->fs_home;

        int r = plan_workspace(cfg, t, ret, e);
        if (r < 0)
                return r;
        if (t->flags & SBX_PLAN_MOUNT_VIEW)
                return plan_binds(cfg, t, ret, e);
        return 0;
}

void sbx_run_plan_done(sbx_run_plan *p) {
        free(p->ws_real);
        for (size_t i = 0; i < p->n_binds; i++) {
                free(p->binds[i].at.real);
                free(p->binds[i].at.link);
        }
        free(p->binds);
        strv_free(p->reads);
        *p = (sbx_run_plan){0};
}

const char *sbx_run_plan_cwd(const sbx_config *cfg, const sbx_run_plan *p, const char *scratch) {
        return cfg->cwd ? cfg->cwd : p->home ? p->home : p->ws_path ? p->ws_path : scratch;
}

bool sbx_plan_bind_missing(sbx_report *rep, const sbx_plan_bind *b) {
        if (b->at.kind != SBX_BIND_MISSING)
                return false;
        (void) sbx_report_add_mount(rep, b->host, b->target, "missing");
        return true;
}
