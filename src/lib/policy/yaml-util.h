/* yaml-util.h — walking a libyaml document with strict types and positioned errors: every
 * error is -EINVAL with file:line:column (1-based) of the offending node in the sbx_error. */
#pragma once

#include <yaml.h>

#include "policy/policy.h"

#define YAML_MAX_INPUT (1024 * 1024) /* bytes; profiles and policies are small */
#define YAML_MAX_DEPTH 32

typedef enum ykind {
        YK_NULL,
        YK_BOOL,
        YK_NUMBER,
        YK_STRING,
        YK_LIST,
        YK_MAP,
} ykind;

typedef struct yctx {
        const char *name; /* for error positions */
        sbx_error *e;
        yaml_document_t doc;
        bool loaded;
} yctx;

/* Parse text into c->doc, refusing anchors/aliases, tags, several documents and deep
 * nesting. -EINVAL with a position on any of those or on malformed YAML. */
int yctx_load(yctx *c, const char *text, size_t len, const char *name, sbx_error *e);
void yctx_done(yctx *c);
/* The root node, or NULL for an empty document. */
yaml_node_t *yctx_root(yctx *c);

/* -EINVAL (or -errnum) at node n (or at 1:1 when n is NULL). */
int yerr(yctx *c, const yaml_node_t *n, const char *fmt, ...) _printf_(3, 4);
int yerr_errno(yctx *c, int errnum, const yaml_node_t *n, const char *fmt, ...) _printf_(4, 5);

ykind ynode_kind(const yaml_node_t *n);
/* "null", "a boolean", "a number", "a string", "a list", "a mapping". */
const char *ykind_name(ykind k);
/* What a node is, for "got ...": the scalar quoted and escaped (shortened), else its kind. */
const char *ynode_describe(const yaml_node_t *n, char *buf, size_t size);
/* The scalar's text (NUL-terminated by libyaml), or NULL if n is not a scalar. */
const char *yscalar(const yaml_node_t *n);

/* "parent.key" (or "key" at top level) into buf. */
const char *ypath(char *buf, size_t size, const char *parent, const char *key);
const char *ypath_index(char *buf, size_t size, const char *parent, size_t i);

/* Check n is a mapping whose keys are all in keys[] (no duplicates), and return the value
 * node of each key in ret_values[] (NULL when absent). n_keys ≤ 64. `where` names the
 * mapping in messages ("" for the top level). */
int ymap(yctx *c, const yaml_node_t *n, const char *where, const char *const *keys, size_t n_keys,
        yaml_node_t **ret_values);

/* Iterate a mapping with free-form string keys (env, constraints): checks keys are scalars,
 * non-duplicated. Calls fn for each pair. */
typedef int (*ymap_fn)(yctx *c, const char *key, yaml_node_t *key_node, yaml_node_t *value, const char *path,
        void *userdata);
int ymap_each(
        yctx *c, const yaml_node_t *n, const char *where, size_t max_pairs, ymap_fn fn, void *userdata);

/* Typed getters. All fail with a positioned message naming path and what was expected. */
int yget_string(yctx *c, const yaml_node_t *n, const char *path, const char *what, char **ret);
/* As yget_string, but null gives *ret = NULL. */
int yget_string_or_null(yctx *c, const yaml_node_t *n, const char *path, const char *what, char **ret);
int yget_bool(yctx *c, const yaml_node_t *n, const char *path, bool *ret);
/* An enum: from_string() maps the text, choices lists them for the message ("a | b"). */
int yget_enum(yctx *c, const yaml_node_t *n, const char *path, int (*from_string)(const char *),
        const char *choices, int *ret);
/* A plain YAML number in (0, max] (or [0, max] when allow_zero); integer when asked. `what`
 * completes "expected ..." ("a positive number of MiB"). */
int yget_number(yctx *c, const yaml_node_t *n, const char *path, const char *what, bool integer,
        bool allow_zero, double max, double *ret);
/* A duration: a number of seconds or a string such as "30s", "90m", "1.5h", "2d". */
int yget_duration(yctx *c, const yaml_node_t *n, const char *path, bool allow_zero, double max, double *ret);
/* A list of strings, each passed through check (may be NULL) which may rewrite it. */
typedef int (*ystr_check_fn)(yctx *c, const yaml_node_t *n, const char *path, char **value);
int yget_strv(yctx *c, const yaml_node_t *n, const char *path, const char *what, size_t max_items,
        ystr_check_fn check, char ***ret);

/* Closest of keys[] to s (Levenshtein distance ≤ 2), or NULL. */
const char *ysuggest(const char *s, const char *const *keys, size_t n_keys);
