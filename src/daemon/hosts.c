/* hosts.c — placement targets (DESIGN.md, "Extensions, hosts and routes"): GET|POST /v1/hosts,
 * DELETE /v1/hosts/{id}, `sandboxer host add|ls|rm`. A host is {id, extension, address, capacity:
 * {cpus, memory_mb, sandboxes}, labels, health}: a machine an extension places sandboxes on (another
 * sandboxer serve for ext.sandboxer, an SSH host for ext.compose-ssh). Adding and removing one is
 * the operator's (adm); every caller may list them.
 *
 * Health is a heartbeat: every 10 s the hosts thread opens a TCP connection to each address (2 s
 * at most) and keeps {ok, checked_at, latency_ms, reason}; a host that stops answering is marked
 * unhealthy and routing passes it over, naming why. Hosts live in STATE/hosts.json (rewritten
 * whole on each change). */
#include "basic/time-util.h"
#include "daemon/mgr-internal.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOSTS_MAX 256
#define BEAT_MS 10000

static pthread_mutex_t hosts_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *hosts; /* id → host (under hosts_lock) */

static void path_of(sbx_mgr *m, char *buf, size_t size) {
        snprintf(buf, size, "%.4000s/hosts.json", m->state_dir);
}

static void save_locked(sbx_mgr *m) {
        char path[PATH_MAX];
        path_of(m, path, sizeof path);
        if (sbx_json_file_save(path, hosts, JSON_COMPACT | JSON_SORT_KEYS) < 0)
                sbx_log(SBX_LOG_WARNING, "hosts_unsaved", "path", path, NULL);
}

static void load_locked(sbx_mgr *m) {
        if (hosts)
                return;
        char path[PATH_MAX];
        path_of(m, path, sizeof path);
        hosts = json_load_file(path, 0, NULL);
        if (!json_is_object(hosts)) {
                json_decref(hosts);
                hosts = json_object();
        }
}

/* "host:port" (or "[v6]:port", or ssh://[user@]host[:port]) into host and port. */
static bool split_address(const char *a, char *host, size_t hsize, char *port, size_t psize) {
        const char *s = a;
        if (strncmp(s, "ssh://", 6) == 0) {
                s += 6;
                const char *at = strchr(s, '@');
                if (at)
                        s = at + 1;
        } else if (strncmp(s, "https://", 8) == 0)
                s += 8;
        else if (strncmp(s, "http://", 7) == 0)
                s += 7;
        const char *end = s + strcspn(s, "/");
        const char *colon = NULL;
        if (*s == '[') {
                const char *rb = memchr(s, ']', (size_t) (end - s));
                if (!rb)
                        return false;
                snprintf(host, hsize, "%.*s", (int) (rb - s - 1), s + 1);
                colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        } else {
                colon = memchr(s, ':', (size_t) (end - s));
                snprintf(host, hsize, "%.*s", (int) ((colon ? colon : end) - s), s);
        }
        const char *defport = strncmp(a, "ssh://", 6) == 0     ? "22"
                              : strncmp(a, "https://", 8) == 0 ? "443"
                                                               : "80";
        if (!colon && s == a) /* HOST:PORT: the port is not guessed */
                return false;
        if (colon)
                snprintf(port, psize, "%.*s", (int) (end - colon - 1), colon + 1);
        else
                snprintf(port, psize, "%s", defport);
        if (!*host || !*port || strlen(port) > 5)
                return false;
        for (const char *p = port; *p; p++)
                if (*p < '0' || *p > '9')
                        return false;
        return atoi(port) > 0 && atoi(port) < 65536;
}

/* A TCP connection to address within 2 s: 0 and *ms, or -errno with why. */
static int beat(const char *address, double *ms, char *why, size_t whysz) {
        char host[256], port[8];
        if (!split_address(address, host, sizeof host, port, sizeof port)) {
                snprintf(why, whysz, "not an address");
                return -EINVAL;
        }
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
        int64_t t0 = mgr_now_ms();
        int g = getaddrinfo(host, port, &hints, &ai);
        if (g != 0) {
                snprintf(why, whysz, "cannot resolve %s: %s", host, gai_strerror(g));
                return -EHOSTUNREACH;
        }
        int r = -ETIMEDOUT;
        for (struct addrinfo *p = ai; p && r < 0; p = p->ai_next) {
                int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, p->ai_protocol);
                if (fd < 0)
                        continue;
                if (connect(fd, p->ai_addr, p->ai_addrlen) == 0)
                        r = 0;
                else if (errno == EINPROGRESS) {
                        struct pollfd pf = {.fd = fd, .events = POLLOUT};
                        int err = 0;
                        socklen_t el = sizeof err;
                        if (poll(&pf, 1, 2000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0)
                                r = err ? -err : 0;
                        else
                                r = -ETIMEDOUT;
                } else
                        r = -errno;
                close(fd);
        }
        freeaddrinfo(ai);
        *ms = (double) (mgr_now_ms() - t0);
        if (r < 0)
                snprintf(why, whysz, "%s:%s does not answer: %s", host, port, strerror(-r));
        return r;
}

void *mgr_hosts_main(void *ud) {
        sbx_mgr *m = ud;
        json_t *misses = json_object(); /* host id → heartbeats missed in a row (this thread's own) */
        json_t *heard = json_object(); /* host id → true once it answered */
        for (;;) {
                pthread_mutex_lock(&hosts_lock);
                load_locked(m);
                json_t *snap = json_deep_copy(hosts);
                pthread_mutex_unlock(&hosts_lock);
                const char *id;
                json_t *h;
                json_object_foreach(snap, id, h) {
                        pthread_mutex_lock(&m->lock);
                        bool stop = m->stopping;
                        pthread_mutex_unlock(&m->lock);
                        if (stop)
                                break;
                        double ms = 0;
                        char why[400] = "";
                        int r = beat(json_string_value(json_object_get(h, "address")) ?: "", &ms, why,
                                sizeof why);
                        /* one miss is a blip; two in a row: lost (its sandboxes fail); one that
                         * never answered is not healthy yet */
                        if (r == 0)
                                json_object_set_new(heard, id, json_true());
                        bool once = json_is_true(json_object_get(heard, id));
                        json_int_t before = json_integer_value(json_object_get(misses, id)),
                                   now = r == 0 ? 0 : before + 1;
                        json_object_set_new(misses, id, json_integer(now));
                        pthread_mutex_lock(&hosts_lock);
                        json_t *live = json_object_get(hosts, id);
                        json_t *old = json_object_get(live, "health");
                        bool was = json_is_true(json_object_get(old, "ok"));
                        bool ok = r == 0 || (once && now < 2);
                        json_t *health = json_pack("{s:b, s:o, s:o, s:s*}", "ok", ok, "checked_at",
                                mgr_time_json(mgr_now_ms()), "latency_ms",
                                r == 0 ? json_real(ms) : json_null(), "reason", r == 0 ? NULL : why);

                        if (live)
                                json_object_set(live, "health", health);
                        const char *ext = json_string_value(json_object_get(live, "extension"));
                        char extb[80];
                        snprintf(extb, sizeof extb, "%s", ext ? ext : "");
                        pthread_mutex_unlock(&hosts_lock);
                        if (live && was != ok)
                                sbx_log(ok ? SBX_LOG_INFO : SBX_LOG_WARNING,
                                        ok ? "host_healthy" : "host_unhealthy", "host", id, "reason",
                                        ok ? NULL : why, NULL);
                        /* at every miss from the second on, not only at the second: a sandbox
                         * busy at that moment (an exec in flight) is caught at the next beat */
                        if (live && now >= 2)
                                mgr_remote_host_lost(m, id, why);
                        if (live && r == 0 && before >= 2 && extb[0])
                                mgr_remote_host_back(m, extb);
                        json_decref(health);
                }
                json_decref(snap);
                mgr_remote_probe(m); /* the other nodes this one fronts (remote.c) */
                pthread_mutex_lock(&m->lock);
                if (!m->stopping) {
                        /* a kick (a host added) that came while this thread was beating or probing
                         * is taken here, not slept through until the next beat */
                        int64_t beat_ms =
                                m->o.heartbeat_s > 0 ? (int64_t) (m->o.heartbeat_s * 1000) : BEAT_MS;
                        struct timespec until;
                        sbx_deadline_monotonic((int) beat_ms, &until);
                        while (!m->stopping && !m->hosts_kick &&
                                pthread_cond_clockwait(&m->hosts_cond, &m->lock, CLOCK_MONOTONIC, &until) !=
                                        ETIMEDOUT)
                                ;
                        m->hosts_kick = false;
                }
                bool stop = m->stopping;
                pthread_mutex_unlock(&m->lock);
                if (stop)
                        break;
        }
        mgr_remote_probe_stop();
        json_decref(misses);
        json_decref(heard);
        return NULL;
}

static bool is_adm(const sbx_caller *who, sbx_mgr_reply *rp) {
        if (streq(who->kind, "adm"))
                return true;
        mgr_reply_err(
                rp, 403, "forbidden", NULL, "adding and removing hosts is the operator's (an adm token)");
        return false;
}

unsigned sbx_ops_host_add(sbx_mgr *m, const sbx_caller *who, json_t *body, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!is_adm(who, rp))
                return rp->code;
        static const char *const keys[] = {"id", "extension", "address", "capacity", "labels", NULL},
                                 *const capk[] = {"cpus", "memory_mb", "sandboxes", NULL};
        if (!mgr_only_keys(body, keys, "", rp))
                return rp->code;
        const char *id = json_string_value(json_object_get(body, "id")),
                   *ext = json_string_value(json_object_get(body, "extension")),
                   *addr = json_string_value(json_object_get(body, "address"));
        json_t *cap = json_object_get(body, "capacity"), *labels = json_object_get(body, "labels");
        char h[256], p[8];
        bool id_ok = id && strlen(id) >= 1 && strlen(id) <= 63 && mgr_secret_name_ok(id);
        if (!id_ok)
                return mgr_reply_err(rp, 400, "invalid_argument", "id", "id: 1 to 63 of [A-Za-z0-9._-]");
        if (!ext || strncmp(ext, "ext.", 4) != 0)
                return mgr_reply_err(
                        rp, 400, "invalid_argument", "extension", "extension: an extension id (ext.NAME)");
        if (!addr || !split_address(addr, h, sizeof h, p, sizeof p))
                return mgr_reply_err(rp, 400, "invalid_argument", "address",
                        "address: HOST:PORT, [V6]:PORT, https://HOST[:PORT] or ssh://[USER@]HOST[:PORT]");
        if (cap && (!json_is_object(cap) || !mgr_only_keys(cap, capk, "capacity.", rp)))
                return rp->code ? rp->code
                                : mgr_reply_err(rp, 400, "invalid_argument", "capacity",
                                          "capacity: {cpus, memory_mb, sandboxes}");
        const char *k;
        json_t *v;
        json_object_foreach(
                cap, k, v) if (!json_is_number(v) || json_number_value(v) < 0) return mgr_reply_err(rp, 400,
                "invalid_argument", "capacity", "capacity.%s: a number, 0 or more", k);
        if (labels && !mgr_string_map(labels, "labels", 64, rp))
                return rp->code;
        json_t *reg = mgr_registry(m), *x;
        size_t i;
        bool known = false;
        json_array_foreach(reg, i, x) known =
                known || streq_ptr(json_string_value(json_object_get(x, "id")), ext);
        json_decref(reg);
        if (!known)
                return mgr_reply_err(
                        rp, 404, "not_found", "extension", "no extension '%.64s' (GET /v1/extensions)", ext);
        pthread_mutex_lock(&hosts_lock);
        load_locked(m);
        unsigned code = 0;
        if (json_object_get(hosts, id))
                code = mgr_reply_err(rp, 409, "conflict", "id", "host '%s' exists already", id);
        else if (json_object_size(hosts) >= HOSTS_MAX)
                code = mgr_reply_err(rp, 429, "quota_exceeded", NULL, "at most %d hosts", HOSTS_MAX);
        else {
                json_t *host = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:n, s:n, s:s}, s:o}", "id", id,
                        "extension", ext, "address", addr, "capacity",
                        cap ? json_deep_copy(cap) : json_object(), "labels",
                        labels ? json_deep_copy(labels) : json_object(), "health", "ok", false, "checked_at",
                        "latency_ms", "reason", "not checked yet", "created_at",
                        mgr_time_json(mgr_now_ms()));
                json_object_set_new(hosts, id, host);
                save_locked(m);
                rp->code = 201;
                rp->json = json_deep_copy(host);
        }
        pthread_mutex_unlock(&hosts_lock);
        mgr_audit(m, who, "host.add", id, code ? "failed" : "ok", addr);
        if (!code) {
                pthread_mutex_lock(&m->lock);
                m->hosts_kick = true;
                pthread_cond_broadcast(&m->hosts_cond);
                pthread_mutex_unlock(&m->lock);
        }
        return code ? code : 201;
}

unsigned sbx_ops_host_list(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        json_t *items = json_array(), *h;
        const char *id;
        pthread_mutex_lock(&hosts_lock);
        load_locked(m);
        json_object_foreach(hosts, id, h) json_array_append_new(items, json_deep_copy(h));
        pthread_mutex_unlock(&hosts_lock);
        rp->code = 200;
        rp->json = json_pack("{s:o}", "items", items);
        return 200;
}

unsigned sbx_ops_host_delete(sbx_mgr *m, const sbx_caller *who, const char *id, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        if (!is_adm(who, rp))
                return rp->code;
        pthread_mutex_lock(&hosts_lock);
        load_locked(m);
        json_t *h = json_incref(json_object_get(hosts, id ? id : ""));
        if (h) {
                json_object_del(hosts, id);
                save_locked(m);
        }
        pthread_mutex_unlock(&hosts_lock);
        if (!h)
                return mgr_reply_err(rp, 404, "not_found", NULL, "no host '%.64s'", id ? id : "");
        mgr_audit(m, who, "host.delete", id, "ok", NULL);
        rp->code = 200;
        rp->json = h;
        return 200;
}

json_t *mgr_hosts_of(sbx_mgr *m, const char *extension) {
        json_t *out = json_array(), *h;
        const char *id;
        pthread_mutex_lock(&hosts_lock);
        load_locked(m);
        json_object_foreach(
                hosts, id, h) if (streq_ptr(json_string_value(json_object_get(h, "extension")), extension))
                json_array_append_new(out, json_deep_copy(h));
        pthread_mutex_unlock(&hosts_lock);
        return out;
}
