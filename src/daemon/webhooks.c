/* webhooks.c — lifecycle webhooks (DESIGN.md, "Create, seeds' shapes, secrets, webhooks"): a
 * create may name `webhook: {url}`, which then receives each of the sandbox's state transitions,
 * POSTed as {event_id, sandbox_id, state, reason, at} with `Sandboxer-Signature: sha256=HEX`
 * (HMAC-SHA-256 of the body with the tenant's webhook key, GET /v1/webhooks/key) and
 * `Sandboxer-Event-Id` (the event's sequence number: a receiver drops what it has seen).
 *
 * The event log is the queue: each subscription is {url, tenant, cursor}, cursor the last event
 * delivered; a worker delivers the sandbox's `sandbox.state` events after it, in order, one at a
 * time, moving the cursor on a 2xx and waiting on anything else — 1 s, doubling to 5 minutes,
 * for at most 24 hours of failures, after which the subscription is dropped and the server's log
 * says so. Subscriptions live in STATE/webhooks.json (rewritten whole on each change), so a
 * restart of serve goes on from the cursor: an event is delivered at least once. After the
 * `destroyed` event is delivered the subscription ends.
 *
 * The server calls a URL a tenant chose: by default not one that resolves to a loopback,
 * private, link-local or otherwise internal address (checked on the address connected to, not
 * the name, so DNS cannot swap it afterwards); `serve --webhook-allow-private` lifts that (tests
 * on loopback, a trusted network). */
#include "daemon/mgr-internal.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include "basic/sha256.h"

#define RETRY_MAX_MS (300 * 1000)
#define GIVE_UP_MS (24 * 3600 * 1000LL)

typedef struct sub {
        char sandbox[32];
        char tenant[128];
        char *url;
        int64_t cursor;
        int64_t next_ms, failing_since_ms;
        unsigned attempt;
        struct sub *next;
} sub;

static pthread_mutex_t wh_lock = PTHREAD_MUTEX_INITIALIZER;
static sub *subs; /* under wh_lock */
static sub *inflight; /* the one being delivered, off the list (saved with it) */

static void path_of(sbx_mgr *m, char *buf, size_t size) {
        snprintf(buf, size, "%.4000s/webhooks.json", m->state_dir);
}

/* Under wh_lock. */
static void save_locked(sbx_mgr *m) {
        json_t *all = json_object();
        if (inflight)
                json_object_set_new(all, inflight->sandbox,
                        json_pack("{s:s, s:s, s:I}", "url", inflight->url, "tenant", inflight->tenant,
                                "cursor", (json_int_t) inflight->cursor));
        for (sub *s = subs; s; s = s->next)
                json_object_set_new(all, s->sandbox,
                        json_pack("{s:s, s:s, s:I}", "url", s->url, "tenant", s->tenant, "cursor",
                                (json_int_t) s->cursor));
        char path[PATH_MAX];
        path_of(m, path, sizeof path);
        if (sbx_json_file_save(path, all, JSON_COMPACT) < 0)
                sbx_log(SBX_LOG_WARNING, "webhooks_unsaved", "path", path, NULL);
        json_decref(all);
}

static sub *sub_new(const char *sandbox, const char *tenant, const char *url, int64_t cursor) {
        sub *s = calloc(1, sizeof *s);
        if (!s || !(s->url = strdup(url))) {
                free(s);
                return NULL;
        }
        snprintf(s->sandbox, sizeof s->sandbox, "%s", sandbox);
        snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
        s->cursor = cursor;
        return s;
}

static void sub_free(sub *s) {
        if (s) {
                free(s->url);
                free(s);
        }
}

bool mgr_webhook_url_ok(const char *url) {
        size_t n = url ? strlen(url) : 0;
        if (n < 8 || n > 2048 || !(strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0))
                return false;
        for (const char *p = url; *p; p++)
                if ((unsigned char) *p <= 0x20 || *p == 0x7f)
                        return false;
        return true;
}

void mgr_webhook_add(sbx_mgr *m, const char *sandbox, const char *tenant, const char *url) {
        sub *s = sub_new(sandbox, tenant, url, 0);
        if (!s)
                return;
        pthread_mutex_lock(&wh_lock);
        s->next = subs;
        subs = s;
        save_locked(m);
        pthread_mutex_unlock(&wh_lock);
        pthread_mutex_lock(&m->lock);
        pthread_cond_broadcast(&m->ev_cond);
        pthread_mutex_unlock(&m->lock);
}

void mgr_webhooks_load(sbx_mgr *m) {
        char path[PATH_MAX];
        path_of(m, path, sizeof path);
        json_t *all = json_load_file(path, 0, NULL), *v;
        const char *k;
        pthread_mutex_lock(&wh_lock);
        json_object_foreach(all, k, v) {
                const char *url = json_string_value(json_object_get(v, "url")),
                           *tenant = json_string_value(json_object_get(v, "tenant"));
                sub *s = mgr_valid_sandbox_id(k) && mgr_webhook_url_ok(url) && tenant
                                 ? sub_new(k, tenant, url, json_integer_value(json_object_get(v, "cursor")))
                                 : NULL;
                if (s) {
                        s->next = subs;
                        subs = s;
                }
        }
        pthread_mutex_unlock(&wh_lock);
        json_decref(all);
}

bool mgr_webhook_key(sbx_mgr *m, const char *tenant, char ret[static 37]) {
        char text[200], mac[33] = "";
        snprintf(text, sizeof text, "webhook:%.128s", tenant);
        if (!mgr_mac(m, text, mac)) { /* no server key (the state dir is not writable): no key */
                ret[0] = 0;
                return false;
        }
        snprintf(ret, 37, "whk_%s", mac);
        return true;
}

unsigned sbx_ops_webhook_key(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        char key[37];
        if (!mgr_webhook_key(m, who->tenant, key))
                return mgr_reply_err(rp, 503, "unavailable", NULL,
                        "the server has no key to sign with (it cannot write port-key in its state dir)");
        rp->code = 200;
        rp->json = json_pack("{s:s, s:s}", "tenant", who->tenant, "key", key);
        return 200;
}

/* ---- delivery ---------------------------------------------------------------------------- */

static bool internal_v4(uint32_t a) {
        return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 ||
               (a >> 16) == 0xa9fe /* 169.254/16 */ || (a >> 20) == 0xac1 /* 172.16/12 */ ||
               (a >> 16) == 0xc0a8 /* 192.168/16 */ || (a >> 22) == (0x64400000u >> 22) /* 100.64/10 */ ||
               (a >> 8) == 0xc00000 /* 192.0.0/24 */ || (a >> 17) == (0xc6120000u >> 17) /* 198.18/15 */ ||
               (a >> 28) >= 0xe /* multicast, reserved */;
}

/* Whether a peer is not a global unicast one: IPv4's private, loopback, link-local, shared,
 * benchmarking, multicast and reserved ranges; IPv6 outside 2000::/3, and the IPv6 forms that
 * carry an IPv4 address (mapped, compatible, NAT64, 6to4: judged by that address) or tunnel to
 * one (Teredo). */
static bool internal_addr(const struct sockaddr *sa) {
        if (sa->sa_family == AF_INET)
                return internal_v4(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr));
        if (sa->sa_family != AF_INET6)
                return true;
        const uint8_t *b = ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr;
        static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, zero[12] = {0};
        uint32_t v4;
        if (!memcmp(b, mapped, 12) || !memcmp(b, zero, 12) || !memcmp(b, nat64, 12)) {
                memcpy(&v4, b + 12, 4);
                return internal_v4(ntohl(v4));
        }
        if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 2002:V4::/48 */
                memcpy(&v4, b + 2, 4);
                return internal_v4(ntohl(v4));
        }
        if ((b[0] & 0xe0) !=
                0x20) /* not 2000::/3: loopback, link-local, ULA, multicast, 64:ff9b:1::/48... */
                return true;
        return (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) /* Teredo 2001::/32 */ ||
               (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) /* documentation */;
}

static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr) {
        const sbx_mgr *m = ud;
        if (!m->o.webhook_allow_private && internal_addr(&addr->addr)) {
                errno = EACCES;
                return CURL_SOCKET_BAD;
        }
        return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

static size_t drop_body(char *p, size_t size, size_t n, void *ud) {
        return size * n;
}

static bool stopping(sbx_mgr *m) {
        pthread_mutex_lock(&m->lock);
        bool s = m->stopping;
        pthread_mutex_unlock(&m->lock);
        return s;
}

static int progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
        return stopping(ud)
                       ? 1
                       : 0; /* the server stops: this delivery is abandoned (retried at the next start) */
}

/* POST body to url: the HTTP status, or 0 with why. */
static long post(sbx_mgr *m, const char *url, const char *tenant, int64_t seq, const char *body, char *why,
        size_t whysz) {
        CURL *c = curl_easy_init();
        if (!c) {
                snprintf(why, whysz, "no curl handle");
                return 0;
        }
        char key[37], sig[200], eid[64], hex[65];
        if (!mgr_webhook_key(m, tenant, key)) {
                snprintf(why, whysz, "the server has no key to sign with (port-key in its state dir)");
                curl_easy_cleanup(c);
                return 0;
        }
        uint8_t d[SHA256_DIGEST_SIZE];
        hmac_sha256(key, strlen(key), body, strlen(body), d);
        for (size_t i = 0; i < sizeof d; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        snprintf(sig, sizeof sig, "Sandboxer-Signature: sha256=%s", hex);
        snprintf(eid, sizeof eid, "Sandboxer-Event-Id: %" PRId64, seq);
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        h = curl_slist_append(h, sig);
        h = curl_slist_append(h, eid);
        h = curl_slist_append(h, "User-Agent: sandboxer-webhook/1");
        char err[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(
                c, CURLOPT_PROXY, ""); /* never the environment's proxy: the address check is on the peer */
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, m);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop_body);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, m);
        CURLcode r = curl_easy_perform(c);
        long status = 0;
        if (r == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        else
                snprintf(why, whysz, "%s%s", err[0] ? err : curl_easy_strerror(r),
                        r == CURLE_COULDNT_CONNECT && !m->o.webhook_allow_private
                                ? " (an internal address is refused without serve --webhook-allow-private)"
                                : "");
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        return status;
}

typedef struct ev_batch {
        int64_t seq[64];
        char *body[64];
        bool end[64];
        size_t n;
        const char *sandbox;
} ev_batch;

static int collect(void *ud, int64_t seq, const char *type, const char *data_json) {
        ev_batch *b = ud;
        if (b->n >= ELEMENTSOF(b->seq))
                return 0;
        b->seq[b->n] = seq;
        b->body[b->n] = NULL;
        b->end[b->n] = false;
        if (streq(type, "sandbox.state")) {
                json_t *d = json_loads(data_json ? data_json : "{}", 0, NULL);
                const char *state = json_string_value(json_object_get(d, "state"));
                json_t *out = json_pack("{s:I, s:s, s:s?, s:O?, s:O?}", "event_id", (json_int_t) seq,
                        "sandbox_id", b->sandbox, "state", state, "reason", json_object_get(d, "reason"),
                        "at", json_object_get(d, "at"));
                b->body[b->n] = json_dumps(out, JSON_COMPACT);
                b->end[b->n] = streq_ptr(state, "destroyed");
                json_decref(out);
                json_decref(d);
        }
        b->n++;
        return 0;
}

/* One subscription's due events (s is ours: off the list while delivered). true when it ended
 * (destroyed delivered, or given up). */
static bool deliver(sbx_mgr *m, sub *s, int64_t last) {
        ev_batch b = {.sandbox = s->sandbox};
        (void) sbx_store_events_after(m->store, s->cursor, s->tenant, s->sandbox, collect, &b);
        bool ended = false, failed = false;
        for (size_t i = 0; i < b.n; i++) {
                if (!failed && !ended && stopping(m))
                        failed = true; /* left for the next start, from the cursor */
                if (failed || ended) {
                        free(b.body[i]);
                        continue;
                }
                if (b.body[i]) {
                        char why[CURL_ERROR_SIZE + 128] = "";
                        long st = post(m, s->url, s->tenant, b.seq[i], b.body[i], why, sizeof why);
                        if (st < 200 || st > 299) {
                                int64_t now = mgr_now_ms();
                                if (!s->failing_since_ms)
                                        s->failing_since_ms = now;
                                char code[16], ev[24];
                                snprintf(code, sizeof code, "%ld", st);
                                snprintf(ev, sizeof ev, "%" PRId64, b.seq[i]);
                                sbx_log(SBX_LOG_WARNING, "webhook_failed", "sandbox", s->sandbox, "event_id",
                                        ev, "status", code, "error", why[0] ? why : NULL, NULL);
                                if (now - s->failing_since_ms > GIVE_UP_MS) {
                                        sbx_log(SBX_LOG_ERROR, "webhook_given_up", "sandbox", s->sandbox,
                                                "url", s->url, NULL);
                                        ended = true;
                                } else {
                                        int64_t wait = 1000LL << (s->attempt < 9 ? s->attempt : 9);
                                        s->next_ms = now + (wait > RETRY_MAX_MS ? RETRY_MAX_MS : wait);
                                        s->attempt++;
                                        failed = true;
                                }
                                free(b.body[i]);
                                continue;
                        }
                        s->attempt = 0;
                        s->failing_since_ms = 0;
                        ended = b.end[i];
                }
                s->cursor = b.seq[i];
                free(b.body[i]);
        }
        /* every event up to last was stored before last was (mgr_emit): none of its own is
         * left below it */
        if (!failed && !ended && b.n < ELEMENTSOF(b.seq) && last > s->cursor)
                s->cursor = last;
        return ended;
}

void *mgr_webhooks_main(void *ud) {
        sbx_mgr *m = ud;
        for (;;) {
                pthread_mutex_lock(&m->lock);
                if (!m->stopping) {
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_sec += 1;
                        (void) pthread_cond_timedwait(&m->ev_cond, &m->lock, &until);
                }
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
                /* each due subscription, taken off the list while it is delivered */
                int64_t now = mgr_now_ms();
                pthread_mutex_lock(&m->lock);
                int64_t last = m->last_seq;
                pthread_mutex_unlock(&m->lock);
                for (;;) {
                        pthread_mutex_lock(&wh_lock);
                        sub **pp = &subs, *s = NULL;
                        for (; *pp; pp = &(*pp)->next)
                                if ((*pp)->next_ms <= now && (*pp)->cursor < last) {
                                        s = *pp;
                                        *pp = s->next;
                                        inflight = s;
                                        break;
                                }
                        pthread_mutex_unlock(&wh_lock);
                        if (!s)
                                break;
                        int64_t before = s->cursor;
                        bool ended = deliver(m, s, last);
                        bool changed = ended || s->cursor != before;
                        pthread_mutex_lock(&wh_lock);
                        inflight = NULL;
                        if (ended)
                                sub_free(s);
                        else {
                                s->next = subs;
                                subs = s;
                        }
                        if (changed)
                                save_locked(m);
                        pthread_mutex_unlock(&wh_lock);
                        pthread_mutex_lock(&m->lock);
                        bool stopping = m->stopping;
                        pthread_mutex_unlock(&m->lock);
                        if (stopping)
                                break;
                }
        }
        pthread_mutex_lock(&wh_lock);
        while (subs) {
                sub *s = subs;
                subs = s->next;
                sub_free(s);
        }
        pthread_mutex_unlock(&wh_lock);
        return NULL;
}
