/* fuzz-policy.c — libFuzzer target: the policy file parser, and checking the built-in
 * profiles against whatever it accepted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static sbx_profile *profiles[8];
        static bool loaded;
        sbx_policy *pol = NULL;
        sbx_error e = {};

        if (!loaded) {
                size_t n = 0;
                for (const char *const *id = sbx_builtin_profile_ids(); *id && n < 8; id++)
                        if (sbx_profile_load(*id, &profiles[n], &e) == 0)
                                n++;
                loaded = true;
        }
        if (sbx_policy_parse((const char *) data, size, "fuzz.yaml", &pol, &e) < 0) {
                if (e.errnum == EINVAL && (e.line == 0 || e.column == 0 || !e.message[0]))
                        abort();
                return 0;
        }
        if (strlen(pol->sha256) != 64)
                abort();
        for (size_t i = 0; i < 8 && profiles[i]; i++)
                for (int m = 0; m < _SBX_MODE_MAX; m++)
                        (void) sbx_policy_check_profile(pol, profiles[i], (sbx_mode) m, &e);
        sbx_policy_free(pol);
        return 0;
}
