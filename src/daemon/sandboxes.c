/* sandboxes.c — the manager: made, started, stopped, freed; its metrics. See sandboxes.h. */
#include "daemon/mgr-internal.h"

#include <curl/curl.h>

#include <sys/eventfd.h>
#include <sys/stat.h>
#include "basic/strv.h"

int sbx_mgr_new(sbx_store *store, const sbx_mgr_options *o, sbx_mgr **ret, sbx_error *e) {
        sbx_mgr *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->store = store;
        m->o = *o;
        pthread_mutex_init(&m->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_cond_init(&m->ev_cond, &ca);
        pthread_mutex_init(&m->settle_lock, NULL);
        pthread_cond_init(&m->settle_cond, NULL);
        pthread_cond_init(&m->hosts_cond, &ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&m->workers_cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&m->spawner_lock, NULL);
        m->spawner_fd = -1;
        m->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->stop_efd < 0) {
                int r = -errno;
                sbx_mgr_free(m);
                return r;
        }
        m->state_dir = strdup(o->state_dir);
        if (o->snapshot_dir)
                m->snapshot_dir = strdup(o->snapshot_dir);
        else if (o->state_dir && asprintf(&m->snapshot_dir, "%s/snapshots", o->state_dir) < 0)
                m->snapshot_dir = NULL;
        m->runtime_dir = strdup(o->runtime_dir);
        /* sandboxer-supervise next to this program (build tree, bin → libexec), else the verb */
        char lean[PATH_MAX + 64];
        const char *slash = strrchr(o->exe, '/');
        int dl = slash ? (int) (slash - o->exe) : 0;
        for (int i = 0; i < 2 && !m->exe; i++) {
                snprintf(lean, sizeof lean, "%.*s%s", dl, o->exe,
                        i == 0 ? "/sandboxer-supervise" : "/../libexec/sandboxer/sandboxer-supervise");
                if (access(lean, X_OK) == 0) {
                        m->exe = strdup(lean);
                        m->supervise_exe_lean = true;
                }
        }
        if (!m->exe && access(SBX_LIBEXECDIR "/sandboxer-supervise", X_OK) == 0) {
                m->exe = strdup(SBX_LIBEXECDIR "/sandboxer-supervise");
                m->supervise_exe_lean = true;
        }
        if (!m->exe)
                m->exe = strdup(o->exe);
        m->policy_file = o->policy_file ? strdup(o->policy_file) : NULL;
        m->secrets_dir = o->secrets_dir ? strdup(o->secrets_dir) : NULL;
        m->audit_path = o->audit_path ? strdup(o->audit_path) : NULL;
        m->domain = o->domain && *o->domain ? strdup(o->domain) : NULL;
        m->revoked = json_object();
        /* pooled: the profiles that load and name no secrets (resolved at create, not ahead) */
        char *const dflt[] = {(char *) "profile.default", NULL};
        for (char *const *w = o->warm_profiles ? o->warm_profiles : dflt; o->warm_pool && *w; w++) {
                sbx_profile *wp = NULL;
                int r = sbx_profile_load(*w, &wp, e);
                if (r < 0) {
                        r = sbx_error_wrap(e, r, "warm profile %s", *w);
                        sbx_mgr_free(m);
                        return r;
                }
                bool secret = wp->secrets && wp->secrets[0];
                sbx_profile_free(wp);
                if (secret) {
                        r = sbx_error_set(e, EINVAL, "warm pool",
                                "profile %s names secrets: it cannot be pooled (secrets are resolved at "
                                "create)",
                                *w);
                        sbx_mgr_free(m);
                        return r;
                }
                (void) strv_extend(&m->warm_profiles, *w);
        }
        if (!m->state_dir || !m->runtime_dir || !m->exe || !m->snapshot_dir) {
                sbx_mgr_free(m);
                return -ENOMEM;
        }
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/sandboxes", m->runtime_dir);
        /* 0711 as root, as the library makes it: the landlock backend's scratch lives below it and
         * its run_as user must be able to pass through */
        if (mkdir(m->runtime_dir, geteuid() == 0 ? 0711 : 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", m->runtime_dir);
                sbx_mgr_free(m);
                return r;
        }
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", p);
                sbx_mgr_free(m);
                return r;
        }
        snprintf(p, sizeof p, "%s/sandboxes", m->state_dir);
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
                int r = sbx_error_set(e, errno, "sandboxes", "cannot create %s: %m", p);
                sbx_mgr_free(m);
                return r;
        }
        m->last_seq = sbx_store_event_last(store);
        *ret = m;
        return 0;
}

int sbx_mgr_start(sbx_mgr *m, sbx_error *e) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%.4000s/policy.sha256", m->state_dir);
        FILE *f = fopen(path, "re");
        if (f) {
                if (fscanf(f, "%64s", m->policy_sha) != 1)
                        m->policy_sha[0] = 0;
                fclose(f);
        }
        sbx_policy *pol = NULL;
        if (sbx_policy_load(m->policy_file, &pol, e) < 0)
                return -EINVAL;
        mgr_policy_seen(m, pol);
        m->credits = m->o.credits || pol->billing_enforce;
        snprintf(m->currency, sizeof m->currency, "%s",
                pol->billing_currency[0] ? pol->billing_currency : "USD");
        m->hold_s = pol->billing_hold_s;
        m->grace_s = pol->billing_grace_s;
        m->meter_interval_s = m->o.meter_interval_s > 0 ? m->o.meter_interval_s : 15;
        sbx_policy_free(pol);
        (void) curl_global_init(CURL_GLOBAL_DEFAULT); /* before any thread: the webhooks' */
        /* the supervisors' spawner, while this process has few descriptors (spawner.c) */
        (void) mgr_spawner_start(m);
        if (mgr_registry_load(m->o.registry_dir, e) < 0) /* before the reconcile: remote ones ask there */
                return -EINVAL;
        mgr_reconcile(m);
        mgr_credit_reconcile(m); /* after: the live ones are known */
        mgr_deals_start(m); /* each deal where it was */
        mgr_billing_start(m);
        mgr_snapshots_reconcile(m); /* what a snapshot killed mid-way left */
        mgr_webhooks_load(m);
        if (mgr_settler_start(m) < 0)
                return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the settler thread");
        if (pthread_create(&m->webhooks, NULL, mgr_webhooks_main, m) != 0)
                return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the webhooks thread");
        m->webhooks_started = true;
        if (pthread_create(&m->hosts_thread, NULL, mgr_hosts_main, m) != 0)
                return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the hosts thread");
        m->hosts_started = true;
        if (pthread_create(&m->reaper, NULL, mgr_reaper_main, m) != 0)
                return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the reaper thread");
        m->reaper_started = true;
        if (m->o.warm_pool > 0) {
                if (pthread_create(&m->filler, NULL, mgr_filler_main, m) != 0)
                        return sbx_error_set(e, EAGAIN, "sandboxes", "cannot start the warm pool's thread");
                m->filler_started = true;
        }
        return 0;
}

void sbx_mgr_stop(sbx_mgr *m) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->stopping = true;
        pthread_cond_broadcast(&m->ev_cond);
        pthread_cond_broadcast(&m->hosts_cond);
        pthread_mutex_unlock(&m->lock);
        (void) eventfd_write(m->stop_efd, 1);
        mgr_deals_changed(); /* deals.c's waits */
}

sbx_mgr *sbx_mgr_free(sbx_mgr *m) {
        (void) sbx_mgr_close(m);
        return NULL;
}

int sbx_mgr_close(sbx_mgr *m) {
        if (!m)
                return 0;
        sbx_mgr_stop(m);
        /* the detached threads first: each ends once its client or its sandbox lets go (an exec
         * waiting on its sandbox is released by stop_efd; a stream writer by its closed pipe) */
        pthread_mutex_lock(&m->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 10;
        while (m->workers > 0)
                if (pthread_cond_timedwait(&m->workers_cond, &m->lock, &until) == ETIMEDOUT)
                        break;
        unsigned left = m->workers;
        pthread_mutex_unlock(&m->lock);
        if (left > 0) {
                /* freeing under a running thread would be a use-after-free: the process is on its
                 * way out, so the manager is left to it */
                char n[16];
                snprintf(n, sizeof n, "%u", left);
                sbx_log(SBX_LOG_WARNING, "stop_threads_left", "count", n, NULL);
                return -EBUSY;
        }
        if (m->reaper_started)
                pthread_join(m->reaper, NULL);
        if (m->filler_started)
                pthread_join(m->filler, NULL);
        if (m->webhooks_started)
                pthread_join(m->webhooks, NULL);
        if (m->hosts_started)
                pthread_join(m->hosts_thread, NULL);
        while (m->pool) {
                box *b = m->pool;
                m->pool = b->next;
                mgr_sv_stop(m, b);
                mgr_remove_dir(b);
                mgr_box_free(b);
        }
        strv_free(m->warm_profiles);
        mgr_settler_stop(m); /* what it holds is stored first; from here all is done in place */
        if (m->o.stop_sandboxes)
                for (;;) {
                        pthread_mutex_lock(&m->lock);
                        box *b = m->boxes;
                        if (b)
                                b->refs++;
                        pthread_mutex_unlock(&m->lock);
                        if (!b)
                                break;
                        mgr_destroy_box(m, b, "server_stop");
                        mgr_box_put(m, b);
                }
        else
                while (m->boxes) {
                        box *b = m->boxes;
                        m->boxes = b->next;
                        if (--b->refs == 0)
                                mgr_box_free(b);
                }
        mgr_spawner_stop(m);
        free(m->state_dir);
        free(m->snapshot_dir);
        free(m->runtime_dir);
        free(m->exe);
        free(m->policy_file);
        free(m->secrets_dir);
        free(m->audit_path);
        free(m->domain);
        json_decref(m->revoked);
        explicit_bzero(m->port_key, sizeof m->port_key);
        safe_close(m->stop_efd);
        mgr_surfaces_free(m);
        free(m);
        return 0;
}

void sbx_mgr_metrics(sbx_mgr *m, FILE *f) {
        static const sbx_state states[] = {SBX_STATE_REQUESTED, SBX_STATE_PROVISIONING, SBX_STATE_READY,
                SBX_STATE_ACTIVE, SBX_STATE_EXPIRED, SBX_STATE_FAILED, SBX_STATE_DESTROYING};
        unsigned counts[_SBX_STATE_MAX] = {0}, running = 0;
        pthread_mutex_lock(&m->lock);
        for (box *b = m->boxes; b; b = b->next) {
                if (b->state >= 0 && b->state < _SBX_STATE_MAX)
                        counts[b->state]++;
                running += b->execs_running;
        }
        pthread_mutex_unlock(&m->lock);
        fputs("# HELP sandboxer_sandboxes Sandboxes alive, by state.\n# TYPE sandboxer_sandboxes gauge\n",
                f);
        for (size_t i = 0; i < ELEMENTSOF(states); i++)
                fprintf(f, "sandboxer_sandboxes{state=\"%s\"} %u\n", sbx_state_to_string(states[i]),
                        counts[states[i]]);
        fprintf(f,
                "# HELP sandboxer_execs_running Execs running now.\n# TYPE sandboxer_execs_running gauge\n"
                "sandboxer_execs_running %u\n",
                running);
        fprintf(f,
                "# HELP sandboxer_sandboxes_created_total Sandboxes created.\n# TYPE "
                "sandboxer_sandboxes_created_total "
                "counter\nsandboxer_sandboxes_created_total %llu\n"
                "# HELP sandboxer_sandboxes_destroyed_total Sandboxes destroyed.\n# TYPE "
                "sandboxer_sandboxes_destroyed_total counter\nsandboxer_sandboxes_destroyed_total %llu\n"
                "# HELP sandboxer_sandboxes_failed_total Sandboxes that failed (provision, supervisor "
                "lost).\n"
                "# TYPE sandboxer_sandboxes_failed_total counter\nsandboxer_sandboxes_failed_total %llu\n"
                "# HELP sandboxer_sandboxes_expired_total Sandboxes expired (TTL, idle).\n# TYPE "
                "sandboxer_sandboxes_expired_total counter\nsandboxer_sandboxes_expired_total %llu\n"
                "# HELP sandboxer_sandboxes_readopted_total Sandboxes re-adopted after a restart.\n# TYPE "
                "sandboxer_sandboxes_readopted_total counter\nsandboxer_sandboxes_readopted_total %llu\n"
                "# HELP sandboxer_execs_total Execs finished.\n# TYPE sandboxer_execs_total counter\n"
                "sandboxer_execs_total %llu\n"
                "# HELP sandboxer_warm_pool_used_total Creates served from the warm pool.\n# TYPE "
                "sandboxer_warm_pool_used_total counter\nsandboxer_warm_pool_used_total %llu\n",
                (unsigned long long) atomic_load(&m->n_created),
                (unsigned long long) atomic_load(&m->n_destroyed),
                (unsigned long long) atomic_load(&m->n_failed),
                (unsigned long long) atomic_load(&m->n_expired),
                (unsigned long long) atomic_load(&m->n_readopted),
                (unsigned long long) atomic_load(&m->n_execs),
                (unsigned long long) atomic_load(&m->n_warm_used));
        mgr_meters_prometheus(m, f);
}
