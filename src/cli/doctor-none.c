/* doctor-none.c — `doctor` and `gc` where sandboxer was built without Linux sandboxing. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "verbs.h"

int verb_doctor(int argc, char **argv) {
        bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
        if (json)
                printf("{\"platform_sandboxing\": false, \"backends\": {}, \"reason\": \"built without "
                       "Linux namespaces, "
                       "Landlock and seccomp\"}\n");
        else
                printf("This build of sandboxer has no sandbox backend: it was built for a platform without "
                       "Linux\n"
                       "namespaces, Landlock and seccomp. `sandboxer run` refuses to run anything unless\n"
                       "SANDBOXER_ALLOW_UNSANDBOXED=1 is set, and then runs the command WITHOUT a "
                       "sandbox.\n");
        return 1;
}

int verb_gc(int argc, char **argv) {
        printf("nothing to collect: this build makes no cgroups, mounts or scratch directories\n");
        return 0;
}
