/* parse.c — numbers and durations as written in profiles, policy files and flags. Strict:
 * plain decimal only (no hex, no sign, no inf/nan, no spaces), finite, within 2^53. */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#define NUMBER_MAX 9007199254740992.0 /* 2^53: integers stay exact */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void) {
        c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
}

/* Parse one unsigned decimal number ("12", "1.5", ".5", "1e3") at *p; advance *p. */
static int parse_decimal(const char **p, double *ret) {
        const char *s = *p, *q = s;
        _cleanup_free_ char *copy = NULL;
        bool digits = false;
        char *end;
        double v;

        while (*q >= '0' && *q <= '9')
                q++, digits = true;
        if (*q == '.') {
                q++;
                while (*q >= '0' && *q <= '9')
                        q++, digits = true;
        }
        if (!digits)
                return -EINVAL;
        if (*q == 'e' || *q == 'E') {
                const char *x = q + 1;
                if (*x == '+' || *x == '-')
                        x++;
                if (*x < '0' || *x > '9')
                        return -EINVAL;
                while (*x >= '0' && *x <= '9')
                        x++;
                q = x;
        }
        /* strtod reads only the span validated above (so never hex or "inf"), and in the C
         * locale, whatever the program's LC_NUMERIC says about the decimal point. */
        copy = strndup(s, (size_t) (q - s));
        if (!copy)
                return -ENOMEM;
        (void) pthread_once(&c_locale_once, c_locale_init);
        if (c_locale == (locale_t) 0)
                return -ENOMEM;
        errno = 0;
        v = strtod_l(copy, &end, c_locale);
        if (*end != 0 || errno == ERANGE || !isfinite(v) || v < 0 || v > NUMBER_MAX)
                return -EINVAL;
        *ret = v;
        *p = q;
        return 0;
}

int sbx_parse_number(const char *s, double *ret) {
        double v;
        int r;

        if (isempty(s))
                return -EINVAL;
        r = parse_decimal(&s, &v);
        if (r < 0)
                return r;
        if (*s != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static double unit_factor(const char **p) {
        static const struct {
                const char *suffix;
                double factor;
        } units[] = {
                /* longest first: "ms" before "m" */
                {"ms", 0.001},
                {"s", 1},
                {"m", 60},
                {"h", 3600},
                {"d", 86400},
        };
        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                size_t n = strlen(units[i].suffix);
                if (strncmp(*p, units[i].suffix, n) == 0) {
                        *p += n;
                        return units[i].factor;
                }
        }
        return 0;
}

int sbx_parse_duration(const char *s, double *ret_seconds) {
        double total = 0;
        unsigned parts = 0;

        if (isempty(s))
                return -EINVAL;
        /* A bare number is seconds; otherwise one or more NUMBER UNIT parts: "1h30m". */
        while (*s) {
                double v, f;
                int r = parse_decimal(&s, &v);
                if (r < 0)
                        return r;
                if (*s == 0 && parts == 0) {
                        total = v;
                        break;
                }
                f = unit_factor(&s);
                if (f == 0)
                        return -EINVAL;
                total += v * f;
                if (!isfinite(total) || total > NUMBER_MAX)
                        return -EINVAL;
                if (++parts > 8)
                        return -EINVAL;
        }
        *ret_seconds = total;
        return 0;
}
