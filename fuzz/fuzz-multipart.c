/* fuzz-multipart.c — libFuzzer target: cx_multipart() (src/daemon/compat/compat.c), the
 * multipart/form-data parser of the compat surfaces' uploads (E2B envd's POST /files, Daytona's
 * toolbox bulk-upload), which reads bodies from network clients.
 *
 * Input: the first line is the Content-Type header (its boundary parameter fuzzed with the rest),
 * what follows the newline is the body. The body is handed over in a buffer of its exact size,
 * with no NUL after it (as the parser must not rely on one), so that a read past it is caught.
 * Checked: every part lies inside the body, its name and filename are terminated, and parsing
 * with fewer slots gives the same first parts. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compat/compat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *body, size_t len, const cx_part *parts, int n, size_t max) {
        if (n > (int) max)
                abort();
        for (int i = 0; i < n; i++) {
                const cx_part *p = &parts[i];
                if (!memchr(p->name, 0, sizeof p->name) || !memchr(p->filename, 0, sizeof p->filename))
                        abort();
                if (p->len > len || p->data < body || p->data > body + len - p->len)
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t cl = nl ? (size_t) (nl - data) : size;
        size_t off = nl ? cl + 1 : size;
        char *ctype = malloc(cl + 1);
        char *body = malloc(size - off ? size - off : 1);
        cx_part *parts = calloc(64, sizeof *parts), *few = calloc(2, sizeof *few);
        if (!ctype || !body || !parts || !few)
                goto out;
        memcpy(ctype, data, cl);
        ctype[cl] = 0;
        if (cl && ctype[cl - 1] == '\r')
                ctype[cl - 1] = 0;
        size_t len = size - off;
        memcpy(body, data + off, len);

        int n = cx_multipart(ctype, body, len, parts, 64);
        if (n < 0 && n != -EINVAL)
                abort();
        if (n >= 0)
                check(body, len, parts, n, 64);
        int k = cx_multipart(ctype, body, len, few, 2);
        if (k < 0 && n >= 0)
                abort(); /* what fails within two parts fails with more slots too */
        if (k >= 0) {
                check(body, len, few, k, 2);
                /* the first parts do not depend on how many slots there are */
                if (n >= 0)
                        for (int i = 0; i < k && i < n; i++)
                                if (few[i].data != parts[i].data || few[i].len != parts[i].len ||
                                        strcmp(few[i].name, parts[i].name) != 0 ||
                                        strcmp(few[i].filename, parts[i].filename) != 0)
                                        abort();
        }
out:
        free(ctype);
        free(body);
        free(parts);
        free(few);
        return 0;
}
