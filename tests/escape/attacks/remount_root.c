/* remount_root — remount / read-write, keeping the mount's other (possibly locked) flags. */
#include "attack.h"
#include <sys/mount.h>

int main(void) {
        char line[4096];
        unsigned long flags = MS_REMOUNT | MS_BIND;
        /* Where the mount table cannot be read (Landlock without /proc), try plain flags. */
        FILE *f = fopen("/proc/self/mountinfo", "re");
        while (f && fgets(line, sizeof(line), f)) { /* the last mount on / wins */
                char mp[1024], opts[1024];
                if (sscanf(line, "%*s %*s %*s %*s %1023s %1023s", mp, opts) != 2 || strcmp(mp, "/") != 0)
                        continue;
                flags = MS_REMOUNT | MS_BIND;
                char *save = NULL;
                for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                        if (!strcmp(o, "nosuid"))
                                flags |= MS_NOSUID;
                        else if (!strcmp(o, "nodev"))
                                flags |= MS_NODEV;
                        else if (!strcmp(o, "noexec"))
                                flags |= MS_NOEXEC;
                        else if (!strcmp(o, "noatime"))
                                flags |= MS_NOATIME;
                        else if (!strcmp(o, "nodiratime"))
                                flags |= MS_NODIRATIME;
                        else if (!strcmp(o, "relatime"))
                                flags |= MS_RELATIME;
                        else if (!strcmp(o, "strictatime"))
                                flags |= MS_STRICTATIME;
                }
        }
        if (f)
                fclose(f);
        if (mount(NULL, "/", NULL, flags, NULL) < 0)
                BLOCKED_ERRNO("remount / rw");
        ESCAPED("remounted / read-write");
}
