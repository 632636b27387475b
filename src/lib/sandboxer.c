/* sandboxer.c — the public API (include/sandboxer/sandboxer.h): one-shot runs. Resolves the
 * configuration, picks a backend, runs, and always produces the report. */
#include "sandboxer/sandboxer.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "backend/backend.h"
#if HAVE_LINUX
#include "backend/persist.h"
#endif
#include "basic/macro.h"
#include "basic/debug.h"
#include "basic/strv.h"
#include "policy/policy.h"
#include "report/report.h"
#include "basic/time-util.h"

struct sbx_run {
        char *profile, *policy_file, *workspace, *cwd;
        char **env;
        char **argv;
        sbx_backend_id backend;
        bool has_backend;
        sbx_mode mode;
        bool has_mode;
        bool bad_backend, bad_mode;
        char *bad_value;
        double limit[_SBX_LIMIT_MAX];
        bool has_limit[_SBX_LIMIT_MAX];
        char *bad_limit;
        char *failure;
        int in_fd, out_fd, err_fd;
        bool tty, handle_signals, keep_leftovers;
        char *report_json; /* made from last_rep when first asked for */
        sbx_report *last_rep; /* the last run's report, and the configuration it points to */
        sbx_config *last_cfg;
        char *error;
        sbx_secret *secrets;
        size_t n_secrets;
        sbx_volume *volumes;
        size_t n_volumes;
        char *resolved; /* sbx_run_set_resolved_config() */
        size_t resolved_len;
        char skill_name[65], skill_version[65], skill_digest[65], skill_key_id[17];
};

_public_ bool sbx_platform_sandboxes(void) {
        return HAVE_LINUX;
}

_public_ const char *sbx_version(void) {
        return SBX_VERSION;
}

_public_ sbx_run *sbx_run_new(void) {
        sbx_run *r = calloc(1, sizeof *r);
        if (!r)
                return NULL;
        r->in_fd = 0, r->out_fd = 1, r->err_fd = 2;
        r->handle_signals = true;
        return r;
}

_public_ sbx_run *sbx_run_free(sbx_run *r) {
        if (!r)
                return NULL;
        free(r->profile);
        free(r->policy_file);
        free(r->workspace);
        free(r->cwd);
        strv_free(r->env);
        strv_free(r->argv);
        free(r->bad_value);
        free(r->bad_limit);
        free(r->failure);
        free(r->report_json);
        sbx_report_free(r->last_rep);
        sbx_config_free(r->last_cfg);
        free(r->error);
        for (size_t i = 0; i < r->n_secrets; i++) {
                free(r->secrets[i].name);
                explicit_bzero(r->secrets[i].value, r->secrets[i].len);
                free(r->secrets[i].value);
        }
        free(r->secrets);
        for (size_t i = 0; i < r->n_volumes; i++) {
                free(r->volumes[i].host);
                free(r->volumes[i].target);
        }
        free(r->volumes);
        free(r->resolved);
        free(r);
        return NULL;
}

static int set_str(char **dst, const char *v) {
        char *c = NULL;
        if (v && !(c = strdup(v)))
                return -ENOMEM;
        free(*dst);
        *dst = c;
        return 0;
}

_public_ int sbx_run_set_profile(sbx_run *r, const char *v) {
        return set_str(&r->profile, v);
}
_public_ int sbx_run_set_policy_file(sbx_run *r, const char *v) {
        return set_str(&r->policy_file, v);
}
_public_ int sbx_run_set_resolved_config(sbx_run *r, const void *data, size_t len) {
        char *c = NULL;
        if (data && !(c = malloc(len ? len : 1)))
                return -ENOMEM;
        if (c)
                memcpy(c, data, len);
        free(r->resolved);
        r->resolved = c;
        r->resolved_len = c ? len : 0;
        return 0;
}
_public_ int sbx_run_set_workspace(sbx_run *r, const char *v) {
        return set_str(&r->workspace, v);
}
_public_ int sbx_run_set_cwd(sbx_run *r, const char *v) {
        return set_str(&r->cwd, v);
}
_public_ int sbx_run_add_env(sbx_run *r, const char *nv) {
        if (!nv)
                return -EINVAL;
        return strv_extend(&r->env, nv);
}
_public_ int sbx_run_set_backend(sbx_run *r, const char *v) {
        sbx_backend_id b = sbx_backend_from_string(v);
        if (b < 0) {
                (void) set_str(&r->bad_value, v);
                r->bad_backend = true;
                return -EINVAL;
        }
        r->backend = b;
        r->has_backend = true;
        return 0;
}
_public_ int sbx_run_set_mode(sbx_run *r, const char *v) {
        sbx_mode m = sbx_mode_from_string(v);
        if (m < 0) {
                (void) set_str(&r->bad_value, v);
                r->bad_mode = true;
                return -EINVAL;
        }
        r->mode = m;
        r->has_mode = true;
        return 0;
}
_public_ int sbx_run_set_limit(sbx_run *r, const char *key, double value) {
        sbx_limit_id l = sbx_limit_from_string(key);
        if (l < 0 || !isfinite(value) || value <= 0) {
                (void) set_str(&r->bad_limit, key);
                return -EINVAL;
        }
        r->limit[l] = value;
        r->has_limit[l] = true;
        return 0;
}
_public_ int sbx_run_set_command(sbx_run *r, char *const argv[]) {
        if (!argv || !argv[0] || !argv[0][0])
                return -EINVAL;
        char **c = strv_copy(argv);
        if (!c)
                return -ENOMEM;
        strv_free(r->argv);
        r->argv = c;
        return 0;
}
_public_ int sbx_run_set_stdio(sbx_run *r, int in_fd, int out_fd, int err_fd) {
        r->in_fd = in_fd, r->out_fd = out_fd, r->err_fd = err_fd;
        return 0;
}
_public_ int sbx_run_set_tty(sbx_run *r, bool tty) {
        r->tty = tty;
        return 0;
}
_public_ int sbx_run_set_handle_signals(sbx_run *r, bool on) {
        r->handle_signals = on;
        return 0;
}
_public_ int sbx_run_set_sweep_leftovers(sbx_run *r, bool on) {
        r->keep_leftovers = !on;
        return 0;
}
_public_ const char *sbx_run_report_json(sbx_run *r) {
        if (!r->report_json && r->last_rep)
                (void) sbx_report_to_json(r->last_rep, true, &r->report_json);
        return r->report_json;
}
_public_ const char *sbx_run_error(sbx_run *r) {
        return r->error;
}

static void set_error(sbx_run *r, const sbx_error *e) {
        char buf[1200];
        free(r->error);
        r->error = strdup(sbx_error_format(e, buf, sizeof buf));
}

_public_ int sbx_run_add_secret(sbx_run *r, const char *name, const void *value, size_t len) {
        if (!name || !*name || strchr(name, '/') || streq(name, ".") || streq(name, "..") ||
                strlen(name) > 128 || (!value && len))
                return -EINVAL;
        sbx_secret *n = realloc(r->secrets, (r->n_secrets + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        r->secrets = n;
        sbx_secret *s = &r->secrets[r->n_secrets];
        s->name = strdup(name);
        s->value = malloc(len + 1);
        if (!s->name || !s->value) {
                free(s->name);
                free(s->value);
                return -ENOMEM;
        }
        if (len)
                memcpy(s->value, value, len);
        s->value[len] = 0;
        s->len = len;
        r->n_secrets++;
        return 0;
}

_public_ int sbx_run_add_volume(sbx_run *r, const char *host, const char *target, bool rw) {
        if (!host || host[0] != '/' || !target || target[0] != '/' || streq(target, "/") ||
                strstr(target, "/..") || strstr(target, "/./") || strlen(target) > 256 ||
                strncmp(target, "/proc", 5) == 0 || strncmp(target, "/dev", 4) == 0 ||
                strncmp(target, "/sys", 4) == 0 || r->n_volumes >= 16)
                return -EINVAL;
        sbx_volume *n = realloc(r->volumes, (r->n_volumes + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        r->volumes = n;
        sbx_volume *v = &r->volumes[r->n_volumes];
        *v = (sbx_volume){.host = strdup(host), .target = strdup(target), .rw = rw};
        if (!v->host || !v->target) {
                free(v->host);
                free(v->target);
                return -ENOMEM;
        }
        r->n_volumes++;
        return 0;
}

/* Every secret the profile names must be given (fail closed), and only the native backend can
 * deliver them (a tmpfs at /run/secrets in its own mount namespace). */
static int check_secrets(sbx_run *r, const sbx_config *cfg, const sbx_backend *b, sbx_error *e) {
        STRV_FOREACH(name, cfg->profile->secrets) {
                bool have = false;
                for (size_t i = 0; i < r->n_secrets && !have; i++)
                        have = streq(r->secrets[i].name, *name);
                if (!have)
                        return sbx_error_set(e, ENOKEY, "secrets",
                                "the profile needs the secret '%s', which was not given; secrets are "
                                "resolved by "
                                "the control plane ('sandboxer serve --secrets-dir DIR', a file DIR/%s)",
                                *name, *name);
        }
        if (r->n_volumes > 0 && b && b->id != SBX_BACKEND_NATIVE)
                return sbx_error_set(e, EOPNOTSUPP, "volumes",
                        "volumes are bound into the sandbox's own mount namespace, which needs the native "
                        "backend; %s cannot: choose native in the profile or the policy",
                        sbx_backend_to_string(b->id));
        if (r->n_secrets > 0 && b && b->id != SBX_BACKEND_NATIVE)
                return sbx_error_set(e, EOPNOTSUPP, "secrets",
                        "secrets are delivered as files on a tmpfs at /run/secrets, which needs the native "
                        "backend (a mount namespace); %s cannot: choose native in the profile or the policy",
                        sbx_backend_to_string(b->id));
        return 0;
}

_public_ int sbx_run_set_failure(sbx_run *r, const char *message) {
        return set_str(&r->failure, message ? message : "failed");
}

_public_ int sbx_run_set_skill(
        sbx_run *r, const char *name, const char *version, const char *digest, const char *key_id) {
        if (!name || !*name || !version || !digest)
                return -EINVAL;
        snprintf(r->skill_name, sizeof r->skill_name, "%s", name);
        snprintf(r->skill_version, sizeof r->skill_version, "%s", version);
        snprintf(r->skill_digest, sizeof r->skill_digest, "%s", digest);
        snprintf(r->skill_key_id, sizeof r->skill_key_id, "%s", key_id ? key_id : "");
        return 0;
}

static int resolve(sbx_run *r, sbx_config **ret, sbx_error *e) {
        if (r->failure)
                return sbx_error_set(e, EINVAL, "arguments", "%s", r->failure);
        if (r->bad_backend)
                return sbx_error_set(e, EINVAL, "arguments",
                        "unknown backend '%s' (expected auto, native, landlock, bwrap, firejail, podman, "
                        "docker or microvm)",
                        r->bad_value);
        if (r->bad_mode)
                return sbx_error_set(e, EINVAL, "arguments",
                        "unknown mode '%s' (expected balanced or strict)", r->bad_value);
        if (r->bad_limit)
                return sbx_error_set(e, EINVAL, "arguments", "bad limit '%s'", r->bad_limit);
        sbx_request req = {
                .profile = r->profile,
                .policy_file = r->policy_file,
                .resolved = r->resolved,
                .resolved_len = r->resolved_len,
                .backend = r->backend,
                .has_backend = r->has_backend,
                .mode = r->mode,
                .has_mode = r->has_mode,
                .workspace = r->workspace,
                .cwd = r->cwd,
                .env = r->env,
        };
        memcpy(req.limit, r->limit, sizeof req.limit);
        memcpy(req.has_limit, r->has_limit, sizeof req.has_limit);
        return sbx_config_resolve(&req, ret, e);
}

/* Strict mode: the backend list of modes.strict, or the named policy error. */
static int select_backend(const sbx_config *cfg, sbx_report *rep, const sbx_backend **ret, sbx_error *e) {
        _cleanup_free_ char *note = NULL;
        int r = sbx_backend_select(cfg, ret, &note, e);
        if (r < 0 && cfg->mode == SBX_MODE_STRICT) {
                bool required = cfg->strict_required && cfg->mode_source != SBX_SRC_FLAG &&
                                cfg->profile->mode != SBX_MODE_STRICT;
                sbx_violation_kind k = required ? SBX_VIOLATION_STRICT_MODE_REQUIRED
                                                : SBX_VIOLATION_STRICT_MODE_UNAVAILABLE;
                char msg[900];
                snprintf(msg, sizeof msg, "%s", e ? e->message : "");
                sbx_detail d[1] = {{.key = "reason",
                        .str = (char *) (required && cfg->strict_reason ? cfg->strict_reason : msg)}};
                (void) sbx_report_add_violation(rep, k, "refused", 0, NULL, d, 1);
                return sbx_error_set(e, r, "mode",
                        "%s: %s mode %s but no strict backend is available here (%s)",
                        sbx_violation_kind_to_string(k), required ? "the policy requires strict" : "strict",
                        required ? (cfg->strict_reason ? cfg->strict_reason : "") : "was requested", msg);
        }
        if (r >= 0) {
                free(rep->backend_reason);
                rep->backend_reason = TAKE_PTR(note);
        }
        return r;
}

static bool command_listed(char *const *list, const char *cmd) {
        const char *base = strrchr(cmd, '/');
        base = base ? base + 1 : cmd;
        STRV_FOREACH(i, list)
                if (strchr(*i, '/') ? streq(*i, cmd) : streq(*i, base))
                        return true;
        return false;
}

/* process.commands: the first token, before the sandbox starts. strict refuses (exit 125), warn
 * records a ProcessLimitViolation and goes on. Later execs are the supervisor's to see, and, in
 * strict mode, Landlock's to refuse. */
static int check_commands(const sbx_config *cfg, char *const *argv, sbx_report *rep, sbx_error *e) {
        const sbx_profile *pr = cfg->profile;
        if (pr->cmd_mode == SBX_CMD_MODE_OFF || !argv || !argv[0])
                return 0;
        const char *cmd = argv[0];
        bool denied = command_listed(pr->cmd_deny, cmd);
        bool allowed = !denied && (strv_length(pr->cmd_allow) == 0 || command_listed(pr->cmd_allow, cmd));
        if (allowed)
                return 0;
        bool strict = pr->cmd_mode == SBX_CMD_MODE_STRICT;
        sbx_detail d[2] = {{.key = "command", .str = (char *) cmd},
                {.key = "rule",
                        .str = (char *) (denied ? "process.commands.deny" : "process.commands.allow")}};
        (void) sbx_report_add_violation(
                rep, SBX_VIOLATION_PROCESS_LIMIT, strict ? "refused" : "warned", 0, NULL, d, 2);
        if (!strict)
                return 0;
        return sbx_error_set(e, EPERM, "commands",
                "'%s' is %s by the profile's process.commands (mode strict); run an allowed command, or "
                "change the profile",
                cmd, denied ? "denied" : "not allowed");
}

/* The run's report is kept (with the configuration it points to), and written as JSON only when
 * sbx_run_report_json() asks: `sandboxer run` without --report does not pay for it. */
static int finish(sbx_run *r, sbx_report **rep, sbx_config **cfg) {
        free(r->report_json);
        r->report_json = NULL;
        sbx_report_free(r->last_rep);
        sbx_config_free(r->last_cfg);
        r->last_rep = TAKE_PTR(*rep);
        r->last_cfg = TAKE_PTR(*cfg);
        return r->last_rep->cli_exit;
}

_public_ int sbx_run_execute(sbx_run *r) {
        _cleanup_(sbx_report_freep) sbx_report *rep = NULL;
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        sbx_error e = {0};
        const sbx_backend *b = NULL;
        uint64_t t0 = sbx_now_ns();
        sbx_debug_mark("execute");

        free(r->error);
        r->error = NULL;
        if (sbx_report_new(&rep) < 0) {
                r->error = strdup("out of memory");
                return 125;
        }
        memcpy(rep->skill_name, r->skill_name, sizeof rep->skill_name);
        memcpy(rep->skill_version, r->skill_version, sizeof rep->skill_version);
        memcpy(rep->skill_digest, r->skill_digest, sizeof rep->skill_digest);
        memcpy(rep->skill_key_id, r->skill_key_id, sizeof rep->skill_key_id);
        int ret = resolve(r, &cfg, &e);
        sbx_debug_mark("configuration resolved");
        if (ret >= 0) {
                rep->config = cfg;
                rep->mode = cfg->mode;
                if (!r->argv)
                        ret = sbx_error_set(&e, EINVAL, "arguments", "no command given");
        }
        if (ret >= 0)
                ret = check_commands(cfg, r->argv, rep, &e);
#if !HAVE_LINUX
        /* No sandbox on this platform: refuse, unless explicitly told to run unsandboxed. */
        if (ret >= 0) {
                const char *allow = getenv("SANDBOXER_ALLOW_UNSANDBOXED");
                if (!allow || !streq(allow, "1"))
                        ret = sbx_error_set(&e, EOPNOTSUPP, "platform",
                                "this build of sandboxer cannot sandbox (no Linux namespaces, Landlock or "
                                "seccomp here); set SANDBOXER_ALLOW_UNSANDBOXED=1 to run the command "
                                "WITHOUT "
                                "a sandbox (the report then says backend: none)");
                else {
                        sbx_run_io io = {.in_fd = r->in_fd,
                                .out_fd = r->out_fd,
                                .err_fd = r->err_fd,
                                .handle_signals = r->handle_signals,
                                .tty = r->tty};
                        (void) b;
                        ret = sbx_backend_none_run(cfg, r->argv, &io, rep, &e);
                }
        }
        if (false) {
#else
        if (ret >= 0)
                ret = select_backend(cfg, rep, &b, &e);
        if (ret >= 0)
                ret = check_secrets(r, cfg, b, &e);
        if (ret >= 0) {
#endif
                sbx_run_io io = {.in_fd = r->in_fd,
                        .out_fd = r->out_fd,
                        .err_fd = r->err_fd,
                        .handle_signals = r->handle_signals,
                        .keep_leftovers = r->keep_leftovers,
                        .tty = r->tty,
                        .secrets = r->secrets,
                        .n_secrets = r->n_secrets,
                        .volumes = r->volumes,
                        .n_volumes = r->n_volumes};
                unsigned tried = 0;
                for (;;) {
                        ret = b->run(cfg, r->argv, &io, rep, &e);
                        /* auto: namespaces refused as inside a container → the next backend of
                         * the policy's list (e.g. landlock), the reason recorded. */
                        if (ret >= 0 || cfg->backend != SBX_BACKEND_AUTO ||
                                !sbx_backend_error_is_ns_refusal(&e))
                                break;
                        tried |= 1u << b->id;
                        char prior[1200];
                        snprintf(prior, sizeof prior, "%s skipped: %s", sbx_backend_to_string(b->id),
                                e.message);
                        _cleanup_free_ char *note = NULL;
                        const sbx_backend *next = NULL;
                        sbx_error e2 = {0};
                        if (sbx_backend_select_excluding(cfg, tried, prior, &next, &note, &e2) < 0)
                                break; /* nothing else: report the refusal itself */
                        sbx_report_reset_run(rep);
                        free(rep->backend_reason);
                        rep->backend_reason = TAKE_PTR(note);
                        b = next;
                        e = (sbx_error){0};
                }
        }
        if (ret < 0) {
                rep->status = SBX_STATUS_SETUP_ERROR;
                rep->cli_exit = 125;
                rep->has_exit_code = false;
                set_error(r, &e);
                (void) sbx_report_set_error(rep, "%s", r->error ? r->error : "setup error");
                if (rep->setup_ms == 0)
                        rep->setup_ms = (int64_t) ((sbx_now_ns() - t0) / 1000000);
        } else if (rep->error)
                r->error = strdup(rep->error);
        if (rep->wall_ms == 0)
                rep->wall_ms = (int64_t) ((sbx_now_ns() - t0) / 1000000);
        sbx_debug_mark("report written");
        return finish(r, &rep, &cfg);
}

#if HAVE_LINUX
_public_ int sbx_run_serve(sbx_run *r, const sbx_serve_hooks *hooks) {
        _cleanup_(sbx_report_freep) sbx_report *rep = NULL;
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        sbx_error e = {0};
        const sbx_backend *b = NULL;
        uint64_t t0 = sbx_now_ns();

        free(r->error);
        r->error = NULL;
        if (sbx_report_new(&rep) < 0) {
                r->error = strdup("out of memory");
                return 125;
        }
        sbx_debug_mark("serve");
        sbx_sandbox *sb = sbx_sandbox_new_internal(hooks);
        int ret = sb ? resolve(r, &cfg, &e) : sbx_error_set(&e, ENOMEM, "persist", "out of memory");
        sbx_debug_mark("configuration resolved");
        if (ret >= 0) {
                rep->config = cfg;
                rep->mode = cfg->mode;
                ret = select_backend(cfg, rep, &b, &e);
        }
        if (ret >= 0)
                ret = check_secrets(r, cfg, b, &e);
        if (ret >= 0 && !b->start)
                ret = sbx_error_set(&e, EOPNOTSUPP, "backend",
                        "persistent sandboxes are not held by the %s backend (%s); choose another in the "
                        "profile or policy",
                        sbx_backend_to_string(b->id), b->persist_why ? b->persist_why : "not implemented");
        if (ret >= 0) {
                int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                sbx_run_io io = {.in_fd = null_fd,
                        .out_fd = -1,
                        .err_fd = -1,
                        .handle_signals = r->handle_signals,
                        .keep_leftovers = r->keep_leftovers,
                        .persist = sb,
                        .secrets = r->secrets,
                        .n_secrets = r->n_secrets,
                        .volumes = r->volumes,
                        .n_volumes = r->n_volumes};
                ret = null_fd < 0 ? sbx_error_set(&e, errno, "persist", "open /dev/null: %m")
                                  : b->start(cfg, &io, rep, &e);
                safe_close(null_fd);
        }
        if (ret < 0) {
                rep->status = SBX_STATUS_SETUP_ERROR;
                rep->cli_exit = 125;
                rep->has_exit_code = false;
                set_error(r, &e);
                (void) sbx_report_set_error(rep, "%s", r->error ? r->error : "setup error");
        }
        if (rep->wall_ms == 0)
                rep->wall_ms = (int64_t) ((sbx_now_ns() - t0) / 1000000);
        sbx_sandbox_free_internal(sb);
        return finish(r, &rep, &cfg);
}
#else
_public_ int sbx_run_serve(sbx_run *r, const sbx_serve_hooks *hooks) {
        free(r->error);
        r->error = strdup("this build of sandboxer cannot sandbox: no persistent sandboxes");
        return 125;
}
#endif

_public_ int sbx_run_dry_run(sbx_run *r, FILE *f, bool json) {
        _cleanup_(sbx_config_freep) sbx_config *cfg = NULL;
        _cleanup_(sbx_report_freep) sbx_report *rep = NULL;
        sbx_error e = {0};
        const sbx_backend *b = NULL;
        int ret = resolve(r, &cfg, &e);
        if (ret >= 0)
                ret = sbx_report_new(&rep);
        if (ret >= 0)
                ret = select_backend(cfg, rep, &b, &e);
        if (ret < 0) {
                set_error(r, &e);
                return ret;
        }
        ret = sbx_config_describe(cfg, json, f);
        if (!json)
                fprintf(f, "backend: %s (%s)\n", sbx_backend_to_string(b->id),
                        rep->backend_reason ? rep->backend_reason : "");
        return ret;
}
