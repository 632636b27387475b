/* cgroup-internal.h — what the cgroup files share, for them only: the sandbox's group structure
 * and the small file helpers. cgroup.c makes, limits, joins, kills and removes a sandbox's groups;
 * cgroup-probe.c finds what the host offers; cgroup-stats.c reads counters and events;
 * cgroup-gc.c removes what killed runs left; cgroup-util.c holds the helpers and name tables.
 * All paths derive from the probed root, so a fake tree of plain files can stand in. */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CG_CPU_PERIOD_US 100000ULL
#define CG_BASE_NAME "sandboxer"
#define CG_SUPERVISOR_PREFIX "supervisor-"
#define CG_V2_INDEX _SBX_CG_CONTROLLER_MAX /* ctl_group[] slot of the cgroup2 tracking group */

typedef struct cg_group {
        char *path;
        sbx_cg_version version;
        bool real;
        bool created;
} cg_group;

struct sbx_cgroup {
        char *name;
        cg_group g[_SBX_CG_CONTROLLER_MAX + 1];
        size_t n;
        int ctl_group[_SBX_CG_CONTROLLER_MAX + 1]; /* index into g[], -1: none; [CG_V2_INDEX]: cgroup2 */
        int v2_fd;
        sbx_cg_version mech[_SBX_CG_LIMIT_MAX];
        uint64_t pids_peak_seen;
        uint64_t pids_refused_seen; /* sbx_cgroup_note_end() */
        /* the probe's distinct bases, for sbx_cgroup_gc_dead_siblings() */
        char *gc_base[_SBX_CG_CONTROLLER_MAX + 1];
        bool gc_real[_SBX_CG_CONTROLLER_MAX + 1];
        size_t n_gc;
};

/* The controller each limit is set in. */
extern const sbx_cg_controller cg_limit_controller[_SBX_CG_LIMIT_MAX];

/* ---- helpers (cgroup-util.c); paths relative to a directory path unless said ---- */
void cg_closedirp(DIR **d);
int cg_path_join(char **ret, const char *a, const char *b);
int cg_read_text(const char *path, char **ret);
int cg_read_at(const char *dir, const char *file, char **ret);
bool cg_exists_at(const char *dir, const char *file);
bool cg_is_dir(const char *path);
int cg_write_at(const char *dir, const char *file, const char *value, bool real);
int cg_write_u64_at(const char *dir, const char *file, uint64_t v, bool real);
int cg_parse_u64(const char *s, uint64_t *ret);
int cg_read_u64_at(const char *dir, const char *file, uint64_t *ret);
int cg_key_u64(const char *t, const char *key, uint64_t *ret);
int cg_read_key_u64_at(const char *dir, const char *file, const char *key, uint64_t *ret);
bool cg_has_word(const char *text, const char *word);
bool cg_word_at(const char *dir, const char *file, const char *word);
bool cg_fs_is(const char *path, long magic);
bool cg_v2_own_has_kill(const sbx_cgroup_controller_probe *c);
int cg_v1_mounted(const char *path, bool *real);
uint64_t cg_now_usec(void);
void cg_sleep_usec(uint64_t us);
int cg_rmdir_tree(const char *path, bool real, bool retry);
bool cg_name_valid(const char *name);
int cg_probe_bases(const sbx_cgroup_probe_result *probe, const sbx_cgroup_controller_probe **ret, size_t *n);
