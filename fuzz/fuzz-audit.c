/* fuzz-audit.c — libFuzzer target: the audit record parser (netlink framing, the event serial,
 * key=value fields), fed what a hostile or broken kernel reply could hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isolate/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* aligned, as a recv() buffer is */
        uint64_t *copy = malloc((size / 8 + 1) * 8);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        const void *p = copy;
        size_t len = size;
        sbx_audit_msg m;
        static const char *const keys[] = {"domain", "blockers", "path", "pid", "status", "syscall", "dest"};
        for (int guard = 0; guard < 4096 && sbx_audit_next(&p, &len, &m) > 0; guard++) {
                if (len > size)
                        abort(); /* never advances past the end */
                if (m.text && (m.text < (const char *) copy || m.text + m.len > (const char *) copy + size))
                        abort(); /* the text lies within the datagram */
                for (size_t k = 0; m.text && k < sizeof keys / sizeof keys[0]; k++) {
                        char v[64];
                        if (sbx_audit_field(m.text, m.len, keys[k], k == 2, v, sizeof v) &&
                                strlen(v) >= sizeof v)
                                abort(); /* always terminated within the buffer */
                }
                (void) sbx_audit_backlog(m.payload, m.payload_len);
        }
        free(copy);
        return 0;
}
