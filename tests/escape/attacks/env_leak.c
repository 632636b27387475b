/* env_leak — find the caller's SBX_SECRET_ENV in our environment or any visible process's
 * (/proc/PID/environ: the sandbox's init, the host's pid 1 where visible). */
#include "attack.h"
#include <dirent.h>

extern char **environ;

int main(void) {
        char path[300], buf[65536];
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "SBX_SECRET_ENV=", 15) == 0)
                        ESCAPED("own environment: %.40s", *e);
        DIR *d = opendir("/proc");
        if (!d)
                BLOCKED_ERRNO("/proc");
        struct dirent *de;
        int seen = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
                long n = slurp(path, buf, sizeof(buf));
                if (n <= 0)
                        continue;
                seen++;
                for (long i = 0; i + 15 <= n; i += (long) strlen(buf + i) + 1)
                        if (strncmp(buf + i, "SBX_SECRET_ENV=", 15) == 0)
                                ESCAPED("%s: %.40s", path, buf + i);
        }
        closedir(d);
        BLOCKED("not-found in own environment nor %d readable /proc/*/environ", seen);
}
