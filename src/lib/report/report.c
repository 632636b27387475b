/* report.c — building the report of one run/exec (violations merged and capped, mounts,
 * error) and serialising it as sandboxer.report/v1 JSON (docs/report.schema.json). */
#include "report/report.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/io.h"
#include "basic/host.h"
#include "basic/jsonw.h"

#define SBX_REPORT_SCHEMA "sandboxer.report/v1"

static int random_bytes(void *p, size_t n) {
        uint8_t *b = p;
        while (n > 0) {
                ssize_t k = getrandom(b, n, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != ENOSYS)
                                return negative_errno();
                        /* Kernels before 3.17: the device. */
                        _cleanup_close_ int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                        if (fd < 0)
                                return negative_errno();
                        while (n > 0) {
                                k = read(fd, b, n);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k <= 0)
                                        return k < 0 ? negative_errno() : -EIO;
                                b += k;
                                n -= (size_t) k;
                        }
                        return 0;
                }
                b += k;
                n -= (size_t) k;
        }
        return 0;
}

/* What a report says about the host — the kernel, Landlock's ABI, the cgroup layout — does not
 * change while a process lives: asked once (six system calls), not for every exec of a
 * persistent sandbox. */
static struct {
        char kernel[sizeof(((sbx_report *) NULL)->kernel)];
        int landlock_abi;
        const char *cgroup;
} host_facts;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static void host_facts_init(void) {
        if (sbx_host_kernel_release(host_facts.kernel, sizeof host_facts.kernel) < 0)
                host_facts.kernel[0] = 0;
        int abi = sbx_host_landlock_abi();
        host_facts.landlock_abi = abi < 0 ? -1 : abi;
        host_facts.cgroup = sbx_cgroup_layout_to_string(sbx_host_cgroup_layout());
}

int sbx_report_new(sbx_report **ret) {
        if (!ret)
                return -EINVAL;

        _cleanup_(sbx_report_freep) sbx_report *r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;

        uint8_t raw[12];
        int k = random_bytes(raw, sizeof raw);
        if (k < 0)
                return k;
        static const char hex[] = "0123456789abcdef";
        char *p = stpcpy(r->id, "run_");
        for (size_t i = 0; i < sizeof raw; i++) {
                *p++ = hex[raw[i] >> 4];
                *p++ = hex[raw[i] & 15];
        }
        *p = 0;

        r->status = SBX_STATUS_EXITED;
        r->mode = SBX_MODE_BALANCED;
        for (size_t i = 0; i < _SBX_LIMIT_MAX; i++)
                r->limit_mechanism[i] = SBX_MECH_NONE;

        (void) pthread_once(&host_once, host_facts_init);
        memcpy(r->kernel, host_facts.kernel, sizeof r->kernel);
        r->landlock_abi = host_facts.landlock_abi;
        r->cgroup = host_facts.cgroup;
        r->unprivileged = sbx_host_unprivileged();

        *ret = TAKE_PTR(r);
        return 0;
}

static void violation_clear(sbx_violation *v) {
        for (size_t i = 0; i < v->n_detail; i++)
                free(v->detail[i].str);
        *v = (sbx_violation){};
}

sbx_report *sbx_report_free(sbx_report *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_violations; i++)
                violation_clear(&r->violations[i]);
        for (size_t i = 0; i < r->n_mounts; i++) {
                free(r->mounts[i].source);
                free(r->mounts[i].target);
                free(r->mounts[i].kind);
        }
        free(r->mounts);
        for (size_t i = 0; i < r->n_fences; i++)
                free(r->fences[i].str);
        for (size_t i = 0; i < r->n_egress_conns; i++) {
                free(r->egress_conns[i].host);
                free(r->egress_conns[i].rule);
        }
        free(r->egress_conns);
        for (size_t i = 0; i < r->n_services; i++) {
                for (size_t k = 0; k < r->services[i].n_requests; k++) {
                        free(r->services[i].requests[k].method);
                        free(r->services[i].requests[k].path);
                }
                free(r->services[i].requests);
                free(r->services[i].name);
                free(r->services[i].target);
        }
        free(r->backend_reason);
        free(r->error);
        free(r);
        return NULL;
}

static bool detail_equal(const sbx_detail *a, const sbx_detail *b) {
        if (strncmp(a->key, b->key, sizeof a->key - 1) != 0)
                return false;
        if (a->str || b->str)
                return streq_ptr(a->str, b->str);
        return a->num == b->num;
}

static bool violation_matches(const sbx_violation *v, sbx_violation_kind kind, const char *action,
        const char *syscall, const sbx_detail *details, size_t n_details) {
        if (v->kind != kind || !streq(v->action, action) || v->n_detail != n_details)
                return false;
        if (strncmp(v->syscall, syscall, sizeof v->syscall - 1) != 0)
                return false;
        for (size_t i = 0; i < n_details; i++)
                if (!detail_equal(&v->detail[i], &details[i]))
                        return false;
        return true;
}

int sbx_report_add_violation(sbx_report *r, sbx_violation_kind kind, const char *action, int64_t at_ms,
        const char *syscall, const sbx_detail *details, size_t n_details) {
        if (!r || kind < 0 || kind >= _SBX_VIOLATION_MAX || (n_details > 0 && !details))
                return -EINVAL;
        if (n_details > SBX_VIOLATION_MAX_DETAILS)
                return -E2BIG;
        if (!action)
                action = "denied";
        if (!syscall)
                syscall = "";

        for (size_t i = 0; i < r->n_violations; i++) {
                sbx_violation *v = &r->violations[i];
                if (!violation_matches(v, kind, action, syscall, details, n_details))
                        continue;
                if (v->count < UINT64_MAX)
                        v->count++;
                v->first_at_ms = MIN(v->first_at_ms, at_ms);
                v->last_at_ms = MAX(v->last_at_ms, at_ms);
                return 0;
        }

        if (r->n_violations >= SBX_REPORT_MAX_VIOLATIONS) {
                if (r->violations_dropped < UINT64_MAX)
                        r->violations_dropped++;
                return 0;
        }

        sbx_violation v = {
                .kind = kind,
                .action = action,
                .first_at_ms = at_ms,
                .last_at_ms = at_ms,
                .count = 1,
        };
        snprintf(v.syscall, sizeof v.syscall, "%s", syscall);
        for (size_t i = 0; i < n_details; i++) {
                sbx_detail *d = &v.detail[v.n_detail];
                /* Keys are short fixed names; one that fills the array may lack its NUL. */
                size_t kl = strnlen(details[i].key, sizeof d->key - 1);
                memcpy(d->key, details[i].key, kl);
                d->key[kl] = 0;
                d->num = details[i].num;
                if (details[i].str) {
                        d->str = strdup(details[i].str);
                        if (!d->str) {
                                violation_clear(&v);
                                return -ENOMEM;
                        }
                }
                v.n_detail++;
        }
        r->violations[r->n_violations++] = v;
        return 1;
}

static int set_formatted(char **field, const char *fmt, va_list ap) {
        char *s = NULL;
        if (fmt && vasprintf(&s, fmt, ap) < 0)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

int sbx_report_set_error(sbx_report *r, const char *fmt, ...) {
        if (!r)
                return -EINVAL;
        va_list ap;
        va_start(ap, fmt);
        int k = set_formatted(&r->error, fmt, ap);
        va_end(ap);
        return k;
}

int sbx_report_set_backend_reason(sbx_report *r, const char *fmt, ...) {
        if (!r)
                return -EINVAL;
        va_list ap;
        va_start(ap, fmt);
        int k = set_formatted(&r->backend_reason, fmt, ap);
        va_end(ap);
        return k;
}

void sbx_report_merge_status(sbx_report *r, sbx_status s) {
        if (r)
                r->status = sbx_status_merge(r->status, s);
}

int sbx_report_add_mount(sbx_report *r, const char *source, const char *target, const char *kind) {
        if (!r || !source || !target || !kind)
                return -EINVAL;

        _cleanup_free_ char *s = strdup(source), *t = strdup(target), *k = strdup(kind);
        if (!s || !t || !k)
                return -ENOMEM;
        sbx_mount_info *m = reallocarray(r->mounts, r->n_mounts + 1, sizeof *m);
        if (!m)
                return -ENOMEM;
        r->mounts = m;
        m[r->n_mounts++] = (sbx_mount_info){
                .source = TAKE_PTR(s),
                .target = TAKE_PTR(t),
                .kind = TAKE_PTR(k),
        };
        return 0;
}

/* ---- serialisation ---------------------------------------------------------------------- */

static void write_strv(jsonw *w, char *const *l) {
        jsonw_begin_array(w);
        for (char *const *s = l; s && *s; s++)
                jsonw_string(w, *s);
        jsonw_end_array(w);
}

static void write_violation(jsonw *w, const sbx_violation *v) {
        jsonw_begin_object(w);
        jsonw_kv_string(w, "kind", sbx_violation_kind_to_string(v->kind));
        jsonw_kv_string(w, "action", v->action);
        jsonw_kv_int(w, "at_ms", v->first_at_ms);
        jsonw_kv_int(w, "first_at_ms", v->first_at_ms);
        jsonw_kv_int(w, "last_at_ms", v->last_at_ms);
        jsonw_kv_uint(w, "count", v->count);
        if (v->syscall[0])
                jsonw_kv_string(w, "syscall", v->syscall);
        jsonw_key(w, "detail");
        jsonw_begin_object(w);
        for (size_t i = 0; i < v->n_detail; i++) {
                const sbx_detail *d = &v->detail[i];
                char key[sizeof d->key + 1];
                snprintf(key, sizeof key, "%.*s", (int) sizeof d->key, d->key);
                if (d->str)
                        jsonw_kv_string(w, key, d->str);
                else
                        jsonw_kv_int(w, key, d->num);
        }
        jsonw_end_object(w);
        jsonw_end_object(w);
}

static void write_limits(jsonw *w, const sbx_report *r, const sbx_limits *l) {
        jsonw_begin_object(w);
        for (int i = 0; i < _SBX_LIMIT_MAX; i++) {
                const char *name = sbx_limit_to_string(i);
                if (!name)
                        continue;
                jsonw_key(w, name);
                jsonw_begin_object(w);
                if (l->set[i]) {
                        jsonw_kv_double(w, "value", l->value[i]);
                        jsonw_kv_string(w, "source", sbx_source_to_string(l->source[i]));
                } else {
                        jsonw_kv_null(w, "value");
                        jsonw_kv_null(w, "source");
                }
                jsonw_kv_string(w, "mechanism", sbx_mechanism_to_string(r->limit_mechanism[i]));
                jsonw_end_object(w);
        }
        jsonw_end_object(w);
}

static void write_config(jsonw *w, const sbx_report *r) {
        const sbx_config *c = r->config;
        const sbx_profile *p = c ? c->profile : NULL;
        const sbx_policy *pol = c ? c->policy : NULL;

        jsonw_begin_object(w);

        jsonw_key(w, "profile");
        if (p && p->id) {
                _cleanup_free_ char *s = NULL;
                if (asprintf(&s, "%s@%s", p->id, p->version ? p->version : "") < 0)
                        s = NULL;
                if (s)
                        jsonw_string(w, s);
                else
                        w->error = w->error ?: -ENOMEM;
        } else
                jsonw_null(w);

        jsonw_kv_string(w, "policy_sha256", pol && pol->sha256[0] ? pol->sha256 : NULL);
        jsonw_kv_string(w, "policy_file", pol ? pol->source_file : NULL);

        jsonw_key(w, "limits");
        if (c)
                write_limits(w, r, &c->limits);
        else
                jsonw_null(w);

        /* The mounts actually made: kept by the report itself, so present even when the
         * configuration never resolved (then empty). */
        jsonw_key(w, "mounts");
        jsonw_begin_array(w);
        for (size_t i = 0; i < r->n_mounts; i++) {
                jsonw_begin_object(w);
                jsonw_kv_string(w, "source", r->mounts[i].source);
                jsonw_kv_string(w, "target", r->mounts[i].target);
                jsonw_kv_string(w, "kind", r->mounts[i].kind);
                jsonw_end_object(w);
        }
        jsonw_end_array(w);

        jsonw_key(w, "fences");
        jsonw_begin_object(w);
        for (size_t i = 0; i < r->n_fences; i++)
                jsonw_kv_string(w, r->fences[i].key, r->fences[i].str);
        jsonw_end_object(w);

        if (r->microvm.accel) {
                jsonw_key(w, "microvm");
                jsonw_begin_object(w);
                jsonw_kv_string(w, "accel", r->microvm.accel);
                jsonw_kv_int(w, "vcpus", r->microvm.vcpus);
                jsonw_kv_int(w, "memory_mb", r->microvm.memory_mb);
                jsonw_kv_string(w, "guest_kernel", r->microvm.guest_kernel);
                jsonw_kv_int(w, "boot_ms", r->microvm.boot_ms);
                jsonw_end_object(w);
        }

        jsonw_key(w, "network");
        if (p) {
                jsonw_begin_object(w);
                jsonw_kv_string(w, "default", p->net_allow ? "allow" : "deny");
                jsonw_kv_bool(w, "loopback", p->loopback);
                jsonw_key(w, "egress");
                write_strv(w, p->egress);
                jsonw_end_object(w);
        } else
                jsonw_null(w);

        jsonw_key(w, "filesystem");
        if (p) {
                jsonw_begin_object(w);
                jsonw_key(w, "read");
                write_strv(w, p->fs_read);
                jsonw_key(w, "write");
                write_strv(w, p->fs_write);
                jsonw_key(w, "exec");
                if (p->fs_exec_set)
                        write_strv(w, p->fs_exec);
                else
                        jsonw_null(w);
                jsonw_kv_string(w, "home", p->fs_home);
                jsonw_end_object(w);
        } else
                jsonw_null(w);

        jsonw_key(w, "process");
        if (p) {
                jsonw_begin_object(w);
                jsonw_kv_bool(w, "allow_spawn", p->allow_spawn);
                jsonw_kv_bool(w, "allow_exec", p->allow_exec);
                jsonw_kv_bool(w, "long_lived", p->long_lived);
                jsonw_key(w, "commands");
                jsonw_begin_object(w);
                jsonw_kv_string(w, "mode", sbx_cmd_mode_to_string(p->cmd_mode));
                jsonw_key(w, "allow");
                write_strv(w, p->cmd_allow);
                jsonw_key(w, "deny");
                write_strv(w, p->cmd_deny);
                jsonw_end_object(w);
                jsonw_end_object(w);
        } else
                jsonw_null(w);

        jsonw_key(w, "workspace");
        if (p) {
                jsonw_begin_object(w);
                jsonw_kv_string(w, "path", c->workspace ? c->workspace : p->ws_path);
                jsonw_kv_string(w, "mount", p->ws_mount);
                jsonw_kv_string(w, "access", sbx_access_to_string(p->ws_access));
                jsonw_end_object(w);
        } else
                jsonw_null(w);

        jsonw_kv_string(w, "on_violation", p ? sbx_on_violation_to_string(p->on_violation) : NULL);

        jsonw_end_object(w);
}

static void write_services(jsonw *w, const sbx_report *r) {
        jsonw_begin_array(w);
        for (size_t i = 0; i < r->n_services; i++) {
                const sbx_report_service *s = &r->services[i];
                jsonw_begin_object(w);
                jsonw_kv_string(w, "name", s->name);
                jsonw_kv_string(w, "target", s->target);
                jsonw_kv_string(w, "protocol", s->tcp ? "tcp" : "http");
                jsonw_kv_uint(w, "count", s->count);
                jsonw_kv_uint(w, "bytes_up", s->bytes_up);
                jsonw_kv_uint(w, "bytes_down", s->bytes_down);
                jsonw_key(w, "requests");
                jsonw_begin_array(w);
                for (size_t k = 0; k < s->n_requests; k++) {
                        const sbx_report_request *q = &s->requests[k];
                        jsonw_begin_object(w);
                        jsonw_kv_string(w, "method", q->method);
                        jsonw_kv_string(w, "path", q->path);
                        if (q->status > 0)
                                jsonw_kv_int(w, "status", q->status);
                        else
                                jsonw_kv_null(w, "status");
                        jsonw_kv_uint(w, "bytes", q->bytes_up + q->bytes_down);
                        jsonw_kv_uint(w, "bytes_up", q->bytes_up);
                        jsonw_kv_uint(w, "bytes_down", q->bytes_down);
                        jsonw_kv_int(w, "at_ms", q->at_ms);
                        jsonw_kv_int(w, "ms", q->ms);
                        jsonw_end_object(w);
                }
                jsonw_end_array(w);
                jsonw_kv_uint(w, "requests_dropped", s->dropped);
                jsonw_end_object(w);
        }
        jsonw_end_array(w);
}

static void write_egress(jsonw *w, const sbx_report *r) {
        if (!r->egress_proxy) {
                jsonw_null(w);
                return;
        }
        jsonw_begin_object(w);
        jsonw_kv_string(w, "proxy", r->egress_proxy);
        jsonw_kv_uint(w, "allowed", r->egress_allowed);
        jsonw_kv_uint(w, "refused", r->egress_refused);
        jsonw_kv_uint(w, "bytes_up", r->egress_bytes_up);
        jsonw_kv_uint(w, "bytes_down", r->egress_bytes_down);
        jsonw_key(w, "connections");
        jsonw_begin_array(w);
        for (size_t i = 0; i < r->n_egress_conns; i++) {
                const sbx_report_conn *c = &r->egress_conns[i];
                jsonw_begin_object(w);
                jsonw_kv_string(w, "type", "network.egress");
                jsonw_kv_string(w, "host", c->host);
                jsonw_kv_uint(w, "port", c->port);
                jsonw_kv_string(w, "via", c->via);
                jsonw_kv_string(w, "rule", c->rule);
                jsonw_kv_uint(w, "bytes_up", c->bytes_up);
                jsonw_kv_uint(w, "bytes_down", c->bytes_down);
                jsonw_kv_int(w, "at_ms", c->at_ms);
                jsonw_kv_int(w, "ms", c->ms);
                jsonw_kv_bool(w, "unreachable", c->unreachable);
                jsonw_end_object(w);
        }
        jsonw_end_array(w);
        jsonw_kv_uint(w, "connections_dropped", r->egress_conns_dropped);
        jsonw_end_object(w);
}

int sbx_report_to_json(const sbx_report *r, bool pretty, char **ret) {
        if (!r || !ret)
                return -EINVAL;

        const char *status = sbx_status_to_string(r->status);
        if (!status)
                return -EINVAL;

        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, pretty);

        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "schema", SBX_REPORT_SCHEMA);
        jsonw_kv_string(&w, "id", r->id);
        jsonw_kv_string(&w, "status", status);

        jsonw_key(&w, "exit");
        jsonw_begin_object(&w);
        if (r->has_exit_code)
                jsonw_kv_int(&w, "code", r->exit_code);
        else
                jsonw_kv_null(&w, "code");
        if (r->exit_signal > 0)
                jsonw_kv_int(&w, "signal", r->exit_signal);
        else
                jsonw_kv_null(&w, "signal");
        jsonw_kv_bool(&w, "killed_by_sandbox", r->killed_by_sandbox);
        jsonw_end_object(&w);

        jsonw_kv_string(&w, "mode", sbx_mode_to_string(r->mode));
        jsonw_kv_string(&w, "backend", r->backend);
        jsonw_kv_string(&w, "isolation", r->isolation);
        jsonw_kv_string(&w, "backend_reason", r->backend_reason);
        jsonw_kv_string(&w, "observation", r->observation);
        jsonw_key(&w, "fs_write_evidence");
        if (r->fs_write_evidence) {
                jsonw_begin_object(&w);
                jsonw_kv_string(&w, "source", r->fs_write_evidence);
                jsonw_kv_string(&w, "note", r->fs_write_note[0] ? r->fs_write_note : NULL);
                jsonw_end_object(&w);
        } else
                jsonw_null(&w);

        jsonw_key(&w, "violations");
        jsonw_begin_array(&w);
        for (size_t i = 0; i < r->n_violations && i < SBX_REPORT_MAX_VIOLATIONS; i++)
                write_violation(&w, &r->violations[i]);
        jsonw_end_array(&w);
        jsonw_kv_uint(&w, "violations_dropped", r->violations_dropped);

        jsonw_key(&w, "config");
        write_config(&w, r);

        jsonw_key(&w, "usage");
        jsonw_begin_object(&w);
        jsonw_kv_int(&w, "wall_ms", r->wall_ms);
        jsonw_kv_int(&w, "cpu_user_ms", r->cpu_user_ms);
        jsonw_kv_int(&w, "cpu_sys_ms", r->cpu_sys_ms);
        jsonw_kv_int(&w, "max_rss_kb", r->max_rss_kb);
        jsonw_kv_int(&w, "pids_peak", r->pids_peak);
        jsonw_kv_uint(&w, "stdout_bytes", r->stdout_bytes);
        jsonw_kv_uint(&w, "stderr_bytes", r->stderr_bytes);
        jsonw_kv_bool(&w, "output_truncated", r->output_truncated);
        jsonw_end_object(&w);

        jsonw_key(&w, "timings");
        jsonw_begin_object(&w);
        jsonw_kv_int(&w, "setup_ms", r->setup_ms);
        jsonw_kv_int(&w, "exec_ms", r->exec_ms);
        jsonw_kv_int(&w, "teardown_ms", r->teardown_ms);
        jsonw_end_object(&w);

        jsonw_key(&w, "host");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "kernel", r->kernel[0] ? r->kernel : NULL);
        if (r->landlock_abi >= 0)
                jsonw_kv_int(&w, "landlock_abi", r->landlock_abi);
        else
                jsonw_kv_null(&w, "landlock_abi");
        jsonw_kv_string(&w, "cgroup", r->cgroup ? r->cgroup : "none");
        jsonw_kv_bool(&w, "unprivileged", r->unprivileged);
        jsonw_end_object(&w);

        jsonw_key(&w, "egress");
        write_egress(&w, r);
        jsonw_key(&w, "services");
        write_services(&w, r);
        jsonw_key(&w, "skill");
        if (r->skill_name[0]) {
                jsonw_begin_object(&w);
                jsonw_kv_string(&w, "name", r->skill_name);
                jsonw_kv_string(&w, "version", r->skill_version);
                jsonw_kv_string(&w, "digest", r->skill_digest);
                jsonw_kv_string(&w, "key_id", r->skill_key_id[0] ? r->skill_key_id : NULL);
                jsonw_end_object(&w);
        } else
                jsonw_null(&w);

        jsonw_kv_string(&w, "error", r->error);
        jsonw_end_object(&w);

        return jsonw_finish(&w, true, ret, NULL);
}

int sbx_report_add_conn(sbx_report *r, const sbx_report_conn *c) {
        r->egress_allowed++;
        r->egress_bytes_up += c->bytes_up;
        r->egress_bytes_down += c->bytes_down;
        if (r->n_egress_conns >= SBX_REPORT_MAX_CONNS) {
                r->egress_conns_dropped++;
                return 0;
        }
        if (r->n_egress_conns % 64 == 0) {
                sbx_report_conn *n = reallocarray(r->egress_conns, r->n_egress_conns + 64, sizeof *n);
                if (!n)
                        return -ENOMEM;
                r->egress_conns = n;
        }
        sbx_report_conn k = *c;
        k.host = strdup(c->host ? c->host : "");
        k.rule = strdup(c->rule ? c->rule : "");
        if (!k.host || !k.rule) {
                free(k.host);
                free(k.rule);
                return -ENOMEM;
        }
        r->egress_conns[r->n_egress_conns++] = k;
        return 0;
}

int sbx_report_add_service(sbx_report *r, const char *name, const char *target, bool tcp) {
        if (r->n_services >= SBX_REPORT_MAX_SERVICES)
                return -E2BIG;
        sbx_report_service *s = &r->services[r->n_services];
        *s = (sbx_report_service){.name = strdup(name), .target = strdup(target), .tcp = tcp};
        if (!s->name || !s->target) {
                free(s->name);
                free(s->target);
                return -ENOMEM;
        }
        r->n_services++;
        return 0;
}

int sbx_report_add_request(sbx_report *r, const sbx_report_request *rq) {
        sbx_report_service *s = NULL;
        for (size_t i = 0; i < r->n_services && !s; i++)
                if (streq(r->services[i].name, rq->service))
                        s = &r->services[i];
        if (!s)
                return -ENOENT;
        s->count++;
        s->bytes_up += rq->bytes_up;
        s->bytes_down += rq->bytes_down;
        if (s->n_requests >= SBX_REPORT_MAX_REQUESTS) {
                s->dropped++;
                return 0;
        }
        if (s->n_requests % 64 == 0) {
                sbx_report_request *n = reallocarray(s->requests, s->n_requests + 64, sizeof *n);
                if (!n)
                        return -ENOMEM;
                s->requests = n;
        }
        sbx_report_request k = *rq;
        k.service = s->name;
        k.method = rq->method ? strdup(rq->method) : NULL;
        k.path = rq->path ? strdup(rq->path) : NULL;
        if ((rq->method && !k.method) || (rq->path && !k.path)) {
                free(k.method);
                free(k.path);
                return -ENOMEM;
        }
        s->requests[s->n_requests++] = k;
        return 0;
}

int sbx_report_write_fd(const sbx_report *r, int fd) {
        if (fd < 0)
                return -EBADF;
        _cleanup_free_ char *text = NULL;
        int k = sbx_report_to_json(r, true, &text);
        if (k < 0)
                return k;
        return sbx_write_all(fd, text, strlen(text));
}

int sbx_report_write_file(const sbx_report *r, const char *path) {
        if (!path)
                return -EINVAL;
        /* Serialise first so a failure does not truncate an existing file. */
        _cleanup_free_ char *text = NULL;
        int k = sbx_report_to_json(r, true, &text);
        if (k < 0)
                return k;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return negative_errno();
        k = sbx_write_all(fd, text, strlen(text));
        if (k < 0)
                return k;
        if (close(TAKE_FD(fd)) < 0)
                return negative_errno();
        return 0;
}

int sbx_report_set_fence(sbx_report *r, const char *name, const char *fmt, ...) {
        char *text = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_fences; i++)
                if (strcmp(r->fences[i].key, name) == 0) {
                        free(r->fences[i].str);
                        r->fences[i].str = text;
                        return 0;
                }
        if (r->n_fences >= SBX_REPORT_MAX_FENCES) {
                free(text);
                return -E2BIG;
        }
        sbx_detail *d = &r->fences[r->n_fences++];
        memset(d, 0, sizeof *d);
        snprintf(d->key, sizeof d->key, "%s", name);
        d->str = text;
        return 0;
}

void sbx_report_reset_run(sbx_report *r) {
        for (size_t i = 0; i < r->n_mounts; i++) {
                free(r->mounts[i].source);
                free(r->mounts[i].target);
                free(r->mounts[i].kind);
        }
        r->n_mounts = 0;
        for (size_t i = 0; i < r->n_fences; i++)
                free(r->fences[i].str);
        r->n_fences = 0;
        for (int l = 0; l < _SBX_LIMIT_MAX; l++)
                r->limit_mechanism[l] = SBX_MECH_NONE;
        r->backend = NULL;
        r->isolation = NULL;
        r->setup_ms = 0;
}

int sbx_report_copy_setup(sbx_report *dst, const sbx_report *src) {
        dst->mode = src->mode;
        dst->backend = src->backend;
        dst->isolation = src->isolation;
        dst->config = src->config;
        dst->observation = src->observation;
        dst->fs_write_evidence = src->fs_write_evidence;
        memcpy(dst->fs_write_note, src->fs_write_note, sizeof dst->fs_write_note);
        if (src->egress_proxy)
                sbx_report_set_egress_proxy(dst, src->egress_proxy);
        for (size_t i = 0; i < src->n_services && dst->n_services < src->n_services; i++)
                if (sbx_report_add_service(
                            dst, src->services[i].name, src->services[i].target, src->services[i].tcp) < 0)
                        return -ENOMEM;
        memcpy(dst->limit_mechanism, src->limit_mechanism, sizeof dst->limit_mechanism);
        if (src->backend_reason && sbx_report_set_backend_reason(dst, "%s", src->backend_reason) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < src->n_mounts; i++)
                if (sbx_report_add_mount(
                            dst, src->mounts[i].source, src->mounts[i].target, src->mounts[i].kind) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < src->n_fences; i++)
                if (sbx_report_set_fence(
                            dst, src->fences[i].key, "%s", src->fences[i].str ? src->fences[i].str : "") < 0)
                        return -ENOMEM;
        return 0;
}

void sbx_report_set_egress_proxy(sbx_report *r, const char *addr) {
        if (addr != r->egress_proxy_addr)
                snprintf(r->egress_proxy_addr, sizeof r->egress_proxy_addr, "%s", addr);
        r->egress_proxy = r->egress_proxy_addr;
}
