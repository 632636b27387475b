/* ls.c — `sandboxer ls` (a table, or the JSON list), and get, extend, recreate, destroy. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "daemon/http.h"
#include "cli/client/client.h"
#include "verbs.h"

/* ---- ls, get --------------------------------------------------------------------------------------- */

static const char *age(const char *iso, char *buf, size_t size) {
        struct tm t = {0};
        if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &t)) {
                snprintf(buf, size, "-");
                return buf;
        }
        long d = (long) (time(NULL) - timegm(&t));
        bool future = d < 0;
        if (future)
                d = -d;
        if (d < 120)
                snprintf(buf, size, "%s%lds", future ? "in " : "", d);
        else if (d < 7200)
                snprintf(buf, size, "%s%ldm", future ? "in " : "", d / 60);
        else
                snprintf(buf, size, "%s%ldh", future ? "in " : "", d / 3600);
        return buf;
}

int client_ls(int argc, char **argv) {
        static const struct option opts[] = {{"state", required_argument, NULL, 's'},
                {"profile", required_argument, NULL, 'p'}, {"harness", required_argument, NULL, 'H'},
                {"session-id", required_argument, NULL, 'S'}, {"run-id", required_argument, NULL, 'R'},
                {"job-id", required_argument, NULL, 'J'}, {"limit", required_argument, NULL, 'l'},
                CONN_OPTIONS, {0}};
        static const char *const keys[] = {
                "state", "profile", "harness", "session_id", "run_id", "job_id", "limit"};
        static const char letters[] = "spHSRJl";
        conn_opts o = {0};
        char q[2048] = "";
        size_t ql = 0;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                const char *l = c > 0 && c < 128 ? strchr(letters, c) : NULL;
                if (l) {
                        char enc[512];
                        client_urlenc(optarg, enc, sizeof enc);
                        ql += (size_t) snprintf(
                                q + ql, sizeof q - ql, "%c%s=%s", ql ? '&' : '?', keys[l - letters], enc);
                        if (ql >= sizeof q)
                                return SBX_EXIT_FAILURE;
                        continue;
                }
                if (c == 'h') {
                        printf("sandboxer ls [--state S] [--profile P] [--harness H] [--session-id S] "
                               "[--run-id R]\n"
                               "             [--job-id J] [--limit N] [--server ADDR] [--token TOKEN] "
                               "[--json]\n\n"
                               "List the caller's sandboxes (destroyed ones only with --state "
                               "destroyed).\n\n%s",
                                conn_help);
                        return 0;
                }
                cli_error("ls: see 'sandboxer ls --help'");
                return SBX_EXIT_FAILURE;
        }
        if (optind < argc) {
                cli_error("ls: unexpected argument '%s'", argv[optind]);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[2200];
        snprintf(path, sizeof path, "/v1/sandboxes%s", q);
        response r = {0};
        if (client_http(&o, "GET", path, NULL, NULL, NULL, 0, &r, NULL, NULL) < 0)
                return SBX_EXIT_FAILURE;
        int rc = 0;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r);
                if (o.json)
                        client_print_json(j);
                else {
                        printf("%-22s %-12s %-22s %-9s %-6s %s\n", "ID", "STATE", "PROFILE", "BACKEND",
                                "AGE", "EXPIRES");
                        size_t i;
                        json_t *x;
                        json_array_foreach(json_object_get(j, "items"), i, x) {
                                char a1[32], a2[32];
                                printf("%-22s %-12s %-22s %-9s %-6s %s\n",
                                        json_string_value(json_object_get(x, "id")) ?: "-",
                                        json_string_value(json_object_get(x, "state")) ?: "-",
                                        json_string_value(json_object_get(x, "profile")) ?: "-",
                                        json_string_value(json_object_get(x, "backend")) ?: "-",
                                        age(json_string_value(json_object_get(x, "created_at")), a1,
                                                sizeof a1),
                                        age(json_string_value(json_object_get(x, "expires_at")), a2,
                                                sizeof a2));
                        }
                }
                json_decref(j);
        }
        free(r.body);
        return rc;
}

/* get, extend, recreate, pause, resume, destroy: one id, one request, the record back. */
int client_simple(const char *verb, int argc, char **argv) {
        static const struct option opts[] = {CONN_OPTIONS, {0}};
        conn_opts o = {0};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 'h') {
                        bool ext = streq(verb, "extend");
                        printf("sandboxer %s ID%s [--server ADDR] [--token TOKEN] [--json]\n\n%s\n\n%s",
                                verb, ext ? " SECONDS" : "",
                                streq(verb, "get") ? "Print a sandbox's record."
                                : ext ? "Extend a sandbox's TTL by SECONDS (capped by the profile's "
                                        "ttl.max)."
                                : streq(verb, "recreate")
                                        ? "Destroy a sandbox and provision it again (same id, profile, "
                                          "inputs)."
                                : streq(verb, "pause")
                                        ? "Pause a sandbox: its processes are frozen (memory, files and "
                                          "descriptors kept), its TTL and idle clocks stop, no exec runs "
                                          "until it is resumed; at most the profile's ttl.paused."
                                : streq(verb, "resume")
                                        ? "Resume a paused sandbox: its processes go on where they "
                                          "stopped."
                                        : "Destroy a sandbox (also fine when it already was).",
                                conn_help);
                        return 0;
                }
                cli_error("%s: see 'sandboxer %s --help'", verb, verb);
                return SBX_EXIT_FAILURE;
        }
        bool ext = streq(verb, "extend");
        if (argc - optind != (ext ? 2 : 1)) {
                cli_error("%s: usage: sandboxer %s ID%s", verb, verb, ext ? " SECONDS" : "");
                return SBX_EXIT_FAILURE;
        }
        const char *id = argv[optind];
        if (!client_id_ok(id)) {
                cli_error("%s: '%s' is not a sandbox id (sbx_ and hex digits)", verb, id);
                return SBX_EXIT_FAILURE;
        }
        char body[64] = "";
        if (ext) {
                char *end;
                double s = strtod(argv[optind + 1], &end);
                if (*end || s <= 0) {
                        cli_error("extend: '%s' is not a positive number of seconds", argv[optind + 1]);
                        return SBX_EXIT_FAILURE;
                }
                snprintf(body, sizeof body, "{\"extend_s\":%.3f}", s);
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s%s", id,
                ext                       ? "/ttl"
                : streq(verb, "recreate") ? "/recreate"
                : streq(verb, "pause")    ? "/pause"
                : streq(verb, "resume")   ? "/resume"
                                          : "");
        const char *method = streq(verb, "get") ? "GET" : streq(verb, "destroy") ? "DELETE" : "POST";
        response r = {0};
        if (client_http(&o, method, path, ext ? "application/json" : NULL, NULL, body, strlen(body), &r,
                    NULL, NULL) < 0)
                return SBX_EXIT_FAILURE;
        int rc = 0;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r);
                if (o.json)
                        client_print_json(j);
                else if (streq(verb, "get")) {
                        const char *k;
                        json_t *v;
                        json_object_foreach(j, k, v) {
                                char *s = json_is_string(v) ? NULL
                                                            : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                                printf("%-15s %s\n", k, s ? s : json_string_value(v));
                                free(s);
                        }
                } else
                        printf("%s %s%s%s\n", id, json_string_value(json_object_get(j, "state")) ?: "?",
                                ext ? " until " : "",
                                ext ? json_string_value(json_object_get(j, "expires_at")) ?: "?" : "");
                json_decref(j);
        }
        free(r.body);
        return rc;
}
