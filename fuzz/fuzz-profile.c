/* fuzz-profile.c — libFuzzer target: the profile parser (and the YAML dump of what it
 * accepts, which must parse again). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        sbx_profile *p = NULL, *q = NULL;
        sbx_error e = {};
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (sbx_profile_parse((const char *) data, size, "fuzz.yaml", &p, &e) < 0) {
                /* every refusal carries a position and a message */
                if (e.errnum == EINVAL && (e.line == 0 || e.column == 0 || !e.message[0]))
                        abort();
                return 0;
        }
        f = open_memstream(&buf, &len);
        if (!f)
                abort();
        if (sbx_profile_dump(p, false, f) < 0)
                abort();
        fclose(f);
        /* a profile that extends another is not final until merged (sbx_profile_load): only a
         * standalone one must survive the round trip */
        if (!p->extends && sbx_profile_parse(buf, len, "dump.yaml", &q, &e) < 0) {
                fprintf(stderr, "dump does not parse again: %s:%u:%u: %s\n%s\n", e.file, e.line, e.column,
                        e.message, buf);
                abort();
        }
        f = fopen("/dev/null", "we");
        if (f) {
                (void) sbx_profile_dump(p, true, f);
                fclose(f);
        }
        free(buf);
        sbx_profile_free(q);
        sbx_profile_free(p);
        return 0;
}
