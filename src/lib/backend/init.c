/* init.c — the sandbox's init: found, its argv, the environment it passes on. */
#include "backend/common.h"

#include <fcntl.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include "basic/strv.h"
#include "supervise/egress-run.h"

/* Where the init binary is: next to the running program (installed or build tree), else the
 * libexec directory. */
int sbx_backend_open_init(sbx_error *e) {
        char exe[PATH_MAX];
        const char *env = secure_getenv("SANDBOXER_INIT");
        if (env && *env) {
                int fd = open(env, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return sbx_error_set(e, errno, "init: open",
                                "cannot open the sandbox init %s (from $SANDBOXER_INIT): %m", env);
                return fd;
        }
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
        if (n > 0) {
                exe[n] = 0;
                char *slash = strrchr(exe, '/');
                if (slash) {
                        static const char *const rel[] = {"/sandboxer-init", "/../init/sandboxer-init",
                                "/../libexec/sandboxer/sandboxer-init"};
                        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                                char path[PATH_MAX];
                                snprintf(path, sizeof path, "%.*s%s", (int) (slash - exe), exe, rel[i]);
                                int fd = open(path, O_RDONLY | O_CLOEXEC);
                                if (fd >= 0)
                                        return fd;
                        }
                }
        }
        int fd = open(SBX_LIBEXECDIR "/sandboxer-init", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(e, errno, "init: open",
                        "cannot find the sandbox init (sandboxer-init) next to %s or in %s: %m; reinstall "
                        "sandboxer",
                        n > 0 ? exe : "the program", SBX_LIBEXECDIR);
        return fd;
}

int sbx_backend_build_env(const sbx_config *cfg, const char *scratch, const char *ws_visible, char ***ret) {
        return sbx_backend_build_env_proxy(cfg, scratch, ws_visible, "127.0.0.1:3128", ret);
}

int sbx_backend_build_env_proxy(
        const sbx_config *cfg, const char *scratch, const char *ws_visible, const char *proxy, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        const char *home = cfg->profile->fs_home ? cfg->profile->fs_home : scratch, *path = SBX_DEFAULT_PATH,
                   *lang = "C.UTF-8";
        for (size_t i = 0; i < cfg->n_env; i++) {
                if (streq(cfg->env[i].name, "HOME"))
                        home = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "PATH"))
                        path = cfg->env[i].value;
                else if (streq(cfg->env[i].name, "LANG"))
                        lang = cfg->env[i].value;
        }
        char *s;
        if (asprintf(&s, "TMPDIR=%s", scratch) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "HOME=%s", home) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "PATH=%s", path) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        if (asprintf(&s, "LANG=%s", lang) < 0 || strv_consume(&env, s) < 0)
                return -ENOMEM;
        /* The egress proxy, by the names programs read (DESIGN.md: network); the profile's own
         * values for them would point nowhere: the proxy is the only way out. */
        static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"};
        bool proxied = sbx_profile_egress_proxied(cfg->profile);
        for (size_t i = 0; proxied && i < ELEMENTSOF(proxy_vars); i++) {
                bool no = i >= 6;
                if (asprintf(&s, "%s=%s%s", proxy_vars[i],
                            no                 ? "localhost,127.0.0.1"
                            : i == 2 || i == 5 ? "socks5h://"
                                               : "http://",
                            no ? "" : proxy) < 0 ||
                        strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < cfg->n_env; i++) {
                const char *n = cfg->env[i].name;
                if (streq(n, "HOME") || streq(n, "PATH") || streq(n, "LANG"))
                        continue;
                bool shadowed = false;
                for (size_t k = 0; proxied && k < ELEMENTSOF(proxy_vars); k++)
                        shadowed = shadowed || streq(n, proxy_vars[k]);
                if (shadowed)
                        continue;
                if (asprintf(&s, "%s=%s", n, cfg->env[i].value) < 0 || strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        /* network.services: each at 127.0.0.1:PORT inside, its URL in the variable it names */
        STRV_FOREACH(sv, cfg->profile->net_services) {
                char name[64], target[1100], port[8], var[300], proto[8];
                if (sscanf(*sv, "%63[^\t]\t%1099[^\t]\t%7[^\t]\t%299[^\t]\t%7s", name, target, port, var,
                            proto) != 5)
                        continue; /* no variable */
                if (asprintf(&s, "%s=%s127.0.0.1:%s", var, streq(proto, "tcp") ? "" : "http://", port) < 0 ||
                        strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        if (ws_visible) {
                if (asprintf(&s, "SANDBOXER_WORKSPACE=%s", ws_visible) < 0 || strv_consume(&env, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

int sbx_backend_init_argv(
        const char *cwd, bool landlock, bool landlock_log, bool seccomp, char *const *argv, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;
        if (strv_extend(&a, "sandboxer-init") < 0 || strv_extend(&a, "--cwd") < 0 ||
                strv_extend(&a, cwd) < 0 ||
                (landlock && (strv_extend(&a, "--landlock-fd") < 0 || strv_extend(&a, "5") < 0)) ||
                (landlock && landlock_log && strv_extend(&a, "--landlock-log") < 0) ||
                (seccomp && (strv_extend(&a, "--seccomp-fd") < 0 || strv_extend(&a, "4") < 0)) ||
                (!argv && strv_extend(&a, "--serve") < 0) || strv_extend(&a, "--") < 0)
                return -ENOMEM;
        for (char *const *i = argv; i && *i; i++)
                if (strv_extend(&a, *i) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

const char *sbx_backend_spawn_fence_text(const sbx_profile *pr) {
        return !pr->allow_spawn  ? ", no new processes, one execve"
               : !pr->allow_exec ? ", one execve (the command's; fork allowed)"
                                 : "";
}

int sbx_backend_init_argv_isolated(sbx_backend_id id, char ***init_argv) {
        static const struct {
                sbx_cap cap;
                const char *ns;
        } claims[] = {
                {SBX_CAP_PID_ISOLATION, "pid"},
                {SBX_CAP_IPC_ISOLATION, "ipc"},
                {SBX_CAP_HOSTNAME, "uts"},
                {SBX_CAP_NET_LOOPBACK, "net"},
        };
        const sbx_backend *b = sbx_backend_get(id);
        if (!b || !init_argv || !*init_argv || !(*init_argv)[0])
                return -EINVAL;
        char list[256] = "";
        size_t l = 0;
        for (size_t i = 0; i <= ELEMENTSOF(claims); i++) {
                const char *ns = i == ELEMENTSOF(claims) ? "mnt" : claims[i].ns;
                if (i == ELEMENTSOF(claims) ? b->level < SBX_LEVEL_CONTAINER
                                            : !sbx_backend_cap(b, claims[i].cap)->yes)
                        continue;
                char path[32];
                struct stat st;
                snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
                if (stat(path, &st) < 0)
                        return negative_errno();
                l += (size_t) snprintf(list + l, sizeof list - l, "%s%s:%llu", l ? "," : "", ns,
                        (unsigned long long) st.st_ino);
        }
        if (l == 0)
                return 0;
        size_t n = strv_length(*init_argv);
        char **a = calloc(n + 3, sizeof(char *));
        if (!a)
                return -ENOMEM;
        a[0] = (*init_argv)[0];
        a[1] = strdup("--host-ns");
        a[2] = strdup(list);
        if (!a[1] || !a[2]) {
                free(a[1]);
                free(a[2]);
                free(a);
                return -ENOMEM;
        }
        memcpy(a + 3, *init_argv + 1, n * sizeof(char *)); /* the rest, and the NULL */
        free(*init_argv);
        *init_argv = a;
        return 0;
}

int sbx_backend_egress_ports(const sbx_profile *pr, char *ports, size_t size) {
        size_t l = (size_t) snprintf(ports, size, "%u", SBX_EGRESS_PROXY_PORT);
        STRV_FOREACH(sv, pr->net_services) {
                const char *t1 = strchr(*sv, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                if (!t2 || l + 8 >= size)
                        return -EINVAL; /* malformed, or more services than the report keeps */
                l += (size_t) snprintf(ports + l, size - l, ",%lu", strtoul(t2 + 1, NULL, 10));
        }
        return 0;
}

int sbx_backend_init_argv_egress(const sbx_profile *pr, char ***init_argv) {
        if (!sbx_profile_egress_proxied(pr))
                return 0;
        if (!init_argv || !*init_argv || !(*init_argv)[0])
                return -EINVAL;
        char ports[256];
        int r = sbx_backend_egress_ports(pr, ports, sizeof ports);
        if (r < 0)
                return r;
        size_t n = strv_length(*init_argv);
        char **a = calloc(n + 3, sizeof(char *));
        if (!a)
                return -ENOMEM;
        a[0] = (*init_argv)[0];
        a[1] = strdup("--egress-ports");
        a[2] = strdup(ports);
        if (!a[1] || !a[2]) {
                free(a[1]);
                free(a[2]);
                free(a);
                return -ENOMEM;
        }
        memcpy(a + 3, *init_argv + 1, n * sizeof(char *)); /* through the NULL */
        free(*init_argv);
        *init_argv = a;
        return 1;
}
