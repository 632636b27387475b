/* strv.h — NULL-terminated string vectors (char **), owned: free with strv_free(). */
#pragma once

#include "macro.h"

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l);
/* Append a copy of value; -ENOMEM on failure (the vector is unchanged). */
int strv_extend(char ***l, const char *value);
/* Append, taking ownership of value (freed on failure). */
int strv_consume(char ***l, char *value);
char **strv_copy(char *const *l);
bool strv_contains(char *const *l, const char *s);
#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)
