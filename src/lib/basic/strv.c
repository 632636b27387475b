/* strv.c — string vector helpers. */
#include "strv.h"

#include <string.h>

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_consume(char ***l, char *value) {
        if (!value)
                return -ENOMEM;
        size_t n = strv_length(*l);
        char **c = realloc(*l, (n + 2) * sizeof(char *));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        return strv_consume(l, strdup(value));
}

char **strv_copy(char *const *l) {
        char **c = calloc(strv_length(l) + 1, sizeof(char *));
        if (!c)
                return NULL;
        size_t k = 0;
        STRV_FOREACH(s, l) {
                c[k] = strdup(*s);
                if (!c[k])
                        return strv_free(c);
                k++;
        }
        return c;
}

bool strv_contains(char *const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (streq(*i, s))
                        return true;
        return false;
}
