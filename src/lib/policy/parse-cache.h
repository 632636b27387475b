/* parse-cache.h — policy and profile files as they parsed, kept for the next runs
 * (parse-cache.c says what an entry holds and what keys it). Internal to src/lib/policy. */
#pragma once

#include <stddef.h>

#include "policy/policy.h"

typedef enum sbx_parse_cache_kind {
        SBX_PARSE_CACHE_POLICY, /* sbx_policy_parse() of a file's text */
        SBX_PARSE_CACHE_PROFILE, /* sbx_profile_parse() of a file's text (extends not resolved) */
        _SBX_PARSE_CACHE_KIND_MAX,
} sbx_parse_cache_kind;

/* What TEXT (a file's bytes, len) named NAME parsed into, from the cache: 0 with *ret (an
 * sbx_policy or sbx_profile of our own), or -errno (not cached, not usable: parse it). */
int sbx_parse_cache_load(sbx_parse_cache_kind k, const char *text, size_t len, const char *name, void **ret);

/* Keep what TEXT parsed into (obj: an sbx_policy or sbx_profile) for the next runs. Best effort:
 * nothing is said when it cannot be kept. */
void sbx_parse_cache_store(
        sbx_parse_cache_kind k, const char *text, size_t len, const char *name, const void *obj);

/* The same entry as bytes (what the cache keeps): an object encoded into a malloc'ed buffer, and
 * decoded back into an object of our own. This build's layout: the bytes are for the same build
 * (the cache's key, or the control plane handing its supervisor what it resolved). Decoding checks
 * the digest and every bound: -EBADMSG for bytes that are not such an entry. */
int sbx_parse_cache_encode(sbx_parse_cache_kind k, const void *obj, char **ret, size_t *ret_len);
int sbx_parse_cache_decode(sbx_parse_cache_kind k, const char *data, size_t n, void **ret);
