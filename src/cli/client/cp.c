/* cp.c — `sandboxer cp`: files into and out of a sandbox. */
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

/* ---- cp -------------------------------------------------------------------------------------------- */

static int split_remote(const char *s, char id[64], const char **path) {
        const char *colon = strchr(s, ':');
        if (!colon || (size_t) (colon - s) >= 64)
                return 0;
        snprintf(id, 64, "%.*s", (int) (colon - s), s);
        if (!client_id_ok(id))
                return 0;
        *path = colon + 1;
        return 1;
}

int client_cp(int argc, char **argv) {
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
                        printf("sandboxer cp SRC DST [--server ADDR] [--token TOKEN] [--json]\n\n"
                               "Copy a file into or out of a sandbox: exactly one of SRC and DST is ID:PATH "
                               "(a path\n"
                               "under the sandbox's scratch or workspace); the other a local file, or - "
                               "for\n"
                               "standard input/output. Done inside the sandbox, under its fences.\n\n%s",
                                conn_help);
                        return 0;
                }
                cli_error("cp: see 'sandboxer cp --help'");
                return SBX_EXIT_FAILURE;
        }
        if (argc - optind != 2) {
                cli_error("cp: usage: sandboxer cp SRC DST (one of them ID:PATH)");
                return SBX_EXIT_FAILURE;
        }
        char sid[64], did[64];
        const char *spath = NULL, *dpath = NULL;
        int sr = split_remote(argv[optind], sid, &spath), dr = split_remote(argv[optind + 1], did, &dpath);
        if (sr == dr) {
                cli_error("cp: exactly one of SRC and DST must be ID:PATH");
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        char enc[4096], path[4300];
        response r = {0};
        int rc = 0;
        if (dr) { /* upload */
                response data = {0};
                if (client_read_local("cp", argv[optind], &data) < 0)
                        return SBX_EXIT_FAILURE;
                client_urlenc(dpath, enc, sizeof enc);
                snprintf(path, sizeof path, "/v1/sandboxes/%s/files?path=%s", did, enc);
                if (client_http(&o, "PUT", path, "application/octet-stream", NULL,
                            data.body ? data.body : "", data.len, &r, NULL, NULL) < 0)
                        rc = SBX_EXIT_FAILURE;
                else if (r.status >= 300)
                        rc = client_api_error(&r);
                else if (o.json)
                        fwrite(r.body, 1, r.len, stdout);
                free(data.body);
        } else { /* download */
                const char *local = argv[optind + 1];
                client_urlenc(spath, enc, sizeof enc);
                snprintf(path, sizeof path, "/v1/sandboxes/%s/files?path=%s", sid, enc);
                if (client_http(&o, "GET", path, NULL, NULL, NULL, 0, &r, NULL, NULL) < 0)
                        rc = SBX_EXIT_FAILURE;
                else if (r.status >= 300)
                        rc = client_api_error(&r);
                else if (client_write_local("cp", local, &r) < 0)
                        rc = SBX_EXIT_FAILURE;
        }
        free(r.body);
        return rc;
}
