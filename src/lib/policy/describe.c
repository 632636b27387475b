/* describe.c — showing configurations: the effective config with the source of every value
 * (`run --dry-run`), and a merged profile as YAML (re-parseable) or JSON (`profile show`). */
#include <string.h>

#include "basic/jsonw.h"
#include "basic/strv.h"
#include "policy/policy-internal.h"

/* A JSON string literal; also a valid YAML double-quoted scalar (jsonw's escaping). */
static void put_str(FILE *f, const char *s) {
        (void) json_fputs(f, s);
}

static void put_strv(FILE *f, char *const *l) {
        fputc('[', f);
        STRV_FOREACH(s, l) {
                if (s != l)
                        fputs(", ", f);
                put_str(f, *s);
        }
        fputc(']', f);
}

/* network.services as flow mappings {name, target, port, env, protocol} (valid YAML and JSON). */
static void put_services(FILE *f, bool json, char *const *l) {
        (void) json;
        fputc('[', f);
        STRV_FOREACH(s, l) {
                char name[64] = "", target[1100] = "", env[300] = "", proto[16] = "";
                unsigned port = 0;
                const char *p = *s, *t;
                char *fields[] = {name, target, NULL, env, proto};
                size_t sizes[] = {sizeof name, sizeof target, 0, sizeof env, sizeof proto};
                for (int i = 0; i < 5; i++) {
                        t = strchr(p, '\t');
                        size_t n = t ? (size_t) (t - p) : strlen(p);
                        if (i == 2)
                                port = (unsigned) strtoul(p, NULL, 10);
                        else
                                snprintf(fields[i], sizes[i], "%.*s", (int) n, p);
                        p = t ? t + 1 : p + n;
                }
                fputs(s != l ? ", {\"name\": " : "{\"name\": ", f);
                put_str(f, name);
                fputs(", \"target\": ", f);
                put_str(f, target);
                fprintf(f, ", \"port\": %u, \"env\": ", port);
                put_str(f, env[0] ? env : NULL);
                fputs(", \"protocol\": ", f);
                put_str(f, proto);
                fputc('}', f);
        }
        fputc(']', f);
}

static void put_num(FILE *f, double v) {
        fprintf(f, "%.15g", v);
}

static const char *bool_str(bool b) {
        return b ? "true" : "false";
}

/* ---- profile dump ---- */

static void dump_profile_yaml(const sbx_profile *p, FILE *f) {
        fprintf(f, "# %s@%s from %s", p->id, p->version, p->source_file);
        if (p->extends)
                fprintf(f, ", merged with what it extends (%s)", p->extends);
        fputs("\nid: ", f);
        put_str(f, p->id);
        fputs("\nversion: ", f);
        put_str(f, p->version);
        fprintf(f, "\nisolation:\n  level: %s\n  mode: %s\n  backend: %s\n", sbx_level_to_string(p->level),
                sbx_mode_to_string(p->mode), sbx_backend_to_string(p->backend));
        fprintf(f, "network:\n  default: %s\n  egress: ", p->net_allow ? "allow" : "deny");
        put_strv(f, p->egress);
        if (p->egress_deny && p->egress_deny[0]) {
                fputs("\n  egress_deny: ", f);
                put_strv(f, p->egress_deny);
        }
        fprintf(f, "\n  loopback: %s\n  services: ", bool_str(p->loopback));
        put_services(f, false, p->net_services);
        fputs("\nworkspace:\n  path: ", f);
        put_str(f, p->ws_path);
        fputs("\n  mount: ", f);
        put_str(f, p->ws_mount);
        fprintf(f, "\n  access: %s\nfilesystem:\n  read: ", sbx_access_to_string(p->ws_access));
        put_strv(f, p->fs_read);
        fputs("\n  write: ", f);
        put_strv(f, p->fs_write);
        fputs("\n  exec: ", f);
        if (p->fs_exec_set)
                put_strv(f, p->fs_exec);
        else
                fputs("null", f);
        fputs("\n  home: ", f);
        put_str(f, p->fs_home);
        fputs("\nuser: ", f);
        put_str(f, p->user);
        fprintf(f,
                "\nprocess:\n  allow_spawn: %s\n  allow_exec: %s\n  long_lived: %s\n  commands:\n    mode: "
                "%s\n    allow: ",
                bool_str(p->allow_spawn), bool_str(p->allow_exec), bool_str(p->long_lived),
                sbx_cmd_mode_to_string(p->cmd_mode));
        put_strv(f, p->cmd_allow);
        fputs("\n    deny: ", f);
        put_strv(f, p->cmd_deny);
        fputs("\n", f);
        bool any_limit = false;
        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                any_limit = any_limit || p->limits.set[l];
        fputs(any_limit ? "limits:\n" : "limits: {}   # all from the policy file\n", f);
        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                if (p->limits.set[l]) {
                        fprintf(f, "  %s: ", sbx_limit_to_string((sbx_limit_id) l));
                        put_num(f, p->limits.value[l]);
                        fputc('\n', f);
                }
        fprintf(f, "on_violation: %s\nenv:", sbx_on_violation_to_string(p->on_violation));
        if (p->n_env == 0)
                fputs(" {}", f);
        for (size_t i = 0; i < p->n_env; i++) {
                fprintf(f, "\n  %s: ", p->env[i].name);
                put_str(f, p->env[i].value);
        }
        fputs("\nsecrets: ", f);
        put_strv(f, p->secrets);
        fputs("\nttl:\n  default: ", f);
        put_num(f, p->ttl_default_s);
        fputs("\n  max: ", f);
        put_num(f, p->ttl_max_s);
        fputs("\n  idle: ", f);
        if (p->ttl_idle_s > 0)
                put_num(f, p->ttl_idle_s);
        else
                fputs("null", f);
        if (p->ttl_paused_s > 0) {
                fputs("\n  paused: ", f);
                put_num(f, p->ttl_paused_s);
        }
        fputs("\nplacement:\n  prefer: ", f);
        put_strv(f, p->placement_prefer);
        fputs("\n  fallback: ", f);
        put_strv(f, p->placement_fallback);
        fprintf(f, "\nroute:\n  strategy: %s\n  fallback: ", p->route_strategy);
        put_strv(f, p->route_fallback);
        fputs("\n  constraints:", f);
        if (strv_length(p->route_constraints) == 0)
                fputs(" {}", f);
        STRV_FOREACH(kv, p->route_constraints) {
                const char *eq = strchr(*kv, '=');
                fprintf(f, "\n    %.*s: ", (int) (eq - *kv), *kv);
                put_str(f, eq + 1);
        }
        fputs("\nmetadata:\n  cost_class: ", f);
        put_str(f, p->cost_class);
        fputs("\n  latency_class: ", f);
        put_str(f, p->latency_class);
        fprintf(f, "\nobserve:\n  mode: %s\n  fs_writes: %s\nhigh_risk: %s\ncwd: ",
                sbx_observe_to_string(p->observe), bool_str(p->observe_fs_writes), bool_str(p->high_risk));
        put_str(f, p->cwd);
        fputc('\n', f);
}

static void dump_profile_json(const sbx_profile *p, FILE *f) {
        fputs("{\"id\": ", f);
        put_str(f, p->id);
        fputs(", \"version\": ", f);
        put_str(f, p->version);
        fputs(", \"extends\": ", f);
        put_str(f, p->extends);
        fputs(", \"source\": ", f);
        put_str(f, p->source_file);
        fprintf(f, ", \"isolation\": {\"level\": \"%s\", \"mode\": \"%s\", \"backend\": \"%s\"}",
                sbx_level_to_string(p->level), sbx_mode_to_string(p->mode),
                sbx_backend_to_string(p->backend));
        fprintf(f, ", \"network\": {\"default\": \"%s\", \"egress\": ", p->net_allow ? "allow" : "deny");
        put_strv(f, p->egress);
        if (p->egress_deny && p->egress_deny[0]) {
                fputs(", \"egress_deny\": ", f);
                put_strv(f, p->egress_deny);
        }
        fprintf(f, ", \"loopback\": %s, \"services\": ", bool_str(p->loopback));
        put_services(f, true, p->net_services);
        fputs("}, \"workspace\": {\"path\": ", f);
        put_str(f, p->ws_path);
        fputs(", \"mount\": ", f);
        put_str(f, p->ws_mount);
        fprintf(f, ", \"access\": \"%s\"}, \"filesystem\": {\"read\": ", sbx_access_to_string(p->ws_access));
        put_strv(f, p->fs_read);
        fputs(", \"write\": ", f);
        put_strv(f, p->fs_write);
        fputs(", \"exec\": ", f);
        if (p->fs_exec_set)
                put_strv(f, p->fs_exec);
        else
                fputs("null", f);
        fputs(", \"home\": ", f);
        put_str(f, p->fs_home);
        fputs("}, \"user\": ", f);
        put_str(f, p->user);
        fprintf(f,
                ", \"process\": {\"allow_spawn\": %s, \"allow_exec\": %s, \"long_lived\": %s, "
                "\"commands\": {\"mode\": \"%s\", \"allow\": ",
                bool_str(p->allow_spawn), bool_str(p->allow_exec), bool_str(p->long_lived),
                sbx_cmd_mode_to_string(p->cmd_mode));
        put_strv(f, p->cmd_allow);
        fputs(", \"deny\": ", f);
        put_strv(f, p->cmd_deny);
        fputs("}}, \"limits\": {", f);
        bool first = true;
        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                if (p->limits.set[l]) {
                        fprintf(f, "%s\"%s\": ", first ? "" : ", ", sbx_limit_to_string((sbx_limit_id) l));
                        put_num(f, p->limits.value[l]);
                        first = false;
                }
        fprintf(f, "}, \"on_violation\": \"%s\", \"env\": {", sbx_on_violation_to_string(p->on_violation));
        for (size_t i = 0; i < p->n_env; i++) {
                fputs(i ? ", " : "", f);
                put_str(f, p->env[i].name);
                fputs(": ", f);
                put_str(f, p->env[i].value);
        }
        fputs("}, \"secrets\": ", f);
        put_strv(f, p->secrets);
        fputs(", \"ttl\": {\"default\": ", f);
        put_num(f, p->ttl_default_s);
        fputs(", \"max\": ", f);
        put_num(f, p->ttl_max_s);
        fputs(", \"idle\": ", f);
        if (p->ttl_idle_s > 0)
                put_num(f, p->ttl_idle_s);
        else
                fputs("null", f);
        if (p->ttl_paused_s > 0) {
                fputs(", \"paused\": ", f);
                put_num(f, p->ttl_paused_s);
        }
        fputs("}, \"placement\": {\"prefer\": ", f);
        put_strv(f, p->placement_prefer);
        fputs(", \"fallback\": ", f);
        put_strv(f, p->placement_fallback);
        fputs("}, \"route\": {\"strategy\": ", f);
        put_str(f, p->route_strategy);
        fputs(", \"fallback\": ", f);
        put_strv(f, p->route_fallback);
        fputs(", \"constraints\": {", f);
        STRV_FOREACH(kv, p->route_constraints) {
                const char *eq = strchr(*kv, '=');
                fprintf(f, "%s\"%.*s\": ", kv == p->route_constraints ? "" : ", ", (int) (eq - *kv), *kv);
                put_str(f, eq + 1);
        }
        fputs("}}, \"metadata\": {\"cost_class\": ", f);
        put_str(f, p->cost_class);
        fputs(", \"latency_class\": ", f);
        put_str(f, p->latency_class);
        fprintf(f, "}, \"observe\": {\"mode\": \"%s\", \"fs_writes\": %s}, \"high_risk\": %s, \"cwd\": ",
                sbx_observe_to_string(p->observe), bool_str(p->observe_fs_writes), bool_str(p->high_risk));
        put_str(f, p->cwd);
        fputs(", \"fields_set\": [", f);
        first = true;
        for (int i = 0; i < _SBX_F_MAX; i++)
                if (p->field_set[i]) {
                        fprintf(f, "%s\"%s\"", first ? "" : ", ", sbx_field_to_string((sbx_field) i));
                        first = false;
                }
        fputs("]}\n", f);
}

int sbx_profile_dump(const sbx_profile *p, bool json, FILE *f) {
        if (json)
                dump_profile_json(p, f);
        else
                dump_profile_yaml(p, f);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

/* ---- effective configuration ---- */

typedef struct out {
        FILE *f;
        bool json;
        const sbx_config *c;
        unsigned depth; /* JSON: open objects */
        bool first[8]; /* JSON: nothing written yet at this depth */
        char prefix[64]; /* text: "limits." */
} out;

static void o_key(out *o, const char *key) {
        if (!o->first[o->depth])
                fputs(", ", o->f);
        o->first[o->depth] = false;
        put_str(o->f, key);
        fputs(": ", o->f);
}

static void o_open(out *o, const char *key) {
        if (o->json) {
                o_key(o, key);
                fputc('{', o->f);
                o->first[++o->depth] = true;
        } else
                snprintf(o->prefix, sizeof o->prefix, "%s.", key);
}

static void o_close(out *o) {
        if (o->json) {
                fputc('}', o->f);
                o->depth--;
        } else
                o->prefix[0] = 0;
}

static const char *source_text(const out *o, sbx_source s, char *buf, size_t size) {
        switch (s) {
        case SBX_SRC_POLICY:
                snprintf(buf, size, "policy (%s)", o->c->policy->source_file);
                break;
        case SBX_SRC_PROFILE:
                snprintf(buf, size, "profile (%s@%s)", o->c->profile->id, o->c->profile->version);
                break;
        case SBX_SRC_FLAG:
                snprintf(buf, size, "flag");
                break;
        case SBX_SRC_BUILTIN:
        case _SBX_SRC_MAX:
        case _SBX_SRC_INVALID:
        default:
                snprintf(buf, size, "builtin");
                break;
        }
        return buf;
}

/* One value: `write` prints it (JSON or YAML-ish flow syntax is the same for our values). */
#define O_VALUE(o, key, src, ...)                                                                           \
        do {                                                                                                \
                if ((o)->json) {                                                                            \
                        o_key(o, key);                                                                      \
                        fputs("{\"value\": ", (o)->f);                                                      \
                        __VA_ARGS__;                                                                        \
                        fprintf((o)->f, ", \"source\": \"%s\"}", sbx_source_to_string(src));                \
                } else {                                                                                    \
                        char k_[96], s_[320];                                                               \
                        snprintf(k_, sizeof k_, "%s%s", (o)->prefix, key);                                  \
                        fprintf((o)->f, "%-24s ", k_);                                                      \
                        __VA_ARGS__;                                                                        \
                        fprintf((o)->f, "    [%s]\n", source_text(o, src, s_, sizeof s_));                  \
                }                                                                                           \
        } while (0)

static sbx_source fsrc(const sbx_config *c, sbx_field f) {
        return c->profile->field_set[f] ? SBX_SRC_PROFILE : SBX_SRC_BUILTIN;
}

int sbx_config_describe(const sbx_config *c, bool json, FILE *f) {
        const sbx_profile *p = c->profile;
        const sbx_policy *pol = c->policy;
        out o = {.f = f, .json = json, .c = c, .first = {true}};
        const char *s;

        if (json) {
                fputs("{\"policy\": {\"file\": ", f);
                put_str(f, pol->source_file);
                fprintf(f, ", \"sha256\": \"%s\"}, \"profile\": {\"id\": ", pol->sha256);
                put_str(f, p->id);
                fputs(", \"version\": ", f);
                put_str(f, p->version);
                fputs(", \"file\": ", f);
                put_str(f, p->source_file);
                fputc('}', f);
                o.first[0] = false;
        } else {
                fprintf(f, "%-24s %s (sha256 %.16s…)\n", "policy", pol->source_file, pol->sha256);
                fprintf(f, "%-24s %s@%s (%s)\n", "profile", p->id, p->version, p->source_file);
        }

        s = sbx_mode_to_string(c->mode);
        O_VALUE(&o, "mode", c->mode_source, (json ? put_str(f, s) : (void) fputs(s, f)));
        if (json) {
                o_key(&o, "strict_required");
                fprintf(f, "{\"value\": %s, \"reason\": ", bool_str(c->strict_required));
                put_str(f, c->strict_reason);
                fputc('}', f);
        } else if (c->strict_required)
                fprintf(f, "%-24s yes: %s\n", "strict_required", c->strict_reason);
        O_VALUE(&o, "backend", c->backend_source,
                (json ? put_str(f, sbx_backend_to_string(c->backend))
                      : (void) fputs(sbx_backend_to_string(c->backend), f)));
        if (json) {
                o_key(&o, "backend_order");
                fprintf(f, "{\"value\": [");
        } else
                fprintf(f, "%-24s ", "backend_order");
        for (size_t i = 0; i < pol->n_mode_backends[c->mode]; i++)
                fprintf(f, json ? "%s\"%s\"" : "%s%s", i ? ", " : "",
                        sbx_backend_to_string(pol->mode_backends[c->mode][i]));
        if (json)
                fprintf(f, "], \"source\": \"%s\"}",
                        streq(pol->source_file, "builtin") ? "builtin" : "policy");
        else {
                char b[320];
                fprintf(f, "    [%s]\n",
                        source_text(&o,
                                streq(pol->source_file, "builtin") ? SBX_SRC_BUILTIN : SBX_SRC_POLICY, b,
                                sizeof b));
        }

        o_open(&o, "limits");
        for (int l = 0; l < _SBX_LIMIT_MAX; l++) {
                const char *name = sbx_limit_to_string((sbx_limit_id) l);
                if (json) {
                        o_key(&o, name);
                        fputs("{\"value\": ", f);
                        put_num(f, c->limits.value[l]);
                        fputs(", \"ceiling\": ", f);
                        put_num(f, pol->mode_limits[c->mode].value[l]);
                        fprintf(f, ", \"best_effort\": %s, \"source\": \"%s\"}",
                                bool_str(pol->best_effort[l]), sbx_source_to_string(c->limits.source[l]));
                } else
                        O_VALUE(&o, name, c->limits.source[l],
                                (put_num(f, c->limits.value[l]), fputs(" (ceiling ", f),
                                        put_num(f, pol->mode_limits[c->mode].value[l]),
                                        fputs(pol->best_effort[l] ? ", best effort)" : ")", f)));
        }
        o_close(&o);

        o_open(&o, "isolation");
        O_VALUE(&o, "level", fsrc(c, SBX_F_LEVEL),
                (json ? put_str(f, sbx_level_to_string(p->level))
                      : (void) fputs(sbx_level_to_string(p->level), f)));
        o_close(&o);

        o_open(&o, "network");
        O_VALUE(&o, "default", fsrc(c, SBX_F_NET_DEFAULT),
                (json ? put_str(f, p->net_allow ? "allow" : "deny")
                      : (void) fputs(p->net_allow ? "allow" : "deny", f)));
        O_VALUE(&o, "egress", fsrc(c, SBX_F_NET_EGRESS), put_strv(f, p->egress));
        if (p->egress_deny && p->egress_deny[0])
                O_VALUE(&o, "egress_deny", fsrc(c, SBX_F_NET_EGRESS), put_strv(f, p->egress_deny));
        O_VALUE(&o, "loopback", fsrc(c, SBX_F_NET_LOOPBACK), fputs(bool_str(p->loopback), f));
        O_VALUE(&o, "services", fsrc(c, SBX_F_NET_SERVICES), put_services(f, json, p->net_services));
        o_close(&o);

        o_open(&o, "workspace");
        O_VALUE(&o, "path", c->workspace_source, put_str(f, c->workspace));
        O_VALUE(&o, "mount", fsrc(c, SBX_F_WS_MOUNT), put_str(f, p->ws_mount));
        s = sbx_access_to_string(p->ws_access);
        O_VALUE(&o, "access", fsrc(c, SBX_F_WS_ACCESS), (json ? put_str(f, s) : (void) fputs(s, f)));
        o_close(&o);

        o_open(&o, "filesystem");
        O_VALUE(&o, "read", fsrc(c, SBX_F_FS_READ), put_strv(f, p->fs_read));
        O_VALUE(&o, "write", fsrc(c, SBX_F_FS_WRITE), put_strv(f, p->fs_write));
        O_VALUE(&o, "exec", fsrc(c, SBX_F_FS_EXEC),
                (p->fs_exec_set ? put_strv(f, p->fs_exec) : (void) fputs("null", f)));
        O_VALUE(&o, "home", fsrc(c, SBX_F_FS_HOME), put_str(f, p->fs_home));
        o_close(&o);
        O_VALUE(&o, "user", fsrc(c, SBX_F_USER), put_str(f, p->user));

        o_open(&o, "process");
        O_VALUE(&o, "allow_spawn", fsrc(c, SBX_F_ALLOW_SPAWN), fputs(bool_str(p->allow_spawn), f));
        O_VALUE(&o, "allow_exec", fsrc(c, SBX_F_ALLOW_EXEC), fputs(bool_str(p->allow_exec), f));
        O_VALUE(&o, "long_lived", fsrc(c, SBX_F_LONG_LIVED), fputs(bool_str(p->long_lived), f));
        O_VALUE(&o, "commands", fsrc(c, SBX_F_COMMANDS),
                (fprintf(f, "{\"mode\": \"%s\", \"allow\": ", sbx_cmd_mode_to_string(p->cmd_mode)),
                        put_strv(f, p->cmd_allow), fputs(", \"deny\": ", f), put_strv(f, p->cmd_deny),
                        fputc('}', f)));
        o_close(&o);

        s = sbx_on_violation_to_string(p->on_violation);
        O_VALUE(&o, "on_violation", fsrc(c, SBX_F_ON_VIOLATION),
                (json ? put_str(f, s) : (void) fputs(s, f)));
        s = sbx_observe_to_string(p->observe);
        O_VALUE(&o, "observe", fsrc(c, SBX_F_OBSERVE),
                (fputs("{\"mode\": ", f), put_str(f, s),
                        fprintf(f, ", \"fs_writes\": %s}", bool_str(p->observe_fs_writes))));
        O_VALUE(&o, "high_risk", fsrc(c, SBX_F_HIGH_RISK), fputs(bool_str(p->high_risk), f));
        O_VALUE(&o, "cwd", c->cwd_source, put_str(f, c->cwd));

        o_open(&o, "env");
        for (size_t i = 0; i < c->n_env; i++)
                O_VALUE(&o, c->env[i].name, c->env_source ? c->env_source[i] : SBX_SRC_PROFILE,
                        put_str(f, c->env[i].value));
        o_close(&o);

        O_VALUE(&o, "secrets", fsrc(c, SBX_F_SECRETS), put_strv(f, p->secrets));
        O_VALUE(&o, "ttl", fsrc(c, SBX_F_TTL),
                (fputs("{\"default\": ", f), put_num(f, p->ttl_default_s), fputs(", \"max\": ", f),
                        put_num(f, p->ttl_max_s), fputs(", \"idle\": ", f),
                        (p->ttl_idle_s > 0 ? put_num(f, p->ttl_idle_s) : (void) fputs("null", f)),
                        (p->ttl_paused_s > 0 ? (fputs(", \"paused\": ", f), put_num(f, p->ttl_paused_s))
                                             : (void) 0),
                        fputc('}', f)));
        if (json)
                fputs("}\n", f);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
