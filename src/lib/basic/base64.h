/* base64.h — RFC 4648 base64, libc only: exec output that is not UTF-8, stdin and secrets on the
 * wire, the compat surfaces' byte fields. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The standard alphabet with padding, NUL-terminated, newly allocated; NULL on ENOMEM. */
char *sbx_base64_encode(const void *data, size_t n);

/* Decode s[0..n): the standard alphabet (and, with url, also '-' and '_'), padding optional,
 * line breaks ignored, stopping at the first '='. The bytes (NUL-terminated, newly allocated) in
 * *ret, their count in *ret_len. -EINVAL for any other character, -ENOMEM. */
int sbx_base64_decode(const char *s, size_t n, bool url, char **ret, size_t *ret_len);
