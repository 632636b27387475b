/* e2b-files.c — envd's files: filesystem.Filesystem (Stat, ListDir, MakeDir, Move, Remove: a
 * command run in the sandbox) and /files (download and upload: the native file route). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/e2b-internal.h"

/* ---- envd: the filesystem, by commands run in the sandbox ------------------------------------- */

/* One entry per 9 NUL-terminated fields: type, size, octal mode, symbolic mode, owner, group,
 * mtime, link target, path. */
#define FIND_FORMAT "%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0%l\\0%p\\0"

static const char stat_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char list_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "[ -d \"$1\" ] || { echo \"$1: not a directory\" >&2; exit 20; }\n"
        "exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '" FIND_FORMAT "'\n";
static const char mkdir_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] && { echo \"$1: already exists\" >&2; exit 17; }\n"
        "mkdir -p -- \"$1\" || exit 1\n"
        "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char move_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "mkdir -p -- \"$(dirname -- \"$2\")\" && mv -f -T -- \"$1\" \"$2\" || exit 1\n"
        "exec find \"$2\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char remove_script[] =
        "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
        "exec rm -rf -- \"$1\"\n";

static json_t *entry_json(char *const f[9]) {
        const char *type = f[0][0] == 'd'   ? "FILE_TYPE_DIRECTORY"
                           : f[0][0] == 'l' ? "FILE_TYPE_SYMLINK"
                                            : "FILE_TYPE_FILE";
        const char *path = f[8];
        const char *name = strrchr(path, '/');
        name = name && name[1] ? name + 1 : path;
        double mt = strtod(f[6], NULL);
        time_t secs = (time_t) mt;
        struct tm tm;
        gmtime_r(&secs, &tm);
        char ts[64];
        size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(ts + n, sizeof ts - n, ".%09ldZ", (long) ((mt - (double) secs) * 1e9));
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "name", name, "type", type,
                "path", path, "size", f[1], "mode", (json_int_t) strtol(f[2], NULL, 8), "permissions", f[3],
                "owner", f[4], "group", f[5], "modifiedTime", ts);
        if (f[7][0])
                json_object_set_new(j, "symlinkTarget", json_string(f[7]));
        return j;
}

static json_t *entries_json(const char *out, size_t len) {
        json_t *list = json_array();
        char *f[9];
        size_t k = 0;
        for (const char *p = out; p < out + len;) {
                const char *z = memchr(p, 0, (size_t) (out + len - p));
                if (!z)
                        break;
                f[k++] = (char *) p;
                p = z + 1;
                if (k == 9) {
                        json_array_append_new(list, entry_json(f));
                        k = 0;
                }
        }
        return list;
}

/* Run a script with arguments; on failure answer the Connect error and return false. */
static bool fs_run(envd *e, const char *script, const char *a1, const char *a2, cx_run *r) {
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        unsigned code = cx_exec(e->rq, e->sandbox, argv, e->env, NULL, 0, NULL, 0, r);
        if (code) {
                e2b_rpc_err(e->rq, code == 410 || code == 404 ? "unavailable" : e2b_connect_code(code), "%s",
                        e2b_native_message(r->refusal));
                return false;
        }
        if (r->exit_code == 0)
                return true;
        const char *msg = r->err && *r->err ? r->err : r->error ? r->error : "failed";
        char m[1024];
        snprintf(m, sizeof m, "%s", msg);
        size_t l = strlen(m);
        while (l && m[l - 1] == '\n')
                m[--l] = 0;
        if (r->exit_code == 2)
                e2b_rpc_err(e->rq, "not_found", "%s", m);
        else if (r->exit_code == 17)
                e2b_rpc_err(e->rq, "already_exists", "%s", m);
        else if (r->exit_code == 20)
                e2b_rpc_err(e->rq, "invalid_argument", "%s", m);
        else if (strstr(m, "ermission denied") || strstr(m, "ead-only file system") ||
                 strstr(m, "peration not permitted"))
                e2b_rpc_err(e->rq, "permission_denied", "%s", m);
        else
                e2b_rpc_err(e->rq, "internal", "%s (%s)", m, r->status[0] ? r->status : "not run");
        return false;
}

void e2b_filesystem(envd *e, const char *method) {
        cx_req *rq = e->rq;
        json_t *req = e2b_rpc_body(rq, false);
        char *p1 = NULL, *p2 = NULL;
        cx_run r = {0};
        if (!req) {
                e2b_rpc_err(rq, "invalid_argument", "the body is not JSON");
                return;
        }
        bool move = streq(method, "Move");
        const char *src = json_string_value(json_object_get(req, move ? "source" : "path"));
        const char *dst = move ? json_string_value(json_object_get(req, "destination")) : NULL;
        if (!(p1 = cx_path(src, e->scratch, e->homes)) ||
                (move && !(p2 = cx_path(dst, e->scratch, e->homes)))) {
                e2b_rpc_err(rq, "invalid_argument",
                        "%s: an absolute path, or one relative to the home directory, is required",
                        move ? "source and destination" : "path");
                goto out;
        }
        if (streq(method, "Stat")) {
                if (fs_run(e, stat_script, p1, NULL, &r)) {
                        json_t *l = entries_json(r.out, r.out_len);
                        if (json_array_size(l))
                                cx_respond_json(rq, 200, json_pack("{s:O}", "entry", json_array_get(l, 0)));
                        else
                                e2b_rpc_err(rq, "not_found", "%s: no such file or directory", p1);
                        json_decref(l);
                }
        } else if (streq(method, "ListDir")) {
                json_t *d = json_object_get(req, "depth");
                char depth[16];
                snprintf(depth, sizeof depth, "%lld",
                        json_is_integer(d) && json_integer_value(d) > 0 ? (long long) json_integer_value(d)
                                                                        : 1LL);
                if (fs_run(e, list_script, p1, depth, &r))
                        cx_respond_json(
                                rq, 200, json_pack("{s:o}", "entries", entries_json(r.out, r.out_len)));
        } else if (streq(method, "MakeDir") || move) {
                if (fs_run(e, move ? move_script : mkdir_script, p1, p2, &r)) {
                        json_t *l = entries_json(r.out, r.out_len);
                        json_t *ans = json_object();
                        if (json_array_size(l))
                                json_object_set(ans, "entry", json_array_get(l, 0));
                        cx_respond_json(rq, 200, ans);
                        json_decref(l);
                }
        } else if (streq(method, "Remove")) {
                if (fs_run(e, remove_script, p1, NULL, &r))
                        cx_respond_json(rq, 200, json_object());
        } else
                e2b_rpc_err(rq, "unimplemented", "filesystem.Filesystem/%s is not implemented by sandboxer",
                        method);
out:
        cx_run_done(&r);
        free(p1);
        free(p2);
        json_decref(req);
}

/* ---- envd: /files ------------------------------------------------------------------------------ */

static void files_err(cx_req *rq, unsigned code, const json_t *native) {
        e2b_api_err(rq, code == 410 ? 502 : code, "%s", e2b_native_message(native));
}

static unsigned file_put(envd *e, const char *path, const char *data, size_t len, json_t **ret_err) {
        return cx_file_put(e->rq, e->sandbox, path, data, len, ret_err);
}

static json_t *written_json(const char *path) {
        const char *name = strrchr(path, '/');
        return json_pack("{s:s, s:s, s:s}", "name", name ? name + 1 : path, "type", "file", "path", path);
}

void e2b_files(envd *e) {
        cx_req *rq = e->rq;
        const char *qpath = cx_query(rq, "path");
        if (streq(rq->method, "GET")) {
                _cleanup_free_ char *p = cx_path(qpath, e->scratch, e->homes);
                if (!p) {
                        e2b_api_err(rq, 400, "path: a file path is required");
                        return;
                }
                sbx_mgr_reply rp;
                unsigned code = sbx_ops_file_read(rq->m, &rq->caller, e->sandbox, p, &rp);
                if (code == 200 && rp.raw)
                        cx_respond(rq, 200, "application/octet-stream", rp.raw, rp.raw_len);
                else if (code == 200)
                        cx_respond(rq, 200, "application/octet-stream", "", 0);
                else
                        files_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        if (!streq(rq->method, "POST")) {
                e2b_api_err(rq, 405, "use GET or POST");
                return;
        }
        const char *ctype = cx_header(rq, "Content-Type");
        json_t *written = json_array(), *err = NULL;
        unsigned code = 200;
        if (ctype && strncasecmp(ctype, "multipart/", 10) == 0) {
                cx_part *parts = calloc(64, sizeof *parts);
                int n = parts ? cx_multipart(ctype, rq->body, rq->len, parts, 64) : -ENOMEM;
                if (n < 0) {
                        free(parts);
                        json_decref(written);
                        e2b_api_err(rq, 400, "the body is not multipart/form-data");
                        return;
                }
                for (int i = 0; i < n && code == 200; i++) {
                        if (!streq(parts[i].name, "file"))
                                continue;
                        _cleanup_free_ char *p =
                                cx_path(qpath ? qpath : parts[i].filename, e->scratch, e->homes);
                        if (!p) {
                                code = 400;
                                err = json_pack("{s:{s:s}}", "error", "message",
                                        "a file path is required (path or the part's filename)");
                                break;
                        }
                        code = file_put(e, p, parts[i].data, parts[i].len, &err);
                        if (code == 200)
                                json_array_append_new(written, written_json(p));
                }
                free(parts);
        } else if (ctype && strncasecmp(ctype, "application/octet-stream", 24) == 0) {
                const char *enc = cx_header(rq, "Content-Encoding");
                _cleanup_free_ char *p = cx_path(qpath, e->scratch, e->homes);
                if (enc && strcasecmp(enc, "identity") != 0) {
                        code = 400;
                        err = json_pack("{s:{s:s}}", "error", "message",
                                "Content-Encoding is not supported (envd 0.5.6)");
                } else if (!p) {
                        code = 400;
                        err = json_pack("{s:{s:s}}", "error", "message", "path: a file path is required");
                } else if ((code = file_put(e, p, rq->body, rq->len, &err)) == 200)
                        json_array_append_new(written, written_json(p));
        } else {
                code = 400;
                err = json_pack("{s:{s:s}}", "error", "message",
                        "the body must be multipart/form-data or application/octet-stream");
        }
        if (code != 200)
                files_err(rq, code, err);
        else
                cx_respond_json(rq, 200, json_incref(written));
        json_decref(written);
        json_decref(err);
}
