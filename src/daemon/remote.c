/* remote.c — ext.sandboxer: sandboxes held by another `sandboxer serve` (DESIGN.md, "Extensions,
 * hosts and routes"). The front keeps a record of its own for each (b->ext names the extension,
 * no supervisor) and the back end holds the sandbox under the same id, which the front asks for
 * with the header `Sandboxer-Front: node=NODE_ID; sandbox=ID` — so every request under
 * /v1/sandboxes/ID is passed on as it came (method, path, query, body; the answer streamed back
 * as it arrives), and the back end's record names the front that made it.
 *
 * The registry entry says where and how:
 *
 *     id: ext.b
 *     kind: sandboxer
 *     url: https://b.example:8443     # http:// only to a loopback address
 *     auth: {secret: b-token}          # the bearer token: the tenant's secret, else the server's
 *     tls: {ca_file: /etc/sandboxer/b-ca.pem, pinned_key: "sha256//BASE64"}
 *
 * The front's view is authoritative. The hosts thread probes each such extension (an HTTP answer
 * at its URL, the certificate verified); after two misses in a row its sandboxes are `failed`
 * (host_lost) and new creates go elsewhere, and what it could not be told to tear down is kept in
 * STATE/remote-pending.json and told when it answers again (no split brain). The id a front asks
 * for is derived from the create's Idempotency-Key when there is one (HMAC with the node's key),
 * so a create retried after the front died mid-provision lands on the same sandbox; a front that
 * restarts asks the back end about each sandbox it was provisioning and adopts or fails it. */
#include "daemon/remote.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/strv.h"

#define CALL_TIMEOUT_MS 30000L

void remote_resp_done(remote_resp *r) {
        free(r->body);
        *r = (remote_resp){0};
}

/* ---- endpoints ---------------------------------------------------------------------------- */

/* ext's endpoint for tenant (tenant NULL: the server's own secret only). false with why. */
bool remote_ep_of(sbx_mgr *m, const char *tenant, const char *ext, remote_ep *ep, char *why, size_t n) {
        json_t *x = mgr_registry_entry(ext);
        *ep = (remote_ep){0};
        if (!x) {
                snprintf(why, n, "%s is not in the registry (any more)", ext);
                return false;
        }
        const char *url = json_string_value(json_object_get(x, "url")),
                   *secret = json_string_value(json_object_get(json_object_get(x, "auth"), "secret"));
        json_t *tls = json_object_get(x, "tls"), *caps = json_object_get(x, "capabilities");
        snprintf(ep->ext, sizeof ep->ext, "%s", ext);
        snprintf(ep->kind, sizeof ep->kind, "%s", json_string_value(json_object_get(x, "kind")) ?: "");
        snprintf(ep->domain, sizeof ep->domain, "%s", json_string_value(json_object_get(x, "domain")) ?: "");
        snprintf(ep->connect_to, sizeof ep->connect_to, "%s",
                json_string_value(json_object_get(x, "connect_to")) ?: "");
        snprintf(ep->template_id, sizeof ep->template_id, "%s",
                json_string_value(json_object_get(x, "template")) ?: "");
        snprintf(ep->url, sizeof ep->url, "%s", url ? url : "");
        size_t ul = strlen(ep->url);
        while (ul > 0 && ep->url[ul - 1] == '/')
                ep->url[--ul] = 0;
        snprintf(ep->ca_file, sizeof ep->ca_file, "%s",
                json_string_value(json_object_get(tls, "ca_file")) ?: "");
        snprintf(ep->pin, sizeof ep->pin, "%s", json_string_value(json_object_get(tls, "pinned_key")) ?: "");
        ep->cap_pause = json_is_true(json_object_get(caps, "pause"));
        ep->cap_snapshot = json_is_true(json_object_get(caps, "snapshot"));
        bool ok = true;
        if (secret) {
                char where[256];
                int fd = mgr_secret_open(m, tenant ? tenant : "", secret, true, where, sizeof where);
                ssize_t k = fd >= 0 ? read(fd, ep->token, sizeof ep->token - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (k <= 0) {
                        snprintf(why, n,
                                "%s needs the secret '%s' (its token), which is neither the tenant's (PUT "
                                "/v1/secrets/%s) nor the server's",
                                ext, secret, secret);
                        ok = false;
                } else {
                        ep->token[k] = 0;
                        while (k > 0 && (ep->token[k - 1] == '\n' || ep->token[k - 1] == '\r'))
                                ep->token[--k] = 0;
                }
        }
        json_decref(x);
        return ok;
}

/* ---- calls -------------------------------------------------------------------------------- */

static size_t collect_body(char *p, size_t size, size_t nm, void *ud) {
        remote_resp *r = ud;
        size_t n = size * nm;
        if (r->len + n > FILE_MAX + 65536)
                return 0;
        char *nb = realloc(r->body, r->len + n + 1);
        if (!nb)
                return 0;
        memcpy(nb + r->len, p, n);
        r->body = nb;
        r->len += n;
        r->body[r->len] = 0;
        return n;
}

static bool server_stopping(void *ud) {
        sbx_mgr *m = ud;
        return m && mgr_stopping(m);
}

static int progress_cb(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
        (void) dt, (void) dn, (void) ut, (void) un;
        return server_stopping(ud) ? 1 : 0;
}

/* One connection cache and TLS session cache for every call to another node: a create's call and
 * the exec after it reuse one connection (a new TLS handshake per request cost a fronted create →
 * first exec about a fifth more than the same straight to the back end). */
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
static pthread_once_t share_once = PTHREAD_ONCE_INIT;
static CURLSH *share;

static void share_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *ud) {
        (void) c, (void) a, (void) ud;
        pthread_mutex_lock(&share_locks[d]);
}

static void share_unlock(CURL *c, curl_lock_data d, void *ud) {
        (void) c, (void) ud;
        pthread_mutex_unlock(&share_locks[d]);
}

static void share_init(void) {
        for (size_t i = 0; i < ELEMENTSOF(share_locks); i++)
                pthread_mutex_init(&share_locks[i], NULL);
        share = curl_share_init();
        if (!share)
                return;
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
}

/* One easy handle kept per thread and reset for its next call (its connections, TLS sessions and
 * DNS entries are the share's): made once, not at every call. Taken while in use, so a call made
 * meanwhile gets one of its own. */
static pthread_key_t easy_key;
static pthread_once_t easy_once = PTHREAD_ONCE_INIT;

static void easy_free(void *c) {
        curl_easy_cleanup(c);
}

static void easy_key_init(void) {
        (void) pthread_key_create(&easy_key, easy_free);
}

static CURL *easy_take(void) {
        pthread_once(&easy_once, easy_key_init);
        CURL *c = pthread_getspecific(easy_key);
        if (!c)
                return curl_easy_init();
        (void) pthread_setspecific(easy_key, NULL);
        curl_easy_reset(c);
        return c;
}

static void easy_give_back(CURL *c) {
        if (!c)
                return;
        curl_easy_reset(c); /* nothing left pointing at the call's buffers and header lists */
        if (pthread_getspecific(easy_key) || pthread_setspecific(easy_key, c) != 0)
                curl_easy_cleanup(c);
}

/* A handle for METHOD url+target with the front's headers and the caller's (NULL-terminated
 * "Name: value" lines). */
static CURL *handle(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target,
        const char *body, size_t len, const char *const *extra, bool authed, const char *front_sandbox,
        struct curl_slist **hl, struct curl_slist **ct, char *err) {
        CURL *c = easy_take();
        if (!c)
                return NULL;
        char url[2200], auth[1100], front[200], cto[320];
        bool whole = strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0;
        snprintf(url, sizeof url, "%s%s", whole ? "" : ep->url, target);
        struct curl_slist *h = curl_slist_append(NULL, "Expect:");
        h = curl_slist_append(h, "User-Agent: sandboxer-front/1");
        if (authed && ep->token[0]) { /* a sandboxer node's bearer token, E2B's API key */
                snprintf(auth, sizeof auth,
                        streq(ep->kind, "e2b") ? "X-API-KEY: %s" : "Authorization: Bearer %s", ep->token);
                h = curl_slist_append(h, auth);
        }
        *ct = NULL;
        if (ep->connect_to[0]) {
                snprintf(cto, sizeof cto, "::%s", ep->connect_to);
                *ct = curl_slist_append(NULL, cto);
                curl_easy_setopt(c, CURLOPT_CONNECT_TO, *ct);
        }
        const char *node = streq(ep->kind, "sandboxer") ? mgr_node_id(m) : NULL;
        if (node) {
                snprintf(front, sizeof front, "Sandboxer-Front: node=%s%s%s", node,
                        front_sandbox ? "; sandbox=" : "", front_sandbox ? front_sandbox : "");
                h = curl_slist_append(h, front);
        }
        for (const char *const *p = extra; p && *p; p++)
                h = curl_slist_append(h, *p);
        *hl = h;
        curl_easy_setopt(c, CURLOPT_URL, url);
        pthread_once(&share_once, share_init);
        if (share)
                curl_easy_setopt(c, CURLOPT_SHARE, share);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (streq(method, "GET") || streq(method, "DELETE"))
                curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        if (streq(method, "DELETE"))
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
        if (body && (streq(method, "POST") || streq(method, "PUT") || streq(method, "PATCH"))) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        } else if (streq(method, "POST") || streq(method, "PUT")) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) 0);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never the environment's */
        curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
        curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, m);
        if (ep->ca_file[0])
                curl_easy_setopt(c, CURLOPT_CAINFO, ep->ca_file);
        if (ep->pin[0])
                curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, ep->pin);
        return c;
}

/* c performed; meanwhile (if any) run once the request is on its way — the transfer driven
 * first until it has nothing more to send without an answer, so the far end works while this
 * thread does. */
static CURLcode perform(CURL *c, spawn_hook meanwhile, void *ud) {
        if (!meanwhile)
                return curl_easy_perform(c);
        CURLM *mh = curl_multi_init();
        if (!mh || curl_multi_add_handle(mh, c) != CURLM_OK) {
                if (mh)
                        curl_multi_cleanup(mh);
                meanwhile(ud);
                return curl_easy_perform(c);
        }
        CURLcode r = CURLE_OK;
        bool told = false;
        for (;;) {
                int running = 0;
                CURLMcode mc = curl_multi_perform(mh, &running);
                if (mc != CURLM_OK) {
                        r = CURLE_FAILED_INIT;
                        break;
                }
                if (!told) {
                        told = true;
                        meanwhile(ud);
                        continue; /* what came meanwhile */
                }
                if (!running) {
                        CURLMsg *msg;
                        int left;
                        while ((msg = curl_multi_info_read(mh, &left)))
                                if (msg->msg == CURLMSG_DONE)
                                        r = msg->data.result;
                        break;
                }
                if (curl_multi_poll(mh, NULL, 0, 1000, NULL) != CURLM_OK) {
                        r = CURLE_FAILED_INIT;
                        break;
                }
        }
        if (!told)
                meanwhile(ud);
        curl_multi_remove_handle(mh, c);
        curl_multi_cleanup(mh);
        return r;
}

static void fail_why(CURLcode r, const char *err, const remote_ep *ep, char *why, size_t n) {
        snprintf(why, n, "%s (%.300s) does not answer: %.250s", ep->ext, ep->url,
                err[0] ? err : curl_easy_strerror(r));
}

static long call_x(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target, const char *body,
        size_t len, const char *const *extra, bool auth, const char *front_sandbox,
        curl_mime *(*mime)(CURL *c, void *ud), void *mime_ud, long timeout_ms, spawn_hook meanwhile,
        void *mw_ud, remote_resp *r, char *why, size_t whysz) {
        *r = (remote_resp){0};
        char err[CURL_ERROR_SIZE] = "";
        struct curl_slist *h = NULL, *ct = NULL;
        CURL *c = handle(m, ep, method, target, body, len, extra, auth, front_sandbox, &h, &ct, err);
        if (!c) {
                if (meanwhile)
                        meanwhile(mw_ud);
                snprintf(why, whysz, "no curl handle");
                return 0;
        }
        curl_mime *mp = mime ? mime(c, mime_ud) : NULL;
        if (mp)
                curl_easy_setopt(c, CURLOPT_MIMEPOST, mp);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms ? timeout_ms : CALL_TIMEOUT_MS);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        CURLcode cr = perform(c, meanwhile, mw_ud);
        if (cr == CURLE_OK) {
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
                char *cty = NULL;
                curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &cty);
                snprintf(r->ctype, sizeof r->ctype, "%s", cty ? cty : "");
        } else
                fail_why(cr, err, ep, why, whysz);
        curl_mime_free(mp);
        curl_slist_free_all(h);
        curl_slist_free_all(ct);
        easy_give_back(c);
        return r->code;
}

long remote_call(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target, const char *body,
        size_t len, const char *const *extra, bool auth, curl_mime *(*mime)(CURL *c, void *ud),
        void *mime_ud, long timeout_ms, remote_resp *r, char *why, size_t whysz) {
        return call_x(m, ep, method, target, body, len, extra, auth, NULL, mime, mime_ud, timeout_ms, NULL,
                NULL, r, why, whysz);
}

/* A sandboxer node's call, with its token. */
static long call(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target, const char *body,
        size_t len, const char *const *extra, const char *front_sandbox, long timeout_ms, remote_resp *r,
        char *why, size_t whysz) {
        return call_x(m, ep, method, target, body, len, extra, true, front_sandbox, NULL, NULL, timeout_ms,
                NULL, NULL, r, why, whysz);
}

/* The back end's error message from an answer, or its status. */
void remote_answer_why(const remote_ep *ep, const remote_resp *r, char *why, size_t n) {
        json_error_t je;
        json_t *j = r->body ? json_loads(r->body, 0, &je) : NULL;
        const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"))
                                  ?: json_string_value(json_object_get(j, "message")); /* E2B's, Daytona's */
        snprintf(why, n, "%s answered %ld: %.400s", ep->ext, r->code, msg ? msg : "(no message)");
        json_decref(j);
}

/* ---- pending teardowns ---------------------------------------------------------------------- */

static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;

static void pend_path(sbx_mgr *m, char *buf, size_t n) {
        snprintf(buf, n, "%.4000s/remote-pending.json", m->state_dir);
}

static json_t *pend_load_locked(sbx_mgr *m) {
        char p[4100];
        pend_path(m, p, sizeof p);
        json_error_t je;
        json_t *a = json_load_file(p, 0, &je);
        if (!json_is_array(a)) {
                json_decref(a);
                a = json_array();
        }
        return a;
}

/* id: the front's; rid: the extension's own id for it (the same for a sandboxer node) */
void remote_pend_add(sbx_mgr *m, const char *ext, const char *id, const char *rid, const char *reach,
        const char *tenant) {
        char p[4100];
        pend_path(m, p, sizeof p);
        pthread_mutex_lock(&pend_lock);
        json_t *a = pend_load_locked(m), *x;
        size_t i;
        bool have = false;
        json_array_foreach(a, i, x) have =
                have || (streq_ptr(json_string_value(json_object_get(x, "id")), id) &&
                                streq_ptr(json_string_value(json_object_get(x, "extension")), ext));
        if (!have && json_array_size(a) < 10000)
                json_array_append_new(
                        a, json_pack("{s:s, s:s, s:s, s:s, s:s}", "extension", ext, "id", id, "remote_id",
                                   rid[0] ? rid : id, "reach", reach, "tenant", tenant));
        (void) sbx_json_file_save(p, a, JSON_COMPACT);
        json_decref(a);
        pthread_mutex_unlock(&pend_lock);
}

/* DELETE the sandbox at the back end: true when it is gone there (or never was). */
static bool teardown_at(sbx_mgr *m, const char *ext, const char *id, const char *reach, const char *tenant,
        char *why, size_t n) {
        remote_ep ep;
        if (!remote_ep_of(m, tenant, ext, &ep, why, n))
                return false;
        if (streq(ep.kind, "compose-ssh")) { /* its project on the host it was made on */
                box *tb = calloc(1, sizeof *tb);
                if (!tb)
                        return false;
                snprintf(tb->remote_id, sizeof tb->remote_id, "%s", id);
                snprintf(tb->reach, sizeof tb->reach, "%s", reach ? reach : "");
                bool ok = compose_teardown(m, tb, &ep, why, n);
                free(tb);
                return ok;
        }
        if (streq(ep.kind, "e2b"))
                return e2b_teardown(m, &ep, id, why, n);
        if (streq(ep.kind, "daytona"))
                return daytona_teardown(m, &ep, id, why, n);
        char target[96];
        snprintf(target, sizeof target, "/v1/sandboxes/%s", id);
        remote_resp r;
        long code = call(m, &ep, "DELETE", target, NULL, 0, NULL, NULL, 15000, &r, why, n);
        bool ok = code == 200 || code == 404 || code == 410;
        if (code && !ok)
                remote_answer_why(&ep, &r, why, n);
        remote_resp_done(&r);
        return ok;
}

/* What ext could not be told before, told now it answers. */
void remote_pend_flush(sbx_mgr *m, const char *ext) {
        char p[4100];
        pend_path(m, p, sizeof p);
        pthread_mutex_lock(&pend_lock);
        json_t *a = pend_load_locked(m);
        pthread_mutex_unlock(&pend_lock);
        json_t *x, *done = json_array();
        size_t i;
        json_array_foreach(a, i, x) {
                const char *e = json_string_value(json_object_get(x, "extension")),
                           *id = json_string_value(json_object_get(x, "id")),
                           *rid = json_string_value(json_object_get(x, "remote_id")),
                           *t = json_string_value(json_object_get(x, "tenant"));
                char why[600] = "";
                if (!streq_ptr(e, ext) || !id || !t)
                        continue;
                if (teardown_at(m, ext, rid ? rid : id, json_string_value(json_object_get(x, "reach")), t,
                            why, sizeof why)) {
                        json_array_append_new(done, json_string(id));
                        sbx_log(SBX_LOG_INFO, "remote_reconciled", "extension", ext, "sandbox", id, "action",
                                "destroyed at the back end (the front had marked it failed)", NULL);
                }
        }
        if (json_array_size(done)) {
                pthread_mutex_lock(&pend_lock);
                json_t *now = pend_load_locked(m), *keep = json_array();
                json_array_foreach(now, i,
                        x) if (!(streq_ptr(json_string_value(json_object_get(x, "extension")), ext) &&
                                       mgr_json_has_str(done, json_string_value(json_object_get(x, "id")))))
                        json_array_append(keep, x);
                (void) sbx_json_file_save(p, keep, JSON_COMPACT);
                json_decref(keep);
                json_decref(now);
                pthread_mutex_unlock(&pend_lock);
        }
        json_decref(done);
        json_decref(a);
}

void mgr_remote_teardown(sbx_mgr *m, box *b) {
        char why[600] = "";
        const char *rid = b->remote_id[0] ? b->remote_id : b->id;
        remote_ep ep;
        bool ok;
        if (remote_ep_of(m, b->tenant, b->ext, &ep, why, sizeof why) && streq(ep.kind, "compose-ssh"))
                ok = compose_teardown(m, b, &ep, why, sizeof why); /* on the route's host */
        else
                ok = teardown_at(m, b->ext, rid, b->reach, b->tenant, why, sizeof why);
        if (!ok) {
                sbx_log(SBX_LOG_WARNING, "remote_teardown_deferred", "extension", b->ext, "sandbox", b->id,
                        "error", why, NULL);
                remote_pend_add(m, b->ext, b->id, rid, b->reach, b->tenant);
        }
}

/* ---- the record ----------------------------------------------------------------------------- */

/* What the front keeps of the back end's record: its state, clocks and settings. */
/* The back end's fields of rec into b (memory only). */
static void absorb_fields(sbx_mgr *m, box *b, json_t *rec) {
        pthread_mutex_lock(&m->lock);
        snprintf(b->backend, sizeof b->backend, "%s",
                json_string_value(json_object_get(rec, "backend")) ?: "");
        snprintf(b->user, sizeof b->user, "%s", json_string_value(json_object_get(rec, "user")) ?: "");
        snprintf(b->home, sizeof b->home, "%s", json_string_value(json_object_get(rec, "home")) ?: "");
        snprintf(b->scratch, sizeof b->scratch, "%s",
                json_string_value(json_object_get(rec, "scratch")) ?: "");
        if (json_is_object(json_object_get(rec, "limits"))) {
                json_decref(b->limits);
                b->limits = json_deep_copy(json_object_get(rec, "limits"));
        }
        if (json_is_object(json_object_get(rec, "network"))) {
                json_decref(b->network);
                b->network = json_deep_copy(json_object_get(rec, "network"));
        }
        if (json_is_object(json_object_get(rec, "metadata"))) {
                json_decref(b->metadata);
                b->metadata = json_deep_copy(json_object_get(rec, "metadata"));
        }
        if (json_is_integer(json_object_get(rec, "execs")))
                b->execs = json_integer_value(json_object_get(rec, "execs"));
        if (json_is_number(json_object_get(rec, "budget_s")))
                b->budget_s = json_number_value(json_object_get(rec, "budget_s"));
        if (json_is_number(json_object_get(rec, "budget_used_s")))
                b->budget_used_s = json_number_value(json_object_get(rec, "budget_used_s"));
        pthread_mutex_unlock(&m->lock);
}

void remote_absorb(sbx_mgr *m, box *b, json_t *rec) {
        const char *st = json_string_value(json_object_get(rec, "state"));
        sbx_state s = st ? sbx_state_from_string(st) : _SBX_STATE_INVALID;
        absorb_fields(m, b, rec);
        /* ready/active/paused there: the same here (the front's clocks stay its own) */
        if (s == SBX_STATE_PAUSED && b->state != SBX_STATE_PAUSED) {
                pthread_mutex_lock(&m->lock);
                b->paused_ms = mgr_now_ms();
                pthread_mutex_unlock(&m->lock);
                mgr_set_state(m, b, SBX_STATE_PAUSED,
                        json_string_value(json_object_get(rec, "reason")) ?: "pause");
        } else if ((s == SBX_STATE_READY || s == SBX_STATE_ACTIVE) && b->state == SBX_STATE_PAUSED) {
                pthread_mutex_lock(&m->lock);
                b->paused_ms = 0;
                pthread_mutex_unlock(&m->lock);
                mgr_set_state(m, b, SBX_STATE_READY, "resume");
        } else
                (void) mgr_box_save(m, b);
}

/* The back end's record as the front shows it: the front's own keys over it. */
json_t *remote_merged(sbx_mgr *m, box *b, json_t *rec) {
        pthread_mutex_lock(&m->lock);
        json_t *own = mgr_box_record(b);
        pthread_mutex_unlock(&m->lock);
        static const char *const keys[] = {"id", "state", "reason", "tenant", "actor", "profile",
                "extension", "host", "reachability", "route", "webhook", "front", "created_at", "expires_at",
                "ttl_max_at", "scope", "workspace_request", "inputs", "setup_metadata", "consumer"};
        if (!json_is_object(rec))
                return own;
        json_t *out = json_deep_copy(rec);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                json_object_set(out, keys[i], json_object_get(own, keys[i]));
        json_decref(own);
        return out;
}

/* The back end says it has no such sandbox (any more): the front's record ends too. */
void remote_gone(sbx_mgr *m, box *b, const char *reason) {
        pthread_mutex_lock(&m->lock);
        bool mine = !b->busy && !sbx_state_ending(b->state);
        if (mine)
                b->busy = true;
        pthread_mutex_unlock(&m->lock);
        if (!mine)
                return;
        mgr_set_state(m, b, SBX_STATE_EXPIRED, reason);
        pthread_mutex_lock(&m->lock);
        b->ext_gone = true; /* nothing to tear down there */
        pthread_mutex_unlock(&m->lock);
        mgr_destroy_box(m, b, reason);
}

/* ---- create ------------------------------------------------------------------------------- */

void mgr_remote_id(sbx_mgr *m, const char *tenant, const char *key, char *buf, size_t n) {
        char mac[33], text[600];
        snprintf(text, sizeof text, "front-id\n%s\n%s\n%s", mgr_node_id(m) ?: "", tenant, key ? key : "");
        if (key && mgr_mac(m, text, mac))
                snprintf(buf, n, "sbx_%.16s", mac);
        else
                mgr_random_id("sbx_", buf, n);
}

int mgr_remote_provision(sbx_mgr *m, box *b, const char *ext, json_t *body, const char *idem_key,
        spawn_hook meanwhile, void *ud, char *why, size_t whysz) {
        remote_ep ep;
        if (!remote_ep_of(m, b->tenant, ext, &ep, why, whysz)) {
                if (meanwhile)
                        meanwhile(ud);
                return -EINVAL;
        }
        if (streq(ep.kind, "e2b") || streq(ep.kind, "daytona") || streq(ep.kind, "compose-ssh")) {
                /* their sandboxes are not listed by front (no sweep finds an orphan): the record
                 * is stored before they are asked */
                if (meanwhile)
                        meanwhile(ud);
                int64_t t0 = mgr_now_ms();
                int r = streq(ep.kind, "e2b")       ? e2b_provision(m, b, &ep, body, why, whysz)
                        : streq(ep.kind, "daytona") ? daytona_provision(m, b, &ep, body, why, whysz)
                                                    : compose_provision(m, b, &ep, body, why, whysz);
                if (r == 0)
                        mgr_route_observe(ext, (double) (mgr_now_ms() - t0));
                return r;
        }
        json_t *fwd = json_deep_copy(body);
        json_object_del(fwd, "route"); /* the front's; the back end routes on its own */
        json_object_del(fwd, "webhook"); /* the front tells the transitions it sees */
        json_object_del(fwd, "ttl");
        json_object_set_new(fwd, "ttl_s", json_real(b->ttl_s));
        char *text = json_dumps(fwd, JSON_COMPACT);
        json_decref(fwd);
        char ik[300] = "";
        if (idem_key)
                snprintf(ik, sizeof ik, "Idempotency-Key: %s", idem_key);
        const char *extra[] = {
                "Content-Type: application/json", "Accept: application/json", ik[0] ? ik : NULL, NULL};
        remote_resp r;
        int64_t t0 = mgr_now_ms();
        long code = call_x(m, &ep, "POST", "/v1/sandboxes", text, text ? strlen(text) : 0, extra, true,
                b->id, NULL, NULL, PROVISION_TIMEOUT_MS + 5000, meanwhile, ud, &r, why, whysz);
        free(text);
        json_error_t je;
        json_t *rec = (code == 200 || code == 201) && r.body ? json_loads(r.body, 0, &je) : NULL;
        int ret = 0;
        if (!code)
                ret = -EHOSTUNREACH;
        else if (!rec || !streq_ptr(json_string_value(json_object_get(rec, "id")), b->id)) {
                if (code == 200 || code == 201)
                        snprintf(why, whysz, "%s answered %ld with a record that is not sandbox %s", ext,
                                code, b->id);
                else
                        remote_answer_why(&ep, &r, why, whysz);
                ret = -EPROTO;
        } else if (!sbx_state_usable(
                           sbx_state_from_string(json_string_value(json_object_get(rec, "state")) ?: ""))) {
                /* an Idempotency-Key's replay of a sandbox that has ended there since */
                snprintf(why, whysz, "%s answered with sandbox %s %s", ext, b->id,
                        json_string_value(json_object_get(rec, "state")) ?: "in no state");
                ret = -EPROTO;
        } else {
                pthread_mutex_lock(&m->lock);
                snprintf(b->ext, sizeof b->ext, "%s", ext);
                pthread_mutex_unlock(&m->lock);
                absorb_fields(m, b, rec); /* stored with the ready state that follows (create.c) */
                mgr_route_observe(ext, (double) (mgr_now_ms() - t0));
        }
        json_decref(rec);
        remote_resp_done(&r);
        /* it may have been made there though the answer was lost: told to go, now or later */
        if (ret == -EHOSTUNREACH || (ret == -EPROTO && code >= 500))
                remote_pend_add(m, ext, b->id, "", "", b->tenant);
        return ret;
}

/* ---- requests under /v1/sandboxes/ID ----------------------------------------------------------- */

typedef struct proxy {
        sbx_mgr *m;
        remote_ep ep;
        char method[16];
        char *target, *body;
        size_t len;
        char *hdr[8];
        bool auth;
        remote_xform x; /* x.piece NULL: the body as it is */
        int fd; /* our end of the reply's stream */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool known; /* the status is known (or the call ended without one) */
        bool finished; /* the call ended */
        long code;
        char ctype[128];
        char why[600];
        remote_resp err; /* a transformed call's answer that is not 200: kept whole */
        unsigned refs;
} proxy;

static void proxy_put(proxy *p) {
        pthread_mutex_lock(&p->lock);
        bool last = --p->refs == 0;
        pthread_mutex_unlock(&p->lock);
        if (!last)
                return;
        free(p->target);
        free(p->body);
        for (size_t i = 0; i < ELEMENTSOF(p->hdr); i++)
                free(p->hdr[i]);
        if (p->fd >= 0)
                close(p->fd);
        if (p->x.free)
                p->x.free(p->x.ud);
        remote_resp_done(&p->err);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
}

static void proxy_known(proxy *p, CURL *c) {
        pthread_mutex_lock(&p->lock);
        if (!p->known) {
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &p->code);
                char *ct = NULL;
                curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
                snprintf(p->ctype, sizeof p->ctype, "%s", ct ? ct : "application/octet-stream");
                p->known = true;
                pthread_cond_broadcast(&p->cond);
        }
        pthread_mutex_unlock(&p->lock);
}

static size_t proxy_header(char *b, size_t size, size_t nm, void *ud) {
        void **pc = ud;
        size_t n = size * nm;
        /* the blank line after a final (not 1xx) status's headers: the answer is known */
        if (n <= 2 && (b[0] == '\r' || b[0] == '\n')) {
                long code = 0;
                curl_easy_getinfo((CURL *) pc[1], CURLINFO_RESPONSE_CODE, &code);
                if (code >= 200)
                        proxy_known(pc[0], (CURL *) pc[1]);
        }
        return n;
}

bool remote_emit(int fd, const char *data, size_t n) {
        size_t off = 0;
        while (off < n) {
                ssize_t k = send(fd, data + off, n - off, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false; /* the client went away */
                off += (size_t) k;
        }
        return true;
}

static size_t proxy_write(char *b, size_t size, size_t nm, void *ud) {
        void **pc = ud;
        proxy *p = pc[0];
        proxy_known(p, (CURL *) pc[1]);
        size_t n = size * nm;
        if (p->x.piece && p->code != 200)
                return collect_body(b, size, nm, &p->err);
        if (p->x.piece)
                return p->x.piece(p->x.ud, p->fd, b, n) ? n : 0;
        return remote_emit(p->fd, b, n) ? n : 0; /* not sent: the call ends */
}

static void *proxy_main(void *ud) {
        proxy *p = ud;
        char err[CURL_ERROR_SIZE] = "";
        struct curl_slist *h = NULL, *ct = NULL;
        const char *extra[ELEMENTSOF(p->hdr) + 1] = {0};
        for (size_t i = 0; i < ELEMENTSOF(p->hdr); i++)
                extra[i] = p->hdr[i];
        CURL *c = handle(
                p->m, &p->ep, p->method, p->target, p->body, p->len, extra, p->auth, NULL, &h, &ct, err);
        bool ok = false;
        if (c) {
                void *pc[2] = {p, c};
                curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, proxy_header);
                curl_easy_setopt(c, CURLOPT_HEADERDATA, pc);
                curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, proxy_write);
                curl_easy_setopt(c, CURLOPT_WRITEDATA, pc);
                CURLcode r = curl_easy_perform(c);
                if (r == CURLE_OK) {
                        proxy_known(p, c);
                        ok = true;
                } else {
                        pthread_mutex_lock(&p->lock);
                        fail_why(r, err, &p->ep, p->why, sizeof p->why);
                        pthread_mutex_unlock(&p->lock);
                }
                curl_slist_free_all(h);
                curl_slist_free_all(ct);
                curl_easy_cleanup(c);
        }
        if (p->x.done && p->code == 200)
                p->x.done(p->x.ud, p->fd, ok, p->why);
        pthread_mutex_lock(&p->lock);
        if (!p->known && !p->why[0])
                snprintf(p->why, sizeof p->why, "no curl handle");
        p->known = p->finished = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        sbx_mgr *m = p->m;
        proxy_put(p);
        mgr_worker_done(m);
        return NULL;
}

static char *header_line(const sbx_mgr_request *rq, const char *name) {
        const char *v = rq->header ? rq->header(rq->ctx, name) : NULL;
        char *s = NULL;
        if (v && strlen(v) < 1024 && !strpbrk(v, "\r\n") && asprintf(&s, "%s: %s", name, v) < 0)
                s = NULL;
        return s;
}

unsigned remote_stream(sbx_mgr *m, const remote_ep *ep, const char *method, const char *target,
        const char *body, size_t len, const char *const *extra, bool auth, const remote_xform *x,
        sbx_mgr_reply *rp) {
        int sv[2];
        proxy *p = calloc(1, sizeof *p);
        if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                free(p);
                if (x && x->free)
                        x->free(x->ud);
                return mgr_reply_err(rp, 503, "unavailable", NULL, "cannot pass the request on: %m");
        }
        p->m = m;
        p->ep = *ep;
        p->auth = auth;
        if (x)
                p->x = *x;
        snprintf(p->method, sizeof p->method, "%s", method);
        p->target = strdup(target);
        if (len && (p->body = malloc(len)))
                memcpy(p->body, body, p->len = len);
        for (size_t i = 0; extra && extra[i] && i < ELEMENTSOF(p->hdr); i++)
                p->hdr[i] = strdup(extra[i]);
        p->fd = sv[1];
        p->refs = 2;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        if (!p->target || mgr_worker_start(m, proxy_main, p) < 0) {
                close(sv[0]);
                p->refs = 1;
                proxy_put(p);
                return mgr_reply_err(
                        rp, 503, "unavailable", NULL, "cannot start a thread to pass the request on");
        }
        pthread_mutex_lock(&p->lock);
        while (!p->known || (p->x.piece && p->code != 200 && !p->finished))
                pthread_cond_wait(&p->cond, &p->lock);
        long code = p->code;
        pthread_mutex_unlock(&p->lock);
        if (!code || (p->x.piece && code != 200)) {
                close(sv[0]);
                if (!code)
                        mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", p->why);
                else {
                        char why[700];
                        remote_answer_why(ep, &p->err, why, sizeof why);
                        mgr_reply_err(rp, code == 404 || code == 410 ? (unsigned) code : 502,
                                code == 404 || code == 410 ? "not_found" : "bad_gateway", NULL, "%s", why);
                }
                proxy_put(p);
                return rp->code;
        }
        rp->code = (unsigned) code;
        rp->stream_fd = sv[0];
        static __thread char ctype[128]; /* the reply is sent on this thread, before the next request */
        snprintf(ctype, sizeof ctype, "%s", p->x.ctype ? p->x.ctype : p->ctype);
        rp->ctype = ctype;
        proxy_put(p);
        return rp->code;
}

/* A sandboxer node: the request passed on whole (its Content-Type and Accept). */
static unsigned proxy_stream(
        sbx_mgr *m, const remote_ep *ep, const char *method, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        char *h0 = header_line(rq, "Content-Type"), *h1 = header_line(rq, "Accept");
        const char *extra[3] = {h0 ? h0 : h1, h0 ? h1 : NULL, NULL};
        unsigned code = remote_stream(
                m, ep, method, rq->uri ? rq->uri : "", rq->body, rq->len, extra, true, NULL, rp);
        free(h0);
        free(h1);
        return code;
}

/* An exec that asks no stream: its answer comes whole (the back end writes it once the
 * command ended), so it is taken whole on this thread and answered as it came — no thread, no
 * pipe, no chunked reply for the one request a front carries most. */
static bool streamed(const sbx_mgr_request *rq) {
        if (rq->body && !memmem(rq->body, rq->len, "stream", 6)) /* the common case, not parsed */
                return false;
        json_error_t je;
        json_t *j = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
        bool s = !json_is_object(j) || json_is_true(json_object_get(j, "stream"));
        json_decref(j);
        return s;
}

static void whole_exec(sbx_mgr *m, const remote_ep *ep, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *extra[] = {"Content-Type: application/json", "Accept: application/json", NULL};
        remote_resp r;
        char why[700] = "";
        /* as long as the exec: its own timeout_s, the sandbox's budget, bound it there */
        long code = call(m, ep, "POST", rq->uri ? rq->uri : "", rq->body, rq->len, extra, NULL,
                24L * 3600 * 1000, &r, why, sizeof why);
        if (!code)
                mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
        else {
                rp->code = (unsigned) code;
                rp->raw = r.body ? TAKE_PTR(r.body) : strdup("");
                rp->raw_len = rp->raw ? r.len : 0;
                static __thread char ctype[128]; /* the reply is sent on this thread */
                snprintf(ctype, sizeof ctype, "%s", r.ctype[0] ? r.ctype : "application/json");
                rp->ctype = ctype;
        }
        remote_resp_done(&r);
}

bool mgr_remote_route(sbx_mgr *m, const char *method, const char *id, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        box *b = mgr_valid_sandbox_id(id) ? mgr_box_get(m, id, rq->who->tenant) : NULL;
        if (!b || !b->ext[0]) {
                if (b)
                        mgr_box_put(m, b);
                return false;
        }
        bool get = streq(method, "GET");
        remote_ep ep;
        char why[700] = "";
        pthread_mutex_lock(&m->lock);
        sbx_state st = b->state;
        bool busy = b->busy;
        char ext[72];
        snprintf(ext, sizeof ext, "%s", b->ext);
        pthread_mutex_unlock(&m->lock);
        bool handled = true;
        bool have_ep = remote_ep_of(m, b->tenant, ext, &ep, why, sizeof why); /* once: it reads files */
        if (!*sub && streq(method, "DELETE"))
                handled = false; /* the front's destroy (mgr_destroy_box tells the back end) */
        else if (have_ep &&
                 (streq(ep.kind, "e2b") || streq(ep.kind, "daytona") || streq(ep.kind, "compose-ssh"))) {
                if (!(busy || !(sbx_state_usable(st) || st == SBX_STATE_PAUSED)) || (!*sub && get))
                        handled = streq(ep.kind, "e2b") ? e2b_route(m, b, &ep, method, sub, rq, rp)
                                  : streq(ep.kind, "daytona")
                                          ? daytona_route(m, b, &ep, method, sub, rq, rp)
                                          : compose_route(m, b, &ep, method, sub, rq, rp);
                else
                        mgr_reply_err(rp, sbx_state_ending(st) ? 410 : 409,
                                sbx_state_ending(st) ? "gone" : "conflict", NULL, "sandbox %s is %s%s%s%s",
                                b->id, sbx_state_to_string(st), b->reason[0] ? " (" : "", b->reason,
                                b->reason[0] ? ")" : "");
        } else if (!*sub && get) {
                /* its record: the back end's, under the front's own keys (the front's alone once it
                 * ended, or when the back end does not answer) */
                remote_resp r = {0};
                long code = 0;
                if (!sbx_state_ending(st) && have_ep) {
                        char target[96];
                        snprintf(target, sizeof target, "/v1/sandboxes/%s", b->id);
                        code = call(m, &ep, "GET", target, NULL, 0, NULL, NULL, 10000, &r, why, sizeof why);
                }
                json_error_t je;
                json_t *rec = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
                if (rec)
                        remote_absorb(m, b, rec);
                else if (code == 404 || code == 410)
                        remote_gone(m, b, "gone_at_backend");
                rp->code = 200;
                rp->json = remote_merged(m, b, rec);
                json_decref(rec);
                remote_resp_done(&r);
        } else if (strstr(sub, "/attach") && get)
                remote_lacks(rp, ext, "attach (a PTY's WebSocket is not passed on between nodes yet)");
        else if ((streq(sub, "/pause") || streq(sub, "/resume") || streq(sub, "/snapshot")) && have_ep &&
                 !(streq(sub, "/snapshot") ? ep.cap_snapshot : ep.cap_pause))
                remote_lacks(rp, ext, streq(sub, "/snapshot") ? "snapshot" : "pause");
        else if (busy || !(sbx_state_usable(st) || st == SBX_STATE_PAUSED)) /* paused: the back end says */
                mgr_reply_err(rp, sbx_state_ending(st) ? 410 : 409,
                        sbx_state_ending(st) ? "gone" : "conflict", NULL, "sandbox %s is %s%s%s", b->id,
                        sbx_state_to_string(st), b->reason[0] ? " (" : "", b->reason[0] ? b->reason : "");
        else if (!have_ep)
                mgr_reply_err(rp, 503, "unavailable", NULL, "%s", why);
        else if (streq(sub, "/ttl") || streq(sub, "/metadata") || streq(sub, "/pause") ||
                 streq(sub, "/resume") || streq(sub, "/recreate")) {
                /* told to the back end first; the front's record follows what it answered */
                const char *extra[] = {"Content-Type: application/json", NULL};
                remote_resp r;
                long code = call(m, &ep, method, rq->uri ? rq->uri : "", rq->body, rq->len, extra, NULL, 0,
                        &r, why, sizeof why);
                json_error_t je;
                json_t *rec = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
                if (!code)
                        mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
                else if (!rec) { /* its error, as it said it */
                        if (code == 404 || code == 410)
                                remote_gone(m, b, "gone_at_backend");
                        rp->code = (unsigned) code;
                        rp->raw = TAKE_PTR(r.body);
                        rp->raw_len = r.len;
                        rp->ctype = "application/json";
                        if (!rp->raw) {
                                rp->raw = strdup("");
                                rp->raw_len = 0;
                        }
                } else if (streq(sub, "/ttl") || streq(sub, "/metadata")) {
                        remote_absorb(m, b, rec);
                        handled = false; /* the front's own clock and metadata, as a local one's */
                } else {
                        remote_absorb(m, b, rec);
                        rp->code = 200;
                        rp->json = remote_merged(m, b, rec);
                }
                json_decref(rec);
                remote_resp_done(&r);
        } else {
                if (streq(sub, "/exec")) {
                        pthread_mutex_lock(&m->lock);
                        b->last_active_ms = mgr_now_ms();
                        b->execs++;
                        pthread_mutex_unlock(&m->lock);
                }
                if (streq(sub, "/exec") && streq(method, "POST") && !streamed(rq))
                        whole_exec(m, &ep, rq, rp);
                else
                        proxy_stream(m, &ep, method, rq, rp);
                if (rp->code == 410 || (rp->code == 404 && !*sub))
                        remote_gone(m, b, "gone_at_backend");
        }
        mgr_box_put(m, b);
        return handled;
}

/* ---- a restart ---------------------------------------------------------------------------- */

void mgr_remote_reconcile(sbx_mgr *m, box *b) {
        if (!sbx_state_ending(b->state) && b->state != SBX_STATE_REQUESTED &&
                b->state != SBX_STATE_PROVISIONING) {
                sbx_log(SBX_LOG_INFO, "readopted", "sandbox", b->id, "extension", b->ext, NULL);
                atomic_fetch_add(&m->n_readopted, 1);
                return;
        }
        if (sbx_state_ending(b->state)) { /* a destroy the front did not finish */
                mgr_destroy_box(m, b, b->reason[0] ? b->reason : "destroyed");
                return;
        }
        /* the front died mid-provision: the back end has it (adopted) or not (failed) */
        remote_ep ep;
        char why[700] = "", target[96];
        remote_resp r = {0};
        long code = 0;
        snprintf(target, sizeof target, "/v1/sandboxes/%s", b->id);
        if (remote_ep_of(m, b->tenant, b->ext, &ep, why, sizeof why))
                code = call(m, &ep, "GET", target, NULL, 0, NULL, NULL, 5000, &r, why, sizeof why);
        json_error_t je;
        json_t *rec = code == 200 && r.body ? json_loads(r.body, 0, &je) : NULL;
        const char *st = json_string_value(json_object_get(rec, "state"));
        if (rec && st && sbx_state_usable(sbx_state_from_string(st))) {
                remote_absorb(m, b, rec);
                mgr_set_state(m, b, SBX_STATE_READY, "readopted");
                sbx_log(SBX_LOG_INFO, "remote_adopted", "sandbox", b->id, "extension", b->ext, NULL);
        } else {
                atomic_fetch_add(&m->n_failed, 1);
                mgr_set_state(m, b, SBX_STATE_FAILED, "provision_lost");
                if (code == 404 || code == 410)
                        b->ext_gone = true;
                mgr_destroy_box(m, b, "provision_lost");
        }
        json_decref(rec);
        remote_resp_done(&r);
}
