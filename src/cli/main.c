/* main.c — the sandboxer command: dispatch to one verb per file. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "verbs.h"

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *summary;
} verbs[] = {
        {"run", verb_run, "run a command in a fresh sandbox and report what happened"},
        {"doctor", verb_doctor, "kernel features and backends: available, or why not"},
        {"profile", verb_profile, "validate, list and show profiles"},
        {"gc", verb_gc, "remove what killed runs left behind (scratch, mounts, cgroups)"},
#if HAVE_LINUX /* the control plane needs SO_PEERCRED and getrandom */
        {"serve", verb_serve, "the control plane: HTTP API on a unix socket or TCP"},
        {"token", verb_token, "create, list and revoke API tokens"},
        {"audit", verb_audit, "verify the hash chain of the audit log"},
        {"supervise", verb_supervise, "internal: the supervisor of one sandbox (started by serve)"},
#endif
};

void cli_error(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("sandboxer: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static void usage(FILE *f) {
        fprintf(f, "Usage: sandboxer VERB [OPTIONS] ...\n\nRun untrusted code under kernel-enforced "
                   "isolation.\n\nVerbs:\n");
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
                fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
        fprintf(f, "\n'sandboxer VERB --help' describes a verb; 'man sandboxer' has the details.\n");
}

int main(int argc, char **argv) {
        if (argc < 2) {
                usage(stderr);
                return SBX_EXIT_FAILURE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
                usage(stdout);
                return 0;
        }
        if (strcmp(argv[1], "--version") == 0) {
                printf("sandboxer %s\n", SBX_VERSION);
                return 0;
        }
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
                if (strcmp(argv[1], verbs[i].name) == 0)
                        return verbs[i].fn(argc - 1, argv + 1);
        cli_error("unknown verb '%s'; see 'sandboxer --help'", argv[1]);
        return SBX_EXIT_FAILURE;
}
