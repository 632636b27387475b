/* main.c — the sandboxer command: dispatch to one verb per file. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "verbs.h"

/* fn NULL: the verb is sandboxer-ctl's (the control plane's libraries live there only). */
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
        {"serve", NULL, "the control plane: HTTP API on a unix socket or TCP"},
        {"token", NULL, "create, list and revoke API tokens"},
        {"audit", NULL, "verify the hash chains of the audit log and the credit ledger"},
        {"create", NULL, "create a persistent sandbox (control plane client)"},
        {"ls", NULL, "list sandboxes"},
        {"get", NULL, "show a sandbox's record"},
        {"exec", NULL, "run a command in a sandbox"},
        {"cp", NULL, "copy a file into or out of a sandbox"},
        {"extend", NULL, "extend a sandbox's TTL"},
        {"recreate", NULL, "destroy and provision a sandbox again"},
        {"pause", NULL, "pause a sandbox (its processes frozen, its clocks stopped)"},
        {"resume", NULL, "resume a paused sandbox"},
        {"snapshot", NULL, "keep a sandbox's files; list and delete snapshots"},
        {"restore", NULL, "create a sandbox from a snapshot"},
        {"volume", NULL, "volumes: create, list, delete; their files without a sandbox"},
        {"host", NULL, "placement hosts of extensions: add, list, remove"},
        {"estimate", NULL, "what a sandbox would cost, on each extension its route would consider"},
        {"credits", NULL, "a tenant's credits; an adm's grants; the credit ledger"},
        {"meters", NULL, "what sandboxes used (wall, CPU, memory, egress) and what it cost"},
        {"node", NULL, "this node's id and public key (what a peer registers)"},
        {"peer", NULL, "the peers this node makes deals with: add, list, remove"},
        {"deal", NULL, "a run on a peer, paid for by a signed deal; list, accept, reject deals"},
        {"destroy", NULL, "destroy a sandbox"},
        {"events", NULL, "follow the lifecycle events"},
        {"port-forward", NULL, "reach a port inside a sandbox from a local port"},
        {"skill", NULL, "signed skills: keygen, sign, verify, run"},
        {"supervise", NULL, "internal: the supervisor of one sandbox (started by serve)"},
#endif
};

static void usage(FILE *f) {
        fprintf(f, "Usage: sandboxer VERB [OPTIONS] ...\n\nRun untrusted code under kernel-enforced "
                   "isolation.\n\nVerbs:\n");
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
                fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
        fprintf(f, "\n'sandboxer VERB --help' describes a verb; 'man sandboxer' has the details.\n");
}

/* Exec PROGRAM (next to this one, in ../libexec/sandboxer, or in the install's libexec) with
 * argv as given. Returns only on failure. */
static int exec_sibling(const char *program, char **argv) {
        char self[PATH_MAX], path[PATH_MAX + 64];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
                self[n] = 0;
                char *slash = strrchr(self, '/');
                if (slash)
                        *slash = 0;
                snprintf(path, sizeof path, "%s/%s", self, program);
                execv(path, argv);
                snprintf(path, sizeof path, "%s/../libexec/sandboxer/%s", self, program);
                execv(path, argv);
        }
        snprintf(path, sizeof path, "%s/%s", SBX_LIBEXECDIR, program);
        execv(path, argv);
        cli_error("cannot run %s (next to this program or in %s): %m; reinstall sandboxer", program,
                SBX_LIBEXECDIR);
        return SBX_EXIT_FAILURE;
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
                if (strcmp(argv[1], verbs[i].name) == 0) {
                        if (!cli_env_ok())
                                return SBX_EXIT_FAILURE;
                        if (verbs[i].fn)
                                return verbs[i].fn(argc - 1, argv + 1);
                        return exec_sibling("sandboxer-ctl", argv);
                }
        cli_error("unknown verb '%s'; see 'sandboxer --help'", argv[1]);
        return SBX_EXIT_FAILURE;
}
