/* profile-internal.h — what the profile files share (profile.c: the record, its leaves and their
 * inheritance; profile-parse.c: reading one YAML profile; profile-load.c: finding profiles and
 * resolving `extends`). Not part of the library's interface. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"

/* Leaves: the unit of inheritance along `extends`. Limits inherit through limits.set[]. */
typedef enum profile_leaf {
        L_LEVEL,
        L_MODE,
        L_BACKEND,
        L_NET_DEFAULT,
        L_EGRESS,
        L_EGRESS_DENY,
        L_LOOPBACK,
        L_WS_PATH,
        L_WS_MOUNT,
        L_WS_ACCESS,
        L_FS_READ,
        L_FS_WRITE,
        L_FS_EXEC,
        L_ALLOW_SPAWN,
        L_ALLOW_EXEC,
        L_LONG_LIVED,
        L_CMD_MODE,
        L_CMD_ALLOW,
        L_CMD_DENY,
        L_ON_VIOLATION,
        L_ENV,
        L_SECRETS,
        L_TTL_DEFAULT,
        L_TTL_MAX,
        L_TTL_IDLE,
        L_TTL_PAUSED,
        L_PLACEMENT_PREFER,
        L_PLACEMENT_FALLBACK,
        L_ROUTE_STRATEGY,
        L_ROUTE_FALLBACK,
        L_ROUTE_CONSTRAINTS,
        L_COST_CLASS,
        L_LATENCY_CLASS,
        L_OBSERVE,
        L_OBSERVE_FS_WRITES,
        L_HIGH_RISK,
        L_CWD,
        L_FS_HOME,
        L_USER,
        L_SERVICES,
        _L_MAX,
} profile_leaf;

/* Mark leaf l as given by the profile itself (and its field as set). */
void profile_set_leaf(sbx_profile *p, profile_leaf l);

/* A profile with every default of DESIGN.md and nothing marked as set. */
int profile_new_default(sbx_profile **ret);
/* Move parent's value of every leaf the child did not set into the child. */
int profile_inherit(sbx_profile *child, sbx_profile *parent);

/* Set (or replace) one variable of an env list; free a whole list. */
int profile_env_set(sbx_env_var **env, size_t *n, const char *name, const char *value);
void profile_env_free(sbx_env_var *env, size_t n);

/* Is s a valid profile id ([a-z0-9._-]+, at most 128)? */
bool profile_valid_id(const char *s);
