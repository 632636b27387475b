/* store-deals.h — the rows of deals between nodes (deals.c): peers, and each deal this node is the
 * provider or the requester of. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "daemon/store.h"

typedef struct sbx_store_peer {
        char node_id[40];
        char public_key[64];
        char url[1024];
        char extension[72];
        int64_t credit_limit; /* millionths */
        int64_t created_at;
} sbx_store_peer;

int sbx_store_peer_put(sbx_store *s, const sbx_store_peer *p);
/* 0, -ENOENT */
int sbx_store_peer_get(sbx_store *s, const char *node_id, sbx_store_peer *ret);
int sbx_store_peer_delete(sbx_store *s, const char *node_id);
int sbx_store_peers(sbx_store *s, void (*fn)(void *ud, const sbx_store_peer *p), void *ud);

typedef struct sbx_store_deal {
        char deal_id[40], role[12], peer[40], tenant[128], state[16], intent[12], accept[8];
        char *quote_json, *requester_sig, *files_json, *reason, *result_json;
        int64_t amount, attempts, created_at, updated_at;
} sbx_store_deal;

void sbx_store_deal_clear(sbx_store_deal *d);
/* 0, -EEXIST (that deal id is known: a replay), -errno */
int sbx_store_deal_insert(sbx_store *s, const sbx_store_deal *d);
/* 0, -ENOENT */
int sbx_store_deal_get(sbx_store *s, const char *deal_id, sbx_store_deal *ret);
/* Set state (and reason, NULL: none); result_json, intent: NULL keeps them; amount < 0 keeps it;
 * attempts_add added to attempts. Only when the row's state is `from` (NULL: any): 1 changed, 0
 * not (another state now), -errno. */
int sbx_store_deal_set(sbx_store *s, const char *deal_id, const char *from, const char *state,
        const char *reason, const char *result_json, const char *intent, int64_t amount, int attempts_add);
/* Deals of role (NULL: both) in state (NULL: any), oldest first, at most limit: fn(ud, d). */
int sbx_store_deals(sbx_store *s, const char *role, const char *state, int limit,
        void (*fn)(void *ud, const sbx_store_deal *d), void *ud);
/* A provider's exposure to peer: the amounts of its deals whose intent is pending (millionths). */
int64_t sbx_store_deals_pending(sbx_store *s, const char *peer);
