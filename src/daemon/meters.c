/* meters.c — what each sandbox used (DESIGN.md, "Meters, credits and deals"): wall seconds alive
 * (not while paused), CPU seconds and memory MiB-seconds from its cgroup, egress bytes (its execs'
 * reports: what the egress proxy carried), one creation. The reaper samples each running sandbox's
 * cgroup every --meter-interval seconds (its supervisor's usage: CPU used since it started, memory
 * now), and so do a pause (before the freeze) and the sandbox's end; memory is the trapezoid
 * between samples. Kept on the box and in the record, stored in the meters table at each sample
 * and at the end; GET /v1/meters, Prometheus counters. A sandbox held by another node has its wall
 * time here (its CPU and memory are that node's: null). */
#include "daemon/mgr-internal.h"

#include <errno.h>
#include <math.h>
#include <time.h>

double mgr_meter_wall_locked(const box *b, int64_t now) {
        int64_t end = b->meter_ended && b->meter_ms ? b->meter_ms : now;
        double paused = json_number_value(json_object_get(b->cost, "paused_s"));
        if (b->paused_ms > 0 && end > b->paused_ms)
                paused += (double) (end - b->paused_ms) / 1000.0;
        double w = (double) (end - b->created_ms) / 1000.0 - paused;
        return w > 0 ? w : 0;
}

void mgr_meter_sample(sbx_mgr *m, box *b, bool final) {
        json_t *info = !b->ext[0] && b->sv_pid > 0 ? mgr_sv_call(b, SBX_SV_OP_INFO, 2000) : NULL;
        json_t *u = json_object_get(info, "usage");
        pthread_mutex_lock(&m->lock);
        int64_t now = mgr_now_ms();
        if (!b->meter_ended) {
                if (json_is_object(u)) {
                        double raw = json_number_value(json_object_get(u, "cpu_s"));
                        if (raw >= 0) {
                                if (raw < b->meter_cpu_raw) /* a new supervisor (recreate) counts from 0 */
                                        b->meter_cpu_raw = 0;
                                b->meter_cpu_s += raw - b->meter_cpu_raw;
                                b->meter_cpu_raw = raw;
                        }
                        json_int_t mem = json_integer_value(json_object_get(u, "memory_bytes"));
                        uint64_t cur = mem > 0 ? (uint64_t) mem : 0;
                        int64_t since = b->meter_ms ? b->meter_ms : b->created_ms;
                        if (b->paused_ms == 0 && now > since)
                                b->meter_mem_mib_s += ((double) b->meter_mem_bytes + (double) cur) / 2.0 /
                                                      (1024.0 * 1024.0) * (double) (now - since) / 1000.0;
                        b->meter_mem_bytes = cur;
                }
                b->meter_ms = now;
                b->meter_ended = final;
        }
        b->meter_next_ms = now + (int64_t) (m->meter_interval_s * 1000);
        pthread_mutex_unlock(&m->lock);
        json_decref(info);
}

void mgr_meter_exec_locked(box *b, json_t *report) {
        json_t *eg = json_object_get(report, "egress");
        json_int_t up = json_integer_value(json_object_get(eg, "bytes_up")),
                   down = json_integer_value(json_object_get(eg, "bytes_down"));
        b->meter_egress += (uint64_t) (up > 0 ? up : 0) + (uint64_t) (down > 0 ? down : 0);
}

json_t *mgr_meter_json_locked(const box *b, int64_t now) {
        bool here = !b->ext[0];
        return json_pack("{s:f, s:o, s:o, s:I, s:i, s:b}", "wall_s",
                round(mgr_meter_wall_locked(b, now) * 1000) / 1000, "cpu_s",
                here ? json_real(round(b->meter_cpu_s * 1000) / 1000) : json_null(), "mem_mib_s",
                here ? json_real(round(b->meter_mem_mib_s * 1000) / 1000) : json_null(), "egress_bytes",
                (json_int_t) b->meter_egress, "creations", 1, "final", b->meter_ended);
}

/* The meters back from a stored record (a restarted server). */
void mgr_meter_reload(box *b, json_t *rec) {
        json_t *mt = json_object_get(rec, "meters");
        b->meter_cpu_s = json_number_value(json_object_get(mt, "cpu_s"));
        b->meter_mem_mib_s = json_number_value(json_object_get(mt, "mem_mib_s"));
        json_int_t eg = json_integer_value(json_object_get(mt, "egress_bytes"));
        b->meter_egress = eg > 0 ? (uint64_t) eg : 0;
        b->meter_cpu_raw = json_number_value(json_object_get(mt, "cgroup_cpu_s"));
        /* memory counts again from the first sample after the restart (the time the server was
         * down is not sampled: it is not counted rather than counted from the sandbox's start) */
        b->meter_ms = mgr_now_ms();
        b->meter_mem_bytes = 0;
}

double mgr_cost_accrued_locked(const box *b, int64_t now) {
        if (!b->cost)
                return 0;
        json_t *r = json_object_get(b->cost, "rate");
#define R(key) json_number_value(json_object_get(r, key))
        double wall = mgr_meter_wall_locked(b, now);
        double cpu = b->ext[0] ? R("cpus") * wall : b->meter_cpu_s,
               gib_s = b->ext[0] ? R("memory_gib") * wall : b->meter_mem_mib_s / 1024.0;
        double v = R("per_creation") + R("per_second") * wall + R("per_cpu_second") * cpu +
                   R("per_gib_second") * gib_s;
#undef R
        return round(v * 1e6) / 1e6;
}

void mgr_meter_store(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        int64_t now = mgr_now_ms();
        json_t *mt = mgr_meter_json_locked(b, now);
        json_t *actual = json_object_get(b->cost, "actual");
        double cost = json_is_number(actual) ? json_number_value(actual) : mgr_cost_accrued_locked(b, now);
        char id[sizeof b->id], tenant[sizeof b->tenant], ext[sizeof b->ext], profile[sizeof b->profile];
        snprintf(id, sizeof id, "%s", b->id);
        snprintf(tenant, sizeof tenant, "%s", b->tenant);
        snprintf(ext, sizeof ext, "%s",
                b->ext[0] ? b->ext : json_string_value(json_object_get(b->route, "chosen")) ?: "ext.local");
        snprintf(profile, sizeof profile, "%s", b->profile);
        const char *currency = json_string_value(json_object_get(b->cost, "currency")) ?: m->currency;
        char cur[16];
        snprintf(cur, sizeof cur, "%s", currency);
        int64_t created = b->created_ms, ended = b->meter_ended ? b->meter_ms : 0;
        pthread_mutex_unlock(&m->lock);
        json_t *cpu = json_object_get(mt, "cpu_s"), *mem = json_object_get(mt, "mem_mib_s");
        sbx_store_meter row = {.sandbox_id = id,
                .tenant = tenant,
                .extension = ext,
                .profile = profile,
                .currency = cur,
                .started_at = created,
                .ended_at = ended,
                .wall_s = json_number_value(json_object_get(mt, "wall_s")),
                .cpu_s = json_number_value(cpu),
                .mem_mib_s = json_number_value(mem),
                .cost = cost,
                .cpu_known = !json_is_null(cpu),
                .mem_known = !json_is_null(mem),
                .egress_bytes = (int64_t) json_integer_value(json_object_get(mt, "egress_bytes"))};
        (void) sbx_store_meter_put(m->store, &row);
        json_decref(mt);
}

/* ---- GET /v1/meters ------------------------------------------------------------------------ */

/* RFC 3339 (UTC, "Z") or seconds since the epoch → ms; -1 if neither. */
static int64_t parse_when(const char *s) {
        struct tm t = {0};
        int ms = 0, n = 0;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min,
                    &t.tm_sec, &n) == 6) {
                const char *p = s + n;
                if (*p == '.') {
                        int k = 0, d = 0;
                        for (p++; *p >= '0' && *p <= '9'; p++, k++)
                                if (k < 3)
                                        d = d * 10 + (*p - '0');
                        for (; k < 3; k++)
                                d *= 10;
                        ms = d;
                }
                if (!streq(p, "Z") || t.tm_mon < 1 || t.tm_mon > 12)
                        return -1;
                t.tm_year -= 1900;
                t.tm_mon -= 1;
                return (int64_t) timegm(&t) * 1000 + ms;
        }
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= 0 && v < 1e11))
                return -1;
        return (int64_t) (v * 1000);
}

typedef struct meters_ctx {
        json_t *items;
        json_t *seen; /* live ones already answered */
} meters_ctx;

static int meter_row(void *ud, int n, const char *const *c) {
        meters_ctx *x = ud;
        if (json_object_get(x->seen, c[0]))
                return 0;
        json_t *it = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:o, s:f, s:o, s:o, s:I, s:I, s:o, s:s?, s:b}",
                "sandbox_id", c[0], "tenant", c[1], "extension", c[2], "profile", c[3], "started_at",
                mgr_time_json(strtoll(c[4], NULL, 10)), "ended_at",
                c[5] ? mgr_time_json(strtoll(c[5], NULL, 10)) : json_null(), "wall_s", strtod(c[6], NULL),
                "cpu_s", c[7] ? json_real(strtod(c[7], NULL)) : json_null(), "mem_mib_s",
                c[8] ? json_real(strtod(c[8], NULL)) : json_null(), "egress_bytes",
                (json_int_t) strtoll(c[9], NULL, 10), "creations", (json_int_t) strtoll(c[10], NULL, 10),
                "cost", c[11] ? json_real(strtod(c[11], NULL)) : json_null(), "currency", c[12], "final",
                c[5] != NULL);
        json_array_append_new(x->items, it);
        return 0;
}

static double num(const char *s) {
        return s ? strtod(s, NULL) : 0;
}

static int exec_row(void *ud, int n, const char *const *c) {
        double wall = num(c[4]) / 1000.0, rss = num(c[7]) / 1024.0;
        json_array_append_new(ud,
                json_pack("{s:s, s:s?, s:o, s:o, s:f, s:f, s:f, s:f, s:I}", "exec_id", c[0], "status", c[1],
                        "started_at", mgr_time_json(strtoll(c[2] ? c[2] : "0", NULL, 10)), "ended_at",
                        c[3] ? mgr_time_json(strtoll(c[3], NULL, 10)) : json_null(), "wall_s", wall, "cpu_s",
                        (num(c[5]) + num(c[6])) / 1000.0, "max_rss_mib", round(rss * 1000) / 1000,
                        /* per exec: its peak resident memory over its wall time (an upper bound) */
                        "mem_mib_s", round(rss * wall * 1000) / 1000, "egress_bytes",
                        (json_int_t) (num(c[8]) + num(c[9]))));
        return 0;
}

/* ?by=exec: one sandbox's execs, each from its report */
static unsigned meters_by_exec(sbx_mgr *m, const sbx_caller *who, const char *sandbox, sbx_mgr_reply *rp) {
        if (!sandbox || !mgr_valid_sandbox_id(sandbox))
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "sandbox", "by=exec: a sandbox= is required");
        if (!streq(who->kind, "adm")) { /* another tenant's: not found */
                box *b = mgr_box_get(m, sandbox, who->tenant);
                json_t *rec = b ? NULL : mgr_stored_record(m, sandbox, who->tenant);
                if (b)
                        mgr_box_put(m, b);
                if (!b && !rec)
                        return mgr_reply_err(
                                rp, 404, "not_found", "sandbox", "no such sandbox: %s", sandbox);
                json_decref(rec);
        }
        json_t *items = json_array();
        (void) sbx_store_exec_usage(m->store, sandbox, exec_row, items);
        rp->json = json_pack("{s:s, s:o}", "sandbox_id", sandbox, "items", items);
        rp->code = 200;
        return 200;
}

unsigned sbx_ops_meters(sbx_mgr *m, const sbx_caller *who, const char *sandbox, const char *from_s,
        const char *to_s, const char *tenant_q, const char *by, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (by && !streq(by, "sandbox") && !streq(by, "exec"))
                return mgr_reply_err(rp, 400, "invalid_argument", "by", "by: sandbox (the default) or exec");
        if (streq_ptr(by, "exec"))
                return meters_by_exec(m, who, sandbox, rp);
        int64_t from = 0, to = INT64_MAX;
        if (from_s && (from = parse_when(from_s)) < 0)
                return mgr_reply_err(rp, 400, "invalid_argument", "from",
                        "from: a time (RFC 3339, 2026-11-27T08:00:00Z) or seconds since the epoch");
        if (to_s && (to = parse_when(to_s)) < 0)
                return mgr_reply_err(rp, 400, "invalid_argument", "to",
                        "to: a time (RFC 3339, 2026-11-27T08:00:00Z) or seconds since the epoch");
        if (to < from)
                return mgr_reply_err(rp, 400, "invalid_argument", "to", "to: before from");
        if (sandbox && !mgr_valid_sandbox_id(sandbox))
                return mgr_reply_err(rp, 400, "invalid_argument", "sandbox", "sandbox: not a sandbox id");
        bool adm = streq(who->kind, "adm");
        if (tenant_q && !adm && !streq(tenant_q, who->tenant))
                return mgr_reply_err(
                        rp, 403, "forbidden", "tenant", "another tenant's meters are an adm's to read");
        /* an adm reads every tenant's unless it names one; anyone else their own */
        const char *tenant = tenant_q ? tenant_q : adm ? NULL : who->tenant;
        meters_ctx x = {.items = json_array(), .seen = json_object()};
        /* the live ones from memory (fresher than their stored row) */
        pthread_mutex_lock(&m->lock);
        int64_t now = mgr_now_ms();
        for (box *b = m->boxes; b; b = b->next) {
                if (tenant && !streq(b->tenant, tenant))
                        continue;
                if (sandbox && !streq(b->id, sandbox))
                        continue;
                if (b->created_ms > to || (b->meter_ended && b->meter_ms < from))
                        continue;
                if (b->state == SBX_STATE_REQUESTED)
                        continue;
                json_t *it = mgr_meter_json_locked(b, now);
                json_t *actual = json_object_get(b->cost, "actual");
                json_object_set_new(it, "sandbox_id", json_string(b->id));
                json_object_set_new(it, "tenant", json_string(b->tenant));
                json_object_set_new(it, "extension",
                        json_string(b->ext[0] ? b->ext
                                              : json_string_value(json_object_get(b->route, "chosen"))
                                                                ?: "ext.local"));
                json_object_set_new(it, "profile", json_string(b->profile));
                json_object_set_new(it, "started_at", mgr_time_json(b->created_ms));
                json_object_set_new(
                        it, "ended_at", b->meter_ended ? mgr_time_json(b->meter_ms) : json_null());
                json_object_set_new(it, "cost",
                        json_real(json_is_number(actual) ? json_number_value(actual)
                                                         : mgr_cost_accrued_locked(b, now)));
                json_object_set_new(it, "currency",
                        json_string(json_string_value(json_object_get(b->cost, "currency")) ?: m->currency));
                json_array_append_new(x.items, it);
                json_object_set_new(x.seen, b->id, json_true());
        }
        pthread_mutex_unlock(&m->lock);
        sbx_error e = {0};
        int r = sbx_store_meters(m->store, tenant, sandbox, from, to, meter_row, &x, &e);
        json_decref(x.seen);
        if (r < 0) {
                json_decref(x.items);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "the store: %s", e.message);
        }
        if (sandbox && json_array_size(x.items) == 0) {
                json_decref(x.items);
                return mgr_reply_err(rp, 404, "not_found", "sandbox", "no meters for sandbox %s", sandbox);
        }
        /* the totals, per currency */
        json_t *tot = json_object(), *it;
        size_t i;
        json_array_foreach(x.items, i, it) {
                const char *cur = json_string_value(json_object_get(it, "currency")) ?: m->currency;
                json_t *t = json_object_get(tot, cur);
                if (!t) {
                        t = json_pack("{s:f, s:f, s:f, s:I, s:I, s:f}", "wall_s", 0.0, "cpu_s", 0.0,
                                "mem_mib_s", 0.0, "egress_bytes", (json_int_t) 0, "creations",
                                (json_int_t) 0, "cost", 0.0);
                        json_object_set_new(tot, cur, t);
                }
                static const char *const keys[] = {"wall_s", "cpu_s", "mem_mib_s", "cost"};
                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        json_object_set_new(t, keys[k],
                                json_real(round((json_number_value(json_object_get(t, keys[k])) +
                                                        json_number_value(json_object_get(it, keys[k]))) *
                                                  1e6) /
                                          1e6));
                json_object_set_new(t, "egress_bytes",
                        json_integer(json_integer_value(json_object_get(t, "egress_bytes")) +
                                     json_integer_value(json_object_get(it, "egress_bytes"))));
                json_object_set_new(t, "creations",
                        json_integer(json_integer_value(json_object_get(t, "creations")) + 1));
        }
        rp->json = json_pack("{s:o, s:o}", "items", x.items, "totals", tot);
        rp->code = 200;
        return 200;
}

/* ---- Prometheus ---------------------------------------------------------------------------- */

typedef struct prom_ctx {
        FILE *f;
        const char *metric;
        int col;
} prom_ctx;

static void label_escaped(FILE *f, const char *s) {
        for (; s && *s; s++) {
                if (*s == '\\' || *s == '"')
                        fputc('\\', f);
                if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        }
}

static int prom_row(void *ud, int n, const char *const *c) {
        prom_ctx *p = ud;
        fprintf(p->f, "%s{tenant=\"", p->metric);
        label_escaped(p->f, c[0]);
        fputs("\",extension=\"", p->f);
        label_escaped(p->f, c[1]);
        fprintf(p->f, "\"} %s\n", c[p->col] ? c[p->col] : "0");
        return 0;
}

/* Counters over every sandbox's stored meters (a live one's as of its last sample). */
void mgr_meters_prometheus(sbx_mgr *m, FILE *f) {
        static const struct {
                const char *name, *help;
        } ms[] = {
                {"sandboxer_meter_wall_seconds_total", "Seconds sandboxes were alive (not paused)."},
                {"sandboxer_meter_cpu_seconds_total", "CPU seconds sandboxes used (their cgroups)."},
                {"sandboxer_meter_memory_mib_seconds_total", "Memory MiB-seconds sandboxes held."},
                {"sandboxer_meter_egress_bytes_total",
                        "Bytes sandboxes sent and received through the egress proxy."},
                {"sandboxer_meter_creations_total", "Sandboxes created."},
                {"sandboxer_meter_cost_total",
                        "What sandboxes cost, in the site's currency (their extensions' prices)."},
        };
        for (size_t i = 0; i < ELEMENTSOF(ms); i++) {
                fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", ms[i].name, ms[i].help, ms[i].name);
                prom_ctx p = {f, ms[i].name, (int) i + 2};
                (void) sbx_store_meter_sums(m->store, prom_row, &p);
        }
}
