/* probe.h — can this host do X? One plain function per kernel feature the backends rely on,
 * each answering available or not with a reason a person can act on (what refused, and the fix).
 * Used by `sandboxer doctor` and by backends' availability checks.
 *
 * Every probe returns 1 (available) or 0 (unavailable) and fills *ret, or -errno (and leaves
 * *ret untouched) when the probe itself could not be carried out (pipe, fork, memory). Probes
 * change nothing on the host: trials happen in short-lived children. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "basic/macro.h"

typedef struct sbx_probe_result {
        bool available;
        int errnum; /* positive errno behind "unavailable", 0 otherwise */
        char step[64]; /* the step that failed ("clone", "uid_map", "mount proc", ...), "" if none */
        char detail[768]; /* what was found; when unavailable: why, and the fix */
} sbx_probe_result;

/* Trial child: clone with CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWCGROUP, uid/gid maps
 * written from the parent (uid and gid 1000 inside → outside_uid/outside_gid), then in the child
 * a private mount tree, a tmpfs, a fresh /proc and loopback up. Tells apart a refused clone
 * (EPERM: container seccomp profile, kernel.unprivileged_userns_clone, AppArmor; ENOSPC:
 * user.max_*_namespaces; EINVAL: namespace type not built), a refused map, and mounts refused
 * after a successful clone (LSM, no fully visible /proc). */
int sbx_probe_namespaces(uid_t outside_uid, gid_t outside_gid, sbx_probe_result *ret);

/* Landlock ABI >= 1 (detail names the ABI and the boot parameter fix when disabled). */
int sbx_probe_landlock(sbx_probe_result *ret);
/* seccomp filter mode with SECCOMP_RET_KILL_PROCESS (detail: how many filters this process is
 * already under). */
int sbx_probe_seccomp(sbx_probe_result *ret);
/* SECCOMP_RET_USER_NOTIF, and a trial child that installs a listener (EBUSY when already nested
 * under one: runs would be enforced but unobserved). */
int sbx_probe_seccomp_notify(sbx_probe_result *ret);
/* Landlock's denial records (ABI 7) readable from the audit log: root, the host's audit on. */
int sbx_probe_landlock_audit(sbx_probe_result *ret);
int sbx_probe_pidfd_open(sbx_probe_result *ret);
int sbx_probe_clone3(sbx_probe_result *ret);
int sbx_probe_close_range(sbx_probe_result *ret);
int sbx_probe_openat2(sbx_probe_result *ret);
/* mount_setattr(2), needed for idmapped mounts. */
int sbx_probe_mount_setattr(sbx_probe_result *ret);
int sbx_probe_no_new_privs(sbx_probe_result *ret);

/* 32-bit system calls on x86_64 (the i386 ABI through int $0x80, the x32 one): does the host
 * accept them? Trial children make one call each. Available when either is accepted (every
 * sandbox's filter then kills a process that uses it); unavailable when the host refuses both
 * (a kernel without the emulation, ia32_emulation=0, a hypervisor that refuses int 0x80: the
 * trial dies by SIGSEGV) or a filter above us does (SIGSYS). The detail says which, per ABI. */
int sbx_probe_syscalls_32bit(sbx_probe_result *ret);
/* The same judgement from the two trial children's wait statuses (exit 0: the call returned the
 * pid; 1: ENOSYS; 2: another error; or killed by a signal). For tests. */
int sbx_probe_syscalls_32bit_from(int i386_status, int x32_status, sbx_probe_result *ret);
/* SIG_DFL for sig by the raw system call, for a trial child that is to die by it: a sanitizer
 * runtime intercepts sigaction() and keeps its own SIGSEGV handler, which would turn the death
 * into a report and an exit. */
void sbx_probe_signal_default(int sig);

/* The cgroup layout: available unless no cgroup file system is mounted. */
int sbx_probe_cgroup(sbx_probe_result *ret);
/* One controller ("memory", "pids", "cpu", "freezer"): mounted (v1 hierarchy, or enabled in our
 * v2 cgroup), and our cgroup writable by us (so a sandbox's cgroup can be made below it). */
int sbx_probe_cgroup_controller(const char *controller, sbx_probe_result *ret);
