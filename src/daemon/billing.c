/* billing.c — billing events for an external billing system (a consumer of the ledger, not its
 * owner): each ledger transaction — a grant, a hold, a charge, a release, a deal's payable or
 * receivable — becomes one event {event_id (the transaction's id), type, at, kind, ref, tenant,
 * currency, entries: [{account, amount}]}, in ledger order, appended as a line of NDJSON to
 * `serve --billing-export FILE` (fsync'd) and POSTed to `serve --billing-webhook URL` with an
 * Idempotency-Key (the event id), retried with backoff (1 s doubling to 60 s) until it is taken
 * (2xx). Each sink keeps its place (the last ledger seq it has) in the state dir, so a restart
 * goes on from there; delivery is at least once — a crash between a delivery and its place being
 * kept sends that event again, with the same id. */
#include "daemon/mgr-internal.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

typedef struct sink {
        const char *name; /* file | webhook */
        int64_t seq; /* the last ledger row delivered */
        int64_t retry_ms; /* not before */
        int backoff_ms;
} sink;

typedef struct batch {
        json_t *events; /* [{event_id, ..., last_seq}] */
        json_t *cur;
        int64_t rows;
} batch;

static int row_cb(void *ud, int n, const char *const *c) {
        batch *b = ud;
        b->rows++;
        const char *tx = c[1], *account = c[3];
        if (!b->cur || !streq_ptr(json_string_value(json_object_get(b->cur, "event_id")), tx)) {
                b->cur = json_pack("{s:s, s:s+, s:o, s:s, s:s, s:s, s:o, s:[]}", "event_id", tx, "type",
                        "ledger.", c[6], "at", mgr_time_json(strtoll(c[2], NULL, 10)), "kind", c[6], "ref",
                        c[7], "currency", c[5], "tenant", json_null(), "entries");
                json_array_append_new(b->events, b->cur);
        }
        json_array_append_new(json_object_get(b->cur, "entries"),
                json_pack("{s:s, s:f, s:s}", "account", account, "amount",
                        sbx_ledger_amount(strtoll(c[4], NULL, 10)), "note", c[8]));
        const char *colon = strchr(account, ':');
        if (colon && (strncmp(account, "tenant:", 7) == 0 || strncmp(account, "hold:", 5) == 0))
                json_object_set_new(b->cur, "tenant", json_string(colon + 1));
        json_object_set_new(b->cur, "last_seq", json_integer(strtoll(c[0], NULL, 10)));
        return 0;
}

static void place_path(sbx_mgr *m, const char *name, char *buf, size_t n) {
        snprintf(buf, n, "%.4000s/billing-%s.seq", m->state_dir, name);
}

static int64_t place_read(sbx_mgr *m, const char *name) {
        char p[4200];
        place_path(m, name, p, sizeof p);
        FILE *f = fopen(p, "re");
        long long v = 0;
        if (f) {
                if (fscanf(f, "%lld", &v) != 1)
                        v = 0;
                fclose(f);
        }
        return v;
}

static void place_write(sbx_mgr *m, const char *name, int64_t seq) {
        char p[4200], tmp[4300];
        place_path(m, name, p, sizeof p);
        snprintf(tmp, sizeof tmp, "%s.tmp", p);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        char line[32];
        int k = snprintf(line, sizeof line, "%" PRId64 "\n", seq);
        bool ok = write(fd, line, (size_t) k) == k && fsync(fd) == 0;
        close(fd);
        if (!ok || rename(tmp, p) < 0)
                (void) unlink(tmp);
}

/* The events to the file: 0, or -1 (logged; tried again). */
static int to_file(sbx_mgr *m, json_t *events) {
        int fd = open(m->o.billing_export, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0) {
                sbx_log(SBX_LOG_ERROR, "billing_export_failed", "file", m->o.billing_export, "error",
                        strerror(errno), NULL);
                return -1;
        }
        json_t *e;
        size_t i;
        bool ok = true;
        json_array_foreach(events, i, e) {
                json_t *c = json_copy(e);
                json_object_del(c, "last_seq");
                char *line = json_dumps(c, JSON_COMPACT | JSON_REAL_PRECISION(15));
                json_decref(c);
                size_t n = line ? strlen(line) : 0;
                ok = ok && line && write(fd, line, n) == (ssize_t) n && write(fd, "\n", 1) == 1;
                free(line);
        }
        ok = ok && fsync(fd) == 0;
        close(fd);
        if (!ok)
                sbx_log(SBX_LOG_ERROR, "billing_export_failed", "file", m->o.billing_export, "error",
                        strerror(errno), NULL);
        return ok ? 0 : -1;
}

static size_t discard(char *p, size_t size, size_t n, void *ud) {
        (void) p;
        (void) ud;
        return size * n;
}

/* One event to the webhook: 0 taken (2xx), -1 not. */
static int to_webhook(sbx_mgr *m, CURL *c, json_t *e) {
        json_t *copy = json_copy(e);
        json_object_del(copy, "last_seq");
        char *body = json_dumps(copy, JSON_COMPACT | JSON_REAL_PRECISION(15));
        json_decref(copy);
        char idem[120], evh[120];
        const char *id = json_string_value(json_object_get(e, "event_id")) ?: "";
        snprintf(idem, sizeof idem, "Idempotency-Key: %s", id);
        snprintf(evh, sizeof evh, "Sandboxer-Event-Id: %s", id);
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        h = curl_slist_append(h, idem);
        h = curl_slist_append(h, evh);
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, m->o.billing_webhook);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "{}");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(h);
        free(body);
        if (rc == CURLE_OK && code >= 200 && code < 300)
                return 0;
        char sc[16];
        snprintf(sc, sizeof sc, "%ld", code);
        sbx_log(SBX_LOG_WARNING, "billing_webhook_retry", "event", id, "status", sc, "error",
                rc == CURLE_OK ? "not 2xx" : curl_easy_strerror(rc), NULL);
        return -1;
}

/* Deliver what sink s has not had yet, up to a batch: true when it went on (and more may wait). */
static bool deliver(sbx_mgr *m, sink *s, CURL *c) {
        if (mgr_now_ms() < s->retry_ms)
                return false;
        batch b = {.events = json_array()};
        int r = sbx_ledger_rows(m->store, s->seq, 500, NULL, row_cb, &b);
        if (r <= 0 || !json_array_size(b.events)) {
                json_decref(b.events);
                return false;
        }
        /* a page that ends mid-transaction: its last transaction waits for the next page */
        if (b.rows == 500 && json_array_size(b.events) > 1)
                json_array_remove(b.events, json_array_size(b.events) - 1);
        bool file = streq(s->name, "file");
        int64_t last = s->seq;
        int bad = 0;
        if (file) {
                bad = to_file(m, b.events);
                if (!bad)
                        last = json_integer_value(json_object_get(
                                json_array_get(b.events, json_array_size(b.events) - 1), "last_seq"));
        } else {
                json_t *e;
                size_t i;
                json_array_foreach(b.events, i, e) {
                        if (mgr_stopping(m) || (bad = to_webhook(m, c, e)) != 0)
                                break;
                        last = json_integer_value(json_object_get(e, "last_seq"));
                }
        }
        json_decref(b.events);
        if (last > s->seq) {
                s->seq = last;
                place_write(m, s->name, last);
        }
        if (bad) {
                s->backoff_ms =
                        s->backoff_ms ? (s->backoff_ms * 2 > 60000 ? 60000 : s->backoff_ms * 2) : 1000;
                s->retry_ms = mgr_now_ms() + s->backoff_ms;
                return false;
        }
        s->backoff_ms = 0;
        return true;
}

static void *billing_main(void *arg) {
        sbx_mgr *m = arg;
        sink s[2];
        size_t n = 0;
        if (m->o.billing_export)
                s[n++] = (sink){.name = "file", .seq = place_read(m, "file")};
        if (m->o.billing_webhook)
                s[n++] = (sink){.name = "webhook", .seq = place_read(m, "webhook")};
        CURL *c = m->o.billing_webhook ? curl_easy_init() : NULL;
        while (!mgr_stopping(m)) {
                bool more = false;
                for (size_t i = 0; i < n; i++)
                        more = deliver(m, &s[i], c) || more;
                if (!more)
                        (void) mgr_deals_wait(m, 300); /* woken by a stop; else a look every 0.3 s */
        }
        if (c)
                curl_easy_cleanup(c);
        mgr_worker_done(m);
        return NULL;
}

void mgr_billing_start(sbx_mgr *m) {
        if ((m->o.billing_export || m->o.billing_webhook) && mgr_worker_start(m, billing_main, m) < 0)
                sbx_log(SBX_LOG_ERROR, "billing_export_not_started", NULL);
}
