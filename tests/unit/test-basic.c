/* test-basic.c — the libc-only helpers of src/lib/basic: base64, error wrapping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/error.h"
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

static int load_inner(sbx_error *e) {
        return sbx_error_set(e, ENOENT, "profile: open", "no profile named %s", "profile.x");
}

static int load_outer(sbx_error *e) {
        int r = load_inner(e);
        return r < 0 ? sbx_error_wrap(e, r, "warm pool %s", "profile.x") : r;
}

static void test_error_wrap(void) {
        sbx_error e = {0};
        char buf[1024];
        is_int(load_outer(&e), -ENOENT, "wrap returns the callee's errno");
        is_str(e.message, "warm pool profile.x: no profile named profile.x", "wrap prefixes the context");
        is_str(e.step, "profile: open", "wrap keeps the step");
        is_int(sbx_error_wrap(&e, -ENOENT, "serve"), -ENOENT, "wrapped twice");
        is_str(sbx_error_format(&e, buf, sizeof buf),
                "serve: warm pool profile.x: no profile named profile.x", "contexts nest outermost first");

        sbx_error unset = {0};
        is_int(sbx_error_wrap(&unset, -EACCES, "open %s", "/etc/x"), -EACCES, "callee left *e unset");
        is_int(unset.errnum, EACCES, "errno taken from r");
        is_str(unset.message, "open /etc/x: Permission denied", "message from strerror");

        is_int(sbx_error_wrap(NULL, -EPERM, "x"), -EPERM, "NULL error: r passes through");
        is_int(sbx_error_wrap(&unset, 0, "x"), -EIO, "a non-negative r becomes -EIO");

        sbx_error at = {0};
        (void) sbx_error_set_at(&at, EINVAL, "p.yaml", 3, 7, "unknown key %s", "foo");
        (void) sbx_error_wrap(&at, -EINVAL, "profile p");
        is_str(sbx_error_format(&at, buf, sizeof buf), "p.yaml:3:7: profile p: unknown key foo",
                "file position kept");

        sbx_error big = {0};
        char longmsg[2000];
        memset(longmsg, 'm', sizeof longmsg - 1);
        longmsg[sizeof longmsg - 1] = 0;
        (void) sbx_error_set(&big, EIO, "x", "%s", longmsg);
        (void) sbx_error_wrap(&big, -EIO, "context");
        ok(strncmp(big.message, "context: mmm", 12) == 0 && strlen(big.message) == sizeof big.message - 1,
                "a long message loses its tail, not the context");
}

int main(void) {
        test_error_wrap();
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
