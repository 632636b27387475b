/* exec.c — exec: parse, run through the supervisor, stream or collect, record; the exec records; the compat
 * surfaces' exec API. */
#include "basic/debug.h"
#include "daemon/mgr-internal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include "basic/base64.h"

static void collect(char **buf, size_t *len, size_t *cap, const char *d, size_t n) {
        if (*len + n + 1 > *cap) {
                size_t nc = (*cap ? *cap * 2 : 65536);
                while (nc < *len + n + 1)
                        nc *= 2;
                char *p = realloc(*buf, nc);
                if (!p)
                        return;
                *buf = p;
                *cap = nc;
        }
        memcpy(*buf + *len, d, n);
        *len += n;
        (*buf)[*len] = 0;
}

const char *mgr_no_answer(sbx_mgr *m, const char *gone) {
        return mgr_stopping(m)
                       ? "the server is stopping: the exec was left running in the sandbox (the rest "
                         "of its output is not delivered; the next server takes its report in)"
                       : gone;
}

/* Run one request through the supervisor: the command's stdin from in_data, its output through
 * io. Returns the supervisor's answer; NULL when the supervisor is gone, or when the server stops
 * before the exec ends (the exec goes on; a re-adopting server takes its report in): mgr_no_answer()
 * says which. */
json_t *mgr_sv_exec(
        sbx_mgr *m, box *b, json_t *req, const char *in_data, size_t in_len, int in_fd, exec_io *io) {
        bool reused = false;
        int fd = mgr_sv_take(m, b, &reused);
        if (fd < 0)
                return NULL;
        int in = -1, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        json_t *ans = NULL;
        if (in_fd >= 0)
                in = fcntl(in_fd, F_DUPFD_CLOEXEC, 3);
        else if (in_data) {
                in = memfd_create("sandboxer-stdin", MFD_CLOEXEC);
                size_t off = 0;
                while (in >= 0 && off < in_len) {
                        ssize_t k = write(in, in_data + off, in_len - off);
                        if (k <= 0)
                                break;
                        off += (size_t) k;
                }
                if (in >= 0)
                        (void) lseek(in, 0, SEEK_SET);
        } else
                in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                goto out;
        int fds[3] = {in, outp[1], errp[1]};
        int r = mgr_sv_send(fd, req, fds, 3);
        if (r < 0 && reused) { /* its supervisor closed it (gone, or another one now): anew */
                close(fd);
                fd = mgr_sv_connect(b);
                r = fd < 0 ? fd : mgr_sv_send(fd, req, fds, 3);
        }
        if (r < 0)
                goto out;
        close(outp[1]);
        close(errp[1]);
        outp[1] = errp[1] = -1;
        in = safe_close(in);
        struct pollfd pf[3] = {{.fd = outp[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN},
                {.fd = m->stop_efd, .events = POLLIN}};
        int open_n = 2;
        char buf[65536];
        while (open_n > 0) {
                int k = poll(pf, 3, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        break;
                if (pf[2].revents)
                        goto out; /* the server stops */
                for (int i = 0; i < 2; i++) {
                        if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t n = read(pf[i].fd, buf, sizeof buf);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                pf[i].fd = -1;
                                open_n--;
                                continue;
                        }
                        if (io->sink)
                                io->sink(io->ud, i + 1, buf, (size_t) n);
                        else if (i == 0)
                                collect(&io->out, &io->out_len, &io->out_cap, buf, (size_t) n);
                        else
                                collect(&io->err, &io->err_len, &io->err_cap, buf, (size_t) n);
                }
        }
        for (;;) { /* the report, unless the server stops first */
                struct pollfd rf[2] = {{.fd = fd, .events = POLLIN}, {.fd = m->stop_efd, .events = POLLIN}};
                int k = poll(rf, 2, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k > 0 && rf[0].revents) /* the report is there: it wins over the stop */
                        ans = mgr_sv_recv(fd, -1);
                break;
        }
out:
        safe_close(in);
        for (int i = 0; i < 2; i++) {
                safe_close(outp[i]);
                safe_close(errp[i]);
        }
        /* answered whole, and its supervisor waits for another request on it: kept */
        if (ans && json_is_true(json_object_get(ans, "keep")))
                mgr_sv_keep(m, b, fd);
        else
                safe_close(fd);
        return ans;
}

typedef struct exec_args {
        json_t *req; /* for the supervisor */
        char *stdin_data;
        size_t stdin_len;
        bool has_stdin, stream;
        int long_lived; /* 1, 0, or -1: if the profile allows it (a terminal's default) */
        unsigned cols, rows; /* a terminal */
        char exec_id[32];
} exec_args;

static void exec_args_done(exec_args *a) {
        json_decref(a->req);
        free(a->stdin_data);
}

static unsigned exec_parse(const sbx_mgr_request *rq, exec_args *a, sbx_mgr_reply *rp) {
        json_t *body = mgr_parse_body(rq, rp, false);
        if (!body)
                return rp->code;
        static const char *const keys[] = {"argv", "env", "cwd", "timeout_s", "stdin", "stdin_encoding",
                "stream", "tty", "long_lived", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                goto fail;
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *t = json_object_get(body, "timeout_s"),
               *in = json_object_get(body, "stdin"), *enc = json_object_get(body, "stdin_encoding"),
               *stream = json_object_get(body, "stream");
        if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > 1024) {
                mgr_reply_err(
                        rp, 400, "invalid_argument", "argv", "argv: must be a non-empty array of strings");
                goto fail;
        }
        size_t i;
        json_t *x;
        json_array_foreach(argv, i, x) if (!json_is_string(x) ||
                                           memchr(json_string_value(x), 0, json_string_length(x)) ||
                                           (i == 0 && json_string_length(x) == 0)) {
                mgr_reply_err(rp, 400, "invalid_argument", "argv",
                        "argv[%zu]: must be a string (no NUL; the first not empty)", i);
                goto fail;
        }
        json_t *envv = json_array();
        if (env) {
                if (!mgr_string_map(env, "env", 256, rp)) {
                        json_decref(envv);
                        goto fail;
                }
                const char *k;
                json_t *v;
                json_object_foreach(env, k, v) {
                        const char *why = "values may not hold NUL";
                        if (sbx_env_name_check(k, &why) < 0 ||
                                memchr(json_string_value(v), 0, json_string_length(v))) {
                                json_decref(envv);
                                mgr_reply_err(
                                        rp, 400, "invalid_argument", "env", "env: '%.64s': %s", k, why);
                                goto fail;
                        }
                        char *kv;
                        if (asprintf(&kv, "%s=%s", k, json_string_value(v)) >= 0) {
                                json_array_append_new(envv, json_string(kv));
                                free(kv);
                        }
                }
        }
        if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/' ||
                           json_string_length(cwd) > 4096)) {
                json_decref(envv);
                mgr_reply_err(rp, 400, "invalid_argument", "cwd",
                        "cwd: must be an absolute path inside the sandbox");
                goto fail;
        }
        if (t && (!json_is_number(t) || json_number_value(t) <= 0)) {
                json_decref(envv);
                mgr_reply_err(
                        rp, 400, "invalid_argument", "timeout_s", "timeout_s: must be a positive number");
                goto fail;
        }
        if (stream && !json_is_boolean(stream)) {
                json_decref(envv);
                mgr_reply_err(rp, 400, "invalid_argument", "stream", "stream: must be true or false");
                goto fail;
        }
        if (enc && (!json_is_string(enc) || !(streq(json_string_value(enc), "utf-8") ||
                                                    streq(json_string_value(enc), "base64")))) {
                json_decref(envv);
                mgr_reply_err(
                        rp, 400, "invalid_argument", "stdin_encoding", "stdin_encoding: utf-8 or base64");
                goto fail;
        }
        if (in && !json_is_string(in)) {
                json_decref(envv);
                mgr_reply_err(rp, 400, "invalid_argument", "stdin", "stdin: must be a string");
                goto fail;
        }
        json_t *tty = json_object_get(body, "tty"), *ll = json_object_get(body, "long_lived");
        if (ll && !json_is_boolean(ll)) {
                json_decref(envv);
                mgr_reply_err(
                        rp, 400, "invalid_argument", "long_lived", "long_lived: must be true or false");
                goto fail;
        }
        if (tty) {
                static const char *const tkeys[] = {"cols", "rows", NULL};
                if (!json_is_object(tty) || !mgr_only_keys(tty, tkeys, "tty.", rp) ||
                        !sbx_tty_size(tty, &a->cols, &a->rows)) {
                        json_decref(envv);
                        if (rp->code != 400)
                                mgr_reply_err(rp, 400, "invalid_argument", "tty",
                                        "tty: {cols, rows}, integers from 1 to %d", SBX_TTY_MAX);
                        goto fail;
                }
                if (in || (stream && json_is_true(stream))) {
                        json_decref(envv);
                        mgr_reply_err(rp, 400, "invalid_argument", in ? "stdin" : "stream",
                                "%s: not with tty (a terminal's input and output go through "
                                "/v1/sandboxes/ID/execs/EXEC_ID/attach)",
                                in ? "stdin" : "stream");
                        goto fail;
                }
        }
        /* a terminal is long-lived unless it asks a timeout or says otherwise */
        a->long_lived = ll ? json_is_true(ll) : tty && !t ? -1 : 0;
        if (in) {
                a->has_stdin = true;
                if (enc && streq(json_string_value(enc), "base64")) {
                        if (sbx_base64_decode(json_string_value(in), json_string_length(in), false,
                                    &a->stdin_data, &a->stdin_len) < 0) {
                                json_decref(envv);
                                mgr_reply_err(
                                        rp, 400, "invalid_argument", "stdin", "stdin: not valid base64");
                                goto fail;
                        }
                } else {
                        a->stdin_len = json_string_length(in);
                        a->stdin_data = malloc(a->stdin_len + 1);
                        if (a->stdin_data)
                                memcpy(a->stdin_data, json_string_value(in), a->stdin_len);
                }
        }
        a->stream = stream && json_is_true(stream);
        mgr_random_id("exe_", a->exec_id, sizeof a->exec_id);
        a->req = json_pack("{s:s, s:s, s:s, s:O, s:o}", "op", SBX_SV_OP_EXEC, "kind", SBX_SV_KIND_RUN,
                "exec_id", a->exec_id, "argv", argv, "env", envv);
        if (cwd)
                json_object_set(a->req, "cwd", cwd);
        if (t)
                json_object_set(a->req, "timeout_s", t);
        if (a->cols)
                json_object_set_new(
                        a->req, "tty", json_pack("{s:i, s:i}", "cols", a->cols, "rows", a->rows));
        if (a->long_lived)
                json_object_set_new(a->req, "long_lived",
                        a->long_lived > 0 ? json_true() : json_string(SBX_SV_LONG_LIVED_IF_ALLOWED));
        json_decref(body);
        return 0;
fail:
        json_decref(body);
        return rp->code;
}

/* Before and after an exec: the box is active while any runs; counted, budget, store, event. */
static unsigned exec_begin(sbx_mgr *m, const sbx_caller *who, box *b, sbx_mgr_reply *rp) {
        char qmsg[512];
        const char *q = mgr_quota_check(m, who->tenant, 0, true, qmsg, sizeof qmsg);
        if (q)
                return mgr_reply_err(rp, 429, "quota_exceeded", q, "%s", qmsg);
        pthread_mutex_lock(&m->lock);
        bool spent = b->budget_s > 0 && b->budget_used_s >= b->budget_s;
        bool first = !spent && b->execs_running++ == 0;
        b->last_active_ms = mgr_now_ms();
        pthread_mutex_unlock(&m->lock);
        if (spent)
                return mgr_reply_err(rp, 429, "budget_exhausted", "budget_s",
                        "sandbox %s has spent its budget_s (%g s); create a new one", b->id, b->budget_s);
        if (first) /* stored and streamed by the settler while the exec runs (settle.c) */
                (void) mgr_set_state_from_after_reply(m, b, SBX_STATE_READY, SBX_STATE_ACTIVE, "exec");
        return 0;
}

static void running_add(sbx_mgr *m, box *b, const char *exec_id, json_t *argv) {
        pthread_mutex_lock(&m->lock);
        if (!b->running)
                b->running = json_object();
        json_object_set_new(b->running, exec_id,
                json_pack("{s:s, s:s, s:O, s:o}", "exec_id", exec_id, "status", "running", "argv", argv,
                        "started_at", mgr_time_json(mgr_now_ms())));
        pthread_mutex_unlock(&m->lock);
}

static void running_del(sbx_mgr *m, box *b, const char *exec_id) {
        pthread_mutex_lock(&m->lock);
        if (b->running)
                json_object_del(b->running, exec_id);
        pthread_mutex_unlock(&m->lock);
}

/* An exec that exec_begin() counted and running_add() listed did not start: uncounted, unlisted,
 * b's reference dropped. */
static void exec_not_started(sbx_mgr *m, box *b, const char *exec_id) {
        pthread_mutex_lock(&m->lock);
        b->execs_running--;
        pthread_mutex_unlock(&m->lock);
        running_del(m, b, exec_id);
        mgr_box_put(m, b);
}

static void exec_end(sbx_mgr *m, box *b, const char *exec_id, json_t *ans) {
        bool long_lived = json_is_true(json_object_get(ans, "long_lived")); /* the supervisor's word */
        json_t *rep = json_object_get(ans, "report");
        mgr_skill_stamp_report(b, rep); /* stored, and answered: exec_result reads ans after */
        const char *status = json_string_value(json_object_get(rep, "status"));
        json_t *code = json_object_get(json_object_get(rep, "exit"), "code");
        json_t *wall = json_object_get(json_object_get(rep, "usage"), "wall_ms");
        char *text = rep ? json_dumps(rep, JSON_COMPACT) : NULL;
        int64_t t = mgr_now_ms();
        mgr_settled(m, b); /* its "active" is stored and streamed before its end is */
        sbx_store_exec x = {
                .id = exec_id,
                .sandbox_id = b->id,
                .status = status,
                .exit_code = json_is_integer(code) ? json_integer_value(code) : -1,
                .started_at = t - (json_is_integer(wall) ? json_integer_value(wall) : 0),
                .ended_at = t,
                .report_json = text,
        };
        pthread_mutex_lock(&m->lock);
        mgr_meter_exec_locked(b, rep); /* what its egress proxy carried */
        b->execs++;
        if (json_is_integer(wall) && !long_lived) /* budget_s counts bounded execs */
                b->budget_used_s += (double) json_integer_value(wall) / 1000.0;
        b->last_active_ms = mgr_now_ms();
        bool ready = --b->execs_running == 0 && !b->busy;
        const char *state_at = sbx_state_to_string(b->state);
        pthread_mutex_unlock(&m->lock);
        atomic_fetch_add(&m->n_execs, 1);
        /* On a request's thread the record, its event, "ready" again and the sandbox's counters
         * are stored beside the reply, by the settler, in one transaction (a reader of the
         * execs waits for them); the report's file, kept by the supervisor, covers a crash
         * before. Elsewhere here, now. */
        if (!mgr_exec_end_later(m, b, &x, state_at, ready)) {
                mgr_tx_begin(m);
                (void) sbx_store_exec_put(m->store, &x, false);
                mgr_emit(m, b, "sandbox.exec",
                        json_pack("{s:s, s:s?, s:o}", "exec_id", exec_id, "status", status, "exit_code",
                                json_is_integer(code) ? json_integer(json_integer_value(code))
                                                      : json_null()));
                pthread_mutex_lock(&m->lock);
                bool still = b->execs_running == 0 && !b->busy;
                pthread_mutex_unlock(&m->lock);
                if (!(still && mgr_set_state_from(m, b, SBX_STATE_ACTIVE, SBX_STATE_READY, "exec_done")))
                        (void) mgr_box_save(m, b);
                mgr_tx_end(m);
        }
        free(text);
        mgr_skill_audit_exec(m, b, exec_id, rep); /* out of the transaction: it fsyncs */
}

static json_t *exec_result(const char *exec_id, json_t *ans, const exec_io *io) {
        json_t *rep = json_object_get(ans, "report");
        const char *status = json_string_value(json_object_get(rep, "status"));
        json_t *ex = json_object_get(rep, "exit");
        json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
        bool text = mgr_utf8_valid((const unsigned char *) (io->out ? io->out : ""), io->out_len) &&
                    mgr_utf8_valid((const unsigned char *) (io->err ? io->err : ""), io->err_len);
        json_t *r = json_object();
        json_object_set_new(r, "exec_id", json_string(exec_id));
        json_object_set_new(r, "status", json_string(status ? status : "setup_error"));
        json_object_set_new(r, "exit_code",
                json_is_integer(code) ? json_integer(json_integer_value(code)) : json_null());
        json_object_set_new(
                r, "signal", json_is_integer(sig) ? json_integer(json_integer_value(sig)) : json_null());
        json_object_set_new(r, "stdout",
                text ? json_stringn(io->out ? io->out : "", io->out_len)
                     : mgr_base64_json((const unsigned char *) io->out, io->out_len));
        json_object_set_new(r, "stderr",
                text ? json_stringn(io->err ? io->err : "", io->err_len)
                     : mgr_base64_json((const unsigned char *) io->err, io->err_len));
        json_object_set_new(r, "encoding", json_string(text ? "utf-8" : "base64"));
        json_object_set(r, "report", rep ? rep : json_null());
        return r;
}

typedef struct stream_ctx {
        sbx_mgr *m;
        box *b;
        exec_args a;
        int fd; /* write end */
        bool broken;
        char *carry[3]; /* an incomplete UTF-8 tail per stream */
        size_t carry_len[3];
} stream_ctx;

static void stream_line(stream_ctx *s, json_t *j) {
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!text || s->broken) {
                free(text);
                return;
        }
        size_t n = strlen(text);
        text[n] = '\n';
        for (size_t off = 0; off < n + 1;) {
                ssize_t k = write(s->fd, text + off, n + 1 - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        s->broken = true; /* the client left; the exec goes on to its end */
                        break;
                }
                off += (size_t) k;
        }
        free(text);
}

static void stream_sink(void *ud, int which, const char *data, size_t n) {
        stream_ctx *s = ud;
        bool text = mgr_utf8_valid((const unsigned char *) data, n);
        stream_line(
                s, json_pack("{s:s, s:o, s:s}", "type", which == 1 ? "stdout" : "stderr", "data",
                           text ? json_stringn(data, n) : mgr_base64_json((const unsigned char *) data, n),
                           "encoding", text ? "utf-8" : "base64"));
}

static void *stream_thread(void *arg) {
        stream_ctx *s = arg;
        exec_io io = {.sink = stream_sink, .ud = s};
        stream_line(s, json_pack("{s:s, s:s, s:s}", "type", "start", "exec_id", s->a.exec_id, "sandbox_id",
                               s->b->id));
        json_t *ans = mgr_sv_exec(
                s->m, s->b, s->a.req, s->a.has_stdin ? s->a.stdin_data : NULL, s->a.stdin_len, -1, &io);
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(s->m, s->b, s->a.exec_id, ans);
                json_t *rep = json_object_get(ans, "report");
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(rep, "violations"), i, v)
                        stream_line(s, json_pack("{s:s, s:O}", "type", "violation", "violation", v));
                json_t *ex = json_object_get(rep, "exit");
                json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
                stream_line(s, json_pack("{s:s, s:s, s:O, s:O, s:O, s:O}", "type", "end", "exec_id",
                                       s->a.exec_id, "status", json_object_get(rep, "status"), "exit_code",
                                       code ? code : json_null(), "signal", sig ? sig : json_null(),
                                       "report", rep));
        } else {
                pthread_mutex_lock(&s->m->lock);
                s->b->execs_running--;
                pthread_mutex_unlock(&s->m->lock);
                /* "detached": the server stopped and let go of an exec that had started */
                stream_line(s,
                        json_pack("{s:s, s:s, s:s, s:n, s:n, s:o}", "type", "end", "exec_id", s->a.exec_id,
                                "status", !ans && mgr_stopping(s->m) ? "detached" : "setup_error",
                                "exit_code", "signal", "error",
                                mgr_err_json("unavailable", NULL, "%s",
                                        ans ? json_string_value(json_object_get(ans, "error"))
                                                        ?: "exec failed"
                                            : mgr_no_answer(s->m, "the sandbox's supervisor is gone"))));
        }
        json_decref(ans);
        running_del(s->m, s->b, s->a.exec_id);
        close(s->fd);
        sbx_mgr *m = s->m;
        mgr_box_put(m, s->b);
        exec_args_done(&s->a);
        free(s);
        mgr_worker_done(m);
        return NULL;
}

/* ---- execs on a terminal (pty.c keeps the terminal) ----------------------------------------- */

typedef struct tty_exec {
        sbx_mgr *m;
        box *b;
        json_t *req;
        char exec_id[32];
        int in; /* the exec's stdin: the socket its terminal's master comes over */
        mgr_pty *p;
} tty_exec;

static void *tty_thread(void *arg) {
        tty_exec *t = arg;
        exec_io io = {0}; /* nothing comes: the command's 1 and 2 are its terminal */
        json_t *ans = mgr_sv_exec(t->m, t->b, t->req, NULL, 0, t->in, &io);
        t->in = safe_close(t->in);
        json_t *end;
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(t->m, t->b, t->exec_id, ans);
                json_t *rep = json_object_get(ans, "report");
                json_t *ex = json_object_get(rep, "exit");
                json_t *code = json_object_get(ex, "code"), *sig = json_object_get(ex, "signal");
                end = json_pack("{s:s, s:O, s:O, s:O, s:O}", "exec_id", t->exec_id, "status",
                        json_object_get(rep, "status") ?: json_null(), "exit_code",
                        code ? code : json_null(), "signal", sig ? sig : json_null(), "report", rep);
        } else {
                pthread_mutex_lock(&t->m->lock);
                t->b->execs_running--;
                pthread_mutex_unlock(&t->m->lock);
                end = json_pack("{s:s, s:s, s:n, s:n, s:I, s:s}", "exec_id", t->exec_id, "status",
                        !ans && mgr_stopping(t->m) ? "detached" : "setup_error", "exit_code", "signal",
                        "errno", (json_int_t) (ans ? json_integer_value(json_object_get(ans, "errno")) : 0),
                        "error",
                        ans ? json_string_value(json_object_get(ans, "error")) ?: "the exec failed"
                            : mgr_no_answer(t->m, "the sandbox's supervisor is gone"));
        }
        mgr_pty_ended(t->p, end);
        running_del(t->m, t->b, t->exec_id);
        json_decref(ans);
        free(io.out);
        free(io.err);
        json_decref(t->req);
        mgr_pty_put(t->p);
        sbx_mgr *m = t->m;
        mgr_box_put(m, t->b);
        free(t);
        mgr_worker_done(m);
        return NULL;
}

/* The master of the exec's terminal, sent by its process as it starts (within 15 s); -1 when
 * the exec ended first (it could not start: its end says why). */
static int recv_master(int fd) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int k;
        do
                k = poll(&pf, 1, 15000);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return -1;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } cbuf;
        char c;
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b, .msg_controllen = sizeof cbuf.b};
        if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) <= 0)
                return -1;
        int master = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                        cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&master, CMSG_DATA(cm), sizeof master);
        if (master >= 0)
                (void) fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        return master;
}

/* Start req (a run with "tty") on b, whose exec_begin() has counted it; b's reference and req
 * are taken. 0 once the terminal is up (*ret_pty: a reference, for a subscriber to attach), or
 * the status with *err. */
static unsigned tty_start(sbx_mgr *m, box *b, json_t *req, const char *exec_id, unsigned cols, unsigned rows,
        mgr_pty **ret_pty, json_t **err) {
        int sp[2] = {-1, -1};
        *err = NULL;
        if (ret_pty)
                *ret_pty = NULL;
        mgr_pty *p = mgr_pty_new(m, b, exec_id, cols, rows);
        tty_exec *t = calloc(1, sizeof *t);
        if (!p || !t || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                *err = mgr_err_json("unavailable", NULL, "cannot set up the terminal: %s", strerror(errno));
                free(t);
                mgr_pty_put(p);
                json_decref(req);
                exec_not_started(m, b, exec_id);
                return 503;
        }
        *t = (tty_exec){.m = m, .b = b, .req = req, .in = sp[1], .p = mgr_pty_ref(p)};
        snprintf(t->exec_id, sizeof t->exec_id, "%s", exec_id);
        if (mgr_worker_start(m, tty_thread, t) < 0) {
                close(sp[0]);
                close(sp[1]);
                mgr_pty_put(p);
                mgr_pty_put(p);
                json_decref(req);
                free(t);
                exec_not_started(m, b, exec_id);
                *err = mgr_err_json("unavailable", NULL, "cannot start the exec's thread");
                return 503;
        }
        int master = recv_master(sp[0]);
        close(sp[0]);
        unsigned code = 0;
        if (master >= 0 && mgr_pty_publish(p, master) < 0) {
                close(master);
                master = -1;
                *err = mgr_err_json("unavailable", NULL,
                        "too many terminals on this server (256, running or ended in the last 5 minutes)");
                code = 503;
        } else if (master < 0) { /* it did not start: its end says why */
                json_t *end = mgr_pty_wait_end(p, 30000);
                int e = (int) json_integer_value(json_object_get(end, "errno"));
                const char *why = json_string_value(json_object_get(end, "error"));
                const char *st = json_string_value(json_object_get(end, "status"));
                if (!end)
                        code = 503, *err = mgr_err_json("unavailable", NULL,
                                            "the exec's terminal did not come up within 15 s");
                else if (e == EPERM)
                        code = 403,
                        *err = mgr_err_json("forbidden", "long_lived", "%s", why ? why : "refused");
                else if (e == EINVAL)
                        code = 400,
                        *err = mgr_err_json("invalid_argument", "tty", "%s", why ? why : "refused");
                else if (e == EDQUOT)
                        code = 429,
                        *err = mgr_err_json("budget_exhausted", "budget_s", "%s", why ? why : "");
                else
                        code = 409,
                        *err = mgr_err_json("conflict", NULL, "the exec could not start: %s",
                                why                              ? why
                                : st && streq(st, "setup_error") ? "its terminal could not be set up"
                                                                 : "it ended before its terminal was up");
                json_decref(end);
        }
        if (master >= 0 && ret_pty)
                *ret_pty = mgr_pty_ref(p);
        mgr_pty_put(p);
        return code;
}

unsigned mgr_op_exec(sbx_mgr *m, const sbx_mgr_request *rq, const char *id, sbx_mgr_reply *rp) {
        exec_args a = {0};
        box *b = mgr_usable_box(m, rq->who, id, rp);
        if (!b)
                return rp->code;
        if (exec_parse(rq, &a, rp) || exec_begin(m, rq->who, b, rp)) {
                exec_args_done(&a);
                mgr_box_put(m, b);
                return rp->code;
        }
        mgr_audit(m, rq->who, "sandbox.exec", b->id, "started", a.exec_id);
        running_add(m, b, a.exec_id, json_object_get(a.req, "argv"));
        if (a.cols) {
                json_t *err = NULL;
                json_t *req = json_incref(a.req);
                unsigned code = tty_start(m, b, req, a.exec_id, a.cols, a.rows, NULL, &err);
                if (code) {
                        rp->code = code;
                        rp->json = err;
                } else {
                        char attach[160];
                        snprintf(attach, sizeof attach, "/v1/sandboxes/%s/execs/%s/attach", id, a.exec_id);
                        rp->code = 201;
                        rp->json = json_pack("{s:s, s:s, s:s, s:{s:i, s:i}, s:s}", "exec_id", a.exec_id,
                                "sandbox_id", id, "status", "running", "tty", "cols", a.cols, "rows", a.rows,
                                "attach", attach);
                }
                exec_args_done(&a);
                return rp->code;
        }
        if (a.stream) {
                int p[2];
                stream_ctx *s = calloc(1, sizeof *s);
                if (!s || pipe2(p, O_CLOEXEC) < 0) {
                        int e = errno;
                        free(s);
                        exec_not_started(m, b, a.exec_id);
                        exec_args_done(&a);
                        return mgr_reply_err(
                                rp, 503, "unavailable", NULL, "cannot start the stream: %s", strerror(e));
                }
                s->m = m;
                s->b = b;
                s->a = a;
                s->fd = p[1];
                if (mgr_worker_start(m, stream_thread, s) < 0) {
                        close(p[0]);
                        close(p[1]);
                        exec_not_started(m, b, s->a.exec_id);
                        exec_args_done(&s->a);
                        free(s);
                        return mgr_reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
                }
                rp->code = 200;
                rp->ctype = "application/x-ndjson";
                rp->stream_fd = p[0];
                return 200;
        }
        sbx_debug_mark("serve: exec sent to the supervisor");
        exec_io io = {0};
        json_t *ans = mgr_sv_exec(m, b, a.req, a.has_stdin ? a.stdin_data : NULL, a.stdin_len, -1, &io);
        sbx_debug_mark("serve: exec answered");
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(m, b, a.exec_id, ans);
                rp->code = 200;
                rp->json = exec_result(a.exec_id, ans, &io);
        } else {
                pthread_mutex_lock(&m->lock);
                b->execs_running--;
                pthread_mutex_unlock(&m->lock);
                if (ans && json_integer_value(json_object_get(ans, "errno")) == EDQUOT)
                        mgr_reply_err(rp, 429, "budget_exhausted", "budget_s", "%s",
                                json_string_value(json_object_get(ans, "error")) ?: "budget spent");
                else if (ans && json_integer_value(json_object_get(ans, "errno")) == EPERM)
                        mgr_reply_err(rp, 403, "forbidden", "long_lived", "%s",
                                json_string_value(json_object_get(ans, "error")) ?: "not allowed");
                else if (ans)
                        mgr_reply_err(rp, 409, "conflict", NULL, "the exec could not start: %s",
                                json_string_value(json_object_get(ans, "error")) ?: "unknown");
                else
                        mgr_reply_err(rp, 503, "unavailable", NULL, "%s",
                                mgr_no_answer(
                                        m, "the sandbox's supervisor did not answer (it is gone or busy)"));
        }
        json_decref(ans);
        running_del(m, b, a.exec_id);
        free(io.out);
        free(io.err);
        exec_args_done(&a);
        mgr_box_put(m, b);
        return rp->code;
}

/* ---- exec records: what ran, kept in the store (also what ran while the server was away) ---- */

typedef struct execs_ctx {
        json_t *items;
        bool with_report;
} execs_ctx;

static int execs_cb(void *ud, const sbx_store_exec *e) {
        execs_ctx *c = ud;
        json_error_t je;
        json_t *rep = e->report_json ? json_loads(e->report_json, 0, &je) : NULL;
        json_t *x = json_object();
        json_object_set_new(x, "exec_id", json_string(e->id));
        json_object_set_new(x, "status", e->status ? json_string(e->status) : json_null());
        json_object_set_new(x, "exit_code", e->exit_code >= 0 ? json_integer(e->exit_code) : json_null());
        json_object_set_new(x, "started_at", mgr_time_json(e->started_at));
        json_object_set_new(x, "ended_at", mgr_time_json(e->ended_at));
        if (c->with_report)
                json_object_set_new(x, "report", rep ? rep : json_null());
        else
                json_decref(rep);
        json_array_append_new(c->items, x);
        return 0;
}

/* GET …/execs: those that ended (newest first, at most 500) and those running now;
 * GET …/execs/ID: one, with its report. */
unsigned sbx_ops_execs(
        sbx_mgr *m, const sbx_caller *who, const char *id, const char *exec_id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, who->tenant) : NULL;
        json_t *rec = b ? NULL : mgr_valid_sandbox_id(id) ? mgr_stored_record(m, id, who->tenant) : NULL;
        if (!b && !rec)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no sandbox '%.64s'", id);
        json_decref(rec);
        if (b && b->adopted_inflight)
                mgr_ingest_exec_reports(m, b);
        if (b)
                mgr_settled(m, b); /* the records of execs that ended, owed to the store */
        execs_ctx c = {.items = json_array(), .with_report = exec_id != NULL};
        if (exec_id)
                (void) sbx_store_exec_get(m->store, id, exec_id, execs_cb, &c);
        else
                (void) sbx_store_exec_list(m->store, id, execs_cb, &c);
        json_t *running = json_array();
        if (b) {
                pthread_mutex_lock(&m->lock);
                const char *k;
                json_t *v;
                json_object_foreach(b->running, k, v) {
                        if (!exec_id || streq(k, exec_id))
                                json_array_append(running, v);
                }
                pthread_mutex_unlock(&m->lock);
                mgr_box_put(m, b);
        }
        if (exec_id) {
                json_t *one = json_array_size(c.items) ? json_incref(json_array_get(c.items, 0)) : NULL;
                if (!one && json_array_size(running))
                        one = json_incref(json_array_get(running, 0));
                json_decref(c.items);
                json_decref(running);
                if (!one)
                        return mgr_reply_err(
                                rp, 404, "not_found", NULL, "no exec '%.64s' in sandbox %s", exec_id, id);
                rp->code = 200;
                rp->json = one;
                return 200;
        }
        rp->code = 200;
        rp->json = json_pack("{s:o, s:o}", "items", c.items, "running", running);
        return 200;
}

/* ---- the compat surfaces' exec API ---------------------------------------------------------- */

typedef struct cexec {
        sbx_mgr *m;
        box *b;
        json_t *req;
        int in_fd;
        char exec_id[32];
        sbx_exec_stream_cb cb;
} cexec;

static void cexec_sink(void *ud, int which, const char *data, size_t n) {
        cexec *c = ud;
        if (c->cb.on_output)
                c->cb.on_output(c->cb.userdata, which, data, n);
}

static void *cexec_thread(void *arg) {
        cexec *c = arg;
        exec_io io = {.sink = cexec_sink, .ud = c};
        json_t *ans = mgr_sv_exec(c->m, c->b, c->req, NULL, 0, c->in_fd, &io);
        safe_close(c->in_fd);
        if (ans && json_is_true(json_object_get(ans, "ok")) && json_object_get(ans, "report")) {
                exec_end(c->m, c->b, c->exec_id, ans);
                if (c->cb.on_end)
                        c->cb.on_end(c->cb.userdata, json_object_get(ans, "report"), NULL);
        } else {
                pthread_mutex_lock(&c->m->lock);
                c->b->execs_running--;
                pthread_mutex_unlock(&c->m->lock);
                if (c->cb.on_end)
                        c->cb.on_end(c->cb.userdata, NULL,
                                ans ? json_string_value(json_object_get(ans, "error")) ?: "the exec failed"
                                    : mgr_no_answer(c->m, "the sandbox's supervisor is gone"));
        }
        running_del(c->m, c->b, c->exec_id);
        json_decref(ans);
        json_decref(c->req);
        sbx_mgr *m = c->m;
        mgr_box_put(m, c->b);
        free(c);
        mgr_worker_done(m);
        return NULL;
}

/* A compat surface's exec on a terminal: cb hears its output (as fd 1) and its end. */
typedef struct tty_cb_adapter {
        sbx_exec_stream_cb cb;
} tty_cb_adapter;

static void adapter_output(void *ud, const char *d, size_t n) {
        tty_cb_adapter *a = ud;
        if (a->cb.on_output)
                a->cb.on_output(a->cb.userdata, 1, d, n);
}

static void adapter_end(void *ud, const json_t *end) {
        tty_cb_adapter *a = ud;
        if (a->cb.on_end)
                a->cb.on_end(a->cb.userdata, json_object_get(end, "report"),
                        json_object_get(end, "report") ? NULL
                                                       : json_string_value(json_object_get(end, "error"))
                                                                 ?: "the exec failed");
}

static unsigned tty_exec_start(sbx_mgr *m, const sbx_caller *who, box *b, const sbx_exec_spec *spec,
        const sbx_exec_stream_cb *cb, json_t *argv /* stolen */, const char *exec_id, json_t **err) {
        json_t *env = json_array();
        for (char *const *a = spec->env; a && *a; a++)
                json_array_append_new(env, json_string(*a));
        json_t *req = json_pack("{s:s, s:s, s:s, s:O, s:o, s:{s:i, s:i}}", "op", SBX_SV_OP_EXEC, "kind",
                SBX_SV_KIND_RUN, "exec_id", exec_id, "argv", argv, "env", env, "tty", "cols", spec->tty_cols,
                "rows", spec->tty_rows);
        if (spec->cwd)
                json_object_set_new(req, "cwd", json_string(spec->cwd));
        if (spec->timeout_s > 0)
                json_object_set_new(req, "timeout_s", json_real(spec->timeout_s));
        if (spec->long_lived)
                json_object_set_new(req, "long_lived",
                        spec->long_lived > 0 ? json_true() : json_string(SBX_SV_LONG_LIVED_IF_ALLOWED));
        mgr_audit(m, who, "sandbox.exec", b->id, "started", exec_id);
        running_add(m, b, exec_id, argv);
        json_decref(argv);
        mgr_pty *p = NULL;
        unsigned code = tty_start(m, b, req, exec_id, spec->tty_cols, spec->tty_rows, &p, err);
        if (code)
                return code;
        tty_cb_adapter *a = calloc(1, sizeof *a);
        sbx_pty_sub_handle *h = NULL;
        if (a) {
                a->cb = *cb;
                sbx_pty_cb pc = {.on_output = adapter_output,
                        .on_end = adapter_end,
                        .free_userdata = free,
                        .userdata = a};
                /* from its first byte: the replay is all it has written so far */
                if (sbx_mgr_pty_attach(m, who, b->id, exec_id, &pc, true, &h, err) != 0) {
                        free(a);
                        a = NULL;
                }
        }
        /* the subscription lives as long as the terminal (its adapter freed with it) */
        if (h)
                mgr_pty_forget_handle(h);
        mgr_pty_put(p);
        if (!a) {
                (void) sbx_mgr_exec_signal(m, who, b->id, exec_id, SIGKILL);
                if (!*err)
                        *err = mgr_err_json("unavailable", NULL, "out of memory");
                return 503;
        }
        return 0;
}

unsigned sbx_mgr_exec_start(sbx_mgr *m, const sbx_caller *who, const char *sandbox_id,
        const sbx_exec_spec *spec, const sbx_exec_stream_cb *cb, char exec_id[static 32], json_t **err) {
        sbx_mgr_reply rp = {.stream_fd = -1};
        *err = NULL;
        box *b = mgr_usable_box(m, who, sandbox_id, &rp);
        if (!b) {
                *err = rp.json;
                return rp.code;
        }
        if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0]) {
                mgr_box_put(m, b);
                *err = mgr_err_json("invalid_argument", "argv", "argv: a non-empty command is required");
                return 400;
        }
        if (exec_begin(m, who, b, &rp)) {
                mgr_box_put(m, b);
                *err = rp.json;
                return rp.code;
        }
        cexec *c = calloc(1, sizeof *c);
        json_t *argv = json_array(), *env = json_array();
        for (char *const *a = spec->argv; *a; a++)
                json_array_append_new(argv, json_string(*a));
        for (char *const *a = spec->env; a && *a; a++)
                json_array_append_new(env, json_string(*a));
        mgr_random_id("exe_", exec_id, 32);
        if (spec->tty_cols && spec->tty_rows) {
                json_decref(env); /* rebuilt below */
                free(c);
                return tty_exec_start(m, who, b, spec, cb, argv, exec_id, err);
        }
        if (c) {
                c->m = m;
                c->b = b;
                c->cb = *cb;
                c->in_fd = spec->stdin_fd >= 0 ? fcntl(spec->stdin_fd, F_DUPFD_CLOEXEC, 3) : -1;
                snprintf(c->exec_id, sizeof c->exec_id, "%s", exec_id);
                c->req = json_pack("{s:s, s:s, s:s, s:O, s:o}", "op", SBX_SV_OP_EXEC, "kind",
                        SBX_SV_KIND_RUN, "exec_id", exec_id, "argv", argv, "env", env);
                if (spec->cwd)
                        json_object_set_new(c->req, "cwd", json_string(spec->cwd));
                if (spec->timeout_s > 0)
                        json_object_set_new(c->req, "timeout_s", json_real(spec->timeout_s));
                if (spec->long_lived)
                        json_object_set_new(c->req, "long_lived",
                                spec->long_lived > 0 ? json_true()
                                                     : json_string(SBX_SV_LONG_LIVED_IF_ALLOWED));
        } else
                json_decref(env);
        mgr_audit(m, who, "sandbox.exec", b->id, "started", exec_id);
        running_add(m, b, exec_id, argv);
        json_decref(argv);
        if (!c || mgr_worker_start(m, cexec_thread, c) < 0) {
                if (c) {
                        safe_close(c->in_fd);
                        json_decref(c->req);
                        free(c);
                }
                exec_not_started(m, b, exec_id);
                *err = mgr_err_json("unavailable", NULL, "cannot start the exec's thread");
                return 503;
        }
        return 0;
}

int sbx_mgr_exec_signal(
        sbx_mgr *m, const sbx_caller *who, const char *sandbox_id, const char *exec_id, int sig) {
        box *b = mgr_valid_sandbox_id(sandbox_id) ? mgr_box_get(m, sandbox_id, who->tenant) : NULL;
        if (!b)
                return -ENOENT;
        int r = -ESRCH;
        /* An exec this server started is in b->running from before its request reaches the
         * supervisor: one signalled right after its start (a kill racing its launch) is asked for
         * again until the supervisor knows it (its start is then under way: at most a second) or it
         * has ended. */
        for (int attempt = 0; attempt < 200; attempt++) {
                int fd = mgr_sv_connect(b);
                if (fd < 0)
                        break;
                json_t *req = json_pack(
                        "{s:s, s:s, s:i}", "op", SBX_SV_OP_SIGNAL, "exec_id", exec_id, "signal", sig);
                json_t *ans = mgr_sv_send(fd, req, NULL, 0) >= 0 ? mgr_sv_recv(fd, 5000) : NULL;
                bool ok = ans && json_is_true(json_object_get(ans, "ok"));
                json_decref(req);
                json_decref(ans);
                close(fd);
                if (ok) {
                        r = 0;
                        break;
                }
                pthread_mutex_lock(&m->lock);
                bool running = b->running && json_object_get(b->running, exec_id);
                pthread_mutex_unlock(&m->lock);
                if (!running)
                        break;
                (void) nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
        }
        mgr_box_put(m, b);
        return r;
}
