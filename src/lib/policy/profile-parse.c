/* profile-parse.c — reading one YAML profile strictly: the top-level keys, one parser per
 * section, each value checked and positioned (FILE:LINE:COLUMN) when refused. */
#include <string.h>

#include "basic/strv.h"
#include "policy/policy-internal.h"
#include "policy/profile-internal.h"

static int level_from(const char *s) {
        return sbx_level_from_string(s);
}
static int mode_from(const char *s) {
        return sbx_mode_from_string(s);
}
static int backend_from(const char *s) {
        return sbx_backend_from_string(s);
}
static int access_from(const char *s) {
        return sbx_access_from_string(s);
}
static int on_violation_from(const char *s) {
        return sbx_on_violation_from_string(s);
}
static int cmd_mode_from(const char *s) {
        return sbx_cmd_mode_from_string(s);
}
static int observe_from(const char *s) {
        return sbx_observe_from_string(s);
}
static int net_default_from(const char *s) {
        return streq(s, "deny") ? 0 : streq(s, "allow") ? 1 : -EINVAL;
}
static int strategy_from(const char *s) {
        static const char *const strategies[] = {
                "prefer-self-hosted", "lowest-cost", "lowest-latency", "explicit"};
        for (size_t i = 0; i < ELEMENTSOF(strategies); i++)
                if (streq(s, strategies[i]))
                        return (int) i;
        return -EINVAL;
}

bool profile_valid_id(const char *s) {
        if (!*s || strlen(s) > 128)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("._-", *s)))
                        return false;
        return true;
}

static bool valid_semver(const char *s) {
        for (int part = 0; part < 3; part++) {
                const char *start = s;
                while (*s >= '0' && *s <= '9')
                        s++;
                if (s == start || s - start > 9 || (s - start > 1 && *start == '0'))
                        return false;
                if (part < 2 && *s++ != '.')
                        return false;
        }
        return *s == 0;
}

static int get_enum(yctx *c, yaml_node_t *n, const char *where, const char *key, int (*from)(const char *),
        const char *choices, int *ret) {
        char path[256];
        return yget_enum(c, n, ypath(path, sizeof path, where, key), from, choices, ret);
}

static int parse_isolation(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"level", "mode", "backend"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        r = ymap(c, n, "isolation", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_enum(c, v[0], "isolation", "level", level_from, "policy | container | microvm", &x);
                if (r < 0)
                        return r;
                p->level = (sbx_level) x;
                profile_set_leaf(p, L_LEVEL);
        }
        if (v[1]) {
                r = get_enum(c, v[1], "isolation", "mode", mode_from, "balanced | strict", &x);
                if (r < 0)
                        return r;
                p->mode = (sbx_mode) x;
                profile_set_leaf(p, L_MODE);
        }
        if (v[2]) {
                r = get_enum(c, v[2], "isolation", "backend", backend_from,
                        "auto | native | landlock | bwrap | firejail | podman | docker | microvm", &x);
                if (r < 0)
                        return r;
                p->backend = (sbx_backend_id) x;
                profile_set_leaf(p, L_BACKEND);
        }
        return 0;
}

/* Replace *dst by a freshly parsed list. */
static int get_list(yctx *c, yaml_node_t *n, const char *where, const char *key, const char *what,
        ystr_check_fn check, char ***dst) {
        char path[256];
        char **l = NULL;
        int r;

        r = yget_strv(c, n, ypath(path, sizeof path, where, key), what, LIST_MAX, check, &l);
        if (r < 0)
                return r;
        strv_free(*dst);
        *dst = l;
        return 0;
}

/* A service's target: "unix:/absolute/path" or "HOST:PORT" (a name, an address, [v6]:port). */
static bool service_target(const char *t) {
        if (strncmp(t, "unix:", 5) == 0)
                return t[5] == '/' && strlen(t) < 5 + 108 && !strchr(t, '\t');
        egress_rule r;
        return egress_parse(t, &r) >= 0 && r.port > 0 && !strchr(t, '*') && !strchr(t, '/');
}

/* network.services: [{name, target, port, env, protocol}], as "name\ttarget\tport\tenv\tprotocol". */
static int parse_services(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"name", "target", "port", "env", "protocol"};
        char path[64], got[96];
        if (n->type != YAML_SEQUENCE_NODE)
                return yerr(c, n,
                        "network.services: expected a list of {name, target, port, env, protocol}, got %s",
                        ynode_describe(n, got, sizeof got));
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        size_t i = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
                it++, i++) {
                yaml_node_t *s = yaml_document_get_node(&c->doc, *it), *v[ELEMENTSOF(keys)];
                ypath_index(path, sizeof path, "network.services", i);
                if (i >= 16)
                        return yerr(c, s, "network.services: at most 16 services");
                int r = ymap(c, s, path, keys, ELEMENTSOF(keys), v);
                if (r < 0)
                        return r;
                if (!v[0] || !v[1] || !v[2])
                        return yerr(c, s, "%s: needs name, target and port (env and protocol are optional)",
                                path);
                _cleanup_free_ char *name = NULL, *target = NULL, *env = NULL, *proto = NULL, *entry = NULL;
                double port;
                if ((r = yget_string(c, v[0], path, "a service name", &name)) < 0 ||
                        (r = ycheck_name(c, v[0], path, &name)) < 0 ||
                        (r = yget_string(c, v[1], path, "unix:/path or host:port", &target)) < 0 ||
                        (r = yget_number(
                                 c, v[2], path, "a port from 1 to 65535", true, false, 65535, &port)) < 0)
                        return r;
                if (!service_target(target))
                        return yerr(c, v[1], "%s.target: \"%s\" is not unix:/absolute/path or host:port",
                                path, target);
                if (port == 3128 || port == 53)
                        return yerr(c, v[2], "%s.port: %g is the egress proxy's or the resolver's own", path,
                                port);
                if (v[3]) {
                        const char *why;
                        if ((r = yget_string(c, v[3], path, "an environment variable name", &env)) < 0)
                                return r;
                        if (env_name_check(env, &why) < 0)
                                return yerr(c, v[3], "%s.env: \"%s\" cannot be set (%s)", path, env, why);
                }
                if (v[4]) {
                        if ((r = yget_string(c, v[4], path, "http or tcp", &proto)) < 0)
                                return r;
                        if (!streq(proto, "http") && !streq(proto, "tcp"))
                                return yerr(c, v[4], "%s.protocol: expected http or tcp, got \"%s\"", path,
                                        proto);
                }
                STRV_FOREACH(o, l) {
                        unsigned oport = 0;
                        const char *t1 = strchr(*o, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                        if (t2)
                                oport = (unsigned) strtoul(t2 + 1, NULL, 10);
                        if ((t1 && (size_t) (t1 - *o) == strlen(name) &&
                                    strncmp(*o, name, strlen(name)) == 0) ||
                                oport == (unsigned) port)
                                return yerr(c, s, "%s: a second service named %s or at port %g", path, name,
                                        port);
                }
                if (asprintf(&entry, "%s\t%s\t%u\t%s\t%s", name, target, (unsigned) port, env ? env : "",
                            proto ? proto : "http") < 0 ||
                        strv_extend(&l, entry) < 0)
                        return -ENOMEM;
        }
        strv_free(p->net_services);
        p->net_services = TAKE_PTR(l);
        return 0;
}

static int parse_network(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"default", "egress", "loopback", "services", "egress_deny"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        r = ymap(c, n, "network", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_enum(c, v[0], "network", "default", net_default_from, "deny | allow", &x);
                if (r < 0)
                        return r;
                p->net_allow = x == 1;
                profile_set_leaf(p, L_NET_DEFAULT);
        }
        if (v[1]) {
                r = get_list(c, v[1], "network", "egress", "egress rules", ycheck_egress, &p->egress);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_EGRESS);
        }
        if (v[2]) {
                r = yget_bool(c, v[2], "network.loopback", &p->loopback);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_LOOPBACK);
        }
        if (v[3]) {
                r = parse_services(c, v[3], p);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_SERVICES);
        }
        if (v[4]) {
                r = get_list(
                        c, v[4], "network", "egress_deny", "egress rules", ycheck_egress, &p->egress_deny);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_EGRESS_DENY);
        }
        return 0;
}

static int parse_workspace(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"path", "mount", "access"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        r = ymap(c, n, "workspace", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                char *s = NULL;
                r = yget_string_or_null(c, v[0], "workspace.path", "an absolute host directory or null", &s);
                if (r < 0)
                        return r;
                if (s) {
                        r = ycheck_abs_path(c, v[0], "workspace.path", &s);
                        if (r < 0) {
                                free(s);
                                return r;
                        }
                }
                free(p->ws_path);
                p->ws_path = s;
                profile_set_leaf(p, L_WS_PATH);
        }
        if (v[1]) {
                char *s = NULL;
                r = yget_string(c, v[1], "workspace.mount", "an absolute path inside the sandbox", &s);
                if (r >= 0)
                        r = ycheck_abs_path(c, v[1], "workspace.mount", &s);
                if (r >= 0 && streq(s, "/"))
                        r = yerr(c, v[1],
                                "workspace.mount: the workspace cannot be mounted over '/' (use e.g. "
                                "/workspace)");
                if (r >= 0 &&
                        (path_is_under(s, "/proc") || path_is_under(s, "/dev") || path_is_under(s, "/sys")))
                        r = yerr(c, v[1],
                                "workspace.mount: \"%s\" is under /proc, /sys or /dev, which the sandbox "
                                "owns (use e.g. /workspace)",
                                s);
                if (r < 0) {
                        free(s);
                        return r;
                }
                free(p->ws_mount);
                p->ws_mount = s;
                profile_set_leaf(p, L_WS_MOUNT);
        }
        if (v[2]) {
                r = get_enum(c, v[2], "workspace", "access", access_from, "none | ro | rw", &x);
                if (r < 0)
                        return r;
                p->ws_access = (sbx_access) x;
                profile_set_leaf(p, L_WS_ACCESS);
        }
        return 0;
}

/* A path inside the sandbox that the sandbox's own mounts may not cover: '/', /proc, /sys, /dev,
 * the scratch (/tmp) itself. */
static int check_inside_path(yctx *c, yaml_node_t *n, const char *key, const char *s) {
        if (streq(s, "/") || streq(s, "/tmp"))
                return yerr(c, n, "%s: \"%s\" is the sandbox's root or its scratch (use e.g. /home/user)",
                        key, s);
        if (path_is_under(s, "/proc") || path_is_under(s, "/dev") || path_is_under(s, "/sys"))
                return yerr(c, n,
                        "%s: \"%s\" is under /proc, /sys or /dev, which the sandbox owns (use e.g. "
                        "/home/user)",
                        key, s);
        return 0;
}

static int parse_filesystem(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"read", "write", "exec", "home"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "filesystem", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_list(c, v[0], "filesystem", "read", "absolute paths", ycheck_abs_path, &p->fs_read);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_FS_READ);
        }
        if (v[1]) {
                r = get_list(
                        c, v[1], "filesystem", "write", "absolute paths", ycheck_abs_path, &p->fs_write);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_FS_WRITE);
        }
        if (v[2]) {
                if (ynode_kind(v[2]) == YK_NULL) {
                        p->fs_exec = strv_free(p->fs_exec);
                        p->fs_exec_set = false;
                } else {
                        r = get_list(c, v[2], "filesystem", "exec", "absolute paths (or null)",
                                ycheck_abs_path, &p->fs_exec);
                        if (r < 0)
                                return r;
                        p->fs_exec_set = true;
                }
                profile_set_leaf(p, L_FS_EXEC);
        }
        if (v[3]) {
                char *s = NULL;
                r = yget_string_or_null(
                        c, v[3], "filesystem.home", "an absolute path inside the sandbox (or null)", &s);
                if (r >= 0 && s)
                        r = ycheck_abs_path(c, v[3], "filesystem.home", &s);
                if (r >= 0 && s)
                        r = check_inside_path(c, v[3], "filesystem.home", s);
                if (r < 0) {
                        free(s);
                        return r;
                }
                free(p->fs_home);
                p->fs_home = s;
                profile_set_leaf(p, L_FS_HOME);
        }
        return 0;
}

/* user: the name of uid 1000 inside, as /etc/passwd spells names (a letter or '_', then letters,
 * digits, '_' or '-'; at most 32). */
static bool valid_user(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 32 || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
                        return false;
        return true;
}

static int parse_commands(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"mode", "allow", "deny"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        r = ymap(c, n, "process.commands", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_enum(c, v[0], "process.commands", "mode", cmd_mode_from, "off | warn | strict", &x);
                if (r < 0)
                        return r;
                p->cmd_mode = (sbx_cmd_mode) x;
                profile_set_leaf(p, L_CMD_MODE);
        }
        if (v[1]) {
                r = get_list(
                        c, v[1], "process.commands", "allow", "command names", ycheck_word, &p->cmd_allow);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_CMD_ALLOW);
        }
        if (v[2]) {
                r = get_list(
                        c, v[2], "process.commands", "deny", "command names", ycheck_word, &p->cmd_deny);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_CMD_DENY);
        }
        return 0;
}

static int parse_process(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"allow_spawn", "commands", "allow_exec", "long_lived"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "process", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = yget_bool(c, v[0], "process.allow_spawn", &p->allow_spawn);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_ALLOW_SPAWN);
        }
        if (v[1]) {
                r = parse_commands(c, v[1], p);
                if (r < 0)
                        return r;
        }
        if (v[2]) {
                r = yget_bool(c, v[2], "process.allow_exec", &p->allow_exec);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_ALLOW_EXEC);
        }
        if (v[3]) {
                r = yget_bool(c, v[3], "process.long_lived", &p->long_lived);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_LONG_LIVED);
        }
        return 0;
}

static int env_one(yctx *c, const char *key, yaml_node_t *key_node, yaml_node_t *value, const char *path,
        void *userdata) {
        sbx_profile *p = userdata;
        const char *why;
        int r;

        r = env_name_check(key, &why);
        if (r == -EPERM)
                return yerr(c, key_node, "env: %s cannot be set by a profile (%s)", key, why);
        if (r < 0)
                return yerr(c, key_node, "env: \"%s\" is not a valid variable name (%s)", key, why);
        if (ynode_kind(value) == YK_NULL)
                return yerr(c, value, "%s: expected a string value, got null (use \"\" for an empty value)",
                        path);
        if (ynode_kind(value) == YK_LIST || ynode_kind(value) == YK_MAP) {
                char got[32];
                return yerr(c, value, "%s: expected a string value, got %s", path,
                        ynode_describe(value, got, sizeof got));
        }
        if (strlen(yscalar(value)) != value->data.scalar.length)
                return yerr(c, value, "%s: the value contains a NUL character", path);
        return profile_env_set(&p->env, &p->n_env, key, yscalar(value));
}

static int parse_env(yctx *c, yaml_node_t *n, sbx_profile *p) {
        profile_env_free(p->env, p->n_env);
        p->env = NULL;
        p->n_env = 0;
        profile_set_leaf(p, L_ENV);
        return ymap_each(c, n, "env", 256, env_one, p);
}

static int parse_ttl(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"default", "max", "idle", "paused"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "ttl", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = yget_duration(c, v[0], "ttl.default", false, DURATION_MAX_S, &p->ttl_default_s);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_TTL_DEFAULT);
        }
        if (v[1]) {
                r = yget_duration(c, v[1], "ttl.max", false, DURATION_MAX_S, &p->ttl_max_s);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_TTL_MAX);
        }
        if (v[2]) {
                if (ynode_kind(v[2]) == YK_NULL)
                        p->ttl_idle_s = 0;
                else {
                        r = yget_duration(c, v[2], "ttl.idle", false, DURATION_MAX_S, &p->ttl_idle_s);
                        if (r < 0)
                                return r;
                }
                profile_set_leaf(p, L_TTL_IDLE);
        }
        if (v[3]) {
                r = yget_duration(c, v[3], "ttl.paused", false, DURATION_MAX_S, &p->ttl_paused_s);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_TTL_PAUSED);
        }
        if (v[0] && v[1] && p->ttl_default_s > p->ttl_max_s)
                return yerr(c, v[0], "ttl.default (%.15gs) is longer than ttl.max (%.15gs)",
                        p->ttl_default_s, p->ttl_max_s);
        return 0;
}

static int parse_placement(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"prefer", "fallback"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "placement", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_list(c, v[0], "placement", "prefer", "host or extension names", ycheck_word,
                        &p->placement_prefer);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_PLACEMENT_PREFER);
        }
        if (v[1]) {
                r = get_list(c, v[1], "placement", "fallback", "host or extension names", ycheck_word,
                        &p->placement_fallback);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_PLACEMENT_FALLBACK);
        }
        return 0;
}

static int constraint_one(yctx *c, const char *key, yaml_node_t *key_node, yaml_node_t *value,
        const char *path, void *userdata) {
        char ***l = userdata;
        _cleanup_free_ char *joined = NULL;
        char got[96];
        size_t len;

        switch (ynode_kind(value)) {
        case YK_BOOL:
        case YK_NUMBER:
        case YK_STRING:
                if (strlen(yscalar(value)) != value->data.scalar.length)
                        return yerr(c, value, "%s: the value contains a NUL character", path);
                if (asprintf(&joined, "%s=%s", key, yscalar(value)) < 0)
                        return -ENOMEM;
                break;
        case YK_LIST: {
                _cleanup_strv_free_ char **items = NULL;
                int r = yget_strv(c, value, path, "strings", LIST_MAX, ycheck_word, &items);
                if (r < 0)
                        return r;
                len = strlen(key) + 2;
                STRV_FOREACH(i, items)
                        len += strlen(*i) + 1;
                joined = malloc(len);
                if (!joined)
                        return -ENOMEM;
                strcpy(joined, key);
                strcat(joined, "=");
                STRV_FOREACH(i, items) {
                        if (i != items)
                                strcat(joined, ",");
                        strcat(joined, *i);
                }
                break;
        }
        case YK_NULL:
        case YK_MAP:
        default:
                return yerr(c, value, "%s: expected a string, number, boolean or list of strings, got %s",
                        path, ynode_describe(value, got, sizeof got));
        }
        return strv_consume(l, TAKE_PTR(joined));
}

static int parse_route(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"strategy", "fallback", "constraints"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        r = ymap(c, n, "route", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = get_enum(c, v[0], "route", "strategy", strategy_from,
                        "prefer-self-hosted | lowest-cost | lowest-latency | explicit", &x);
                if (r < 0)
                        return r;
                free(p->route_strategy);
                p->route_strategy = strdup(yscalar(v[0]));
                if (!p->route_strategy)
                        return -ENOMEM;
                profile_set_leaf(p, L_ROUTE_STRATEGY);
        }
        if (v[1]) {
                r = get_list(
                        c, v[1], "route", "fallback", "extension names", ycheck_word, &p->route_fallback);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_ROUTE_FALLBACK);
        }
        if (v[2]) {
                _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
                r = ymap_each(c, v[2], "route.constraints", 64, constraint_one, &l);
                if (r < 0)
                        return r;
                strv_free(p->route_constraints);
                p->route_constraints = TAKE_PTR(l);
                profile_set_leaf(p, L_ROUTE_CONSTRAINTS);
        }
        return 0;
}

static int parse_metadata(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"cost_class", "latency_class"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r;

        r = ymap(c, n, "metadata", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                char path[64], *s = NULL;
                if (!v[i])
                        continue;
                r = yget_string(c, v[i], ypath(path, sizeof path, "metadata", keys[i]), "a class name", &s);
                if (r >= 0)
                        r = ycheck_word(c, v[i], path, &s);
                if (r < 0) {
                        free(s);
                        return r;
                }
                char **dst = i == 0 ? &p->cost_class : &p->latency_class;
                free(*dst);
                *dst = s;
                profile_set_leaf(p, i == 0 ? L_COST_CLASS : L_LATENCY_CLASS);
        }
        return 0;
}

static int parse_observe(yctx *c, yaml_node_t *n, sbx_profile *p) {
        static const char *const keys[] = {"mode", "fs_writes"};
        yaml_node_t *v[ELEMENTSOF(keys)];
        int r, x;

        if (n->type != YAML_MAPPING_NODE) {
                char got[96];
                if (ynode_kind(n) != YK_STRING)
                        return yerr(c, n,
                                "observe: expected one of auto | required | off, or a mapping "
                                "{mode: ..., fs_writes: true|false}, got %s",
                                ynode_describe(n, got, sizeof got));
                r = yget_enum(c, n, "observe", observe_from, "auto | required | off", &x);
                if (r < 0)
                        return r;
                p->observe = (sbx_observe) x;
                profile_set_leaf(p, L_OBSERVE);
                return 0;
        }
        r = ymap(c, n, "observe", keys, ELEMENTSOF(keys), v);
        if (r < 0)
                return r;
        if (v[0]) {
                r = yget_enum(c, v[0], "observe.mode", observe_from, "auto | required | off", &x);
                if (r < 0)
                        return r;
                p->observe = (sbx_observe) x;
                profile_set_leaf(p, L_OBSERVE);
        }
        if (v[1]) {
                r = yget_bool(c, v[1], "observe.fs_writes", &p->observe_fs_writes);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_OBSERVE_FS_WRITES);
        }
        return 0;
}

enum {
        K_ID,
        K_VERSION,
        K_EXTENDS,
        K_ISOLATION,
        K_NETWORK,
        K_WORKSPACE,
        K_FILESYSTEM,
        K_PROCESS,
        K_LIMITS,
        K_ON_VIOLATION,
        K_ENV,
        K_SECRETS,
        K_TTL,
        K_PLACEMENT,
        K_ROUTE,
        K_METADATA,
        K_OBSERVE,
        K_HIGH_RISK,
        K_CWD,
        K_USER,
        K_DATA,
        _K_MAX,
};

static const char *const top_keys[_K_MAX] = {
        [K_ID] = "id",
        [K_VERSION] = "version",
        [K_EXTENDS] = "extends",
        [K_ISOLATION] = "isolation",
        [K_NETWORK] = "network",
        [K_WORKSPACE] = "workspace",
        [K_FILESYSTEM] = "filesystem",
        [K_PROCESS] = "process",
        [K_LIMITS] = "limits",
        [K_ON_VIOLATION] = "on_violation",
        [K_ENV] = "env",
        [K_SECRETS] = "secrets",
        [K_TTL] = "ttl",
        [K_PLACEMENT] = "placement",
        [K_ROUTE] = "route",
        [K_METADATA] = "metadata",
        [K_OBSERVE] = "observe",
        [K_HIGH_RISK] = "high_risk",
        [K_CWD] = "cwd",
        [K_USER] = "user",
        [K_DATA] = "data",
};

static int parse_doc(yctx *c, sbx_profile *p) {
        yaml_node_t *root = yctx_root(c), *v[_K_MAX];
        char got[96];
        int r, x;

        if (!root || ynode_kind(root) == YK_NULL)
                return yerr(c, root, "the profile is empty (it needs at least 'id' and 'version')");
        if (root->type != YAML_MAPPING_NODE)
                return yerr(c, root,
                        "a profile must be a mapping at top level (id: ..., version: ...), got %s",
                        ynode_describe(root, got, sizeof got));
        r = ymap(c, root, "", top_keys, _K_MAX, v);
        if (r < 0)
                return r;

        if (!v[K_ID])
                return yerr(c, root, "missing required key 'id' (e.g. id: profile.mine)");
        r = yget_string(c, v[K_ID], "id", "a profile id ([a-z0-9._-]+)", &p->id);
        if (r < 0)
                return r;
        if (!profile_valid_id(p->id))
                return yerr(c, v[K_ID],
                        "id: \"%s\" is not a valid profile id (use lower-case letters, digits, "
                        "'.', '_' and '-', at most 128)",
                        p->id);
        if (!v[K_VERSION])
                return yerr(c, root, "missing required key 'version' (e.g. version: \"1.0.0\")");
        if (ynode_kind(v[K_VERSION]) == YK_LIST || ynode_kind(v[K_VERSION]) == YK_MAP ||
                ynode_kind(v[K_VERSION]) == YK_NULL || !valid_semver(yscalar(v[K_VERSION])))
                return yerr(c, v[K_VERSION],
                        "version: expected a semantic version \"X.Y.Z\" (e.g. \"1.0.0\"), got %s",
                        ynode_describe(v[K_VERSION], got, sizeof got));
        p->version = strdup(yscalar(v[K_VERSION]));
        if (!p->version)
                return -ENOMEM;
        if (v[K_EXTENDS]) {
                r = yget_string(c, v[K_EXTENDS], "extends", "a profile id or a file path", &p->extends);
                if (r < 0)
                        return r;
                p->extends_line_ = (unsigned) v[K_EXTENDS]->start_mark.line + 1;
                p->extends_column_ = (unsigned) v[K_EXTENDS]->start_mark.column + 1;
                if (!strchr(p->extends, '/') && !profile_valid_id(p->extends) &&
                        !strstr(p->extends, ".yaml") && !strstr(p->extends, ".yml"))
                        return yerr(c, v[K_EXTENDS],
                                "extends: \"%s\" is neither a profile id ([a-z0-9._-]+) nor a "
                                "file path",
                                p->extends);
                if (streq(p->extends, p->id))
                        return yerr(c, v[K_EXTENDS], "extends: a profile cannot extend itself (%s)", p->id);
        }
        if (v[K_ISOLATION] && (r = parse_isolation(c, v[K_ISOLATION], p)) < 0)
                return r;
        if (v[K_NETWORK] && (r = parse_network(c, v[K_NETWORK], p)) < 0)
                return r;
        if (v[K_WORKSPACE] && (r = parse_workspace(c, v[K_WORKSPACE], p)) < 0)
                return r;
        if (v[K_FILESYSTEM] && (r = parse_filesystem(c, v[K_FILESYSTEM], p)) < 0)
                return r;
        if (v[K_PROCESS] && (r = parse_process(c, v[K_PROCESS], p)) < 0)
                return r;
        if (v[K_LIMITS] && (r = yparse_limits(c, v[K_LIMITS], "limits", SBX_SRC_PROFILE, &p->limits)) < 0)
                return r;
        if (v[K_ON_VIOLATION]) {
                r = yget_enum(c, v[K_ON_VIOLATION], "on_violation", on_violation_from, "deny | kill", &x);
                if (r < 0)
                        return r;
                p->on_violation = (sbx_on_violation) x;
                profile_set_leaf(p, L_ON_VIOLATION);
        }
        if (v[K_ENV] && (r = parse_env(c, v[K_ENV], p)) < 0)
                return r;
        if (v[K_SECRETS]) {
                r = get_list(c, v[K_SECRETS], "", "secrets", "secret names", ycheck_name, &p->secrets);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_SECRETS);
        }
        if (v[K_TTL] && (r = parse_ttl(c, v[K_TTL], p)) < 0)
                return r;
        if (v[K_TTL] && !p->extends && p->ttl_default_s > p->ttl_max_s)
                /* nothing to inherit a longer ttl.max from: the built-in 24h applies */
                return yerr(c, v[K_TTL],
                        "ttl.default (%.15gs) is longer than ttl.max (%.15gs, the default; set "
                        "ttl.max too)",
                        p->ttl_default_s, p->ttl_max_s);
        if (v[K_PLACEMENT] && (r = parse_placement(c, v[K_PLACEMENT], p)) < 0)
                return r;
        if (v[K_ROUTE] && (r = parse_route(c, v[K_ROUTE], p)) < 0)
                return r;
        if (v[K_METADATA] && (r = parse_metadata(c, v[K_METADATA], p)) < 0)
                return r;
        if (v[K_OBSERVE] && (r = parse_observe(c, v[K_OBSERVE], p)) < 0)
                return r;
        if (v[K_DATA]) {
                /* Data mounts (a database, a bucket, a cache) are reached over the network: through
                 * an endpoint-scoped proxy, network.services. Refused by name here, pointing there,
                 * rather than run with a hole or silently without the data. */
                yaml_node_t *d = v[K_DATA];
                if (d->type == YAML_SEQUENCE_NODE &&
                        d->data.sequence.items.start < d->data.sequence.items.top) {
                        yaml_node_t *item = yaml_document_get_node(&c->doc, *d->data.sequence.items.start);
                        const char *type = NULL;
                        if (item && item->type == YAML_MAPPING_NODE)
                                for (yaml_node_pair_t *kv = item->data.mapping.pairs.start;
                                        kv < item->data.mapping.pairs.top; kv++) {
                                        yaml_node_t *k = yaml_document_get_node(&c->doc, kv->key);
                                        yaml_node_t *val = yaml_document_get_node(&c->doc, kv->value);
                                        if (k && val && k->type == YAML_SCALAR_NODE &&
                                                val->type == YAML_SCALAR_NODE &&
                                                streq((const char *) k->data.scalar.value, "type"))
                                                type = (const char *) val->data.scalar.value;
                                }
                        return yerr(c, item ? item : d,
                                "data: a %s data mount is not something sandboxer mounts; name its endpoint "
                                "in network.services instead (protocol: tcp, or http for S3): reached at "
                                "127.0.0.1:PORT inside through an endpoint-scoped proxy, each connection "
                                "traced, and nothing else of the network",
                                type ? type : "(untyped)");
                }
                if (d->type != YAML_SEQUENCE_NODE)
                        return yerr(
                                c, d, "data: expected a list of data mounts (e.g. - {type: postgres, ...})");
        }
        if (v[K_HIGH_RISK]) {
                r = yget_bool(c, v[K_HIGH_RISK], "high_risk", &p->high_risk);
                if (r < 0)
                        return r;
                profile_set_leaf(p, L_HIGH_RISK);
        }
        if (v[K_CWD]) {
                char *s = NULL;
                r = yget_string_or_null(c, v[K_CWD], "cwd", "an absolute path inside the sandbox", &s);
                if (r >= 0 && s)
                        r = ycheck_abs_path(c, v[K_CWD], "cwd", &s);
                if (r < 0) {
                        free(s);
                        return r;
                }
                free(p->cwd);
                p->cwd = s;
                profile_set_leaf(p, L_CWD);
        }
        if (v[K_USER]) {
                char *s = NULL;
                r = yget_string(c, v[K_USER], "user", "a user name ([a-z_][a-z0-9_-]*, at most 32)", &s);
                if (r >= 0 && !valid_user(s))
                        r = yerr(c, v[K_USER],
                                "user: \"%s\" is not a user name (a lower-case letter or '_', then letters, "
                                "digits, "
                                "'_' or '-'; at most 32)",
                                s);
                if (r < 0) {
                        free(s);
                        return r;
                }
                free(p->user);
                p->user = s;
                profile_set_leaf(p, L_USER);
        }
        return 0;
}

int sbx_profile_parse(const char *text, size_t len, const char *name, sbx_profile **ret, sbx_error *e) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        yctx c;
        int r;

        if (!name)
                name = "<profile>";
        r = profile_new_default(&p);
        if (r < 0)
                return sbx_error_set(e, r, "profile: parse", "out of memory");
        p->source_file = strdup(name);
        if (!p->source_file)
                return sbx_error_set(e, ENOMEM, "profile: parse", "out of memory");
        r = yctx_load(&c, text, len, name, e);
        if (r < 0)
                return r;
        r = parse_doc(&c, p);
        yctx_done(&c);
        if (r == -ENOMEM)
                return sbx_error_set(e, r, "profile: parse", "out of memory");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}
