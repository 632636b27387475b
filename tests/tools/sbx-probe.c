/* sbx-probe.c — a static probe run INSIDE sandboxes by the integration tests: makes one raw call
 * and prints what happened, so a test can assert the fence's answer.
 *   sbx-probe nr N [ARG...]   raw syscall N with integer args → "ok RET" or "errno NAME"
 *   sbx-probe int80           getpid through the i386 ABI (int $0x80)
 *   sbx-probe x32             getpid through the x32 ABI (nr | 0x40000000)
 *   sbx-probe tiocsti         TIOCSTI on a fresh pty, command with garbage in the upper 32 bits too
 *   sbx-probe clone3          raw clone3 → errno
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int report(long r) {
        if (r < 0) {
                printf("errno %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
                return 1;
        }
        printf("ok %ld\n", r);
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: sbx-probe nr N [ARG...] | int80 | x32 | tiocsti | clone3\n");
                return 2;
        }
        setvbuf(stdout, NULL, _IONBF, 0);
        if (strcmp(argv[1], "nr") == 0 && argc >= 3) {
                long a[6] = {0};
                for (int i = 3; i < argc && i < 9; i++)
                        a[i - 3] = strtol(argv[i], NULL, 0);
                return report(syscall(strtol(argv[2], NULL, 0), a[0], a[1], a[2], a[3], a[4], a[5]));
        }
#if defined(__x86_64__)
        if (strcmp(argv[1], "int80") == 0) {
                long r;
                printf("calling\n");
                __asm__ volatile("int $0x80" : "=a"(r) : "a"(20 /* i386 getpid */) : "memory");
                printf("returned %ld\n", r);
                return 0;
        }
        if (strcmp(argv[1], "x32") == 0) {
                printf("calling\n");
                long r = syscall(0x40000000L | 39 /* getpid */);
                printf("returned %ld\n", r < 0 ? -(long) errno : r); /* as int80's: -ERRNO or the pid */
                return 0;
        }
#endif
        if (strcmp(argv[1], "tiocsti") == 0) {
                /* TIOCSTI is allowed on one's controlling terminal: make the pty ours, in a child
                 * (a session leader cannot setsid). */
                pid_t pid = fork();
                if (pid < 0)
                        return report(-1);
                if (pid > 0) {
                        int st;
                        waitpid(pid, &st, 0);
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
                }
                int m, s;
                if (openpty(&m, &s, NULL, NULL, NULL) < 0)
                        return report(-1);
                if (setsid() < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
                        return report(-1);
                char c = 'x';
                long r1 = syscall(SYS_ioctl, s, (unsigned long) TIOCSTI, &c);
                int e1 = errno;
                long r2 = syscall(SYS_ioctl, s, 0xdead000000000000UL | TIOCSTI, &c);
                errno = e1;
                report(r1);
                return report(r2);
        }
        if (strcmp(argv[1], "clone3") == 0)
                return report(syscall(SYS_clone3, NULL, 0));
        fprintf(stderr, "sbx-probe: unknown probe '%s'\n", argv[1]);
        return 2;
}
