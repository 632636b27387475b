/* snap.c — `sandboxer snapshot ID [--name N]`, `sandboxer snapshot ls`, `sandboxer snapshot rm
 * SNAPSHOT` and `sandboxer restore SNAPSHOT`: a sandbox's files kept in the server's snapshot
 * store, listed, deleted, and a new sandbox made from one (docs/api.md, "Snapshots"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "cli/client/client.h"
#include "daemon/ops.h"
#include "verbs.h"

enum { O_NAME = 0x300 };

int client_snapshot(const char *verb, int argc, char **argv) {
        static const struct option opts[] = {{"name", required_argument, NULL, O_NAME}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *name = NULL;
        bool restore = streq(verb, "restore");
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == O_NAME && !restore) {
                        name = optarg;
                        continue;
                }
                if (c == 'h') {
                        if (restore)
                                printf("sandboxer restore SNAPSHOT [--server ADDR] [--token TOKEN] "
                                       "[--json]\n\n"
                                       "Create a sandbox from a snapshot: its profile (resolved with the "
                                       "policy of "
                                       "now), its files in the new sandbox's scratch and home. Prints the "
                                       "new "
                                       "sandbox's id.\n\n%s",
                                        conn_help);
                        else
                                printf("sandboxer snapshot ID [--name NAME] [--server ADDR] [--token TOKEN] "
                                       "[--json]\n"
                                       "sandboxer snapshot ls [--json]\n"
                                       "sandboxer snapshot rm SNAPSHOT [--json]\n\n"
                                       "Keep a sandbox's files (its scratch and home, read while it is "
                                       "frozen) in the "
                                       "server's snapshot store, content-addressed and compressed; list the "
                                       "snapshots; delete one. Prints the snapshot's id.\n\n"
                                       "  --name NAME        a name for it (1-128 characters)\n%s",
                                        conn_help);
                        return 0;
                }
                cli_error("%s: see 'sandboxer %s --help'", verb, verb);
                return SBX_EXIT_FAILURE;
        }
        int left = argc - optind;
        const char *a0 = left > 0 ? argv[optind] : NULL, *a1 = left > 1 ? argv[optind + 1] : NULL;
        bool ls = !restore && streq_ptr(a0, "ls"), rm = !restore && streq_ptr(a0, "rm");
        if (left != (ls ? 1 : rm ? 2 : 1)) {
                cli_error("%s: usage: %s", verb,
                        restore ? "sandboxer restore SNAPSHOT"
                                : "sandboxer snapshot ID [--name NAME] | snapshot ls | snapshot rm "
                                  "SNAPSHOT");
                return SBX_EXIT_FAILURE;
        }
        const char *target = rm ? a1 : a0;
        if (!ls && (restore || rm ? !mgr_valid_snapshot_id(target) : !client_id_ok(target))) {
                cli_error("%s: '%s' is not a %s id (%s and hex digits)", verb, target,
                        restore || rm ? "snapshot" : "sandbox", restore || rm ? "snp_" : "sbx_");
                return SBX_EXIT_FAILURE;
        }
        if (name && (!*name || strlen(name) > 128)) {
                cli_error("%s: --name: 1 to 128 characters", verb);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[128];
        json_t *body = NULL;
        const char *method = "POST";
        if (ls)
                snprintf(path, sizeof path, "/v1/snapshots"), method = "GET";
        else if (rm)
                snprintf(path, sizeof path, "/v1/snapshots/%s", target), method = "DELETE";
        else if (restore) {
                snprintf(path, sizeof path, "/v1/sandboxes");
                body = json_pack("{s:s}", "snapshot", target);
        } else {
                snprintf(path, sizeof path, "/v1/sandboxes/%s/snapshot", target);
                body = name ? json_pack("{s:s}", "name", name) : json_object();
        }
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        response r = {0};
        int hr = client_http(&o, method, path, text ? "application/json" : NULL, NULL, text ? text : "",
                text ? strlen(text) : 0, &r, NULL, NULL);
        free(text);
        if (hr < 0)
                return SBX_EXIT_FAILURE;
        int rc = 0;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r);
                if (o.json)
                        client_print_json(j);
                else if (ls) {
                        json_t *s;
                        size_t i;
                        printf("%-22s %-22s %-10s %6s %10s  %s\n", "ID", "SANDBOX", "NAME", "FILES", "BYTES",
                                "CREATED");
                        json_array_foreach(json_object_get(j, "items"), i, s)
                                printf("%-22s %-22s %-10s %6lld %10lld  %s\n",
                                        json_string_value(json_object_get(s, "id")),
                                        json_string_value(json_object_get(s, "sandbox_id")) ?: "-",
                                        json_string_value(json_object_get(s, "name")) ?: "-",
                                        (long long) json_integer_value(json_object_get(s, "files")),
                                        (long long) json_integer_value(json_object_get(s, "size")),
                                        json_string_value(json_object_get(s, "created_at")) ?: "-");
                } else
                        printf("%s\n", json_string_value(json_object_get(j, "id")) ?: "?");
                json_decref(j);
        }
        free(r.body);
        return rc;
}
