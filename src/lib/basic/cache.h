/* cache.h — the per-user cache directory that keeps what one run computed for the next ones
 * (compiled seccomp programs, parsed policy and profile files), and the identity of the code
 * that computed it: an entry is keyed by that identity, so a rebuild never reads an older
 * build's entries. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Create dir (mode) if missing; 0, or -EPERM when what is there is not a directory of ours that
 * only we can write. */
int sbx_own_dir(const char *dir, mode_t mode);
/* The same, making its missing ancestors first with parent_mode (as systemd makes the parents of
 * a StateDirectory= or RuntimeDirectory=): for a directory a user named that is not there yet. */
int sbx_own_dir_p(const char *dir, mode_t mode, mode_t parent_mode);

/* The cache dir: $SANDBOXER_CACHE_DIR, /var/cache/sandboxer as root, $XDG_CACHE_HOME/sandboxer
 * or ~/.cache/sandboxer (the base made 0700 when missing); created 0755 as root (the bwrap
 * backend keeps a copy of the init there for run_as to reach), else 0700. -ENOENT without a
 * place, -EPERM when what is there is not ours alone. */
int sbx_cache_dir(char *buf, size_t size);

/* The code that computes cache entries: the file holding the library, or the program itself
 * when linked statically (device, inode, size, mtime), and the version. Looked up once per
 * process. -errno when it cannot be known (then nothing is cached). */
typedef struct sbx_code_id {
        uint64_t dev, ino, size;
        int64_t mtime_ns;
        char version[32];
} sbx_code_id;
int sbx_code_identity(sbx_code_id *ret);

/* Remove the entries NAME_PREFIX* of dir unused for a week, and beyond `keep` the oldest. */
void sbx_cache_prune(const char *dir, const char *name_prefix, size_t keep);

/* Read a whole cache entry: a regular file of ours that others cannot write, at most max
 * bytes. 0 with *ret (malloc'ed) and *ret_len, or -errno. */
int sbx_cache_read(const char *path, size_t max, char **ret, size_t *ret_len);

/* Write an entry atomically (a temporary file renamed over it), mode 0600, after pruning its
 * directory's NAME_PREFIX* entries to `keep` (sbx_cache_prune(); an entry is written on a miss
 * only, so this is where the cache is kept small). 0 or -errno. */
int sbx_cache_store(const char *path, const void *data, size_t len, const char *name_prefix, size_t keep);
