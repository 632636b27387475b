/* main.c — `sandboxer create|ls|get|exec|cp|extend|recreate|destroy|events`: the API client
 * verbs, speaking HTTP/1.1 to `sandboxer serve`; human output by default, the server's JSON with
 * --json. The HTTP client is our own (http.c): the control plane's requests are simple, and it
 * keeps libcurl's dependency tree out of the program. */
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

int verb_client(int argc, char **argv) {
        signal(SIGPIPE, SIG_IGN);
        const char *v = argv[0];
        if (streq(v, "create"))
                return client_create(argc, argv);
        if (streq(v, "ls"))
                return client_ls(argc, argv);
        if (streq(v, "exec"))
                return client_exec(argc, argv);
        if (streq(v, "cp"))
                return client_cp(argc, argv);
        if (streq(v, "events"))
                return client_events(argc, argv);
        if (streq(v, "port-forward"))
                return client_port_forward(argc, argv);
        if (streq(v, "get") || streq(v, "extend") || streq(v, "recreate") || streq(v, "destroy") ||
                streq(v, "pause") || streq(v, "resume"))
                return client_simple(v, argc, argv);
        if (streq(v, "snapshot") || streq(v, "restore"))
                return client_snapshot(v, argc, argv);
        if (streq(v, "volume"))
                return client_volume(argc, argv);
        if (streq(v, "host"))
                return client_host(argc, argv);
        if (streq(v, "estimate"))
                return client_estimate(argc, argv);
        if (streq(v, "credits"))
                return client_credits(argc, argv);
        if (streq(v, "meters"))
                return client_meters(argc, argv);
        if (streq(v, "node"))
                return client_node(argc, argv);
        if (streq(v, "peer"))
                return client_peer(argc, argv);
        if (streq(v, "deal"))
                return client_deal(argc, argv);
        cli_error("unknown client verb '%s'", v);
        return SBX_EXIT_FAILURE;
}
