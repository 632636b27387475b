/* attack.h — the verdict protocol shared by the escape corpus (tests/escape/README.md).
 * An attack tries one escape and prints exactly one line on stdout, then exits 0:
 *   ESCAPED <evidence>          it reached its goal
 *   BLOCKED <how>[ <detail>]    refused; <how> is an errno name (or several, comma-separated,
 *                               when it tried several targets) or a word saying how
 *   ERROR <what>                anything else: bad arguments, a step that should never fail
 * A process killed by the sandbox prints nothing; the runner sees the signal and the report.
 * Attacks are static and tiny so they run inside any root view; helpers here are header-only. */
#ifndef SBX_ATTACK_H
#define SBX_ATTACK_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline const char *ename(int e) {
        const char *n = strerrorname_np(e);
        return n ? n : "E?";
}

__attribute__((noreturn, format(printf, 2, 3))) static inline void verdict(const char *kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        printf("%s ", kind);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        _exit(0);
}
#define ESCAPED(...) verdict("ESCAPED", __VA_ARGS__)
#define BLOCKED(...) verdict("BLOCKED", __VA_ARGS__)
#define ERROR(...) verdict("ERROR", __VA_ARGS__)
/* BLOCKED_ERRNO(what): refused with the current errno. */
#define BLOCKED_ERRNO(what) BLOCKED("%s %s", ename(errno), what)

/* Distinct errno names of several tries, comma-separated (for attacks with many targets). */
typedef struct {
        char names[256];
} errset;
static inline void errset_add(errset *s, int e) {
        const char *n = ename(e);
        size_t l = strlen(n);
        for (const char *p = s->names; (p = strstr(p, n)); p += l)
                if ((p == s->names || p[-1] == ',') && (p[l] == ',' || p[l] == 0))
                        return;
        if (strlen(s->names) + l + 2 >= sizeof(s->names))
                return;
        if (s->names[0])
                strcat(s->names, ",");
        strcat(s->names, n);
}

/* "parent" → our parent (inside a sandbox: its init), else a pid number. */
static inline pid_t target_pid(const char *arg) {
        if (strcmp(arg, "parent") == 0)
                return getppid();
        return (pid_t) strtol(arg, NULL, 10);
}

/* Read up to n-1 bytes of a file into buf (NUL-terminated); -errno on failure. */
static inline long slurp(const char *path, char *buf, size_t n) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        long r = read(fd, buf, n - 1);
        int e = errno;
        close(fd);
        if (r < 0)
                return -e;
        buf[r] = 0;
        return r;
}
#endif
