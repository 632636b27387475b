/* surface.c — what the compat surfaces keep, kept by the manager: per sandbox (its sandbox-wide
 * environment and envd's access token, on the sandbox's record: gone with it), and per manager
 * (a surface's own table, e.g. E2B's processes: freed with the manager). See sandboxes.h. */
#include "daemon/mgr-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int sbx_mgr_surface_set(
        sbx_mgr *m, const char *id, const sbx_caller *who, json_t *env, char ret_token[static 65]) {
        ret_token[0] = 0;
        pthread_mutex_lock(&m->lock);
        box *b = mgr_box_find_locked(m, id, NULL);
        if (!b) {
                pthread_mutex_unlock(&m->lock);
                json_decref(env);
                return -ENOENT;
        }
        if (!b->surface_set) {
                unsigned char rnd[24];
                /* never a guessable token: left empty when there is no randomness (no envd access
                 * but by the peer's identity) */
                if (getrandom(rnd, sizeof rnd, 0) == (ssize_t) sizeof rnd)
                        for (size_t i = 0; i < sizeof rnd; i++)
                                snprintf(b->surface_token + 2 * i, 3, "%02x", rnd[i]);
                explicit_bzero(rnd, sizeof rnd);
                b->surface_who = *who;
                b->surface_set = true;
        }
        if (env) {
                json_decref(b->surface_env);
                b->surface_env = env;
        }
        snprintf(ret_token, 65, "%s", b->surface_token);
        pthread_mutex_unlock(&m->lock);
        return 0;
}

/* Constant time: the token is a secret. */
static bool token_eq(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        unsigned char d = la != lb;
        for (size_t i = 0; i < la && i < lb; i++)
                d |= (unsigned char) (a[i] ^ b[i]);
        return d == 0 && la > 0;
}

bool sbx_mgr_surface_get(
        sbx_mgr *m, const char *id, const char *token, sbx_caller *ret_who, json_t **ret_env) {
        pthread_mutex_lock(&m->lock);
        box *b = mgr_box_find_locked(m, id, NULL);
        bool ok = b && b->surface_set && (!token || token_eq(b->surface_token, token));
        if (ok && ret_who)
                *ret_who = b->surface_who;
        if (ok && ret_env)
                *ret_env = b->surface_env ? json_deep_copy(b->surface_env) : NULL;
        pthread_mutex_unlock(&m->lock);
        return ok;
}

void *sbx_mgr_surface_state(sbx_mgr *m, const char *name, void *(*make)(void), void (*drop)(void *)) {
        pthread_mutex_lock(&m->lock);
        void *s = NULL;
        size_t i;
        for (i = 0; i < ELEMENTSOF(m->surfaces) && m->surfaces[i].name; i++)
                if (streq(m->surfaces[i].name, name)) {
                        s = m->surfaces[i].state;
                        break;
                }
        if (!s && i < ELEMENTSOF(m->surfaces) && (s = make())) {
                m->surfaces[i].name = name;
                m->surfaces[i].state = s;
                m->surfaces[i].drop = drop;
        }
        pthread_mutex_unlock(&m->lock);
        return s;
}

void mgr_surfaces_free(sbx_mgr *m) {
        for (size_t i = 0; i < ELEMENTSOF(m->surfaces) && m->surfaces[i].name; i++)
                if (m->surfaces[i].drop)
                        m->surfaces[i].drop(m->surfaces[i].state);
}

bool sbx_mgr_surface_verify(sbx_mgr *m, char id[static 32], bool (*check)(void *ud, const char *token),
        void *ud, sbx_caller *ret_who, json_t **ret_env) {
        pthread_mutex_lock(&m->lock);
        box *found = NULL;
        for (box *b = m->boxes; b && !found; b = b->next)
                if ((!*id || streq(b->id, id)) && b->surface_set && b->surface_token[0] &&
                        check(ud, b->surface_token))
                        found = b;
        if (found) {
                snprintf(id, 32, "%s", found->id);
                if (ret_who)
                        *ret_who = found->surface_who;
                if (ret_env)
                        *ret_env = found->surface_env ? json_deep_copy(found->surface_env) : NULL;
        }
        pthread_mutex_unlock(&m->lock);
        return found != NULL;
}

int sbx_mgr_surface_rotate(sbx_mgr *m, const char *id, char ret_token[static 65]) {
        ret_token[0] = 0;
        unsigned char rnd[24];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                return -EIO;
        pthread_mutex_lock(&m->lock);
        box *b = mgr_box_find_locked(m, id, NULL);
        if (b && b->surface_set) {
                for (size_t i = 0; i < sizeof rnd; i++)
                        snprintf(b->surface_token + 2 * i, 3, "%02x", rnd[i]);
                snprintf(ret_token, 65, "%s", b->surface_token);
        }
        pthread_mutex_unlock(&m->lock);
        explicit_bzero(rnd, sizeof rnd);
        return ret_token[0] ? 0 : -ENOENT;
}
