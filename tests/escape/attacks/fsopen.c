/* fsopen — the new mount API: fsopen("tmpfs") + fsconfig + fsmount, a detached mount of our own. */
#include "attack.h"
#include <linux/mount.h>

int main(void) {
        int fs = (int) syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0)
                BLOCKED_ERRNO("fsopen");
        if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                BLOCKED_ERRNO("fsconfig");
        int m = (int) syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
        if (m < 0)
                BLOCKED_ERRNO("fsmount");
        ESCAPED("fsmount gave a tmpfs mount fd %d", m);
}
