/* token.c — `sandboxer token create|list|revoke`: API bearer tokens for TCP clients, kept hashed
 * in the store; each create and revoke is written to the audit log. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/jsonw.h"
#include "daemon/audit.h"
#include "daemon/store.h"
#include "isolate/mount.h"
#include "verbs.h"

static void help(void) {
        printf("sandboxer token create --actor adm|agt|atm --name NAME [--tenant T] [--scopes S] [OPTIONS]\n"
               "sandboxer token list [OPTIONS]\n"
               "sandboxer token revoke ID [OPTIONS]\n\n"
               "Manage the bearer tokens that TCP clients of 'sandboxer serve' present. Only a hash of\n"
               "each token is stored: 'create' prints the token once, keep it then.\n\n"
               "  --actor KIND      adm (administrator), agt (agent), atm (automation)\n"
               "  --name NAME       who holds the token (shown in the audit log)\n"
               "  --tenant T        the tenant whose sandboxes the token sees (default: none)\n"
               "  --scopes S        space-separated scopes (recorded; not enforced yet)\n"
               "  --state-dir DIR   default $SANDBOXER_STATE_DIR, /var/lib/sandboxer as root,\n"
               "                    else $XDG_STATE_HOME/sandboxer; holds the store and audit.log\n"
               "  --store URL       sqlite:PATH (default: sandboxer.db in the state dir)\n"
               "  --json            machine-readable output\n"
               "Exit status: 0 done, 1 no such token (revoke), 125 usage or store error.\n");
}

static bool valid_label(const char *s, size_t max) {
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (const char *c = s; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return false;
        return true;
}

static void iso_time(int64_t t, char buf[static 32]) {
        struct tm tm;
        time_t tt = (time_t) t;
        gmtime_r(&tt, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_json(jsonw *w) {
        _cleanup_free_ char *text = NULL;
        if (jsonw_finish(w, true, &text, NULL) < 0) {
                cli_error("token: out of memory");
                return SBX_EXIT_FAILURE;
        }
        fputs(text, stdout);
        return 0;
}

int verb_token(int argc, char **argv) {
        enum { ARG_ACTOR = 0x100, ARG_NAME, ARG_TENANT, ARG_SCOPES, ARG_STATE_DIR, ARG_STORE };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"json", no_argument, NULL, 'j'},
                {"actor", required_argument, NULL, ARG_ACTOR},
                {"name", required_argument, NULL, ARG_NAME},
                {"tenant", required_argument, NULL, ARG_TENANT},
                {"scopes", required_argument, NULL, ARG_SCOPES},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"store", required_argument, NULL, ARG_STORE},
                {},
        };
        const char *actor_s = NULL, *name = NULL, *tenant = "", *scopes = "", *state_flag = NULL,
                   *store_url = NULL;
        bool json = false;
        int c, r;

        if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                help();
                return 0;
        }
        if (argc < 2 || argv[1][0] == '-') {
                cli_error("token: missing subcommand: create, list or revoke; see 'sandboxer token --help'");
                return SBX_EXIT_FAILURE;
        }
        const char *sub = argv[1];
        if (!streq(sub, "create") && !streq(sub, "list") && !streq(sub, "revoke")) {
                cli_error("token: unknown subcommand '%s': create, list or revoke", sub);
                return SBX_EXIT_FAILURE;
        }
        argc--, argv++;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'j':
                        json = true;
                        break;
                case ARG_ACTOR:
                        actor_s = optarg;
                        break;
                case ARG_NAME:
                        name = optarg;
                        break;
                case ARG_TENANT:
                        tenant = optarg;
                        break;
                case ARG_SCOPES:
                        scopes = optarg;
                        break;
                case ARG_STATE_DIR:
                        state_flag = optarg;
                        break;
                case ARG_STORE:
                        store_url = optarg;
                        break;
                case '?':
                        cli_error("token: see 'sandboxer token --help'");
                        return SBX_EXIT_FAILURE;
                default:
                        return SBX_EXIT_FAILURE;
                }

        sbx_actor_kind kind = _SBX_ACTOR_INVALID;
        int64_t revoke_id = 0;
        if (streq(sub, "create")) {
                if (!actor_s || (kind = sbx_actor_kind_from_string(actor_s)) < 0) {
                        cli_error("token create: --actor must be adm, agt or atm%s%s%s",
                                actor_s ? ", not '" : "", actor_s ? actor_s : "", actor_s ? "'" : "");
                        return SBX_EXIT_FAILURE;
                }
                if (!name || !valid_label(name, 128)) {
                        cli_error("token create: --name NAME is required (1-128 printable characters)");
                        return SBX_EXIT_FAILURE;
                }
                if (*tenant && !valid_label(tenant, 128)) {
                        cli_error("token create: --tenant wants 1-128 printable characters");
                        return SBX_EXIT_FAILURE;
                }
                if (optind < argc) {
                        cli_error("token create: unexpected argument '%s'", argv[optind]);
                        return SBX_EXIT_FAILURE;
                }
        } else if (streq(sub, "revoke")) {
                char *end;
                if (optind + 1 != argc) {
                        cli_error("token revoke: wants exactly one token ID; see 'sandboxer token list'");
                        return SBX_EXIT_FAILURE;
                }
                errno = 0;
                long long v = strtoll(argv[optind], &end, 10);
                if (errno || end == argv[optind] || *end || v <= 0) {
                        cli_error("token revoke: '%s' is not a token ID (a positive number)", argv[optind]);
                        return SBX_EXIT_FAILURE;
                }
                revoke_id = v;
        } else if (optind < argc) {
                cli_error("token list: unexpected argument '%s'", argv[optind]);
                return SBX_EXIT_FAILURE;
        }

        _cleanup_free_ char *state_dir = NULL, *audit_path = NULL, *who = NULL;
        r = sbx_state_dir(state_flag, &state_dir);
        if (r < 0) {
                cli_error("token: no state dir (set XDG_STATE_HOME or pass --state-dir)");
                return SBX_EXIT_FAILURE;
        }
        sbx_error e = {};
        char buf[1024];
        _cleanup_store_ sbx_store *store = NULL;
        r = sbx_store_open(store_url, state_dir, &store, &e);
        if (r < 0) {
                cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                return SBX_EXIT_FAILURE;
        }
        r = sbx_mkdir_p(state_dir, 0700);
        if (r < 0 || asprintf(&audit_path, "%s/" SBX_AUDIT_FILE, state_dir) < 0 ||
                sbx_audit_local_actor(&who) < 0) {
                cli_error("token: cannot prepare the audit log in %s: %s", state_dir,
                        strerror(r < 0 ? -r : ENOMEM));
                return SBX_EXIT_FAILURE;
        }

        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, true);

        if (streq(sub, "create")) {
                _cleanup_free_ char *secret = NULL;
                int64_t id;
                char target[64], detail[512];
                r = sbx_store_token_create(store, kind, name, tenant, scopes, &secret, &id, &e);
                if (r < 0) {
                        cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                        return SBX_EXIT_FAILURE;
                }
                snprintf(target, sizeof target, "token:%lld", (long long) id);
                snprintf(detail, sizeof detail, "actor=%s name=%s tenant=%s", actor_s, name, tenant);
                r = sbx_audit_append(audit_path, who, "token.create", target, "ok", detail, &e);
                if (r < 0) {
                        /* No token may exist that the audit log does not know of. */
                        (void) sbx_store_token_revoke(store, id, NULL);
                        cli_error("%s; the token was revoked again", sbx_error_format(&e, buf, sizeof buf));
                        return SBX_EXIT_FAILURE;
                }
                if (json) {
                        jsonw_begin_object(&w);
                        jsonw_kv_string(&w, "token", secret);
                        jsonw_kv_int(&w, "id", id);
                        jsonw_kv_string(&w, "actor", actor_s);
                        jsonw_kv_string(&w, "name", name);
                        jsonw_kv_string(&w, "tenant", tenant);
                        jsonw_kv_string(&w, "scopes", scopes);
                        jsonw_end_object(&w);
                        r = print_json(&w);
                } else {
                        printf("%s\n", secret);
                        fprintf(stderr,
                                "sandboxer: token %lld created for %s:%s%s%s; it is shown only this once\n",
                                (long long) id, actor_s, name, *tenant ? " in tenant " : "", tenant);
                        r = 0;
                }
                explicit_bzero(secret, strlen(secret));
                return r;
        }

        if (streq(sub, "revoke")) {
                char target[64];
                snprintf(target, sizeof target, "token:%lld", (long long) revoke_id);
                r = sbx_store_token_revoke(store, revoke_id, &e);
                const char *outcome = r == 0         ? "ok"
                                      : r == 1       ? "already_revoked"
                                      : r == -ENOENT ? "not_found"
                                                     : "error";
                sbx_error ae = {};
                int ra = sbx_audit_append(audit_path, who, "token.revoke", target, outcome, NULL, &ae);
                if (r < 0) {
                        cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                        return r == -ENOENT ? 1 : SBX_EXIT_FAILURE;
                }
                if (ra < 0) {
                        cli_error("%s", sbx_error_format(&ae, buf, sizeof buf));
                        return SBX_EXIT_FAILURE;
                }
                if (json) {
                        jsonw_begin_object(&w);
                        jsonw_kv_int(&w, "id", revoke_id);
                        jsonw_kv_bool(&w, "revoked", true);
                        jsonw_kv_bool(&w, "already", r == 1);
                        jsonw_end_object(&w);
                        return print_json(&w);
                }
                printf("token %lld %s\n", (long long) revoke_id, r == 1 ? "was already revoked" : "revoked");
                return 0;
        }

        sbx_token_info *t = NULL;
        size_t n = 0;
        r = sbx_store_token_list(store, &t, &n, &e);
        if (r < 0) {
                cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                return SBX_EXIT_FAILURE;
        }
        char created[32], revoked[32];
        if (json) {
                jsonw_begin_object(&w);
                jsonw_key(&w, "items");
                jsonw_begin_array(&w);
                for (size_t i = 0; i < n; i++) {
                        iso_time(t[i].created_at, created);
                        jsonw_begin_object(&w);
                        jsonw_kv_int(&w, "id", t[i].id);
                        jsonw_kv_string(&w, "actor", t[i].actor);
                        jsonw_kv_string(&w, "name", t[i].name);
                        jsonw_kv_string(&w, "tenant", t[i].tenant);
                        jsonw_kv_string(&w, "scopes", t[i].scopes);
                        jsonw_kv_string(&w, "created_at", created);
                        if (t[i].revoked_at) {
                                iso_time(t[i].revoked_at, revoked);
                                jsonw_kv_string(&w, "revoked_at", revoked);
                        } else
                                jsonw_kv_null(&w, "revoked_at");
                        jsonw_end_object(&w);
                }
                jsonw_end_array(&w);
                jsonw_end_object(&w);
                r = print_json(&w);
        } else {
                printf("%-6s %-5s %-24s %-16s %-20s %s\n", "ID", "ACTOR", "NAME", "TENANT", "CREATED",
                        "STATE");
                for (size_t i = 0; i < n; i++) {
                        iso_time(t[i].created_at, created);
                        printf("%-6lld %-5s %-24s %-16s %-20s %s\n", (long long) t[i].id, t[i].actor,
                                t[i].name, *t[i].tenant ? t[i].tenant : "-", created,
                                t[i].revoked_at ? "revoked" : "valid");
                }
                r = 0;
        }
        sbx_token_info_array_free(t, n);
        return r;
}
