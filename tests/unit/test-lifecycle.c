/* test-lifecycle.c — the sandbox lifecycle as a table: every (from, to) pair of states checked
 * against the transitions DESIGN.md's lifecycle allows, the names both ways, and the error an
 * illegal transition gets. */
#include <errno.h>
#include <string.h>

#include "daemon/lifecycle.h"
#include "tap.h"

#define R SBX_STATE_REQUESTED
#define P SBX_STATE_PROVISIONING
#define Y SBX_STATE_READY
#define A SBX_STATE_ACTIVE
#define D SBX_STATE_DESTROYING
#define X SBX_STATE_DESTROYED
#define F SBX_STATE_FAILED
#define E SBX_STATE_EXPIRED
#define Z SBX_STATE_PAUSED

/* written out independently of lifecycle.c's table: a change there must change this too */
static const struct {
        sbx_state from, to;
        const char *why;
} legal[] = {
        {R, P, "create: the supervisor is being started"},
        {R, Y, "re-adopted after a restart during create"},
        {R, F, "its supervisor was lost during a restart"},
        {P, Y, "provisioned"},
        {P, F, "it did not start"},
        {Y, Y, "re-adopted after a restart (reason readopted)"},
        {Y, A, "an exec started"},
        {A, Y, "the last exec ended"},
        {Y, D, "destroy or recreate"},
        {A, D, "destroy with execs running"},
        {Y, E, "ttl or idle expiry"},
        {A, E, "ttl expiry with execs running"},
        {Y, F, "supervisor lost"},
        {A, F, "supervisor lost during an exec"},
        {D, X, "destroyed"},
        {D, P, "recreate: provisioned again"},
        {F, D, "a failed sandbox is cleaned up"},
        {F, X, "a sandbox that did not start has nothing to clean up"},
        {E, D, "an expired sandbox is cleaned up"},
        {Y, Z, "pause"},
        {A, Z, "pause with execs running (their clocks held)"},
        {Z, Y, "resume"},
        {Z, Z, "re-adopted frozen after a restart (reason readopted)"},
        {Z, D, "destroy a paused sandbox"},
        {Z, F, "supervisor lost while paused"},
        {Z, E, "paused longer than ttl.paused"},
};

static bool is_legal(sbx_state from, sbx_state to) {
        for (size_t i = 0; i < sizeof legal / sizeof legal[0]; i++)
                if (legal[i].from == from && legal[i].to == to)
                        return true;
        return false;
}

int main(void) {
        static const char *const names[] = {"requested", "provisioning", "ready", "active", "destroying",
                "destroyed", "failed", "expired", "paused"};
        is_int(_SBX_STATE_MAX, 9, "nine states");
        for (int s = 0; s < _SBX_STATE_MAX; s++) {
                is_str(sbx_state_to_string((sbx_state) s), names[s], "state %d is named %s", s, names[s]);
                is_int(sbx_state_from_string(names[s]), s, "%s parses back", names[s]);
        }
        is_int(sbx_state_from_string("stopped"), _SBX_STATE_INVALID,
                "stopped is not a state (Daytona's word)");
        is_int(sbx_state_from_string("Ready"), _SBX_STATE_INVALID, "names are case-sensitive");
        is_int(sbx_state_from_string(""), _SBX_STATE_INVALID, "the empty string is not a state");
        is_int(sbx_state_from_string(NULL), _SBX_STATE_INVALID, "NULL is not a state");
        ok(sbx_state_to_string(_SBX_STATE_MAX) == NULL && sbx_state_to_string(_SBX_STATE_INVALID) == NULL,
                "no name outside the enum");

        /* the whole table: 81 pairs */
        unsigned n_legal = 0;
        for (int f = 0; f < _SBX_STATE_MAX; f++)
                for (int t = 0; t < _SBX_STATE_MAX; t++) {
                        bool want = is_legal((sbx_state) f, (sbx_state) t);
                        n_legal += want;
                        sbx_error e = {0};
                        int r = sbx_state_transition_check((sbx_state) f, (sbx_state) t, &e);
                        if (want)
                                ok(r == 0 && sbx_state_transition_ok((sbx_state) f, (sbx_state) t),
                                        "%s → %s allowed", names[f], names[t]);
                        else
                                ok(r == -EINVAL && !sbx_state_transition_ok((sbx_state) f, (sbx_state) t) &&
                                                strstr(e.message, names[f]) && strstr(e.message, names[t]),
                                        "%s → %s refused, naming both", names[f], names[t]);
                }
        is_int(n_legal, sizeof legal / sizeof legal[0], "every listed transition is a pair of states");

        sbx_error e = {0};
        (void) sbx_state_transition_check(X, Y, &e);
        is_str(e.message, "a sandbox cannot go from destroyed to ready (from destroyed: none, it is final)",
                "destroyed is final, and the error says so");
        (void) sbx_state_transition_check(Y, P, &e);
        is_str(e.message,
                "a sandbox cannot go from ready to provisioning (from ready: ready, active, destroying, "
                "failed, expired, paused)",
                "the error lists where the state may go");
        is_str(e.step, "lifecycle", "step lifecycle");
        ok(sbx_state_transition_check(_SBX_STATE_INVALID, Y, &e) == -EINVAL &&
                        !sbx_state_transition_ok(Y, _SBX_STATE_MAX),
                "values outside the enum are refused");

        for (int s = 0; s < _SBX_STATE_MAX; s++) {
                is_int(sbx_state_usable((sbx_state) s), s == Y || s == A, "%s usable: %s", names[s],
                        s == Y || s == A ? "yes" : "no");
                is_int(sbx_state_ending((sbx_state) s), s == D || s == X || s == F || s == E, "%s ending",
                        names[s]);
        }
        return done_testing();
}
