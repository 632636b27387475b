/* credits.c — `sandboxer credits [grant|ledger]` and `sandboxer meters`: a tenant's credits, an
 * adm's grants, the ledger, and what sandboxes used (GET /v1/credits, POST /v1/credits/grant,
 * GET /v1/ledger, GET /v1/meters; docs/api.md, "Meters, credits and deals"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "cli/client/client.h"
#include "verbs.h"

enum { O_TENANT = 0x340, O_NOTE, O_CURSOR, O_LIMIT, O_SANDBOX, O_FROM, O_TO };

static const char credits_usage[] = "sandboxer credits [--tenant T]\n"
                                    "sandboxer credits grant TENANT AMOUNT [--note TEXT]\n"
                                    "sandboxer credits ledger [--cursor N] [--limit N]\n";
static const char meters_usage[] =
        "sandboxer meters [--sandbox ID] [--from TIME] [--to TIME] [--tenant T]\n";

/* GET or POST path; the answer printed as JSON (--json) or by show(). */
static int request(
        conn_opts *o, const char *method, const char *path, json_t *body, void (*show)(json_t *)) {
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        response r = {0};
        int hr = client_http(o, method, path, body ? "application/json" : NULL, NULL, text ? text : "",
                text ? strlen(text) : 0, &r, NULL, NULL);
        free(text);
        if (hr < 0)
                return SBX_EXIT_FAILURE;
        int rc;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r);
                if (o->json || !show)
                        client_print_json(j);
                else
                        show(j);
                json_decref(j);
                rc = 0;
        }
        free(r.body);
        return rc;
}

static void show_credits(json_t *j) {
        const char *cur = json_string_value(json_object_get(j, "currency")) ?: "";
        printf("tenant    %s\nbalance   %.6f %s\nheld      %.6f %s\nenforced  %s\n",
                json_string_value(json_object_get(j, "tenant")) ?: "?",
                json_number_value(json_object_get(j, "balance")), cur,
                json_number_value(json_object_get(j, "held")), cur,
                json_is_true(json_object_get(j, "enforced")) ? "yes" : "no (serve --credits turns it on)");
}

static void show_ledger(json_t *j) {
        json_t *it;
        size_t i;
        printf("%6s %-24s %-26s %14s %-8s %s\n", "SEQ", "AT", "ACCOUNT", "AMOUNT", "KIND", "REF");
        json_array_foreach(json_object_get(j, "items"), i, it) {
                printf("%6lld %-24s %-26s %14.6f %-8s %s\n",
                        (long long) json_integer_value(json_object_get(it, "seq")),
                        json_string_value(json_object_get(it, "at")) ?: "",
                        json_string_value(json_object_get(it, "account")) ?: "",
                        json_number_value(json_object_get(it, "amount")),
                        json_string_value(json_object_get(it, "kind")) ?: "",
                        json_string_value(json_object_get(it, "ref")) ?: "");
        }
        const char *next = json_string_value(json_object_get(j, "next_cursor"));
        if (next)
                printf("(more: --cursor %s)\n", next);
}

static void show_meters(json_t *j) {
        json_t *it;
        size_t i;
        printf("%-22s %-8s %-12s %10s %9s %12s %12s %12s\n", "SANDBOX", "TENANT", "EXTENSION", "WALL_S",
                "CPU_S", "MEM_MIB_S", "EGRESS_B", "COST");
        json_array_foreach(json_object_get(j, "items"), i, it) {
                json_t *cpu = json_object_get(it, "cpu_s"), *mem = json_object_get(it, "mem_mib_s");
                char c[32] = "-", mm[32] = "-";
                if (json_is_number(cpu))
                        snprintf(c, sizeof c, "%.3f", json_number_value(cpu));
                if (json_is_number(mem))
                        snprintf(mm, sizeof mm, "%.3f", json_number_value(mem));
                printf("%-22s %-8s %-12s %10.3f %9s %12s %12lld %12.6f%s\n",
                        json_string_value(json_object_get(it, "sandbox_id")) ?: "",
                        json_string_value(json_object_get(it, "tenant")) ?: "",
                        json_string_value(json_object_get(it, "extension")) ?: "",
                        json_number_value(json_object_get(it, "wall_s")), c, mm,
                        (long long) json_integer_value(json_object_get(it, "egress_bytes")),
                        json_number_value(json_object_get(it, "cost")),
                        json_is_true(json_object_get(it, "final")) ? "" : " (running)");
        }
}

static bool count(const char *s, long long max) {
        char *end;
        long long v = strtoll(s, &end, 10);
        return *s && !*end && v >= 0 && v <= max;
}

int client_credits(int argc, char **argv) {
        static const struct option opts[] = {{"tenant", required_argument, NULL, O_TENANT},
                {"note", required_argument, NULL, O_NOTE}, {"cursor", required_argument, NULL, O_CURSOR},
                {"limit", required_argument, NULL, O_LIMIT}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *tenant = NULL, *note = NULL, *cursor = NULL, *limit = NULL;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                switch (c) {
                case O_TENANT:
                        tenant = optarg;
                        continue;
                case O_NOTE:
                        note = optarg;
                        continue;
                case O_CURSOR:
                case O_LIMIT:
                        if (!count(optarg, c == O_LIMIT ? 1000 : (long long) 1e18) ||
                                (c == O_LIMIT && streq(optarg, "0"))) {
                                cli_error("credits: --%s: %s (not '%s')", c == O_LIMIT ? "limit" : "cursor",
                                        c == O_LIMIT ? "1 to 1000" : "the next cursor a page named", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        *(c == O_LIMIT ? &limit : &cursor) = optarg;
                        continue;
                case 'h':
                        printf("%s\n"
                               "A tenant's credits (its balance, and what its running sandboxes hold); an "
                               "adm's\n"
                               "grant of credits to a tenant; the credit ledger (append-only, "
                               "double-entry,\n"
                               "hash-chained: 'sandboxer audit verify' checks it).\n\n"
                               "  --tenant T     another tenant's (an adm's)\n"
                               "  --note TEXT    grant: kept in the ledger and the audit log\n"
                               "  --cursor N     ledger: from the page the previous one named\n"
                               "  --limit N      ledger: rows per page (1 to 1000, default 100)\n%s",
                                credits_usage, conn_help);
                        return 0;
                default:
                        cli_error("credits: see 'sandboxer credits --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        const char *sub = optind < argc ? argv[optind] : NULL;
        if (sub && !streq(sub, "grant") && !streq(sub, "ledger")) {
                cli_error("credits: unknown subcommand '%s'; usage:\n%s", sub, credits_usage);
                return SBX_EXIT_FAILURE;
        }
        size_t want = !sub ? 0 : streq(sub, "grant") ? 3 : 1;
        if ((size_t) (argc - optind) != want) {
                cli_error("credits: usage:\n%s", credits_usage);
                return SBX_EXIT_FAILURE;
        }
        if ((note && !(sub && streq(sub, "grant"))) ||
                ((cursor || limit) && !(sub && streq(sub, "ledger"))) || (tenant && sub)) {
                cli_error("credits: --note goes with grant, --cursor and --limit with ledger, --tenant with "
                          "neither; usage:\n%s",
                        credits_usage);
                return SBX_EXIT_FAILURE;
        }
        double amount = 0;
        if (sub && streq(sub, "grant")) {
                char *end;
                amount = strtod(argv[optind + 2], &end);
                if (!*argv[optind + 2] || *end || !(amount > 0) || amount > 1e12) {
                        cli_error(
                                "credits grant: AMOUNT: a number more than 0 (not '%s')", argv[optind + 2]);
                        return SBX_EXIT_FAILURE;
                }
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[600], enc[400];
        if (!sub) {
                snprintf(path, sizeof path, "/v1/credits");
                if (tenant) {
                        client_urlenc(tenant, enc, sizeof enc);
                        snprintf(path, sizeof path, "/v1/credits?tenant=%s", enc);
                }
                return request(&o, "GET", path, NULL, show_credits);
        }
        if (streq(sub, "ledger")) {
                snprintf(path, sizeof path, "/v1/ledger?limit=%s%s%s", limit ? limit : "100",
                        cursor ? "&cursor=" : "", cursor ? cursor : "");
                return request(&o, "GET", path, NULL, show_ledger);
        }
        json_t *body = json_pack("{s:s, s:f}", "tenant", argv[optind + 1], "amount", amount);
        if (note)
                json_object_set_new(body, "note", json_string(note));
        int rc = request(&o, "POST", "/v1/credits/grant", body, show_credits);
        json_decref(body);
        return rc;
}

int client_meters(int argc, char **argv) {
        static const struct option opts[] = {{"sandbox", required_argument, NULL, O_SANDBOX},
                {"from", required_argument, NULL, O_FROM}, {"to", required_argument, NULL, O_TO},
                {"tenant", required_argument, NULL, O_TENANT}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *q[4] = {NULL, NULL, NULL, NULL}; /* sandbox, from, to, tenant */
        static const char *const names[4] = {"sandbox", "from", "to", "tenant"};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                switch (c) {
                case O_SANDBOX:
                        if (!client_id_ok(optarg)) {
                                cli_error("meters: --sandbox: not a sandbox id ('%s')", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        q[0] = optarg;
                        continue;
                case O_FROM:
                case O_TO:
                case O_TENANT:
                        q[c == O_FROM ? 1 : c == O_TO ? 2 : 3] = optarg;
                        continue;
                case 'h':
                        printf("%s\n"
                               "What sandboxes used: wall seconds alive (not paused), CPU seconds and "
                               "memory\n"
                               "MiB-seconds from their cgroups, egress bytes, and what that cost at their\n"
                               "extension's price; a running one's as of its last sample.\n\n"
                               "  --sandbox ID   one sandbox\n"
                               "  --from TIME    those alive at or after TIME (RFC 3339, or seconds since "
                               "the "
                               "epoch)\n"
                               "  --to TIME      those made at or before TIME\n"
                               "  --tenant T     another tenant's (an adm's; an adm sees every tenant's "
                               "without it)\n%s",
                                meters_usage, conn_help);
                        return 0;
                default:
                        cli_error("meters: see 'sandboxer meters --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        if (optind != argc) {
                cli_error("meters: usage:\n%s", meters_usage);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[1600] = "/v1/meters", enc[300];
        const char *sep = "?";
        for (int i = 0; i < 4; i++)
                if (q[i]) {
                        client_urlenc(q[i], enc, sizeof enc);
                        size_t len = strlen(path);
                        snprintf(path + len, sizeof path - len, "%s%s=%s", sep, names[i], enc);
                        sep = "&";
                }
        return request(&o, "GET", path, NULL, show_meters);
}
