/* test-plan.c — the run plan (backend/plan.h), decided once for every backend: identity, the
 * workspace and where the command finds it, the binds in order and resolved, limits in bytes,
 * and the refusals a backend's traits call for, as a table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/plan.h"
#include "basic/strv.h"
#include "tap.h"

static char dir[64];

typedef struct fixture {
        sbx_profile pr;
        sbx_policy pol;
        sbx_config cfg;
} fixture;

static void fixture_init(fixture *f, sbx_access ws, const char *workspace) {
        memset(f, 0, sizeof *f);
        f->pr.ws_access = ws;
        f->cfg.profile = &f->pr;
        f->cfg.policy = &f->pol;
        f->cfg.workspace = (char *) workspace;
        f->pol.run_as = 65534;
        f->cfg.limits.value[SBX_LIMIT_SCRATCH_MB] = 1.5;
        f->cfg.limits.value[SBX_LIMIT_MEMORY_MB] = 64;
        f->cfg.limits.value[SBX_LIMIT_OUTPUT_MB] = 0.5;
        f->cfg.limits.value[SBX_LIMIT_PIDS] = 32;
        f->cfg.limits.value[SBX_LIMIT_CPUS] = 0.5;
}

static void test_identity_limits(void) {
        fixture f;
        fixture_init(&f, SBX_ACCESS_NONE, NULL);
        sbx_run_plan p;
        sbx_error e = {0};
        sbx_plan_traits t = {.backend = "t"};
        bool root = geteuid() == 0;
        ok(sbx_run_plan_make(&f.cfg, &t, &p, &e) == 0, "a plan without a workspace");
        ok(p.root == root && p.uid == (root ? 65534u : getuid()) && p.gid == (root ? 65534u : getgid()),
                "identity: run_as as root, else the caller");
        ok(p.scratch_bytes == 2u * 1048576 && p.memory_bytes == 64u * 1048576 && p.output_bytes == 524288 &&
                        p.pids == 32 && p.cpus == 0.5,
                "limits in bytes once (scratch rounded up to whole MiB)");
        ok(p.ws == SBX_ACCESS_NONE && !p.ws_path && !p.ws_rw && p.n_binds == 0, "no workspace, no binds");
        is_str(sbx_run_plan_cwd(&f.cfg, &p, "/tmp"), "/tmp", "cwd: scratch");
        sbx_run_plan_done(&p);

        t.flags = SBX_PLAN_RUN_AS;
        ok(sbx_run_plan_make(&f.cfg, &t, &p, &e) == 0 && p.uid == 65534 && p.gid == 65534,
                "SBX_PLAN_RUN_AS: run_as whoever we are (an engine runs the command)");
        sbx_run_plan_done(&p);
}

static void test_binds(void) {
        char usr_share[] = "/usr/share", usr[] = "/usr", missing[128], wdir[128];
        snprintf(missing, sizeof missing, "%s/not-there", dir);
        snprintf(wdir, sizeof wdir, "%s/w", dir);
        char *reads[] = {usr_share, missing, usr, NULL};
        fixture f;
        fixture_init(&f, SBX_ACCESS_RO, wdir);
        f.pr.fs_read = reads;
        f.pr.ws_mount = (char *) "/work";
        sbx_run_plan p;
        sbx_error e = {0};
        sbx_plan_traits t = {.backend = "t", .flags = SBX_PLAN_MOUNT_VIEW};
        if (!ok(sbx_run_plan_make(&f.cfg, &t, &p, &e) == 0, "a mount-view plan")) {
                diag("%s", e.message);
                skip(6, "no plan");
                return;
        }
        ok(p.n_binds == 4, "three read paths and the workspace");
        /* sorted: /tmp/test-plan.../not-there, /usr, /usr/share */
        ok(p.n_binds == 4 && streq(p.binds[1].host, "/usr") && streq(p.binds[2].host, "/usr/share"),
                "read paths sorted, parents before children");
        ok(p.n_binds == 4 && p.binds[0].at.kind == SBX_BIND_MISSING &&
                        p.binds[1].at.kind != SBX_BIND_MISSING,
                "an absent path is resolved as missing");
        ok(p.n_binds == 4 && p.binds[3].workspace && !p.binds[3].rw && streq(p.binds[3].target, "/work") &&
                        p.binds[3].at.kind == SBX_BIND_PATH && streq(p.binds[3].at.real, wdir),
                "the workspace last, read-only, at workspace.mount, its real path");
        ok(streq(p.ws_path, "/work") && !p.ws_rw, "in a mount view the command finds it at workspace.mount");
        is_str(sbx_run_plan_cwd(&f.cfg, &p, "/tmp"), "/work", "cwd: the workspace");
        sbx_run_plan_done(&p);

        t.flags = 0;
        ok(sbx_run_plan_make(&f.cfg, &t, &p, &e) == 0 && p.n_binds == 0 && streq(p.ws_path, wdir),
                "without a mount view: no binds, the workspace at its host path");
        sbx_run_plan_done(&p);
}

/* The workspace refusals, as a table: traits and who owns it → the outcome. */
static void test_workspace_table(void) {
        char wdir[128];
        snprintf(wdir, sizeof wdir, "%s/w", dir);
        struct stat st;
        if (stat(wdir, &st) < 0) {
                skip(5, "no workspace");
                return;
        }
        bool root = geteuid() == 0;
        static const struct {
                const char *name;
                unsigned flags;
                bool chown_to_run_as; /* as root: the workspace is run_as's */
                int want_root, want_user;
                const char *message;
        } cases[] = {
                {"rw, idmapped, owned by root", SBX_PLAN_WS_IDMAP, false, -EPERM, 0, "owned by root"},
                {"rw, no idmap, not run_as's", 0, false, -EPERM, 0,
                        "refusing a writable workspace on the t backend"},
                {"rw, no idmap, run_as's", 0, true, 0, 0, NULL},
                {"rw, engine as run_as, not run_as's", SBX_PLAN_RUN_AS, false, -EPERM, -EPERM,
                        "use --backend native"},
                {"rw, reach check, run_as's", SBX_PLAN_WS_REACH, true, 0, 0, NULL},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                fixture f;
                fixture_init(&f, SBX_ACCESS_RW, wdir);
                if (!root)
                        f.pol.run_as = getuid() + 1; /* an engine's run_as: not the caller */
                if (root && chown(wdir, cases[i].chown_to_run_as ? 65534 : 0, 0) < 0) {
                        skip(1, "chown");
                        continue;
                }
                sbx_run_plan p;
                sbx_error e = {0};
                sbx_plan_traits t = {.backend = "t", .flags = cases[i].flags};
                int r = sbx_run_plan_make(&f.cfg, &t, &p, &e);
                int want = root ? cases[i].want_root : cases[i].want_user;
                ok(r == want && (r == 0 || !cases[i].message || strstr(e.message, cases[i].message)),
                        "%s: %s", cases[i].name, r == 0 ? "allowed" : e.message);
                sbx_run_plan_done(&p);
        }
        if (root)
                if (chown(wdir, 0, 0) < 0)
                        diag("chown back: %s", strerror(errno));
}

int main(void) {
        snprintf(dir, sizeof dir, "/tmp/test-plan.XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        char wdir[128];
        snprintf(wdir, sizeof wdir, "%s/w", dir);
        (void) mkdir(wdir, 0755);
        (void) chmod(dir, 0755);
        test_identity_limits();
        test_binds();
        test_workspace_table();
        (void) rmdir(wdir);
        (void) rmdir(dir);
        return done_testing();
}
