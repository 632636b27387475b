/* lifecycle.c — see lifecycle.h. */
#include "daemon/lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"

static const char *const names[_SBX_STATE_MAX] = {
        [SBX_STATE_REQUESTED] = "requested",
        [SBX_STATE_PROVISIONING] = "provisioning",
        [SBX_STATE_READY] = "ready",
        [SBX_STATE_ACTIVE] = "active",
        [SBX_STATE_DESTROYING] = "destroying",
        [SBX_STATE_DESTROYED] = "destroyed",
        [SBX_STATE_FAILED] = "failed",
        [SBX_STATE_EXPIRED] = "expired",
        [SBX_STATE_PAUSED] = "paused",
};

#define TO(s) (1u << (s))
/* allowed[from]: the states `from` may go to */
static const unsigned allowed[_SBX_STATE_MAX] = {
        [SBX_STATE_REQUESTED] = TO(SBX_STATE_PROVISIONING) | TO(SBX_STATE_READY) | TO(SBX_STATE_FAILED),
        [SBX_STATE_PROVISIONING] = TO(SBX_STATE_READY) | TO(SBX_STATE_FAILED),
        [SBX_STATE_READY] = TO(SBX_STATE_READY) /* re-adopted */ | TO(SBX_STATE_ACTIVE) |
                            TO(SBX_STATE_DESTROYING) | TO(SBX_STATE_FAILED) | TO(SBX_STATE_EXPIRED) |
                            TO(SBX_STATE_PAUSED),
        [SBX_STATE_ACTIVE] = TO(SBX_STATE_READY) | TO(SBX_STATE_DESTROYING) | TO(SBX_STATE_FAILED) |
                             TO(SBX_STATE_EXPIRED) | TO(SBX_STATE_PAUSED),
        [SBX_STATE_DESTROYING] = TO(SBX_STATE_DESTROYED) | TO(SBX_STATE_PROVISIONING),
        [SBX_STATE_DESTROYED] = 0,
        [SBX_STATE_FAILED] = TO(SBX_STATE_DESTROYING) | TO(SBX_STATE_DESTROYED),
        [SBX_STATE_EXPIRED] = TO(SBX_STATE_DESTROYING),
        [SBX_STATE_PAUSED] = TO(SBX_STATE_PAUSED) /* re-adopted */ | TO(SBX_STATE_READY) |
                             TO(SBX_STATE_DESTROYING) | TO(SBX_STATE_FAILED) | TO(SBX_STATE_EXPIRED),
};
#undef TO

static bool valid(sbx_state s) {
        return s >= 0 && s < _SBX_STATE_MAX;
}

const char *sbx_state_to_string(sbx_state s) {
        return valid(s) ? names[s] : NULL;
}

sbx_state sbx_state_from_string(const char *s) {
        for (int i = 0; s && i < _SBX_STATE_MAX; i++)
                if (streq(s, names[i]))
                        return (sbx_state) i;
        return _SBX_STATE_INVALID;
}

bool sbx_state_transition_ok(sbx_state from, sbx_state to) {
        return valid(from) && valid(to) && (allowed[from] & (1u << to));
}

int sbx_state_transition_check(sbx_state from, sbx_state to, sbx_error *e) {
        if (sbx_state_transition_ok(from, to))
                return 0;
        if (!valid(from) || !valid(to))
                return sbx_error_set(
                        e, EINVAL, "lifecycle", "no such sandbox state (%d → %d)", (int) from, (int) to);
        char may[160] = "";
        size_t n = 0;
        for (int i = 0; i < _SBX_STATE_MAX; i++)
                if (allowed[from] & (1u << i)) {
                        int w = snprintf(may + n, sizeof may - n, "%s%s", n ? ", " : "", names[i]);
                        if (w < 0 || (size_t) w >= sizeof may - n)
                                break;
                        n += (size_t) w;
                }
        return sbx_error_set(e, EINVAL, "lifecycle", "a sandbox cannot go from %s to %s (from %s: %s)",
                names[from], names[to], names[from], n ? may : "none, it is final");
}

bool sbx_state_usable(sbx_state s) {
        return s == SBX_STATE_READY || s == SBX_STATE_ACTIVE;
}

bool sbx_state_ending(sbx_state s) {
        return s == SBX_STATE_DESTROYING || s == SBX_STATE_DESTROYED || s == SBX_STATE_FAILED ||
               s == SBX_STATE_EXPIRED;
}
