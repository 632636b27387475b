/* audit.c — `sandboxer audit verify`: check the hash chain of the audit log. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/audit.h"
#include "daemon/store-ledger.h"
#include "daemon/store.h"
#include "verbs.h"

static void help(void) {
        printf("sandboxer audit verify [--state-dir DIR] [FILE]\n\n"
               "Check that every line of the audit log (default STATE_DIR/" SBX_AUDIT_FILE
               ") carries the hash of\n"
               "the line before it and a hash of its own content: an altered, inserted or truncated line\n"
               "is reported by number. Removing whole lines from the end cannot be detected from the\n"
               "file alone. With the state dir's store (sandboxer.db), the credit ledger too: each row's\n"
               "hash over its fields and its predecessor's, seq without a gap, every transaction summing\n"
               "to zero.\n\n"
               "  --state-dir DIR   default $SANDBOXER_STATE_DIR, /var/lib/sandboxer as root,\n"
               "                    else $XDG_STATE_HOME/sandboxer\n"
               "Exit status: 0 intact, 1 broken or unreadable, 125 usage error.\n");
}

int verb_audit(int argc, char **argv) {
        enum { ARG_STATE_DIR = 0x100 };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {},
        };
        const char *state_flag = NULL;
        int c, r;

        if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                help();
                return 0;
        }
        if (argc < 2 || !streq(argv[1], "verify")) {
                cli_error("audit: %s%s%s; the only subcommand is 'verify'",
                        argc < 2 ? "missing subcommand" : "unknown subcommand '", argc < 2 ? "" : argv[1],
                        argc < 2 ? "" : "'");
                return SBX_EXIT_FAILURE;
        }
        argc--, argv++;
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_STATE_DIR:
                        state_flag = optarg;
                        break;
                case '?':
                        cli_error("audit: see 'sandboxer audit --help'");
                        return SBX_EXIT_FAILURE;
                default:
                        return SBX_EXIT_FAILURE;
                }
        if (argc - optind > 1) {
                cli_error("audit verify: at most one FILE");
                return SBX_EXIT_FAILURE;
        }

        _cleanup_free_ char *path = NULL, *dir = NULL;
        if (optind < argc)
                path = strdup(argv[optind]);
        else {
                r = sbx_state_dir(state_flag, &dir);
                if (r < 0) {
                        cli_error("audit verify: no state dir (set XDG_STATE_HOME or pass --state-dir)");
                        return SBX_EXIT_FAILURE;
                }
                if (asprintf(&path, "%s/" SBX_AUDIT_FILE, dir) < 0)
                        path = NULL;
        }
        if (!path) {
                cli_error("audit verify: out of memory");
                return SBX_EXIT_FAILURE;
        }

        sbx_error e = {};
        unsigned lines = 0;
        char buf[1024];
        r = sbx_audit_verify(path, &lines, &e);
        if (r < 0) {
                cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                return 1;
        }
        printf("audit log %s: %u line%s, chain intact\n", path, lines, lines == 1 ? "" : "s");
        /* the credit ledger in the state dir's store, when there is one */
        _cleanup_free_ char *db = NULL;
        if (dir && asprintf(&db, "%s/sandboxer.db", dir) >= 0 && access(db, F_OK) == 0) {
                _cleanup_free_ char *url = NULL;
                sbx_store *st = NULL;
                if (asprintf(&url, "sqlite:%s", db) < 0 || sbx_store_open(url, dir, &st, &e) < 0) {
                        cli_error(
                                "audit verify: the store %s: %s", db, sbx_error_format(&e, buf, sizeof buf));
                        return 1;
                }
                int64_t rows = 0;
                char why[400];
                r = sbx_ledger_verify(st, &rows, why, sizeof why);
                sbx_store_free(st);
                if (r < 0) {
                        cli_error("audit verify: the credit ledger in %s: %s", db, why);
                        return 1;
                }
                printf("credit ledger %s: %lld row%s, chain intact, every transaction sums to zero\n", db,
                        (long long) rows, rows == 1 ? "" : "s");
        }
        return 0;
}
