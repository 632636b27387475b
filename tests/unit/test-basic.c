/* test-basic.c — the libc-only helpers of src/lib/basic: base64. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "tap.h"

static void roundtrip(const char *data, size_t n, const char *want) {
        char *e = sbx_base64_encode(data, n), *d = NULL;
        size_t dn = 0;
        is_str(e, want, "encode %zu bytes", n);
        ok(sbx_base64_decode(e, strlen(e), false, &d, &dn) == 0 && dn == n && memcmp(d, data, n) == 0,
                "decode back %zu bytes", n);
        free(e);
        free(d);
}

int main(void) {
        roundtrip("", 0, "");
        roundtrip("f", 1, "Zg==");
        roundtrip("fo", 2, "Zm8=");
        roundtrip("foo", 3, "Zm9v");
        roundtrip("\0\1\xff\xfe", 4, "AAH//g==");

        char *d = NULL;
        size_t n = 0;
        ok(sbx_base64_decode("Zm9v\nYmFy\r\n", 11, false, &d, &n) == 0 && n == 6 &&
                        memcmp(d, "foobar", 6) == 0,
                "line breaks are ignored");
        free(d);
        d = NULL;
        is_int(sbx_base64_decode("Zm9v!", 5, false, &d, &n), -EINVAL,
                "a character outside the alphabet: -EINVAL");
        is_int(sbx_base64_decode("-_8", 3, false, &d, &n), -EINVAL, "URL alphabet refused unless asked for");
        ok(sbx_base64_decode("-_8", 3, true, &d, &n) == 0 && n == 2 && (unsigned char) d[0] == 0xfb &&
                        (unsigned char) d[1] == 0xff,
                "URL alphabet accepted when asked for");
        free(d);
        d = NULL;
        ok(sbx_base64_decode("Zg", 2, false, &d, &n) == 0 && n == 1 && d[0] == 'f', "padding is optional");
        free(d);
        return done_testing();
}
