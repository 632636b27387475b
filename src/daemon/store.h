/* store.h — the control plane's persistent state: one SQLite file (WAL) under the state dir,
 * with versioned schema migrations. Holds tokens (hashed), and the tables for sandboxes,
 * events and idempotency keys that the lifecycle will fill.
 *
 * Every operation takes the store's mutex, so one handle may be shared by the HTTP threads.
 * Functions return 0 (or >0) on success and -errno on failure, with the story in *e if given. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

typedef struct sbx_store sbx_store;

/* Newest schema version this build knows (migrations 1..N). */
#define SBX_STORE_SCHEMA_VERSION 5

/* Token secrets: "sbx_" + 64 hex digits of 32 random bytes. */
#define SBX_TOKEN_PREFIX "sbx_"
#define SBX_TOKEN_LEN (4 + 64)

/* The state dir: flag, else $SANDBOXER_STATE_DIR, else /var/lib/sandboxer as root, else
 * $XDG_STATE_HOME/sandboxer, else ~/.local/state/sandboxer. Newly allocated in *ret. */
int sbx_state_dir(const char *flag, char **ret);
/* The runtime dir: $SANDBOXER_RUNTIME_DIR, /run/sandboxer as root, $XDG_RUNTIME_DIR/sandboxer, else
 * /tmp/sandboxer-UID (as the library's); created 0700 if missing; -EPERM when what is there is not
 * a directory of ours that only we can write. */
int sbx_runtime_dir(char **ret);

/* Open (creating it and the state dir, mode 0700, if needed) and migrate the store.
 * url: NULL for STATE_DIR/sandboxer.db, or "sqlite:PATH"; anything else -EPROTONOSUPPORT.
 * A store whose schema is newer than this build is refused (-EPROTO). */
int sbx_store_open(const char *url, const char *state_dir, sbx_store **ret, sbx_error *e);
sbx_store *sbx_store_free(sbx_store *s);
static inline void sbx_store_freep(sbx_store **s) {
        if (*s)
                *s = sbx_store_free(*s);
}
#define _cleanup_store_ __attribute__((cleanup(sbx_store_freep)))

/* The path of the database file (owned by the store). */
const char *sbx_store_path(const sbx_store *s);

typedef enum sbx_actor_kind {
        SBX_ACTOR_ADM,
        SBX_ACTOR_AGT,
        SBX_ACTOR_ATM,
        _SBX_ACTOR_MAX,
        _SBX_ACTOR_INVALID = -EINVAL,
} sbx_actor_kind;

const char *sbx_actor_kind_to_string(sbx_actor_kind k);
sbx_actor_kind sbx_actor_kind_from_string(const char *s);

typedef struct sbx_token_info {
        int64_t id;
        char *name;
        char *actor; /* "adm" | "agt" | "atm" */
        char *tenant; /* "" when none */
        char *scopes; /* space separated, "" when none */
        int64_t created_at; /* unix seconds */
        int64_t revoked_at; /* 0 while valid */
} sbx_token_info;

/* Frees the strings (not the struct); accepts a zeroed struct. */
void sbx_token_info_clear(sbx_token_info *t);
/* Frees an array from sbx_store_token_list. */
void sbx_token_info_array_free(sbx_token_info *a, size_t n);

/* Create a token: a fresh secret from getrandom(), of which only the sha256 is stored. The
 * secret is returned once in *ret_secret (newly allocated; the caller shows it and frees it). */
int sbx_store_token_create(sbx_store *s, sbx_actor_kind actor, const char *name, const char *tenant,
        const char *scopes, char **ret_secret, int64_t *ret_id, sbx_error *e);
/* All tokens, oldest first, revoked ones included (revoked_at != 0). */
int sbx_store_token_list(sbx_store *s, sbx_token_info **ret, size_t *ret_n, sbx_error *e);
/* Revoke by id: 0 when revoked now, 1 when it already was, -ENOENT when no such token. */
int sbx_store_token_revoke(sbx_store *s, int64_t id, sbx_error *e);
/* One SQL statement with arguments bound from fmt: 's' const char * (NULL binds NULL), 'i'
 * int64_t, 'd' double. Each result row calls row(userdata, n, cols) with the columns as text
 * (NULL for NULL); a negative return stops and is returned. Returns the number of rows, or
 * -errno with *e. Under the store's lock; row must not call back into the store. */
int sbx_store_sql(sbx_store *s, const char *sql, int (*row)(void *userdata, int n, const char *const *cols),
        void *userdata, sbx_error *e, const char *fmt, ...);
/* The same with the store's lock already held (sbx_store_lock): several statements that must
 * not interleave with other threads' (e.g. BEGIN … COMMIT on the shared connection). */
void sbx_store_lock(sbx_store *s);
void sbx_store_unlock(sbx_store *s);
int sbx_store_sql_locked(sbx_store *s, const char *sql,
        int (*row)(void *userdata, int n, const char *const *cols), void *userdata, sbx_error *e,
        const char *fmt, ...);

/* Find the token whose secret is `secret`: 0 and *ret filled; -ENOENT unknown, -EKEYREVOKED
 * revoked (ret untouched on failure). */
int sbx_store_token_lookup(sbx_store *s, const char *secret, sbx_token_info *ret, sbx_error *e);
