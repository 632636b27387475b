/* test-vm-image.c — the microvm guest image (src/lib/vm): the host's kernel made an ELF vmlinux,
 * the initramfs parsed back as the kernel would (newc), the cache found again, bad kernels refused
 * with a reason, and the TSC rate. Skips when /boot has no kernel with its modules. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/rm-rf.h"
#include "vm/vm-image.h"
#include "vm/vm-internal.h"
#include "tap.h"

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint8_t *slurp(const char *path, size_t *ret_len) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return NULL;
        uint8_t *p = malloc((size_t) st.st_size + 1);
        size_t got = 0;
        while (p && got < (size_t) st.st_size) {
                ssize_t k = read(fd, p + got, (size_t) st.st_size - got);
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        close(fd);
        *ret_len = got;
        return p;
}

static void spit(const char *path, const void *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
                (void) !write(fd, data, len);
                close(fd);
        }
}

/* One newc entry parsed back. */
typedef struct entry {
        char name[256];
        unsigned mode, rmajor, rminor;
        const uint8_t *data;
        size_t len;
} entry;

static unsigned hexfield(const uint8_t *h, int i) {
        char f[9];
        memcpy(f, h + 6 + 8 * i, 8);
        f[8] = 0;
        return (unsigned) strtoul(f, NULL, 16);
}

/* The entries of a newc archive; -1 when it is malformed (bad magic, past the end, no trailer). */
static int cpio_parse(const uint8_t *p, size_t len, entry *ret, int max) {
        size_t off = 0;
        for (int n = 0; n < max; n++) {
                if (off + 110 > len || memcmp(p + off, "070701", 6) != 0)
                        return -1;
                entry *en = &ret[n];
                unsigned nl = hexfield(p + off, 11);
                en->mode = hexfield(p + off, 1);
                en->len = hexfield(p + off, 6);
                en->rmajor = hexfield(p + off, 9);
                en->rminor = hexfield(p + off, 10);
                if (nl == 0 || nl > sizeof en->name || off + 110 + nl > len || p[off + 110 + nl - 1])
                        return -1;
                memcpy(en->name, p + off + 110, nl);
                off = (off + 110 + nl + 3) & ~(size_t) 3;
                if (off + en->len > len)
                        return -1;
                en->data = p + off;
                off = (off + en->len + 3) & ~(size_t) 3;
                if (streq(en->name, "TRAILER!!!"))
                        return n;
        }
        return -1;
}

static const entry *cpio_find(const entry *en, int n, const char *name) {
        for (int i = 0; i < n; i++)
                if (streq(en[i].name, name))
                        return &en[i];
        return NULL;
}

static int order_pos(const char *order, const char *file) {
        char line[128];
        int pos = 0;
        for (const char *p = order; *p; pos++) {
                size_t n = strcspn(p, "\n");
                snprintf(line, sizeof line, "%.*s", (int) n, p);
                if (streq(line, file))
                        return pos;
                p += n + (p[n] == '\n');
        }
        return -1;
}

static void test_initrd(const sbx_vm_image *img, const char *init_path) {
        size_t len = 0, init_len = 0;
        _cleanup_free_ uint8_t *p = slurp(img->initrd, &len), *init = slurp(init_path, &init_len);
        static entry en[128];
        int n = p ? cpio_parse(p, len, en, 128) : -1;
        if (!ok(n > 0, "the initrd parses as newc with a trailer (%d entries, %zu bytes)", n, len))
                return;
        const entry *i = cpio_find(en, n, "init");
        ok(i && i->mode == (S_IFREG | 0755) && i->len == init_len && memcmp(i->data, init, init_len) == 0,
                "/init is the init binary, mode 0755");
        const entry *c = cpio_find(en, n, "dev/console");
        ok(c && S_ISCHR(c->mode) && c->rmajor == 5 && c->rminor == 1, "/dev/console is char 5,1");
        static const char *const dirs[] = {"dev", "proc", "sys", "tmp", "mnt", "newroot", "lib/modules"};
        bool dirs_ok = true;
        for (size_t k = 0; k < ELEMENTSOF(dirs); k++) {
                const entry *d = cpio_find(en, n, dirs[k]);
                dirs_ok = dirs_ok && d && S_ISDIR(d->mode);
        }
        ok(dirs_ok, "the mount point directories are there");

        const entry *o = cpio_find(en, n, SBX_VM_MODULE_ORDER + 1);
        if (!ok(o && o->len > 0, "the module order file is there"))
                return;
        _cleanup_free_ char *order = strndup((const char *) o->data, o->len);
        _cleanup_free_ char *shown = strdup(order);
        for (char *q = shown; q && *q; q++)
                if (*q == '\n')
                        *q = ' ';
        diag("order: %s", shown);
        bool all = true;
        int lines = 0;
        for (const char *q = order; *q; lines++) {
                size_t k = strcspn(q, "\n");
                char name[300];
                snprintf(name, sizeof name, "%s/%.*s", SBX_VM_MODULE_DIR + 1, (int) k, q);
                const entry *m = cpio_find(en, n, name);
                all = all && m && m->len > 4 && memcmp(m->data, "\177ELF", 4) == 0 &&
                      order_pos(order, name + strlen(SBX_VM_MODULE_DIR)) == lines;
                q += k + (q[k] == '\n');
        }
        ok(all && lines >= 4, "every module of the order is in the archive, an ELF, once (%d)", lines);
        static const char *const before[][2] = {{"netfs.ko", "9p.ko"}, {"fscache.ko", "9p.ko"},
                {"9pnet.ko", "9p.ko"}, {"9pnet.ko", "9pnet_virtio.ko"}, {"virtio.ko", "virtio_mmio.ko"},
                {"virtio_ring.ko", "virtio.ko"}, {"virtio.ko", "virtio_console.ko"},
                {"virtio.ko", "9pnet_virtio.ko"}};
        for (size_t k = 0; k < ELEMENTSOF(before); k++) {
                int a = order_pos(order, before[k][0]), b = order_pos(order, before[k][1]);
                /* a module built into this kernel is not in the list: no order to check */
                if (a < 0 || b < 0)
                        skip(1, "module built in");
                else
                        ok(a < b, "%s before %s", before[k][0], before[k][1]);
        }
}

static bool no_tmp_left(const char *dir) {
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q '^[.]tmp-'", dir);
        return system(cmd) != 0;
}

static void test_bad_kernels(const char *base, const char *vmlinuz, int init_fd) {
        char path[PATH_MAX], vz[PATH_MAX], rel[128];
        sbx_error e = {0};
        sbx_vm_image img;
        snprintf(path, sizeof path, "%s/notakernel", base);
        char junk[8192];
        memset(junk, 'x', sizeof junk);
        spit(path, junk, sizeof junk);
        is_int(sbx_vm_kernel_find(path, vz, sizeof vz, rel, sizeof rel, &e), -ENOEXEC,
                "a non-kernel is refused");
        ok(strstr(e.message, "not a Linux kernel") && strstr(e.message, "strict.kernel"),
                "... saying why: %s", e.message);
        e = (sbx_error){0};
        is_int(sbx_vm_image_get(path, init_fd, &img, &e), -ENOEXEC, "no image of a non-kernel");

        size_t len = 0;
        _cleanup_free_ uint8_t *k = slurp(vmlinuz, &len);
        if (!k || len < 1 << 20) {
                skip(4, "kernel unreadable");
                return;
        }
        snprintf(path, sizeof path, "%s/truncated", base);
        spit(path, k, 65536);
        e = (sbx_error){0};
        ok(sbx_vm_image_get(path, init_fd, &img, &e) < 0 && strstr(e.message, "truncated"),
                "a truncated bzImage is refused: %s", e.message);
        /* the payload damaged in its middle: the decompressor's check fails */
        for (size_t i = len / 2; i < len / 2 + 4096; i++)
                k[i] ^= 0x5a;
        snprintf(path, sizeof path, "%s/corrupt", base);
        spit(path, k, len);
        e = (sbx_error){0};
        ok(sbx_vm_image_get(path, init_fd, &img, &e) < 0 && strstr(e.message, "decompress"),
                "a corrupt bzImage is refused: %s", e.message);
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/cache/microvm", base);
        ok(no_tmp_left(dir), "no temporary file left behind");
        e = (sbx_error){0};
        ok(sbx_vm_kernel_find("/nonexistent/vmlinuz", vz, sizeof vz, rel, sizeof rel, &e) == -ENOENT &&
                        strstr(e.message, "/nonexistent/vmlinuz"),
                "a missing strict.kernel is named: %s", e.message);
}

/* A bzImage whose payload is `tool`'s (the kernel build's command: gzip, zstd, lz4 -l, xz, bzip2,
 * lzma, or cat for CONFIG_KERNEL_UNCOMPRESSED) compression of a made-up ELF, with the build's
 * size_append after it (not for gzip, which has its own, nor cat): the image's kernel is that ELF. */
static void test_formats(const char *base, const char *release, int init_fd) {
        static const char *const tools[][2] = {{"gzip", "gzip -n -9 -c"}, {"zstd", "zstd -q -19 -c"},
                {"lz4", "lz4 -q -l -9 -c"}, {"xz", "xz --check=crc32 -c"}, {"bzip2", "bzip2 -9 -c"},
                {"lzma", "lzma -9 -c"}, {"none", "cat"}};
        static uint8_t elf[200000];
        char in[PATH_MAX], out[PATH_MAX], img_path[PATH_MAX], cmd[PATH_MAX * 3];
        memcpy(elf, "\177ELF", 4);
        for (size_t i = 4; i < sizeof elf; i++)
                elf[i] = (uint8_t) (i * 2654435761u >> 13) & 0x3f; /* compressible, not trivially */
        snprintf(in, sizeof in, "%s/fake-elf", base);
        spit(in, elf, sizeof elf);
        for (size_t t = 0; t < ELEMENTSOF(tools); t++) {
                snprintf(out, sizeof out, "%s/fake-payload", base);
                snprintf(cmd, sizeof cmd, "command -v %.*s >/dev/null && %s '%s' > '%s'",
                        (int) strcspn(tools[t][1], " "), tools[t][1], tools[t][1], in, out);
                if (system(cmd) != 0) {
                        skip(1, tools[t][0]);
                        continue;
                }
                size_t plen = 0;
                _cleanup_free_ uint8_t *pl = slurp(out, &plen);
                /* setup_sects 1: the payload starts at 1024; the version string at 0x200 + 0x100 */
                size_t len = 1024 + plen + 4;
                _cleanup_free_ uint8_t *k = calloc(1, len);
                if (!pl || !k)
                        return;
                k[0x1f1] = 1;
                memcpy(k + 0x202, "HdrS", 4);
                k[0x206] = 0x0f, k[0x207] = 0x02;
                k[0x20e] = 0x00, k[0x20f] = 0x01;
                snprintf((char *) k + 0x300, 200, "%s (test@example) #1 SMP", release);
                uint32_t pl32 = (uint32_t) plen + (t == 0 || t == 6 ? 0 : 4), sz = sizeof elf;
                memcpy(k + 0x24c, &pl32, 4);
                memcpy(k + 1024, pl, plen);
                memcpy(k + 1024 + plen, &sz, 4); /* size_append, little-endian like the host */
                snprintf(img_path, sizeof img_path, "%s/bzImage-%s", base, tools[t][0]);
                spit(img_path, k, len);
                sbx_vm_image img = {0};
                sbx_error e = {0};
                int r = sbx_vm_image_get(img_path, init_fd, &img, &e);
                size_t got_len = 0;
                _cleanup_free_ uint8_t *got = r == 0 ? slurp(img.kernel, &got_len) : NULL;
                if (!ok(r == 0 && img.built && got_len == sizeof elf && memcmp(got, elf, sizeof elf) == 0,
                            "a %s kernel is decompressed", tools[t][0]))
                        diag("%d %s", r, e.message);
        }
}

/* Two runs making the same entries at once both succeed. */
static void test_concurrent(const char *base, int init_fd) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/cache2", base);
        setenv("SANDBOXER_CACHE_DIR", dir, 1);
        pid_t pids[2];
        for (int i = 0; i < 2; i++)
                if ((pids[i] = fork()) == 0) {
                        sbx_vm_image img;
                        _exit(sbx_vm_image_get(NULL, init_fd, &img, NULL) == 0 ? 0 : 1);
                }
        int good = 0;
        for (int i = 0; i < 2; i++) {
                int st;
                good += waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        }
        is_int(good, 2, "two runs making the same image at once both succeed");
        snprintf(dir, sizeof dir, "%s/cache2/microvm", base);
        ok(no_tmp_left(dir), "... and leave no temporary file");
}

static void test_tsc(void) {
        uint64_t a = 0, b = 0;
        sbx_error e = {0};
        double t0 = now_ms();
        int r = sbx_vm_tsc_khz(&a, &e);
        double t1 = now_ms();
        if (r == -EOPNOTSUPP) {
                skip(3, e.message);
                return;
        }
        ok(r == 0 && a >= 100000 && a <= 10000000, "the TSC rate is plausible: %llu kHz (%.1f ms)",
                (unsigned long long) a, t1 - t0);
        /* the second call, in another process, reads the cache */
        int fds[2];
        if (pipe(fds) < 0)
                return;
        pid_t pid = fork();
        if (pid == 0) {
                uint64_t k = 0;
                double s = now_ms();
                int rr = sbx_vm_tsc_khz(&k, NULL);
                double ms = now_ms() - s;
                (void) !write(fds[1], &k, sizeof k);
                (void) !write(fds[1], &ms, sizeof ms);
                _exit(rr == 0 ? 0 : 1);
        }
        double ms = -1;
        (void) !read(fds[0], &b, sizeof b);
        (void) !read(fds[0], &ms, sizeof ms);
        waitpid(pid, NULL, 0);
        close(fds[0]);
        close(fds[1]);
        is_int(b, a, "a second call in a new process gives the same rate");
        ok(ms >= 0 && ms < 5, "... from the cache, in %.3f ms", ms);
}

/* modules.dep resolution on a made-up modules directory: compressed modules (xz, zstd, gzip),
 * '-' and '_' alike, a built-in module left out, a missing one named. */
static void test_resolve(const char *base) {
        char dir[PATH_MAX], cmd[PATH_MAX * 2];
        snprintf(dir, sizeof dir, "%s/mods", base);
        snprintf(cmd, sizeof cmd,
                "set -e; cd '%s' && mkdir -p mods/kernel/a mods/kernel/b && cd mods/kernel && printf "
                "'\\177ELF leaf' > b/leaf.ko && printf '\\177ELF mid' > b/mid-dle.ko && printf '\\177ELF "
                "top' > a/top.ko && printf '\\177ELF zz' > a/zz.ko && xz -C crc32 b/leaf.ko && zstd -q --rm "
                "b/mid-dle.ko && gzip a/zz.ko && cd .. && printf "
                "'kernel/b/leaf.ko.xz:\\nkernel/b/mid-dle.ko.zst: kernel/b/leaf.ko.xz\\nkernel/a/top.ko: "
                "kernel/b/mid-dle.ko.zst kernel/b/leaf.ko.xz\\nkernel/a/zz.ko.gz:\\n' > modules.dep && "
                "printf 'kernel/c/inside.ko\\n' > modules.builtin",
                base);
        if (system(cmd) != 0) {
                skip(5, "xz, zstd or gzip missing");
                return;
        }
        static const char *const names[] = {"top", "inside", "zz", "mid_dle"};
        vm_module *m = NULL;
        size_t n = 0;
        sbx_error e = {0};
        int r = vm_modules_resolve(dir, names, ELEMENTSOF(names), &m, &n, &e);
        if (!is_int(r, 0, "a made-up modules directory resolves"))
                diag("%s", e.message);
        char got[256] = "";
        for (size_t i = 0; r == 0 && i < n; i++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", m[i].file);
        is_str(got, "leaf.ko mid-dle.ko top.ko zz.ko", "dependencies first, each once, built-in left out");
        ok(r == 0 && n == 4 && m[0].len == 9 && memcmp(m[0].data, "\177ELF leaf", 9) == 0 && m[1].len == 8 &&
                        memcmp(m[1].data, "\177ELF mid", 8) == 0 && m[3].len == 7,
                "compressed modules (xz, zstd, gzip) are decompressed");
        vm_modules_free(m, n);
        static const char *const missing[] = {"top", "9pnet_virtio"};
        e = (sbx_error){0};
        is_int(vm_modules_resolve(dir, missing, ELEMENTSOF(missing), &m, &n, &e), -ENOENT,
                "a missing module fails");
        ok(strstr(e.message, "module 9pnet_virtio: not in ") && strstr(e.message, "/mods/modules.dep"),
                "... naming it and the directory: %s", e.message);
}

int main(void) {
        char base[] = "/tmp/test-vm-image-XXXXXX", cache[PATH_MAX], vz[PATH_MAX], rel[128];
        const char *init_path = getenv("SBX_INIT");
        sbx_error e = {0};
        if (!mkdtemp(base))
                return 1;
        snprintf(cache, sizeof cache, "%s/cache", base);
        setenv("SANDBOXER_CACHE_DIR", cache, 1);
        int r = sbx_vm_kernel_find(NULL, vz, sizeof vz, rel, sizeof rel, &e);
        int init_fd = init_path ? open(init_path, O_RDONLY | O_CLOEXEC) : -1;
        if (r == -ENOENT || init_fd < 0) {
                skip(1, r == -ENOENT ? "no /boot/vmlinuz-* with its modules (linux-image-amd64)"
                                     : "no sandboxer-init ($SBX_INIT)");
                test_tsc();
                sbx_rm_rf(base);
                return done_testing();
        }
        ok(r == 0 && strncmp(vz, "/boot/vmlinuz-", 14) == 0 && rel[0], "the host's kernel: %s (%s)", vz,
                rel);

        sbx_vm_image img = {0}, img2 = {0};
        (void) lseek(init_fd, 5, SEEK_SET);
        double t0 = now_ms();
        r = sbx_vm_image_get(NULL, init_fd, &img, &e);
        double t1 = now_ms();
        if (!is_int(r, 0, "the image is made (%.0f ms)", t1 - t0))
                diag("%s", e.message);
        ok(img.built && img.build_ms > 0, "... by this call (built, %llu ms)",
                (unsigned long long) img.build_ms);
        is_int(lseek(init_fd, 0, SEEK_CUR), 5, "the init fd's offset is left as it was");
        is_str(img.release, rel, "its release");
        is_int(strlen(img.digest), 16, "its digest: %s", img.digest);
        unsigned char head[4] = {0};
        int kfd = open(img.kernel, O_RDONLY | O_CLOEXEC);
        ok(kfd >= 0 && read(kfd, head, 4) == 4 && memcmp(head, "\177ELF", 4) == 0,
                "the kernel is an ELF vmlinux: %s", img.kernel);
        if (kfd >= 0)
                close(kfd);
        struct stat sk = {0}, si = {0};
        ok(stat(img.kernel, &sk) == 0 && stat(img.initrd, &si) == 0 && (sk.st_mode & 0777) == 0644 &&
                        (si.st_mode & 0777) == 0644,
                "the entries are 0644");
        test_initrd(&img, init_path);

        t0 = now_ms();
        r = sbx_vm_image_get(NULL, init_fd, &img2, &e);
        t1 = now_ms();
        ok(r == 0 && !img2.built && img2.build_ms == 0 && streq(img2.kernel, img.kernel) &&
                        streq(img2.initrd, img.initrd),
                "a second call finds the same image in the cache");
        ok(t1 - t0 < 20, "... fast: %.3f ms", t1 - t0);
        diag("first %llu ms, hit %.3f ms", (unsigned long long) img.build_ms, t1 - t0);

        /* the vmlinux given as strict.kernel is used as it is, with the same modules */
        e = (sbx_error){0};
        r = sbx_vm_image_get(img.kernel, init_fd, &img2, &e);
        ok(r == 0 && streq(img2.kernel, img.kernel) && streq(img2.release, rel) &&
                        streq(img2.initrd, img.initrd),
                "an ELF vmlinux as the kernel: used as it is, release %s", img2.release);
        test_bad_kernels(base, vz, init_fd);
        test_concurrent(base, init_fd);
        test_resolve(base);
        setenv("SANDBOXER_CACHE_DIR", cache, 1);
        test_formats(base, rel, init_fd);
        setenv("SANDBOXER_CACHE_DIR", cache, 1);
        test_tsc();
        close(init_fd);
        sbx_rm_rf(base);
        return done_testing();
}
