/* hostname_leak HOSTNAME — learn the host's name (identifies the machine to the outside). */
#include "attack.h"
#include <sys/utsname.h>

int main(int argc, char **argv) {
        struct utsname u;
        if (argc != 2)
                ERROR("usage: hostname_leak HOST-HOSTNAME");
        if (uname(&u) < 0)
                ERROR("uname: %s", ename(errno));
        if (strcmp(u.nodename, argv[1]) == 0)
                ESCAPED("nodename is the host's: %s", u.nodename);
        BLOCKED("own-hostname %s", u.nodename);
}
