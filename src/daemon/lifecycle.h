/* lifecycle.h — a sandbox's lifecycle states and the transitions between them.
 *
 *   requested → provisioning → ready ⇄ active
 *   ready | active → destroying | expired | failed;  expired | failed → destroying → destroyed
 *   destroying → provisioning (a recreate);  provisioning → failed → destroyed (it did not start)
 *   requested | provisioning | ready | active → ready (re-adopted by a restarted server: one of
 *   the two transitions to itself, recorded for its reason `readopted`)
 *   ready | active → paused (its processes frozen) → ready (resumed) | destroying | failed |
 *   expired (paused longer than the profile's ttl.paused); paused → paused (re-adopted frozen)
 *
 * Each state is named in the API, the store and the events by its string (DESIGN.md). A new
 * state is one enum value, one name and its row in the table in lifecycle.c; the unit test walks
 * the whole table. */
#pragma once

#include <stdbool.h>

#include "basic/error.h"

typedef enum sbx_state {
        SBX_STATE_REQUESTED,
        SBX_STATE_PROVISIONING,
        SBX_STATE_READY,
        SBX_STATE_ACTIVE,
        SBX_STATE_DESTROYING,
        SBX_STATE_DESTROYED,
        SBX_STATE_FAILED,
        SBX_STATE_EXPIRED,
        SBX_STATE_PAUSED,
        _SBX_STATE_MAX,
        _SBX_STATE_INVALID = -1,
} sbx_state;

/* "ready" for SBX_STATE_READY; NULL for a value outside the enum. */
const char *sbx_state_to_string(sbx_state s);
/* The state a name denotes; _SBX_STATE_INVALID for NULL or any other string. */
sbx_state sbx_state_from_string(const char *s);
/* Whether a sandbox may go from `from` to `to` (to itself only ready and paused, see above). */
bool sbx_state_transition_ok(sbx_state from, sbx_state to);
/* 0 when the transition is allowed; else -EINVAL with e naming both states and the ones `from`
 * may go to. */
int sbx_state_transition_check(sbx_state from, sbx_state to, sbx_error *e);
/* Takes execs, files and TTL changes (ready, active). */
bool sbx_state_usable(sbx_state s);
/* No supervisor to expect any more (destroying, destroyed, failed, expired). */
bool sbx_state_ending(sbx_state s);
