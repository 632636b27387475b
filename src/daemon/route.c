/* route.c — which extension holds a sandbox (DESIGN.md, "Extensions, hosts and routes"), with
 * the semantics people know from LLM routers: constraints are hard filters (nothing qualifies:
 * 422 with each candidate's reason), the strategy only orders what qualifies, fallbacks are on
 * unless allow_fallbacks is false, an unhealthy candidate is passed over, and the record keeps
 * every candidate with why it was or was not chosen. POST /v1/route/explain answers the same
 * ranking without creating.
 *
 * Strategies: prefer-self-hosted (the default: local, sandboxer and compose-ssh kinds before the
 * hosted services, then by cost), lowest-cost (by cost_per_hour: the extension's per_second,
 * per_cpu_second × cpus and per_gib_second × memory over an hour, plus per_creation), lowest-latency
 * (by the provision and first-exec latencies measured for each extension, moving averages of its
 * creates and of each sandbox's first exec; unmeasured ones after), explicit (the fallback list, in its
 * order, and nothing else). Constraints: max_cost_per_hour, require_isolation (policy | container |
 * microvm), region. */
#include "daemon/mgr-internal.h"

#include <math.h>

static pthread_mutex_t lat_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *latency; /* extension id → average provision ms (under lat_lock) */
static json_t *exec_latency; /* extension id → average ms of a sandbox's first exec */

static void observe(json_t **map, const char *extension, double ms) {
        pthread_mutex_lock(&lat_lock);
        if (!*map)
                *map = json_object();
        json_t *x = json_object_get(*map, extension);
        double avg = x ? 0.8 * json_number_value(x) + 0.2 * ms : ms;
        json_object_set_new(*map, extension, json_real(avg));
        pthread_mutex_unlock(&lat_lock);
}

void mgr_route_observe(const char *extension, double ms) {
        observe(&latency, extension, ms);
}

static double latency_in(json_t *map, const char *extension) {
        pthread_mutex_lock(&lat_lock);
        json_t *x = json_object_get(map, extension);
        double v = x ? json_number_value(x) : -1;
        pthread_mutex_unlock(&lat_lock);
        return v;
}

bool mgr_route_first_exec(sbx_mgr *m, const char *id, const char *tenant, char ext[static 72]) {
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, tenant) : NULL;
        if (!b)
                return false;
        pthread_mutex_lock(&m->lock);
        bool first = !b->first_exec_done && sbx_state_usable(b->state);
        b->first_exec_done = true;
        snprintf(ext, 72, "%s",
                b->ext[0] ? b->ext : json_string_value(json_object_get(b->route, "chosen")) ?: "ext.local");
        pthread_mutex_unlock(&m->lock);
        mgr_box_put(m, b);
        return first;
}

void mgr_route_observe_exec(const char *extension, double ms) {
        observe(&exec_latency, extension, ms);
}

static const char *const strategies[] = {
        "prefer-self-hosted", "lowest-cost", "lowest-latency", "explicit", NULL};
static const char *const ckeys[] = {"max_cost_per_hour", "require_isolation", "region", NULL};

bool mgr_route_decode(json_t *r, const char *prefix, sbx_mgr_reply *rp) {
        static const char *const keys[] = {"strategy", "fallback", "allow_fallbacks", "constraints", NULL};
        char f[128];
        if (!json_is_object(r)) {
                mgr_reply_err(rp, 400, "invalid_argument", "route",
                        "route: an object {strategy, fallback, allow_fallbacks, constraints}");
                return false;
        }
        if (!mgr_only_keys(r, keys, "route.", rp))
                return false;
        const char *s = json_string_value(json_object_get(r, "strategy"));
        bool known = false;
        for (size_t i = 0; s && strategies[i]; i++)
                known = known || streq(s, strategies[i]);
        json_t *fb = json_object_get(r, "fallback"), *x, *c = json_object_get(r, "constraints");
        size_t i;
        if (json_object_get(r, "strategy") && !known)
                return mgr_reply_err(rp, 400, "invalid_argument", "route.strategy",
                               "route.strategy: prefer-self-hosted, lowest-cost, lowest-latency or "
                               "explicit"),
                       false;
        if (fb && (!json_is_array(fb) || json_array_size(fb) > 16))
                return mgr_reply_err(rp, 400, "invalid_argument", "route.fallback",
                               "route.fallback: a list of at most 16 extension ids"),
                       false;
        json_array_foreach(fb, i, x) if (!json_is_string(x) || strncmp(json_string_value(x), "ext.", 4) !=
                                                                       0) return mgr_reply_err(rp, 400,
                "invalid_argument", "route.fallback", "route.fallback[%zu]: an extension id (ext.NAME)", i),
                false;
        if (s && streq(s, "explicit") && json_array_size(fb) == 0)
                return mgr_reply_err(rp, 400, "invalid_argument", "route.fallback",
                               "route.strategy explicit: route.fallback names the extensions, in order"),
                       false;
        if (json_object_get(r, "allow_fallbacks") && !json_is_boolean(json_object_get(r, "allow_fallbacks")))
                return mgr_reply_err(rp, 400, "invalid_argument", "route.allow_fallbacks",
                               "route.allow_fallbacks: true or false"),
                       false;
        if (c && (!json_is_object(c) || !mgr_only_keys(c, ckeys, "route.constraints.", rp)))
                return rp->code ? false
                                : (mgr_reply_err(rp, 400, "invalid_argument", "route.constraints",
                                           "route.constraints: an object {max_cost_per_hour, "
                                           "require_isolation, "
                                           "region}"),
                                          false);
        json_t *mc = json_object_get(c, "max_cost_per_hour"), *ri = json_object_get(c, "require_isolation"),
               *rg = json_object_get(c, "region");
        const char *ris = json_string_value(ri);
        snprintf(f, sizeof f, "%sconstraints", prefix);
        if (mc && !(json_is_number(mc) && json_number_value(mc) >= 0))
                return mgr_reply_err(rp, 400, "invalid_argument", "route.constraints.max_cost_per_hour",
                               "route.constraints.max_cost_per_hour: a number, 0 or more"),
                       false;
        if (ri && !(ris && (streq(ris, "policy") || streq(ris, "container") || streq(ris, "microvm"))))
                return mgr_reply_err(rp, 400, "invalid_argument", "route.constraints.require_isolation",
                               "route.constraints.require_isolation: policy, container or microvm"),
                       false;
        if (rg && !json_is_string(rg))
                return mgr_reply_err(rp, 400, "invalid_argument", "route.constraints.region",
                               "route.constraints.region: a string"),
                       false;
        return true;
}

/* The route in force: the request's, else the profile's (its constraints "k=v" strv). NULL with
 * rp filled (422) when the profile's names a constraint this server does not know. */
static json_t *route_of(const sbx_profile *pr, json_t *req, sbx_mgr_reply *rp) {
        if (req)
                return json_deep_copy(req);
        json_t *r = json_object(), *c = json_object();
        if (pr->route_strategy)
                json_object_set_new(r, "strategy", json_string(pr->route_strategy));
        json_t *fb = json_array();
        for (char **p = pr->route_fallback; p && *p; p++)
                json_array_append_new(fb, json_string(*p));
        json_object_set_new(r, "fallback", fb);
        for (char **p = pr->route_constraints; p && *p; p++) {
                const char *eq = strchr(*p, '=');
                char k[64];
                snprintf(k, sizeof k, "%.*s", eq ? (int) (eq - *p) : 0, *p);
                if (streq(k, "max_cost_per_hour"))
                        json_object_set_new(c, k, json_real(strtod(eq + 1, NULL)));
                else if (streq(k, "require_isolation") || streq(k, "region"))
                        json_object_set_new(c, k, json_string(eq + 1));
                else {
                        json_decref(r);
                        json_decref(c);
                        mgr_reply_err(rp, 422, "invalid_profile", "route.constraints",
                                "the profile's route.constraints.%s is not one this server knows "
                                "(max_cost_per_hour, require_isolation, region)",
                                k);
                        return NULL;
                }
        }
        json_object_set_new(r, "constraints", c);
        return r;
}

static bool self_hosted(const char *kind) {
        return streq_ptr(kind, "local") || streq_ptr(kind, "sandboxer") || streq_ptr(kind, "compose-ssh");
}

typedef struct cand {
        json_t *j;
        const char *id, *kind, *host;
        double cost, lat;
        int fb_pos; /* in route.fallback, or -1 */
        int pref_pos; /* in the profile's placement.prefer (extension or host), or -1 */
        bool ok;
} cand;

/* A total order (lexicographic, so transitive): qualifying ones first; then the profile's
 * placement.prefer (listed ones first, in order; not under explicit); then the strategy's key —
 * explicit: the fallback list's order; prefer-self-hosted: self-hosted kinds first, then cost;
 * lowest-cost: cost, then self-hosted first; lowest-latency: measured latency (unknown last),
 * then cost — and last the names. */
static int cmp_cand(const void *pa, const void *pb, void *ud) {
        const cand *a = pa, *b = pb;
        const char *s = ud;
        bool explicit = streq(s, "explicit");
#define KEY(x, y)                                                                                           \
        do {                                                                                                \
                if ((x) != (y))                                                                             \
                        return (x) < (y) ? -1 : 1;                                                          \
        } while (0)
        KEY(!a->ok, !b->ok);
        if (!explicit) {
                KEY(a->pref_pos < 0, b->pref_pos < 0);
                KEY(a->pref_pos, b->pref_pos);
        }
        if (explicit) {
                KEY(a->fb_pos < 0, b->fb_pos < 0);
                KEY(a->fb_pos, b->fb_pos);
        } else if (streq(s, "prefer-self-hosted")) {
                KEY(!self_hosted(a->kind), !self_hosted(b->kind));
                KEY(a->cost, b->cost);
        } else if (streq(s, "lowest-cost")) {
                KEY(a->cost, b->cost);
                KEY(!self_hosted(a->kind), !self_hosted(b->kind));
        } else { /* lowest-latency */
                KEY(a->lat < 0, b->lat < 0);
                KEY(a->lat, b->lat);
                KEY(a->cost, b->cost);
        }
#undef KEY
        int c = strcmp(a->id, b->id);
        return c ? c : strcmp(a->host ? a->host : "", b->host ? b->host : "");
}

sbx_config *mgr_route_config(sbx_mgr *m, const char *profile, json_t *route, sbx_mgr_reply *rp) {
        if (route && !mgr_route_decode(route, "route.", rp))
                return NULL;
        sbx_request rreq = {.profile = profile ? profile : "profile.default", .policy_file = m->policy_file};
        sbx_error e = {0};
        sbx_config *cfg = NULL;
        if (sbx_config_resolve(&rreq, &cfg, &e) < 0) {
                char buf[1200];
                bool unknown = e.errnum == ENOENT;
                mgr_reply_err(rp, unknown ? 422 : 400, unknown ? "unknown_profile" : "invalid_argument",
                        "profile", "%s", sbx_error_format(&e, buf, sizeof buf));
                return NULL;
        }
        return cfg;
}

unsigned sbx_ops_route_explain(
        sbx_mgr *m, const sbx_caller *who, const char *profile, json_t *route, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        _cleanup_(sbx_config_freep) sbx_config *cfg = mgr_route_config(m, profile, route, rp);
        if (!cfg)
                return rp->code;
        json_t *r = mgr_route_rank(m, cfg, route, rp);
        if (!r)
                return rp->code;
        rp->code = 200;
        rp->json = r;
        return 200;
}

json_t *mgr_route_rank(sbx_mgr *m, const sbx_config *cfg, json_t *req_route, sbx_mgr_reply *rp) {
        json_t *route = route_of(cfg->profile, req_route, rp);
        if (!route)
                return NULL;
        const char *strategy = json_string_value(json_object_get(route, "strategy")) ?: "prefer-self-hosted";
        json_t *fb = json_object_get(route, "fallback"), *c = json_object_get(route, "constraints");
        bool allow_fb = !json_is_false(json_object_get(route, "allow_fallbacks"));
        double max_cost = json_is_number(json_object_get(c, "max_cost_per_hour"))
                                  ? json_number_value(json_object_get(c, "max_cost_per_hour"))
                                  : -1;
        const char *need_iso = json_string_value(json_object_get(c, "require_isolation")),
                   *region = json_string_value(json_object_get(c, "region"));
        const char *level = sbx_level_to_string(cfg->profile->level);
        double cpus = cfg->limits.value[SBX_LIMIT_CPUS],
               gib = cfg->limits.value[SBX_LIMIT_MEMORY_MB] / 1024.0;
        json_t *reg = mgr_registry(m), *x, *hostlists = json_array();
        size_t n = 0, i;
        json_array_foreach(reg, i, x) {
                json_t *hl = mgr_hosts_of(m, json_string_value(json_object_get(x, "id")));
                n += json_array_size(hl) ? json_array_size(hl) : 1;
                json_array_append_new(hostlists, hl);
        }
        cand *cs = calloc(n ? n : 1, sizeof *cs);
        size_t at = 0;
        json_array_foreach(reg, i, x) {
                json_t *hl = json_array_get(hostlists, i);
                size_t nh = json_array_size(hl);
                for (size_t hi = 0; hi < (nh ? nh : 1); hi++) {
                        json_t *host = nh ? json_array_get(hl, hi) : NULL;
                        cand *k = &cs[at++];
                        k->id = json_string_value(json_object_get(x, "id"));
                        k->kind = json_string_value(json_object_get(x, "kind"));
                        k->host = json_string_value(json_object_get(host, "id"));
                        json_t *p = json_object_get(x, "pricing"),
                               *caps = json_object_get(x, "capabilities");
#define PRICE(key) json_number_value(json_object_get(p, key))
                        k->cost = PRICE("per_second") * 3600 + PRICE("per_cpu_second") * cpus * 3600 +
                                  PRICE("per_gib_second") * gib * 3600 + PRICE("per_creation");
#undef PRICE
                        k->cost = round(k->cost * 1e6) / 1e6;
                        /* lowest-latency's measure: provision, then the first exec, as measured */
                        double prov = latency_in(latency, k->id), first = latency_in(exec_latency, k->id);
                        k->lat = prov >= 0 ? prov + (first >= 0 ? first : 0) : -1;
                        k->fb_pos = k->pref_pos = -1;
                        json_t *f;
                        size_t j;
                        json_array_foreach(fb, j,
                                f) if (k->fb_pos < 0 && streq_ptr(json_string_value(f), k->id)) k->fb_pos =
                                (int) j;
                        /* the profile's placement: host or extension names, preferred first */
                        j = 0;
                        for (char **pp = cfg->profile->placement_prefer; pp && *pp && k->pref_pos < 0;
                                pp++, j++)
                                if (streq(*pp, k->id) || streq_ptr(k->host, *pp))
                                        k->pref_pos = (int) j;
                        char why[600] = "";
                        json_t *h = json_object_get(x, "health"), *hh = json_object_get(host, "health");
                        if (!json_is_true(json_object_get(h, "ok")))
                                snprintf(why, sizeof why, "unhealthy: %s",
                                        json_string_value(json_object_get(h, "reason"))
                                                ?: "it does not answer");
                        else if (host && !json_is_true(json_object_get(hh, "ok")))
                                snprintf(why, sizeof why, "host %s unhealthy: %s", k->host,
                                        json_string_value(json_object_get(hh, "reason"))
                                                ?: "it does not answer");
                        else if (streq(strategy, "explicit") && k->fb_pos < 0)
                                snprintf(why, sizeof why, "not in the explicit route (route.fallback)");
                        else if (!mgr_json_has_str(json_object_get(caps, "isolation"), level))
                                snprintf(why, sizeof why, "cannot give the profile's isolation level (%s)",
                                        level);
                        else if (need_iso && !mgr_json_has_str(json_object_get(caps, "isolation"), need_iso))
                                snprintf(why, sizeof why, "constraint require_isolation %s: it offers none",
                                        need_iso);
                        else if (region && !mgr_json_has_str(json_object_get(caps, "regions"), region))
                                snprintf(why, sizeof why, "constraint region %s: not one of its regions",
                                        region);
                        else if (max_cost >= 0 && k->cost > max_cost)
                                snprintf(why, sizeof why, "constraint max_cost_per_hour %g: it costs %g",
                                        max_cost, k->cost);
                        k->ok = !why[0];
                        k->j = json_pack("{s:s, s:o, s:b, s:o, s:f, s:o, s:o, s:o}", "extension", k->id,
                                "host", k->host ? json_string(k->host) : json_null(), "ok", k->ok, "why_not",
                                why[0] ? json_string(why) : json_null(), "cost_per_hour", k->cost,
                                "latency_ms", k->lat >= 0 ? json_real(round(k->lat * 10) / 10) : json_null(),
                                "provision_ms", prov >= 0 ? json_real(round(prov * 10) / 10) : json_null(),
                                "first_exec_ms",
                                first >= 0 ? json_real(round(first * 10) / 10) : json_null());
                }
        }
        qsort_r(cs, n, sizeof *cs, cmp_cand, (void *) strategy);
        /* route.fallback (not explicit): after the first choice, the listed fallbacks in their
         * order, then the others in the strategy's */
        if (!streq(strategy, "explicit") && n > 2) {
                size_t ok_n = 0;
                while (ok_n < n && cs[ok_n].ok)
                        ok_n++;
                for (size_t a = 1; a < ok_n; a++) /* a stable insertion by fb_pos, listed first */
                        for (size_t b = a; b > 1; b--) {
                                cand *lo = &cs[b - 1], *hi = &cs[b];
                                bool swap = hi->fb_pos >= 0 && (lo->fb_pos < 0 || hi->fb_pos < lo->fb_pos);
                                if (!swap)
                                        break;
                                cand t = *lo;
                                *lo = *hi;
                                *hi = t;
                        }
        }
        json_t *out = json_array();
        const char *chosen = NULL, *chosen_host = NULL;
        for (i = 0; i < n; i++) {
                if (cs[i].ok && !chosen) {
                        chosen = cs[i].id;
                        chosen_host = cs[i].host;
                } else if (cs[i].ok && !allow_fb) {
                        json_object_set_new(cs[i].j, "ok", json_false());
                        json_object_set_new(cs[i].j, "why_not", json_string("allow_fallbacks is false"));
                }
                json_array_append_new(out, cs[i].j);
        }
        json_t *res = json_pack("{s:s, s:s?, s:s?, s:b, s:o}", "strategy", strategy, "chosen", chosen,
                "chosen_host", chosen_host, "allow_fallbacks", allow_fb, "candidates", out);
        json_object_set_new(res, "constraints", c ? json_incref(c) : json_object());
        free(cs);
        json_decref(hostlists);
        json_decref(reg);
        json_decref(route);
        return res;
}
