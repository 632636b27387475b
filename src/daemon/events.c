/* events.c — the event log: each change recorded with its sequence number and streamed (SSE). */
#include "daemon/mgr-internal.h"

#include <fcntl.h>

void mgr_emit(sbx_mgr *m, const box *b, const char *type, json_t *data /* stolen */) {
        int64_t at = mgr_now_ms();
        if (!data)
                data = json_object();
        json_object_set_new(data, "sandbox_id", json_string(b->id));
        if (!json_object_get(data, "state"))
                json_object_set_new(data, "state", json_string(sbx_state_to_string(b->state)));
        if (!json_object_get(data, "reason"))
                json_object_set_new(data, "reason", b->reason[0] ? json_string(b->reason) : json_null());
        json_object_set_new(data, "at", mgr_time_json(at));
        char *text = json_dumps(data, JSON_COMPACT);
        json_decref(data);
        int64_t seq = sbx_store_event_add(
                m->store, b->id, type, sbx_state_to_string(b->state), b->reason, at, text);
        free(text);
        mgr_event_posted(m, seq);
}

void mgr_event_posted(sbx_mgr *m, int64_t seq) {
        pthread_mutex_lock(&m->lock);
        if (seq > m->last_seq)
                m->last_seq = seq;
        pthread_cond_broadcast(&m->ev_cond);
        pthread_mutex_unlock(&m->lock);
}

/* ---- events (SSE) -------------------------------------------------------------------------- */

typedef struct sse_ctx {
        sbx_mgr *m;
        int fd;
        int64_t after;
        char sandbox[32];
        char tenant[128];
        bool broken;
} sse_ctx;

static int sse_row(void *ud, int64_t seq, const char *type, const char *data_json) {
        sse_ctx *s = ud;
        if (seq > s->after)
                s->after = seq;
        if (s->broken)
                return 0;
        char *msg = NULL;
        int k = asprintf(&msg, "id: %" PRId64 "\nevent: %s\ndata: {\"seq\":%" PRId64 ",%s\n\n", seq, type,
                seq, data_json && data_json[0] == '{' ? data_json + 1 : "}");
        if (k < 0)
                return 0;
        for (size_t off = 0; off < (size_t) k;) {
                ssize_t w = write(s->fd, msg + off, (size_t) k - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        s->broken = true;
                        break;
                }
                off += (size_t) w;
        }
        free(msg);
        return 0;
}

static void *sse_thread(void *arg) {
        sse_ctx *s = arg;
        sbx_mgr *m = s->m;
        while (!s->broken) {
                (void) sbx_store_events_after(m->store, s->after, s->tenant, s->sandbox, sse_row, s);
                if (s->broken)
                        break;
                pthread_mutex_lock(&m->lock);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 15;
                bool timed_out = false;
                while (m->last_seq <= s->after && !m->stopping && !timed_out)
                        timed_out = pthread_cond_timedwait(&m->ev_cond, &m->lock, &ts) == ETIMEDOUT;
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
                if (timed_out && write(s->fd, ": keep-alive\n\n", 14) < 0)
                        break;
        }
        close(s->fd);
        free(s);
        mgr_worker_done(m);
        return NULL;
}

unsigned mgr_op_events(sbx_mgr *m, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        char sbc[32];
        const char *sb =
                rq->query(rq->ctx, "sandbox") ? sbx_id_canon(rq->query(rq->ctx, "sandbox"), sbc) : NULL;
        const char *last = rq->header ? rq->header(rq->ctx, "Last-Event-ID") : NULL;
        const char *after_q = rq->query(rq->ctx, "after");
        if (sb && !mgr_valid_sandbox_id(sb))
                return mgr_reply_err(rp, 400, "invalid_argument", "sandbox", "sandbox: not a sandbox id");
        int64_t after = 0;
        const char *a = last ? last : after_q;
        if (a) {
                char *end;
                after = strtoll(a, &end, 10);
                if (*end || after < 0)
                        return mgr_reply_err(rp, 400, "invalid_argument", last ? "Last-Event-ID" : "after",
                                "Last-Event-ID: an event id (a non-negative integer)");
        }
        sse_ctx *s = calloc(1, sizeof *s);
        int p[2];
        if (!s || pipe2(p, O_CLOEXEC) < 0) {
                free(s);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
        }
        s->m = m;
        s->fd = p[1];
        s->after = after;
        snprintf(s->sandbox, sizeof s->sandbox, "%s", sb ? sb : "");
        snprintf(s->tenant, sizeof s->tenant, "%s", rq->who->tenant);
        if (mgr_worker_start(m, sse_thread, s) < 0) {
                close(p[0]);
                close(p[1]);
                free(s);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "cannot start the stream");
        }
        rp->code = 200;
        rp->ctype = "text/event-stream";
        rp->stream_fd = p[0];
        return 200;
}
