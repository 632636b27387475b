/* read_file [--any] PATH... — read a host secret. Without --any the content must start with the
 * runner's marker "SBXSECRET" (so reading some other file of that name is not mistaken for it). */
#include "attack.h"

int main(int argc, char **argv) {
        int any = 0, i = 1;
        errset es = { { 0 } };
        char buf[4096];
        if (argc > 1 && strcmp(argv[1], "--any") == 0)
                any = 1, i++;
        if (i >= argc)
                ERROR("usage: read_file [--any] PATH...");
        for (; i < argc; i++) {
                long r = slurp(argv[i], buf, sizeof(buf));
                if (r < 0) {
                        errset_add(&es, (int) -r);
                        continue;
                }
                if (any && r > 0)
                        ESCAPED("%s: read %ld bytes", argv[i], r);
                if (!any && strncmp(buf, "SBXSECRET", 9) == 0)
                        ESCAPED("%s: %.40s", argv[i], buf);
                if (!any)
                        ERROR("%s: readable but not the planted secret (%ld bytes)", argv[i], r);
                errset_add(&es, ENODATA);
        }
        BLOCKED("%s", es.names);
}
