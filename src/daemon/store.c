/* store.c — SQLite store of the control plane: opening, WAL, versioned migrations, tokens.
 * Statements are prepared once at open; a mutex serialises their use across HTTP threads. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/sha256.h"
#include "backend/common.h"
#include "daemon/store.h"
#include "isolate/mount.h"

enum {
        STMT_TOKEN_INSERT,
        STMT_TOKEN_LIST,
        STMT_TOKEN_GET,
        STMT_TOKEN_REVOKE,
        STMT_TOKEN_BY_HASH,
        _STMT_MAX,
};

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_TOKEN_INSERT] = "INSERT INTO tokens(name, actor, tenant, scopes, hash, created_at) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [STMT_TOKEN_LIST] = "SELECT id, name, actor, tenant, scopes, created_at, COALESCE(revoked_at, 0) "
                            "FROM tokens ORDER BY id",
        [STMT_TOKEN_GET] = "SELECT COALESCE(revoked_at, 0) FROM tokens WHERE id = ?1",
        [STMT_TOKEN_REVOKE] = "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        [STMT_TOKEN_BY_HASH] = "SELECT id, name, actor, tenant, scopes, created_at, COALESCE(revoked_at, 0) "
                               "FROM tokens WHERE hash = ?1",
};

/* Migration N brings the schema from version N-1 to N; run in one transaction each. */
static const char *const migrations[] = {
        /* 1 */
        "CREATE TABLE tokens ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  name TEXT NOT NULL,"
        "  actor TEXT NOT NULL CHECK (actor IN ('adm', 'agt', 'atm')),"
        "  tenant TEXT NOT NULL DEFAULT '',"
        "  scopes TEXT NOT NULL DEFAULT '',"
        "  hash TEXT NOT NULL UNIQUE,"
        "  created_at INTEGER NOT NULL,"
        "  revoked_at INTEGER);"
        "CREATE TABLE sandboxes ("
        "  id TEXT PRIMARY KEY,"
        "  state TEXT NOT NULL,"
        "  reason TEXT,"
        "  profile TEXT NOT NULL,"
        "  backend TEXT,"
        "  tenant TEXT NOT NULL DEFAULT '',"
        "  consumer_json TEXT,"
        "  metadata_json TEXT,"
        "  created_at INTEGER NOT NULL,"
        "  expires_at INTEGER,"
        "  updated_at INTEGER NOT NULL);"
        "CREATE INDEX sandboxes_tenant_state ON sandboxes(tenant, state);"
        "CREATE TABLE events ("
        "  seq INTEGER PRIMARY KEY,"
        "  sandbox_id TEXT NOT NULL,"
        "  type TEXT NOT NULL,"
        "  state TEXT,"
        "  reason TEXT,"
        "  at INTEGER NOT NULL,"
        "  data_json TEXT);"
        "CREATE INDEX events_sandbox ON events(sandbox_id, seq);"
        "CREATE TABLE idempotency ("
        "  key TEXT NOT NULL,"
        "  tenant TEXT NOT NULL DEFAULT '',"
        "  sandbox_id TEXT NOT NULL,"
        "  created_at INTEGER NOT NULL,"
        "  PRIMARY KEY (key, tenant));",
        /* 2: persistent sandboxes — the whole record, filters, the supervisor, execs */
        "ALTER TABLE sandboxes ADD COLUMN record_json TEXT;"
        "ALTER TABLE sandboxes ADD COLUMN harness TEXT;"
        "ALTER TABLE sandboxes ADD COLUMN session_id TEXT;"
        "ALTER TABLE sandboxes ADD COLUMN run_id TEXT;"
        "ALTER TABLE sandboxes ADD COLUMN job_id TEXT;"
        "ALTER TABLE sandboxes ADD COLUMN supervisor_pid INTEGER;"
        "ALTER TABLE sandboxes ADD COLUMN inputs_json TEXT;"
        "ALTER TABLE idempotency ADD COLUMN body_sha256 TEXT;"
        "CREATE INDEX sandboxes_created ON sandboxes(tenant, created_at, id);"
        "CREATE TABLE execs ("
        "  id TEXT PRIMARY KEY,"
        "  sandbox_id TEXT NOT NULL,"
        "  status TEXT,"
        "  exit_code INTEGER,"
        "  started_at INTEGER NOT NULL,"
        "  ended_at INTEGER,"
        "  report_json TEXT);"
        "CREATE INDEX execs_sandbox ON execs(sandbox_id);",
        /* 3: events of what is not a sandbox (volumes) carry their tenant */
        "ALTER TABLE events ADD COLUMN tenant TEXT;",
        /* 4: meters (meters.c) and the credit ledger (store-ledger.c): amounts in millionths of the
         * currency; each ledger row's hash covers its fields and the row before it's */
        "CREATE TABLE meters ("
        "  sandbox_id TEXT PRIMARY KEY,"
        "  tenant TEXT NOT NULL DEFAULT '',"
        "  extension TEXT NOT NULL,"
        "  profile TEXT,"
        "  started_at INTEGER NOT NULL,"
        "  ended_at INTEGER,"
        "  wall_s REAL NOT NULL DEFAULT 0,"
        "  cpu_s REAL,"
        "  mem_mib_s REAL,"
        "  egress_bytes INTEGER NOT NULL DEFAULT 0,"
        "  creations INTEGER NOT NULL DEFAULT 1,"
        "  cost REAL,"
        "  currency TEXT,"
        "  updated_at INTEGER NOT NULL);"
        "CREATE INDEX meters_tenant ON meters(tenant, started_at);"
        "CREATE TABLE ledger ("
        "  seq INTEGER PRIMARY KEY,"
        "  tx TEXT NOT NULL,"
        "  at INTEGER NOT NULL,"
        "  account TEXT NOT NULL,"
        "  amount INTEGER NOT NULL,"
        "  currency TEXT NOT NULL,"
        "  kind TEXT NOT NULL,"
        "  ref TEXT NOT NULL DEFAULT '',"
        "  note TEXT NOT NULL DEFAULT '',"
        "  prev TEXT NOT NULL,"
        "  hash TEXT NOT NULL);"
        "CREATE INDEX ledger_account ON ledger(account);"
        "CREATE INDEX ledger_ref ON ledger(ref, kind);",
        /* 5: deals between nodes (deals.c): the peers an adm registered, and each deal this node is
         * the provider or the requester of, with its signed quote, task state, result and intent */
        "CREATE TABLE peers ("
        "  node_id TEXT PRIMARY KEY,"
        "  public_key TEXT NOT NULL,"
        "  url TEXT NOT NULL,"
        "  extension TEXT,"
        "  credit_limit INTEGER NOT NULL DEFAULT 0,"
        "  created_at INTEGER NOT NULL);"
        "CREATE TABLE deals ("
        "  deal_id TEXT PRIMARY KEY,"
        "  role TEXT NOT NULL CHECK (role IN ('provider', 'requester')),"
        "  peer TEXT NOT NULL,"
        "  tenant TEXT NOT NULL DEFAULT '',"
        "  quote_json TEXT NOT NULL,"
        "  requester_sig TEXT NOT NULL,"
        "  files_json TEXT,"
        "  state TEXT NOT NULL,"
        "  reason TEXT,"
        "  result_json TEXT,"
        "  intent TEXT NOT NULL DEFAULT 'pending',"
        "  amount INTEGER NOT NULL DEFAULT 0,"
        "  accept TEXT NOT NULL DEFAULT 'auto',"
        "  attempts INTEGER NOT NULL DEFAULT 0,"
        "  created_at INTEGER NOT NULL,"
        "  updated_at INTEGER NOT NULL);"
        "CREATE INDEX deals_state ON deals(role, state);",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == SBX_STORE_SCHEMA_VERSION,
        "one migration per schema version");

#define STMT_CACHE 96

struct sbx_store {
        sqlite3 *db;
        char *path;
        pthread_mutex_t lock;
        sqlite3_stmt *stmt[_STMT_MAX];
        /* sbx_store_sql's statements, prepared once each (a query's text is a literal: the same
         * pointer, and the text compared too) — preparing one cost as much as running it */
        struct {
                const char *sql;
                sqlite3_stmt *st;
                bool busy; /* stepping (a row callback's query of the same text prepares its own) */
        } cache[STMT_CACHE];
        unsigned cached;
};

static const char *const actor_names[_SBX_ACTOR_MAX] = {
        [SBX_ACTOR_ADM] = "adm",
        [SBX_ACTOR_AGT] = "agt",
        [SBX_ACTOR_ATM] = "atm",
};

const char *sbx_actor_kind_to_string(sbx_actor_kind k) {
        return k >= 0 && k < _SBX_ACTOR_MAX ? actor_names[k] : NULL;
}

sbx_actor_kind sbx_actor_kind_from_string(const char *s) {
        for (int i = 0; s && i < _SBX_ACTOR_MAX; i++)
                if (streq(s, actor_names[i]))
                        return (sbx_actor_kind) i;
        return _SBX_ACTOR_INVALID;
}

/* SQLite result code → -errno. */
static int sqlite_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EBADMSG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        default:
                return -EIO;
        }
}

static int store_fail(sbx_store *s, int rc, sbx_error *e, const char *step) {
        return sbx_error_set(e, sqlite_errno(rc), step, "store %s: %s", s->path,
                s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

int sbx_state_dir(const char *flag, char **ret) {
        const char *d = flag && *flag ? flag : getenv("SANDBOXER_STATE_DIR");
        char *p = NULL;
        if (d && *d)
                p = strdup(d);
        else if (geteuid() == 0)
                p = strdup("/var/lib/sandboxer");
        else if (getenv("XDG_STATE_HOME") && *getenv("XDG_STATE_HOME")) {
                if (asprintf(&p, "%s/sandboxer", getenv("XDG_STATE_HOME")) < 0)
                        p = NULL;
        } else if (getenv("HOME") && *getenv("HOME")) {
                if (asprintf(&p, "%s/.local/state/sandboxer", getenv("HOME")) < 0)
                        p = NULL;
        } else
                return -ENOENT;
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int sbx_runtime_dir(char **ret) {
        /* the library's: the same directory the sandboxes' scratch and cgroup names live by */
        char buf[PATH_MAX];
        int r = sbx_backend_runtime_dir(buf, sizeof buf);
        if (r < 0)
                return r;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

static int exec_sql(sbx_store *s, const char *sql, sbx_error *e, const char *step) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : store_fail(s, rc, e, step);
}

static int read_version(sbx_store *s, int *ret, sbx_error *e) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(
                s->db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, e, "store: schema version");
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                int r = store_fail(s, rc, e, "store: schema version");
                sqlite3_finalize(st);
                return r;
        }
        *ret = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return 0;
}

static int migrate(sbx_store *s, sbx_error *e) {
        int r, v = 0;
        r = exec_sql(s,
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER "
                "NOT NULL)",
                e, "store: schema_version");
        if (r < 0)
                return r;
        /* BEGIN IMMEDIATE: two processes opening a fresh store migrate one after the other. */
        r = exec_sql(s, "BEGIN IMMEDIATE", e, "store: migrate");
        if (r < 0)
                return r;
        r = read_version(s, &v, e);
        if (r < 0)
                goto rollback;
        if (v > SBX_STORE_SCHEMA_VERSION) {
                r = sbx_error_set(e, EPROTO, "store: migrate",
                        "store %s has schema version %d, newer than this sandboxer knows (%d); "
                        "upgrade sandboxer or use another --state-dir",
                        s->path, v, SBX_STORE_SCHEMA_VERSION);
                goto rollback;
        }
        for (; v < SBX_STORE_SCHEMA_VERSION; v++) {
                r = exec_sql(s, migrations[v], e, "store: migrate");
                if (r < 0)
                        goto rollback;
                char sql[128];
                snprintf(sql, sizeof sql,
                        "INSERT INTO schema_version(version, applied_at) VALUES (%d, %lld)", v + 1,
                        (long long) time(NULL));
                r = exec_sql(s, sql, e, "store: migrate");
                if (r < 0)
                        goto rollback;
        }
        return exec_sql(s, "COMMIT", e, "store: migrate");
rollback:
        (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int sbx_store_open(const char *url, const char *state_dir, sbx_store **ret, sbx_error *e) {
        _cleanup_store_ sbx_store *s = calloc(1, sizeof *s);
        int r, rc;

        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        if (!url) {
                if (!state_dir)
                        return sbx_error_set(e, EINVAL, "store: open", "no state dir");
                r = sbx_mkdir_p(state_dir, 0700);
                if (r < 0)
                        return sbx_error_set(e, r, "store: open",
                                "cannot create state dir %s: %s; pass --state-dir", state_dir, strerror(-r));
                if (asprintf(&s->path, "%s/sandboxer.db", state_dir) < 0)
                        return -ENOMEM;
        } else if (strncmp(url, "sqlite:", 7) == 0 && url[7]) {
                s->path = strdup(url + 7);
                if (!s->path)
                        return -ENOMEM;
        } else
                return sbx_error_set(e, EPROTONOSUPPORT, "store: open",
                        "unsupported store URL '%s': this build knows sqlite:PATH only", url);

        /* Created 0600 before SQLite sees it: token hashes are not for other users' eyes (the WAL
         * and shm files take the database's mode). */
        int fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return sbx_error_set(e, errno, "store: open", "cannot open store %s: %m", s->path);
        close(fd);

        rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, e, "store: open");
        sqlite3_busy_timeout(s->db, 5000);
        r = exec_sql(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", e,
                "store: pragma");
        if (r < 0)
                return r;
        r = migrate(s, e);
        if (r < 0)
                return r;
        for (int i = 0; i < _STMT_MAX; i++) {
                rc = sqlite3_prepare_v3(
                        s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i], NULL);
                if (rc != SQLITE_OK)
                        return store_fail(s, rc, e, "store: prepare");
        }
        *ret = TAKE_PTR(s);
        return 0;
}

sbx_store *sbx_store_free(sbx_store *s) {
        if (!s)
                return NULL;
        for (int i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->stmt[i]);
        for (unsigned i = 0; i < s->cached; i++)
                sqlite3_finalize(s->cache[i].st);
        if (s->db)
                sqlite3_close_v2(s->db);
        pthread_mutex_destroy(&s->lock);
        free(s->path);
        free(s);
        return NULL;
}

const char *sbx_store_path(const sbx_store *s) {
        return s->path;
}

void sbx_token_info_clear(sbx_token_info *t) {
        if (!t)
                return;
        free(t->name);
        free(t->actor);
        free(t->tenant);
        free(t->scopes);
        *t = (sbx_token_info){};
}

void sbx_token_info_array_free(sbx_token_info *a, size_t n) {
        for (size_t i = 0; a && i < n; i++)
                sbx_token_info_clear(&a[i]);
        free(a);
}

static char *column_strdup(sqlite3_stmt *st, int col) {
        const unsigned char *t = sqlite3_column_text(st, col);
        return strdup(t ? (const char *) t : "");
}

/* Fill *t from a row of STMT_TOKEN_LIST / STMT_TOKEN_BY_HASH. */
static int token_from_row(sqlite3_stmt *st, sbx_token_info *t) {
        sbx_token_info x = {
                .id = sqlite3_column_int64(st, 0),
                .name = column_strdup(st, 1),
                .actor = column_strdup(st, 2),
                .tenant = column_strdup(st, 3),
                .scopes = column_strdup(st, 4),
                .created_at = sqlite3_column_int64(st, 5),
                .revoked_at = sqlite3_column_int64(st, 6),
        };
        if (!x.name || !x.actor || !x.tenant || !x.scopes) {
                sbx_token_info_clear(&x);
                return -ENOMEM;
        }
        *t = x;
        return 0;
}

static void hash_secret(const char *secret, char ret_hex[static 65]) {
        sha256_hex(secret, strlen(secret), ret_hex);
}

int sbx_store_token_create(sbx_store *s, sbx_actor_kind actor, const char *name, const char *tenant,
        const char *scopes, char **ret_secret, int64_t *ret_id, sbx_error *e) {
        uint8_t raw[32];
        char hash[65];
        _cleanup_free_ char *secret = malloc(SBX_TOKEN_LEN + 1);
        int r = 0, rc;

        if (!sbx_actor_kind_to_string(actor) || isempty(name))
                return sbx_error_set(
                        e, EINVAL, "token: create", "a token needs an actor (adm|agt|atm) and a name");
        if (!secret)
                return -ENOMEM;
        for (size_t got = 0; got < sizeof raw;) {
                ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return sbx_error_set(e, errno, "token: create", "getrandom: %m");
                }
                got += (size_t) n;
        }
        memcpy(secret, SBX_TOKEN_PREFIX, 4);
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(secret + 4 + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero(raw, sizeof raw);
        hash_secret(secret, hash);

        pthread_mutex_lock(&s->lock);
        sqlite3_stmt *st = s->stmt[STMT_TOKEN_INSERT];
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, sbx_actor_kind_to_string(actor), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, tenant ? tenant : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, scopes ? scopes : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, hash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, (sqlite3_int64) time(NULL));
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                r = store_fail(s, rc, e, "token: create");
        else if (ret_id)
                *ret_id = sqlite3_last_insert_rowid(s->db);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        *ret_secret = TAKE_PTR(secret);
        return 0;
}

int sbx_store_token_list(sbx_store *s, sbx_token_info **ret, size_t *ret_n, sbx_error *e) {
        sbx_token_info *a = NULL;
        size_t n = 0;
        int r = 0, rc;

        pthread_mutex_lock(&s->lock);
        sqlite3_stmt *st = s->stmt[STMT_TOKEN_LIST];
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                sbx_token_info *b = realloc(a, (n + 1) * sizeof *a);
                if (!b) {
                        r = -ENOMEM;
                        break;
                }
                a = b;
                r = token_from_row(st, &a[n]);
                if (r < 0)
                        break;
                n++;
        }
        if (r == 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, e, "token: list");
        sqlite3_reset(st);
        pthread_mutex_unlock(&s->lock);
        if (r < 0) {
                sbx_token_info_array_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int sbx_store_token_revoke(sbx_store *s, int64_t id, sbx_error *e) {
        int r, rc;

        pthread_mutex_lock(&s->lock);
        sqlite3_stmt *st = s->stmt[STMT_TOKEN_GET];
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                r = sqlite3_column_int64(st, 0) != 0 ? 1 : 0;
        else if (rc == SQLITE_DONE)
                r = sbx_error_set(e, ENOENT, "token: revoke",
                        "no token with id %lld; see 'sandboxer token list'", (long long) id);
        else
                r = store_fail(s, rc, e, "token: revoke");
        sqlite3_reset(st);
        if (r == 0) {
                st = s->stmt[STMT_TOKEN_REVOKE];
                sqlite3_bind_int64(st, 1, id);
                sqlite3_bind_int64(st, 2, (sqlite3_int64) time(NULL));
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE)
                        r = store_fail(s, rc, e, "token: revoke");
                sqlite3_reset(st);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int sbx_store_token_lookup(sbx_store *s, const char *secret, sbx_token_info *ret, sbx_error *e) {
        char hash[65];
        sbx_token_info t = {};
        int r, rc;

        if (isempty(secret))
                return -ENOENT;
        hash_secret(secret, hash);
        pthread_mutex_lock(&s->lock);
        sqlite3_stmt *st = s->stmt[STMT_TOKEN_BY_HASH];
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                r = token_from_row(st, &t);
        else if (rc == SQLITE_DONE)
                r = -ENOENT;
        else
                r = store_fail(s, rc, e, "token: lookup");
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        if (t.revoked_at != 0) {
                sbx_token_info_clear(&t);
                return -EKEYREVOKED;
        }
        *ret = t;
        return 0;
}

/* sql's statement: the cached one (marked busy, *slot its index), else prepared (*slot -1:
 * finalized after). */
static int stmt_for(sbx_store *s, const char *sql, sqlite3_stmt **ret, int *slot) {
        *slot = -1;
        for (unsigned i = 0; i < s->cached; i++)
                if (s->cache[i].sql == sql && !s->cache[i].busy && streq(sqlite3_sql(s->cache[i].st), sql)) {
                        s->cache[i].busy = true;
                        *slot = (int) i;
                        *ret = s->cache[i].st;
                        return SQLITE_OK;
                }
        int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, ret, NULL);
        if (rc == SQLITE_OK && s->cached < STMT_CACHE) {
                bool known = false; /* busy, or the same address with other text: not cached twice */
                for (unsigned i = 0; i < s->cached && !known; i++)
                        known = s->cache[i].sql == sql;
                if (!known) {
                        *slot = (int) s->cached++;
                        s->cache[*slot].sql = sql;
                        s->cache[*slot].st = *ret;
                        s->cache[*slot].busy = true;
                }
        }
        return rc;
}

static void stmt_done(sbx_store *s, sqlite3_stmt *st, int slot) {
        if (slot < 0) {
                sqlite3_finalize(st);
                return;
        }
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        s->cache[slot].busy = false;
}

static int sql_locked(sbx_store *s, const char *sql, int (*row)(void *, int, const char *const *),
        void *userdata, sbx_error *e, const char *fmt, va_list ap) {
        sqlite3_stmt *st = NULL;
        int slot;
        int rc = stmt_for(s, sql, &st, &slot);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, e, "store: query");
        int idx = 1;
        for (const char *f = fmt; f && *f; f++, idx++) {
                if (*f == 's') {
                        const char *v = va_arg(ap, const char *);
                        rc = v ? sqlite3_bind_text(st, idx, v, -1, SQLITE_TRANSIENT)
                               : sqlite3_bind_null(st, idx);
                } else if (*f == 'i')
                        rc = sqlite3_bind_int64(st, idx, va_arg(ap, int64_t));
                else if (*f == 'd')
                        rc = sqlite3_bind_double(st, idx, va_arg(ap, double));
                else
                        rc = SQLITE_MISUSE;
                if (rc != SQLITE_OK) {
                        int r = store_fail(s, rc, e, "store: bind");
                        stmt_done(s, st, slot);
                        return r;
                }
        }
        int n = 0, r = 0;
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW) {
                        r = store_fail(s, rc, e, "store: query");
                        break;
                }
                n++;
                if (row) {
                        int nc = sqlite3_column_count(st);
                        const char *cols[32] = {0};
                        if (nc > 32)
                                nc = 32;
                        for (int c = 0; c < nc; c++)
                                cols[c] = (const char *) sqlite3_column_text(st, c);
                        r = row(userdata, nc, cols);
                        if (r < 0)
                                break;
                }
        }
        stmt_done(s, st, slot);
        return r < 0 ? r : n;
}

int sbx_store_sql(sbx_store *s, const char *sql, int (*row)(void *, int, const char *const *),
        void *userdata, sbx_error *e, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        pthread_mutex_lock(&s->lock);
        int r = sql_locked(s, sql, row, userdata, e, fmt, ap);
        pthread_mutex_unlock(&s->lock);
        va_end(ap);
        return r;
}

void sbx_store_lock(sbx_store *s) {
        pthread_mutex_lock(&s->lock);
}

void sbx_store_unlock(sbx_store *s) {
        pthread_mutex_unlock(&s->lock);
}

int sbx_store_sql_locked(sbx_store *s, const char *sql, int (*row)(void *, int, const char *const *),
        void *userdata, sbx_error *e, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = sql_locked(s, sql, row, userdata, e, fmt, ap);
        va_end(ap);
        return r;
}
