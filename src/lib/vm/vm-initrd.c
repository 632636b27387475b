/* vm-initrd.c — the microvm guest's initramfs: the kernel modules it needs, found through the
 * host's modules.dep with their dependencies in load order, and the newc cpio archive that carries
 * them with /init. Written here rather than with a tool (no cpio or dracut at run time): the format
 * is a 110-byte ASCII header per file, 4-byte alignment and a trailer. */
#include "vm/vm-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/macro.h"
#include "vm/vm-image.h"

/* modules.dep holds a few thousand lines; the guest needs a handful of modules. */
#define VM_MODULES_MAX 64
#define VM_DEP_DEPTH 16

void vm_modules_free(vm_module *m, size_t n) {
        for (size_t i = 0; m && i < n; i++)
                free(m[i].data);
        free(m);
}

/* The module name of a path ("kernel/fs/9p/9p.ko.xz" → "9p"): its base name without .ko and a
 * compression suffix, '-' as '_' (the kernel treats them alike). The stem as the file has it goes
 * to *stem when given. */
static int module_name(const char *path, size_t len, char name[static 64], char *stem, size_t stem_size) {
        const char *base = path;
        for (size_t i = 0; i < len; i++)
                if (path[i] == '/')
                        base = path + i + 1;
        size_t n = (size_t) (path + len - base);
        const char *ko = NULL;
        for (const char *p = base; p + 3 <= base + n; p++)
                if (memcmp(p, ".ko", 3) == 0)
                        ko = p;
        if (!ko || ko == base || (size_t) (ko - base) >= 64)
                return -EINVAL;
        n = (size_t) (ko - base);
        for (size_t i = 0; i < n; i++)
                name[i] = base[i] == '-' ? '_' : base[i];
        name[n] = 0;
        if (stem && (size_t) snprintf(stem, stem_size, "%.*s.ko", (int) n, base) >= stem_size)
                return -ENAMETOOLONG;
        return 0;
}

static void name_normalise(const char *in, char out[static 64]) {
        size_t i = 0;
        for (; in[i] && i < 63; i++)
                out[i] = in[i] == '-' ? '_' : in[i];
        out[i] = 0;
}

/* The line of modules.dep (or modules.builtin) whose module is `name`: its start and the end of
 * its path (the ':' or the line's end). NULL when there is none. */
static const char *dep_find(const char *text, size_t len, const char *name, const char **ret_path_end) {
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                const char *colon = memchr(p, ':', (size_t) (le - p));
                const char *pe = colon ? colon : le;
                char n[64];
                if (module_name(p, (size_t) (pe - p), n, NULL, 0) == 0 && streq(n, name)) {
                        *ret_path_end = pe;
                        return p;
                }
                p = le + 1;
        }
        return NULL;
}

typedef struct resolve_ctx {
        const char *moddir;
        const char *dep; /* modules.dep */
        size_t dep_len;
        char *builtin; /* modules.builtin, read when a module is not in modules.dep */
        size_t builtin_len;
        bool builtin_read;
        vm_module *m;
        size_t n;
} resolve_ctx;

static int module_load(resolve_ctx *c, vm_module *m, sbx_error *e) {
        char path[PATH_MAX];
        _cleanup_free_ uint8_t *raw = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", c->moddir, m->rel);
        int r = vm_read_path(path, &raw, &len);
        if (r < 0)
                return sbx_error_set(e, r, "microvm",
                        "module %s: cannot read %s: %s; reinstall the kernel's package (its modules are "
                        "incomplete)",
                        m->name, path, strerror(-r));
        if (len >= 4 && memcmp(raw, "\177ELF", 4) == 0) {
                m->data = TAKE_PTR(raw);
                m->len = len;
                return 0;
        }
        sbx_buf out = {0};
        r = vm_unpack(raw, len, -1, &out, NULL, path, e);
        if (r < 0)
                return r;
        if (out.n < 4 || memcmp(out.p, "\177ELF", 4) != 0) {
                sbx_buf_done(&out);
                return sbx_error_set(e, ENOEXEC, "microvm",
                        "module %s: %s is not a kernel module (no ELF inside)", m->name, path);
        }
        m->data = out.p;
        m->len = out.n;
        return 0;
}

static int resolve_one(resolve_ctx *c, const char *name, unsigned depth, sbx_error *e) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->m[i].name, name))
                        return 0;
        if (depth > VM_DEP_DEPTH)
                return sbx_error_set(e, ELOOP, "microvm",
                        "module %s: dependencies deeper than %u in %s/modules.dep (a cycle?); run depmod",
                        name, VM_DEP_DEPTH, c->moddir);
        const char *pe, *line = dep_find(c->dep, c->dep_len, name, &pe);
        if (!line) {
                if (!c->builtin_read) {
                        char path[PATH_MAX];
                        snprintf(path, sizeof path, "%s/modules.builtin", c->moddir);
                        (void) vm_read_path(path, (uint8_t **) &c->builtin, &c->builtin_len);
                        c->builtin_read = true;
                }
                if (c->builtin && dep_find(c->builtin, c->builtin_len, name, &pe))
                        return 0; /* built into the kernel: nothing to load */
                return sbx_error_set(e, ENOENT, "microvm",
                        "module %s: not in %s/modules.dep (nor built in): this kernel was built without it; "
                        "use a kernel that has it as a module (Debian's linux-image-amd64 does), or run "
                        "depmod if the directory is stale",
                        name, c->moddir);
        }
        /* its dependencies first: modules.dep lists them all (the transitive closure), each of
         * which has its own line, so the order comes from walking them */
        const char *le = memchr(pe, '\n', (size_t) (c->dep + c->dep_len - pe));
        if (!le)
                le = c->dep + c->dep_len;
        for (const char *p = pe + (pe < le); p < le;) {
                while (p < le && (*p == ' ' || *p == '\t'))
                        p++;
                const char *q = p;
                while (q < le && *q != ' ' && *q != '\t')
                        q++;
                if (q > p) {
                        char dn[64];
                        if (module_name(p, (size_t) (q - p), dn, NULL, 0) < 0)
                                return sbx_error_set(e, EBADMSG, "microvm",
                                        "module %s: %s/modules.dep names a dependency %.*s that is not a "
                                        "module file; run depmod",
                                        name, c->moddir, (int) (q - p), p);
                        int r = resolve_one(c, dn, depth + 1, e);
                        if (r < 0)
                                return r;
                }
                p = q;
        }
        if (c->n >= VM_MODULES_MAX)
                return sbx_error_set(e, E2BIG, "microvm", "module %s: more than %d modules to load", name,
                        VM_MODULES_MAX);
        vm_module *m = &c->m[c->n];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", name);
        if ((size_t) (pe - line) >= sizeof m->rel ||
                module_name(line, (size_t) (pe - line), m->name, m->file, sizeof m->file) < 0)
                return sbx_error_set(e, EBADMSG, "microvm",
                        "module %s: its path in %s/modules.dep is malformed", name, c->moddir);
        memcpy(m->rel, line, (size_t) (pe - line));
        m->rel[pe - line] = 0;
        int r = module_load(c, m, e);
        if (r < 0)
                return r;
        c->n++;
        return 0;
}

int vm_modules_resolve(const char *moddir, const char *const *names, size_t n_names, vm_module **ret,
        size_t *ret_n, sbx_error *e) {
        char path[PATH_MAX];
        _cleanup_free_ uint8_t *dep = NULL;
        size_t dep_len = 0;
        snprintf(path, sizeof path, "%s/modules.dep", moddir);
        int r = vm_read_path(path, &dep, &dep_len);
        if (r < 0)
                return sbx_error_set(e, r, "microvm",
                        "cannot read %s: %s; the kernel's modules are not installed (apt-get install "
                        "linux-image-amd64, or the package of this kernel) or depmod has not run",
                        path, strerror(-r));
        resolve_ctx c = {.moddir = moddir, .dep = (const char *) dep, .dep_len = dep_len};
        c.m = calloc(VM_MODULES_MAX, sizeof *c.m);
        if (!c.m)
                return -ENOMEM;
        for (size_t i = 0; i < n_names && r >= 0; i++) {
                char n[64];
                name_normalise(names[i], n);
                r = resolve_one(&c, n, 0, e);
        }
        free(c.builtin);
        if (r < 0) {
                vm_modules_free(c.m, c.n);
                return r;
        }
        *ret = c.m;
        *ret_n = c.n;
        return 0;
}

static int buf_pad4(sbx_buf *b) {
        static const uint8_t zero[4];
        return b->n % 4 ? sbx_buf_put(b, zero, 4 - b->n % 4) : 0;
}

/* One newc entry: the header (13 fields of 8 hex digits), the name with its NUL, the data, each
 * padded to 4 bytes from the archive's start. mtime 0, owner root: the same inputs give the same
 * bytes. */
static int cpio_add(sbx_buf *b, unsigned *ino, const char *name, unsigned mode, unsigned rmajor,
        unsigned rminor, const void *data, size_t len) {
        char hdr[111];
        size_t nl = strlen(name) + 1;
        bool trailer = streq(name, "TRAILER!!!");
        snprintf(hdr, sizeof hdr, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
                trailer ? 0 : ++*ino, mode, 0u, 0u, S_ISDIR(mode) ? 2u : 1u, 0u, (unsigned) len, 0u, 0u,
                rmajor, rminor, (unsigned) nl, 0u);
        if (sbx_buf_put(b, hdr, 110) < 0 || sbx_buf_put(b, name, nl) < 0 || buf_pad4(b) < 0 ||
                sbx_buf_put(b, data, len) < 0 || buf_pad4(b) < 0)
                return -ENOMEM;
        return 0;
}

int vm_initrd_write(const uint8_t *init, size_t init_len, const vm_module *m, size_t n, sbx_buf *out) {
        /* what an init mounts on, made before anything else is there to make them */
        static const char *const dirs[] = {"dev", "proc", "sys", "tmp", "mnt", "newroot", "root", "etc",
                "run", "var", "lib", "lib/modules"};
        unsigned ino = 0;
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(dirs) && r >= 0; i++)
                r = cpio_add(out, &ino, dirs[i], S_IFDIR | 0755, 0, 0, NULL, 0);
        /* the kernel opens /dev/console for the init's stdio before devtmpfs is mounted */
        if (r >= 0)
                r = cpio_add(out, &ino, "dev/console", S_IFCHR | 0600, 5, 1, NULL, 0);
        if (r >= 0)
                r = cpio_add(out, &ino, "init", S_IFREG | 0755, 0, 0, init, init_len);
        sbx_buf order = {0};
        for (size_t i = 0; i < n && r >= 0; i++) {
                char name[PATH_MAX];
                snprintf(name, sizeof name, "%s/%s", SBX_VM_MODULE_DIR + 1, m[i].file);
                r = cpio_add(out, &ino, name, S_IFREG | 0644, 0, 0, m[i].data, m[i].len);
                if (r >= 0 && (sbx_buf_put(&order, m[i].file, strlen(m[i].file)) < 0 ||
                                      sbx_buf_put(&order, "\n", 1) < 0))
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = cpio_add(out, &ino, SBX_VM_MODULE_ORDER + 1, S_IFREG | 0644, 0, 0, order.p, order.n);
        sbx_buf_done(&order);
        if (r >= 0)
                r = cpio_add(out, &ino, "TRAILER!!!", 0, 0, 0, NULL, 0);
        return r;
}
