/* daytona-toolbox.c — Daytona's toolbox under /api/toolbox/ID/ (the toolboxProxyUrl a sandbox
 * answers with): process/execute and code-run, files (bulk upload and download, upload-v2,
 * download, list, info, folder, move, delete, find, search, replace, permissions), env,
 * system/metrics, user-home-dir, work-dir; and, through their own files, PTYs (daytona-pty.c),
 * sessions and the interpreter (daytona-session.c), git (daytona-git.c). Through the native
 * operations: a command is an exec, a file the native file route, a listing a command in the
 * sandbox. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "daemon/compat/compat.h"
#include "daemon/compat/daytona-internal.h"

/* ---- toolbox --------------------------------------------------------------------------------- */

typedef struct box {
        cx_req *rq;
        const char *id;
        json_t *rec;
        char **env;
        const char *scratch; /* its home (filesystem.home), else its scratch */
        const char *const *dt_homes; /* what stands for it without a home of its own */
} box;

static unsigned run(
        box *b, char *const *argv, char *const *extra_env, const char *cwd, double timeout_s, cx_run *r) {
        size_t n = 0, m = 0;
        for (char **v = b->env; v && *v; v++)
                n++;
        for (char *const *v = extra_env; v && *v; v++)
                m++;
        char **env = calloc(n + m + 1, sizeof *env);
        if (!env)
                return 503;
        size_t k = 0;
        for (char **v = b->env; v && *v; v++)
                env[k++] = *v;
        for (char *const *v = extra_env; v && *v; v++)
                env[k++] = *v;
        unsigned code = cx_exec(b->rq, b->id, argv, env, cwd, timeout_s, NULL, 0, r);
        free(env);
        return code;
}

/* A command's exit code as Daytona reports it: its own, 128+N for signal N, 124 for a timeout. */
static int exit_code_of(const cx_run *r) {
        if (streq(r->status, "timeout"))
                return 124;
        return r->exit_code >= 0 ? r->exit_code : r->signal > 0 ? 128 + r->signal : -1;
}

static void execute(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        const char *cmd = json_string_value(json_object_get(body, "command"));
        json_t *jcwd = json_object_get(body, "cwd"), *envs = json_object_get(body, "envs"),
               *jt = json_object_get(body, "timeout");
        char **extra = NULL, *cwd = NULL;
        cx_run r = {0};
        if (!cmd || !cx_string_map_ok(envs, true) ||
                (jcwd && !json_is_null(jcwd) && !json_is_string(jcwd))) {
                cx_daytona_err(
                        rq, 400, "command (a string) is required; envs must map variable names to strings");
                goto out;
        }
        if (json_is_string(jcwd) && json_string_length(jcwd) &&
                !(cwd = cx_path(json_string_value(jcwd), b->scratch, b->dt_homes))) {
                cx_daytona_err(rq, 400, "cwd: not a usable path");
                goto out;
        }
        extra = calloc(json_object_size(envs) + 1, sizeof *extra);
        size_t k = 0;
        const char *key;
        json_t *v;
        if (extra)
                json_object_foreach(envs, key, v) {
                        if (asprintf(&extra[k], "%s=%s", key, json_string_value(v)) >= 0)
                                k++;
                }
        double cap = json_number_value(json_object_get(json_object_get(b->rec, "limits"), "timeout_s"));
        double t = json_is_number(jt) && json_number_value(jt) > 0 ? json_number_value(jt) : 0;
        if (cap > 0 && (t <= 0 || t > cap))
                t = cap;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) cmd, NULL};
        unsigned code = run(b, argv, extra, cwd, t, &r);
        if (code) {
                dt_native_err(rq, code, r.refusal);
                goto out;
        }
        int exit_code = exit_code_of(&r);
        cx_respond_json(rq, 200,
                json_pack("{s:i, s:s%}", "exitCode", exit_code, "result", r.both ? r.both : "", r.both_len));
out:
        cx_run_done(&r);
        cx_strv_free(extra);
        free(cwd);
        json_decref(body);
}

/* system/metrics (getMetricsLatest): what the sandbox uses now (sbx_ops_metrics) in Daytona's
 * SystemMetrics fields. */
static void system_metrics(box *b) {
        cx_req *rq = b->rq;
        sbx_mgr_reply rp;
        unsigned code = sbx_ops_metrics(rq->m, &rq->caller, b->id, &rp);
        if (code != 200) {
                dt_native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
                return;
        }
        char ts[40];
        int64_t now = cx_now_ms();
        cx_iso_time(now, ts);
#define N(k) json_number_value(json_object_get(rp.json, k))
        double used = N("disk_used_bytes"), total = N("disk_total_bytes");
        cx_respond_json(rq, 200,
                json_pack("{s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "cpuCount", N("cpu_count"),
                        "cpuUsedPct", N("cpu_used_pct") < 0 ? 0.0 : N("cpu_used_pct"), "memUsed",
                        (json_int_t) N("memory_used_bytes"), "memTotal",
                        (json_int_t) N("memory_total_bytes"), "diskUsed", (json_int_t) used, "diskTotal",
                        (json_int_t) total, "diskFree",
                        (json_int_t) (total >= used && used >= 0 ? total - used : 0), "timestamp", ts,
                        "timestampUnix", (json_int_t) (now / 1000)));
#undef N
        sbx_mgr_reply_done(&rp);
}

/* env {set, unset}: the sandbox-wide environment of the commands to come (sandbox.updateEnv). */
static void update_env(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
        json_t *set = json_object_get(body, "set"), *unset = json_object_get(body, "unset");
        size_t i;
        json_t *v;
        bool ok = json_is_object(body) && cx_string_map_ok(set, true) &&
                  (!unset || json_is_null(unset) || json_is_array(unset));
        json_array_foreach(unset, i, v) ok = ok && json_is_string(v);
        if (!ok) {
                cx_daytona_err(
                        rq, 400, "set: an object of variable names to strings; unset: a list of names");
                json_decref(body);
                return;
        }
        json_t *env = NULL;
        (void) sbx_mgr_surface_get(rq->m, b->id, NULL, NULL, &env);
        if (!env)
                env = json_object();
        (void) json_object_update(env, json_is_object(set) ? set : NULL);
        json_array_foreach(unset, i, v) json_object_del(env, json_string_value(v));
        char token[65];
        cx_box_set(rq->m, b->id, &rq->caller, env, token);
        explicit_bzero(token, sizeof token);
        cx_respond(rq, 200, "application/json", "", 0);
        json_decref(body);
}

/* process/code-run: {code, language, argv, envs, timeout} → {exitCode, result}: the code run by
 * the language's interpreter in the sandbox (python3 -c, node -e), its output as it came. */
static void code_run(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, 0, NULL);
        const char *code = json_string_value(json_object_get(body, "code"));
        const char *lang = json_string_value(json_object_get(body, "language"));
        json_t *args = json_object_get(body, "argv"), *envs = json_object_get(body, "envs"),
               *jt = json_object_get(body, "timeout");
        char **argv = NULL, **extra = NULL;
        cx_run r = {0};
        if (!code || !lang || (args && !json_is_null(args) && !json_is_array(args)) ||
                !cx_string_map_ok(envs, true) || (jt && !json_is_null(jt) && !json_is_number(jt))) {
                cx_daytona_err(rq, 400,
                        "code and language (strings) are required; argv a list of strings, envs an object "
                        "of strings, timeout a number of seconds");
                goto out;
        }
        const char *interp = streq(lang, "python") ? "python3" : streq(lang, "javascript") ? "node" : NULL;
        if (!interp) {
                cx_daytona_err(rq, 400,
                        "language '%.64s': sandboxer runs python and javascript (typescript needs a "
                        "compiler "
                        "the sandbox does not have)",
                        lang);
                goto out;
        }
        size_t na = json_array_size(args);
        argv = calloc(na + 4, sizeof *argv);
        extra = calloc(json_object_size(envs) + 1, sizeof *extra);
        if (!argv || !extra) {
                cx_daytona_err(rq, 503, "out of memory");
                goto out;
        }
        argv[0] = strdup(interp);
        argv[1] = strdup(streq(interp, "node") ? "-e" : "-c");
        argv[2] = strdup(code);
        for (size_t i = 0; i < na; i++) {
                const char *a = json_string_value(json_array_get(args, i));
                if (!a) {
                        cx_daytona_err(rq, 400, "argv[%zu]: must be a string", i);
                        goto out;
                }
                argv[3 + i] = strdup(a);
        }
        size_t k = 0;
        const char *key;
        json_t *v;
        json_object_foreach(envs, key, v) {
                if (asprintf(&extra[k], "%s=%s", key, json_string_value(v)) >= 0)
                        k++;
        }
        double t = json_is_number(jt) && json_number_value(jt) > 0 ? json_number_value(jt) : 0;
        unsigned c = run(b, argv, extra, NULL, t, &r);
        if (c) {
                dt_native_err(rq, c, r.refusal);
                goto out;
        }
        int exit_code = exit_code_of(&r);
        cx_respond_json(rq, 200,
                json_pack("{s:i, s:s%, s:{s:[]}}", "exitCode", exit_code, "result", r.both ? r.both : "",
                        r.both_len, "artifacts", "charts"));
out:
        cx_run_done(&r);
        cx_strv_free(argv);
        cx_strv_free(extra);
        json_decref(body);
}

static unsigned file_get(box *b, const char *path, sbx_mgr_reply *rp) {
        return sbx_ops_file_read(b->rq->m, &b->rq->caller, b->id, path, rp);
}

static unsigned file_put(box *b, const char *path, const char *data, size_t len, json_t **ret_err) {
        return cx_file_put(b->rq, b->id, path, data, len, ret_err);
}

static void bulk_upload(box *b) {
        cx_req *rq = b->rq;
        cx_part *parts = calloc(256, sizeof *parts);
        int n = parts ? cx_multipart(cx_header(rq, "Content-Type"), rq->body, rq->len, parts, 256) : -ENOMEM;
        if (n < 0) {
                free(parts);
                cx_daytona_err(rq, 400,
                        "the body must be multipart/form-data with files[i].path and files[i].file parts");
                return;
        }
        /* files[i].path names where files[i].file goes */
        for (int i = 0; i < n; i++) {
                char want[300];
                size_t l = strlen(parts[i].name);
                if (l < 5 || strcmp(parts[i].name + l - 5, ".file") != 0)
                        continue;
                snprintf(want, sizeof want, "%.*s.path", (int) (l - 5), parts[i].name);
                char dest[4097] = "";
                for (int j = 0; j < n; j++)
                        if (streq(parts[j].name, want)) {
                                snprintf(dest, sizeof dest, "%.*s", (int) MIN(parts[j].len, 4096),
                                        parts[j].data);
                                break;
                        }
                _cleanup_free_ char *p =
                        cx_path(dest[0] ? dest : parts[i].filename, b->scratch, b->dt_homes);
                json_t *e = NULL;
                unsigned code = p ? file_put(b, p, parts[i].data, parts[i].len, &e) : 400;
                if (code != 200) {
                        if (e)
                                dt_native_err(rq, code, e);
                        else
                                cx_daytona_err(rq, 400, "%s: not a usable path", dest);
                        json_decref(e);
                        free(parts);
                        return;
                }
        }
        free(parts);
        cx_respond(rq, 200, "application/json", "", 0);
}

static void append(char **buf, size_t *len, const void *d, size_t n) {
        char *p = realloc(*buf, *len + n);
        if (!p)
                return;
        memcpy(p + *len, d, n);
        *len += n;
        *buf = p;
}

static void bulk_download(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        json_t *paths = json_object_get(body, "paths");
        if (!json_is_array(paths)) {
                json_decref(body);
                cx_daytona_err(rq, 400, "paths: an array of paths is required");
                return;
        }
        char boundary[64];
        snprintf(boundary, sizeof boundary, "sandboxer-%lld", (long long) cx_now_ms());
        char *out = NULL;
        size_t len = 0;
        size_t i;
        json_t *jp;
        json_array_foreach(paths, i, jp) {
                const char *src = json_string_value(jp);
                if (!src)
                        continue;
                _cleanup_free_ char *p = cx_path(src, b->scratch, b->dt_homes);
                sbx_mgr_reply rp = {.stream_fd = -1};
                unsigned code = p ? file_get(b, p, &rp) : 400;
                /* the path as the client gave it, at most 4000 bytes of it (a usable one is no
                 * longer; one that is not can be any length): the head fits, all of it is sent; a
                 * quote, a backslash or a line break in it would end the header early: '_' */
                char head[4400], name[4001];
                snprintf(name, sizeof name, "%s", src);
                for (char *c = name; *c; c++)
                        if (*c == '"' || *c == '\\' || *c == '\r' || *c == '\n')
                                *c = '_';
                int hn;
                if (code == 200) {
                        hn = snprintf(head, sizeof head,
                                "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                                "filename=\"%s\"\r\n"
                                "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                                boundary, name, rp.raw_len);
                        append(&out, &len, head, (size_t) hn);
                        append(&out, &len, rp.raw ? rp.raw : "", rp.raw_len);
                } else {
                        json_t *e = json_pack("{s:s, s:i, s:s}", "message",
                                rp.json ? dt_native_message(rp.json) : "not a usable path", "statusCode",
                                code == 410 ? 404 : (int) code, "code",
                                code == 404 ? "FILE_NOT_FOUND" : "ERROR");
                        char *et = json_dumps(e, JSON_COMPACT);
                        json_decref(e);
                        hn = snprintf(head, sizeof head,
                                "--%s\r\nContent-Disposition: form-data; name=\"error\"; "
                                "filename=\"%s\"\r\n"
                                "Content-Type: application/json\r\n\r\n",
                                boundary, name);
                        append(&out, &len, head, (size_t) hn);
                        append(&out, &len, et ? et : "{}", et ? strlen(et) : 2);
                        free(et);
                }
                append(&out, &len, "\r\n", 2);
                sbx_mgr_reply_done(&rp);
        }
        char tail[100], ctype[128];
        int tn = snprintf(tail, sizeof tail, "--%s--\r\n", boundary);
        append(&out, &len, tail, (size_t) tn);
        snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%s", boundary);
        cx_respond(rq, 200, ctype, out ? out : "", out ? len : 0);
        free(out);
        json_decref(body);
}

/* FileInfo {name, isDir, size, mode, modTime, permissions, owner, group} from `find -printf`. */
#define FIND_FORMAT "%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0%p\\0"

static json_t *infos(const char *out, size_t len) {
        json_t *list = json_array();
        const char *f[8];
        size_t k = 0;
        for (const char *p = out; p < out + len;) {
                const char *z = memchr(p, 0, (size_t) (out + len - p));
                if (!z)
                        break;
                f[k++] = p;
                p = z + 1;
                if (k < 8)
                        continue;
                k = 0;
                const char *name = strrchr(f[7], '/');
                char mt[40];
                cx_iso_time((int64_t) (strtod(f[6], NULL) * 1000), mt);
                json_array_append_new(
                        list, json_pack("{s:s, s:b, s:I, s:s, s:s, s:s, s:s, s:s, s:s}", "name",
                                      name && name[1] ? name + 1 : f[7], "isDir", f[0][0] == 'd', "size",
                                      (json_int_t) strtoll(f[1], NULL, 10), "mode", f[3], "modTime", mt,
                                      "permissions", f[2], "owner", f[4], "group", f[5], "path", f[7]));
        }
        return list;
}

static void files_cmd(
        box *b, const char *script, const char *a1, const char *a2, bool want_infos, bool one) {
        cx_req *rq = b->rq;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        cx_run r;
        unsigned code = run(b, argv, NULL, NULL, 0, &r);
        if (code)
                dt_native_err(rq, code, r.refusal);
        else if (r.exit_code == 2)
                cx_daytona_err(rq, 404, "%s: no such file or directory", a1);
        else if (r.exit_code != 0)
                cx_daytona_err(rq, strstr(r.err ? r.err : "", "ermission denied") ? 403 : 400, "%s",
                        r.err && *r.err ? r.err
                        : r.error       ? r.error
                                        : "failed");
        else if (!want_infos)
                cx_respond(rq, 200, "application/json", "", 0);
        else {
                json_t *l = infos(r.out, r.out_len);
                if (one)
                        cx_respond_json(rq, 200, json_incref(json_array_get(l, 0)));
                else
                        cx_respond_json(rq, 200, json_incref(l));
                json_decref(l);
        }
        cx_run_done(&r);
}

#define EXISTS "[ -e \"$1\" ] || [ -L \"$1\" ] || { echo \"$1: no such file or directory\" >&2; exit 2; }\n"
static const char list_script[] =
        EXISTS "[ -d \"$1\" ] || { echo \"$1: not a directory\" >&2; exit 20; }\n"
               "exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '" FIND_FORMAT "'\n";
static const char info_script[] = EXISTS "exec find \"$1\" -maxdepth 0 -printf '" FIND_FORMAT "'\n";
static const char rm_r_script[] = EXISTS "exec rm -rf -- \"$1\"\n";
static const char rm_script[] = EXISTS "[ -d \"$1\" ] && exec rmdir -- \"$1\"\nexec rm -f -- \"$1\"\n";
static const char mv_script[] = EXISTS "exec mv -f -T -- \"$1\" \"$2\"\n";

/* ---- the file tools: find in files, search by name, replace, permissions ---------------------- */

static const char find_script[] = EXISTS "exec grep -rnIZ -e \"$2\" -- \"$1\"\n";
static const char search_script[] = EXISTS "exec find \"$1\" -name \"$2\" -print0\n";
static const char chmod_script[] = EXISTS "exec chmod -- \"$2\" \"$1\"\n";

/* Run a file tool's script; 0 with r filled when it ran and exited with one of the codes in ok
 * (bits), else answered (the refusal, 404 for a missing path, the command's error). */
static unsigned tool_run(
        box *b, const char *script, const char *a1, const char *a2, unsigned ok, cx_run *r) {
        cx_req *rq = b->rq;
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) script, (char *) "sh", (char *) a1,
                (char *) a2, NULL};
        unsigned code = run(b, argv, NULL, NULL, 0, r);
        if (code)
                dt_native_err(rq, code, r->refusal);
        else if (r->exit_code >= 0 && r->exit_code < 32 && (ok & (1u << r->exit_code)))
                return 0;
        else if (r->exit_code == 2 && r->err && strstr(r->err, "no such file or directory"))
                cx_daytona_err(rq, 404, "%s: no such file or directory", a1);
        else
                cx_daytona_err(rq, r->err && strstr(r->err, "ermission denied") ? 403 : 400, "%s",
                        r->err && *r->err ? r->err
                        : r->error        ? r->error
                                          : "failed");
        cx_run_done(r);
        return code ? code : 400;
}

/* GET /files/find?path=&pattern=: the lines of text files below path that match pattern (a
 * basic regular expression, as grep takes it): [{file, line, content}]. */
static void find_in_files(box *b, const char *path) {
        const char *pattern = cx_query(b->rq, "pattern");
        if (!pattern || !*pattern) {
                cx_daytona_err(b->rq, 400, "pattern: a pattern is required");
                return;
        }
        cx_run r;
        if (tool_run(b, find_script, path, pattern, 1u << 0 | 1u << 1, &r))
                return;
        json_t *l = json_array();
        /* grep -Z: FILE\0LINE:CONTENT\n */
        for (const char *p = r.out, *end = r.out + r.out_len; p && p < end;) {
                const char *nul = memchr(p, 0, (size_t) (end - p));
                if (!nul)
                        break;
                const char *nl = memchr(nul + 1, '\n', (size_t) (end - nul - 1));
                const char *stop = nl ? nl : end;
                char *colon = memchr(nul + 1, ':', (size_t) (stop - nul - 1));
                if (colon) {
                        json_array_append_new(
                                l, json_pack("{s:s%, s:I, s:s%}", "file", p, (size_t) (nul - p), "line",
                                           (json_int_t) strtol(nul + 1, NULL, 10), "content", colon + 1,
                                           (size_t) (stop - colon - 1)));
                }
                p = nl ? nl + 1 : end;
        }
        cx_respond_json(b->rq, 200, l);
        cx_run_done(&r);
}

/* GET /files/search?path=&pattern=: the files and directories below path whose name matches the
 * glob pattern: {files: [...]}. */
static void search_files(box *b, const char *path) {
        const char *pattern = cx_query(b->rq, "pattern");
        if (!pattern || !*pattern) {
                cx_daytona_err(b->rq, 400, "pattern: a pattern is required");
                return;
        }
        cx_run r;
        if (tool_run(b, search_script, path, pattern, 1u << 0, &r))
                return;
        json_t *l = json_array();
        for (const char *p = r.out, *end = r.out + r.out_len; p && p < end;) {
                const char *nul = memchr(p, 0, (size_t) (end - p));
                size_t n = nul ? (size_t) (nul - p) : (size_t) (end - p);
                if (n)
                        json_array_append_new(l, json_stringn(p, n));
                p += n + 1;
        }
        cx_respond_json(b->rq, 200, json_pack("{s:o}", "files", l));
        cx_run_done(&r);
}

/* POST /files/permissions?path=&mode=&owner=&group=: chmod; the sandbox has one user (uid 1000),
 * so an owner or group other than it is refused rather than ignored. */
static void set_permissions(box *b, const char *path) {
        const char *mode = cx_query(b->rq, "mode"), *owner = cx_query(b->rq, "owner"),
                   *group = cx_query(b->rq, "group");
        static const char *const own[] = {"daytona", "sandbox", "user", "1000", NULL};
        if ((owner && *owner && !strv_contains((char **) own, owner)) ||
                (group && *group && !strv_contains((char **) own, group))) {
                cx_daytona_err(b->rq, 400,
                        "owner and group: the sandbox has one user (uid 1000, its files' owner); ownership "
                        "cannot change");
                return;
        }
        if (!mode || !*mode) {
                cx_respond(b->rq, 200, "application/json", "", 0); /* nothing to change */
                return;
        }
        size_t ml = strlen(mode);
        if (ml < 3 || ml > 4 || strspn(mode, "01234567") != ml) {
                cx_daytona_err(b->rq, 400, "mode: an octal mode such as 755 or 0644");
                return;
        }
        cx_run r;
        if (tool_run(b, chmod_script, path, mode, 1u << 0, &r))
                return;
        cx_respond(b->rq, 200, "application/json", "", 0);
        cx_run_done(&r);
}

/* POST /files/replace {files, pattern, newValue}: every occurrence of pattern (literal text) in
 * each file replaced, the file read and written inside the sandbox: [{file, success, error}]. */
static void replace_in_files(box *b) {
        cx_req *rq = b->rq;
        json_t *body = json_loadb(rq->body, rq->len, 0, NULL);
        json_t *files = json_object_get(body, "files");
        const char *pat = json_string_value(json_object_get(body, "pattern"));
        const char *nv = json_string_value(json_object_get(body, "newValue"));
        if (!json_is_array(files) || !pat || !*pat || !nv) {
                json_decref(body);
                cx_daytona_err(rq, 400, "the body must be {files: [paths], pattern: text, newValue: text}");
                return;
        }
        size_t pl = strlen(pat), nl = strlen(nv), i;
        json_t *f, *out = json_array();
        json_array_foreach(files, i, f) {
                const char *name = json_string_value(f);
                _cleanup_free_ char *p = name ? cx_path(name, b->scratch, b->dt_homes) : NULL;
                json_t *res = json_pack("{s:s}", "file", name ? name : "");
                sbx_mgr_reply rp;
                unsigned code = p ? file_get(b, p, &rp) : 400;
                if (code != 200) {
                        json_object_set_new(res, "success", json_false());
                        json_object_set_new(res, "error",
                                json_string(!p            ? "not a path"
                                            : code == 404 ? "no such file"
                                                          : "cannot read it"));
                        if (p)
                                sbx_mgr_reply_done(&rp);
                        json_array_append_new(out, res);
                        continue;
                }
                char *text = NULL;
                size_t tl = 0;
                FILE *m = open_memstream(&text, &tl);
                const char *d = rp.raw ? rp.raw : "", *e = d + rp.raw_len;
                for (const char *q = d; m && q < e;) {
                        const char *hit = memmem(q, (size_t) (e - q), pat, pl);
                        size_t n = hit ? (size_t) (hit - q) : (size_t) (e - q);
                        fwrite(q, 1, n, m);
                        if (!hit)
                                break;
                        fwrite(nv, 1, nl, m);
                        q = hit + pl;
                }
                bool ok = m && fclose(m) == 0;
                sbx_mgr_reply_done(&rp);
                json_t *perr = NULL;
                code = ok ? file_put(b, p, text ? text : "", tl, &perr) : 500;
                free(text);
                json_object_set_new(res, "success", json_boolean(code == 200 || code == 204 || code == 201));
                if (!json_is_true(json_object_get(res, "success")))
                        json_object_set_new(res, "error", json_string(dt_native_message(perr)));
                json_decref(perr);
                json_array_append_new(out, res);
        }
        json_decref(body);
        cx_respond_json(rq, 200, out);
}

void dt_toolbox(cx_req *rq, const char *path) {
        const char *rest = path + 9; /* after /toolbox/ */
        char id[64];
        const char *slash = strchr(rest, '/');
        size_t l = slash ? (size_t) (slash - rest) : strlen(rest);
        if (l == 0 || l >= sizeof id || !slash) {
                cx_daytona_err(rq, 404, "no such toolbox endpoint");
                return;
        }
        memcpy(id, rest, l);
        id[l] = 0;
        dt_alias_resolve(rq->m, id, sizeof id); /* an archived sandbox started again: its new one */
        const char *op = slash;
        box b = {.rq = rq, .id = id};
        if (!(b.rec = dt_record(rq, id, true)))
                return;
        (void) cx_box_get(rq->m, id, NULL, NULL, &b.env);
        const char *home = json_string_value(json_object_get(b.rec, "home"));
        b.scratch = home ?: json_string_value(json_object_get(b.rec, "scratch")) ?: "/tmp";
        b.dt_homes = home ? NULL : dt_homes;
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        _cleanup_free_ char *p = cx_path(cx_query(rq, "path"), b.scratch, b.dt_homes);
        if (cx_daytona_pty(rq, id, op, b.env, b.scratch))
                ; /* PTY sessions (daytona-pty.c) */
        else if (cx_daytona_session(rq, id, op, b.env, b.scratch))
                ; /* sessions and the code interpreter (daytona-session.c) */
        else if (cx_daytona_git(rq, id, op, b.env, b.scratch, b.dt_homes))
                ; /* git (daytona-git.c) */
        else if (streq(op, "/env") && post)
                update_env(&b);
        else if (streq(op, "/system/metrics") && get)
                system_metrics(&b);
        else if (streq(op, "/process/execute") && post)
                execute(&b);
        else if (streq(op, "/process/code-run") && post)
                code_run(&b);
        else if (streq(op, "/files/bulk-upload") && post)
                bulk_upload(&b);
        else if (streq(op, "/files/bulk-download") && post)
                bulk_download(&b);
        else if ((streq(op, "/user-home-dir") || streq(op, "/work-dir")) && get)
                cx_respond_json(rq, 200, json_pack("{s:s}", "dir", b.scratch));
        else if (streq(op, "/version") && get)
                cx_respond_json(rq, 200, json_pack("{s:s}", "version", "sandboxer"));
        else if (streq(op, "/files/replace") && post)
                replace_in_files(&b);
        else if (!p && (streq(op, "/files") || strncmp(op, "/files/", 7) == 0) && !streq(op, "/files/move"))
                cx_daytona_err(rq, 400, "path: a path is required");
        else if (streq(op, "/files/upload-v2") && post) {
                /* multipart (its "file" part) or the raw body */
                const char *ct = cx_header(rq, "Content-Type");
                cx_part part[8];
                int np = ct && strncasecmp(ct, "multipart/", 10) == 0
                                 ? cx_multipart(ct, rq->body, rq->len, part, 8)
                                 : -1;
                const char *data = rq->body ? rq->body : "";
                size_t len = rq->len;
                for (int i = 0; i < np; i++)
                        if (streq(part[i].name, "file")) {
                                data = part[i].data;
                                len = part[i].len;
                        }
                json_t *perr = NULL;
                unsigned code = np == 0 ? 400 : file_put(&b, p, data, len, &perr);
                if (code == 200 || code == 201 || code == 204)
                        cx_respond_json(rq, 200, json_object());
                else if (np == 0)
                        cx_daytona_err(rq, 400, "the multipart body has no \"file\" part");
                else
                        dt_native_err(rq, code, perr);
                json_decref(perr);
        } else if (streq(op, "/files/download") && get) {
                sbx_mgr_reply rp;
                unsigned code = file_get(&b, p, &rp);
                if (code == 200)
                        cx_respond(rq, 200, "application/octet-stream", rp.raw ? rp.raw : "", rp.raw_len);
                else
                        dt_native_err(rq, code, rp.json);
                sbx_mgr_reply_done(&rp);
        } else if (streq(op, "/files") && get) {
                const char *d = cx_query(rq, "depth");
                char depth[16];
                snprintf(
                        depth, sizeof depth, "%ld", d && strtol(d, NULL, 10) > 0 ? strtol(d, NULL, 10) : 1L);
                files_cmd(&b, list_script, p, depth, true, false);
        } else if (streq(op, "/files/info") && get) {
                files_cmd(&b, info_script, p, NULL, true, true);
        } else if (streq(op, "/files") && del) {
                const char *rec = cx_query(rq, "recursive");
                files_cmd(&b, rec && streq(rec, "true") ? rm_r_script : rm_script, p, NULL, false, false);
        } else if (streq(op, "/files/folder") && post) {
                const char *mode = cx_query(rq, "mode");
                files_cmd(&b, "mkdir -p -m \"$2\" -- \"$1\"", p, mode && *mode ? mode : "755", false, false);
        } else if (streq(op, "/files/find") && get) {
                find_in_files(&b, p);
        } else if (streq(op, "/files/search") && get) {
                search_files(&b, p);
        } else if (streq(op, "/files/permissions") && post) {
                set_permissions(&b, p);
        } else if (streq(op, "/files/move") && post) {
                _cleanup_free_ char *src = cx_path(cx_query(rq, "source"), b.scratch, b.dt_homes);
                _cleanup_free_ char *dst = cx_path(cx_query(rq, "destination"), b.scratch, b.dt_homes);
                if (!src || !dst)
                        cx_daytona_err(rq, 400, "source and destination: paths are required");
                else
                        files_cmd(&b, mv_script, src, dst, false, false);
        } else
                cx_daytona_err(
                        rq, 501, "%s %s is not implemented by sandboxer's Daytona toolbox", rq->method, op);
        json_decref(b.rec);
        cx_strv_free(b.env);
}
