/* node.c — this server's identity as a node (DESIGN.md, "Meters, credits and deals"): an Ed25519
 * key made at the first start (state dir: node.key, the 32-byte seed, 0600) and the id derived
 * from it, "node_" + the first 16 bytes of SHA-256(public key) in hex. A front names itself with
 * it when it provisions on another node (remote.c: the back end keeps it on the sandbox, so a
 * front that died mid-provision finds its orphans), and a node refuses a create that names
 * itself as the front (a route that loops). GET /v1/node answers {node_id, public_key, url}. */
#include "daemon/mgr-internal.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/random.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/sha256.h"

static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;
static char node_id[40];
static unsigned char node_pk[crypto_sign_PUBLICKEYBYTES];
static unsigned char *node_sk; /* sodium_malloc'd (guarded, locked): what signs quotes and results */

/* The seed from the state dir, or a new one written there (0600, temp + rename). */
static bool load_locked(sbx_mgr *m) {
        if (node_id[0])
                return true;
        char path[4200], tmp[4300];
        unsigned char seed[crypto_sign_SEEDBYTES], sk[crypto_sign_SECRETKEYBYTES];
        snprintf(path, sizeof path, "%.4000s/node.key", m->state_dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        bool ok;
        if (fd >= 0) {
                ok = read(fd, seed, sizeof seed) == (ssize_t) sizeof seed;
                close(fd);
        } else {
                ok = getrandom(seed, sizeof seed, 0) == (ssize_t) sizeof seed;
                snprintf(tmp, sizeof tmp, "%s.tmp", path);
                fd = ok ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
                ok = fd >= 0 && write(fd, seed, sizeof seed) == (ssize_t) sizeof seed && fsync(fd) == 0;
                if (fd >= 0)
                        close(fd);
                if (!ok || rename(tmp, path) < 0) {
                        (void) unlink(tmp);
                        ok = false;
                }
        }
        if (!ok || sodium_init() < 0) {
                sodium_memzero(seed, sizeof seed);
                sbx_log(SBX_LOG_ERROR, "node_key_failed", "path", path, NULL);
                return false;
        }
        crypto_sign_seed_keypair(node_pk, sk, seed);
        sodium_memzero(seed, sizeof seed);
        if (!node_sk)
                node_sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
        if (node_sk)
                memcpy(node_sk, sk, sizeof sk);
        sodium_memzero(sk, sizeof sk);
        char hex[65];
        sha256_hex(node_pk, sizeof node_pk, hex);
        snprintf(node_id, sizeof node_id, "node_%.32s", hex);
        return true;
}

const char *mgr_node_id(sbx_mgr *m) {
        pthread_mutex_lock(&node_lock);
        bool ok = load_locked(m);
        pthread_mutex_unlock(&node_lock);
        return ok ? node_id : NULL;
}

bool mgr_node_sign(sbx_mgr *m, const void *msg, size_t len, char sig_b64[static 96]) {
        unsigned char sig[crypto_sign_BYTES];
        pthread_mutex_lock(&node_lock);
        bool ok = load_locked(m) && node_sk && crypto_sign_detached(sig, NULL, msg, len, node_sk) == 0;
        pthread_mutex_unlock(&node_lock);
        _cleanup_free_ char *b = ok ? sbx_base64_encode(sig, sizeof sig) : NULL;
        if (!b || strlen(b) >= 96)
                return false;
        memcpy(sig_b64, b, strlen(b) + 1);
        return true;
}

bool mgr_node_public_key(sbx_mgr *m, char pk_b64[static 64]) {
        pthread_mutex_lock(&node_lock);
        bool ok = load_locked(m);
        pthread_mutex_unlock(&node_lock);
        _cleanup_free_ char *b = ok ? sbx_base64_encode(node_pk, sizeof node_pk) : NULL;
        if (!b || strlen(b) >= 64)
                return false;
        memcpy(pk_b64, b, strlen(b) + 1);
        return true;
}

bool mgr_key_decode(const char *pk_b64, unsigned char pk[static 32]) {
        size_t n = 0;
        _cleanup_free_ char *raw = NULL;
        if (!pk_b64 || sbx_base64_decode(pk_b64, strlen(pk_b64), false, &raw, &n) < 0 ||
                n != crypto_sign_PUBLICKEYBYTES)
                return false;
        memcpy(pk, raw, n);
        return true;
}

void mgr_key_node_id(const unsigned char pk[static 32], char id[static 40]) {
        char hex[65];
        sha256_hex(pk, crypto_sign_PUBLICKEYBYTES, hex);
        snprintf(id, 40, "node_%.32s", hex);
}

bool mgr_sig_verify(const char *pk_b64, const void *msg, size_t len, const char *sig_b64) {
        unsigned char pk[crypto_sign_PUBLICKEYBYTES];
        size_t n = 0;
        if (!mgr_key_decode(pk_b64, pk) || !sig_b64 || sodium_init() < 0)
                return false;
        _cleanup_free_ char *sig = NULL;
        if (sbx_base64_decode(sig_b64, strlen(sig_b64), false, &sig, &n) < 0 || n != crypto_sign_BYTES)
                return false;
        return crypto_sign_verify_detached((const unsigned char *) sig, msg, len, pk) == 0;
}

bool mgr_node_id_ok(const char *s) {
        if (!s || strncmp(s, "node_", 5) != 0 || strlen(s) != 37)
                return false;
        for (const char *p = s + 5; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

unsigned sbx_ops_node(sbx_mgr *m, const sbx_caller *who, sbx_mgr_reply *rp) {
        (void) who;
        *rp = (sbx_mgr_reply){.stream_fd = -1};
        const char *id = mgr_node_id(m);
        if (!id)
                return mgr_reply_err(rp, 503, "unavailable", NULL,
                        "this node has no key: its state directory could not hold node.key (see the log)");
        _cleanup_free_ char *pk = sbx_base64_encode(node_pk, sizeof node_pk);
        rp->json = json_pack(
                "{s:s, s:s, s:s?}", "node_id", id, "public_key", pk ? pk : "", "url", m->o.public_url);
        rp->code = 200;
        return 200;
}
