/* shocker — open_by_handle_at (the 2014 Docker escape): a file handle opens a file by inode,
 * past every path-based rule and mount boundary. Uses the handle of the current directory. */
#include "attack.h"

int main(void) {
        struct {
                struct file_handle h;
                unsigned char buf[128];
        } fh;
        int mnt;
        fh.h.handle_bytes = sizeof(fh.buf);
        if (name_to_handle_at(AT_FDCWD, ".", &fh.h, &mnt, 0) < 0)
                ERROR("name_to_handle_at: %s", ename(errno));
        int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = open_by_handle_at(cwd, &fh.h, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                BLOCKED_ERRNO("open_by_handle_at");
        ESCAPED("opened a directory by its file handle (fd %d)", fd);
}
