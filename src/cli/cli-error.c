/* cli-error.c — how every sandboxer program says what went wrong: "PROGRAM: MESSAGE" on stderr,
 * one line (sandboxer, sandboxer-ctl and sandboxer-supervise share it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "verbs.h"

const char *cli_program = "sandboxer";

void cli_error(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs(cli_program, stderr);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

bool cli_env_ok(void) {
        const char *rd = getenv("SANDBOXER_RUNTIME_DIR");
        if (rd && rd[0] && rd[0] != '/') {
                cli_error("SANDBOXER_RUNTIME_DIR is '%s': it must be an absolute path (or unset, for the "
                          "default)",
                        rd);
                return false;
        }
        return true;
}
