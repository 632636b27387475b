/* rm-rf.h — removing a directory tree we made, safely: never following symlinks, never leaving
 * the file system, making unreadable directories readable on the way (a sandbox may chmod 000
 * what it created). */
#pragma once

/* Remove path and everything below it. 0, or the first -errno met (removal goes on past it). */
int sbx_rm_rf(const char *path);

/* The same for name in the directory dirfd (never following a symlink there either). */
int sbx_rm_rf_at(int dirfd, const char *name);
