/* verbs.h — one function per CLI verb (one file each under src/cli/). Each returns the
 * process exit status; argv[0] is the verb name. */
#pragma once

#include <stdbool.h>

int verb_run(int argc, char **argv);
int verb_doctor(int argc, char **argv);
int verb_profile(int argc, char **argv);
int verb_gc(int argc, char **argv);
int verb_token(int argc, char **argv);
int verb_audit(int argc, char **argv);
int verb_serve(int argc, char **argv);
int verb_supervise(int argc, char **argv);
int verb_skill(int argc, char **argv);
/* create, ls, get, exec, cp, extend, recreate, destroy, events: argv[0] names which */
int verb_client(int argc, char **argv);

/* Exit statuses of DESIGN.md. */
#define SBX_EXIT_TIMEOUT 124
#define SBX_EXIT_FAILURE 125
#define SBX_EXIT_NOEXEC 126
#define SBX_EXIT_NOTFOUND 127

/* Print "PROGRAM: MESSAGE\n" to stderr (cli-error.c; PROGRAM is cli_program, "sandboxer" unless
 * the program says otherwise). */
extern const char *cli_program;
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The environment's directories are usable as given: SANDBOXER_RUNTIME_DIR, when set, is an
 * absolute path (a relative one was ignored for the default, silently). false: said why. */
bool cli_env_ok(void);
