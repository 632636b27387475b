/* files.c — the files API: read, write, list and remove under a sandbox's workspace. */
#include "daemon/mgr-internal.h"

/* ---- files --------------------------------------------------------------------------------- */

static bool path_ok(const box *b, const char *p, char *why, size_t sz) {
        if (!p || p[0] != '/' || strlen(p) > 4000) {
                snprintf(why, sz, "path: an absolute path inside the sandbox is required");
                return false;
        }
        for (const char *s = p; *s; s++)
                if ((unsigned char) *s < 0x20) {
                        snprintf(why, sz, "path: control characters are not allowed");
                        return false;
                }
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s", p);
        for (char *save = NULL, *t = strtok_r(tmp, "/", &save); t; t = strtok_r(NULL, "/", &save))
                if (streq(t, "..") || streq(t, ".")) {
                        snprintf(why, sz, "path: '.' and '..' components are not allowed");
                        return false;
                }
        const char *roots[] = {b->scratch[0] ? b->scratch : "/tmp", "/workspace", b->home};
        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                size_t l = strlen(roots[i]);
                if (l > 0 && strncmp(p, roots[i], l) == 0 && p[l] == '/' && p[l + 1])
                        return true;
        }
        snprintf(why, sz,
                "path: must be a file under the sandbox's scratch (%.100s)%s%.100s or its workspace "
                "(/workspace)",
                b->scratch[0] ? b->scratch : "/tmp", b->home[0] ? ", its home " : "", b->home);
        return false;
}

static unsigned op_files(sbx_mgr *m, const sbx_caller *who, const char *id, const char *path, bool put,
        const char *data, size_t len, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_usable_box(m, who, id, rp);
        if (!b)
                return rp->code;
        char why[512];
        if (!path_ok(b, path, why, sizeof why)) {
                mgr_box_put(m, b);
                return mgr_reply_err(rp, 400, "invalid_argument", "path", "%s", why);
        }
        if (put && len > FILE_MAX) {
                mgr_box_put(m, b);
                return mgr_reply_err(rp, 413, "payload_too_large", NULL, "files are at most %llu bytes",
                        (unsigned long long) FILE_MAX);
        }
        json_t *req = json_pack("{s:s, s:s, s:[s], s:I}", "op", SBX_SV_OP_EXEC, "kind",
                put ? SBX_SV_KIND_PUT : SBX_SV_KIND_GET, "argv", path, "output_cap", (json_int_t) FILE_MAX);
        exec_io io = {0};
        json_t *ans = mgr_sv_exec(m, b, req, put ? (data ? data : "") : NULL, put ? len : 0, -1, &io);
        json_decref(req);
        if (!ans)
                mgr_reply_err(rp, 503, "unavailable", NULL, "%s",
                        mgr_no_answer(m, "the sandbox's supervisor did not answer"));
        else if (!json_is_true(json_object_get(ans, "ok")) ||
                 json_integer_value(json_object_get(ans, "exit")) < 0) {
                int err = (int) json_integer_value(json_object_get(ans, "errno"));
                if (err == 0 && json_integer_value(json_object_get(ans, "exit")) < 0)
                        err = (int) -json_integer_value(json_object_get(ans, "exit"));
                if (err == ENOENT || err == ENOTDIR)
                        mgr_reply_err(rp, 404, "not_found", "path", "%s: no such file in the sandbox", path);
                else if (err == EACCES || err == EPERM || err == EROFS || err == ELOOP)
                        mgr_reply_err(rp, 403, "permission_denied", "path",
                                "%s: the sandbox may not %s it (%s)", path, put ? "write" : "read",
                                strerror(err));
                else if (err == EISDIR)
                        mgr_reply_err(rp, 400, "invalid_argument", "path", "%s: not a regular file", path);
                else
                        mgr_reply_err(
                                rp, 409, "conflict", "path", "%s: %s", path, err ? strerror(err) : "failed");
        } else if (json_integer_value(json_object_get(ans, "exit")) != 0)
                mgr_reply_err(rp, 409, "conflict", "path", "%s: the transfer did not complete (%s)", path,
                        json_string_value(json_object_get(json_object_get(ans, "report"), "status")) ?: "?");
        else if (put) {
                rp->code = 200;
                rp->json = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t) len);
                mgr_audit(m, who, "sandbox.files.put", b->id, "ok", path);
        } else {
                rp->code = 200;
                rp->raw = io.out ? io.out : strdup("");
                rp->raw_len = io.out_len;
                rp->ctype = "application/octet-stream";
                io.out = NULL;
        }
        json_decref(ans);
        free(io.out);
        free(io.err);
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        mgr_box_put(m, b);
        return rp->code;
}

unsigned sbx_ops_file_read(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *path, sbx_mgr_reply *rp) {
        return op_files(m, who, id, path, false, NULL, 0, rp);
}

unsigned sbx_ops_file_write(sbx_mgr *m, const sbx_caller *who, const char *id, const char *path,
        const void *data, size_t len, sbx_mgr_reply *rp) {
        return op_files(m, who, id, path, true, data, len, rp);
}
