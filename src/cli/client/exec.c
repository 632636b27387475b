/* exec.c — `sandboxer exec`: a command in a sandbox, its output and exit status ours. */
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

/* ---- exec ------------------------------------------------------------------------------------------ */

static int exit_of(json_t *res) {
        json_t *code = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        const char *st = json_string_value(json_object_get(res, "status"));
        if (st && streq(st, "timeout"))
                return SBX_EXIT_TIMEOUT;
        if (json_is_integer(sig))
                return 128 + (int) json_integer_value(sig);
        if (json_is_integer(code))
                return (int) json_integer_value(code);
        return SBX_EXIT_FAILURE;
}

static void put_data(FILE *f, json_t *data, json_t *enc) {
        const char *s = json_string_value(data);
        if (!s)
                return;
        if (enc && json_string_value(enc) && streq(json_string_value(enc), "base64")) {
                char *bytes = NULL;
                size_t n = 0;
                if (sbx_base64_decode(s, strlen(s), false, &bytes, &n) >= 0)
                        fwrite(bytes, 1, n, f);
                free(bytes);
        } else
                fwrite(s, 1, json_string_length(data), f);
        fflush(f);
}

typedef struct stream_state {
        char line[1 << 20];
        size_t len;
        int exit;
        bool ended;
} stream_state;

static void stream_sink(void *ud, const char *d, size_t n) {
        stream_state *s = ud;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != '\n') {
                        if (s->len + 1 < sizeof s->line)
                                s->line[s->len++] = d[i];
                        continue;
                }
                s->line[s->len] = 0;
                json_error_t je;
                json_t *ev = json_loads(s->line, JSON_ALLOW_NUL, &je);
                s->len = 0;
                const char *t = json_string_value(json_object_get(ev, "type"));
                if (t && streq(t, "stdout"))
                        put_data(stdout, json_object_get(ev, "data"), json_object_get(ev, "encoding"));
                else if (t && streq(t, "stderr"))
                        put_data(stderr, json_object_get(ev, "data"), json_object_get(ev, "encoding"));
                else if (t && streq(t, "end")) {
                        s->exit = exit_of(ev);
                        s->ended = true;
                        json_t *err = json_object_get(json_object_get(ev, "error"), "message");
                        if (err)
                                cli_error("%s", json_string_value(err));
                }
                json_decref(ev);
        }
}

int client_exec(int argc, char **argv) {
        static const struct option opts[] = {{"timeout", required_argument, NULL, 'T'},
                {"env", required_argument, NULL, 'e'}, {"cwd", required_argument, NULL, 'c'},
                {"stdin", no_argument, NULL, 'i'}, {"stream", no_argument, NULL, 's'},
                {"tty", no_argument, NULL, 't'}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        json_t *body = json_object(), *env = json_object();
        bool with_stdin = false, stream = false, tty = false;
        int c, rc = SBX_EXIT_FAILURE;
        optind = 1;
        while ((c = getopt_long(argc, argv, "hit", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        goto out;
                if (k > 0)
                        continue;
                switch (c) {
                case 't':
                        tty = true;
                        break;
                case 'T': {
                        char *end;
                        double t = strtod(optarg, &end);
                        if (*end || t <= 0) {
                                cli_error(
                                        "exec: --timeout: '%s' is not a positive number of seconds", optarg);
                                goto out;
                        }
                        json_object_set_new(body, "timeout_s", json_real(t));
                        break;
                }
                case 'e': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                cli_error("exec: --env: '%s' is not NAME=VALUE", optarg);
                                goto out;
                        }
                        char name[257];
                        snprintf(name, sizeof name, "%.*s", (int) (eq - optarg), optarg);
                        json_object_set_new(env, name, json_string(eq + 1));
                        break;
                }
                case 'c':
                        json_object_set_new(body, "cwd", json_string(optarg));
                        break;
                case 'i':
                        with_stdin = true;
                        break;
                case 's':
                        stream = true;
                        break;
                case 'h':
                        printf("sandboxer exec ID [--timeout S] [--env NAME=VALUE]... [--cwd DIR] "
                               "[-i|--stdin] "
                               "[--stream] [-t|--tty]\n"
                               "                  [--server ADDR] [--token TOKEN] [--json] -- COMMAND "
                               "[ARG]...\n\n"
                               "Run COMMAND in the sandbox ID: its output on ours, its exit status ours "
                               "(124 timeout,\n"
                               "128+N signal, 125 when the request itself failed). --stdin sends our "
                               "standard input;\n"
                               "--stream prints output as it comes; --json prints the result with its "
                               "report.\n"
                               "-t, --tty runs it on a terminal of the sandbox's own, attached to ours "
                               "(raw, "
                               "its size\n"
                               "followed; our input is its keyboard), like docker exec -it; where the "
                               "profile allows\n"
                               "long-lived execs it has no timeout unless --timeout asks one "
                               "(docs/long-lived.md).\n\n%s",
                                conn_help);
                        rc = 0;
                        goto out;
                default:
                        cli_error("exec: see 'sandboxer exec --help'");
                        goto out;
                }
        }
        if (argc - optind < 2 || !client_id_ok(argv[optind])) {
                cli_error("exec: usage: sandboxer exec ID [OPTION]... -- COMMAND [ARG]...");
                goto out;
        }
        const char *id = argv[optind++];
        if (optind < argc && streq(argv[optind], "--"))
                optind++;
        if (optind >= argc) {
                cli_error("exec: no command given");
                goto out;
        }
        if (conn_finish(&o) < 0)
                goto out;
        json_t *av = json_array();
        for (int i = optind; i < argc; i++)
                json_array_append_new(av, json_string(argv[i]));
        json_object_set_new(body, "argv", av);
        if (json_object_size(env))
                json_object_set(body, "env", env);
        if (tty) {
                if (stream) {
                        cli_error("exec: --stream and --tty do not go together (a terminal streams)");
                        goto out;
                }
                rc = client_exec_tty(&o, id, body);
                goto out;
        }
        if (with_stdin) {
                response in = {0};
                char buf[65536];
                ssize_t n;
                while ((n = read(0, buf, sizeof buf)) > 0)
                        client_collect(&in, buf, (size_t) n);
                /* bytes as they are: base64 keeps binary input intact */
                char *enc = sbx_base64_encode(in.body ? in.body : "", in.len);
                if (enc) {
                        json_object_set_new(body, "stdin", json_string(enc));
                        json_object_set_new(body, "stdin_encoding", json_string("base64"));
                }
                free(enc);
                free(in.body);
        }
        if (stream && !o.json)
                json_object_set_new(body, "stream", json_true());
        char *text = json_dumps(body, JSON_COMPACT);
        char path[128];
        snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", id);
        response r = {0};
        stream_state *ss = stream && !o.json ? calloc(1, sizeof *ss) : NULL;
        if (text && client_http(&o, "POST", path, "application/json", NULL, text, strlen(text), &r,
                            ss ? stream_sink : NULL, ss) >= 0) {
                if (r.status >= 300)
                        rc = client_api_error(&r);
                else if (ss)
                        rc = ss->ended ? ss->exit : SBX_EXIT_FAILURE;
                else {
                        json_t *j = client_body_json(&r);
                        if (o.json)
                                client_print_json(j);
                        else {
                                put_data(stdout, json_object_get(j, "stdout"),
                                        json_object_get(j, "encoding"));
                                put_data(stderr, json_object_get(j, "stderr"),
                                        json_object_get(j, "encoding"));
                        }
                        rc = exit_of(j);
                        json_decref(j);
                }
        }
        free(ss);
        free(text);
        free(r.body);
out:
        json_decref(body);
        json_decref(env);
        return rc;
}
