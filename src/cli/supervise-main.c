/* supervise-main.c — sandboxer-supervise: `sandboxer supervise` as a program of its own, linked
 * with the sandbox library and jansson only, so that a sandbox's supervisor starts without
 * loading the control plane's libraries (HTTP, TLS, SQLite): ~2 ms less per create. */
#include <stdarg.h>
#include <stdio.h>

#include "verbs.h"

int main(int argc, char **argv) {
        cli_program = "sandboxer-supervise";
        return verb_supervise(argc, argv);
}
