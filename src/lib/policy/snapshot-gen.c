/* snapshot-gen.c — writes builtin-snapshot.h: the built-in profiles and the default policy as
 * they parse, as C code that fills the structures directly.
 *
 * Parsing YAML is the slow part of resolving a configuration: libyaml takes ~70 µs for the
 * 1.1 KB default policy on the development VM, and a `sandboxer run --profile profile.python`
 * parsed three documents (policy, profile.python, profile.default) before anything else, 0.26 ms
 * of every run. The built-ins are fixed at build time, so the build parses them once, with the
 * same parser (this program is linked against src/lib/policy compiled with SBX_SNAPSHOT_GEN,
 * which leaves the snapshot out), and the library fills the structures from the result.
 * Files found on the search path or at /etc/sandboxer/policy.yaml are still parsed at run time.
 *
 * Every field is written out by name below; tests/unit/test-policy.c checks, for every built-in,
 * that the snapshot equals what sbx_profile_parse()/sbx_policy_parse() make of the text — byte
 * for byte outside the pointer fields, so a field added to the structures but not here fails
 * that test. Floating-point values are written as hexadecimal literals (%a), exact.
 *
 * usage: snapshot-gen OUTPUT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy-internal.h"

static void put_str(FILE *f, const char *s) {
        if (!s) {
                fputs("NULL", f);
                return;
        }
        fputc('"', f);
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (*c == '"' || *c == '\\' || *c == '?')
                        fprintf(f, "\\%c", *c);
                else if (*c < 0x20 || *c >= 0x7f)
                        fprintf(f, "\\%03o", *c);
                else
                        fputc(*c, f);
        fputc('"', f);
}

static void put_double(FILE *f, double v) {
        if (isnan(v))
                fputs("NAN", f);
        else if (isinf(v))
                fputs(v < 0 ? "-INFINITY" : "INFINITY", f);
        else
                fprintf(f, "%a", v);
}

static void field_str(FILE *f, const char *field, const char *v) {
        if (!v)
                return; /* calloc'ed: NULL already */
        fprintf(f, "        SNAP(snap_str(&p->%s, ", field);
        put_str(f, v);
        fputs("));\n", f);
}

/* NULL stays NULL; an empty list is an empty vector (the two differ, e.g. filesystem.exec). */
static void field_strv(FILE *f, const char *field, char *const *v) {
        if (!v)
                return;
        fprintf(f, "        {\n                static const char *const v[] = {");
        for (char *const *i = v; *i; i++) {
                put_str(f, *i);
                fputs(", ", f);
        }
        fprintf(f, "NULL};\n                SNAP(snap_strv(&p->%s, v));\n        }\n", field);
}

static void field_limits(FILE *f, const char *field, const sbx_limits *l) {
        for (int i = 0; i < _SBX_LIMIT_MAX; i++) {
                if (l->value[i] != 0 || signbit(l->value[i])) {
                        fprintf(f, "        p->%s.value[%d] = ", field, i);
                        put_double(f, l->value[i]);
                        fputs(";\n", f);
                }
                if (l->set[i])
                        fprintf(f, "        p->%s.set[%d] = true;\n", field, i);
                if (l->source[i])
                        fprintf(f, "        p->%s.source[%d] = (sbx_source) %d;\n", field, i,
                                (int) l->source[i]);
        }
}

#define SCALAR(f, p, field, fmt, cast)                                                                      \
        do {                                                                                                \
                if ((p)->field)                                                                             \
                        fprintf(f, "        p->" #field " = " fmt ";\n", (cast) (p)->field);                \
        } while (0)
#define DOUBLE(f, p, field)                                                                                 \
        do {                                                                                                \
                if ((p)->field != 0) {                                                                      \
                        fputs("        p->" #field " = ", f);                                               \
                        put_double(f, (p)->field);                                                          \
                        fputs(";\n", f);                                                                    \
                }                                                                                           \
        } while (0)

static void put_profile(FILE *f, const char *fn, const sbx_profile *p) {
        fprintf(f, "static int %s(sbx_profile *p) {\n", fn);
        field_str(f, "id", p->id);
        field_str(f, "version", p->version);
        field_str(f, "extends", p->extends);
        field_str(f, "source_file", p->source_file);
        SCALAR(f, p, level, "(sbx_level) %d", int);
        SCALAR(f, p, mode, "(sbx_mode) %d", int);
        SCALAR(f, p, backend, "(sbx_backend_id) %d", int);
        SCALAR(f, p, net_allow, "%d", int);
        field_strv(f, "egress", p->egress);
        field_strv(f, "egress_deny", p->egress_deny);
        field_strv(f, "net_services", p->net_services);
        SCALAR(f, p, loopback, "%d", int);
        field_str(f, "ws_path", p->ws_path);
        field_str(f, "ws_mount", p->ws_mount);
        SCALAR(f, p, ws_access, "(sbx_access) %d", int);
        field_strv(f, "fs_read", p->fs_read);
        field_strv(f, "fs_write", p->fs_write);
        field_strv(f, "fs_exec", p->fs_exec);
        SCALAR(f, p, fs_exec_set, "%d", int);
        SCALAR(f, p, allow_spawn, "%d", int);
        SCALAR(f, p, allow_exec, "%d", int);
        SCALAR(f, p, long_lived, "%d", int);
        SCALAR(f, p, cmd_mode, "(sbx_cmd_mode) %d", int);
        field_strv(f, "cmd_allow", p->cmd_allow);
        field_strv(f, "cmd_deny", p->cmd_deny);
        field_limits(f, "limits", &p->limits);
        SCALAR(f, p, on_violation, "(sbx_on_violation) %d", int);
        for (size_t i = 0; i < p->n_env; i++) {
                fputs("        SNAP(snap_env(p, ", f);
                put_str(f, p->env[i].name);
                fputs(", ", f);
                put_str(f, p->env[i].value);
                fputs("));\n", f);
        }
        field_strv(f, "secrets", p->secrets);
        DOUBLE(f, p, ttl_default_s);
        DOUBLE(f, p, ttl_max_s);
        DOUBLE(f, p, ttl_idle_s);
        DOUBLE(f, p, ttl_paused_s);
        field_strv(f, "placement_prefer", p->placement_prefer);
        field_strv(f, "placement_fallback", p->placement_fallback);
        field_str(f, "route_strategy", p->route_strategy);
        field_strv(f, "route_fallback", p->route_fallback);
        field_str(f, "cost_class", p->cost_class);
        field_str(f, "latency_class", p->latency_class);
        SCALAR(f, p, observe, "(sbx_observe) %d", int);
        SCALAR(f, p, observe_fs_writes, "%d", int);
        SCALAR(f, p, high_risk, "%d", int);
        field_str(f, "cwd", p->cwd);
        field_str(f, "fs_home", p->fs_home);
        field_str(f, "user", p->user);
        field_strv(f, "route_constraints", p->route_constraints);
        for (int i = 0; i < _SBX_F_MAX; i++)
                if (p->field_set[i])
                        fprintf(f, "        p->field_set[%d] = true;\n", i);
        SCALAR(f, p, leaf_set_, "UINT64_C(0x%llx)", unsigned long long);
        SCALAR(f, p, extends_line_, "%uu", unsigned);
        SCALAR(f, p, extends_column_, "%uu", unsigned);
        fputs("        return 0;\n}\n\n", f);
}

static void put_policy(FILE *f, const sbx_policy *p) {
        fputs("static int snap_policy_fill(sbx_policy *p) {\n", f);
        field_str(f, "source_file", p->source_file);
        fputs("        memcpy(p->sha256, ", f);
        put_str(f, p->sha256);
        fputs(", sizeof p->sha256);\n", f);
        SCALAR(f, p, version, "%d", int);
        for (int m = 0; m < _SBX_MODE_MAX; m++) {
                char name[64];
                snprintf(name, sizeof name, "mode_limits[%d]", m);
                field_limits(f, name, &p->mode_limits[m]);
                for (int b = 0; b < _SBX_BACKEND_MAX; b++)
                        if (p->mode_backends[m][b])
                                fprintf(f, "        p->mode_backends[%d][%d] = (sbx_backend_id) %d;\n", m, b,
                                        (int) p->mode_backends[m][b]);
                if (p->n_mode_backends[m])
                        fprintf(f, "        p->n_mode_backends[%d] = %zu;\n", m, p->n_mode_backends[m]);
        }
        SCALAR(f, p, overrides_per_request, "%d", int);
        for (int l = 0; l < _SBX_LIMIT_MAX; l++) {
                if (p->override_allowed[l])
                        fprintf(f, "        p->override_allowed[%d] = true;\n", l);
                if (p->best_effort[l])
                        fprintf(f, "        p->best_effort[%d] = true;\n", l);
        }
        SCALAR(f, p, run_as, "%uu", unsigned);
        SCALAR(f, p, strict_when_high_risk, "%d", int);
        SCALAR(f, p, strict_when_network_egress, "%d", int);
        SCALAR(f, p, strict_when_workspace_rw, "%d", int);
        SCALAR(f, p, strict_allow_emulation, "%d", int);
        field_str(f, "strict_kernel", p->strict_kernel);
        field_strv(f, "write_allowed", p->write_allowed);
        field_strv(f, "egress_allowed", p->egress_allowed);
        field_strv(f, "net_hosts", p->net_hosts);
        field_strv(f, "services_allowed", p->services_allowed);
        SCALAR(f, p, allow_host_network, "%d", int);
        SCALAR(f, p, long_lived_allowed, "%d", int);
        field_strv(f, "skill_keys", p->skill_keys);
        SCALAR(f, p, skill_unsigned_ok, "%d", int);
        SCALAR(f, p, billing_enforce, "%d", int);
        fprintf(f, "        memcpy(p->billing_currency, \"%s\", %zu);\n", p->billing_currency,
                strlen(p->billing_currency) + 1);
        SCALAR(f, p, billing_hold_s, "%.17g", double);
        SCALAR(f, p, billing_grace_s, "%.17g", double);
        fputs("        return 0;\n}\n\n", f);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: snapshot-gen OUTPUT\n");
                return 2;
        }
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp", argv[1]) < 0)
                return 1;
        FILE *f = fopen(tmp, "we");
        if (!f) {
                fprintf(stderr, "snapshot-gen: %s: %s\n", tmp, strerror(errno));
                return 1;
        }
        fputs("/* builtin-snapshot.h — generated by src/lib/policy/snapshot-gen.c from the built-in "
              "profiles\n"
              " * and policy, at build time: do not edit. Included by builtin.c. */\n\n",
                f);

        const char *const *ids = sbx_builtin_profile_ids();
        size_t n = 0;
        for (; ids[n]; n++) {
                size_t len;
                const char *text = builtin_profile_text_len(ids[n], &len);
                char key[128], fn[64];
                snprintf(key, sizeof key, "builtin:%s", ids[n]);
                sbx_error e = {0};
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                if (sbx_profile_parse(text, len, key, &p, &e) < 0) {
                        fprintf(stderr, "snapshot-gen: %s: %s\n", key, e.message);
                        return 1;
                }
                snprintf(fn, sizeof fn, "snap_profile_%zu", n);
                put_profile(f, fn, p);
        }
        fputs("static const struct {\n        const char *id;\n        int (*fill)(sbx_profile *p);\n} "
              "snap_profiles[] = {\n",
                f);
        for (size_t i = 0; i < n; i++) {
                fputs("        {", f);
                put_str(f, ids[i]);
                fprintf(f, ", snap_profile_%zu},\n", i);
        }
        fputs("};\n\n", f);

        sbx_error e = {0};
        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        size_t len;
        const char *text = builtin_policy_text_len(&len);
        if (sbx_policy_parse(text, len, "builtin", &pol, &e) < 0) {
                fprintf(stderr, "snapshot-gen: builtin policy: %s\n", e.message);
                return 1;
        }
        put_policy(f, pol);
        if (fflush(f) != 0 || ferror(f) || fclose(f) != 0 || rename(tmp, argv[1]) < 0) {
                fprintf(stderr, "snapshot-gen: writing %s: %s\n", argv[1], strerror(errno));
                (void) unlink(tmp);
                return 1;
        }
        return 0;
}
