/* log.c — see log.h. */
#include "daemon/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/jsonw.h"
#include "basic/macro.h"

static const char *const level_names[_SBX_LOG_LEVEL_MAX] = {
        [SBX_LOG_ERROR] = "error",
        [SBX_LOG_WARNING] = "warning",
        [SBX_LOG_INFO] = "info",
};

/* A bare value: something a reader splits on never appears in it. */
static bool bare(const char *v) {
        if (!*v)
                return false;
        for (const unsigned char *p = (const unsigned char *) v; *p; p++)
                if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
                        return false;
        return true;
}

void sbx_log(sbx_log_level level, const char *event, ...) {
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);
        if (!f)
                return;
        fprintf(f, "level=%s event=%s",
                level >= 0 && level < _SBX_LOG_LEVEL_MAX ? level_names[level] : "info", event);
        va_list ap;
        va_start(ap, event);
        for (const char *k; (k = va_arg(ap, const char *));) {
                const char *v = va_arg(ap, const char *);
                if (!v)
                        v = "-";
                if (bare(v)) {
                        fprintf(f, " %s=%s", k, v);
                        continue;
                }
                _cleanup_free_ char *q = NULL;
                if (json_quote(v, strlen(v), &q) >= 0)
                        fprintf(f, " %s=%s", k, q);
        }
        va_end(ap);
        fputc('\n', f);
        if (fclose(f) != 0) {
                free(line);
                return;
        }
        for (size_t off = 0; off < len;) {
                ssize_t n = write(STDERR_FILENO, line + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                off += (size_t) n;
        }
        free(line);
}
