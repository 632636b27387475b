/* vm-internal.h — what vm-image.c (the kernel, the cache, the TSC) and vm-initrd.c (modules.dep,
 * the newc cpio) share: decompression through libarchive, whole-file reads
 * and the atomic cache write. Not part of the library's interface. */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/io.h"

/* Decompress data (gzip, xz, zstd, lz4, bzip2, lzma: whatever libarchive's filters know) to fd
 * when fd >= 0, else appended to *out. `what` names the input in the error. 0 with the size
 * written in *ret_size (may be NULL), or -errno with *e. */
int vm_unpack(const void *data, size_t len, int fd, sbx_buf *out, uint64_t *ret_size, const char *what,
        sbx_error *e);

/* The whole file open at fd, read with pread (its offset is left as it is). 0 or -errno. */
int vm_read_fd(int fd, uint8_t **ret, size_t *ret_len);
int vm_read_path(const char *path, uint8_t **ret, size_t *ret_len);

/* Atomic cache entries: a temporary file in dir (".tmp-XXXXXX", its own prefix so that pruning
 * the entries never takes another run's file in the making) renamed to path, mode 0644. */
int vm_tmp_open(const char *dir, char tmp[static PATH_MAX]);
int vm_tmp_commit(int fd, const char *tmp, const char *path);

/* One module of the initramfs. */
typedef struct vm_module {
        char name[64]; /* as the kernel names it: '-' written '_' */
        char file[80]; /* its file in SBX_VM_MODULE_DIR: the stem of its path, ".ko" */
        char rel[256]; /* its path under /lib/modules/RELEASE, as modules.dep has it */
        uint8_t *data; /* uncompressed */
        size_t len;
} vm_module;

void vm_modules_free(vm_module *m, size_t n);

/* The modules `names` and their dependencies (modules.dep of moddir, /lib/modules/RELEASE),
 * dependencies first, each once, read and decompressed; a module built into the kernel
 * (modules.builtin) is left out. 0, or -errno with *e naming the module and the directory. */
int vm_modules_resolve(const char *moddir, const char *const *names, size_t n_names, vm_module **ret,
        size_t *ret_n, sbx_error *e);

/* The initramfs (newc cpio, uncompressed) into *out: the mount point directories, /dev/console,
 * /init (init), the modules and SBX_VM_MODULE_ORDER. 0 or -ENOMEM. */
int vm_initrd_write(const uint8_t *init, size_t init_len, const vm_module *m, size_t n, sbx_buf *out);
