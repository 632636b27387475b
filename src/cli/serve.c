/* serve.c — `sandboxer serve`: open the store, listen, answer the HTTP API until SIGTERM/SIGINT. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http.h"
#include "daemon/store.h"
#include "verbs.h"

#define MAX_LISTEN 16

static void help(void) {
        printf("sandboxer serve [--listen ADDR]... [--state-dir DIR] [--store URL]\n\n"
               "The control plane: the HTTP API of DESIGN.md (so far /healthz, /metrics, /v1/profiles).\n"
               "SIGTERM or SIGINT stops serving; the store and audit log stay.\n\n"
               "  --listen ADDR     unix:PATH (mode 0660; the peer's uid is the actor: the socket's\n"
               "                    owner and root are adm) or HOST:PORT (TCP: bearer tokens from\n"
               "                    'sandboxer token create' required). Repeatable. Default:\n"
               "                    unix:$SANDBOXER_RUNTIME_DIR/sandboxer.sock, "
               "/run/sandboxer/sandboxer.sock\n"
               "                    as root, else $XDG_RUNTIME_DIR/sandboxer/sandboxer.sock\n"
               "  --state-dir DIR   default $SANDBOXER_STATE_DIR, /var/lib/sandboxer as root,\n"
               "                    else $XDG_STATE_HOME/sandboxer\n"
               "  --store URL       sqlite:PATH (default: sandboxer.db in the state dir)\n"
               "Exit status: 0 stopped by a signal, 125 usage or startup error.\n");
}

int verb_serve(int argc, char **argv) {
        enum { ARG_LISTEN = 0x100, ARG_STATE_DIR, ARG_STORE };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"listen", required_argument, NULL, ARG_LISTEN},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"store", required_argument, NULL, ARG_STORE},
                {},
        };
        sbx_listen_addr addrs[MAX_LISTEN];
        size_t n_addrs = 0;
        const char *state_flag = NULL, *store_url = NULL;
        sbx_error e = {};
        char buf[1024];
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_LISTEN:
                        if (n_addrs >= MAX_LISTEN) {
                                cli_error("serve: at most %d --listen addresses", MAX_LISTEN);
                                return SBX_EXIT_FAILURE;
                        }
                        if (sbx_listen_addr_parse(optarg, &addrs[n_addrs], &e) < 0) {
                                cli_error("serve: --listen: %s", sbx_error_format(&e, buf, sizeof buf));
                                return SBX_EXIT_FAILURE;
                        }
                        n_addrs++;
                        break;
                case ARG_STATE_DIR:
                        state_flag = optarg;
                        break;
                case ARG_STORE:
                        store_url = optarg;
                        break;
                case '?':
                        cli_error("serve: see 'sandboxer serve --help'");
                        return SBX_EXIT_FAILURE;
                default:
                        return SBX_EXIT_FAILURE;
                }
        if (optind < argc) {
                cli_error("serve: unexpected argument '%s'", argv[optind]);
                return SBX_EXIT_FAILURE;
        }
        if (n_addrs == 0) {
                if (sbx_listen_addr_default(&addrs[0], &e) < 0) {
                        cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                        return SBX_EXIT_FAILURE;
                }
                n_addrs = 1;
        }

        _cleanup_free_ char *state_dir = NULL;
        if (sbx_state_dir(state_flag, &state_dir) < 0) {
                cli_error("serve: no state dir (set XDG_STATE_HOME or pass --state-dir)");
                return SBX_EXIT_FAILURE;
        }
        _cleanup_store_ sbx_store *store = NULL;
        r = sbx_store_open(store_url, state_dir, &store, &e);
        if (r < 0) {
                cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                return SBX_EXIT_FAILURE;
        }

        /* Blocked before any server thread exists, so only sigwait() below sees them. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                cli_error("serve: sigprocmask: %m");
                return SBX_EXIT_FAILURE;
        }

        sbx_http_server *srv = NULL;
        if (sbx_http_server_new(store, &srv) < 0) {
                cli_error("serve: out of memory");
                return SBX_EXIT_FAILURE;
        }
        for (size_t i = 0; i < n_addrs; i++) {
                r = sbx_http_server_listen(srv, &addrs[i], &e);
                if (r < 0) {
                        cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                        sbx_http_server_free(srv);
                        return SBX_EXIT_FAILURE;
                }
                if (addrs[i].is_unix)
                        fprintf(stderr, "level=info event=listening addr=unix:%s store=%s\n", addrs[i].path,
                                sbx_store_path(store));
                else
                        fprintf(stderr, "level=info event=listening addr=%s%s%s:%u store=%s auth=bearer\n",
                                strchr(addrs[i].host, ':') ? "[" : "", addrs[i].host,
                                strchr(addrs[i].host, ':') ? "]" : "", addrs[i].port, sbx_store_path(store));
        }

        int sig = 0;
        while (sigwait(&mask, &sig) != 0)
                ;
        fprintf(stderr, "level=info event=stopping signal=%s\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        sbx_http_server_free(srv);
        return 0;
}
