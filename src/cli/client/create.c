/* create.c — `sandboxer create`: a persistent sandbox, its id (the record with --json). */
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

/* ---- create ------------------------------------------------------------------------------------ */

int client_create(int argc, char **argv) {
        static const struct option opts[] = {{"profile", required_argument, NULL, 'p'},
                {"ttl", required_argument, NULL, 't'}, {"harness", required_argument, NULL, 'H'},
                {"session-id", required_argument, NULL, 'S'}, {"run-id", required_argument, NULL, 'R'},
                {"job-id", required_argument, NULL, 'J'}, {"meta", required_argument, NULL, 'm'},
                {"idempotency-key", required_argument, NULL, 'k'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        json_t *body = json_object(), *consumer = json_object(), *meta = json_object();
        const char *key = NULL;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                switch (c) {
                case 'p':
                        json_object_set_new(body, "profile", json_string(optarg));
                        break;
                case 't': {
                        char *end;
                        double t = strtod(optarg, &end);
                        if (*end || t <= 0) {
                                cli_error("create: --ttl: '%s' is not a positive number of seconds", optarg);
                                goto out;
                        }
                        json_object_set_new(body, "ttl_s", json_real(t));
                        break;
                }
                case 'H':
                case 'S':
                case 'R':
                case 'J':
                        json_object_set_new(consumer,
                                c == 'H'   ? "harness"
                                : c == 'S' ? "session_id"
                                : c == 'R' ? "run_id"
                                           : "job_id",
                                json_string(optarg));
                        break;
                case 'm': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                cli_error("create: --meta: '%s' is not KEY=VALUE", optarg);
                                goto out;
                        }
                        char k2[257];
                        snprintf(k2, sizeof k2, "%.*s", (int) (eq - optarg), optarg);
                        json_object_set_new(meta, k2, json_string(eq + 1));
                        break;
                }
                case 'k':
                        key = optarg;
                        break;
                case 'h':
                        printf("sandboxer create [--profile NAME] [--ttl SECONDS] [--harness H] "
                               "[--session-id S]\n"
                               "                 [--run-id R] [--job-id J] [--meta KEY=VALUE]... "
                               "[--idempotency-key K]\n"
                               "                 [--server ADDR] [--token TOKEN] [--json]\n\n"
                               "Create a persistent sandbox and print its id (the record with "
                               "--json).\n\n%s",
                                conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("create: see 'sandboxer create --help'");
                        goto out;
                }
        }
        if (optind < argc) {
                cli_error("create: unexpected argument '%s'", argv[optind]);
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        if (json_object_size(consumer))
                json_object_set(body, "consumer", consumer);
        if (json_object_size(meta))
                json_object_set(body, "metadata", meta);
        char *text = json_dumps(body, JSON_COMPACT);
        char hdr[300] = "";
        if (key)
                snprintf(hdr, sizeof hdr, "Idempotency-Key: %.255s\r\n", key);
        response r = {0};
        if (text && client_http(&o, "POST", "/v1/sandboxes", "application/json", key ? hdr : NULL, text,
                            strlen(text), &r, NULL, NULL) >= 0) {
                if (r.status >= 300)
                        rc = client_api_error(&r);
                else {
                        json_t *j = client_body_json(&r);
                        if (o.json)
                                client_print_json(j);
                        else
                                puts(json_string_value(json_object_get(j, "id")) ?: "?");
                        json_decref(j);
                        rc = 0;
                }
        }
        free(text);
        free(r.body);
out:
        json_decref(body);
        json_decref(consumer);
        json_decref(meta);
        return rc;
}
