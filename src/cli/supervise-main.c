/* supervise-main.c — sandboxer-supervise: `sandboxer supervise` as a program of its own, linked
 * with the sandbox library and jansson only, so that a sandbox's supervisor starts without
 * loading the control plane's libraries (HTTP, TLS, SQLite): ~2 ms less per create. */
#include <stdarg.h>
#include <stdio.h>

#include "verbs.h"

void cli_error(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("sandboxer-supervise: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

int main(int argc, char **argv) {
        return verb_supervise(argc, argv);
}
