/* test-log.c — the control plane's log lines (daemon/log.c): one line each, logfmt, values that
 * could forge a key or a line quoted and escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "tap.h"

/* What sbx_log wrote to stderr while fn ran. */
static char *captured(void (*fn)(void)) {
        static char buf[4096];
        int p[2];
        if (pipe(p) < 0)
                return NULL;
        int saved = dup(STDERR_FILENO);
        dup2(p[1], STDERR_FILENO);
        close(p[1]);
        fn();
        dup2(saved, STDERR_FILENO);
        close(saved);
        ssize_t n = read(p[0], buf, sizeof buf - 1);
        close(p[0]);
        buf[n > 0 ? n : 0] = 0;
        return buf;
}

static void plain(void) {
        sbx_log(SBX_LOG_INFO, "sandbox_state", "sandbox", "sbx_0123", "state", "ready", "reason", NULL,
                NULL);
}
static void forged(void) {
        sbx_log(SBX_LOG_ERROR, "store_failed", "error", "disk full\nlevel=info event=fake x=\"y\"", "empty",
                "", NULL);
}

int main(void) {
        is_str(captured(plain), "level=info event=sandbox_state sandbox=sbx_0123 state=ready reason=-\n",
                "bare values as they are, NULL as -");
        is_str(captured(forged),
                "level=error event=store_failed error=\"disk full\\nlevel=info event=fake x=\\\"y\\\"\" "
                "empty=\"\"\n",
                "a value with a newline, quotes or = is quoted and escaped: one line, no forged key");
        return done_testing();
}
