/* audit.c — append to and verify the hash-chained audit log (format in audit.h). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/jsonw.h"
#include "basic/sha256.h"
#include "daemon/audit.h"

#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"
/* The fixed tail of every line: ,"hash":"<64 hex>"} */
#define HASH_TAIL_LEN (STRLEN(",\"hash\":\"") + 64 + STRLEN("\"}"))
#define PREV_TAIL_LEN (STRLEN(",\"prev_hash\":\"") + 64 + 1)

static bool is_hex64(const char *s) {
        for (int i = 0; i < 64; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* Check one line's own shape and hash (len without the newline); on success copy its
 * prev_hash into ret_prev. Returns a static description of what is wrong, NULL if fine. */
static const char *check_line(const char *l, size_t len, char ret_prev[static 65]) {
        if (len < 2 + PREV_TAIL_LEN + HASH_TAIL_LEN || l[0] != '{')
                return "not an audit record (truncated or foreign text)";
        const char *ht = l + len - HASH_TAIL_LEN;
        if (strncmp(ht, ",\"hash\":\"", 9) != 0 || !is_hex64(ht + 9) || strcmp(ht + 9 + 64, "\"}") != 0)
                return "no well-formed \"hash\" at the end (truncated or altered)";
        const char *pt = ht - PREV_TAIL_LEN;
        if (strncmp(pt, ",\"prev_hash\":\"", 14) != 0 || !is_hex64(pt + 14) || pt[14 + 64] != '"')
                return "no well-formed \"prev_hash\" before \"hash\" (altered)";
        char h[65];
        sha256_hex(l, (size_t) (ht - l), h);
        if (memcmp(h, ht + 9, 64) != 0)
                return "its hash does not match its content (altered)";
        memcpy(ret_prev, pt + 14, 64);
        ret_prev[64] = 0;
        return NULL;
}

/* The hash of the file's last line (ZERO_HASH if empty), reading backwards from the end. */
static int last_line_hash(int fd, char ret[static 65], sbx_error *e, const char *path) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return sbx_error_set(e, errno, "audit: append", "stat %s: %m", path);
        if (st.st_size == 0) {
                memcpy(ret, ZERO_HASH, 65);
                return 0;
        }
        size_t want = 4096;
        for (;;) {
                size_t n = (size_t) MIN((off_t) want, st.st_size);
                _cleanup_free_ char *buf = malloc(n + 1);
                if (!buf)
                        return -ENOMEM;
                ssize_t k = pread(fd, buf, n, st.st_size - (off_t) n);
                if (k != (ssize_t) n)
                        return sbx_error_set(e, k < 0 ? errno : EIO, "audit: append", "read %s: %m", path);
                buf[n] = 0;
                if (buf[n - 1] != '\n')
                        return sbx_error_set(e, EBADMSG, "audit: append",
                                "audit log %s ends in a partial line; run 'sandboxer audit verify' "
                                "and move the damaged log aside",
                                path);
                char *start = memrchr(buf, '\n', n - 1);
                if (!start && (off_t) n < st.st_size) {
                        want *= 4;
                        continue;
                }
                start = start ? start + 1 : buf;
                sha256_hex(start, (size_t) (buf + n - 1 - start), ret);
                return 0;
        }
}

static void now_iso(char buf[static 32]) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

int sbx_audit_append(const char *path, const char *actor, const char *action, const char *target,
        const char *outcome, const char *detail, sbx_error *e) {
        return sbx_audit_append_x(path, actor, action, target, outcome, detail, true, e);
}

int sbx_audit_sync(const char *path, sbx_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return sbx_error_set(e, errno, "audit: sync", "cannot open audit log %s: %m", path);
        if (fsync(fd) < 0)
                return sbx_error_set(e, errno, "audit: sync", "fsync %s: %m", path);
        return 0;
}

int sbx_audit_append_x(const char *path, const char *actor, const char *action, const char *target,
        const char *outcome, const char *detail, bool sync, sbx_error *e) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_jsonw_ jsonw w;
        _cleanup_free_ char *text = NULL;
        char prev[65], hash[65], t[32];
        size_t len;
        int r;

        jsonw_init(&w, false);
        fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return sbx_error_set(e, errno, "audit: append", "cannot open audit log %s: %m", path);
        if (flock(fd, LOCK_EX) < 0)
                return sbx_error_set(e, errno, "audit: append", "lock %s: %m", path);
        r = last_line_hash(fd, prev, e, path);
        if (r < 0)
                return r;

        now_iso(t);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "time", t);
        jsonw_kv_string(&w, "actor", actor);
        jsonw_kv_string(&w, "action", action);
        jsonw_kv_string(&w, "target", target);
        jsonw_kv_string(&w, "outcome", outcome);
        if (detail)
                jsonw_kv_string(&w, "detail", detail);
        jsonw_kv_string(&w, "prev_hash", prev);
        jsonw_end_object(&w);
        r = jsonw_finish(&w, false, &text, &len);
        if (r < 0)
                return sbx_error_set(e, r, "audit: append", "cannot format audit record");

        /* Replace the closing brace by ,"hash":"…"}\n — the hash covers everything before it. */
        len--;
        sha256_hex(text, len, hash);
        char *line = realloc(text, len + HASH_TAIL_LEN + 2);
        if (!line)
                return -ENOMEM;
        text = line;
        snprintf(text + len, HASH_TAIL_LEN + 2, ",\"hash\":\"%s\"}\n", hash);
        len += HASH_TAIL_LEN + 1;

        ssize_t k = write(fd, text, len);
        if (k != (ssize_t) len)
                return sbx_error_set(e, k < 0 ? errno : EIO, "audit: append", "write %s: %m", path);
        if (sync && fsync(fd) < 0)
                return sbx_error_set(e, errno, "audit: append", "fsync %s: %m", path);
        return 0;
}

int sbx_audit_verify(const char *path, unsigned *ret_lines, sbx_error *e) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *l = NULL;
        size_t cap = 0;
        ssize_t n;
        unsigned no = 0;
        char expect[65] = ZERO_HASH, prev[65];

        if (!f)
                return sbx_error_set(e, errno, "audit: verify", "cannot open audit log %s: %m", path);
        while ((n = getline(&l, &cap, f)) >= 0) {
                no++;
                bool nl = n > 0 && l[n - 1] == '\n';
                size_t len = (size_t) n - nl;
                const char *why = NULL;
                if (memchr(l, 0, len))
                        why = "contains a NUL byte (altered)";
                else {
                        l[len] = 0;
                        why = check_line(l, len, prev);
                }
                if (!why && strcmp(prev, expect) != 0)
                        why = no == 1 ? "prev_hash is not the chain's start (lines removed at the head?)"
                                      : "prev_hash does not match the previous line (a line before it was "
                                        "altered, removed or inserted)";
                if (!why && !nl)
                        why = "no final newline (truncated)";
                if (why) {
                        int r = sbx_error_set(
                                e, EBADMSG, "audit: verify", "audit log %s: line %u: %s", path, no, why);
                        if (e)
                                e->line = no;
                        return r;
                }
                sha256_hex(l, len, expect);
        }
        if (ferror(f))
                return sbx_error_set(e, EIO, "audit: verify", "read %s: %m", path);
        if (ret_lines)
                *ret_lines = no;
        return 0;
}

int sbx_audit_local_actor(char **ret) {
        struct passwd *pw = getpwuid(geteuid());
        char *s;
        if (pw && pw->pw_name ? asprintf(&s, "adm:%s", pw->pw_name) < 0
                              : asprintf(&s, "adm:uid-%u", (unsigned) geteuid()) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}
