/* settle.c — what a request's reply need not wait for, done beside it by one thread, the
 * settler: the store write and event of a transition already made in memory
 * (mgr_set_state_after_reply: a remote create's ready state, an exec's active; any other
 * transition of that sandbox waits for it), an ended exec's record with its event and the move
 * back to ready (mgr_exec_end_later: a reader of the execs waits for it), and the fsync of
 * audit lines already written (mgr_audit on a request's thread). The reply's client sees the
 * same answer sooner; a reader through the API sees each change at once; what power loss may
 * cost is what it may cost of the store's WAL with synchronous=NORMAL, the last moment's
 * writes. A crash of serve loses none of it: the lines are written, a ready state not yet
 * stored is found provisioning at restart and adopted from the back end (remote.c), and an
 * exec's record not yet stored is taken in from the report file its supervisor keeps. Off a
 * request's thread everything is done in place. */
#include "daemon/mgr-internal.h"

#include "daemon/audit.h"

static __thread bool replying;

void sbx_mgr_request_begin(void) {
        replying = true;
}

void sbx_mgr_request_end(void) {
        replying = false;
}

bool mgr_replying(void) {
        return replying;
}

static void *settler_main(void *ud) {
        sbx_mgr *m = ud;
        for (;;) {
                pthread_mutex_lock(&m->settle_lock);
                while (!m->settle_n && !m->settle_audit && !m->settle_stop)
                        pthread_cond_wait(&m->settle_cond, &m->settle_lock);
                box *q[SETTLE_MAX];
                unsigned n = m->settle_n;
                memcpy(q, m->settle_q, n * sizeof *q);
                m->settle_n = 0;
                bool audit = m->settle_audit;
                m->settle_audit = false;
                bool done = m->settle_stop && !n && !audit;
                if (done) /* nothing is handed over after this: it is done in place */
                        m->settle_done = true;
                pthread_mutex_unlock(&m->settle_lock);
                if (done)
                        return NULL;
#if SBX_TEST_HOOKS
                /* Test hook (-Dtest_hooks=true only): the settler slow to store what is owed, for
                 * a test that a reader of the store still sees what a reply said. */
                const char *delay = getenv("SANDBOXER_TEST_SETTLE_DELAY_MS");
                if (delay && atoi(delay) > 0)
                        usleep((useconds_t) atoi(delay) * 1000);
#endif
                for (unsigned i = 0; i < n; i++)
                        mgr_settle_box(m, q[i]);
                sbx_error e = {0};
                char buf[1200];
                if (audit && m->audit_path && sbx_audit_sync(m->audit_path, &e) < 0)
                        sbx_log(SBX_LOG_ERROR, "audit_failed", "action", "fsync", "error",
                                sbx_error_format(&e, buf, sizeof buf), NULL);
        }
}

bool mgr_settle_later(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->settle_lock);
        bool ok = m->settle_started && !m->settle_done && m->settle_n < SETTLE_MAX;
        if (ok) {
                m->settle_q[m->settle_n++] = b;
                pthread_cond_signal(&m->settle_cond);
        }
        pthread_mutex_unlock(&m->settle_lock);
        return ok;
}

bool mgr_audit_sync_later(sbx_mgr *m) {
        pthread_mutex_lock(&m->settle_lock);
        bool ok = m->settle_started && !m->settle_done;
        if (ok) {
                m->settle_audit = true;
                pthread_cond_signal(&m->settle_cond);
        }
        pthread_mutex_unlock(&m->settle_lock);
        return ok;
}

int mgr_settler_start(sbx_mgr *m) {
        if (pthread_create(&m->settler, NULL, settler_main, m) != 0)
                return -EAGAIN;
        pthread_mutex_lock(&m->settle_lock);
        m->settle_started = true;
        pthread_mutex_unlock(&m->settle_lock);
        return 0;
}

/* What was handed over is done, then the settler ends. */
void mgr_settler_stop(sbx_mgr *m) {
        pthread_mutex_lock(&m->settle_lock);
        bool started = m->settle_started;
        m->settle_stop = true;
        pthread_cond_signal(&m->settle_cond);
        pthread_mutex_unlock(&m->settle_lock);
        if (started)
                pthread_join(m->settler, NULL);
}
