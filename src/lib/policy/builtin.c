/* builtin.c — the compiled-in profiles (profiles/NAME.yaml) and default policy
 * (policy/default.yaml); builtin-data.h is generated from those files by meson. */
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
        B("profile.skill", SBX_BUILTIN_PROFILE_SKILL),
        B("profile.build", SBX_BUILTIN_PROFILE_BUILD),
        B("profile.agent-dev", SBX_BUILTIN_PROFILE_AGENT_DEV),
#undef B
};

static const char *const builtin_ids[] = {
        "profile.default",
        "profile.python",
        "profile.skill",
        "profile.build",
        "profile.agent-dev",
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
