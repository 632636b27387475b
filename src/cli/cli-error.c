/* cli-error.c — how every sandboxer program says what went wrong: "PROGRAM: MESSAGE" on stderr,
 * one line (sandboxer, sandboxer-ctl and sandboxer-supervise share it). */
#include <stdarg.h>
#include <stdio.h>

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
