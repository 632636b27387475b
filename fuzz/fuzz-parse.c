/* fuzz-parse.c — libFuzzer target: the number and duration parsers, egress rules and path
 * normalisation. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        egress_rule a, b;
        double v;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = 0;
        if (sbx_parse_number(s, &v) == 0 && (!isfinite(v) || v < 0))
                abort();
        if (sbx_parse_duration(s, &v) == 0 && (!isfinite(v) || v < 0))
                abort();
        if (egress_parse(s, &a) == 0) {
                if (!egress_covers(&a, &a))
                        abort(); /* every rule covers itself */
                if (egress_parse("example.com:443", &b) == 0)
                        (void) egress_covers(&a, &b);
        }
        if (s[0] == '/') {
                char *t = strdup(s);
                if (t && path_normalize(t) == 0) {
                        /* normal form: absolute, no "//", no "/./", no trailing '/' (but "/") */
                        size_t n = strlen(t);
                        if (t[0] != '/' || strstr(t, "//") || strstr(t, "/./") || (n > 1 && t[n - 1] == '/'))
                                abort();
                        char *u = strdup(t);
                        if (u && (path_normalize(u) != 0 || strcmp(u, t) != 0))
                                abort(); /* idempotent */
                        free(u);
                }
                free(t);
        }
        free(s);
        return 0;
}
