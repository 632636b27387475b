/* write_file PATH — create PATH and write to it (removed again on success). */
#include "attack.h"

int main(int argc, char **argv) {
        if (argc != 2)
                ERROR("usage: write_file PATH");
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                BLOCKED_ERRNO(argv[1]);
        if (write(fd, "pwned\n", 6) != 6) {
                int e = errno;
                close(fd);
                unlink(argv[1]);
                errno = e;
                BLOCKED_ERRNO("created but write failed");
        }
        close(fd);
        unlink(argv[1]);
        ESCAPED("created and wrote %s", argv[1]);
}
