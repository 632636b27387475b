/* estimate.c — POST /v1/estimate (DESIGN.md, "Meters, credits and deals"): what a sandbox of a
 * profile would cost for a duration on each extension its route would consider, before it is
 * made. The price is each extension's registry pricing (ext.local's: 0 unless the site's
 * registry re-prices it): per_creation once, per_second of wall time, per_cpu_second for each of
 * the profile's CPUs and per_gib_second for its memory limit over the whole duration — an upper
 * bound for a sandbox that uses what it may. */
#include "daemon/mgr-internal.h"

#include <math.h>

static double money(double x) {
        return round(x * 1e6) / 1e6;
}

unsigned sbx_ops_estimate(sbx_mgr *m, const sbx_caller *who, const char *profile, double duration_s,
        json_t *route, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!(duration_s > 0) || duration_s > 366 * 86400.0)
                return mgr_reply_err(rp, 400, "invalid_argument", "duration_s",
                        "duration_s: a number of seconds, more than 0 and at most 366 days");
        _cleanup_(sbx_config_freep) sbx_config *cfg = mgr_route_config(m, profile, route, rp);
        if (!cfg)
                return rp->code;
        json_t *ranked = mgr_route_rank(m, cfg, route, rp);
        if (!ranked)
                return rp->code;
        double cpus = cfg->limits.value[SBX_LIMIT_CPUS],
               gib = cfg->limits.value[SBX_LIMIT_MEMORY_MB] / 1024.0;
        json_t *items = json_array(), *c;
        size_t i;
        json_array_foreach(json_object_get(ranked, "candidates"), i, c) {
                if (!json_is_true(json_object_get(c, "ok")))
                        continue;
                const char *ext = json_string_value(json_object_get(c, "extension"));
                json_t *x = ext ? mgr_registry_entry(ext) : NULL, *p = json_object_get(x, "pricing");
#define PRICE(key) json_number_value(json_object_get(p, key))
                double creation = PRICE("per_creation"), wall = PRICE("per_second") * duration_s,
                       cpu = PRICE("per_cpu_second") * cpus * duration_s,
                       mem = PRICE("per_gib_second") * gib * duration_s;
#undef PRICE
                json_array_append_new(
                        items, json_pack("{s:s, s:o, s:f, s:s, s:{s:f, s:f, s:f, s:f}}", "extension", ext,
                                       "host", json_incref(json_object_get(c, "host")), "cost",
                                       money(creation + wall + cpu + mem), "currency",
                                       json_string_value(json_object_get(p, "currency")) ?: "USD",
                                       "breakdown", "creation", money(creation), "wall", money(wall), "cpu",
                                       money(cpu), "memory", money(mem)));
                json_decref(x);
        }
        rp->code = 200;
        rp->json = json_pack("{s:s, s:f, s:o, s:O}", "profile", profile ? profile : "profile.default",
                "duration_s", duration_s, "items", items, "chosen", json_object_get(ranked, "chosen"));
        json_decref(ranked);
        return 200;
}

/* ---- a sandbox's cost (its record's `cost`) ------------------------------------------------- */

json_t *mgr_cost_new(const char *ext, const sbx_config *cfg, double ttl_s) {
        json_t *x = mgr_registry_entry(ext ? ext : "ext.local"), *p = json_object_get(x, "pricing");
        double cpus = cfg->limits.value[SBX_LIMIT_CPUS],
               gib = cfg->limits.value[SBX_LIMIT_MEMORY_MB] / 1024.0;
        json_t *rate = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "per_creation",
                json_number_value(json_object_get(p, "per_creation")), "per_second",
                json_number_value(json_object_get(p, "per_second")), "per_cpu_second",
                json_number_value(json_object_get(p, "per_cpu_second")), "per_gib_second",
                json_number_value(json_object_get(p, "per_gib_second")), "cpus", cpus, "memory_gib", gib);
        json_t *c = json_pack("{s:f, s:n, s:s, s:o, s:f}", "estimated", 0.0, "actual", "currency",
                json_string_value(json_object_get(p, "currency")) ?: "USD", "rate", rate, "paused_s", 0.0);
        json_object_set_new(c, "estimated", json_real(mgr_cost_for(c, ttl_s)));
        json_decref(x);
        return c;
}

double mgr_cost_for(json_t *cost, double seconds) {
        json_t *r = json_object_get(cost, "rate");
#define R(key) json_number_value(json_object_get(r, key))
        double per_s =
                R("per_second") + R("per_cpu_second") * R("cpus") + R("per_gib_second") * R("memory_gib");
        double v = R("per_creation") + per_s * (seconds > 0 ? seconds : 0);
#undef R
        return money(v);
}
