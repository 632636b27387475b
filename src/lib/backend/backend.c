/* backend.c — the backend registry and selection (explicit, or auto over the policy's list). */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

static const sbx_backend *const backends[_SBX_BACKEND_MAX] = {
        [SBX_BACKEND_NATIVE] = &sbx_backend_native,
        [SBX_BACKEND_LANDLOCK] = &sbx_backend_landlock,
};

const sbx_backend *sbx_backend_get(sbx_backend_id id) {
        if (id < 0 || id >= _SBX_BACKEND_MAX)
                return NULL;
        return backends[id];
}

/* Why `id` cannot run cfg here, or NULL buffer untouched and 0 if it can. */
static int check(const sbx_config *cfg, sbx_backend_id id, char *why, size_t size) {
        const sbx_backend *b = sbx_backend_get(id);
        if (!b || !b->implemented) {
                snprintf(why, size, "backend %s is not implemented in this build of sandboxer", sbx_backend_to_string(id));
                return -EOPNOTSUPP;
        }
        if (b->level < cfg->profile->level) {
                snprintf(why, size, "backend %s provides isolation level %s, below the profile's isolation.level %s",
                         sbx_backend_to_string(id), sbx_level_to_string(b->level), sbx_level_to_string(cfg->profile->level));
                return -EPERM;
        }
        if (b->probe) {
                char reason[512] = "";
                int r = b->probe(reason, sizeof reason);
                if (r < 0) {
                        snprintf(why, size, "backend %s is unavailable: %s", sbx_backend_to_string(id), reason);
                        return r;
                }
        }
        return 0;
}

bool sbx_backend_error_is_ns_refusal(const sbx_error *e) {
        return e && strcmp(e->step, "spawn: clone") == 0 &&
               (e->errnum == EPERM || e->errnum == ENOSPC || e->errnum == EUSERS || e->errnum == EACCES);
}

int sbx_backend_select(const sbx_config *cfg, const sbx_backend **ret, char **ret_note, sbx_error *e) {
        return sbx_backend_select_excluding(cfg, 0, NULL, ret, ret_note, e);
}

int sbx_backend_select_excluding(const sbx_config *cfg, unsigned exclude, const char *prior, const sbx_backend **ret,
                                 char **ret_note, sbx_error *e) {
        char why[768];
        if (cfg->backend != SBX_BACKEND_AUTO) {
                if (cfg->mode == SBX_MODE_STRICT) {
                        bool listed = false;
                        for (size_t i = 0; i < cfg->policy->n_mode_backends[SBX_MODE_STRICT]; i++)
                                listed = listed || cfg->policy->mode_backends[SBX_MODE_STRICT][i] == cfg->backend;
                        if (!listed)
                                return sbx_error_set(e, EPERM, "backend",
                                                     "backend %s is not a strict backend (policy modes.strict.backends)",
                                                     sbx_backend_to_string(cfg->backend));
                }
                int r = check(cfg, cfg->backend, why, sizeof why);
                if (r < 0)
                        return sbx_error_set(e, r, "backend", "%s", why);
                *ret = sbx_backend_get(cfg->backend);
                if (ret_note && asprintf(ret_note, "backend %s requested (%s)", sbx_backend_to_string(cfg->backend),
                                         sbx_source_to_string(cfg->backend_source)) < 0)
                        *ret_note = NULL;
                return 0;
        }

        const sbx_policy *pol = cfg->policy;
        size_t n = pol->n_mode_backends[cfg->mode];
        char skipped[2048] = "";
        if (prior)
                snprintf(skipped, sizeof skipped, "%s", prior);
        for (size_t i = 0; i < n; i++) {
                sbx_backend_id id = pol->mode_backends[cfg->mode][i];
                if (exclude & (1u << id))
                        continue;
                int r = check(cfg, id, why, sizeof why);
                if (r < 0) {
                        size_t l = strlen(skipped);
                        snprintf(skipped + l, sizeof skipped - l, "%s%s", l ? "; " : "", why);
                        continue;
                }
                *ret = sbx_backend_get(id);
                if (ret_note && asprintf(ret_note, "auto: %s is the first usable backend of modes.%s.backends%s%s",
                                         sbx_backend_to_string(id), sbx_mode_to_string(cfg->mode),
                                         skipped[0] ? "; skipped: " : "", skipped) < 0)
                        *ret_note = NULL;
                return 0;
        }
        return sbx_error_set(e, EOPNOTSUPP, "backend",
                             "no usable backend for mode %s (policy modes.%s.backends): %s", sbx_mode_to_string(cfg->mode),
                             sbx_mode_to_string(cfg->mode), skipped[0] ? skipped : "the list is empty");
}
