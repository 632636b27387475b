/* host.c — host facts shared by the report (host{}) and `sandboxer doctor`. */
#include "host.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#if HAVE_LINUX
#include <linux/landlock.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#endif

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif

static const char *const cgroup_layout_table[_SBX_CGROUP_MAX] = {
        [SBX_CGROUP_NONE] = "none",
        [SBX_CGROUP_V1] = "v1",
        [SBX_CGROUP_V2] = "v2",
        [SBX_CGROUP_HYBRID] = "hybrid",
};

const char *sbx_cgroup_layout_to_string(sbx_cgroup_layout l) {
        if (l < 0 || l >= _SBX_CGROUP_MAX)
                return NULL;
        return cgroup_layout_table[l];
}

int sbx_host_kernel_release(char *buf, size_t size) {
        struct utsname u;
        if (!buf || size == 0)
                return -EINVAL;
        if (uname(&u) < 0)
                return negative_errno();
        if ((size_t) snprintf(buf, size, "%s", u.release) >= size)
                return -ENOBUFS;
        return 0;
}

unsigned sbx_host_kernel_version(void) {
        struct utsname u;
        unsigned major, minor;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return 0;
        return major * 1000 + minor;
}

#if HAVE_LINUX
int sbx_host_landlock_abi(void) {
        long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi >= 0)
                return (int) abi;
        if (errno == ENOSYS || errno == EOPNOTSUPP)
                return 0;
        return negative_errno();
}

static bool fs_type_is(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) == 0 && (long) s.f_type == magic;
}

sbx_cgroup_layout sbx_host_cgroup_layout(void) {
        if (fs_type_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
                return SBX_CGROUP_V2;

        /* v1: a tmpfs at /sys/fs/cgroup holding one cgroup (v1) mount per controller. Any of
         * the usual controllers being mounted is enough to call it v1. */
        static const char *const controllers[] = {"memory", "pids", "cpu", "cpu,cpuacct", "cpuacct",
                "freezer", "devices", "blkio", "cpuset", "systemd"};
        bool v1 = false;
        for (size_t i = 0; i < ELEMENTSOF(controllers) && !v1; i++) {
                char p[64];
                snprintf(p, sizeof p, "/sys/fs/cgroup/%s", controllers[i]);
                v1 = fs_type_is(p, CGROUP_SUPER_MAGIC);
        }
        if (!v1)
                return SBX_CGROUP_NONE;
        if (fs_type_is("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
                return SBX_CGROUP_HYBRID;
        return SBX_CGROUP_V1;
}
#else
/* Without Linux there is neither Landlock nor cgroups. */
int sbx_host_landlock_abi(void) {
        return 0;
}

sbx_cgroup_layout sbx_host_cgroup_layout(void) {
        return SBX_CGROUP_NONE;
}
#endif

bool sbx_host_unprivileged(void) {
        return geteuid() != 0;
}
