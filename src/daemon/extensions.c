/* extensions.c — the registry of extensions (DESIGN.md, "Extensions, hosts and routes"): what
 * can hold a sandbox, each with a capability vector, pricing and health; GET /v1/extensions.
 *
 * `ext.local` — this host's own backends — is built in: its backends are those that can hold a
 * persistent sandbox here (probed, cached for a minute), its isolation levels theirs, its price 0
 * unless the site's registry says otherwise. `serve --registry DIR` adds the .yaml files in DIR, one
 * extension each (and may re-price ext.local):
 *
 *     id: ext.gpu-farm          # ext.[a-z0-9-]+
 *     kind: sandboxer           # local | sandboxer | e2b | daytona | compose-ssh
 *     description: "..."
 *     url: https://farm.example:8443
 *     capabilities: {isolation: [container, microvm], backends: [native], regions: [eu-west],
 *                    gpu: true, persistence: true, snapshot: true, pause: true}
 *     pricing: {model: per_second, per_second: 0.0001, per_creation: 0, per_cpu_second: 0,
 *               per_gib_second: 0, currency: USD}
 *     auth: {secret: farm-token}  # the bearer token it is reached with: a secret of the tenant's,
 *                                 # else of the server's --secrets-dir (remote.c)
 *     tls: {ca_file: /etc/sandboxer/farm-ca.pem, pinned_key: "sha256//BASE64"}
 *     domain: e2b.app             # e2b: its sandboxes' host names are PORT-ID.DOMAIN
 *     connect_to: 127.0.0.1:8443  # every connection goes there (a test, a proxy)
 *     template: base              # e2b: the template; daytona: the snapshot a create asks for
 *     known_hosts: /etc/sandboxer/known_hosts   # compose-ssh: the hosts' keys (required)
 *
 * A kind-sandboxer URL is https://, or http:// to a loopback address only (a token in the clear
 * goes nowhere else).
 * Unknown keys and bad values are errors with file:line:column, and serve does not start. Each
 * kind's client is its own file (remote.c: sandboxer; ext-e2b.c, ext-daytona.c, ext-compose.c),
 * probed by the hosts thread; an extension that does not answer is listed with health {ok:
 * false} saying why, and routing passes it over naming that. */
#include "daemon/mgr-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "basic/strv.h"
#include "policy/yaml-util.h"

#define REGISTRY_MAX 64
#define LOCAL_TTL_MS (60 * 1000)

static const char *const kinds[] = {"local", "sandboxer", "e2b", "daytona", "compose-ssh", NULL};
static const char *const levels[] = {"policy", "container", "microvm", NULL};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *registry; /* [{id, kind, ...}] as GET /v1/extensions lists them, ext.local first */
static int64_t local_checked_ms; /* when ext.local's capabilities and health were probed */

static int kind_from(const char *s) {
        for (int i = 0; kinds[i]; i++)
                if (streq(s, kinds[i]))
                        return i;
        return -EINVAL;
}

static int level_check(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        for (int i = 0; levels[i]; i++)
                if (streq(*value, levels[i]))
                        return 0;
        return yerr(c, n, "%s: '%s' is not an isolation level (policy | container | microvm)", path, *value);
}

static int word_check(yctx *c, const yaml_node_t *n, const char *path, char **value) {
        for (const char *p = *value; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
                            *p == '.'))
                        return yerr(c, n, "%s: '%s' is not a name ([a-z0-9._-])", path, *value);
        return **value ? 0 : yerr(c, n, "%s: an empty name", path);
}

static json_t *strv_json(char **l) {
        json_t *a = json_array();
        for (char **p = l; p && *p; p++)
                json_array_append_new(a, json_string(*p));
        return a;
}

/* http://HOST[:PORT]/... with HOST a loopback name or address. */
static bool loopback_url(const char *url) {
        const char *h = url + 7;
        char host[256];
        size_t n = 0;
        if (*h == '[') {
                h++;
                while (h[n] && h[n] != ']' && n < sizeof host - 1)
                        n++;
        } else
                while (h[n] && h[n] != ':' && h[n] != '/' && n < sizeof host - 1)
                        n++;
        snprintf(host, sizeof host, "%.*s", (int) n, h);
        return streq(host, "localhost") || streq(host, "::1") || strncmp(host, "127.", 4) == 0;
}

/* One registry file into an entry; -EINVAL with e (file:line:column). */
static int parse_file(const char *path, json_t **ret, sbx_error *e) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return sbx_error_set(e, errno, "registry", "%s: %m", path);
        char *text = malloc(YAML_MAX_INPUT + 1);
        ssize_t n = text ? read(fd, text, YAML_MAX_INPUT + 1) : -1;
        close(fd);
        if (n < 0 || n > YAML_MAX_INPUT) {
                free(text);
                return sbx_error_set(e, n < 0 ? errno : EFBIG, "registry", "%s: %s", path,
                        n < 0 ? "cannot read it" : "larger than 1 MiB");
        }
        yctx c = {0};
        int r = yctx_load(&c, text, (size_t) n, path, e);
        free(text);
        static const char *const keys[] = {"id", "kind", "description", "url", "capabilities", "pricing",
                "auth", "tls", "domain", "connect_to", "template", "known_hosts"};
        static const char *const akeys[] = {"secret"}, *const tkeys[] = {"ca_file", "pinned_key"};
        yaml_node_t *av[1] = {0}, *tv[2] = {0};
        _cleanup_free_ char *secret = NULL, *ca_file = NULL, *pin = NULL, *domain = NULL, *connect_to = NULL,
                            *templ = NULL, *known_hosts = NULL;
        static const char *const ckeys[] = {
                "isolation", "backends", "regions", "gpu", "persistence", "snapshot", "pause"};
        static const char *const pkeys[] = {
                "model", "per_second", "per_creation", "per_cpu_second", "per_gib_second", "currency"};
        yaml_node_t *v[ELEMENTSOF(keys)] = {0}, *cv[ELEMENTSOF(ckeys)] = {0}, *pv[ELEMENTSOF(pkeys)] = {0};
        _cleanup_free_ char *id = NULL, *desc = NULL, *url = NULL, *model = NULL, *currency = NULL;
        _cleanup_strv_free_ char **iso = NULL, **backends = NULL, **regions = NULL;
        int kind = 0;
        bool flags[4] = {false, true, false, false};
        double price[4] = {0};
        if (r >= 0 && !yctx_root(&c))
                r = yerr(&c, NULL, "an empty registry file");
        if (r >= 0)
                r = ymap(&c, yctx_root(&c), "", keys, ELEMENTSOF(keys), v);
        if (r >= 0 && !v[0])
                r = yerr(&c, yctx_root(&c), "id: required (ext.NAME)");
        if (r >= 0)
                r = yget_string(&c, v[0], "id", "an extension id (ext.NAME)", &id);
        if (r >= 0 && (strncmp(id, "ext.", 4) != 0 || strlen(id) < 5 || strlen(id) > 64))
                r = yerr(&c, v[0], "id: '%s' is not ext.NAME (at most 64 characters)", id);
        if (r >= 0) {
                char *rest = id + 4;
                r = word_check(&c, v[0], "id", &rest);
        }
        if (r >= 0 && !v[1])
                r = yerr(&c, yctx_root(&c),
                        "kind: required (local | sandboxer | e2b | daytona | compose-ssh)");
        if (r >= 0)
                r = yget_enum(&c, v[1], "kind", kind_from, "local | sandboxer | e2b | daytona | compose-ssh",
                        &kind);
        if (r >= 0 && v[2])
                r = yget_string(&c, v[2], "description", "a string", &desc);
        if (r >= 0 && v[3])
                r = yget_string(&c, v[3], "url", "a URL", &url);
        if (r >= 0 && url && strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0 &&
                strncmp(url, "ssh://", 6) != 0)
                r = yerr(&c, v[3], "url: '%s' is not an http://, https:// or ssh:// URL", url);
        if (r >= 0 && v[4])
                r = ymap(&c, v[4], "capabilities", ckeys, ELEMENTSOF(ckeys), cv);
        if (r >= 0 && cv[0])
                r = yget_strv(&c, cv[0], "capabilities.isolation", "isolation levels", 3, level_check, &iso);
        if (r >= 0 && cv[1])
                r = yget_strv(
                        &c, cv[1], "capabilities.backends", "backend names", 16, word_check, &backends);
        if (r >= 0 && cv[2])
                r = yget_strv(&c, cv[2], "capabilities.regions", "region names", 64, word_check, &regions);
        for (size_t i = 0; i < 4 && r >= 0; i++)
                if (cv[3 + i]) {
                        char p[64];
                        r = yget_bool(
                                &c, cv[3 + i], ypath(p, sizeof p, "capabilities", ckeys[3 + i]), &flags[i]);
                }
        if (r >= 0 && v[5])
                r = ymap(&c, v[5], "pricing", pkeys, ELEMENTSOF(pkeys), pv);
        if (r >= 0 && pv[0])
                r = yget_string(&c, pv[0], "pricing.model", "a pricing model", &model);
        for (size_t i = 0; i < 4 && r >= 0; i++)
                if (pv[1 + i]) {
                        char p[64];
                        r = yget_number(&c, pv[1 + i], ypath(p, sizeof p, "pricing", pkeys[1 + i]),
                                "a price of 0 or more", false, true, 1e9, &price[i]);
                }
        if (r >= 0 && pv[5])
                r = yget_string(&c, pv[5], "pricing.currency", "a currency code", &currency);
        if (r >= 0 && kind != 0 && kind != 4 && !url)
                r = yerr(&c, yctx_root(&c), "url: required for an extension of kind %s", kinds[kind]);
        if (r >= 0 && v[6])
                r = ymap(&c, v[6], "auth", akeys, ELEMENTSOF(akeys), av);
        if (r >= 0 && av[0])
                r = yget_string(&c, av[0], "auth.secret", "a secret's name", &secret);
        if (r >= 0 && secret && !mgr_secret_name_ok(secret))
                r = yerr(&c, av[0], "auth.secret: '%s' is not a secret's name (1 to 128 of [A-Za-z0-9._-])",
                        secret);
        if (r >= 0 && v[7])
                r = ymap(&c, v[7], "tls", tkeys, ELEMENTSOF(tkeys), tv);
        if (r >= 0 && tv[0])
                r = yget_string(&c, tv[0], "tls.ca_file", "a file of PEM certificates", &ca_file);
        if (r >= 0 && ca_file && (ca_file[0] != '/' || access(ca_file, R_OK) < 0))
                r = yerr(&c, tv[0], "tls.ca_file: '%s' %s", ca_file,
                        ca_file[0] != '/' ? "is not an absolute path" : "cannot be read");
        if (r >= 0 && tv[1])
                r = yget_string(
                        &c, tv[1], "tls.pinned_key", "sha256//BASE64 (curl's pinned public key)", &pin);
        if (r >= 0 && pin && strncmp(pin, "sha256//", 8) != 0)
                r = yerr(&c, tv[1], "tls.pinned_key: '%s' is not sha256//BASE64 of the server's public key",
                        pin);
        if (r >= 0 && kind == 1 && strncmp(url, "http://", 7) == 0 && !loopback_url(url))
                r = yerr(&c, v[3],
                        "url: %s is plain http:// to an address that is not loopback; the token would cross "
                        "the network in the clear (use https:// with tls.ca_file or tls.pinned_key)",
                        url);
        if (r >= 0 && v[8])
                r = yget_string(&c, v[8], "domain",
                        "a domain (its sandboxes' host names are PORT-ID.DOMAIN)", &domain);
        if (r >= 0 && domain) {
                char *dd = domain;
                r = word_check(&c, v[8], "domain", &dd);
        }
        if (r >= 0 && v[9])
                r = yget_string(&c, v[9], "connect_to", "HOST:PORT", &connect_to);
        if (r >= 0 && connect_to && (!strchr(connect_to, ':') || atoi(strrchr(connect_to, ':') + 1) <= 0))
                r = yerr(&c, v[9], "connect_to: '%s' is not HOST:PORT", connect_to);
        if (r >= 0 && v[10])
                r = yget_string(&c, v[10], "template", "a template id", &templ);
        if (r >= 0 && v[11])
                r = yget_string(
                        &c, v[11], "known_hosts", "a known_hosts file (the hosts' SSH keys)", &known_hosts);
        if (r >= 0 && known_hosts && (known_hosts[0] != '/' || access(known_hosts, R_OK) < 0))
                r = yerr(&c, v[11], "known_hosts: '%s' %s", known_hosts,
                        known_hosts[0] != '/' ? "is not an absolute path" : "cannot be read");
        if (r >= 0 && kind == 4 && !known_hosts)
                r = yerr(&c, yctx_root(&c),
                        "known_hosts: required for an extension of kind compose-ssh (a host's key is "
                        "checked, never "
                        "learned)");
        if (r >= 0 && kind == 4 && url && strncmp(url, "ssh://", 6) != 0)
                r = yerr(&c, v[3],
                        "url: an extension of kind compose-ssh is reached over ssh://USER@HOST[:PORT]");
        if (r >= 0 && kind == 2 && !domain)
                r = yerr(&c, yctx_root(&c),
                        "domain: required for an extension of kind e2b (its sandboxes answer at "
                        "49983-ID.DOMAIN; "
                        "e2b.app for E2B's own)");
        if (r >= 0 && (kind == 2 || kind == 3) && strncmp(url, "http://", 7) == 0 && !loopback_url(url))
                r = yerr(&c, v[3],
                        "url: %s is plain http:// to an address that is not loopback; the key would cross "
                        "the network in the clear (use https://)",
                        url);
        if (r >= 0 && kind == 1 && strncmp(url, "ssh://", 6) == 0)
                r = yerr(&c, v[3], "url: an extension of kind sandboxer is reached over http(s)://");
        yctx_done(&c);
        if (r < 0)
                return r;
        json_t *x = json_pack("{s:s, s:s, s:s*, s:s*, s:{s:o, s:o, s:o, s:b, s:b, s:b, s:b}, "
                              "s:{s:s, s:f, s:f, s:f, s:f, s:s}}",
                "id", id, "kind", kinds[kind], "description", desc, "url", url, "capabilities", "isolation",
                strv_json(iso), "backends", strv_json(backends), "regions", strv_json(regions), "gpu",
                flags[0], "persistence", flags[1], "snapshot", flags[2], "pause", flags[3], "pricing",
                "model", model ? model : "per_second", "per_second", price[0], "per_creation", price[1],
                "per_cpu_second", price[2], "per_gib_second", price[3], "currency",
                currency ? currency : "USD");
        if (!x)
                return sbx_error_set(e, ENOMEM, "registry", "out of memory");
        if (secret)
                json_object_set_new(x, "auth", json_pack("{s:s}", "secret", secret));
        if (domain)
                json_object_set_new(x, "domain", json_string(domain));
        if (connect_to)
                json_object_set_new(x, "connect_to", json_string(connect_to));
        if (templ)
                json_object_set_new(x, "template", json_string(templ));
        if (known_hosts)
                json_object_set_new(x, "known_hosts", json_string(known_hosts));
        if (ca_file || pin)
                json_object_set_new(
                        x, "tls", json_pack("{s:s*, s:s*}", "ca_file", ca_file, "pinned_key", pin));
        *ret = x;
        return 0;
}

static json_t *local_entry(void) {
        return json_pack("{s:s, s:s, s:s, s:n, s:{s:[], s:[], s:[s], s:b, s:b, s:b, s:b}, "
                         "s:{s:s, s:f, s:f, s:f, s:f, s:s}}",
                "id", "ext.local", "kind", "local", "description", "this host's own backends", "url",
                "capabilities", "isolation", "backends", "regions", "local", "gpu", false, "persistence",
                true, "snapshot", true, "pause", true, "pricing", "model", "per_second", "per_second", 0.0,
                "per_creation", 0.0, "per_cpu_second", 0.0, "per_gib_second", 0.0, "currency", "USD");
}

int mgr_registry_load(const char *dir, sbx_error *e) {
        json_t *items = json_array(), *local = local_entry();
        json_array_append_new(items, local);
        DIR *d = dir ? opendir(dir) : NULL;
        if (dir && !d) {
                json_decref(items);
                return sbx_error_set(e, errno, "registry", "--registry %s: %m", dir);
        }
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *de; d && (de = readdir(d));) {
                size_t l = strlen(de->d_name);
                if (l > 5 && streq(de->d_name + l - 5, ".yaml") && de->d_name[0] != '.' &&
                        n < REGISTRY_MAX) {
                        char **nn = realloc(names, (n + 1) * sizeof *nn);
                        if (!nn || !(nn[n] = strdup(de->d_name))) {
                                names = nn ? nn : names;
                                break;
                        }
                        names = nn;
                        n++;
                }
        }
        if (d)
                closedir(d);
        if (n > 1)
                qsort(names, n, sizeof *names, mgr_cmp_strp);
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                json_t *x = NULL;
                r = parse_file(path, &x, e);
                if (r < 0)
                        break;
                const char *id = json_string_value(json_object_get(x, "id"));
                json_t *y;
                size_t k;
                bool dup = false;
                json_array_foreach(items, k, y) dup =
                        dup || streq_ptr(json_string_value(json_object_get(y, "id")), id);
                if (streq(id, "ext.local")) { /* the site's price (and regions) for this host */
                        json_object_set(local, "pricing", json_object_get(x, "pricing"));
                        if (json_array_size(json_object_get(json_object_get(x, "capabilities"), "regions")))
                                json_object_set(json_object_get(local, "capabilities"), "regions",
                                        json_object_get(json_object_get(x, "capabilities"), "regions"));
                } else if (dup)
                        r = sbx_error_set(
                                e, EEXIST, "registry", "%s: extension %s is defined twice", path, id);
                else
                        json_array_append(items, x);
                json_decref(x);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        if (r < 0) {
                json_decref(items);
                return r;
        }
        pthread_mutex_lock(&reg_lock);
        json_decref(registry);
        registry = items;
        local_checked_ms = 0;
        pthread_mutex_unlock(&reg_lock);
        return 0;
}

/* ext.local's capabilities and health from this host's backends (reg_lock held). */
static void probe_local_locked(sbx_mgr *m) {
        json_t *local = json_array_get(registry, 0);
        json_t *caps = json_object_get(local, "capabilities");
        json_t *iso = json_array(), *backs = json_array();
        bool lv[3] = {false};
        char why[512] = "";
        int64_t t0 = mgr_now_ms();
        for (int id = SBX_BACKEND_NATIVE; id < _SBX_BACKEND_MAX; id++) {
                const sbx_backend *b = sbx_backend_get((sbx_backend_id) id);
                char reason[512] = "";
                if (!b || !b->implemented || !b->start ||
                        (b->probe && b->probe(reason, sizeof reason) < 0)) {
                        if (b && b->implemented && b->start && reason[0] && !why[0])
                                snprintf(why, sizeof why, "%s", reason);
                        continue;
                }
                json_array_append_new(backs, json_string(sbx_backend_to_string(b->id)));
                if ((int) b->level >= 0 && (int) b->level < 3)
                        lv[b->level] = true;
        }
        for (int i = 0; i < 3; i++)
                if (lv[i])
                        json_array_append_new(iso, json_string(levels[i]));
        json_object_set_new(caps, "isolation", iso);
        json_object_set_new(caps, "backends", backs);
        bool ok = json_array_size(backs) > 0;
        json_object_set_new(local, "health",
                json_pack("{s:b, s:o, s:I, s:s*}", "ok", ok, "checked_at", mgr_time_json(t0), "latency_ms",
                        (json_int_t) (mgr_now_ms() - t0), "reason",
                        ok ? NULL : (why[0] ? why : "no backend can hold a persistent sandbox here")));
        local_checked_ms = t0;
}

json_t *mgr_registry(sbx_mgr *m) {
        pthread_mutex_lock(&reg_lock);
        if (!registry)
                registry = json_pack("[o]", local_entry());
        if (mgr_now_ms() - local_checked_ms > LOCAL_TTL_MS)
                probe_local_locked(m);
        json_t *copy = json_deep_copy(registry), *x;
        pthread_mutex_unlock(&reg_lock);
        size_t i;
        json_array_foreach(copy, i, x) {
                const char *kind = json_string_value(json_object_get(x, "kind"));
                if (streq_ptr(kind, "compose-ssh")) /* its hosts are probed one by one (hosts.c) */
                        json_object_set_new(x, "health",
                                json_pack("{s:b, s:n, s:n, s:s}", "ok", true, "checked_at", "latency_ms",
                                        "reason", "its hosts are probed one by one (GET /v1/hosts)"));
                else if (streq_ptr(kind, "sandboxer") || streq_ptr(kind, "e2b") ||
                         streq_ptr(kind, "daytona")) {
                        if (!json_object_get(x, "health"))
                                json_object_set_new(x, "health",
                                        json_pack("{s:b, s:n, s:n, s:s}", "ok", false, "checked_at",
                                                "latency_ms", "reason", "not probed yet"));
                }
        }
        return copy;
}

json_t *mgr_registry_entry(const char *id) {
        json_t *x, *found = NULL;
        size_t i;
        pthread_mutex_lock(&reg_lock);
        json_array_foreach(registry, i,
                x) if (!found && streq_ptr(json_string_value(json_object_get(x, "id")), id)) found =
                json_deep_copy(x);
        pthread_mutex_unlock(&reg_lock);
        return found;
}

void mgr_registry_set_health(const char *id, json_t *health) {
        json_t *x;
        size_t i;
        pthread_mutex_lock(&reg_lock);
        json_array_foreach(registry, i, x) if (streq_ptr(json_string_value(json_object_get(x, "id")), id))
                json_object_set(x, "health", health);
        pthread_mutex_unlock(&reg_lock);
        json_decref(health);
}

unsigned sbx_ops_extensions(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        rp->code = 200;
        json_t *items = mgr_registry(m), *x;
        size_t i;
        json_array_foreach(items, i, x) { /* how it is reached is the site's business */
                json_object_del(x, "auth");
                json_object_del(x, "tls");
                json_object_del(x, "connect_to");
                json_object_del(x, "known_hosts");
        }
        rp->json = json_pack("{s:o}", "items", items);
        return 200;
}
