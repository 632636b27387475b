/* oci.h — what the container-engine backends (podman, docker) share: the base root filesystem
 * sandboxer builds offline and caches, the bind plan for the profile's paths, the sandbox's
 * cgroup at a path an engine can be pointed at, and a launch that supervises an engine client
 * (not the init itself) with the shared supervisor and report. */
#pragma once

#include <stdbool.h>

#include "backend/common.h"
#include "backend/plan.h"

#define SBX_OCI_INIT_INSIDE "/.sandboxer-init"
#define SBX_OCI_SCRATCH "/tmp"
#define SBX_OCI_LABEL "io.sandboxer.run"

/* The base root filesystem: a skeleton of empty mount points (usr, etc, proc, dev, tmp, ...),
 * the host's merged-/usr symlinks (bin -> usr/bin, ...), a generated /etc/passwd and /etc/group
 * and the files the engines bind over (/etc/hosts, /etc/hostname, /etc/resolv.conf). No file
 * of the host is copied: /usr and every read path are bound read-only at run time, as bubblewrap
 * does. Made once, offline, under the cache directory ($SANDBOXER_CACHE_DIR,
 * /var/cache/sandboxer as root, else $XDG_CACHE_HOME/sandboxer or ~/.cache/sandboxer), in a
 * directory named for its format version, atomically (built aside, renamed into place). The
 * path into buf; 0 or -errno with the story in *e. */
int sbx_oci_base_rootfs(char *buf, size_t size, sbx_error *e);

/* The same skeleton as an uncompressed tar archive (for an engine that takes images only:
 * docker's POST /images/create?fromSrc=-), into *ret (malloc'd), *ret_size bytes. */
int sbx_oci_base_tar(char **ret, size_t *ret_size, sbx_error *e);

/* The binds of a run: the profile's read paths (ro), write paths (rw), the workspace, each as
 * host source (resolved) and target, recorded in the report's mounts; a read path that is a
 * symlink into another read path is skipped when the base has it already (bin, lib, lib64,
 * sbin). ret_binds: a strv of triples source, target, "ro"|"rw". Paths an engine's mount
 * syntax cannot carry (',' or ':') are refused. */
int sbx_oci_binds(const sbx_run_plan *rp, sbx_report *rep, char ***ret_binds, sbx_error *e);

/* The sandbox's cgroup "/sandboxer/<owned name>" at the same path in every hierarchy (an
 * engine's cgroup parent is one path for all of them), with the limits; the container's own
 * group goes below it, so the limits, the OOM event, the pids refusals and the kill are ours.
 * Fills the limit mechanisms of the report (timeout, output: supervisor; scratch: tmpfs).
 * *ret_cg NULL and 0 when no cgroup can be had and the engine must enforce the limits itself
 * (*ret_engine_limits true then). */
int sbx_oci_plan_limits(
        const sbx_config *cfg, sbx_report *rep, sbx_cgroup **ret_cg, bool *ret_engine_limits, sbx_error *e);
/* The engine enforces memory, pids and cpus (no cgroup of ours): the report names the host's
 * cgroup version as their mechanism. ignored_why: the engine takes the limits and enforces none
 * of them here (a rootless engine on cgroup v1), and says why — each is then a setup error, or
 * "none" where the policy lists it under enforce.best_effort. Timeout, budget and output are the
 * supervisor's, scratch a tmpfs. 0 or -EOPNOTSUPP. */
int sbx_oci_engine_limits(const sbx_config *cfg, sbx_report *rep, const char *ignored_why, sbx_error *e);
/* "/sandboxer/<name>": the engine's cgroup parent for cg. */
int sbx_oci_cgroup_parent(sbx_cgroup *cg, char *buf, size_t size);

/* The engine's seccomp profile (JSON) for the rule table with options o, as a file in the
 * runtime directory named for the options and the build (sbx_code_identity()): the JSON (18 KB,
 * ~0.4 ms to build and hash) is made only when the file is not there yet, written atomically.
 * Its path into buf. */
int sbx_oci_seccomp_file_for(const sbx_seccomp_opts *o, char *buf, size_t size, sbx_error *e);

/* Remove "/sandboxer/<name>" from every hierarchy where it is empty: runc makes the cgroup
 * parent in hierarchies sandboxer does not use (blkio, devices, name=systemd, ...) and leaves
 * it. name NULL: every such group whose owning supervisor is dead. Best effort. */
void sbx_oci_cgroup_sweep(const char *name);
/* The dead-owner case, for `sandboxer gc` too: below root (a cgroupfs, or a fake tree), every
 * <hierarchy>/sandboxer/<id>.<pid>.<pidns> whose owner is dead; each removed (or, dry_run, that
 * would be) is added to *removed, each failure to *errors (either may be NULL). */
void sbx_oci_cgroup_gc(const char *root, bool dry_run, char ***removed, char ***errors);

typedef struct sbx_oci_launch {
        /* Start the engine client with these as its 0, 1, 2 and 3 (the status socket): 0 and the
         * client's pid and pidfd (a child of ours), or -errno with *e set. */
        int (*start)(void *ud, int in_fd, int out_fd, int err_fd, int status_fd, pid_t *ret_pid,
                int *ret_pidfd, sbx_error *e);
        void *userdata;
        sbx_cgroup *cg; /* the sandbox's group (the container inside it), or NULL */
        const sbx_seccomp_opts *seccomp; /* the init's observed program, or NULL */
        char *const *writable;
        /* The engine said the memory limit was hit (docker: State.OOMKilled), read after the
         * client is gone: a pipe the client writes "O" to, or -1. */
        int oom_report_fd;
        /* network.egress: the init makes the proxy's socket in the container's network namespace
         * (--egress-ports) and hands it over its status socket; the launch serves it */
        bool egress;
        /* timeout_s counts from the command's start, budget_s from the launch (a guest's boot
         * is not the command's time) */
        bool timeout_from_start;
        /* A persistent sandbox (io->persist; the client stands in for an init with --serve): the
         * environment and working directory its execs start from, inside */
        char *const *persist_envp;
        const char *persist_cwd;
        /* A persistent sandbox's group with no limits, which its client joined: what pause
         * freezes (a microvm's), when there is no cg */
        sbx_cgroup *freeze_cg;
} sbx_oci_launch;

/* The common start of an engine client (a relay): fork a child of ours that dies with us
 * (PR_SET_PDEATHSIG), with in_fd, out_fd, err_fd and status_fd as its 0, 1, 2 and 3 and each of
 * keep[0, n_keep) moved above them (the numbers updated in place, in the child), then main(ud),
 * which never returns. Its pid and a pidfd; 0, or -errno with *e (what: the step's name). */
int sbx_oci_fork_client(int in_fd, int out_fd, int err_fd, int status_fd, int *keep, size_t n_keep,
        _noreturn_ void (*main)(void *ud), void *ud, const char *what, pid_t *ret_pid, int *ret_pidfd,
        sbx_error *e);

/* Start the client, supervise it (timeout, output cap, signals, the init's status socket and
 * listener when the engine passed them through), classify into the report. Returns 0 when the
 * command ran, -errno on a setup error. The container itself is the caller's to remove when
 * rep->killed_by_sandbox (the client was killed before it could). */
int sbx_oci_run(
        const sbx_config *cfg, const sbx_run_io *io, sbx_report *rep, const sbx_oci_launch *l, sbx_error *e);

/* A process run to completion with stdio on /dev/null (podman rm, ...): its exit status, or
 * -errno. */
int sbx_oci_run_quiet(const char *tool, char *const *argv, char *const *envp);

extern const sbx_backend sbx_backend_podman;
extern const sbx_backend sbx_backend_docker;
