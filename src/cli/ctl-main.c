/* ctl-main.c — sandboxer-ctl: the control-plane verbs (serve, token, audit), which need HTTP,
 * TLS, SQLite and JSON libraries. `sandboxer VERB` execs this program for them, so that
 * `sandboxer run` loads none of those: ~2 ms less at every start. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "verbs.h"

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
} verbs[] = {
        {"serve", verb_serve},
        {"token", verb_token},
        {"audit", verb_audit},
        {"supervise", verb_supervise},
        {"skill", verb_skill},
        {"create", verb_client},
        {"ls", verb_client},
        {"get", verb_client},
        {"exec", verb_client},
        {"cp", verb_client},
        {"extend", verb_client},
        {"recreate", verb_client},
        {"pause", verb_client},
        {"resume", verb_client},
        {"snapshot", verb_client},
        {"restore", verb_client},
        {"volume", verb_client},
        {"host", verb_client},
        {"estimate", verb_client},
        {"credits", verb_client},
        {"meters", verb_client},
        {"node", verb_client},
        {"peer", verb_client},
        {"deal", verb_client},
        {"destroy", verb_client},
        {"events", verb_client},
        {"port-forward", verb_client},
};

int main(int argc, char **argv) {
        if (argc < 2) {
                cli_error("sandboxer-ctl is run by 'sandboxer VERB'; see 'sandboxer --help'");
                return SBX_EXIT_FAILURE;
        }
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
                if (strcmp(argv[1], verbs[i].name) == 0)
                        return cli_env_ok() ? verbs[i].fn(argc - 1, argv + 1) : SBX_EXIT_FAILURE;
        cli_error("unknown verb '%s'; see 'sandboxer --help'", argv[1]);
        return SBX_EXIT_FAILURE;
}
