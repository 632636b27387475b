/* test-compat-text.c — the compat surfaces' text helpers: output bytes made JSON text (cut
 * UTF-8 sequences held back, invalid bytes as U+FFFD) and random ids. */
#include <string.h>

#include "daemon/compat/compat.h"
#include "tap.h"

static void text(
        const char *in, size_t n, bool final, const char *want, size_t want_used, const char *name) {
        size_t used = 99;
        json_t *j = cx_utf8_text(in, n, final, &used);
        is_str(json_string_value(j), want, "%s: the text", name);
        is_int((long) used, (long) want_used, "%s: the bytes taken", name);
        json_decref(j);
}

int main(void) {
        text("abc", 3, false, "abc", 3, "ASCII");
        text("", 0, true, "", 0, "nothing");
        text("h\xc3\xa9", 3, false, "h\xc3\xa9", 3, "a whole two-byte sequence");
        text("h\xc3", 2, false, "h", 1, "a sequence cut short waits for its end");
        text("h\xc3", 2, true, "h\xef\xbf\xbd", 2, "…unless it is the last of the output");
        text("\xe2\x82", 2, false, "", 0, "three-byte start, cut short");
        text("\xf0\x9f\x98\x80!", 5, false, "\xf0\x9f\x98\x80!", 5, "a four-byte sequence");
        text("a\xffz", 3, false, "a\xef\xbf\xbdz", 3, "an invalid byte is U+FFFD");
        text("\xc0\xaf", 2, false, "\xef\xbf\xbd\xef\xbf\xbd", 2, "an overlong form is two invalid bytes");
        text("\xc3(", 2, false, "\xef\xbf\xbd(", 2, "a start not followed by a continuation");
        text("a\0b", 3, false, "a", 3, "NUL stays in the JSON string (jansson keeps its length)");

        char a[33], b[33];
        ok(cx_random_hex(a, 16) && cx_random_hex(b, 16), "random ids");
        is_int((long) strlen(a), 32, "32 hex digits");
        ok(strspn(a, "0123456789abcdef") == 32, "lower-case hex only");
        ok(strcmp(a, b) != 0, "two ids differ");
        char big[200];
        ok(!cx_random_hex(big, 65) && big[0] == 0, "more than 64 bytes is refused, leaving an empty string");
        return done_testing();
}
