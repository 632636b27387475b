/* builtin.c — the compiled-in profiles (profiles/NAME.yaml) and default policy
 * (policy/default.yaml); builtin-data.h is generated from those files by meson. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/builtin-data.h"
#include "policy/policy-internal.h"

static const struct {
        const char *id;
        const char *text;
        size_t len;
} builtin_profiles[] = {
#define B(id, text)                                                                                         \
        { id, text, sizeof(text) - 1 }
        B("profile.default", SBX_BUILTIN_PROFILE_DEFAULT),
        B("profile.python", SBX_BUILTIN_PROFILE_PYTHON),
        B("profile.python-nofork", SBX_BUILTIN_PROFILE_PYTHON_NOFORK),
        B("profile.skill", SBX_BUILTIN_PROFILE_SKILL),
        B("profile.build", SBX_BUILTIN_PROFILE_BUILD),
        B("profile.agent-dev", SBX_BUILTIN_PROFILE_AGENT_DEV),
        B("profile.e2b", SBX_BUILTIN_PROFILE_E2B),
        B("profile.daytona", SBX_BUILTIN_PROFILE_DAYTONA),
#undef B
};

static const char *const builtin_ids[] = {
        "profile.default",
        "profile.python",
        "profile.python-nofork",
        "profile.skill",
        "profile.build",
        "profile.agent-dev",
        "profile.e2b",
        "profile.daytona",
        NULL,
};

const char *const *sbx_builtin_profile_ids(void) {
        return builtin_ids;
}

const char *builtin_profile_text_len(const char *id, size_t *ret_len) {
        if (!id)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(builtin_profiles); i++)
                if (streq(builtin_profiles[i].id, id)) {
                        if (ret_len)
                                *ret_len = builtin_profiles[i].len;
                        return builtin_profiles[i].text;
                }
        return NULL;
}

const char *sbx_builtin_profile_text(const char *id) {
        return builtin_profile_text_len(id, NULL);
}

const char *builtin_policy_text_len(size_t *ret_len) {
        static const char text[] = SBX_BUILTIN_POLICY;
        if (ret_len)
                *ret_len = sizeof text - 1;
        return text;
}

/* ---- the snapshot: the built-ins as parsed at build time (snapshot-gen.c) ---- */
#if SBX_SNAPSHOT_GEN
int builtin_profile_snapshot(const char *id, sbx_profile **ret) {
        (void) id, (void) ret;
        return -ENOENT;
}

int builtin_policy_snapshot(sbx_policy **ret) {
        (void) ret;
        return -ENOENT;
}
#else
#define SNAP(x)                                                                                             \
        do {                                                                                                \
                if ((x) < 0)                                                                                \
                        return -ENOMEM;                                                                     \
        } while (0)

static int snap_str(char **dst, const char *s) {
        *dst = strdup(s);
        return *dst ? 0 : -ENOMEM;
}

static int snap_strv(char ***dst, const char *const *v) {
        size_t n = 0;
        while (v[n])
                n++;
        char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        *dst = l; /* the profile owns it from here, also half filled */
        for (size_t i = 0; i < n; i++)
                if (!(l[i] = strdup(v[i])))
                        return -ENOMEM;
        return 0;
}

static int snap_env(sbx_profile *p, const char *name, const char *value) {
        sbx_env_var *grown = realloc(p->env, (p->n_env + 1) * sizeof(sbx_env_var));
        if (!grown)
                return -ENOMEM;
        p->env = grown;
        grown[p->n_env] = (sbx_env_var){.name = strdup(name), .value = strdup(value)};
        p->n_env++;
        return grown[p->n_env - 1].name && grown[p->n_env - 1].value ? 0 : -ENOMEM;
}

#include "policy/builtin-snapshot.h"

int builtin_profile_snapshot(const char *id, sbx_profile **ret) {
        for (size_t i = 0; i < ELEMENTSOF(snap_profiles); i++)
                if (streq(snap_profiles[i].id, id)) {
                        _cleanup_(sbx_profile_freep) sbx_profile *p = calloc(1, sizeof(sbx_profile));
                        if (!p || snap_profiles[i].fill(p) < 0)
                                return -ENOMEM;
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        return -ENOENT;
}

int builtin_policy_snapshot(sbx_policy **ret) {
        _cleanup_(sbx_policy_freep) sbx_policy *p = calloc(1, sizeof(sbx_policy));
        if (!p || snap_policy_fill(p) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}
#endif
