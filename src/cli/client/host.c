/* host.c — `sandboxer host add|ls|rm`: the placement targets of extensions (docs/api.md,
 * "Extensions and routes"). Adding and removing one is the operator's (an adm caller). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "cli/client/client.h"
#include "verbs.h"

enum { O_EXT = 0x300, O_ADDR, O_CPUS, O_MEM, O_SBX, O_LABEL };

static const char usage_text[] =
        "sandboxer host add ID --extension EXT --address ADDR [--cpus N] [--memory-mb N]\n"
        "                      [--sandboxes N] [--label KEY=VALUE]...\n"
        "sandboxer host ls\n"
        "sandboxer host rm ID\n";

static bool number(const char *s, double *ret) {
        char *end = NULL;
        *ret = s ? strtod(s, &end) : 0;
        return s && *s && end && !*end && *ret >= 0;
}

int client_host(int argc, char **argv) {
        static const struct option opts[] = {{"extension", required_argument, NULL, O_EXT},
                {"address", required_argument, NULL, O_ADDR}, {"cpus", required_argument, NULL, O_CPUS},
                {"memory-mb", required_argument, NULL, O_MEM}, {"sandboxes", required_argument, NULL, O_SBX},
                {"label", required_argument, NULL, O_LABEL}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *ext = NULL, *addr = NULL;
        json_t *cap = json_object(), *labels = json_object();
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                double x;
                const char *eq;
                switch (c) {
                case O_EXT:
                        ext = optarg;
                        continue;
                case O_ADDR:
                        addr = optarg;
                        continue;
                case O_CPUS:
                case O_MEM:
                case O_SBX:
                        if (!number(optarg, &x)) {
                                cli_error("host: --%s: a number, 0 or more (not '%s')",
                                        c == O_CPUS  ? "cpus"
                                        : c == O_MEM ? "memory-mb"
                                                     : "sandboxes",
                                        optarg);
                                goto out;
                        }
                        json_object_set_new(cap,
                                c == O_CPUS  ? "cpus"
                                : c == O_MEM ? "memory_mb"
                                             : "sandboxes",
                                json_real(x));
                        continue;
                case O_LABEL:
                        eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                cli_error("host: --label: KEY=VALUE (not '%s')", optarg);
                                goto out;
                        }
                        json_object_set_new(
                                labels, strndupa(optarg, (size_t) (eq - optarg)), json_string(eq + 1));
                        continue;
                case 'h':
                        printf("%s\n"
                               "The machines extensions place sandboxes on (another sandboxer serve, an SSH "
                               "host), each with\n"
                               "its capacity and labels, checked every 10 s (health). add and rm are the "
                               "operator's.\n\n"
                               "  --extension EXT    the extension it serves (GET /v1/extensions)\n"
                               "  --address ADDR     HOST:PORT, https://HOST[:PORT] or "
                               "ssh://[USER@]HOST[:PORT]\n"
                               "  --cpus N, --memory-mb N, --sandboxes N   its capacity\n"
                               "  --label KEY=VALUE  (repeatable)\n%s",
                                usage_text, conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("host: see 'sandboxer host --help'");
                        goto out;
                }
        }
        int left = argc - optind;
        const char *sub = left > 0 ? argv[optind] : NULL, *id = left > 1 ? argv[optind + 1] : NULL;
        bool add = streq_ptr(sub, "add"), ls = streq_ptr(sub, "ls"), rm = streq_ptr(sub, "rm");
        if (!(add && left == 2 && ext && addr) && !(ls && left == 1) && !(rm && left == 2)) {
                cli_error("host: usage:\n%s", usage_text);
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        char path[256];
        char *text = NULL;
        if (add) {
                json_t *body = json_pack("{s:s, s:s, s:s, s:O, s:O}", "id", id, "extension", ext, "address",
                        addr, "capacity", cap, "labels", labels);
                text = json_dumps(body, JSON_COMPACT);
                json_decref(body);
        }
        snprintf(path, sizeof path, rm ? "/v1/hosts/%.200s" : "/v1/hosts", rm ? id : "");
        response r = {0};
        int hr = client_http(&o,
                add  ? "POST"
                : rm ? "DELETE"
                     : "GET",
                path, text ? "application/json" : NULL, NULL, text ? text : "", text ? strlen(text) : 0, &r,
                NULL, NULL);
        free(text);
        if (hr < 0)
                goto out;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r), *h;
                size_t i;
                rc = 0;
                if (o.json)
                        client_print_json(j);
                else if (ls) {
                        printf("%-16s %-16s %-28s %-6s %s\n", "ID", "EXTENSION", "ADDRESS", "HEALTH",
                                "REASON");
                        json_array_foreach(json_object_get(j, "items"), i, h) {
                                json_t *hh = json_object_get(h, "health");
                                printf("%-16s %-16s %-28s %-6s %s\n",
                                        json_string_value(json_object_get(h, "id")),
                                        json_string_value(json_object_get(h, "extension")),
                                        json_string_value(json_object_get(h, "address")),
                                        json_is_true(json_object_get(hh, "ok")) ? "ok" : "down",
                                        json_string_value(json_object_get(hh, "reason")) ?: "");
                        }
                } else if (add)
                        printf("%s\n", json_string_value(json_object_get(j, "id")) ?: "?");
                json_decref(j);
        }
        free(r.body);
out:
        json_decref(cap);
        json_decref(labels);
        return rc;
}
