/* test-cgroup.c — cgroup v2 logic on a fake cgroupfs tree (plain files under a temp dir), cgroup
 * v1 for real on this host when root (OOM, pids, cpu quota, killing a stopped tree, destroy, gc),
 * and rlimit plans. Everything created is removed on every path. */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/strv.h"
#include "isolate/cgroup.h"
#include "isolate/rlimit.h"
#include "tap.h"

/* Paths here are short; buffers of PATH_MAX. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static char tmpdir[] = "/tmp/test-cgroup-XXXXXX";
static sbx_cgroup *live[16]; /* destroyed at exit whatever happened */

static void track(sbx_cgroup *cg) {
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                if (!live[i]) {
                        live[i] = cg;
                        return;
                }
}

static void done_cg(sbx_cgroup **cg) {
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                if (live[i] == *cg)
                        live[i] = NULL;
        *cg = sbx_cgroup_free(*cg);
}

static void cleanup_all(void) {
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                if (live[i]) {
                        (void) sbx_cgroup_destroy(live[i]);
                        live[i] = sbx_cgroup_free(live[i]);
                }
        char cmd[256];
        snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", tmpdir, tmpdir);
        if (tmpdir[strlen(tmpdir) - 1] != 'X' && system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static void reap_all(void) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

static void mkdirs(const char *path) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        (void) mkdir(buf, 0755);
                        *p = '/';
                }
        (void) mkdir(buf, 0755);
}

static void put(const char *dir, const char *file, const char *content) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        FILE *f = fopen(p, "we");
        if (!f)
                return;
        fputs(content, f);
        fclose(f);
}

/* Contents of dir/file with the trailing newline cut, in a static buffer ("<missing>" if absent). */
static const char *get(const char *dir, const char *file) {
        static char buf[4096];
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        FILE *f = fopen(p, "re");
        if (!f)
                return "<missing>";
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = 0;
        return buf;
}

static bool exists(const char *path) {
        struct stat st;
        return stat(path, &st) == 0;
}

/* A fake unified (v2) host: ROOT/cgroup.controllers and our own cgroup OWN below it. */
static void fake_v2(const char *root, const char *own, const char *own_controllers, const char *own_procs) {
        char d[4096];
        mkdirs(root);
        put(root, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        put(root, "cgroup.subtree_control", "cpu memory pids\n");
        put(root, "cgroup.procs", "1\n");
        snprintf(d, sizeof d, "%s%s", root, own);
        mkdirs(d);
        put(d, "cgroup.controllers", own_controllers);
        put(d, "cgroup.subtree_control", "");
        put(d, "cgroup.procs", own_procs);
}

static const char *OWN = "/user.slice/user-1000.slice/user@1000.service/app.slice/t.scope";

static void test_fake_v2(void) {
        char root[4096], self[512], owndir[4096], base[4096], leaf[4096];
        sbx_cgroup_probe_result p;
        sbx_error e = {};
        int r;

        snprintf(root, sizeof root, "%s/v2", tmpdir);
        snprintf(self, sizeof self, "0::%s\n", OWN);
        snprintf(owndir, sizeof owndir, "%s%s", root, OWN);
        snprintf(base, sizeof base, "%s/sandboxer", owndir);
        snprintf(leaf, sizeof leaf, "%s/sbx-1", base);
        fake_v2(root, OWN, "cpu memory pids\n", "");

        r = sbx_cgroup_probe(root, self, &p);
        is_int(r, 0, "v2 fake: probe");
        is_int(p.ctl[SBX_CG_MEMORY].version, SBX_CG_V2, "v2 fake: memory is v2");
        ok(p.ctl[SBX_CG_MEMORY].usable, "v2 fake: memory usable (%s)", p.ctl[SBX_CG_MEMORY].reason);
        ok(p.ctl[SBX_CG_PIDS].usable && p.ctl[SBX_CG_CPU].usable, "v2 fake: pids and cpu usable");
        ok(p.ctl[SBX_CG_FREEZER].usable && p.ctl[SBX_CG_CPUACCT].usable,
                "v2 fake: core freezer/cpuacct usable");
        ok(!p.ctl[SBX_CG_MEMORY].real, "v2 fake: not a real cgroupfs");
        is_str(p.ctl[SBX_CG_MEMORY].base, base, "v2 fake: base is own cgroup + /sandboxer");
        is_str(sbx_cgroup_probe_layout(&p), "v2", "v2 fake: layout v2");

        sbx_cgroup_limits lim = {.memory_bytes = 64u << 20, .pids = 10, .cpus = 0.5};
        sbx_cgroup *cg = NULL;
        r = sbx_cgroup_create(&p, "sbx-1", &lim, 0, 0, &cg, &e);
        is_int(r, 0, "v2 fake: create (%s)", e.message);
        if (r == 0) {
                track(cg);
                is_str(get(owndir, "cgroup.subtree_control"), "+memory +pids +cpu",
                        "v2 fake: own subtree_control enabled");
                is_str(get(base, "cgroup.subtree_control"), "+memory +pids +cpu",
                        "v2 fake: base subtree_control enabled");
                is_str(get(leaf, "memory.max"), "67108864", "v2 fake: memory.max");
                is_str(get(leaf, "memory.swap.max"), "0", "v2 fake: memory.swap.max 0");
                is_str(get(leaf, "memory.oom.group"), "1", "v2 fake: memory.oom.group 1");
                is_str(get(leaf, "pids.max"), "10", "v2 fake: pids.max");
                is_str(get(leaf, "cpu.max"), "50000 100000", "v2 fake: cpu.max quota period");
                for (int l = 0; l < _SBX_CG_LIMIT_MAX; l++)
                        is_int(sbx_cgroup_mechanism(cg, l), SBX_CG_V2, "v2 fake: %s by %s",
                                sbx_cg_limit_to_string(l),
                                sbx_cg_version_to_string(sbx_cgroup_mechanism(cg, l)));
                ok(sbx_cgroup_v2_fd(cg) >= 0, "v2 fake: v2 dir fd for CLONE_INTO_CGROUP");
                is_str(sbx_cgroup_path(cg, SBX_CG_MEMORY), leaf, "v2 fake: memory group path");

                /* Counters as the kernel writes them. */
                put(leaf, "memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
                put(leaf, "memory.peak", "67100000\n");
                put(leaf, "pids.current", "3\n");
                put(leaf, "pids.events", "max 2\n");
                put(leaf, "cpu.stat",
                        "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 0\n"
                        "nr_throttled 0\nthrottled_usec 17\n");
                sbx_cgroup_stats s;
                is_int(sbx_cgroup_stats_read(cg, &s), 0, "v2 fake: stats");
                ok(s.oom_kills == 1 && s.memory_max_hits == 7 && s.memory_peak_bytes == 67100000,
                        "v2 fake: memory.events oom_kill/max and memory.peak parsed");
                ok(s.pids_current == 3 && s.pids_peak == 3 && s.pids_refused == 2,
                        "v2 fake: pids current, peak (tracked, no pids.peak), events max");
                ok(s.cpu_usage_usec == 5000 && s.cpu_throttled_usec == 17,
                        "v2 fake: cpu.stat usage/throttled");

                /* pause: the core's cgroup.freeze (a fake tree: written, not waited on) */
                is_int(sbx_cgroup_freeze(cg, true, 100), 0, "v2 fake: freeze");
                is_str(get(leaf, "cgroup.freeze"), "1", "v2 fake: cgroup.freeze 1");
                is_int(sbx_cgroup_freeze(cg, false, 100), 0, "v2 fake: thaw");
                is_str(get(leaf, "cgroup.freeze"), "0", "v2 fake: cgroup.freeze 0");

                /* Same name again: refused, pointing at gc. */
                sbx_cgroup *dup = NULL;
                r = sbx_cgroup_create(&p, "sbx-1", &lim, 0, 0, &dup, &e);
                ok(r == -EEXIST && strstr(e.message, "gc"), "v2 fake: existing name refused (%s)",
                        e.message);
                ok(exists(leaf), "v2 fake: the failed create left the existing group alone");

                is_int(sbx_cgroup_destroy(cg), 0, "v2 fake: destroy");
                ok(!exists(leaf), "v2 fake: leaf removed");
                ok(exists(base), "v2 fake: shared base stays");
                done_cg(&cg);
        }

        ok(sbx_cgroup_create(&p, "../x", &lim, 0, 0, &cg, &e) == -EINVAL, "v2 fake: bad name refused");

        /* gc: a leftover of a killed run (freed, never destroyed). */
        r = sbx_cgroup_create(&p, "left-1", &lim, 0, 0, &cg, &e);
        is_int(r, 0, "v2 fake: create leftover");
        cg = sbx_cgroup_free(cg);
        char **names = NULL;
        sbx_cgroup_gc_options go = {.dry_run = true, .prefix = "left-"};
        r = sbx_cgroup_gc(&p, &go, &names);
        is_int(r, 1, "v2 fake: gc dry-run finds one");
        ok(names && streq(names[0], "left-1"), "v2 fake: gc names it");
        names = strv_free(names);
        snprintf(leaf, sizeof leaf, "%s/left-1", base);
        ok(exists(leaf), "v2 fake: dry-run removed nothing");
        go.min_age_s = 3600;
        go.dry_run = false;
        is_int(sbx_cgroup_gc(&p, &go, NULL), 0, "v2 fake: gc leaves young groups alone");
        go.min_age_s = 0;
        put(leaf, "cgroup.procs", "12345\n");
        is_int(sbx_cgroup_gc(&p, &go, NULL), 0, "v2 fake: gc leaves populated groups alone");
        put(leaf, "cgroup.procs", "");
        is_int(sbx_cgroup_gc(&p, &go, NULL), 1, "v2 fake: gc removes the leftover");
        ok(!exists(leaf), "v2 fake: leftover gone");
        sbx_cgroup_probe_result_done(&p);
}

static void test_fake_v2_missing(void) {
        char root[4096], self[512], leaf[4096];
        sbx_cgroup_probe_result p;
        sbx_error e = {};
        sbx_cgroup *cg = NULL;

        snprintf(root, sizeof root, "%s/v2-nopids", tmpdir);
        snprintf(self, sizeof self, "0::%s\n", OWN);
        fake_v2(root, OWN, "cpu memory\n", "");
        snprintf(leaf, sizeof leaf, "%s%s/sandboxer/sbx-2", root, OWN);

        is_int(sbx_cgroup_probe(root, self, &p), 0, "missing pids: probe");
        ok(!p.ctl[SBX_CG_PIDS].usable && p.ctl[SBX_CG_PIDS].version == SBX_CG_NONE,
                "missing pids: not usable");
        ok(strstr(p.ctl[SBX_CG_PIDS].reason, "pids") != NULL, "missing pids: reason names it (%s)",
                p.ctl[SBX_CG_PIDS].reason);

        sbx_cgroup_limits lim = {.memory_bytes = 1u << 20, .pids = 5};
        int r = sbx_cgroup_create(&p, "sbx-2", &lim, 0, 0, &cg, &e);
        ok(r == -EOPNOTSUPP, "missing pids: create fails closed (%d)", r);
        ok(strstr(e.message, "limits.pids") && strstr(e.message, "enforce.best_effort"),
                "missing pids: error names the limit and the fix: %s", e.message);
        ok(!exists(leaf), "missing pids: nothing created");

        e = (sbx_error){};
        r = sbx_cgroup_create(&p, "sbx-2", &lim, SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_PIDS), 0, &cg, &e);
        is_int(r, 0, "missing pids: best_effort pids → created (%s)", e.message);
        if (r == 0) {
                track(cg);
                is_int(sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_PIDS), SBX_CG_NONE,
                        "missing pids: mechanism none");
                is_int(sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_MEMORY), SBX_CG_V2,
                        "missing pids: memory still v2");
                is_int(sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_CPUS), SBX_CG_NONE,
                        "missing pids: cpus not requested");
                is_str(get(leaf, "pids.max"), "<missing>", "missing pids: no pids.max written");
                is_str(get(leaf, "memory.max"), "1048576", "missing pids: memory.max written");
                is_int(sbx_cgroup_destroy(cg), 0, "missing pids: destroy");
                ok(!exists(leaf), "missing pids: leaf removed");
                done_cg(&cg);
        }
        sbx_cgroup_probe_result_done(&p);
}

static void test_fake_v2_internal_procs(void) {
        char root[4096], self[512], owndir[4096], buf[64];
        sbx_cgroup_probe_result p;
        sbx_error e = {};
        sbx_cgroup *cg = NULL;
        sbx_cgroup_limits lim = {.memory_bytes = 1u << 20};

        /* Other processes in our own cgroup: controllers cannot be handed down. */
        snprintf(root, sizeof root, "%s/v2-busy", tmpdir);
        snprintf(self, sizeof self, "0::%s\n", OWN);
        fake_v2(root, OWN, "cpu memory pids\n", "1\n4242\n");
        is_int(sbx_cgroup_probe(root, self, &p), 0, "internal procs: probe");
        ok(!p.ctl[SBX_CG_MEMORY].usable && p.ctl[SBX_CG_MEMORY].errnum == EBUSY,
                "internal procs: memory unusable");
        ok(strstr(p.ctl[SBX_CG_MEMORY].reason, "no internal processes") &&
                        strstr(p.ctl[SBX_CG_MEMORY].reason, "Delegate=yes"),
                "internal procs: reason and fix: %s", p.ctl[SBX_CG_MEMORY].reason);
        ok(p.v2.usable, "internal procs: the v2 hierarchy itself is still usable for tracking");
        int r = sbx_cgroup_create(&p, "sbx-3", &lim, 0, 0, &cg, &e);
        ok(r < 0 && strstr(e.message, "limits.memory_mb"), "internal procs: create names the limit: %s",
                e.message);
        sbx_cgroup_probe_result_done(&p);

        /* Alone in our cgroup: usable after moving into a leaf, only when asked to. */
        snprintf(root, sizeof root, "%s/v2-alone", tmpdir);
        snprintf(buf, sizeof buf, "%d\n", (int) getpid());
        fake_v2(root, OWN, "cpu memory pids\n", buf);
        snprintf(owndir, sizeof owndir, "%s%s", root, OWN);
        is_int(sbx_cgroup_probe(root, self, &p), 0, "alone: probe");
        ok(p.ctl[SBX_CG_MEMORY].usable && p.ctl[SBX_CG_MEMORY].move_self, "alone: usable by moving self");
        r = sbx_cgroup_create(&p, "sbx-4", &lim, 0, 0, &cg, &e);
        ok(r < 0 && strstr(e.message, "leaf"), "alone: without MOVE_SELF refused: %s", e.message);
        e = (sbx_error){};
        r = sbx_cgroup_create(&p, "sbx-4", &lim, 0, SBX_CG_CREATE_MOVE_SELF, &cg, &e);
        is_int(r, 0, "alone: with MOVE_SELF created (%s)", e.message);
        if (r == 0) {
                track(cg);
                char leafdir[4096];
                snprintf(leafdir, sizeof leafdir, "%s/sandboxer/supervisor-%d", owndir, (int) getpid());
                snprintf(buf, sizeof buf, "%d", (int) getpid());
                is_str(get(leafdir, "cgroup.procs"), buf, "alone: moved self into supervisor leaf");
                is_str(get(owndir, "cgroup.subtree_control"), "+memory +pids +cpu",
                        "alone: own subtree enabled");
                sbx_cgroup_gc_options go = {.prefix = "supervisor-"};
                is_int(sbx_cgroup_gc(&p, &go, NULL), 0, "alone: gc keeps the supervisor leaf of a live pid");
                is_int(sbx_cgroup_destroy(cg), 0, "alone: destroy");
                done_cg(&cg);
        }
        sbx_cgroup_probe_result_done(&p);
}

static void test_fake_readonly(void) {
        char root[4096], self[512];
        snprintf(root, sizeof root, "%s/v2-ro", tmpdir);
        snprintf(self, sizeof self, "0::%s\n", OWN);
        fake_v2(root, OWN, "cpu memory pids\n", "");
        (void) chmod(tmpdir, 0755);

        pid_t pid = fork();
        if (pid == 0) {
                /* Root ignores modes: drop to nobody; otherwise make the tree read-only. */
                if (geteuid() == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(10);
                } else {
                        char d[4096];
                        snprintf(d, sizeof d, "%s%s", root, OWN);
                        if (chmod(d, 0555) < 0)
                                _exit(11);
                }
                sbx_cgroup_probe_result p;
                sbx_error e = {};
                sbx_cgroup *cg = NULL;
                if (sbx_cgroup_probe(root, self, &p) < 0)
                        _exit(1);
                if (p.ctl[SBX_CG_MEMORY].usable || !strstr(p.ctl[SBX_CG_MEMORY].reason, "not writable"))
                        _exit(2);
                sbx_cgroup_limits lim = {.memory_bytes = 1u << 20};
                int r = sbx_cgroup_create(&p, "sbx-ro", &lim, 0, 0, &cg, &e);
                if (r != -EACCES || !strstr(e.message, "limits.memory_mb"))
                        _exit(3);
                printf("#   read-only: %s\n", e.message);
                /* best_effort: created nothing writable, memory unenforced. */
                r = sbx_cgroup_create(&p, "sbx-ro", &lim, SBX_CG_LIMIT_BIT(SBX_CG_LIMIT_MEMORY), 0, &cg, &e);
                if (r != 0 || sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_MEMORY) != SBX_CG_NONE)
                        _exit(4);
                if (sbx_cgroup_kill(cg) != -EOPNOTSUPP)
                        _exit(5);
                sbx_cgroup_destroy(cg);
                sbx_cgroup_free(cg);
                sbx_cgroup_probe_result_done(&p);
                fflush(stdout);
                _exit(0);
        }
        int st = -1;
        (void) waitpid(pid, &st, 0);
        is_int(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0,
                "read-only tree: not usable with reason, create fails naming memory_mb, best_effort → none");
}

static void test_fake_v1(void) {
        char root[4096], d[4096], leaf[4096];
        sbx_cgroup_probe_result p;
        sbx_error e = {};
        sbx_cgroup *cg = NULL;
        const char *self = "5:cpu,cpuacct:/\n4:memory:/a/b\n3:pids:/\n2:freezer:/\n1:name=systemd:/x\n";

        snprintf(root, sizeof root, "%s/v1", tmpdir);
        const char *hier[] = {"cpu,cpuacct", "memory", "pids", "freezer"};
        for (size_t i = 0; i < ELEMENTSOF(hier); i++) {
                snprintf(d, sizeof d, "%s/%s", root, hier[i]);
                mkdirs(d);
                put(d, "cgroup.procs", "1\n");
        }
        snprintf(d, sizeof d, "%s/memory/a/b", root);
        mkdirs(d);

        is_int(sbx_cgroup_probe(root, self, &p), 0, "v1 fake: probe");
        is_str(sbx_cgroup_probe_layout(&p), "v1", "v1 fake: layout v1");
        ok(p.ctl[SBX_CG_CPU].version == SBX_CG_V1 && p.ctl[SBX_CG_CPUACCT].version == SBX_CG_V1,
                "v1 fake: cpu and cpuacct v1");
        ok(p.ctl[SBX_CG_CPU].base && p.ctl[SBX_CG_CPUACCT].base &&
                        streq(p.ctl[SBX_CG_CPU].base, p.ctl[SBX_CG_CPUACCT].base),
                "v1 fake: co-mounted cpu,cpuacct share one base");
        snprintf(d, sizeof d, "%s/memory/a/b/sandboxer", root);
        is_str(p.ctl[SBX_CG_MEMORY].base, d, "v1 fake: memory base under the nested own path");
        ok(p.v2.version == SBX_CG_NONE && !p.v2.usable, "v1 fake: no cgroup2");

        sbx_cgroup_limits lim = {.memory_bytes = 32u << 20, .pids = 5, .cpus = 1.5};
        int r = sbx_cgroup_create(&p, "sbx-v1", &lim, 0, 0, &cg, &e);
        is_int(r, 0, "v1 fake: create (%s)", e.message);
        if (r == 0) {
                track(cg);
                snprintf(leaf, sizeof leaf, "%s/memory/a/b/sandboxer/sbx-v1", root);
                is_str(get(leaf, "memory.limit_in_bytes"), "33554432", "v1 fake: memory.limit_in_bytes");
                is_str(get(leaf, "memory.memsw.limit_in_bytes"), "33554432", "v1 fake: memsw = memory");
                snprintf(leaf, sizeof leaf, "%s/cpu,cpuacct/sandboxer/sbx-v1", root);
                is_str(get(leaf, "cpu.cfs_quota_us"), "150000", "v1 fake: cfs quota for 1.5 cpus");
                is_str(get(leaf, "cpu.cfs_period_us"), "100000", "v1 fake: cfs period");
                snprintf(leaf, sizeof leaf, "%s/pids/sandboxer/sbx-v1", root);
                is_str(get(leaf, "pids.max"), "5", "v1 fake: pids.max");
                ok(sbx_cgroup_v2_fd(cg) < 0, "v1 fake: no v2 fd");
                /* pause: the v1 freezer's freezer.state */
                char fz[4096];
                snprintf(fz, sizeof fz, "%s/freezer/sandboxer/sbx-v1", root);
                is_int(sbx_cgroup_freeze(cg, true, 100), 0, "v1 fake: freeze");
                is_str(get(fz, "freezer.state"), "FROZEN", "v1 fake: freezer.state FROZEN");
                is_int(sbx_cgroup_freeze(cg, false, 100), 0, "v1 fake: thaw");
                is_str(get(fz, "freezer.state"), "THAWED", "v1 fake: freezer.state THAWED");
                for (int l = 0; l < _SBX_CG_LIMIT_MAX; l++)
                        is_int(sbx_cgroup_mechanism(cg, l), SBX_CG_V1, "v1 fake: %s by cgroup_v1",
                                sbx_cg_limit_to_string(l));
                is_int(sbx_cgroup_destroy(cg), 0, "v1 fake: destroy");
                ok(!exists(leaf), "v1 fake: groups removed");
                done_cg(&cg);
        }
        /* without a tracking group (a run, not a persistent sandbox): no freezer, pause refused */
        r = sbx_cgroup_create(&p, "sbx-v1n", &lim, 0, SBX_CG_CREATE_NO_TRACKING, &cg, &e);
        is_int(r, 0, "v1 fake: create without tracking (%s)", e.message);
        if (r == 0) {
                track(cg);
                is_int(sbx_cgroup_freeze(cg, true, 100), -EOPNOTSUPP,
                        "v1 fake: no freezer group: freeze refused");
                is_int(sbx_cgroup_destroy(cg), 0, "v1 fake: destroy");
                done_cg(&cg);
        }
        sbx_cgroup_probe_result_done(&p);
}

static void test_rlimit(void) {
        sbx_rlimit_plan plan;
        sbx_rlimit_plan_init(&plan);
        is_int(sbx_rlimit_plan_get(&plan, RLIMIT_CORE), 0, "rlimit: core 0 in every plan");
        is_int(sbx_rlimit_plan_pids(&plan, 5, false), -EOPNOTSUPP,
                "rlimit: NPROC refused without own uid/userns");
        is_int(sbx_rlimit_plan_pids(&plan, 5, true), 0, "rlimit: NPROC planned");
        is_int(sbx_rlimit_plan_memory(&plan, 64u << 20, false), -EOPNOTSUPP,
                "rlimit: AS refused when spawning");
        is_int(sbx_rlimit_plan_memory(&plan, 64u << 20, true), 0, "rlimit: AS planned");
        is_int(sbx_rlimit_plan_get(&plan, RLIMIT_AS), 64u << 20, "rlimit: AS value");

#ifdef __SANITIZE_ADDRESS__
        skip(1, "rlimit: RLIMIT_AS cannot be tested under AddressSanitizer (it maps terabytes of shadow)");
        return;
#endif
        pid_t pid = fork();
        if (pid == 0) {
                int failed = -1;
                if (sbx_rlimit_apply(&plan, &failed) < 0)
                        _exit(1);
                struct rlimit rl;
                if (getrlimit(RLIMIT_CORE, &rl) < 0 || rl.rlim_cur != 0 || rl.rlim_max != 0)
                        _exit(2);
                if (getrlimit(RLIMIT_AS, &rl) < 0 || rl.rlim_cur != (64u << 20))
                        _exit(3);
                if (malloc(128u << 20) != NULL) /* beyond the address-space limit */
                        _exit(4);
                _exit(0);
        }
        int st = -1;
        (void) waitpid(pid, &st, 0);
        is_int(WIFEXITED(st) ? WEXITSTATUS(st) : 100, 0,
                "rlimit: applied in a child (core 0, AS refuses 128 MiB)");
}

/* ---- real v1 on this host ---- */

static int cpus_online(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int) n : 1;
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Fork a child that waits until it has been attached to cg, then runs fn. */
static pid_t fork_attached(sbx_cgroup *cg, int (*fn)(void *), void *arg) {
        int sync[2];
        if (pipe2(sync, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                char c;
                close(sync[1]);
                if (read(sync[0], &c, 1) != 1)
                        _exit(120);
                _exit(fn(arg));
        }
        close(sync[0]);
        if (pid > 0) {
                int r = sbx_cgroup_attach(cg, pid);
                if (r < 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        pid = -1;
                } else if (write(sync[1], "x", 1) != 1) {
                        pid = -1;
                }
        }
        close(sync[1]);
        return pid;
}

static int child_hog(void *arg) {
        size_t mib = (size_t) (uintptr_t) arg;
        for (size_t i = 0; i < mib; i++) {
                char *p = malloc(1u << 20);
                if (!p)
                        return 3;
                memset(p, 0x5a, 1u << 20);
        }
        return 0; /* survived: the limit did not work */
}

static int forkbomb_fd = -1;
static int child_forks(void *arg) {
        int n = 0, err = 0;
        for (int i = 0; i < 50; i++) {
                pid_t p = fork();
                if (p == 0) {
                        pause();
                        _exit(0);
                }
                if (p < 0) {
                        err = errno;
                        break;
                }
                n++;
        }
        int msg[2] = {n, err};
        if (write(forkbomb_fd, msg, sizeof msg) != sizeof msg)
                return 1;
        pause();
        return 0;
}

static int child_spin(void *arg) {
        double end = now_s() + *(double *) arg;
        volatile unsigned long x = 0;
        while (now_s() < end)
                x++;
        return 0;
}

static int child_stopped_tree(void *arg) {
        for (int i = 0; i < 3; i++)
                if (fork() == 0) {
                        raise(SIGSTOP);
                        pause();
                        _exit(0);
                }
        raise(SIGSTOP);
        pause();
        return 0;
}

/* Counts in shared memory until killed (a paused sandbox's process: it must stop counting). */
static int child_count(void *arg) {
        volatile unsigned long *n = arg;
        for (;;)
                (*n)++;
        return 0;
}

static bool groups_gone(char **paths) {
        STRV_FOREACH(p, paths)
                if (exists(*p))
                        return false;
        return true;
}

static char **group_paths(sbx_cgroup *cg) {
        char **l = NULL;
        for (int c = 0; c <= _SBX_CG_CONTROLLER_MAX; c++) {
                const char *p = sbx_cgroup_path(cg, c);
                if (p && !strv_contains(l, p))
                        (void) strv_extend(&l, p);
        }
        return l;
}

static bool procs_empty(sbx_cgroup *cg) {
        for (int c = 0; c <= _SBX_CG_CONTROLLER_MAX; c++) {
                const char *p = sbx_cgroup_path(cg, c);
                if (p && strcmp(get(p, "cgroup.procs"), "") != 0)
                        return false;
        }
        return true;
}

static sbx_cgroup *real_create_flags(
        const sbx_cgroup_probe_result *p, const char *what, const sbx_cgroup_limits *lim, unsigned flags) {
        char name[64];
        sbx_error e = {};
        sbx_cgroup *cg = NULL;
        snprintf(name, sizeof name, "test-cgroup-%d-%s", (int) getpid(), what);
        int r = sbx_cgroup_create(p, name, lim, 0, flags, &cg, &e);
        if (!is_int(r, 0, "real %s: create %s", what, name))
                diag("%s", e.message);
        if (cg)
                track(cg);
        return cg;
}

static sbx_cgroup *real_create(
        const sbx_cgroup_probe_result *p, const char *what, const sbx_cgroup_limits *lim) {
        return real_create_flags(p, what, lim, 0);
}

static void destroy_checked(sbx_cgroup **cg, const char *what) {
        char **paths = group_paths(*cg);
        is_int(sbx_cgroup_destroy(*cg), 0, "real %s: destroy", what);
        ok(groups_gone(paths) && strv_length(paths) > 0, "real %s: no group left (%zu removed)", what,
                strv_length(paths));
        strv_free(paths);
        done_cg(cg);
        reap_all();
}

#define REAL_TESTS 65

static void test_real_v1(void) {
        sbx_cgroup_probe_result p;
        if (geteuid() != 0) {
                skip(REAL_TESTS, "real cgroup v1: not root");
                return;
        }
        if (sbx_cgroup_probe("/sys/fs/cgroup", NULL, &p) < 0) {
                skip(REAL_TESTS, "real cgroup v1: probe failed");
                return;
        }
        const sbx_cgroup_controller_probe *m = &p.ctl[SBX_CG_MEMORY], *pi = &p.ctl[SBX_CG_PIDS],
                                          *c = &p.ctl[SBX_CG_CPU];
        if (m->version != SBX_CG_V1 || !m->usable || !m->real || pi->version != SBX_CG_V1 || !pi->usable ||
                c->version != SBX_CG_V1 || !c->usable) {
                skip(REAL_TESTS, "real cgroup v1: no usable v1 memory/pids/cpu controllers here");
                sbx_cgroup_probe_result_done(&p);
                return;
        }
        diag("host layout %s; memory base %s; v2 tracking %s", sbx_cgroup_probe_layout(&p), m->base,
                p.v2.usable ? p.v2.base : p.v2.reason);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        sbx_cgroup *cg;
        sbx_cgroup_stats s;
        int st;

        /* Memory: 32 MiB, a child allocating 100 MiB is OOM-killed; the cgroup says so. */
        sbx_cgroup_limits lm = {.memory_bytes = 32u << 20};
        cg = real_create(&p, "oom", &lm);
        if (cg) {
                is_int(sbx_cgroup_mechanism(cg, SBX_CG_LIMIT_MEMORY), SBX_CG_V1,
                        "real oom: memory by cgroup_v1");
                int efd = sbx_cgroup_event_fd(cg);
                ok(efd >= 0, "real oom: OOM event fd (%d)", efd);
                double t0 = now_s();
                pid_t pid = fork_attached(cg, child_hog, (void *) (uintptr_t) 100);
                st = 0;
                (void) waitpid(pid, &st, 0);
                double dt = now_s() - t0;
                ok(pid > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                        "real oom: 100 MiB hog killed by SIGKILL (status %#x)", st);
                struct pollfd pfd = {.fd = efd, .events = POLLIN};
                ok(efd >= 0 && poll(&pfd, 1, 1000) == 1, "real oom: event fd readable");
                is_int(sbx_cgroup_stats_read(cg, &s), 0, "real oom: stats");
                ok(s.oom_kills != SBX_CG_UNKNOWN && s.oom_kills >= 1, "real oom: oom_kill %" PRIu64 " >= 1",
                        s.oom_kills);
                /* This kernel (6.18) no longer counts v1 failcnt on every OOM: readable is all we ask. */
                ok(s.memory_max_hits != SBX_CG_UNKNOWN, "real oom: failcnt readable (%" PRIu64 ")",
                        s.memory_max_hits);
                ok(s.memory_peak_bytes <= (32u << 20) + (1u << 20),
                        "real oom: peak %" PRIu64 " within the limit", s.memory_peak_bytes);
                diag("OOM: killed after %.0f ms, oom_kill=%" PRIu64 " failcnt=%" PRIu64 " peak=%" PRIu64,
                        dt * 1000, s.oom_kills, s.memory_max_hits, s.memory_peak_bytes);
                if (efd >= 0)
                        close(efd);
                destroy_checked(&cg, "oom");
        } else
                skip(10, "real oom: no cgroup");

        /* pids: 5 tasks; the 6th fork is refused with EAGAIN and counted. */
        sbx_cgroup_limits lp = {.pids = 5};
        cg = real_create(&p, "pids", &lp);
        if (cg) {
                int pp[2];
                if (pipe2(pp, O_CLOEXEC) < 0)
                        pp[0] = pp[1] = -1;
                forkbomb_fd = pp[1];
                pid_t pid = fork_attached(cg, child_forks, NULL);
                close(pp[1]);
                int msg[2] = {-1, -1};
                ssize_t n = read(pp[0], msg, sizeof msg);
                close(pp[0]);
                ok(n == sizeof msg && msg[0] == 4, "real pids: 4 forks succeed beside the first task (%d)",
                        msg[0]);
                is_int(msg[1], EAGAIN, "real pids: the next fork fails with EAGAIN");
                is_int(sbx_cgroup_stats_read(cg, &s), 0, "real pids: stats");
                ok(s.pids_refused != SBX_CG_UNKNOWN && s.pids_refused >= 1,
                        "real pids: pids.events max %" PRIu64, s.pids_refused);
                is_int(s.pids_current, 5, "real pids: pids.current 5");
                ok(s.pids_peak == 5, "real pids: peak %" PRIu64, s.pids_peak);
                is_int(sbx_cgroup_kill(cg), 0, "real pids: kill the tree");
                ok(procs_empty(cg), "real pids: groups empty");
                st = 0;
                (void) waitpid(pid, &st, 0);
                ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "real pids: child killed");
                destroy_checked(&cg, "pids");
        } else
                skip(12, "real pids: no cgroup");

        /* cpus 0.5: a spinner gets about half a core over a second. */
        sbx_cgroup_limits lc = {.cpus = 0.5};
        cg = real_create(&p, "cpu", &lc);
        if (cg) {
                double secs = 1.2;
                double t0 = now_s();
                pid_t pid = fork_attached(cg, child_spin, &secs);
                struct rusage ru = {};
                st = 0;
                (void) wait4(pid, &st, 0, &ru);
                double wall = now_s() - t0;
                double cpu = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
                             (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
                double ratio = cpu / wall;
                (void) sbx_cgroup_stats_read(cg, &s);
                diag("cpus 0.5: cpu %.3f s over %.3f s wall = %.1f%% of one core (cgroup usage %" PRIu64
                     " us, throttled %" PRIu64 " us, %d cpus online)",
                        cpu, wall, ratio * 100, s.cpu_usage_usec, s.cpu_throttled_usec, cpus_online());
                ok(ratio > 0.25 && ratio < 0.65, "real cpu: %.1f%% of one core under a 0.5 quota",
                        ratio * 100);
                ok(s.cpu_usage_usec != SBX_CG_UNKNOWN && s.cpu_usage_usec > 200000,
                        "real cpu: cpuacct usage %" PRIu64 " us", s.cpu_usage_usec);
                ok(s.cpu_throttled_usec != SBX_CG_UNKNOWN && s.cpu_throttled_usec > 0,
                        "real cpu: throttled");
                destroy_checked(&cg, "cpu");
        } else
                skip(5, "real cpu: no cgroup");

        /* Killing a stopped tree: v1 only (freezer, then SIGKILL, then thaw), and with the v2
         * tracking group of a hybrid host (cgroup.kill). */
        for (int round = 0; round < 2; round++) {
                const char *what = round == 0 ? "stopped-v1" : "stopped-hybrid";
                bool saved = p.v2.usable;
                if (round == 0)
                        p.v2.usable = false;
                else if (!p.v2.usable) {
                        skip(8, "no cgroup2 tracking group on this host");
                        continue;
                }
                cg = real_create(&p, what, NULL);
                p.v2.usable = saved;
                if (!cg) {
                        skip(7, "no cgroup");
                        continue;
                }
                pid_t pid = fork_attached(cg, child_stopped_tree, NULL);
                st = 0;
                (void) waitpid(pid, &st, WUNTRACED);
                ok(WIFSTOPPED(st), "real %s: tree stopped", what);
                usleep(100000);
                ok(round == 0 ? sbx_cgroup_path(cg, SBX_CG_FREEZER) != NULL : sbx_cgroup_v2_fd(cg) >= 0,
                        "real %s: %s group present", what, round == 0 ? "freezer" : "cgroup2");
                double t0 = now_s();
                is_int(sbx_cgroup_kill(cg), 0, "real %s: kill", what);
                diag("%s: killed 4 stopped processes in %.1f ms", what, (now_s() - t0) * 1000);
                ok(procs_empty(cg), "real %s: every group empty", what);
                st = 0;
                (void) waitpid(pid, &st, 0);
                ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "real %s: stopped child died of SIGKILL",
                        what);
                destroy_checked(&cg, what);
        }

        /* Pause: a counting process stops counting while frozen and goes on once thawed — by the
         * v1 freezer, and by the cgroup2 group's cgroup.freeze (a hybrid host's tracking group). */
        for (int round = 0; round < 2; round++) {
                const char *what = round == 0 ? "freeze-v1" : "freeze-v2";
                bool saved = p.v2.usable;
                if (round == 0)
                        p.v2.usable = false;
                else if (!p.v2.usable) {
                        skip(5, "no cgroup2 tracking group on this host");
                        continue;
                }
                cg = real_create(&p, what, NULL);
                p.v2.usable = saved;
                if (!cg || (round == 0 && !sbx_cgroup_path(cg, SBX_CG_FREEZER))) {
                        skip(5, round == 0 ? "no v1 freezer group here" : "no cgroup");
                        if (cg)
                                destroy_checked(&cg, what);
                        continue;
                }
                volatile unsigned long *n =
                        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                pid_t pid = fork_attached(cg, child_count, (void *) n);
                usleep(50000);
                double t0 = now_s();
                is_int(sbx_cgroup_freeze(cg, true, 2000), 0, "real %s: frozen", what);
                diag("%s: frozen in %.2f ms", what, (now_s() - t0) * 1000);
                unsigned long a = *n;
                usleep(200000);
                unsigned long b = *n;
                is_int(b, a, "real %s: the frozen process counts no more (%lu)", what, b);
                is_int(sbx_cgroup_freeze(cg, false, 2000), 0, "real %s: thawed", what);
                usleep(100000);
                ok(*n > b, "real %s: thawed, it counts on (%lu → %lu)", what, b, *n);
                is_int(sbx_cgroup_kill(cg), 0, "real %s: killed", what);
                st = 0;
                (void) waitpid(pid, &st, 0);
                munmap((void *) n, 4096);
                destroy_checked(&cg, what);
        }

        /* A sandbox with a pid namespace of its own (SBX_CG_CREATE_NO_TRACKING): on a hybrid host
         * no cgroup2 group and no freezer, only the limits' groups; killing what they hold still
         * works (stopped processes too: SIGKILL needs no thaw). */
        if (p.v2.usable && p.v2_kill) {
                sbx_cgroup_limits ln = {.memory_bytes = 64u << 20, .pids = 16};
                cg = real_create_flags(&p, "notrack", &ln, SBX_CG_CREATE_NO_TRACKING);
                if (cg) {
                        ok(sbx_cgroup_v2_fd(cg) < 0 && !sbx_cgroup_path(cg, SBX_CG_FREEZER) &&
                                        sbx_cgroup_path(cg, SBX_CG_MEMORY) &&
                                        sbx_cgroup_path(cg, SBX_CG_PIDS),
                                "real notrack: memory and pids groups, no cgroup2 or freezer group");
                        pid_t pid = fork_attached(cg, child_stopped_tree, NULL);
                        st = 0;
                        (void) waitpid(pid, &st, WUNTRACED);
                        usleep(100000);
                        is_int(sbx_cgroup_kill(cg), 0, "real notrack: kill");
                        ok(procs_empty(cg), "real notrack: every group empty");
                        st = 0;
                        (void) waitpid(pid, &st, 0);
                        ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                                "real notrack: stopped child died of SIGKILL");
                        destroy_checked(&cg, "notrack");
                } else
                        skip(6, "no cgroup");
        } else
                skip(7, "not a hybrid host with a cgroup2 tracking group");

        /* clone3(CLONE_INTO_CGROUP) with the cgroup2 tracking group of a hybrid host. */
        if (p.v2.usable) {
                cg = real_create(&p, "clone3", NULL);
                if (cg) {
                        char want[256];
                        snprintf(want, sizeof want, "0::%s/sandboxer/%s\n",
                                streq(p.v2.own, "/") ? "" : p.v2.own, sbx_cgroup_name(cg));
                        struct clone_args args = {.flags = CLONE_INTO_CGROUP,
                                .exit_signal = SIGCHLD,
                                .cgroup = (uint64_t) sbx_cgroup_v2_fd(cg)};
                        pid_t pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
                        if (pid == 0) {
                                char buf[4096];
                                int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
                                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                                buf[n > 0 ? n : 0] = 0;
                                _exit(strstr(buf, want) ? 0 : 1);
                        }
                        st = -1;
                        if (pid > 0)
                                (void) waitpid(pid, &st, 0);
                        ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                                "real clone3: CLONE_INTO_CGROUP places the child in %s", want);
                        destroy_checked(&cg, "clone3");
                } else
                        skip(3, "no cgroup");
        } else
                skip(4, "no cgroup2 tracking group on this host");

        /* gc: a leftover of a killed run goes, a populated group stays. */
        char prefix[64];
        snprintf(prefix, sizeof prefix, "test-cgroup-%d-gc", (int) getpid());
        cg = real_create(&p, "gc", NULL);
        char **paths = cg ? group_paths(cg) : NULL;
        if (cg)
                done_cg(&cg); /* freed, never destroyed: what a SIGKILLed run leaves */
        sbx_cgroup *busy = real_create(&p, "gcbusy", NULL);
        pid_t bpid = busy ? fork_attached(busy, child_stopped_tree, NULL) : -1;
        sbx_cgroup_gc_options go = {.dry_run = true, .prefix = prefix};
        char **names = NULL;
        is_int(sbx_cgroup_gc(&p, &go, &names), 2 - 1, "real gc: dry run finds only the empty leftover");
        ok(paths && !groups_gone(paths), "real gc: dry run removed nothing");
        strv_free(names);
        go.dry_run = false;
        is_int(sbx_cgroup_gc(&p, &go, NULL), 1, "real gc: removes it");
        ok(paths && groups_gone(paths), "real gc: leftover groups gone");
        strv_free(paths);
        if (busy) {
                ok(sbx_cgroup_path(busy, SBX_CG_MEMORY) && exists(sbx_cgroup_path(busy, SBX_CG_MEMORY)),
                        "real gc: populated group kept");
                (void) bpid;
                destroy_checked(&busy, "gcbusy");
        } else
                skip(3, "no busy cgroup");

        sbx_cgroup_probe_result_done(&p);
}

int main(void) {
        if (!mkdtemp(tmpdir)) {
                printf("1..0 # SKIP cannot create a temp dir\n");
                return 77;
        }
        atexit(cleanup_all);
        test_fake_v2();
        test_fake_v2_missing();
        test_fake_v2_internal_procs();
        test_fake_readonly();
        test_fake_v1();
        test_rlimit();
        test_real_v1();
        return done_testing();
}
