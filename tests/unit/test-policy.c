/* test-policy.c — profiles, the policy file and config resolution: every class of bad input
 * fails with file:line:column and the key; narrowing and overrides follow the policy. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/sha256.h"
#include "backend/backend.h"
#include "basic/strv.h"
#include "policy/parse-cache.h"
#include "policy/policy-internal.h"
#include "policy/policy.h"
#include "tap.h"

static char tmpdir[64];

static const char *tpath(const char *name) {
        static char buf[4][256];
        static unsigned k;
        char *b = buf[k++ % 4];
        snprintf(b, 256, "%s/%s", tmpdir, name);
        return b;
}

static void write_file(const char *name, const char *text) {
        FILE *f = fopen(tpath(name), "we");
        if (!f) {
                perror("fopen");
                exit(1);
        }
        fputs(text, f);
        fclose(f);
}

static const char *fmt(const sbx_error *e) {
        static char buf[1200];
        return sbx_error_format(e, buf, sizeof buf);
}

/* Parse text as a profile named "t.yaml": expect failure whose message has the position
 * "t.yaml:LINE:COL: " and every needle. */
static void profile_bad(const char *text, unsigned line, unsigned col, const char *what, ...) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        sbx_error e = {};
        char pos[64];
        va_list ap;
        bool good;
        int r;

        r = sbx_profile_parse(text, strlen(text), "t.yaml", &p, &e);
        snprintf(pos, sizeof pos, "t.yaml:%u:%u: ", line, col);
        good = r == -EINVAL && strncmp(fmt(&e), pos, strlen(pos)) == 0;
        va_start(ap, what);
        for (const char *needle; (needle = va_arg(ap, const char *));)
                good = good && strstr(fmt(&e), needle);
        va_end(ap);
        if (!ok(good, "bad profile: %s", what))
                diag("r=%d error: %s (expected at %s)", r, fmt(&e), pos);
}

#define PROFILE_BAD(text, line, col, what, ...) profile_bad(text, line, col, what, __VA_ARGS__, NULL)

static sbx_profile *profile_good(const char *text, const char *what) {
        sbx_profile *p = NULL;
        sbx_error e = {};
        int r = sbx_profile_parse(text, strlen(text), "t.yaml", &p, &e);
        if (!ok(r == 0, "good profile: %s", what))
                diag("error: %s", fmt(&e));
        return p;
}

#define HDR "id: t\nversion: \"1.0.0\"\n"

static void test_unknown_keys(void) {
        PROFILE_BAD(HDR "limitz:\n  memory_mb: 1\n", 3, 1, "unknown top-level key",
                "unknown key 'limitz' at top level", "did you mean 'limits'",
                "expected one of: id, version, extends");
        PROFILE_BAD(HDR "isolation:\n  levle: policy\n", 4, 3, "unknown key in isolation",
                "unknown key 'levle' in isolation", "level");
        PROFILE_BAD(HDR "network:\n  proxy: x\n", 4, 3, "unknown key in network",
                "unknown key 'proxy' in network");
        PROFILE_BAD(HDR "workspace:\n  size: 3\n", 4, 3, "unknown key in workspace", "'size' in workspace");
        PROFILE_BAD(HDR "filesystem:\n  append: []\n", 4, 3, "unknown key in filesystem",
                "'append' in filesystem");
        PROFILE_BAD(HDR "process:\n  fork: false\n", 4, 3, "unknown key in process", "'fork' in process");
        PROFILE_BAD(HDR "process:\n  commands: {mode: warn, permit: []}\n", 4, 26,
                "unknown key in process.commands", "'permit' in process.commands");
        PROFILE_BAD(HDR "limits:\n  memory: 5\n", 4, 3, "unknown key in limits", "'memory' in limits",
                "did you mean 'memory_mb'");
        PROFILE_BAD(
                HDR "ttl: {default: 1h, forever: true}\n", 3, 20, "unknown key in ttl", "'forever' in ttl");
        PROFILE_BAD(HDR "placement: {prefer: [], near: x}\n", 3, 25, "unknown key in placement",
                "'near' in placement");
        PROFILE_BAD(HDR "route: {strategy: explicit, cost: 1}\n", 3, 29, "unknown key in route",
                "'cost' in route");
        PROFILE_BAD(HDR "metadata: {owner: me}\n", 3, 12, "unknown key in metadata", "'owner' in metadata");
        PROFILE_BAD(HDR "observe: {mode: auto, syscalls: true}\n", 3, 23, "unknown key in observe",
                "'syscalls' in observe");
}

static void test_types(void) {
        PROFILE_BAD(HDR "limits:\n  memory_mb: lots\n", 4, 14, "memory_mb a word",
                "limits.memory_mb: expected a positive number of MiB, got \"lots\"");
        PROFILE_BAD(
                HDR "limits:\n  memory_mb: -5\n", 4, 14, "negative limit", "limits.memory_mb", "negative");
        PROFILE_BAD(HDR "limits:\n  cpus: .nan\n", 4, 9, "NaN limit", "limits.cpus", "not a finite number");
        PROFILE_BAD(HDR "limits:\n  timeout_s: .inf\n", 4, 14, "infinite limit", "limits.timeout_s",
                "not a finite number");
        PROFILE_BAD(HDR "limits:\n  pids: 0\n", 4, 9, "zero pids", "limits.pids", "zero is not allowed");
        PROFILE_BAD(
                HDR "limits:\n  pids: 2.5\n", 4, 9, "fractional pids", "limits.pids", "not a whole number");
        PROFILE_BAD(
                HDR "limits:\n  memory_mb: 2e12\n", 4, 14, "absurd memory", "limits.memory_mb", "more than");
        PROFILE_BAD(HDR "limits:\n  timeout_s: 40000000\n", 4, 14, "timeout over a year", "limits.timeout_s",
                "more than");
        PROFILE_BAD(HDR "limits:\n  timeout_s: 1e400\n", 4, 14, "huge number", "limits.timeout_s",
                "out of range");
        PROFILE_BAD(HDR "limits:\n  memory_mb: 0x100\n", 4, 14, "hex number", "limits.memory_mb", "decimal");
        PROFILE_BAD(HDR "limits:\n  memory_mb: \"512\"\n", 4, 14, "quoted number", "limits.memory_mb",
                "without quotes");
        PROFILE_BAD(HDR "limits:\n  timeout_s: 10 minutes\n", 4, 14, "bad duration", "limits.timeout_s",
                "expected a positive duration");
        PROFILE_BAD(HDR "limits: [1, 2]\n", 3, 9, "limits a list", "limits: expected a mapping, got a list");
        PROFILE_BAD(HDR "network:\n  loopback: yes\n", 4, 13, "bool as yes",
                "network.loopback: expected true or false", "\"yes\"");
        PROFILE_BAD(HDR "process: {allow_spawn: 1}\n", 3, 24, "bool as number",
                "process.allow_spawn: expected true or false");
        PROFILE_BAD(HDR "process:\n  allow_exec: once\n", 4, 15, "allow_exec not a bool",
                "process.allow_exec: expected true or false", "\"once\"");
        PROFILE_BAD(HDR "process: {allow_execs: false}\n", 3, 11, "a misspelt process key", "allow_execs");
        PROFILE_BAD(HDR "process:\n  long_lived: forever\n", 4, 15, "long_lived not a bool",
                "process.long_lived: expected true or false", "\"forever\"");
        PROFILE_BAD(HDR "filesystem:\n  read: /usr\n", 4, 9, "list as scalar",
                "filesystem.read: expected a list of absolute paths, got \"/usr\"");
        PROFILE_BAD(HDR "filesystem:\n  read: [/usr, [x]]\n", 4, 16, "nested list item",
                "filesystem.read[1]", "got a list");
        PROFILE_BAD(HDR "filesystem:\n  read: [usr]\n", 4, 10, "relative path", "filesystem.read[0]",
                "absolute path");
        PROFILE_BAD(HDR "filesystem:\n  write: [/tmp/../etc]\n", 4, 11, "dotdot path", "filesystem.write[0]",
                "'..'");
        PROFILE_BAD(HDR "filesystem:\n  read: [/usr, /usr/]\n", 4, 16, "duplicate path",
                "filesystem.read[1]", "duplicate");
        PROFILE_BAD(HDR "workspace: {mount: /}\n", 3, 20, "mount over /", "workspace.mount", "'/'");
        PROFILE_BAD(
                HDR "workspace: {mount: /dev/shm}\n", 3, 20, "mount under /dev", "workspace.mount", "/dev");
        PROFILE_BAD(HDR "workspace: {path: relative/dir}\n", 3, 19, "relative workspace path",
                "workspace.path", "absolute");
        PROFILE_BAD(HDR "workspace: {access: write}\n", 3, 21, "bad access",
                "workspace.access: expected one of none | ro | rw");
        PROFILE_BAD(HDR "isolation: {level: vm}\n", 3, 20, "bad level", "isolation.level",
                "policy | container | microvm");
        PROFILE_BAD(HDR "isolation: {backend: lxc}\n", 3, 22, "bad backend", "isolation.backend");
        PROFILE_BAD(HDR "network: {default: maybe}\n", 3, 20, "bad network default", "network.default",
                "deny | allow");
        PROFILE_BAD(HDR "network: {egress: [\"*\"]}\n", 3, 20, "egress *", "network.egress[0]",
                "network.default: allow");
        PROFILE_BAD(HDR "network: {egress: [\"a b\"]}\n", 3, 20, "egress garbage", "network.egress[0]",
                "not an egress rule");
        PROFILE_BAD(
                HDR "network: {egress: [\"10.0.0.0/33\"]}\n", 3, 20, "egress bad cidr", "network.egress[0]");
        PROFILE_BAD(HDR "network: {egress_deny: [\"a b\"]}\n", 3, 25, "egress_deny garbage",
                "network.egress_deny[0]");
        PROFILE_BAD(HDR "network: {egress_deny: \"x\"}\n", 3, 24, "egress_deny not a list",
                "network.egress_deny");
        PROFILE_BAD(
                HDR "network: {egress: [\"host:99999\"]}\n", 3, 20, "egress bad port", "network.egress[0]");
        PROFILE_BAD(HDR "network: {egress: [\"10.0.0.0/8:0\"]}\n", 3, 20, "egress cidr with port 0",
                "network.egress[0]");
        PROFILE_BAD(HDR "env: {TMPDIR: /x}\n", 3, 7, "env TMPDIR", "env: TMPDIR cannot be set");
        PROFILE_BAD(HDR "env: {SANDBOXER_X: 1}\n", 3, 7, "env SANDBOXER_*", "SANDBOXER_X cannot be set");
        PROFILE_BAD(HDR "env: {\"1BAD\": x}\n", 3, 7, "env bad name", "not a valid variable name");
        PROFILE_BAD(HDR "env: {A: [1]}\n", 3, 10, "env list value",
                "env.A: expected a string value, got a list");
        PROFILE_BAD(HDR "env: {A: null}\n", 3, 10, "env null value", "env.A", "null");
        PROFILE_BAD(HDR "env: [A]\n", 3, 6, "env a list", "env: expected a mapping");
        PROFILE_BAD(HDR "secrets: [../x]\n", 3, 11, "secret with slash", "secrets[0]", "not a valid name");
        PROFILE_BAD(
                HDR "ttl: {default: 48h, max: 24h}\n", 3, 16, "ttl default > max", "ttl.default", "ttl.max");
        PROFILE_BAD(HDR "ttl: {idle: -1}\n", 3, 13, "negative ttl", "ttl.idle", "negative");
        PROFILE_BAD(HDR "ttl: {max: \"-4h\"}\n", 3, 12, "negative ttl string", "ttl.max", "negative");
        PROFILE_BAD(HDR "observe: sometimes\n", 3, 10, "bad observe",
                "observe: expected one of auto | required | off");
        PROFILE_BAD(HDR "observe: [auto]\n", 3, 10, "observe a list", "observe: expected one of");
        PROFILE_BAD(HDR "high_risk: \"true\"\n", 3, 12, "quoted bool", "high_risk: expected true or false");
        PROFILE_BAD(HDR "cwd: work\n", 3, 6, "relative cwd", "cwd", "absolute");
        PROFILE_BAD(HDR "on_violation: ignore\n", 3, 15, "bad on_violation", "on_violation", "deny | kill");
        PROFILE_BAD(HDR "route: {strategy: random}\n", 3, 19, "bad route strategy", "route.strategy",
                "lowest-cost");
        PROFILE_BAD(HDR "route: {constraints: {gpu: {a: 1}}}\n", 3, 28, "constraint a mapping",
                "route.constraints.gpu");
        PROFILE_BAD(HDR "process: {commands: {allow: [\"rm -rf\"]}}\n", 3, 30, "command with space",
                "process.commands.allow[0]", "single word");
}

static void test_structure(void) {
        PROFILE_BAD("id: t\nversion: \"1.0.0\"\nid: u\n", 3, 1, "duplicate top key",
                "duplicate key 'id' at top level", "line 1");
        PROFILE_BAD(HDR "limits:\n  cpus: 1\n  cpus: 2\n", 5, 3, "duplicate nested key",
                "duplicate key 'cpus' in limits");
        PROFILE_BAD(HDR "env: {A: 1, A: 2}\n", 3, 13, "duplicate env key", "duplicate key 'A' in env");
        PROFILE_BAD(HDR "base: &b {x: 1}\nother: *b\n", 3, 7, "anchor", "anchors (&b)", "not supported");
        PROFILE_BAD(HDR "filesystem:\n  read: *nothing\n", 4, 9, "alias", "aliases (*nothing)");
        PROFILE_BAD(HDR "limits: !!map {cpus: 1}\n", 3, 9, "tag", "tags", "not supported");
        PROFILE_BAD(HDR "limits:\n\tcpus: 1\n", 4, 1, "tab indentation", "invalid YAML");
        PROFILE_BAD(HDR "limits: {cpus: 1\n", 4, 1, "unclosed flow mapping", "invalid YAML");
        PROFILE_BAD(HDR "  bad: indent\n", 3, 3, "bad indentation", "invalid YAML");
        PROFILE_BAD(HDR "---\nid: u\n", 3, 1, "two documents", "only one YAML document");
        PROFILE_BAD("- id: t\n", 1, 1, "top level a list", "must be a mapping at top level", "got a list");
        PROFILE_BAD("just a string\n", 1, 1, "top level a scalar", "must be a mapping at top level");
        PROFILE_BAD("", 1, 1, "empty document", "empty");
        PROFILE_BAD("# only a comment\n", 1, 1, "comment only", "empty");
        PROFILE_BAD("version: \"1.0.0\"\n", 1, 1, "missing id", "missing required key 'id'");
        PROFILE_BAD("id: t\n", 1, 1, "missing version", "missing required key 'version'");
        PROFILE_BAD("id: Profile.X\nversion: \"1.0.0\"\n", 1, 5, "bad id",
                "id: \"Profile.X\" is not a valid profile id");
        PROFILE_BAD("id: \"a b\"\nversion: \"1.0.0\"\n", 1, 5, "id with space", "is not a valid profile id");
        PROFILE_BAD("id: t\nversion: 1.0\n", 2, 10, "version a number",
                "version: expected a semantic version", "1.0");
        PROFILE_BAD("id: t\nversion: \"1.0\"\n", 2, 10, "version two parts", "semantic version");
        PROFILE_BAD("id: t\nversion: \"01.0.0\"\n", 2, 10, "version leading zero", "semantic version");
        PROFILE_BAD("id: t\nversion: \"1.0.0-rc1\"\n", 2, 10, "version with suffix", "semantic version");
        PROFILE_BAD(
                "id: t\nversion: \"1.0.0\"\nextends: t\n", 3, 10, "extends itself", "cannot extend itself");
        PROFILE_BAD(HDR "{a: 1}: x\n", 3, 1, "mapping as key", "keys must be plain names");

        char deep[600] = HDR "limits: ";
        for (int i = 0; i < 40; i++)
                strcat(deep, "[");
        PROFILE_BAD(deep, 3, 40, "deep nesting", "nesting deeper than");

        char nul[] = HDR "cwd: \"/a\\0b\"\n";
        PROFILE_BAD(nul, 3, 6, "NUL in string", "NUL");
        const char bin[] = "id: t\nversion: \"1.0.0\"\n\x01\x02\xff\xfe";
        PROFILE_BAD(bin, 3, 1, "binary garbage", "invalid YAML");
}

/* A profile that sets every field (test_values checks its values, test_parse_cache its trip
 * through the cache). */
static const char every_field[] =
        HDR "isolation: {level: policy, mode: strict, backend: landlock}\n"
            "network: {default: deny, egress: [api.example.com, \"*.pypi.org\", \"10.0.0.0/8\", "
            "\"host:443\", "
            "\"[::1]:8080\", \"fd00::/8\", \"10.20.0.0/16:5432\"], loopback: false}\n"
            "workspace: {path: /srv//src/, mount: /workspace/./a, access: rw}\n"
            "filesystem: {read: [/usr, /etc/], write: [/var/cache/x], exec: [/usr/bin]}\n"
            "process: {allow_spawn: false, commands: {mode: strict, allow: [python3], deny: [curl]}}\n"
            "limits: {timeout_s: 1.5h, budget_s: \"90m\", cpus: 0.5, memory_mb: 256, pids: 16, "
            "output_mb: 0.5, "
            "scratch_mb: 64}\n"
            "on_violation: kill\n"
            "env: {PYTHONPATH: /w, NUM: 5, FLAG: true, EMPTY: \"\"}\n"
            "secrets: [db-password, api.key]\n"
            "ttl: {default: 30m, max: 2d, idle: 600}\n"
            "placement: {prefer: [host-a], fallback: [host-b]}\n"
            "route: {strategy: lowest-cost, fallback: [e2b], constraints: {gpu: false, region: [eu, "
            "us]}}\n"
            "metadata: {cost_class: cheap, latency_class: fast}\n"
            "observe: {mode: required, fs_writes: true}\n"
            "high_risk: true\n"
            "cwd: /workspace\n";

static void test_values(void) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = profile_good(every_field, "every field");
        if (!p) {
                skip(20, "profile did not parse");
                return;
        }
        is_int(p->level, SBX_LEVEL_POLICY, "level policy");
        is_int(p->mode, SBX_MODE_STRICT, "mode strict");
        is_int(p->backend, SBX_BACKEND_LANDLOCK, "backend landlock");
        is_int(strv_length(p->egress), 7, "7 egress rules (a CIDR with a port among them)");
        ok(!p->loopback, "loopback false");
        is_str(p->ws_path, "/srv/src", "workspace path normalised");
        is_str(p->ws_mount, "/workspace/a", "workspace mount normalised");
        is_str(p->fs_read[1], "/etc", "trailing slash dropped");
        ok(p->fs_exec_set && strv_length(p->fs_exec) == 1, "exec list set");
        is_int(p->cmd_mode, SBX_CMD_MODE_STRICT, "commands strict");
        ok(p->limits.set[SBX_LIMIT_TIMEOUT_S] && p->limits.value[SBX_LIMIT_TIMEOUT_S] == 5400,
                "timeout 1.5h = 5400 s");
        ok(p->limits.value[SBX_LIMIT_BUDGET_S] == 5400, "budget \"90m\" = 5400 s");
        ok(p->limits.value[SBX_LIMIT_CPUS] == 0.5, "cpus 0.5");
        ok(p->limits.source[SBX_LIMIT_PIDS] == SBX_SRC_PROFILE, "limit source profile");
        is_int(p->n_env, 4, "4 env vars (no default LANG when env given)");
        is_str(p->env[1].value, "5", "number env value as text");
        ok(p->ttl_default_s == 1800 && p->ttl_max_s == 172800 && p->ttl_idle_s == 600, "ttl values");
        is_str(p->route_constraints[1], "region=eu,us", "list constraint joined");
        ok(p->observe == SBX_OBSERVE_REQUIRED && p->observe_fs_writes, "observe mapping");
        ok(p->high_risk && p->field_set[SBX_F_HIGH_RISK], "high_risk set");

        _cleanup_(sbx_profile_freep) sbx_profile *d = profile_good(HDR, "minimal");
        if (d) {
                ok(d->level == SBX_LEVEL_CONTAINER && d->mode == SBX_MODE_BALANCED &&
                                d->backend == SBX_BACKEND_AUTO,
                        "defaults: container, balanced, auto");
                ok(!d->net_allow && d->loopback && d->ws_access == SBX_ACCESS_RO &&
                                streq(d->ws_mount, "/workspace"),
                        "defaults: deny, loopback, ro at /workspace");
                ok(strv_length(d->fs_read) == 8 && streq(d->fs_read[0], "/usr") &&
                                streq(d->fs_read[7], "/etc/localtime"),
                        "defaults: the DESIGN read list");
                ok(d->allow_spawn && d->allow_exec && d->cmd_mode == SBX_CMD_MODE_OFF &&
                                d->on_violation == SBX_ON_VIOLATION_DENY && d->observe == SBX_OBSERVE_AUTO,
                        "defaults: spawn, commands off, deny, observe auto");
                ok(d->n_env == 1 && streq(d->env[0].name, "LANG") && streq(d->env[0].value, "C.UTF-8"),
                        "defaults: env LANG=C.UTF-8");
                ok(!d->fs_exec_set && !d->ws_path && !d->cwd, "defaults: exec, workspace path, cwd null");
                bool none = true;
                for (int i = 0; i < _SBX_F_MAX; i++)
                        none = none && !d->field_set[i];
                ok(none, "nothing marked as set");
        } else
                skip(7, "minimal profile did not parse");

        _cleanup_(sbx_profile_freep) sbx_profile *o =
                profile_good(HDR "observe: off\nttl: {idle: null}\n"
                                 "workspace: {path: null}\nfilesystem: {exec: null}\n",
                        "observe scalar, nulls");
        ok(o && o->observe == SBX_OBSERVE_OFF && o->field_set[SBX_F_TTL], "observe: off parsed");
}

static bool str_same(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

static bool strv_same(char *const *a, char *const *b) {
        if (!a || !b)
                return a == b;
        for (; *a && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !*a && !*b;
}

/* a and b hold the same strings, lists and environment. */
static bool profile_strings_same(const sbx_profile *a, const sbx_profile *b) {
        bool same = str_same(a->id, b->id) && str_same(a->version, b->version) &&
                    str_same(a->extends, b->extends) && str_same(a->source_file, b->source_file) &&
                    str_same(a->ws_path, b->ws_path) && str_same(a->ws_mount, b->ws_mount) &&
                    str_same(a->route_strategy, b->route_strategy) &&
                    str_same(a->cost_class, b->cost_class) && str_same(a->latency_class, b->latency_class) &&
                    str_same(a->cwd, b->cwd) && str_same(a->fs_home, b->fs_home) &&
                    str_same(a->user, b->user) && strv_same(a->egress, b->egress) &&
                    strv_same(a->egress_deny, b->egress_deny) && strv_same(a->fs_read, b->fs_read) &&
                    strv_same(a->fs_write, b->fs_write) && strv_same(a->fs_exec, b->fs_exec) &&
                    strv_same(a->cmd_allow, b->cmd_allow) && strv_same(a->cmd_deny, b->cmd_deny) &&
                    strv_same(a->secrets, b->secrets) &&
                    strv_same(a->placement_prefer, b->placement_prefer) &&
                    strv_same(a->placement_fallback, b->placement_fallback) &&
                    strv_same(a->route_fallback, b->route_fallback) &&
                    strv_same(a->route_constraints, b->route_constraints) && a->n_env == b->n_env;
        for (size_t i = 0; same && i < a->n_env; i++)
                same = streq(a->env[i].name, b->env[i].name) && streq(a->env[i].value, b->env[i].value);
        return same;
}

/* a and b are the same in every byte but their pointers. */
static bool profile_bytes_same(const sbx_profile *a, const sbx_profile *b) {
        sbx_profile x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        sbx_profile *const pv[] = {&x, &y};
        for (size_t i = 0; i < 2; i++) {
                sbx_profile *p = pv[i];
                p->id = p->version = p->extends = p->source_file = p->ws_path = p->ws_mount = NULL;
                p->route_strategy = p->cost_class = p->latency_class = p->cwd = p->fs_home = p->user = NULL;
                p->egress = p->egress_deny = p->fs_read = p->fs_write = p->fs_exec = p->cmd_allow =
                        p->cmd_deny = NULL;
                p->secrets = p->placement_prefer = p->placement_fallback = p->route_fallback = NULL;
                p->route_constraints = NULL;
                p->env = NULL;
        }
        return memcmp(&x, &y, sizeof x) == 0;
}

static bool policy_strings_same(const sbx_policy *a, const sbx_policy *b) {
        return str_same(a->source_file, b->source_file) && strv_same(a->write_allowed, b->write_allowed) &&
               strv_same(a->egress_allowed, b->egress_allowed) && strv_same(a->net_hosts, b->net_hosts);
}

static bool policy_bytes_same(const sbx_policy *a, const sbx_policy *b) {
        sbx_policy x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        x.source_file = y.source_file = NULL;
        x.write_allowed = y.write_allowed = x.egress_allowed = y.egress_allowed = NULL;
        x.net_hosts = y.net_hosts = NULL;
        return memcmp(&x, &y, sizeof x) == 0;
}

/* The build-time snapshot (builtin-snapshot.h) is what the parser makes of each built-in: the
 * strings and lists compared one by one, everything else byte for byte once those pointers are
 * cleared, so a field snapshot-gen.c does not write out (or a pointer it does not know) fails. */
static void test_snapshot(void) {
        for (const char *const *id = sbx_builtin_profile_ids(); *id; id++) {
                _cleanup_(sbx_profile_freep) sbx_profile *a = NULL, *b = NULL;
                size_t len;
                const char *text = builtin_profile_text_len(*id, &len);
                char key[128];
                snprintf(key, sizeof key, "builtin:%s", *id);
                sbx_error e = {};
                if (!ok(sbx_profile_parse(text, len, key, &a, &e) == 0 &&
                                    builtin_profile_snapshot(*id, &b) == 0,
                            "%s: parsed and snapshot", *id)) {
                        skip(2, "no profile");
                        continue;
                }
                ok(profile_strings_same(a, b), "%s: snapshot has the parse's strings, lists and env", *id);
                ok(profile_bytes_same(a, b), "%s: snapshot equals the parse in every other byte", *id);
        }

        _cleanup_(sbx_policy_freep) sbx_policy *a = NULL, *b = NULL;
        size_t len;
        const char *text = builtin_policy_text_len(&len);
        sbx_error e = {};
        if (ok(sbx_policy_parse(text, len, "builtin", &a, &e) == 0 && builtin_policy_snapshot(&b) == 0,
                    "policy: parsed and snapshot")) {
                ok(policy_strings_same(a, b), "policy: snapshot has the parse's strings and lists");
                ok(policy_bytes_same(a, b), "policy: snapshot equals the parse in every other byte");
        } else
                skip(2, "no policy");
        ok(builtin_profile_snapshot("profile.nope", &(sbx_profile *){NULL}) == -ENOENT,
                "no snapshot for an unknown id");
}

static void test_builtins(void) {
        const char *const *ids = sbx_builtin_profile_ids();
        const char *want[] = {"profile.default", "profile.python", "profile.python-nofork", "profile.skill",
                "profile.build", "profile.agent-dev", "profile.e2b", "profile.daytona"};
        size_t n = 0;

        for (; ids[n]; n++)
                ;
        is_int(n, 8, "eight built-in profiles");
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                sbx_error e = {};
                int r = sbx_profile_load(want[i], &p, &e);
                if (!ok(r == 0 && p && streq(p->id, want[i]), "built-in %s loads", want[i]))
                        diag("%s", fmt(&e));
        }
        _cleanup_(sbx_profile_freep) sbx_profile *py = NULL, *sk = NULL, *bu = NULL, *ag = NULL, *df = NULL,
                                                 *nf = NULL;
        sbx_error e = {};
        if (sbx_profile_load("profile.python-nofork", &nf, &e) == 0)
                ok(nf->level == SBX_LEVEL_POLICY && !nf->allow_spawn && !nf->allow_exec && !nf->loopback &&
                                strv_contains(nf->fs_read, "/etc/python3") &&
                                streq(nf->extends, "profile.python"),
                        "python-nofork: profile.python without new processes");
        else
                ok(false, "python-nofork loads: %s", fmt(&e));
        if (sbx_profile_load("profile.python", &py, &e) == 0) {
                ok(py->level == SBX_LEVEL_POLICY && !py->net_allow && !py->loopback && py->allow_spawn &&
                                !py->allow_exec && strv_length(py->egress) == 0,
                        "python: level policy, no network, fork allowed, one execve (the runtime notes)");
                ok(strv_contains(py->fs_read, "/etc/python3") &&
                                strv_contains(py->fs_read, "/etc/ssl/certs"),
                        "python: interpreter config readable");
                ok(py->ttl_max_s == 86400 && streq(py->extends, "profile.default"),
                        "python: inherits ttl from default");
        } else
                skip(3, "python did not load");
        if (sbx_profile_load("profile.skill", &sk, &e) == 0)
                ok(!sk->allow_spawn && sk->limits.set[SBX_LIMIT_MEMORY_MB] &&
                                sk->limits.value[SBX_LIMIT_MEMORY_MB] == 256 && !sk->net_allow,
                        "skill: no spawn, 256 MiB, no network");
        else
                skip(1, "skill did not load");
        if (sbx_profile_load("profile.build", &bu, &e) == 0)
                ok(bu->ws_access == SBX_ACCESS_RW && bu->allow_spawn && !bu->net_allow,
                        "build: rw workspace, spawn");
        else
                skip(1, "build did not load");
        if (sbx_profile_load("profile.agent-dev", &ag, &e) == 0)
                ok(ag->ws_access == SBX_ACCESS_RW && ag->ttl_default_s == 86400 && ag->ttl_max_s == 86400,
                        "agent-dev: rw workspace, 24h ttl");
        else
                skip(1, "agent-dev did not load");
        _cleanup_(sbx_profile_freep) sbx_profile *eb = NULL, *dy = NULL;
        if (sbx_profile_load("profile.e2b", &eb, &e) == 0 &&
                sbx_profile_load("profile.daytona", &dy, &e) == 0)
                ok(streq(eb->fs_home, "/home/user") && streq(eb->user, "user") && eb->allow_spawn &&
                                !eb->net_allow && streq(dy->fs_home, "/home/daytona") &&
                                streq(dy->user, "daytona"),
                        "e2b, daytona: a home where their SDKs look, uid 1000 named as they name it");
        if (eb && dy)
                ok(eb->long_lived && dy->long_lived && eb->field_set[SBX_F_LONG_LIVED],
                        "e2b, daytona: long-lived execs allowed (PTYs, sessions, servers)");
        else
                ok(false, "e2b and daytona load: %s", fmt(&e));
        if (sbx_profile_load("profile.default", &df, &e) == 0)
                ok(!df->long_lived, "default: no long-lived execs");
        if (df)
                ok(df->level == SBX_LEVEL_CONTAINER && df->backend == SBX_BACKEND_AUTO &&
                                strv_length(df->fs_read) == 8,
                        "default: container, auto, DESIGN read list");
        else
                skip(1, "default did not load");
        ok(sbx_builtin_profile_text("profile.nope") == NULL, "unknown built-in text is NULL");

        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        const char *t = sbx_builtin_policy_text();
        int r = sbx_policy_parse(t, strlen(t), "builtin", &pol, &e);
        if (ok(r == 0, "built-in policy parses")) {
                const sbx_limits *b = &pol->mode_limits[SBX_MODE_BALANCED],
                                 *s = &pol->mode_limits[SBX_MODE_STRICT];
                ok(b->value[SBX_LIMIT_TIMEOUT_S] == 45 && b->value[SBX_LIMIT_BUDGET_S] == 180 &&
                                b->value[SBX_LIMIT_CPUS] == 2 && b->value[SBX_LIMIT_MEMORY_MB] == 1024 &&
                                b->value[SBX_LIMIT_PIDS] == 256 && b->value[SBX_LIMIT_OUTPUT_MB] == 10 &&
                                b->value[SBX_LIMIT_SCRATCH_MB] == 512,
                        "balanced limits as DESIGN");
                ok(s->value[SBX_LIMIT_TIMEOUT_S] == 60 && s->value[SBX_LIMIT_BUDGET_S] == 240 &&
                                s->value[SBX_LIMIT_CPUS] == 2 && s->value[SBX_LIMIT_MEMORY_MB] == 1536 &&
                                s->value[SBX_LIMIT_PIDS] == 128 && s->value[SBX_LIMIT_OUTPUT_MB] == 10 &&
                                s->value[SBX_LIMIT_SCRATCH_MB] == 512,
                        "strict limits as DESIGN");
                ok(pol->n_mode_backends[SBX_MODE_BALANCED] == 2 &&
                                pol->mode_backends[SBX_MODE_BALANCED][0] == SBX_BACKEND_NATIVE &&
                                pol->mode_backends[SBX_MODE_BALANCED][1] == SBX_BACKEND_LANDLOCK &&
                                pol->n_mode_backends[SBX_MODE_STRICT] == 1 &&
                                pol->mode_backends[SBX_MODE_STRICT][0] == SBX_BACKEND_MICROVM,
                        "backends as DESIGN");
                ok(!pol->overrides_per_request && pol->run_as == 65534 && !pol->allow_host_network &&
                                strv_length(pol->write_allowed) == 0 &&
                                strv_length(pol->egress_allowed) == 0 && !pol->strict_when_high_risk,
                        "other policy values as DESIGN");
                char hex[65];
                sha256_hex(t, strlen(t), hex);
                is_str(pol->sha256, hex, "policy sha256 is the digest of its bytes");
        } else
                skip(5, "built-in policy did not parse");
}

static void test_sha256(void) {
        char hex[65];
        sha256_hex("", 0, hex);
        is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256 of empty");
        sha256_hex("abc", 3, hex);
        is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 of abc");
        const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        sha256_hex(m, strlen(m), hex);
        is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                "sha256 of 448-bit message");
        char *mil = malloc(1000000);
        memset(mil, 'a', 1000000);
        sha256_hex(mil, 1000000, hex);
        free(mil);
        is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                "sha256 of a million a");

        /* RFC 4231 test cases 1, 2 and 6 (a key longer than the block) */
        static const struct {
                const char *key, *data, *mac;
                size_t key_len;
        } v[] = {
                {"\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b",
                        "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 20},
                {"Jefe", "what do ya want for nothing?",
                        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 4},
                {NULL, "Test Using Larger Than Block-Size Key - Hash Key First",
                        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 131},
        };
        uint8_t big[131];
        memset(big, 0xaa, sizeof big);
        for (size_t i = 0; i < 3; i++) {
                uint8_t mac[SHA256_DIGEST_SIZE];
                hmac_sha256(v[i].key ? v[i].key : (const char *) big, v[i].key_len, v[i].data,
                        strlen(v[i].data), mac);
                for (size_t k = 0; k < sizeof mac; k++)
                        snprintf(hex + 2 * k, 3, "%02x", mac[k]);
                is_str(hex, v[i].mac, "HMAC-SHA-256, RFC 4231 case %zu", i == 2 ? (size_t) 6 : i + 1);
        }
}

static void test_extends(void) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        sbx_error e = {};
        int r;

        write_file("base.yaml",
                "id: base\nversion: \"1.0.0\"\nextends: profile.python\n"
                "limits: {memory_mb: 512, pids: 64}\nenv: {A: a, B: b}\nfilesystem: {write: [/data]}\n");
        write_file("child.yaml",
                "id: child\nversion: \"2.0.0\"\nextends: ./base.yaml\n"
                "limits: {memory_mb: 256}\nenv: {B: bb, C: c}\nnetwork: {loopback: true}\n");
        r = sbx_profile_load(tpath("child.yaml"), &p, &e);
        if (ok(r == 0, "three-level chain loads (file -> file -> built-in -> built-in)")) {
                is_str(p->id, "child", "merged id is the child's");
                is_str(p->version, "2.0.0", "merged version is the child's");
                ok(p->limits.value[SBX_LIMIT_MEMORY_MB] == 256 && p->limits.value[SBX_LIMIT_PIDS] == 64 &&
                                !p->limits.set[SBX_LIMIT_CPUS],
                        "limits: child wins, parent's inherited, unset stay unset");
                ok(p->level == SBX_LEVEL_POLICY && p->allow_spawn && !p->allow_exec,
                        "grandparent (python) values inherited");
                ok(p->loopback, "child overrides python's loopback");
                ok(strv_length(p->fs_write) == 1 && streq(p->fs_write[0], "/data"),
                        "parent's list inherited");
                ok(strv_contains(p->fs_read, "/etc/python3"), "python read list inherited");
                const char *b = NULL, *pyd = NULL;
                for (size_t i = 0; i < p->n_env; i++) {
                        if (streq(p->env[i].name, "B"))
                                b = p->env[i].value;
                        if (streq(p->env[i].name, "PYTHONDONTWRITEBYTECODE"))
                                pyd = p->env[i].value;
                }
                ok(b && streq(b, "bb") && pyd, "env merged by name, child wins");
                ok(p->field_set[SBX_F_LEVEL] && p->field_set[SBX_F_NET_LOOPBACK] &&
                                p->field_set[SBX_F_FS_WRITE],
                        "field_set covers the chain");
        } else
                diag("%s", fmt(&e));
        p = sbx_profile_free(p);

        /* lists replace, they do not append */
        write_file("lists.yaml",
                "id: lists\nversion: \"1.0.0\"\nextends: profile.default\nfilesystem: {read: [/opt]}\n");
        r = sbx_profile_load(tpath("lists.yaml"), &p, &e);
        ok(r == 0 && strv_length(p->fs_read) == 1 && streq(p->fs_read[0], "/opt"),
                "a child's list replaces the parent's");
        p = sbx_profile_free(p);

        write_file("cyc-a.yaml", "id: cyc-a\nversion: \"1.0.0\"\nextends: cyc-b.yaml\n");
        write_file("cyc-b.yaml", "id: cyc-b\nversion: \"1.0.0\"\nextends: cyc-c.yaml\n");
        write_file("cyc-c.yaml", "id: cyc-c\nversion: \"1.0.0\"\n\nextends: ./cyc-a.yaml\n");
        r = sbx_profile_load(tpath("cyc-a.yaml"), &p, &e);
        if (!ok(r == -EINVAL && strstr(fmt(&e),
                                        "cyc-c.yaml:4:10: extends: cycle cyc-a -> cyc-b -> cyc-c -> cyc-a"),
                    "extends cycle names the chain, at the closing extends"))
                diag("r=%d %s", r, fmt(&e));

        write_file("missing.yaml", "id: missing\nversion: \"1.0.0\"\nextends: profile.nonexistent\n");
        r = sbx_profile_load(tpath("missing.yaml"), &p, &e);
        if (!ok(r == -ENOENT &&
                            strstr(fmt(&e),
                                    "missing.yaml:3:10: extends: no profile named 'profile.nonexistent'"),
                    "missing extends target, positioned"))
                diag("r=%d %s", r, fmt(&e));

        write_file("missing-file.yaml", "id: mf\nversion: \"1.0.0\"\nextends: nothere.yaml\n");
        r = sbx_profile_load(tpath("missing-file.yaml"), &p, &e);
        if (!ok(r == -ENOENT &&
                            strstr(fmt(&e), "missing-file.yaml:3:10: extends: cannot find the profile file"),
                    "missing extends file, positioned"))
                diag("r=%d %s", r, fmt(&e));

        write_file("bad-parent.yaml", "id: bp\nversion: \"1.0.0\"\nlimits: {pids: lots}\n");
        write_file("good-child.yaml", "id: gc\nversion: \"1.0.0\"\nextends: bad-parent.yaml\n");
        r = sbx_profile_load(tpath("good-child.yaml"), &p, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "bad-parent.yaml:3:16: limits.pids"),
                "error in a parent names the parent file");

        /* depth: a chain of 10 */
        for (int i = 0; i < 10; i++) {
                char name[32], text[160];
                snprintf(name, sizeof name, "d%d.yaml", i);
                if (i < 9)
                        snprintf(text, sizeof text, "id: d%d\nversion: \"1.0.0\"\nextends: d%d.yaml\n", i,
                                i + 1);
                else
                        snprintf(text, sizeof text, "id: d%d\nversion: \"1.0.0\"\n", i);
                write_file(name, text);
        }
        r = sbx_profile_load(tpath("d0.yaml"), &p, &e);
        if (!ok(r == -EINVAL && strstr(fmt(&e), "d8.yaml:3:10: extends: the chain from d0 is deeper than 8"),
                    "extends depth limited to 8"))
                diag("r=%d %s", r, fmt(&e));
        r = sbx_profile_load(tpath("d1.yaml"), &p, &e);
        ok(r == 0, "a chain of exactly 8 extends loads");
        p = sbx_profile_free(p);

        write_file("ttl-parent.yaml", "id: tp\nversion: \"1.0.0\"\nttl: {default: 8h}\n");
        write_file(
                "ttl-child.yaml", "id: tc\nversion: \"1.0.0\"\nextends: ttl-parent.yaml\nttl: {max: 1h}\n");
        r = sbx_profile_load(tpath("ttl-child.yaml"), &p, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "ttl.default") && strstr(fmt(&e), "merged"),
                "merged ttl default > max refused");
}

static void test_search_path(void) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        sbx_error e = {};
        char dir[300];
        int r;

        snprintf(dir, sizeof dir, "%s/profiles", tmpdir);
        mkdir(dir, 0755);
        write_file("profiles/site.web.yaml", "id: site.web\nversion: \"3.1.4\"\nextends: profile.build\n");
        write_file("profiles/profile.python.yaml", "id: profile.python\nversion: \"9.0.0\"\n");
        write_file("profiles/wrong.yaml", "id: not-wrong\nversion: \"1.0.0\"\n");
        setenv("SANDBOXER_PROFILE_PATH", dir, 1);

        r = sbx_profile_load("site.web", &p, &e);
        ok(r == 0 && streq(p->version, "3.1.4") && p->ws_access == SBX_ACCESS_RW,
                "profile found by id in the search path");
        p = sbx_profile_free(p);
        r = sbx_profile_load("profile.python", &p, &e);
        ok(r == 0 && streq(p->version, "9.0.0"), "search path overrides a built-in of the same id");
        p = sbx_profile_free(p);
        r = sbx_profile_load("wrong", &p, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "declares id 'not-wrong'"),
                "file whose id differs from its name refused");
        r = sbx_profile_load("nobody", &p, &e);
        ok(r == -ENOENT && strstr(fmt(&e), "no profile named 'nobody'") && strstr(fmt(&e), dir),
                "unknown id: -ENOENT naming the search path");
        r = sbx_profile_load(tpath("nope.yaml"), &p, &e);
        ok(r == -ENOENT && strstr(fmt(&e), "nope.yaml"), "missing file: -ENOENT naming it");

        _cleanup_strv_free_ char **dirs = NULL;
        setenv("SANDBOXER_PROFILE_PATH", "/a:/b::/a", 1);
        r = sbx_profile_search_path(&dirs);
        ok(r == 0 && strv_length(dirs) == 3 && streq(dirs[0], "/a") && streq(dirs[1], "/b") &&
                        streq(dirs[2], "/etc/sandboxer/profiles"),
                "search path: env dirs (deduplicated) then /etc/sandboxer/profiles");
        unsetenv("SANDBOXER_PROFILE_PATH");
}

static void policy_bad(const char *text, unsigned line, unsigned col, const char *what, const char *needle) {
        _cleanup_(sbx_policy_freep) sbx_policy *p = NULL;
        sbx_error e = {};
        char pos[64];
        int r = sbx_policy_parse(text, strlen(text), "pol.yaml", &p, &e);
        snprintf(pos, sizeof pos, "pol.yaml:%u:%u: ", line, col);
        if (!ok(r == -EINVAL && strncmp(fmt(&e), pos, strlen(pos)) == 0 && strstr(fmt(&e), needle),
                    "bad policy: %s", what))
                diag("r=%d %s (expected at %s)", r, fmt(&e), pos);
}

static void test_policy_file(void) {
        policy_bad("version: 1\nmodez: {}\n", 2, 1, "unknown top key", "unknown key 'modez' at top level");
        policy_bad("version: 1\nmodes: {fast: {}}\n", 2, 9, "unknown mode", "unknown key 'fast' in modes");
        policy_bad("version: 1\nmodes: {balanced: {limit: {}}}\n", 2, 20, "unknown mode key",
                "'limit' in modes.balanced");
        policy_bad("version: 1\nmodes: {balanced: {limits: {ram: 1}}}\n", 2, 29, "unknown limit",
                "'ram' in modes.balanced.limits");
        policy_bad("version: 1\nmodes: {strict: {limits: {memory_mb: -1}}}\n", 2, 38, "negative ceiling",
                "modes.strict.limits.memory_mb");
        policy_bad("version: 1\nmodes: {balanced: {backends: [native, auto]}}\n", 2, 39, "auto as backend",
                "modes.balanced.backends[1]");
        policy_bad("version: 1\nmodes: {balanced: {backends: [native, native]}}\n", 2, 39,
                "duplicate backend", "twice");
        policy_bad("version: 2\n", 1, 10, "wrong version", "version: expected 1");
        policy_bad("modes: {}\n", 1, 1, "missing version", "missing required key 'version'");
        policy_bad("version: 1\noverrides: {per_request: yes}\n", 2, 26, "per_request not bool",
                "overrides.per_request");
        policy_bad("version: 1\noverrides: {allowed: [timeout]}\n", 2, 23, "unknown override",
                "overrides.allowed[0]");
        policy_bad("version: 1\nenforce: {best_effort: [pids, nope]}\n", 2, 31, "unknown best_effort",
                "enforce.best_effort[1]");
        policy_bad("version: 1\nrun_as: 0\n", 2, 9, "run_as root", "run_as");
        policy_bad("version: 1\nprocess: {long_lived_allowed: sometimes}\n", 2, 31,
                "long_lived_allowed not bool", "process.long_lived_allowed: expected true or false");
        policy_bad("version: 1\nprocess: {long_lived: true}\n", 2, 11, "a profile key in the policy file",
                "unknown key 'long_lived' in process");
        policy_bad("version: 1\nrun_as: 4294967296\n", 2, 9, "run_as too big", "run_as");
        policy_bad("version: 1\nstrict: {required_when: [always]}\n", 2, 26, "unknown trigger",
                "strict.required_when[0]");
        policy_bad("version: 1\nstrict: {allow_emulation: maybe}\n", 2, 27, "allow_emulation not bool",
                "strict.allow_emulation: expected true or false");
        policy_bad("version: 1\nstrict: {kernel: boot/vmlinuz}\n", 2, 18, "relative strict.kernel",
                "strict.kernel: expected an absolute path");
        policy_bad(
                "version: 1\nstrict: {kernel: [a]}\n", 2, 18, "strict.kernel not a string", "strict.kernel");
        policy_bad("version: 1\nstrict: {emulation: true}\n", 2, 10, "unknown strict key",
                "unknown key 'emulation' in strict");
        policy_bad("version: 1\nfilesystem: {write_allowed: [data]}\n", 2, 30, "relative write_allowed",
                "filesystem.write_allowed[0]");
        policy_bad("version: 1\nnetwork: {egress_allowed: [\"a b\"]}\n", 2, 28, "bad egress_allowed",
                "network.egress_allowed[0]");
        policy_bad("version: 1\nnetwork: {allow_host: 1}\n", 2, 23, "allow_host not bool",
                "network.allow_host");
        policy_bad("version: 1\nnetwork: {hosts: {\"a b\": 127.0.0.1}}\n", 2, 19,
                "hosts: a name with a space", "is not a host name");
        policy_bad("version: 1\nnetwork: {hosts: {svc.test: 10.0.0.0/8}}\n", 2, 29, "hosts: a CIDR",
                "is not an IPv4 or IPv6 address");
        policy_bad("version: 1\nnetwork: {hosts: {svc.test: \"127.0.0.1:80\"}}\n", 2, 29,
                "hosts: an address with a port", "is not an IPv4 or IPv6 address");
        policy_bad("version: 1\nnetwork: {hosts: {svc.test: example.com}}\n", 2, 29,
                "hosts: a name as the address", "is not an IPv4 or IPv6 address");
        policy_bad(
                "version: 1\nnetwork: {hosts: [svc.test]}\n", 2, 18, "hosts: a list", "expected a mapping");
        policy_bad("version: 1\nnetwork: {hosts: {a.test: 1.2.3.4, a.test: 1.2.3.5}}\n", 2, 36,
                "hosts: a name twice", "duplicate key 'a.test'");
        policy_bad("version: 1\nbilling: {enforce: maybe}\n", 2, 20, "billing.enforce not bool",
                "billing.enforce: expected true or false");
        policy_bad("version: 1\nbilling: {currency: usd}\n", 2, 21, "billing.currency lower-case",
                "billing.currency: 1 to 7 capital letters");
        policy_bad(
                "version: 1\nbilling: {hold_s: -5}\n", 2, 19, "billing.hold_s negative", "billing.hold_s");
        policy_bad("version: 1\nbilling: {grace_s: forever}\n", 2, 20, "billing.grace_s not a duration",
                "billing.grace_s");
        policy_bad("version: 1\nbilling: {credits: true}\n", 2, 11, "unknown billing key",
                "unknown key 'credits' in billing");
        {
                _cleanup_(sbx_policy_freep) sbx_policy *bp = NULL;
                sbx_error be = {};
                const char *bt =
                        "version: 1\nbilling: {enforce: true, currency: EUR, hold_s: 5m, grace_s: 10}\n";
                ok(sbx_policy_parse(bt, strlen(bt), "pol.yaml", &bp, &be) == 0 && bp->billing_enforce &&
                                strcmp(bp->billing_currency, "EUR") == 0 && bp->billing_hold_s == 300 &&
                                bp->billing_grace_s == 10,
                        "billing: enforce, currency, hold_s (a duration) and grace_s");
                _cleanup_(sbx_policy_freep) sbx_policy *dp = NULL;
                const char *dt = "version: 1\n";
                ok(sbx_policy_parse(dt, strlen(dt), "pol.yaml", &dp, &be) == 0 && !dp->billing_enforce &&
                                strcmp(dp->billing_currency, "USD") == 0 && dp->billing_hold_s == 0 &&
                                dp->billing_grace_s == 30,
                        "billing's defaults: off, USD, holds for the TTL, 30 s of grace");
        }
        policy_bad("version: 1\nversion: 1\n", 2, 1, "duplicate key", "duplicate key 'version'");
        policy_bad("[1]\n", 1, 1, "not a mapping", "must be a mapping");

        {
                _cleanup_(sbx_policy_freep) sbx_policy *hp = NULL;
                sbx_error he = {};
                const char *ht = "version: 1\nnetwork: {hosts: {Svc.Test: 127.0.0.1, v6.test: \"::1\"}}\n";
                ok(sbx_policy_parse(ht, strlen(ht), "pol.yaml", &hp, &he) == 0 &&
                                strv_length(hp->net_hosts) == 2 &&
                                strcmp(hp->net_hosts[0], "svc.test=127.0.0.1") == 0 &&
                                strcmp(hp->net_hosts[1], "v6.test=::1") == 0,
                        "network.hosts: names (lower-cased) to addresses, IPv6 too");
        }

        /* omissions are inherited from the built-in default, with source builtin */
        _cleanup_(sbx_policy_freep) sbx_policy *p = NULL;
        sbx_error e = {};
        const char *text = "version: 1\nmodes: {balanced: {limits: {timeout_s: 30s}}}\n";
        int r = sbx_policy_parse(text, strlen(text), "pol.yaml", &p, &e);
        if (ok(r == 0, "partial policy parses")) {
                ok(p->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_TIMEOUT_S] == 30 &&
                                p->mode_limits[SBX_MODE_BALANCED].source[SBX_LIMIT_TIMEOUT_S] ==
                                        SBX_SRC_POLICY,
                        "given limit from the file");
                ok(p->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_MEMORY_MB] == 1024 &&
                                p->mode_limits[SBX_MODE_BALANCED].source[SBX_LIMIT_MEMORY_MB] ==
                                        SBX_SRC_BUILTIN,
                        "omitted limit from the built-in default");
                ok(p->n_mode_backends[SBX_MODE_STRICT] == 1, "omitted backends inherited");
                ok(!p->long_lived_allowed, "a site file that does not allow long-lived execs does not");
                is_str(p->source_file, "pol.yaml", "source file recorded");
        } else
                skip(4, "partial policy failed");

        _cleanup_(sbx_policy_freep) sbx_policy *l = NULL;
        r = sbx_policy_load(tpath("no-such-policy.yaml"), &l, &e);
        ok(r == -ENOENT && strstr(fmt(&e), "no-such-policy.yaml"),
                "missing --policy file: -ENOENT naming it");
}

static const char *open_policy = "version: 1\n"
                                 "modes:\n"
                                 "  balanced:\n"
                                 "    limits: { timeout_s: 45, budget_s: 180, cpus: 2, memory_mb: 1024, "
                                 "pids: 256, output_mb: 10, scratch_mb: 512 }\n"
                                 "overrides: { per_request: true, allowed: [timeout_s, memory_mb] }\n"
                                 "filesystem: { write_allowed: [/srv/data] }\n"
                                 "network: { egress_allowed: [\"*.example.com\", \"pypi.org:443\", "
                                 "\"10.0.0.0/8\"], allow_host: false }\n"
                                 "strict: { required_when: [workspace_rw] }\n";

static int resolve(
        const char *policy, const char *profile_text, sbx_request *req, sbx_config **ret, sbx_error *e) {
        static unsigned k;
        char name[64];

        if (profile_text) {
                snprintf(name, sizeof name, "prof%u.yaml", k++);
                write_file(name, profile_text);
                req->profile = tpath(name);
        }
        if (policy) {
                snprintf(name, sizeof name, "policy%u.yaml", k++);
                write_file(name, policy);
                req->policy_file = tpath(name);
        }
        return sbx_config_resolve(req, ret, e);
}

static void test_config(void) {
        sbx_config *c = NULL;
        sbx_error e = {};
        int r;

        /* defaults: built-in policy + profile.default (assumes no /etc/sandboxer/policy.yaml) */
        if (access("/etc/sandboxer/policy.yaml", F_OK) == 0)
                skip(3, "/etc/sandboxer/policy.yaml exists");
        else {
                sbx_request req = {};
                r = sbx_config_resolve(&req, &c, &e);
                if (ok(r == 0, "default request resolves")) {
                        ok(c->mode == SBX_MODE_BALANCED && c->mode_source == SBX_SRC_PROFILE,
                                "mode balanced (set by profile.default)");
                        ok(c->limits.value[SBX_LIMIT_TIMEOUT_S] == 45 &&
                                        c->limits.source[SBX_LIMIT_TIMEOUT_S] == SBX_SRC_BUILTIN,
                                "timeout 45 from the built-in policy");
                } else {
                        diag("%s", fmt(&e));
                        skip(2, "no config");
                }
                c = sbx_config_free(c);
        }

        sbx_request req = {};
        r = resolve(open_policy, "id: big\nversion: \"1.0.0\"\nlimits:\n  memory_mb: 4096\n", &req, &c, &e);
        if (!ok(r == -EPERM &&
                            strstr(fmt(&e),
                                    "big@1.0.0: limits.memory_mb 4096 exceeds the policy ceiling 1024") &&
                            strstr(fmt(&e), "modes.balanced.limits.memory_mb") &&
                            strstr(fmt(&e), req.policy_file),
                    "profile over the ceiling refused, naming both keys and the policy file"))
                diag("r=%d %s", r, fmt(&e));

        req = (sbx_request){};
        r = resolve(NULL, "id: big\nversion: \"1.0.0\"\nlimits:\n  pids: 1000\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "limits.pids 1000 exceeds the policy ceiling 256") &&
                        strstr(fmt(&e), access("/etc/sandboxer/policy.yaml", F_OK) == 0
                                                ? "policy"
                                                : "built-in default policy"),
                "over the built-in ceiling refused");

        req = (sbx_request){.has_limit[SBX_LIMIT_TIMEOUT_S] = true, .limit[SBX_LIMIT_TIMEOUT_S] = 10};
        r = resolve("version: 1\n", "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        if (!ok(r == -EPERM && strstr(fmt(&e), "--timeout is not allowed: policy file") &&
                            strstr(fmt(&e), "does not permit per-request overrides of timeout_s (set "
                                            "overrides.per_request: "
                                            "true and add timeout_s to overrides.allowed)"),
                    "override refused when per_request is false, naming the key and the fix"))
                diag("r=%d %s", r, fmt(&e));

        req = (sbx_request){.has_limit[SBX_LIMIT_PIDS] = true, .limit[SBX_LIMIT_PIDS] = 10};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "--pids is not allowed") && strstr(fmt(&e), "overrides.allowed"),
                "override of a key not in overrides.allowed refused");

        req = (sbx_request){.has_limit[SBX_LIMIT_MEMORY_MB] = true, .limit[SBX_LIMIT_MEMORY_MB] = 2048};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "--memory 2048 exceeds the policy ceiling 1024"),
                "allowed override still capped");

        req = (sbx_request){.has_limit[SBX_LIMIT_TIMEOUT_S] = true,
                .limit[SBX_LIMIT_TIMEOUT_S] = 5.5,
                .env = (char *[]){(char *) "X=1", (char *) "LANG=en_US.UTF-8", NULL}};
        r = resolve(
                open_policy, "id: p\nversion: \"1.0.0\"\nlimits: {timeout_s: 30, pids: 64}\n", &req, &c, &e);
        if (ok(r == 0, "allowed override accepted")) {
                ok(c->limits.value[SBX_LIMIT_TIMEOUT_S] == 5.5 &&
                                c->limits.source[SBX_LIMIT_TIMEOUT_S] == SBX_SRC_FLAG,
                        "flag wins, source flag");
                ok(c->limits.value[SBX_LIMIT_PIDS] == 64 &&
                                c->limits.source[SBX_LIMIT_PIDS] == SBX_SRC_PROFILE,
                        "profile limit, source profile");
                ok(c->limits.value[SBX_LIMIT_CPUS] == 2 &&
                                c->limits.source[SBX_LIMIT_CPUS] == SBX_SRC_POLICY,
                        "policy default, source policy");
                bool lang = false, x = false;
                for (size_t i = 0; i < c->n_env; i++) {
                        lang = lang ||
                               (streq(c->env[i].name, "LANG") && streq(c->env[i].value, "en_US.UTF-8") &&
                                       c->env_source[i] == SBX_SRC_FLAG);
                        x = x || (streq(c->env[i].name, "X") && c->env_source[i] == SBX_SRC_FLAG);
                }
                ok(lang && x, "--env added and overriding the profile's");

                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                r = sbx_config_describe(c, true, f);
                fclose(f);
                ok(r == 0 && strstr(buf, "\"mode\": {\"value\": \"balanced\", \"source\": \"builtin\"}") &&
                                strstr(buf, "\"timeout_s\": {\"value\": 5.5, \"ceiling\": 45, "
                                            "\"best_effort\": false, \"source\": \"flag\"}") &&
                                strstr(buf, "\"pids\": {\"value\": 64") && strstr(buf, "\"sha256\": \""),
                        "describe JSON: values with sources");
                if (getenv("TEST_VERBOSE"))
                        diag("%s", buf);
                free(buf);
                buf = NULL;
                f = open_memstream(&buf, &len);
                r = sbx_config_describe(c, false, f);
                fclose(f);
                ok(r == 0 && strstr(buf, "limits.timeout_s") && strstr(buf, "[flag]") &&
                                strstr(buf, "[profile (p@1.0.0)]") && strstr(buf, "[policy ("),
                        "describe text: values with sources");
                free(buf);
        } else
                diag("%s", fmt(&e));
        c = sbx_config_free(c);

        req = (sbx_request){};
        r = resolve(open_policy, "id: w\nversion: \"1.0.0\"\nfilesystem: {write: [/srv/data/cache, /etc]}\n",
                &req, &c, &e);
        if (!ok(r == -EPERM && strstr(fmt(&e), "w@1.0.0: filesystem.write /etc is not allowed") &&
                            strstr(fmt(&e), "filesystem.write_allowed"),
                    "write path outside write_allowed refused"))
                diag("r=%d %s", r, fmt(&e));
        r = resolve(open_policy, "id: w\nversion: \"1.0.0\"\nfilesystem: {write: [/srv/data-other]}\n", &req,
                &c, &e);
        ok(r == -EPERM, "write_allowed matches whole components (/srv/data does not cover /srv/data-other)");
        r = resolve(open_policy, "id: w\nversion: \"1.0.0\"\nfilesystem: {write: [/srv/data/x]}\n", &req, &c,
                &e);
        ok(r == 0, "write path under write_allowed accepted");
        c = sbx_config_free(c);

        r = resolve(open_policy,
                "id: n\nversion: \"1.0.0\"\nnetwork: {egress: [api.example.com, \"pypi.org:443\", "
                "\"10.1.2.0/24\", \"*.a.example.com\"]}\n",
                &req, &c, &e);
        if (!ok(r == 0, "egress within egress_allowed accepted (wildcard, host:port, CIDR)"))
                diag("%s", fmt(&e));
        c = sbx_config_free(c);
        r = resolve(open_policy, "id: n\nversion: \"1.0.0\"\nnetwork: {egress: [evil.com]}\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "network.egress \"evil.com\" is not allowed") &&
                        strstr(fmt(&e), "network.egress_allowed"),
                "egress not in egress_allowed refused");
        r = resolve(open_policy, "id: n\nversion: \"1.0.0\"\nnetwork: {egress: [\"pypi.org:80\"]}\n", &req,
                &c, &e);
        ok(r == -EPERM, "egress to another port refused");
        r = resolve(open_policy, "id: n\nversion: \"1.0.0\"\nnetwork: {egress: [\"example.com\"]}\n", &req,
                &c, &e);
        ok(r == -EPERM, "*.example.com does not cover example.com itself");
        r = resolve(open_policy, "id: n\nversion: \"1.0.0\"\nnetwork: {egress: [\"10.0.0.0/7\"]}\n", &req,
                &c, &e);
        ok(r == -EPERM, "a wider CIDR is refused");
        r = resolve(open_policy, "id: n\nversion: \"1.0.0\"\nnetwork: {default: allow}\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "network.allow_host: true"),
                "network.default: allow needs allow_host");

        /* strict trigger */
        char ws[300];
        snprintf(ws, sizeof ws, "%s/ws", tmpdir);
        mkdir(ws, 0755);
        req = (sbx_request){.workspace = ws};
        r = resolve(open_policy, "id: rw\nversion: \"1.0.0\"\nworkspace: {access: rw}\n", &req, &c, &e);
        if (ok(r == 0, "rw workspace profile resolves")) {
                ok(c->strict_required && c->mode == SBX_MODE_STRICT && c->mode_source == SBX_SRC_POLICY &&
                                strstr(c->strict_reason, "workspace_rw"),
                        "workspace_rw forces strict with source policy");
                ok(c->limits.value[SBX_LIMIT_MEMORY_MB] == 1536, "strict limits apply");
                ok(c->workspace && c->workspace_source == SBX_SRC_FLAG && strstr(c->workspace, "/ws"),
                        "workspace from flag");
        } else
                diag("%s", fmt(&e));
        c = sbx_config_free(c);

        char missing[300];
        snprintf(missing, sizeof missing, "%s", tpath("no-such-dir"));
        req = (sbx_request){.workspace = missing};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        if (!ok(r == -ENOENT && strstr(fmt(&e), "no-such-dir"), "missing workspace: -ENOENT"))
                diag("r=%d %s", r, fmt(&e));
        char afile[300];
        snprintf(afile, sizeof afile, "%s", tpath("base.yaml"));
        req = (sbx_request){.workspace = afile};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -ENOTDIR && strstr(fmt(&e), "not a directory"), "workspace a file: -ENOTDIR");

        req = (sbx_request){.env = (char *[]){(char *) "TMPDIR=/x", NULL}};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EPERM && strstr(fmt(&e), "--env TMPDIR=/x"), "--env TMPDIR refused");
        req = (sbx_request){.env = (char *[]){(char *) "NOEQUALS", NULL}};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "NAME=VALUE"), "--env without '=' refused");
        req = (sbx_request){.env = (char *[]){(char *) "A-B=1", NULL}};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "not a valid variable name"), "--env bad name refused");

        req = (sbx_request){.has_mode = true,
                .mode = SBX_MODE_STRICT,
                .cwd = "/work//dir/",
                .has_backend = true,
                .backend = SBX_BACKEND_BWRAP};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\nisolation: {mode: balanced, backend: native}\n",
                &req, &c, &e);
        if (ok(r == 0, "flags for mode, backend, cwd")) {
                ok(c->mode == SBX_MODE_STRICT && c->mode_source == SBX_SRC_FLAG,
                        "--mode wins over the profile");
                ok(c->backend == SBX_BACKEND_BWRAP && c->backend_source == SBX_SRC_FLAG, "--backend wins");
                ok(streq(c->cwd, "/work/dir") && c->cwd_source == SBX_SRC_FLAG, "--cwd normalised");
        }
        c = sbx_config_free(c);
        req = (sbx_request){.cwd = "relative"};
        r = resolve(open_policy, "id: p\nversion: \"1.0.0\"\n", &req, &c, &e);
        ok(r == -EINVAL && strstr(fmt(&e), "--cwd"), "relative --cwd refused");

        req = (sbx_request){};
        r = resolve("version: 1\nmodes: {balanced: {limits: {pids: many}}}\n", "id: p\nversion: \"1.0.0\"\n",
                &req, &c, &e);
        ok(r == -EINVAL && strstr(fmt(&e), ":3:46: modes.balanced.limits.pids") == NULL &&
                        strstr(fmt(&e), "policy") && strstr(fmt(&e), ":2:") &&
                        strstr(fmt(&e), "modes.balanced.limits.pids"),
                "bad policy file: positioned error from resolve");

        sbx_policy *pol = NULL;
        sbx_profile *p = NULL;
        const char *pt = "id: p\nversion: \"1.0.0\"\nlimits: {cpus: 3}\n";
        if (sbx_policy_parse(open_policy, strlen(open_policy), "x.yaml", &pol, &e) == 0 &&
                sbx_profile_parse(pt, strlen(pt), "p.yaml", &p, &e) == 0) {
                r = sbx_policy_check_profile(pol, p, SBX_MODE_BALANCED, &e);
                ok(r == -EPERM && strstr(fmt(&e), "limits.cpus 3 exceeds the policy ceiling 2"),
                        "check_profile alone");
        } else
                skip(1, "parse failed");
        sbx_policy_free(pol);
        sbx_profile_free(p);
}

/* The one entry in the cache directory (there is one at a time: cleared before each case). */
static const char *cache_entry(void) {
        static char path[512];
        path[0] = 0;
        DIR *d = opendir(tpath("cache"));
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (strncmp(de->d_name, "parse-", 6) == 0)
                        snprintf(path, sizeof path, "%s/%s", tpath("cache"), de->d_name);
        if (d)
                closedir(d);
        return path;
}

static void cache_clear(void) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s' && mkdir -m 700 '%s'", tpath("cache"), tpath("cache"));
        if (system(cmd) != 0)
                diag("could not reset %s", tpath("cache"));
}

/* Parsed files kept for the next runs (parse-cache.c): each built-in, a profile with every field
 * and the built-in policy go through an entry and come back the same. The original is freed
 * before the entry is read, so a pointer field the cache does not know (copied as a raw
 * pointer) is a use after free under ASan and a double free at the latest. */
static void test_parse_cache(void) {
        setenv("SANDBOXER_CACHE_DIR", tpath("cache"), 1);
        const char *const *ids = sbx_builtin_profile_ids();
        size_t n_ids = strv_length((char **) ids);
        for (size_t i = 0; i <= n_ids; i++) { /* each built-in, then every_field */
                const char *id = i < n_ids ? ids[i] : "every-field";
                size_t len = sizeof every_field - 1;
                const char *text = i < n_ids ? builtin_profile_text_len(ids[i], &len) : every_field;
                _cleanup_(sbx_profile_freep) sbx_profile *a = NULL, *b = NULL;
                sbx_profile *stored = NULL;
                sbx_error e = {};
                cache_clear();
                if (!ok(sbx_profile_parse(text, len, "/p/t.yaml", &a, &e) == 0 &&
                                    sbx_profile_parse(text, len, "/p/t.yaml", &stored, &e) == 0,
                            "cache %s: parsed", id)) {
                        diag("%s", fmt(&e));
                        skip(3, "no profile");
                        continue;
                }
                sbx_parse_cache_store(SBX_PARSE_CACHE_PROFILE, text, len, "/p/t.yaml", stored);
                sbx_profile_free(stored);
                int r = sbx_parse_cache_load(SBX_PARSE_CACHE_PROFILE, text, len, "/p/t.yaml", (void **) &b);
                if (!ok(r == 0 && b, "cache %s: stored and read back", id)) {
                        diag("r=%d", r);
                        skip(2, "no entry");
                        continue;
                }
                ok(profile_strings_same(a, b), "cache %s: the same strings, lists and env", id);
                ok(profile_bytes_same(a, b), "cache %s: the same in every other byte", id);
        }

        /* the policy */
        size_t len;
        const char *text = builtin_policy_text_len(&len);
        _cleanup_(sbx_policy_freep) sbx_policy *a = NULL, *b = NULL;
        sbx_policy *stored = NULL;
        sbx_error e = {};
        cache_clear();
        if (ok(sbx_policy_parse(text, len, "/p/policy.yaml", &a, &e) == 0 &&
                            sbx_policy_parse(text, len, "/p/policy.yaml", &stored, &e) == 0,
                    "cache policy: parsed")) {
                sbx_parse_cache_store(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", stored);
                sbx_policy_free(stored);
                ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", (void **) &b) ==
                                        0 &&
                                b && policy_strings_same(a, b) && policy_bytes_same(a, b) &&
                                streq(a->sha256, b->sha256),
                        "cache policy: read back the same, its digest too");
        } else
                skip(1, "no policy");

        /* what misses: another name, other bytes, the other kind */
        void *x = NULL;
        ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, "/p/other.yaml", &x) < 0 && !x,
                "cache: another file name misses");
        ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len - 1, "/p/policy.yaml", &x) < 0 && !x,
                "cache: other bytes miss");
        ok(sbx_parse_cache_load(SBX_PARSE_CACHE_PROFILE, text, len, "/p/policy.yaml", &x) < 0 && !x,
                "cache: the other kind misses");

        /* damaged, truncated, or not ours alone: not used */
        const char *entry = cache_entry();
        struct stat st;
        if (ok(entry[0] && stat(entry, &st) == 0 && (st.st_mode & 0777) == 0600,
                    "cache: the entry is 0600")) {
                FILE *f = fopen(entry, "r+");
                if (f) {
                        fseek(f, st.st_size / 2, SEEK_SET);
                        int c = fgetc(f);
                        fseek(f, st.st_size / 2, SEEK_SET);
                        fputc(c ^ 0x5a, f);
                        fclose(f);
                }
                ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", &x) ==
                                        -EBADMSG &&
                                !x,
                        "cache: a damaged entry is refused (its digest)");
                if (truncate(entry, st.st_size - 3) < 0)
                        diag("truncate: %m");
                ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", &x) ==
                                        -EBADMSG &&
                                !x,
                        "cache: a truncated entry is refused");
                sbx_policy *s2 = NULL;
                if (sbx_policy_parse(text, len, "/p/policy.yaml", &s2, &e) == 0) {
                        cache_clear();
                        sbx_parse_cache_store(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", s2);
                        sbx_policy_free(s2);
                }
                entry = cache_entry();
                if (chmod(entry, 0666) < 0)
                        diag("chmod: %m");
                ok(sbx_parse_cache_load(SBX_PARSE_CACHE_POLICY, text, len, "/p/policy.yaml", &x) == -EPERM &&
                                !x,
                        "cache: an entry others may write is not read");
        } else
                skip(3, "no entry");

        /* sbx_policy_load() of a file: the second load comes from the entry, an edit misses */
        cache_clear();
        write_file("pc-policy.yaml", "version: 1\nrun_as: 1234\n");
        _cleanup_(sbx_policy_freep) sbx_policy *l1 = NULL, *l2 = NULL, *l3 = NULL;
        ok(sbx_policy_load(tpath("pc-policy.yaml"), &l1, &e) == 0 && cache_entry()[0] &&
                        sbx_policy_load(tpath("pc-policy.yaml"), &l2, &e) == 0 && l2->run_as == 1234,
                "cache: a policy file loads, is kept, and loads again from the entry");
        write_file("pc-policy.yaml", "version: 1\nrun_as: 4321\n");
        ok(sbx_policy_load(tpath("pc-policy.yaml"), &l3, &e) == 0 && l3->run_as == 4321,
                "cache: the edited file is parsed again (its bytes are the key)");
        write_file("pc-bad.yaml", "version: 1\nrun_az: 1\n");
        cache_clear();
        sbx_policy *bad = NULL;
        ok(sbx_policy_load(tpath("pc-bad.yaml"), &bad, &e) < 0 && !bad && !cache_entry()[0],
                "cache: a file that does not parse leaves no entry");
        unsetenv("SANDBOXER_CACHE_DIR");
}

static void test_dump_roundtrip(void) {
        for (const char *const *id = sbx_builtin_profile_ids(); *id; id++) {
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL, *q = NULL;
                sbx_error e = {};
                char *buf = NULL, *buf2 = NULL;
                size_t len = 0, len2 = 0;
                FILE *f;
                int r;

                r = sbx_profile_load(*id, &p, &e);
                f = open_memstream(&buf, &len);
                if (r == 0)
                        r = sbx_profile_dump(p, false, f);
                fclose(f);
                if (r == 0)
                        r = sbx_profile_parse(buf, len, "dump.yaml", &q, &e);
                if (r == 0) {
                        /* the dump of the re-parsed profile is the same, but for its first line */
                        f = open_memstream(&buf2, &len2);
                        free(q->extends);
                        q->extends = p->extends ? strdup(p->extends) : NULL;
                        free(q->source_file);
                        q->source_file = strdup(p->source_file);
                        sbx_profile_dump(q, false, f);
                        fclose(f);
                }
                if (!ok(r == 0 && buf2 && streq(buf, buf2),
                            "show %s: YAML output parses back to the same profile", *id))
                        diag("r=%d %s", r, fmt(&e));
                free(buf);
                free(buf2);
        }
}

static void test_names(void) {
        for (int i = 0; i < _SBX_LIMIT_MAX; i++) {
                const char *s = sbx_limit_to_string((sbx_limit_id) i);
                ok(s && sbx_limit_from_string(s) == (sbx_limit_id) i &&
                                sbx_limit_from_flag(sbx_limit_to_flag((sbx_limit_id) i)) == (sbx_limit_id) i,
                        "limit %s round-trips", s);
        }
        ok(sbx_limit_from_string("nope") == _SBX_LIMIT_INVALID &&
                        sbx_limit_to_string(_SBX_LIMIT_MAX) == NULL,
                "unknown limit rejected");
        ok(sbx_backend_from_string("landlock") == SBX_BACKEND_LANDLOCK &&
                        streq(sbx_backend_to_string(SBX_BACKEND_MICROVM), "microvm"),
                "backend names");
        ok(sbx_mode_from_string("strict") == SBX_MODE_STRICT &&
                        sbx_mode_from_string(NULL) == _SBX_MODE_INVALID,
                "mode names");
        ok(streq(sbx_source_to_string(SBX_SRC_POLICY), "policy") &&
                        streq(sbx_field_to_string(SBX_F_NET_EGRESS), "network.egress"),
                "source and field names");
        ok(sbx_observe_from_string("required") == SBX_OBSERVE_REQUIRED &&
                        sbx_cmd_mode_from_string("warn") == SBX_CMD_MODE_WARN &&
                        sbx_access_from_string("rw") == SBX_ACCESS_RW &&
                        sbx_on_violation_from_string("kill") == SBX_ON_VIOLATION_KILL &&
                        sbx_level_from_string("microvm") == SBX_LEVEL_MICROVM,
                "other enum names");
}

/* backend auto: which refusals let it try the next backend (the command never ran) */
static void test_ns_refusal(void) {
        struct {
                const char *step;
                int errnum;
                bool want;
        } cases[] = {
                {"spawn: clone", EPERM, true},
                {"spawn: clone", ENOSPC, true},
                {"spawn: clone", ENOMEM, false},
                {"sandbox setup: sethostname", EPERM, true},
                {"sandbox setup: mount proc", EPERM, true},
                {"sandbox setup: pivot_root", EACCES, true},
                {"sandbox setup: sethostname", ENOSPC, false},
                {"sandbox setup: landlock: add rule", EPERM, false},
                {"sandbox setup: setrlimit", EPERM, false},
                {"workspace: open_tree", EPERM, true},
                {"workspace: open_tree", ENOENT, false},
                {"workspace", EPERM, false},
                {"limits", EPERM, false},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                sbx_error e = {.errnum = cases[i].errnum};
                snprintf(e.step, sizeof e.step, "%s", cases[i].step);
                ok(sbx_backend_error_is_ns_refusal(&e) == cases[i].want, "auto fallback: %s %s -> %s",
                        cases[i].step, strerror(cases[i].errnum),
                        cases[i].want ? "next backend" : "an error");
        }
        ok(!sbx_backend_error_is_ns_refusal(NULL), "auto fallback: no error, no fallback");
}

/* sbx_config_encode(): what the control plane hands a supervisor decodes into the same profile and
 * policy, and bytes that are not such a thing are refused, never half-read. */
static char *dump_of(const sbx_profile *p) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        sbx_profile_dump(p, true, f);
        fclose(f);
        return buf;
}

static void test_resolved(void) {
        for (const char *const *id = sbx_builtin_profile_ids(); *id; id++) {
                _cleanup_(sbx_config_freep) sbx_config *a = NULL, *b = NULL;
                sbx_error e = {};
                sbx_request req = {.profile = *id};
                char *data = NULL, sha[65] = "", sha2[65] = "";
                size_t n = 0;
                int r = sbx_config_resolve(&req, &a, &e);
                if (r == 0)
                        r = sbx_config_encode(a, &data, &n, sha);
                sbx_request again = {.profile = "no-such-profile",
                        .policy_file = "/nonexistent/policy.yaml",
                        .resolved = data,
                        .resolved_len = n};
                if (r == 0)
                        r = sbx_config_resolve(&again, &b, &e);
                char *da = r == 0 ? dump_of(a->profile) : NULL, *db = r == 0 ? dump_of(b->profile) : NULL;
                if (!ok(r == 0 && streq(da, db) && streq(a->policy->sha256, b->policy->sha256) &&
                                    memcmp(&a->limits, &b->limits, sizeof a->limits) == 0 &&
                                    a->mode == b->mode,
                            "resolved %s: decoded, the same profile, policy and limits (names not read)",
                            *id))
                        diag("r=%d %s", r, fmt(&e));
                if (r == 0) {
                        char *again_data = NULL;
                        size_t n2 = 0;
                        ok(sbx_config_encode(b, &again_data, &n2, sha2) == 0 && n2 == n && streq(sha, sha2),
                                "resolved %s: encoding the decoded one gives the same bytes", *id);
                        free(again_data);
                }
                if (streq(*id, "profile.python") && data) {
                        static const size_t cuts[] = {0, 7, 8, 40, 48};
                        for (size_t i = 0; i < ELEMENTSOF(cuts) + 2; i++) {
                                _cleanup_(sbx_config_freep) sbx_config *c = NULL;
                                _cleanup_free_ char *bad = malloc(n);
                                memcpy(bad, data, n);
                                size_t len = i < ELEMENTSOF(cuts) ? cuts[i] : n - 1;
                                if (i == ELEMENTSOF(cuts) + 1) {
                                        len = n;
                                        bad[n - 3] ^= 0x5a; /* inside the profile's entry: its digest */
                                }
                                sbx_request bq = {.resolved = bad, .resolved_len = len};
                                sbx_error be = {};
                                r = sbx_config_resolve(&bq, &c, &be);
                                if (!ok(r < 0 && !c && (be.errnum == EBADMSG || be.errnum == EPROTO),
                                            "resolved bytes %s (%zu of %zu): refused, saying so",
                                            i == ELEMENTSOF(cuts) + 1 ? "altered" : "truncated", len, n))
                                        diag("r=%d %s", r, fmt(&be));
                        }
                }
                free(da);
                free(db);
                free(data);
        }
}

int main(void) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/test-policy-XXXXXX");
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        unsetenv("SANDBOXER_PROFILE_PATH");

        test_names();
        test_ns_refusal();
        test_unknown_keys();
        test_types();
        test_structure();
        test_values();
        test_builtins();
        test_snapshot();
        test_sha256();
        test_extends();
        test_search_path();
        test_policy_file();
        test_config();
        test_dump_roundtrip();
        test_parse_cache();
        test_resolved();

        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmpdir);
        if (system(cmd) != 0)
                diag("could not remove %s", tmpdir);
        return done_testing();
}
