/* vm-image.h — what the microvm backend boots: the host's Debian kernel, made uncompressed (an ELF
 * vmlinux QEMU starts at its PVH entry: the compressed bzImage costs ~3.5 s more under TCG), and an
 * initramfs whose /init is the static sandboxer-init (the guest agent) with only the kernel modules
 * the guest needs. Both are made offline from files on this host (no download), cached under the
 * cache directory by the content of what they are made from, atomically (made aside, renamed into
 * place), and reused by every run until an input changes. And the host's TSC rate, which the guest
 * must be told (tsc_early_khz=): a wrong one runs the guest clock at the wrong speed. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* The modules the guest loads, by name as modules.dep has them (without .ko), in no particular
 * order: the builder adds their dependencies and writes the load order. */
#define SBX_VM_MODULES "virtio_mmio", "virtio_console", "9pnet_virtio", "9p"

/* In the initramfs: /init (sandboxer-init), /lib/modules/NAME.ko (flat, uncompressed), and the
 * load order, one file name per line, dependencies first. */
#define SBX_VM_MODULE_DIR "/lib/modules"
#define SBX_VM_MODULE_ORDER "/lib/modules/order"

typedef struct sbx_vm_image {
        char vmlinuz[PATH_MAX]; /* the kernel it came from (/boot/vmlinuz-RELEASE, or strict.kernel) */
        char release[128]; /* 6.1.0-56-amd64: its modules are /lib/modules/RELEASE */
        char kernel[PATH_MAX]; /* the cached uncompressed vmlinux (ELF) */
        char initrd[PATH_MAX]; /* the cached initramfs (newc cpio, uncompressed) */
        char digest[17]; /* the first 16 hex digits of the initramfs's key (for the report) */
        bool built; /* made by this call (a cache miss) rather than found */
        uint64_t build_ms; /* what making them took (0 on a hit) */
} sbx_vm_image;

/* The guest kernel: `path` when given (the policy's strict.kernel: a bzImage, or an ELF vmlinux
 * used as it is), else the newest /boot/vmlinuz-* whose /lib/modules/RELEASE exists (the package
 * linux-image-amd64). Its release: from the bzImage header's version string (or, for an ELF, the
 * "Linux version " string inside). 0, or -ENOENT with the story and the fix (apt-get install
 * linux-image-amd64, or set strict.kernel) in *e; -ENOEXEC when `path` is not a kernel image. */
int sbx_vm_kernel_find(
        const char *path, char *vmlinuz, size_t size, char *release, size_t rsize, sbx_error *e);

/* The image for kernel `path` (as sbx_vm_kernel_find) and the init binary open at init_fd
 * (sbx_backend_open_init(); read with pread, its offset left as it is): found in the cache, or
 * made there. An ELF vmlinux given as `path` is ret->kernel itself (not copied). A hit costs a few
 * stats (~0.2 ms): the content hashes of the vmlinuz and of the initramfs's inputs are memoised
 * under the files' identities (device, inode, size, mtime, ctime; modules.dep's for the modules).
 * 0, or -errno with *e (a missing module names the module and the modules directory; a corrupt
 * kernel says so). Making the image needs libarchive: in the static CLI, which is linked without
 * it, a miss fails with -EOPNOTSUPP (vm-image.c's stand-in for vm-unpack.c). */
int sbx_vm_image_get(const char *path, int init_fd, sbx_vm_image *ret, sbx_error *e);

/* The host's TSC rate in kHz: measured against CLOCK_MONOTONIC_RAW (rdtsc), cached per boot of
 * the host (keyed by /proc/sys/kernel/random/boot_id) so that a run does not pay the measurement.
 * 0, or -EOPNOTSUPP (not x86-64, no constant/nonstop TSC: the caller then leaves
 * tsc_early_khz= out and says so). */
int sbx_vm_tsc_khz(uint64_t *ret, sbx_error *e);
