/* e2b-watch.c — E2B's filesystem.Filesystem/WatchDir (the SDK's files.watchDir): a server stream
 * of the changes under a directory. The watching is done inside the sandbox, by the sandbox: a
 * long-lived exec of python3 using inotify through ctypes (the SDK's sandboxes have python3;
 * nothing of ours needs to be in the sandbox's view), one JSON line per event; serve turns the
 * lines into Connect envelopes: {"start": {}} once the watches are set, then
 * {"filesystem": {"name", "type"}} (1 create, 2 write, 3 remove, 4 rename, 5 chmod: fsnotify's
 * meanings), {"keepalive": {}} when idle. A watch is capped at WATCHES_MAX directories (every
 * sandbox of a host user shares that user's inotify budget): past it, or past the kernel's own
 * limit (ENOSPC), the stream ends with resource_exhausted saying which; never a hang. When the
 * client goes, the watcher is killed at its next heartbeat (5 s). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/e2b-internal.h"

#define WATCHES_MAX 8192

static const char watcher[] = "import ctypes, json, os, select, struct, sys\n"
                              "libc = ctypes.CDLL(None, use_errno=True)\n"
                              "root, recursive, cap = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3])\n"
                              "def say(o):\n"
                              "    sys.stdout.write(json.dumps(o) + '\\n')\n"
                              "    sys.stdout.flush()\n"
                              "if not os.path.isdir(root):\n"
                              "    e = 2 if not os.path.exists(root) else 20\n"
                              "    say({'error': os.strerror(e), 'errno': e})\n"
                              "    sys.exit(2)\n"
                              "fd = libc.inotify_init1(os.O_CLOEXEC)\n"
                              "if fd < 0:\n"
                              "    e = ctypes.get_errno()\n"
                              "    say({'error': 'inotify_init1: ' + os.strerror(e), 'errno': e})\n"
                              "    sys.exit(3)\n"
                              "MASK = 0x2 | 0x4 | 0x40 | 0x80 | 0x100 | 0x200\n"
                              "wd = {}\n"
                              "def add(path):\n"
                              "    if len(wd) >= cap:\n"
                              "        say({'error': 'limit', 'errno': 28, 'cap': cap})\n"
                              "        sys.exit(4)\n"
                              "    w = libc.inotify_add_watch(fd, os.fsencode(path), MASK)\n"
                              "    if w < 0:\n"
                              "        e = ctypes.get_errno()\n"
                              "        if e in (2, 20):\n"
                              "            return\n"
                              "        say({'error': os.strerror(e), 'errno': e, 'path': path})\n"
                              "        sys.exit(4)\n"
                              "    wd[w] = path\n"
                              "def add_tree(top):\n"
                              "    add(top)\n"
                              "    if recursive:\n"
                              "        for d, subs, _ in os.walk(top):\n"
                              "            for s in subs:\n"
                              "                add(os.path.join(d, s))\n"
                              "add_tree(root)\n"
                              "say({'ready': len(wd)})\n"
                              "while True:\n"
                              "    r, _, _ = select.select([fd], [], [], 5)\n"
                              "    if not r:\n"
                              "        say({'beat': 1})\n"
                              "        continue\n"
                              "    buf = os.read(fd, 65536)\n"
                              "    i = 0\n"
                              "    while i + 16 <= len(buf):\n"
                              "        w, mask, cookie, n = struct.unpack_from('iIII', buf, i)\n"
                              "        name = os.fsdecode(buf[i + 16:i + 16 + n].rstrip(b'\\0'))\n"
                              "        i += 16 + n\n"
                              "        if mask & 0x4000:\n"
                              "            say({'overflow': 1})\n"
                              "            continue\n"
                              "        base = wd.get(w)\n"
                              "        if base is None or not name:\n"
                              "            continue\n"
                              "        full = os.path.join(base, name)\n"
                              "        t = 1 if mask & 0x180 else 2 if mask & 0x2 else 3 if mask & 0x200 "
                              "else 4 if mask & 0x40 else 5 if "
                              "mask & 0x4 else 0\n"
                              "        if t:\n"
                              "            say({'name': os.path.relpath(full, root), 'type': t})\n"
                              "        if recursive and mask & 0x40000000 and mask & 0x180:\n"
                              "            add_tree(full)\n";

typedef struct watch {
        atomic_int refs;
        cx_stream *s;
        sbx_mgr *m;
        sbx_caller who;
        char sandbox[32], exec_id[32];
        char line[8192];
        size_t len;
        bool started, ended;
        atomic_bool kill_sent, id_set;
} watch;

static void watch_unref(watch *w) {
        if (atomic_fetch_sub(&w->refs, 1) != 1)
                return;
        cx_stream_unref(w->s);
        free(w);
}

static void end_with(watch *w, const char *code, const char *fmt, ...) _printf_(3, 4);
static void end_with(watch *w, const char *code, const char *fmt, ...) {
        if (w->ended)
                return;
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        e2b_frame(w->s, 2, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
        cx_stream_close(w->s);
        w->ended = true;
}

/* One line of the watcher. */
static void take(watch *w, const char *l, size_t n) {
        json_error_t je;
        json_t *j = json_loadb(l, n, 0, &je);
        json_t *err = json_object_get(j, "error");
        if (!j)
                ;
        else if (json_object_get(j, "ready")) {
                e2b_frame(w->s, 0, json_pack("{s:{}}", "start"));
                w->started = true;
        } else if (json_is_string(err)) {
                int e = (int) json_integer_value(json_object_get(j, "errno"));
                if (streq(json_string_value(err), "limit"))
                        end_with(w, "resource_exhausted",
                                "the watch would need more than %d directories (a recursive watch over a "
                                "large tree): "
                                "watch a smaller one",
                                WATCHES_MAX);
                else if (e == ENOSPC)
                        end_with(w, "resource_exhausted",
                                "the inotify watch limit is reached (fs.inotify.max_user_watches, shared by "
                                "every "
                                "sandbox of this host user): watch a smaller tree, or raise the limit on "
                                "the host");
                else if (e == ENOENT || e == ENOTDIR)
                        end_with(w, e == ENOENT ? "not_found" : "invalid_argument", "%s",
                                e == ENOENT ? "no such directory" : "not a directory");
                else
                        end_with(w, "internal", "cannot watch: %s", json_string_value(err));
        } else if (json_object_get(j, "overflow"))
                end_with(w, "resource_exhausted",
                        "the inotify event queue overflowed (more changes than could be read): events were "
                        "lost; "
                        "watch again");
        else if (json_object_get(j, "name") && w->started && !w->ended) {
                e2b_frame(w->s, 0,
                        json_pack("{s:{s:O, s:O}}", "filesystem", "name", json_object_get(j, "name"), "type",
                                json_object_get(j, "type")));
        }
        json_decref(j);
        /* the client gone (its stream refuses writes): end the watcher */
        if (cx_stream_gone(w->s) && atomic_load(&w->id_set) && !atomic_exchange(&w->kill_sent, true))
                (void) sbx_mgr_exec_signal(w->m, &w->who, w->sandbox, w->exec_id, SIGKILL);
}

static void on_output(void *ud, int fd, const char *d, size_t n) {
        watch *w = ud;
        if (fd != 1)
                return;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != '\n') {
                        if (w->len < sizeof w->line)
                                w->line[w->len++] = d[i];
                        continue;
                }
                take(w, w->line, w->len);
                w->len = 0;
        }
}

static void on_end(void *ud, const json_t *report, const char *error) {
        watch *w = ud;
        if (!w->ended) {
                const char *st = json_string_value(json_object_get(report, "status"));
                if (!w->started)
                        end_with(w, "internal", "the watcher could not start in the sandbox (%s)",
                                error ?: st ?: "no python3 in its image?");
                else { /* the sandbox ended, or the watcher was killed: the stream's end */
                        e2b_frame(w->s, 2, json_object());
                        cx_stream_close(w->s);
                        w->ended = true;
                }
        }
        watch_unref(w);
}

void e2b_watch_dir(envd *e) {
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, true);
        const char *path = json_string_value(json_object_get(req, "path"));
        _cleanup_free_ char *p = cx_path(path, e->scratch, e->homes);
        if (!p) {
                json_decref(req);
                e2b_rpc_err(rq, "invalid_argument", "path: the directory to watch is required");
                return;
        }
        static const char ka[] = "{\"keepalive\":{}}";
        char kb[sizeof ka + 4] = {0};
        kb[4] = (char) (sizeof ka - 1);
        memcpy(kb + 5, ka, sizeof ka - 1);
        watch *w = calloc(1, sizeof *w);
        if (!w || !(w->s = cx_stream_new(kb, sizeof ka - 1 + 5, 50.0))) {
                free(w);
                json_decref(req);
                e2b_rpc_err(rq, "unavailable", "out of memory");
                return;
        }
        atomic_init(&w->refs, 2); /* the request's and the exec's end's */
        w->m = rq->m;
        w->who = rq->caller;
        snprintf(w->sandbox, sizeof w->sandbox, "%s", e->sandbox);
        char cap[16];
        snprintf(cap, sizeof cap, "%d", WATCHES_MAX);
        char *argv[] = {(char *) "python3", (char *) "-c", (char *) watcher, p,
                json_is_true(json_object_get(req, "recursive")) ? (char *) "1" : (char *) "0", cap, NULL};
        sbx_exec_spec spec = {.argv = argv, .env = e->env, .stdin_fd = -1, .long_lived = -1};
        sbx_exec_stream_cb cb = {.on_output = on_output, .on_end = on_end, .userdata = w};
        json_t *err = NULL;
        char exec_id[32] = "";
        unsigned code = sbx_mgr_exec_start(rq->m, &rq->caller, e->sandbox, &spec, &cb, exec_id, &err);
        if (code) {
                end_with(w, "unavailable", "%s", e2b_native_message(err));
                atomic_fetch_sub(&w->refs, 1); /* the callbacks will not run */
        } else {
                snprintf(w->exec_id, sizeof w->exec_id, "%s", exec_id);
                atomic_store(&w->id_set, true);
        }
        json_decref(err);
        rq->resp = cx_stream_response(w->s, "application/connect+json");
        rq->code = 200;
        watch_unref(w);
        json_decref(req);
}
