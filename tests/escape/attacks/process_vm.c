/* process_vm — read another process's memory with process_vm_readv (our own child). */
#include "attack.h"
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>

static char secret[16] = "CHILDMEMORY";

int main(void) {
        int p[2];
        if (pipe(p) < 0)
                ERROR("pipe");
        pid_t c = fork();
        if (c < 0)
                ERROR("fork: %s", ename(errno));
        if (c == 0) {
                strcpy(secret, "CHILDCHANGED");
                (void) !write(p[1], "x", 1);
                alarm(10);
                for (;;)
                        pause();
        }
        char x, buf[16] = { 0 };
        (void) !read(p[0], &x, 1);
        struct iovec l = { buf, sizeof(buf) - 1 }, r = { secret, sizeof(buf) - 1 };
        ssize_t n = process_vm_readv(c, &l, 1, &r, 1, 0);
        int e = errno;
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        if (n < 0) {
                errno = e;
                BLOCKED_ERRNO("process_vm_readv");
        }
        if (strcmp(buf, "CHILDCHANGED") != 0)
                ERROR("read %zd bytes but not the child's value", n);
        ESCAPED("read the child's memory: %s", buf);
}
