/* cgroup-stats.c — what a sandbox's groups counted (memory, OOM kills, pids and refused forks,
 * CPU) and the descriptor that wakes the supervisor on an OOM event. */
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

int sbx_cgroup_stats_read(sbx_cgroup *cg, sbx_cgroup_stats *ret) {
        return sbx_cgroup_stats_read_some(cg, SBX_CG_STAT_ALL, ret);
}

/* cgroup v1's pids.events counts a refused fork in the group of the task that forked, not in the
 * one whose limit refused it: an engine that runs the sandbox in a group of its own below ours
 * (runc's, under podman's --cgroup-parent) has the count there. So: ours plus every group below
 * (looked for only where the link count says there are some). v2's counter is hierarchical. */
static int v1_pids_refused_subtree(const char *path, unsigned depth, uint64_t *ret) {
        uint64_t v = 0, total = 0;
        int r = cg_read_key_u64_at(path, "pids.events", "max", &v);
        if (r < 0)
                return r;
        total = v;
        struct stat st;
        if (depth < 8 && stat(path, &st) == 0 && st.st_nlink > 2) {
                _cleanup_(cg_closedirp) DIR *d = opendir(path);
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
                                continue;
                        _cleanup_free_ char *sub = NULL;
                        uint64_t w;
                        if (cg_path_join(&sub, path, de->d_name) < 0)
                                return -ENOMEM;
                        if (cg_is_dir(sub) && v1_pids_refused_subtree(sub, depth + 1, &w) >= 0)
                                total += w;
                }
        }
        *ret = total;
        return 0;
}

int sbx_cgroup_stats_read_some(sbx_cgroup *cg, unsigned what, sbx_cgroup_stats *ret) {
        if (!cg || !ret)
                return -EINVAL;
        sbx_cgroup_stats s = {
                .oom_kills = SBX_CG_UNKNOWN,
                .memory_max_hits = SBX_CG_UNKNOWN,
                .memory_peak_bytes = SBX_CG_UNKNOWN,
                .pids_current = SBX_CG_UNKNOWN,
                .pids_peak = SBX_CG_UNKNOWN,
                .pids_refused = SBX_CG_UNKNOWN,
                .cpu_usage_usec = SBX_CG_UNKNOWN,
                .cpu_throttled_usec = SBX_CG_UNKNOWN,
                .memory_current_bytes = SBX_CG_UNKNOWN,
        };
        uint64_t v;

        int mi = cg->ctl_group[SBX_CG_MEMORY];
        if (mi >= 0) {
                const char *p = cg->g[mi].path;
                if (cg->g[mi].version == SBX_CG_V2) {
                        _cleanup_free_ char *t = NULL;
                        if ((what & (SBX_CG_STAT_OOM | SBX_CG_STAT_MEMORY_MAX_HITS)) &&
                                cg_read_at(p, "memory.events", &t) >= 0) {
                                if ((what & SBX_CG_STAT_OOM) && cg_key_u64(t, "oom_kill", &v) >= 0)
                                        s.oom_kills = v;
                                if ((what & SBX_CG_STAT_MEMORY_MAX_HITS) && cg_key_u64(t, "max", &v) >= 0)
                                        s.memory_max_hits = v;
                        }
                        if ((what & SBX_CG_STAT_MEMORY_PEAK) && cg_read_u64_at(p, "memory.peak", &v) >= 0)
                                s.memory_peak_bytes = v;
                        if ((what & SBX_CG_STAT_MEMORY_CURRENT) &&
                                cg_read_u64_at(p, "memory.current", &v) >= 0)
                                s.memory_current_bytes = v;
                } else {
                        if ((what & SBX_CG_STAT_OOM) &&
                                cg_read_key_u64_at(p, "memory.oom_control", "oom_kill", &v) >= 0)
                                s.oom_kills = v;
                        /* With memsw = memory the memsw counter is charged first and takes the
                         * failures; count whichever saw more. */
                        if (what & SBX_CG_STAT_MEMORY_MAX_HITS) {
                                if (cg_read_u64_at(p, "memory.failcnt", &v) >= 0)
                                        s.memory_max_hits = v;
                                uint64_t w;
                                if (cg_read_u64_at(p, "memory.memsw.failcnt", &w) >= 0 &&
                                        (s.memory_max_hits == SBX_CG_UNKNOWN || w > s.memory_max_hits))
                                        s.memory_max_hits = w;
                        }
                        if ((what & SBX_CG_STAT_MEMORY_PEAK) &&
                                cg_read_u64_at(p, "memory.max_usage_in_bytes", &v) >= 0)
                                s.memory_peak_bytes = v;
                        if ((what & SBX_CG_STAT_MEMORY_CURRENT) &&
                                cg_read_u64_at(p, "memory.usage_in_bytes", &v) >= 0)
                                s.memory_current_bytes = v;
                }
        }
        int pi = cg->ctl_group[SBX_CG_PIDS];
        if (pi >= 0) {
                const char *p = cg->g[pi].path;
                if (what & SBX_CG_STAT_PIDS) {
                        if (cg_read_u64_at(p, "pids.peak", &v) >= 0)
                                s.pids_peak = v;
                        /* pids.current where asked for everything, or where it stands in for
                         * the missing pids.peak */
                        if ((what == SBX_CG_STAT_ALL || s.pids_peak == SBX_CG_UNKNOWN) &&
                                cg_read_u64_at(p, "pids.current", &v) >= 0) {
                                s.pids_current = v;
                                cg->pids_peak_seen = MAX(cg->pids_peak_seen, v);
                                if (s.pids_peak == SBX_CG_UNKNOWN)
                                        s.pids_peak = cg->pids_peak_seen;
                        }
                }
                if ((what & SBX_CG_STAT_PIDS_REFUSED) &&
                        (cg->g[pi].version == SBX_CG_V1 && cg->g[pi].real
                                        ? v1_pids_refused_subtree(p, 0, &v)
                                        : cg_read_key_u64_at(p, "pids.events", "max", &v)) >= 0)
                        s.pids_refused = MAX(v, cg->pids_refused_seen);
                else if ((what & SBX_CG_STAT_PIDS_REFUSED) && cg->pids_refused_seen > 0)
                        s.pids_refused = cg->pids_refused_seen;
        }
        if (!(what & SBX_CG_STAT_CPU)) {
                *ret = s;
                return 0;
        }
        int ci = cg->ctl_group[SBX_CG_CPU], ai = cg->ctl_group[SBX_CG_CPUACCT],
            vi = cg->ctl_group[CG_V2_INDEX];
        if (ci >= 0 && cg->g[ci].version == SBX_CG_V1) {
                if (cg_read_key_u64_at(cg->g[ci].path, "cpu.stat", "throttled_time", &v) >= 0)
                        s.cpu_throttled_usec = v / 1000;
        }
        if (ai >= 0 && cg->g[ai].version == SBX_CG_V1) {
                if (cg_read_u64_at(cg->g[ai].path, "cpuacct.usage", &v) >= 0)
                        s.cpu_usage_usec = v / 1000;
        }
        /* cpu.stat is core in cgroup2: every v2 group has usage_usec. */
        int v2i = ci >= 0 && cg->g[ci].version == SBX_CG_V2 ? ci : vi;
        if (v2i >= 0 && cg->g[v2i].version == SBX_CG_V2) {
                if (s.cpu_usage_usec == SBX_CG_UNKNOWN &&
                        cg_read_key_u64_at(cg->g[v2i].path, "cpu.stat", "usage_usec", &v) >= 0)
                        s.cpu_usage_usec = v;
                if (s.cpu_throttled_usec == SBX_CG_UNKNOWN &&
                        cg_read_key_u64_at(cg->g[v2i].path, "cpu.stat", "throttled_usec", &v) >= 0)
                        s.cpu_throttled_usec = v;
        }
        *ret = s;
        return 0;
}

void sbx_cgroup_note_end(sbx_cgroup *cg) {
        int pi = cg ? cg->ctl_group[SBX_CG_PIDS] : -1;
        uint64_t v;
        if (pi >= 0 && cg->g[pi].version == SBX_CG_V1 && cg->g[pi].real &&
                v1_pids_refused_subtree(cg->g[pi].path, 0, &v) >= 0)
                cg->pids_refused_seen = MAX(cg->pids_refused_seen, v);
}

int sbx_cgroup_event_fd(sbx_cgroup *cg) {
        if (!cg)
                return -EINVAL;
        int mi = cg->ctl_group[SBX_CG_MEMORY];
        if (mi < 0)
                return -EOPNOTSUPP;
        const cg_group *g = &cg->g[mi];
        _cleanup_free_ char *p = NULL;

        if (g->version == SBX_CG_V2) {
                if (cg_path_join(&p, g->path, "memory.events") < 0)
                        return -ENOMEM;
                _cleanup_close_ int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (fd < 0)
                        return negative_errno();
                if (inotify_add_watch(fd, p, IN_MODIFY) < 0)
                        return negative_errno();
                return TAKE_FD(fd);
        }

        if (cg_path_join(&p, g->path, "memory.oom_control") < 0)
                return -ENOMEM;
        _cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return negative_errno();
        _cleanup_close_ int ofd = open(p, O_RDONLY | O_CLOEXEC);
        if (ofd < 0)
                return negative_errno();
        char buf[64];
        snprintf(buf, sizeof buf, "%d %d", efd, ofd);
        int r = cg_write_at(g->path, "cgroup.event_control", buf, g->real);
        if (r < 0)
                return r;
        return TAKE_FD(efd);
}
