/* deal.c — `sandboxer node`, `sandboxer peer add|ls|rm` and `sandboxer deal`: this node's identity,
 * the peers an adm registers, and runs on a peer paid for by a signed deal (GET /v1/node,
 * /v1/peers, POST /v1/peers/NODE/deals, /v1/tasks/ID, /v1/deals; docs/api.md, "Deals between
 * nodes"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "cli/client/client.h"
#include "verbs.h"

enum {
        O_KEY = 0x360,
        O_URL,
        O_LIMIT,
        O_EXT,
        O_OFFER,
        O_FILE,
        O_OUTPUT,
        O_TIMEOUT,
        O_MANUAL,
        O_NOWAIT,
        O_REASON,
        O_ROLE
};

static const char peer_usage[] =
        "sandboxer peer add NODE_ID --key KEY --url URL --credit-limit N [--extension EXT]\n"
        "sandboxer peer ls\n"
        "sandboxer peer rm NODE_ID\n";
static const char deal_usage[] =
        "sandboxer deal NODE_ID [--offer P] [--file PATH=LOCAL]... [--output PATH]...\n"
        "               [--timeout S] [--manual] [--no-wait] -- COMMAND [ARG]...\n"
        "sandboxer deal ls [--role provider|requester]\n"
        "sandboxer deal get|accept ID\n"
        "sandboxer deal reject ID --reason TEXT\n";

static json_t *call(conn_opts *o, const char *method, const char *path, json_t *body, int *rc) {
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        response r = {0};
        int hr = client_http(o, method, path, body ? "application/json" : NULL, NULL, text ? text : "",
                text ? strlen(text) : 0, &r, NULL, NULL);
        free(text);
        json_t *j = NULL;
        if (hr < 0)
                *rc = SBX_EXIT_FAILURE;
        else if (r.status >= 300)
                *rc = client_api_error(&r);
        else {
                j = client_body_json(&r);
                *rc = 0;
        }
        free(r.body);
        return j;
}

static void show_peers(json_t *j) {
        json_t *it;
        size_t i;
        printf("%-38s %-14s %12s %s\n", "NODE", "EXTENSION", "CREDIT_LIMIT", "URL");
        json_array_foreach(json_object_get(j, "items"), i, it)
                printf("%-38s %-14s %12.6f %s\n", json_string_value(json_object_get(it, "node_id")) ?: "",
                        json_string_value(json_object_get(it, "extension")) ?: "-",
                        json_number_value(json_object_get(it, "credit_limit")),
                        json_string_value(json_object_get(it, "url")) ?: "");
}

int client_node(int argc, char **argv) {
        static const struct option opts[] = {CONN_OPTIONS, {0}};
        conn_opts o = {0};
        int c, rc;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 'h') {
                        printf("sandboxer node\n\nThis node's identity: its id, its Ed25519 public key and "
                               "URL (what a "
                               "peer registers).\n%s",
                                conn_help);
                        return 0;
                }
                cli_error("node: see 'sandboxer node --help'");
                return SBX_EXIT_FAILURE;
        }
        if (optind != argc || conn_finish(&o) < 0) {
                cli_error("node: usage: sandboxer node [--json]");
                return SBX_EXIT_FAILURE;
        }
        json_t *j = call(&o, "GET", "/v1/node", NULL, &rc);
        if (j && o.json)
                client_print_json(j);
        else if (j)
                printf("node_id     %s\npublic_key  %s\nurl         %s\n",
                        json_string_value(json_object_get(j, "node_id")) ?: "",
                        json_string_value(json_object_get(j, "public_key")) ?: "",
                        json_string_value(json_object_get(j, "url")) ?: "(serve --public-url not given)");
        json_decref(j);
        return rc;
}

int client_peer(int argc, char **argv) {
        static const struct option opts[] = {{"key", required_argument, NULL, O_KEY},
                {"url", required_argument, NULL, O_URL}, {"credit-limit", required_argument, NULL, O_LIMIT},
                {"extension", required_argument, NULL, O_EXT}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *key = NULL, *url = NULL, *ext = NULL;
        double limit = -1;
        int c, rc;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                char *end;
                switch (c) {
                case O_KEY:
                        key = optarg;
                        continue;
                case O_URL:
                        url = optarg;
                        continue;
                case O_EXT:
                        ext = optarg;
                        continue;
                case O_LIMIT:
                        limit = strtod(optarg, &end);
                        if (!*optarg || *end || !(limit >= 0)) {
                                cli_error("peer: --credit-limit: a number, 0 or more (not '%s')", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        continue;
                case 'h':
                        printf("%s\n"
                               "The peers of this node (an adm's): nodes whose deals it accepts (their key "
                               "and how much\n"
                               "their pending deals may cost here) and that it asks for runs (the registry "
                               "entry of kind\n"
                               "sandboxer that reaches them).\n\n"
                               "  --key KEY          the peer's public key (its 'sandboxer node')\n"
                               "  --url URL          the peer's URL\n"
                               "  --credit-limit N   what its pending deals may cost here, in the site's "
                               "currency\n"
                               "  --extension EXT    the registry entry this node reaches it by\n%s",
                                peer_usage, conn_help);
                        return 0;
                default:
                        cli_error("peer: see 'sandboxer peer --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        const char *sub = optind < argc ? argv[optind] : NULL;
        int n = argc - optind;
        bool add = streq_ptr(sub, "add"), ls = streq_ptr(sub, "ls"), rm = streq_ptr(sub, "rm");
        if (!(add && n == 2 && key && url && limit >= 0) && !(ls && n == 1) && !(rm && n == 2)) {
                cli_error("peer: usage:\n%s", peer_usage);
                return SBX_EXIT_FAILURE;
        }
        if (!add && (key || url || ext || limit >= 0)) {
                cli_error("peer: --key, --url, --credit-limit and --extension go with add");
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        json_t *j;
        if (add) {
                json_t *b = json_pack("{s:s, s:s, s:s, s:f}", "node_id", argv[optind + 1], "public_key", key,
                        "url", url, "credit_limit", limit);
                if (ext)
                        json_object_set_new(b, "extension", json_string(ext));
                j = call(&o, "POST", "/v1/peers", b, &rc);
                json_decref(b);
        } else if (ls)
                j = call(&o, "GET", "/v1/peers", NULL, &rc);
        else {
                char path[200], enc[120];
                client_urlenc(argv[optind + 1], enc, sizeof enc);
                snprintf(path, sizeof path, "/v1/peers/%s", enc);
                j = call(&o, "DELETE", path, NULL, &rc);
        }
        if (j && (o.json || !ls))
                client_print_json(j);
        else if (j)
                show_peers(j);
        json_decref(j);
        return rc;
}

static void show_task(json_t *t, bool json) {
        if (json) {
                client_print_json(t);
                return;
        }
        json_t *res = json_object_get(t, "result"), *in = json_object_get(t, "intent");
        printf("deal     %s (%s of %s)\nstate    %s%s%s%s\n",
                json_string_value(json_object_get(t, "deal_id")) ?: "",
                json_string_value(json_object_get(t, "role")) ?: "",
                json_string_value(json_object_get(t, "peer")) ?: "",
                json_string_value(json_object_get(t, "state")) ?: "",
                json_string_value(json_object_get(t, "reason")) ? " (" : "",
                json_string_value(json_object_get(t, "reason")) ?: "",
                json_string_value(json_object_get(t, "reason")) ? ")" : "");
        printf("intent   %s %.6f %s\n", json_string_value(json_object_get(in, "state")) ?: "",
                json_number_value(json_object_get(in, "amount")),
                json_string_value(json_object_get(in, "currency")) ?: "");
        if (json_is_object(res))
                printf("exit     %lld\n", (long long) json_integer_value(json_object_get(res, "exit_code")));
}

/* The result's stdout and stderr where they belong, and its exit code as ours. */
static int relay(json_t *t) {
        json_t *res = json_object_get(t, "result");
        if (!json_is_object(res)) {
                fprintf(stderr, "sandboxer: deal %s ended %s%s%s\n",
                        json_string_value(json_object_get(t, "deal_id")) ?: "",
                        json_string_value(json_object_get(t, "state")) ?: "",
                        json_string_value(json_object_get(t, "reason")) ? ": " : "",
                        json_string_value(json_object_get(t, "reason")) ?: "");
                return SBX_EXIT_FAILURE;
        }
        bool b64 = streq_ptr(json_string_value(json_object_get(res, "encoding")), "base64");
        const char *names[2] = {"stdout", "stderr"};
        for (int i = 0; i < 2; i++) {
                const char *s = json_string_value(json_object_get(res, names[i])) ?: "";
                char *raw = NULL;
                size_t n = strlen(s);
                if (b64 && sbx_base64_decode(s, strlen(s), false, &raw, &n) == 0)
                        s = raw;
                fwrite(s, 1, n, i ? stderr : stdout);
                free(raw);
        }
        fflush(stdout);
        json_t *code = json_object_get(res, "exit_code");
        return json_is_integer(code) ? (int) json_integer_value(code) : SBX_EXIT_FAILURE;
}

int client_deal(int argc, char **argv) {
        static const struct option opts[] = {{"offer", required_argument, NULL, O_OFFER},
                {"file", required_argument, NULL, O_FILE}, {"output", required_argument, NULL, O_OUTPUT},
                {"timeout", required_argument, NULL, O_TIMEOUT}, {"manual", no_argument, NULL, O_MANUAL},
                {"no-wait", no_argument, NULL, O_NOWAIT}, {"reason", required_argument, NULL, O_REASON},
                {"role", required_argument, NULL, O_ROLE}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *offer = "profile.default", *reason = NULL, *role = NULL;
        json_t *files = json_object(), *outputs = json_array(), *limits = json_object();
        bool manual = false, nowait = false, run_opts = false;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                char *end;
                switch (c) {
                case O_OFFER:
                        offer = optarg;
                        run_opts = true;
                        continue;
                case O_FILE: {
                        const char *eq = strchr(optarg, '=');
                        response data = {0};
                        if (!eq || optarg[0] != '/') {
                                cli_error(
                                        "deal: --file: PATH=LOCAL, PATH absolute in the sandbox (not '%s')",
                                        optarg);
                                goto out;
                        }
                        if (client_read_local("deal", eq + 1, &data) < 0)
                                goto out;
                        char *b = sbx_base64_encode(data.body ? data.body : "", data.len);
                        free(data.body);
                        json_object_set_new(
                                files, strndupa(optarg, (size_t) (eq - optarg)), json_string(b ? b : ""));
                        free(b);
                        run_opts = true;
                        continue;
                }
                case O_OUTPUT:
                        if (optarg[0] != '/') {
                                cli_error("deal: --output: an absolute path in the sandbox (not '%s')",
                                        optarg);
                                goto out;
                        }
                        json_array_append_new(outputs, json_string(optarg));
                        run_opts = true;
                        continue;
                case O_TIMEOUT: {
                        double v = strtod(optarg, &end);
                        if (!*optarg || *end || !(v > 0)) {
                                cli_error("deal: --timeout: a number of seconds more than 0 (not '%s')",
                                        optarg);
                                goto out;
                        }
                        json_object_set_new(limits, "timeout_s", json_real(v));
                        run_opts = true;
                        continue;
                }
                case O_MANUAL:
                        manual = run_opts = true;
                        continue;
                case O_NOWAIT:
                        nowait = run_opts = true;
                        continue;
                case O_REASON:
                        reason = optarg;
                        continue;
                case O_ROLE:
                        if (!streq(optarg, "provider") && !streq(optarg, "requester")) {
                                cli_error("deal: --role: provider or requester (not '%s')", optarg);
                                goto out;
                        }
                        role = optarg;
                        continue;
                case 'h':
                        printf("%s\n"
                               "A run on a peer, paid for by a deal: this node asks NODE_ID for a signed "
                               "quote, checks it,\n"
                               "signs the deal, submits it and follows it; the provider's signed result is "
                               "checked and\n"
                               "accepted (or left for 'deal accept|reject' with --manual). Its stdout and "
                               "stderr are\n"
                               "written here and its exit code is this command's.\n\n"
                               "  --offer P          the provider's offer (a profile; default "
                               "profile.default)\n"
                               "  --file PATH=LOCAL  put LOCAL at PATH in the sandbox first (repeatable)\n"
                               "  --output PATH      hash PATH after the run, into the result (repeatable)\n"
                               "  --timeout S        the run's timeout (at most the provider's)\n"
                               "  --manual           accept or reject the result yourself\n"
                               "  --no-wait          print the deal and return at once\n"
                               "  --reason TEXT      reject: why\n"
                               "  --role R           ls: provider or requester deals only\n%s",
                                deal_usage, conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("deal: see 'sandboxer deal --help'");
                        goto out;
                }
        }
        const char *sub = optind < argc ? argv[optind] : NULL;
        int n = argc - optind;
        if (!sub) {
                cli_error("deal: usage:\n%s", deal_usage);
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        char path[300], enc[120];
        json_t *j = NULL;
        if (streq(sub, "ls") || streq(sub, "get") || streq(sub, "accept") || streq(sub, "reject")) {
                bool ls = streq(sub, "ls");
                if (run_opts || (ls ? n != 1 : n != 2) || (role && !ls) ||
                        (reason && !streq(sub, "reject")) || (streq(sub, "reject") && !reason)) {
                        cli_error("deal: usage:\n%s", deal_usage);
                        goto out;
                }
                if (ls) {
                        snprintf(path, sizeof path, "/v1/deals%s%s", role ? "?role=" : "", role ? role : "");
                        j = call(&o, "GET", path, NULL, &rc);
                        json_t *it;
                        size_t i;
                        if (j && o.json)
                                client_print_json(j);
                        else if (j) {
                                printf("%-38s %-10s %-38s %-13s %s\n", "DEAL", "ROLE", "PEER", "STATE",
                                        "INTENT");
                                json_array_foreach(json_object_get(j, "items"), i, it) printf(
                                        "%-38s %-10s %-38s %-13s %s\n",
                                        json_string_value(json_object_get(it, "deal_id")) ?: "",
                                        json_string_value(json_object_get(it, "role")) ?: "",
                                        json_string_value(json_object_get(it, "peer")) ?: "",
                                        json_string_value(json_object_get(it, "state")) ?: "",
                                        json_string_value(
                                                json_object_get(json_object_get(it, "intent"), "state"))
                                                ?: "");
                        }
                } else {
                        client_urlenc(argv[optind + 1], enc, sizeof enc);
                        if (streq(sub, "get")) {
                                snprintf(path, sizeof path, "/v1/tasks/%s", enc);
                                j = call(&o, "GET", path, NULL, &rc);
                        } else {
                                snprintf(path, sizeof path, "/v1/deals/%s/%s", enc, sub);
                                json_t *b = reason ? json_pack("{s:s}", "reason", reason) : json_object();
                                j = call(&o, "POST", path, b, &rc);
                                json_decref(b);
                        }
                        if (j)
                                show_task(j, o.json);
                }
                json_decref(j);
                goto out;
        }
        /* a run: NODE_ID -- COMMAND... */
        if (n < 2) {
                cli_error("deal: a command to run is required; usage:\n%s", deal_usage);
                goto out;
        }
        json_t *av = json_array();
        for (int i = optind + 1; i < argc; i++)
                json_array_append_new(av, json_string(argv[i]));
        json_t *b = json_pack("{s:s, s:o, s:O, s:O, s:s}", "offer", offer, "argv", av, "files", files,
                "outputs", outputs, "accept", manual ? "manual" : "auto");
        if (json_object_size(limits))
                json_object_set(b, "limits", limits);
        client_urlenc(sub, enc, sizeof enc);
        snprintf(path, sizeof path, "/v1/peers/%s/deals", enc);
        j = call(&o, "POST", path, b, &rc);
        json_decref(b);
        if (!j)
                goto out;
        char id[64];
        snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "deal_id")) ?: "");
        if (nowait) {
                client_print_json(j);
                json_decref(j);
                goto out;
        }
        json_decref(j);
        /* followed until it ends (or, --manual, until its result is ready) */
        char state[32] = "";
        for (int tries = 0; tries < 720; tries++) {
                snprintf(
                        path, sizeof path, "/v1/tasks/%s?wait=10%s%s", id, state[0] ? "&state=" : "", state);
                j = call(&o, "GET", path, NULL, &rc);
                if (!j)
                        goto out;
                const char *st = json_string_value(json_object_get(j, "state")) ?: "";
                snprintf(state, sizeof state, "%s", st);
                bool done = streq(st, "accepted") || streq(st, "rejected") || streq(st, "failed") ||
                            streq(st, "expired") || (manual && streq(st, "result_ready"));
                if (done) {
                        if (o.json)
                                client_print_json(j);
                        else {
                                rc = relay(j);
                                if (manual)
                                        fprintf(stderr,
                                                "sandboxer: deal %s is %s: 'sandboxer deal accept %s' or "
                                                "'deal reject'\n",
                                                id, st, id);
                        }
                        json_decref(j);
                        goto out;
                }
                json_decref(j);
        }
        cli_error("deal: %s did not end within 2 hours (sandboxer deal get %s)", id, id);
        rc = SBX_EXIT_FAILURE;
out:
        json_decref(files);
        json_decref(outputs);
        json_decref(limits);
        return rc;
}
