/* events.c — `sandboxer events`: the server-sent event stream, followed. */
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

/* ---- events ---------------------------------------------------------------------------------------- */

typedef struct sse_state {
        char line[1 << 16];
        size_t len;
        char id[32];
        char event[64];
        bool json;
} sse_state;

static void sse_sink(void *ud, const char *d, size_t n) {
        sse_state *s = ud;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != '\n') {
                        if (s->len + 1 < sizeof s->line)
                                s->line[s->len++] = d[i];
                        continue;
                }
                s->line[s->len] = 0;
                s->len = 0;
                if (strncmp(s->line, "id: ", 4) == 0)
                        snprintf(s->id, sizeof s->id, "%s", s->line + 4);
                else if (strncmp(s->line, "event: ", 7) == 0)
                        snprintf(s->event, sizeof s->event, "%s", s->line + 7);
                else if (strncmp(s->line, "data: ", 6) == 0) {
                        if (s->json) {
                                puts(s->line + 6);
                        } else {
                                json_error_t je;
                                json_t *j = json_loads(s->line + 6, 0, &je);
                                const char *what = streq(s->event, "sandbox.exec") ? "exec"
                                                   : streq(s->event, "sandbox.ttl")
                                                           ? "ttl"
                                                           : json_string_value(json_object_get(j, "state"));
                                printf("%-6s %-12s %-22s %s%s%s\n", s->id, what ? what : "?",
                                        json_string_value(json_object_get(j, "sandbox_id")) ?: "-",
                                        json_string_value(json_object_get(j, "reason")) ?: "",
                                        json_object_get(j, "exec_id") ? " " : "",
                                        json_string_value(json_object_get(j, "exec_id")) ?: "");
                                json_decref(j);
                        }
                        fflush(stdout);
                }
        }
}

int client_events(int argc, char **argv) {
        static const struct option opts[] = {{"sandbox", required_argument, NULL, 's'},
                {"last-event-id", required_argument, NULL, 'l'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *sb = NULL, *last = NULL;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == 's')
                        sb = optarg;
                else if (c == 'l')
                        last = optarg;
                else if (c == 'h') {
                        printf("sandboxer events [--sandbox ID] [--last-event-id N] [--server ADDR] "
                               "[--token TOKEN] [--json]\n\n"
                               "Follow the lifecycle events (every one stored since N, then live ones), one "
                               "line each:\n"
                               "ID STATE|exec|ttl SANDBOX REASON, or the event's JSON with --json. Until "
                               "interrupted.\n\n%s",
                                conn_help);
                        return 0;
                } else {
                        cli_error("events: see 'sandboxer events --help'");
                        return SBX_EXIT_FAILURE;
                }
        }
        if (optind < argc || (sb && !client_id_ok(sb))) {
                cli_error("events: usage: sandboxer events [--sandbox ID] [--last-event-id N]");
                return SBX_EXIT_FAILURE;
        }
        if (last) {
                char *end;
                long long v = strtoll(last, &end, 10);
                if (*end || v < 0) {
                        cli_error("events: --last-event-id: '%s' is not an event id", last);
                        return SBX_EXIT_FAILURE;
                }
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char path[128], hdr[96] = "";
        snprintf(path, sizeof path, "/v1/events%s%s", sb ? "?sandbox=" : "", sb ? sb : "");
        if (last)
                snprintf(hdr, sizeof hdr, "Last-Event-ID: %.40s\r\n", last);
        sse_state *s = calloc(1, sizeof *s);
        if (!s)
                return SBX_EXIT_FAILURE;
        s->json = o.json;
        response r = {0};
        int rc = 0;
        if (client_http(&o, "GET", path, NULL, last ? hdr : NULL, NULL, 0, &r, sse_sink, s) < 0)
                rc = SBX_EXIT_FAILURE;
        else if (r.status >= 300)
                rc = client_api_error(&r);
        free(s);
        free(r.body);
        return rc;
}
