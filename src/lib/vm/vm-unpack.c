/* vm-unpack.c — decompression for the microvm image (the kernel's payload, compressed modules)
 * through libarchive's filters: gzip, xz, zstd, lz4, bzip2, lzma alike. A file of its own, linked
 * where libarchive is (libsandboxer_dep, the shared library) and not into the static CLI, which
 * gets vm-image.c's weak stand-in. */
#include "vm/vm-internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

int vm_unpack(const void *data, size_t len, int fd, sbx_buf *out, uint64_t *ret_size, const char *what,
        sbx_error *e) {
        struct archive *a = archive_read_new();
        struct archive_entry *ent;
        uint64_t total = 0;
        int r = 0;
        if (!a)
                return -ENOMEM;
        /* "raw": the data is one compressed stream, not an archive */
        (void) archive_read_support_filter_all(a);
        (void) archive_read_support_format_raw(a);
        _cleanup_free_ uint8_t *chunk = malloc(1 << 18);
        if (!chunk)
                r = -ENOMEM;
        else if (archive_read_open_memory(a, data, len) != ARCHIVE_OK ||
                 archive_read_next_header(a, &ent) != ARCHIVE_OK)
                r = sbx_error_set(e, EBADMSG, "microvm", "cannot decompress %s: %s", what,
                        archive_error_string(a) ? archive_error_string(a) : "unknown format");
        while (r >= 0) {
                la_ssize_t k = archive_read_data(a, chunk, 1 << 18);
                if (k == 0)
                        break;
                if (k < 0) {
                        r = sbx_error_set(e, EBADMSG, "microvm", "cannot decompress %s: %s (corrupt?)", what,
                                archive_error_string(a) ? archive_error_string(a) : "read error");
                        break;
                }
                r = fd >= 0 ? sbx_write_all(fd, chunk, (size_t) k) : sbx_buf_put(out, chunk, (size_t) k);
                if (r < 0)
                        r = sbx_error_set(
                                e, r, "microvm", "cannot write the decompressed %s: %s", what, strerror(-r));
                total += (uint64_t) k;
        }
        archive_read_free(a);
        if (r >= 0 && ret_size)
                *ret_size = total;
        return r;
}
