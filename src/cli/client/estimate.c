/* estimate.c — `sandboxer estimate --duration D [--profile P] [--route JSON]`: what a sandbox
 * would cost before it is made (POST /v1/estimate; docs/api.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "policy/policy.h"
#include "cli/client/client.h"
#include "verbs.h"

enum { O_DURATION = 0x320, O_PROFILE, O_ROUTE };

static const char usage_text[] = "sandboxer estimate --duration D [--profile P] [--route JSON]\n";

int client_estimate(int argc, char **argv) {
        static const struct option opts[] = {{"duration", required_argument, NULL, O_DURATION},
                {"profile", required_argument, NULL, O_PROFILE}, {"route", required_argument, NULL, O_ROUTE},
                CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *profile = NULL;
        double duration = -1;
        json_t *route = NULL;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                switch (c) {
                case O_DURATION:
                        if (sbx_parse_duration(optarg, &duration) < 0 || !(duration > 0)) {
                                cli_error(
                                        "estimate: --duration: a duration such as 90, 30m or 2h (not '%s')",
                                        optarg);
                                goto out;
                        }
                        continue;
                case O_PROFILE:
                        profile = optarg;
                        continue;
                case O_ROUTE: {
                        json_error_t je;
                        json_decref(route);
                        route = json_loads(optarg, 0, &je);
                        if (!json_is_object(route)) {
                                cli_error("estimate: --route: a JSON object such as "
                                          "'{\"strategy\":\"lowest-cost\"}' (%s)",
                                        route ? "not an object" : je.text);
                                goto out;
                        }
                        continue;
                }
                case 'h':
                        printf("%s\n"
                               "What a sandbox of the profile would cost for the duration on each extension "
                               "its route would\n"
                               "consider (the registry's prices; CPU and memory at the profile's limits: an "
                               "upper bound).\n\n"
                               "  --duration D   how long it would live: seconds, or 30m, 2h, 1d\n"
                               "  --profile P    the profile (default: profile.default)\n"
                               "  --route JSON   a route as a create takes it\n%s",
                                usage_text, conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("estimate: see 'sandboxer estimate --help'");
                        goto out;
                }
        }
        if (optind != argc || duration < 0) {
                cli_error("estimate: usage:\n%s", usage_text);
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        json_t *body = json_pack("{s:f}", "duration_s", duration);
        if (profile)
                json_object_set_new(body, "profile", json_string(profile));
        if (route)
                json_object_set(body, "route", route);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        response r = {0};
        int hr = client_http(&o, "POST", "/v1/estimate", "application/json", NULL, text ? text : "",
                text ? strlen(text) : 0, &r, NULL, NULL);
        free(text);
        if (hr < 0)
                goto out;
        if (r.status >= 300)
                rc = client_api_error(&r);
        else {
                json_t *j = client_body_json(&r), *it;
                size_t i;
                const char *chosen = json_string_value(json_object_get(j, "chosen"));
                rc = 0;
                if (o.json)
                        client_print_json(j);
                else {
                        printf("%-2s %-20s %-16s %12s %-8s\n", "", "EXTENSION", "HOST", "COST", "CURRENCY");
                        json_array_foreach(json_object_get(j, "items"), i, it) {
                                const char *ext = json_string_value(json_object_get(it, "extension"));
                                printf("%-2s %-20s %-16s %12.6f %-8s\n", streq_ptr(ext, chosen) ? "*" : "",
                                        ext ? ext : "?",
                                        json_string_value(json_object_get(it, "host")) ?: "-",
                                        json_number_value(json_object_get(it, "cost")),
                                        json_string_value(json_object_get(it, "currency")) ?: "");
                        }
                        if (!chosen)
                                printf("(no extension qualifies: a create would answer 422 no_route)\n");
                }
                json_decref(j);
        }
        free(r.body);
out:
        json_decref(route);
        return rc;
}
