/* skill.h — signed skills (DESIGN.md, "Signed skills"): a directory with a skill.yaml manifest
 * naming every file by its sha256 and a sandbox section, signed with Ed25519 (libsodium) over the
 * canonical JSON of everything but the signature; verified before anything runs.
 *
 *   name: hello                      # [a-z0-9._-], 1..64
 *   version: "1.0.0"
 *   entrypoint: [python3, main.py]   # run in the skill's directory (the sandbox's workspace)
 *   files: { main.py: SHA256 }       # every file of the directory but skill.yaml, no other
 *   sandbox: { memory_mb: 128, timeout_s: 10, allow_spawn: false,
 *              network: none | allowlist, allowed_hosts: [pypi.org] }
 *   signature: { key_id: HEX16, ed25519: BASE64 }
 *
 * Canonical JSON: the manifest as JSON (mappings objects, sequences arrays, plain integers
 * numbers, true/false booleans, everything else strings), keys sorted, no whitespace, non-ASCII
 * escaped (jansson: JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII). The skill's digest is its
 * sha256, hex.
 *
 * Keys: a secret key file "sandboxer-skill-key-v1 ed25519 BASE64(seed)" (mode 0600) and its
 * public key file "sandboxer-skill-pub-v1 ed25519 KEY_ID BASE64(pk)", KEY_ID the first 16 hex
 * digits of sha256(pk). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

typedef struct sbx_skill {
        char name[65];
        char version[65];
        char **entrypoint; /* strv */
        char **files; /* strv of "relpath=sha256", in the manifest's order */
        bool has_memory, has_timeout, has_allow_spawn;
        double memory_mb, timeout_s;
        bool allow_spawn;
        bool network_allowlist; /* network: allowlist */
        char **allowed_hosts; /* strv */
        char key_id[17]; /* "" unsigned */
        char digest[65]; /* sha256 of the canonical JSON */
        void *doc; /* json_t *: the manifest */
} sbx_skill;

sbx_skill *sbx_skill_free(sbx_skill *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(sbx_skill *, sbx_skill_free);

/* Parse DIR/skill.yaml (strictly: unknown keys and wrong types are errors, with the line). */
int sbx_skill_load(const char *dir, sbx_skill **ret, sbx_error *e);

/* A key pair: SECRET written 0600 (refused if it exists), SECRET.pub beside it. */
int sbx_skill_keygen(const char *secret_path, char key_id[17], sbx_error *e);

/* Sign DIR: list its files with their hashes in files:, sign with the secret key, and write
 * skill.yaml back (as YAML sandboxer writes it: comments are not kept). */
int sbx_skill_sign(const char *dir, const char *secret_path, sbx_skill **ret, sbx_error *e);

/* Verify DIR against the trusted public key files (NULL: none) and, when staging is not NULL,
 * copy each file into the empty directory staging as it is hashed — what runs is then exactly
 * what was verified, whatever happens to DIR afterwards. Unsigned is refused when
 * require_signature. -EPERM (bad or untrusted signature, unsigned), -EBADMSG (a changed,
 * missing or extra file), each naming the key or the file; -EINVAL for a malformed manifest. */
int sbx_skill_verify(const char *dir, char *const *trusted_keys, bool require_signature, const char *staging,
        sbx_skill **ret, sbx_error *e);

/* The skill's sandbox section as a profile (YAML text, extends profile.skill, on_violation: kill):
 * it may narrow profile.skill and may open egress only to its allowed_hosts (which the policy
 * must allow: checked when the profile is). base_memory_mb, base_timeout_s: profile.skill's, for
 * the narrowing check (0: unchecked). -EPERM naming what asks for more. */
int sbx_skill_profile(
        const sbx_skill *s, double base_memory_mb, double base_timeout_s, char **ret, sbx_error *e);
