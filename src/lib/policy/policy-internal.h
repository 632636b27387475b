/* policy-internal.h — helpers shared by the files of src/lib/policy: file reading, path and
 * egress syntax, the limits table. Not part of the library's interface. */
#pragma once

#include <netinet/in.h>

#include "policy/policy.h"
#include "policy/yaml-util.h"

#define PROFILE_MAX_FILE (1024 * 1024)
#define PROFILE_MAX_EXTENDS 8
#define DURATION_MAX_S (365.0 * 86400) /* one year */
#define SIZE_MAX_MB 1099511627776.0 /* 2^40 MiB */
#define CPUS_MAX 4096.0
#define PIDS_MAX 4194304.0 /* the kernel's PID_MAX_LIMIT */
#define LIST_MAX 1024 /* entries of any list */
#define SYSTEM_POLICY_FILE "/etc/sandboxer/policy.yaml"
#define SYSTEM_PROFILE_DIR "/etc/sandboxer/profiles"

/* Read a whole (regular) file, at most `max` bytes, NUL-terminated. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len, sbx_error *e);

/* Normalise an absolute path in place: collapse "//", drop "." and a trailing '/'.
 * -EINVAL when relative, with a ".." component or too long. */
int path_normalize(char *p);
/* Is p equal to or beneath dir (both normalised)? */
bool path_is_under(const char *p, const char *dir);

/* ystr_check_fn checkers. */
int ycheck_abs_path(yctx *c, const yaml_node_t *n, const char *path, char **value);
int ycheck_egress(yctx *c, const yaml_node_t *n, const char *path, char **value);
int ycheck_name(yctx *c, const yaml_node_t *n, const char *path, char **value);
int ycheck_word(yctx *c, const yaml_node_t *n, const char *path, char **value);

/* Parse a `limits:` mapping into l (set[] and source[] = src for each key given). */
int yparse_limits(yctx *c, const yaml_node_t *n, const char *where, sbx_source src, sbx_limits *l);
/* Check one limit value against its bounds; "what" for messages. */
const char *limit_what(sbx_limit_id l);
int limit_check_value(sbx_limit_id l, double v);

/* An egress rule, parsed: "host", "*.domain", "host:port", "10.0.0.0/8", "[::1]:443". */
typedef struct egress_rule {
        enum { EGRESS_HOST, EGRESS_WILDCARD, EGRESS_ADDR } kind;
        char host[254]; /* lower case; for WILDCARD without the "*." */
        int family; /* AF_INET / AF_INET6 for ADDR */
        unsigned char addr[16];
        unsigned prefix; /* bits; 32/128 for a single address */
        unsigned port; /* 0 = any */
} egress_rule;
int egress_parse(const char *s, egress_rule *ret);
/* Does policy rule `allowed` cover profile rule `want`? */
bool egress_covers(const egress_rule *allowed, const egress_rule *want);

/* Is name a valid environment variable name, and may a profile or flag set it? On refusal
 * returns -EINVAL/-EPERM and a reason in *ret_why. */
int env_name_check(const char *name, const char **ret_why);

/* Built-in lookups (builtin.c). */
const char *builtin_policy_text_len(size_t *ret_len);
const char *builtin_profile_text_len(const char *id, size_t *ret_len);
/* The built-ins as parsed at build time (builtin-snapshot.h): what sbx_profile_parse() and
 * sbx_policy_parse() make of the texts above, without the parse. -ENOENT for an id that is not
 * a built-in (and always in snapshot-gen itself), -ENOMEM. */
int builtin_profile_snapshot(const char *id, sbx_profile **ret);
int builtin_policy_snapshot(sbx_policy **ret);
