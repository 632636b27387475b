/* remote-util.c — what the clients of hosted services (ext-e2b.c, ext-daytona.c, ext-compose.c)
 * share beyond remote.c's calls: an exec's body decoded and its answer made (whole, or NDJSON at
 * once), a files request's path and answer, bytes as the native API carries them, an upload's
 * multipart, and the 422 for what an extension lacks. */
#include "daemon/remote.h"

#include "basic/base64.h"

/* %XX for everything but unreserved characters and '/'. */
void remote_url_escape(const char *s, char *buf, size_t n) {
        size_t k = 0;
        for (const unsigned char *p = (const unsigned char *) s; *p && k + 4 < n; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                        strchr("-._~/", *p))
                        buf[k++] = (char) *p;
                else
                        k += (size_t) snprintf(buf + k, n - k, "%%%02X", *p);
        buf[k] = 0;
}

/* Bytes as the native API carries them: text when UTF-8, else base64. */
json_t *remote_data_json(const char *d, size_t n, const char **enc) {
        if (mgr_utf8_valid((const unsigned char *) d, n)) {
                *enc = "utf-8";
                return json_stringn(d, n);
        }
        *enc = "base64";
        _cleanup_free_ char *b = sbx_base64_encode(d, n);
        return json_string(b ? b : "");
}

const char *remote_outputs_json(
        const char *out, size_t on, const char *err, size_t en, json_t **jo, json_t **je) {
        const char *e1, *e2;
        *jo = remote_data_json(out ? out : "", on, &e1);
        *je = remote_data_json(err ? err : "", en, &e2);
        if (streq(e1, e2))
                return e1;
        json_decref(*jo);
        json_decref(*je);
        _cleanup_free_ char *bo = sbx_base64_encode(out ? out : "", on),
                            *be = sbx_base64_encode(err ? err : "", en);
        *jo = json_string(bo ? bo : "");
        *je = json_string(be ? be : "");
        return "base64";
}

curl_mime *remote_upload_mime(CURL *c, void *ud) {
        remote_upload *u = ud;
        curl_mime *mp = curl_mime_init(c);
        curl_mimepart *part = mp && u->bulk ? curl_mime_addpart(mp) : NULL;
        if (part) { /* Daytona's bulk upload: files[0].path, then files[0].file */
                curl_mime_name(part, "files[0].path");
                curl_mime_data(part, u->path ? u->path : "", CURL_ZERO_TERMINATED);
        }
        part = mp ? curl_mime_addpart(mp) : NULL;
        if (!part)
                return mp;
        curl_mime_name(part, u->bulk ? "files[0].file" : "file");
        curl_mime_filename(part, "file");
        curl_mime_type(part, "application/octet-stream");
        curl_mime_data(part, u->data ? u->data : "", u->len);
        return mp;
}

json_t *remote_exec_body(const sbx_mgr_request *rq, const remote_ep *ep, bool stdin_ok, const char *why_tty,
        const char *why_stdin, sbx_mgr_reply *rp) {
        json_t *body = mgr_parse_body(rq, rp, false);
        if (!body)
                return NULL;
        static const char *const keys[] = {"argv", "env", "cwd", "timeout_s", "stream", "stdin",
                "stdin_encoding", "tty", "long_lived", NULL};
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *to = json_object_get(body, "timeout_s"), *x,
               *in = json_object_get(body, "stdin");
        size_t i;
        bool argv_ok = json_is_array(argv) && json_array_size(argv) > 0;
        json_array_foreach(argv, i, x) argv_ok = argv_ok && json_is_string(x);
        if (!mgr_only_keys(body, keys, "", rp))
                ;
        else if (!argv_ok)
                mgr_reply_err(rp, 400, "invalid_argument", "argv", "argv: a non-empty array of strings");
        else if (env && !mgr_string_map(env, "env", 256, rp))
                ;
        else if (cwd && !json_is_string(cwd))
                mgr_reply_err(rp, 400, "invalid_argument", "cwd", "cwd: a path");
        else if (to && !(json_is_number(to) && json_number_value(to) > 0))
                mgr_reply_err(
                        rp, 400, "invalid_argument", "timeout_s", "timeout_s: a positive number of seconds");
        else if (json_object_get(body, "tty"))
                remote_lacks(rp, ep->ext, why_tty);
        else if (in && !stdin_ok)
                remote_lacks(rp, ep->ext, why_stdin);
        else if (in && !json_is_string(in))
                mgr_reply_err(rp, 400, "invalid_argument", "stdin", "stdin: a string");
        if (!rp->code)
                return body;
        json_decref(body);
        return NULL;
}

void remote_exec_started(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        b->last_active_ms = mgr_now_ms();
        b->execs++;
        pthread_mutex_unlock(&m->lock);
}

unsigned remote_exec_reply(const box *b, bool stream, int exit_code, json_t *jo, json_t *je, const char *enc,
        sbx_mgr_reply *rp) {
        char eid[24];
        mgr_random_id("exe_", eid, sizeof eid);
        rp->code = 200;
        if (!stream) {
                rp->json = json_pack("{s:s, s:s, s:i, s:n, s:o, s:o, s:s, s:n}", "exec_id", eid, "status",
                        "exited", "exit_code", exit_code, "signal", "stdout", jo, "stderr", je, "encoding",
                        enc, "report");
                return 200;
        }
        json_t *ev[4] = {json_pack("{s:s, s:s, s:s}", "type", "start", "exec_id", eid, "sandbox_id", b->id),
                json_pack("{s:s, s:o, s:s}", "type", "stdout", "data", jo, "encoding", enc),
                json_pack("{s:s, s:o, s:s}", "type", "stderr", "data", je, "encoding", enc),
                json_pack("{s:s, s:s, s:s, s:i, s:n, s:n}", "type", "end", "exec_id", eid, "status",
                        "exited", "exit_code", exit_code, "signal", "report")};
        char *all = NULL;
        size_t an = 0;
        for (size_t i = 0; i < ELEMENTSOF(ev); i++) {
                /* an empty stream is no event */
                bool empty =
                        i == 1 || i == 2 ? json_string_length(json_object_get(ev[i], "data")) == 0 : false;
                char *l = empty ? NULL : json_dumps(ev[i], JSON_COMPACT);
                json_decref(ev[i]);
                char *na = l ? realloc(all, an + strlen(l) + 2) : NULL;
                if (na) {
                        all = na;
                        memcpy(all + an, l, strlen(l));
                        an += strlen(l);
                        all[an++] = '\n';
                }
                free(l);
        }
        rp->raw = all ? all : strdup("");
        rp->raw_len = all ? an : 0;
        rp->ctype = "application/x-ndjson";
        return 200;
}

const char *remote_files_path(const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *path = rq->query ? rq->query(rq->ctx, "path") : NULL;
        if (!path || path[0] != '/') {
                mgr_reply_err(
                        rp, 400, "invalid_argument", "path", "path: an absolute path inside the sandbox");
                return NULL;
        }
        return path;
}

unsigned remote_files_reply(const remote_ep *ep, long code, remote_resp *r, const char *why, bool write,
        const char *path, size_t len, sbx_mgr_reply *rp) {
        char w[700];
        if (!code)
                return mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
        if (code != 200 && code != 201 && code != 204) {
                remote_answer_why(ep, r, w, sizeof w);
                return mgr_reply_err(rp, code == 404 || code == 400 || code == 507 ? (unsigned) code : 502,
                        code == 404   ? "not_found"
                        : code == 400 ? "invalid_argument"
                        : code == 507 ? "insufficient_storage"
                                      : "bad_gateway",
                        NULL, "%s", w);
        }
        rp->code = 200;
        if (write) {
                rp->json = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t) len);
                return 200;
        }
        rp->raw = r->body ? TAKE_PTR(r->body) : strdup("");
        rp->raw_len = r->len;
        rp->ctype = "application/octet-stream";
        return 200;
}

unsigned remote_lacks_sub(sbx_mgr_reply *rp, const char *ext, const char *method, const char *sub) {
        const char *cap = sub[0] ? sub + 1 : method;
        char c[64];
        snprintf(c, sizeof c, "%.*s", (int) strcspn(cap, "/"), cap);
        return remote_lacks(rp, ext, c);
}

unsigned remote_lacks(sbx_mgr_reply *rp, const char *ext, const char *capability) {
        return mgr_reply_err(rp, 422, "unsupported", "capability",
                "%s does not offer %s for its sandboxes (its capability vector: GET /v1/extensions)", ext,
                capability);
}
