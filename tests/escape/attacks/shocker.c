/* shocker — open_by_handle_at (the 2014 Docker escape): a file handle opens a file by inode,
 * past every path-based rule and mount boundary. Uses the handle of $TMPDIR (tmpfs and ext4
 * give handles; an overlay, as the read-only workspace is, does not). */
#include "attack.h"

int main(void) {
        struct {
                struct file_handle h;
                unsigned char buf[128];
        } fh;
        int mnt;
        fh.h.handle_bytes = sizeof(fh.buf);
        const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        if (name_to_handle_at(AT_FDCWD, dir, &fh.h, &mnt, 0) < 0)
                ERROR("name_to_handle_at %s: %s", dir, ename(errno));
        int cwd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = open_by_handle_at(cwd, &fh.h, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                BLOCKED_ERRNO("open_by_handle_at");
        ESCAPED("opened a directory by its file handle (fd %d)", fd);
}
