/* sethostname NAME — change the hostname (the runner checks the host's stays unchanged). */
#include "attack.h"

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: sethostname NAME");
        if (sethostname(argv[1], strlen(argv[1])) < 0)
                BLOCKED_ERRNO("sethostname");
        ESCAPED("hostname set to %s", argv[1]);
}
