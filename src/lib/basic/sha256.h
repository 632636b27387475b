/* sha256.h — SHA-256 (FIPS 180-4) and HMAC-SHA-256, libc only: digests of policy files for reports
 * and audit, the control plane's port tokens. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

typedef struct sha256_ctx {
        uint32_t h[8];
        uint64_t len; /* bytes hashed so far */
        uint8_t buf[64];
        size_t n_buf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t ret_digest[static SHA256_DIGEST_SIZE]);

/* One-shot: lower-case hex digest of data into ret_hex (65 bytes with the NUL). */
void sha256_hex(const void *data, size_t len, char ret_hex[static 65]);

/* HMAC-SHA-256 (RFC 2104): signed preview URLs and port tokens. */
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
        uint8_t ret_mac[static SHA256_DIGEST_SIZE]);
