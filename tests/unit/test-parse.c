/* test-parse.c — sbx_parse_duration() and sbx_parse_number(): what they accept, and that
 * garbage, signs, NaN, infinities, hex and overflow are refused. */
#include <locale.h>
#include <math.h>
#include <string.h>

#include "policy/policy.h"
#include "tap.h"

static void number_ok(const char *s, double want) {
        double v = -1;
        int r = sbx_parse_number(s, &v);
        if (!ok(r == 0 && v == want, "number \"%s\" = %g", s, want))
                diag("r=%d v=%.17g", r, v);
}

static void number_bad(const char *s) {
        double v = 12345;
        int r = sbx_parse_number(s, &v);
        ok(r == -EINVAL && v == 12345, "number \"%s\" refused, output untouched", s);
}

static void duration_ok(const char *s, double want) {
        double v = -1;
        int r = sbx_parse_duration(s, &v);
        if (!ok(r == 0 && fabs(v - want) < 1e-9, "duration \"%s\" = %g s", s, want))
                diag("r=%d v=%.17g", r, v);
}

static void duration_bad(const char *s) {
        double v = 12345;
        int r = sbx_parse_duration(s, &v);
        ok(r == -EINVAL && v == 12345, "duration \"%s\" refused", s);
}

int main(void) {
        number_ok("0", 0);
        number_ok("45", 45);
        number_ok("007", 7);
        number_ok("1.5", 1.5);
        number_ok(".5", 0.5);
        number_ok("5.", 5);
        number_ok("1e3", 1000);
        number_ok("2.5E-1", 0.25);
        number_ok("9007199254740992", 9007199254740992.0);
        number_bad("");
        number_bad(NULL);
        number_bad("-1");
        number_bad("+1");
        number_bad(" 1");
        number_bad("1 ");
        number_bad("1,5");
        number_bad("0x10");
        number_bad("1e");
        number_bad("1e+");
        number_bad(".");
        number_bad("nan");
        number_bad("NaN");
        number_bad("inf");
        number_bad("infinity");
        number_bad(".inf");
        number_bad("1e400");
        number_bad("9007199254740993000");
        number_bad("12abc");
        number_bad("1.2.3");

        duration_ok("30", 30);
        duration_ok("0.25", 0.25);
        duration_ok("30s", 30);
        duration_ok("90m", 5400);
        duration_ok("4h", 14400);
        duration_ok("1.5h", 5400);
        duration_ok("2d", 172800);
        duration_ok("250ms", 0.25);
        duration_ok("1h30m", 5400);
        duration_ok("1d12h", 129600);
        duration_ok("0s", 0);
        duration_bad("");
        duration_bad(NULL);
        duration_bad("-5s");
        duration_bad("5 s");
        duration_bad("5S");
        duration_bad("5y");
        duration_bad("h");
        duration_bad("1h30");
        duration_bad("s5");
        duration_bad("nan");
        duration_bad("infs");
        duration_bad("1e400s");
        duration_bad("99999999999999999d");
        duration_bad("1s1s1s1s1s1s1s1s1s");

        /* the decimal point is '.' whatever the locale says */
        if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
                number_ok("1.5", 1.5);
                duration_ok("1.5h", 5400);
                setlocale(LC_NUMERIC, "C");
        } else
                skip(2, "no locale with a decimal comma installed");
        return done_testing();
}
