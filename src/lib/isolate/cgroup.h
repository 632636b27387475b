/* cgroup.h — the sandbox's control groups, v1 and v2 (and hybrids of both): probing what this
 * process may use, creating one group per hierarchy under "<own cgroup>/sandboxer/<name>",
 * limits (memory incl. swap, pids, cpu quota), attaching, killing a whole tree, statistics and
 * OOM notification, destruction and garbage collection of what killed runs left behind.
 *
 * Every path is taken relative to the `root` given to sbx_cgroup_probe() ("/sys/fs/cgroup"
 * normally); the tests point it at a fake tree of plain files. On a tree that is not a real
 * cgroupfs (statfs) interface files are created when written and removed before rmdir, so the
 * same code can be checked file by file. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"

typedef enum sbx_cg_version {
        SBX_CG_NONE,
        SBX_CG_V1,
        SBX_CG_V2,
        _SBX_CG_VERSION_MAX,
        _SBX_CG_VERSION_INVALID = -EINVAL,
} sbx_cg_version;
/* The report's mechanism names: "none", "cgroup_v1", "cgroup_v2". */
const char *sbx_cg_version_to_string(sbx_cg_version v);

typedef enum sbx_cg_controller {
        SBX_CG_MEMORY,
        SBX_CG_PIDS,
        SBX_CG_CPU,
        SBX_CG_CPUACCT, /* v2: cpu.stat of the core, always there */
        SBX_CG_FREEZER, /* v2: cgroup.freeze / cgroup.kill of the core */
        _SBX_CG_CONTROLLER_MAX,
        _SBX_CG_CONTROLLER_INVALID = -EINVAL,
} sbx_cg_controller;
/* "memory", "pids", "cpu", "cpuacct", "freezer". */
const char *sbx_cg_controller_to_string(sbx_cg_controller c);

/* The limits a cgroup can enforce; bit (1u << id) in masks. */
typedef enum sbx_cg_limit {
        SBX_CG_LIMIT_MEMORY,
        SBX_CG_LIMIT_PIDS,
        SBX_CG_LIMIT_CPUS,
        _SBX_CG_LIMIT_MAX,
        _SBX_CG_LIMIT_INVALID = -EINVAL,
} sbx_cg_limit;
#define SBX_CG_LIMIT_BIT(l) (1u << (l))
/* The policy key of a limit: "memory_mb", "pids", "cpus". */
const char *sbx_cg_limit_to_string(sbx_cg_limit l);

/* What one controller offers this process. */
typedef struct sbx_cgroup_controller_probe {
        sbx_cg_version version; /* hierarchy the controller is bound to; NONE: not found */
        bool usable; /* we can create groups and set limits with it */
        bool real; /* a real cgroupfs (false: a fake tree, tests) */
        bool move_self; /* v2: usable only if this process moves into a leaf first
                         * (SBX_CG_CREATE_MOVE_SELF): it is alone in its own cgroup */
        char *mount; /* hierarchy root: ROOT/memory, ROOT/unified, ROOT */
        char *own; /* this process's cgroup in the hierarchy: "/", "/a/b" */
        char *base; /* where sandboxes go: mount + own + "/sandboxer" */
        int errnum; /* why not usable (positive errno), 0 when usable */
        char reason[384]; /* why not usable, with the fix; "" when usable */
} sbx_cgroup_controller_probe;

typedef struct sbx_cgroup_probe_result {
        char *root;
        sbx_cgroup_controller_probe ctl[_SBX_CG_CONTROLLER_MAX];
        /* The cgroup2 hierarchy itself, also when it has no controllers (a hybrid host): a group
         * there gives cgroup.kill, CLONE_INTO_CGROUP and populated-tracking. version NONE when
         * there is no cgroup2 mount. */
        sbx_cgroup_controller_probe v2;
        /* The cgroup2 hierarchy is real and has cgroup.kill (5.14+): a tracking group there kills
         * the whole sandbox at once, so no v1 freezer group is needed (and none is made), and its
         * cpu.stat stands in for a v1 cpuacct group (none is made either). */
        bool v2_kill;
} sbx_cgroup_probe_result;

/* Find what this process may use: per controller, v2 or v1, the base path and whether it is
 * writable or why not. `root` is the cgroupfs root ("/sys/fs/cgroup"); `self_cgroup` the text of
 * /proc/self/cgroup (NULL: read it). No side effects. On success *ret is filled (release with
 * sbx_cgroup_probe_result_done()); returns 0, or -errno only for failures to probe at all
 * (-ENOMEM, unreadable /proc/self/cgroup). */
int sbx_cgroup_probe(const char *root, const char *self_cgroup, sbx_cgroup_probe_result *ret);
void sbx_cgroup_probe_result_done(sbx_cgroup_probe_result *p);
/* "v1", "v2", "hybrid", "none": how the probed host mixes hierarchies. */
const char *sbx_cgroup_probe_layout(const sbx_cgroup_probe_result *p);

typedef struct sbx_cgroup_limits { /* 0 = no limit requested */
        uint64_t memory_bytes; /* memory, swap capped too (memory.swap.max 0 / memsw = memory) */
        uint64_t pids; /* tasks, threads included */
        double cpus; /* quota: cpus * period (100 ms) */
} sbx_cgroup_limits;

typedef struct sbx_cgroup sbx_cgroup; /* opaque */

enum {
        /* v2: when this process is alone in a delegated cgroup that holds processes (the
         * "no internal processes" rule keeps controllers from its children), move it into the
         * leaf "<own>/sandboxer/supervisor-PID" first, then enable the controllers. */
        SBX_CG_CREATE_MOVE_SELF = 1u << 0,
        /* The caller's sandbox has a pid namespace of its own (killing its PID 1 kills every
         * process of it, stopped ones too), or cannot spawn. So where the cgroup2 hierarchy holds none of
         * the controllers used (a hybrid host), no group is made there just to track and kill the tree, nor
         * in the v1 freezer: each group a process joins costs its mkdir, the join (a new css_set linked into
         * every hierarchy) and the rmdir, ~0.2 ms a run on the development VM. sbx_cgroup_kill() then lists
         * and kills what the v1 groups hold. */
        SBX_CG_CREATE_NO_TRACKING = 1u << 1,
};

/* Create the sandbox's group "<base>/<name>" in every usable hierarchy (memory, pids, cpu,
 * cpuacct, freezer, and the cgroup2 hierarchy for tracking; cpuacct and freezer are left out
 * when probe->v2_kill, and the tracking-only groups with SBX_CG_CREATE_NO_TRACKING) and apply
 * the limits. The shared "<base>" is made when missing and kept.
 * `name`: [A-Za-z0-9_.-], 1..64 characters, no leading dot.
 * `best_effort`: SBX_CG_LIMIT_BIT()s of limits that may go without a cgroup (the policy lists
 * them under enforce.best_effort, or the caller enforces them another way, e.g. an rlimit);
 * a requested limit whose controller is unusable and not in this mask fails with -EOPNOTSUPP
 * (or the probe's errno) and an sbx_error naming the limit, the reason and the fix.
 * sbx_cgroup_mechanism() tells afterwards what enforces each limit.
 * Nothing is left behind on failure. The probe result is copied from, not kept. */
int sbx_cgroup_create(const sbx_cgroup_probe_result *probe, const char *name, const sbx_cgroup_limits *lim,
        unsigned best_effort, unsigned flags, sbx_cgroup **ret, sbx_error *e);

/* Which hierarchy enforces a limit: SBX_CG_NONE when not requested or not enforced. */
sbx_cg_version sbx_cgroup_mechanism(const sbx_cgroup *cg, sbx_cg_limit l);
/* The group directory of a controller (or of the cgroup2 tracking group when c ==
 * _SBX_CG_CONTROLLER_MAX), NULL when there is none. */
const char *sbx_cgroup_path(const sbx_cgroup *cg, sbx_cg_controller c);
const char *sbx_cgroup_name(const sbx_cgroup *cg);

/* Put a process (the whole thread group) into every group. 0 or -errno. */
int sbx_cgroup_attach(sbx_cgroup *cg, pid_t pid);
/* Joining without the global lock. A write of a pid to cgroup.procs takes the kernel's
 * cgroup_threadgroup_rwsem for writing, which waits for an RCU grace period (~10-15 ms here,
 * per run, unless the hierarchy is mounted with favordynmods); a thread moving *itself* by
 * writing "0" to a v1 `tasks` file does not. So: the parent opens the v1 groups' `tasks` files
 * (sbx_cgroup_self_attach_fds(); permission is checked with the opener's credentials, so the
 * child may already be in its own user namespace), the freshly cloned, single-threaded child
 * writes "0" to each first thing (sbx_cgroup_self_attach(): syscalls only), and the cgroup2
 * group is joined with CLONE_INTO_CGROUP. Fills fds[] (O_WRONLY|O_CLOEXEC, owned by the caller)
 * and returns how many, 0 when there is no v1 group, or -errno (-ENOBUFS: max too small). */
int sbx_cgroup_self_attach_fds(sbx_cgroup *cg, int *fds, size_t max);
/* Child side, between clone and execve: write "0" to each fd. 0 or -errno. */
int sbx_cgroup_self_attach(const int *fds, size_t n);

/* A directory fd of the cgroup2 group for clone3(CLONE_INTO_CGROUP), owned by cg; -1 when there
 * is no cgroup2 group. The child still has to be attached to the v1 groups (hybrid hosts). */
int sbx_cgroup_v2_fd(sbx_cgroup *cg);

/* Kill every process of the sandbox, stopped and frozen ones too, and wait until the groups are
 * empty (at most ~5 s). v2: cgroup.kill; v1: freeze (freezer), SIGKILL everything listed,
 * thaw, repeat until empty. Returns 0, -EBUSY when processes remain, -EOPNOTSUPP when there is
 * no group to find the processes in. */
int sbx_cgroup_kill(sbx_cgroup *cg);

/* Freeze (or thaw) every process of the sandbox: the cgroup2 group's cgroup.freeze where there is
 * one (also a hybrid host's tracking group), else the v1 freezer's freezer.state; waits up to
 * timeout_ms until the kernel says it is done (cgroup.events "frozen", freezer.state FROZEN). A
 * frozen process holds its memory and its descriptors; it runs no code and takes no signal
 * (SIGKILL included) until thawed — sbx_cgroup_kill() copes with that. 0, -ETIMEDOUT, or
 * -EOPNOTSUPP when the sandbox has no group that can freeze (SBX_CG_CREATE_NO_TRACKING on a host
 * whose cgroup2 hierarchy holds none of its limits, or no freezer at all). */
int sbx_cgroup_freeze(sbx_cgroup *cg, bool frozen, int timeout_ms);

#define SBX_CG_UNKNOWN UINT64_MAX
typedef struct sbx_cgroup_stats { /* SBX_CG_UNKNOWN where the host does not tell */
        uint64_t oom_kills; /* v2 memory.events oom_kill; v1 memory.oom_control oom_kill */
        uint64_t memory_max_hits; /* v2 memory.events max; v1 max(memory.failcnt, memsw.failcnt);
                                   * 6.18 may leave these 0 on v1 after an OOM: use oom_kills */
        uint64_t memory_peak_bytes; /* v2 memory.peak; v1 memory.max_usage_in_bytes */
        uint64_t pids_current;
        uint64_t pids_peak; /* pids.peak where present, else the largest pids.current seen
                             * by sbx_cgroup_stats_read() calls (a lower bound) */
        uint64_t pids_refused; /* pids.events max: forks refused by pids.max */
        uint64_t cpu_usage_usec; /* v2 cpu.stat usage_usec; v1 cpuacct.usage / 1000 */
        uint64_t cpu_throttled_usec; /* v2 cpu.stat throttled_usec; v1 cpu.stat throttled_time */
        uint64_t memory_current_bytes; /* v2 memory.current; v1 memory.usage_in_bytes */
} sbx_cgroup_stats;
/* Read the counters. Returns 0 (fields the host lacks are SBX_CG_UNKNOWN) or -errno. */
int sbx_cgroup_stats_read(sbx_cgroup *cg, sbx_cgroup_stats *ret);
/* Only those asked for (the others stay SBX_CG_UNKNOWN): each is a file opened and read in a
 * group made for this run, ~5 µs apiece on a VM, and a run's report needs three of the nine. */
enum {
        SBX_CG_STAT_OOM = 1u << 0, /* oom_kills */
        SBX_CG_STAT_MEMORY_MAX_HITS = 1u << 1,
        SBX_CG_STAT_MEMORY_PEAK = 1u << 2,
        SBX_CG_STAT_PIDS = 1u << 3, /* pids_current and pids_peak (pids.current only where there
                                     * is no pids.peak) */
        SBX_CG_STAT_PIDS_REFUSED = 1u << 4,
        SBX_CG_STAT_CPU = 1u << 5, /* cpu_usage_usec and cpu_throttled_usec */
        SBX_CG_STAT_MEMORY_CURRENT = 1u << 6, /* memory_current_bytes */
        SBX_CG_STAT_ALL = ~0u,
};
int sbx_cgroup_stats_read_some(sbx_cgroup *cg, unsigned what, sbx_cgroup_stats *ret);

/* A new fd (owned by the caller, O_CLOEXEC|O_NONBLOCK) that becomes readable when the memory
 * group reports an OOM event: v2 an inotify fd watching memory.events (read the events, then
 * sbx_cgroup_stats_read()); v1 an eventfd registered on memory.oom_control. -EOPNOTSUPP
 * without a memory group. */
int sbx_cgroup_event_fd(sbx_cgroup *cg);
/* The sandbox is about to end: keep what only the groups an engine made below ours hold (v1
 * counts refused forks where they were tried, in runc's group under podman's --cgroup-parent,
 * which podman removes as the container goes). Later stats take the larger count. */
void sbx_cgroup_note_end(sbx_cgroup *cg);

/* Remove every group created; where processes are left in one (rmdir refuses), kill them as
 * sbx_cgroup_kill() does and remove what is left (EBUSY retried for ~1 s). The
 * shared "sandboxer" base directories stay: the next sandbox needs them, and removing and
 * re-creating them costs two cgroup operations per hierarchy and run ('sandboxer gc' removes
 * them when empty). The handle stays valid for sbx_cgroup_free(). Returns 0 or the first -errno. */
int sbx_cgroup_destroy(sbx_cgroup *cg);
/* Free the handle; does NOT remove the groups (that is sbx_cgroup_destroy()). NULL ok. */
sbx_cgroup *sbx_cgroup_free(sbx_cgroup *cg);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_cgroup *, sbx_cgroup_free);
#define _cleanup_cgroup_ _cleanup_(sbx_cgroup_freep)

typedef struct sbx_cgroup_gc_options {
        bool dry_run; /* list, remove nothing */
        unsigned min_age_s; /* leave groups younger than this (a sandbox between mkdir and attach) */
        const char *prefix; /* only names starting with this (NULL: all) */
} sbx_cgroup_gc_options;
/* Remove leftover sandbox groups (and their sub-groups) under every probed hierarchy's base
 * whose processes are all gone, plus empty "supervisor-PID" leaves of dead PIDs. Returns the
 * number of distinct names removed (or that would be, with dry_run) and, if ret_names is
 * non-NULL, those names (a strv the caller frees). Groups that still hold processes are never
 * touched (the kernel refuses too). */
int sbx_cgroup_gc(
        const sbx_cgroup_probe_result *probe, const sbx_cgroup_gc_options *opts, char ***ret_names);

/* Group names that say who owns them: "<id>.<pid>.<pidns>" — the owning supervisor's pid and
 * the inode number of its pid namespace (hex), so that a leftover of a supervisor killed with
 * SIGKILL is recognised from its name alone (sbx_cgroup_gc_dead_owners()). `id` as for
 * sbx_cgroup_create() names, at most 40 characters. Writes the name into buf; 0, -EINVAL,
 * -ENAMETOOLONG, or -errno when the pid namespace cannot be told (stat /proc/self/ns/pid). */
int sbx_cgroup_owned_name(const char *id, char *buf, size_t size);

/* Is the owner of a name made by sbx_cgroup_owned_name() (a cgroup, a per-run directory) known
 * to be dead? False for any other name, and for an owner in another pid namespace. */
bool sbx_owned_name_dead(const char *name);

/* Remove the group at path and the groups below it (an engine's, made under ours: runc's container
 * group), deepest first. 0 (also when it is not there), or -errno: -EBUSY while tasks are in it. */
int sbx_cgroup_remove_tree(const char *path);

/* Add to *names the subdirectories of the directory open at fd whose names (sbx_cgroup_owned_name())
 * name a dead owner, each once: names only, a getdents64() per batch. 0 or -errno. */
int sbx_owned_dead_scan(int fd, char ***names);

/* The cheap clean-up every run does at its start: one getdents64() per distinct base (3
 * syscalls each), no stat, no file read. Entries named by sbx_cgroup_owned_name() whose owner
 * is dead (same pid namespace as ours, kill(pid, 0) = ESRCH) are removed in every hierarchy,
 * sub-groups first; a group still populated (its processes are still dying) refuses rmdir with
 * EBUSY and is left for a later run. Never kills anything, never waits, never touches names of
 * any other form (those are for sbx_cgroup_gc()). Returns the number of groups removed or
 * -errno; if ret_names is non-NULL, the names removed (a strv the caller frees). */
int sbx_cgroup_gc_dead_owners(const sbx_cgroup_probe_result *probe, char ***ret_names);
/* The same over the bases of the probe cg was made from: for a caller that cleans up once its
 * own sandbox has started, off the path to the command. */
int sbx_cgroup_gc_dead_siblings(sbx_cgroup *cg);
