/* alloc.c — malloc for the `sandboxer` CLI when it is linked against musl.
 *
 * musl's allocator (mallocng) gives memory back to the kernel as soon as a group of blocks is
 * free: a `sandboxer run` made 36 mmap and 35 munmap calls before its command started, each a
 * page-table change and a fresh page fault later, which is what the hypervisor makes expensive
 * (0.35 ms more than glibc's allocator for resolving the configuration on the development VM).
 * The CLI is one short process or one supervisor whose allocations are small and steady, so this
 * allocator is the simple one that fits: blocks in ~1.5x size classes, carved from 1 MiB arenas
 * that are never returned, each freed block kept on its class's list for the next request of that
 * class. Requests above the largest class get their own mapping, returned on free.
 *
 * musl supports replacing malloc this way (its own internal allocations keep musl's allocator).
 * Built only into the musl CLI (src/cli/meson.build); sanitizer builds use glibc's.
 *
 * Every block is preceded by a 16-byte header: the class index + 1, or LARGE with the mapping's
 * length, or ALIGNED with the distance back to the block that holds an over-aligned allocation. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/macro.h"

#define HDR 16u
#define ARENA_SIZE (1u << 20)
#define INFO_LARGE ((size_t) -1)
#define INFO_ALIGNED ((size_t) -2)
#define INFO_FREE ((size_t) 1 << 32) /* or'ed in while the block is on its free list */

struct hdr {
        size_t size; /* LARGE: the mapping's length; ALIGNED: the distance back to the holder */
        size_t info; /* 1 + the class index (| INFO_FREE on its free list), INFO_LARGE or INFO_ALIGNED */
};

/* usable sizes; each a multiple of 16, so every block stays 16-aligned */
static const size_t class_size[] = {
        16,
        32,
        48,
        64,
        96,
        128,
        192,
        256,
        384,
        512,
        768,
        1024,
        1536,
        2048,
        3072,
        4096,
        6144,
        8192,
        12288,
        16384,
        24576,
        32768,
        49152,
        65536,
        98304,
        131072,
        196608,
        262144,
};
#define N_CLASS ELEMENTSOF(class_size)

static void *free_list[N_CLASS];
static char *arena_next, *arena_end;
static int alloc_lock;

static void lock(void) {
        while (__atomic_exchange_n(&alloc_lock, 1, __ATOMIC_ACQUIRE))
                sched_yield();
}

static void unlock(void) {
        __atomic_store_n(&alloc_lock, 0, __ATOMIC_RELEASE);
}

/* Across fork(): the lock is taken before it, so that the child does not inherit it held by a
 * thread it does not have (the supervisor has several, and forks relays that allocate). musl's
 * fork() runs these handlers; the raw clone of a sandbox's spawn does not, and its child
 * allocates nothing. */
static void child_unlock(void) {
        __atomic_store_n(&alloc_lock, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void alloc_atfork(void) {
        (void) pthread_atfork(lock, unlock, child_unlock);
}

static size_t class_of(size_t n) {
        size_t lo = 0, hi = N_CLASS - 1;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (class_size[mid] < n)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* A block of usable size n; *fresh tells whether it is known to be zero-filled. */
static void *alloc(size_t n, bool *fresh) {
        if (n == 0)
                n = 1;
        if (n > class_size[N_CLASS - 1]) {
                if (n > SIZE_MAX / 2) {
                        errno = ENOMEM;
                        return NULL;
                }
                size_t len = (n + HDR + 4095) & ~(size_t) 4095;
                struct hdr *h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (h == MAP_FAILED) {
                        errno = ENOMEM;
                        return NULL;
                }
                *h = (struct hdr){.size = len, .info = INFO_LARGE};
                *fresh = true;
                return h + 1;
        }
        size_t c = class_of(n);
        lock();
        void *p = free_list[c];
        if (p) {
                free_list[c] = *(void **) p;
                ((struct hdr *) p - 1)->info = c + 1;
                unlock();
                *fresh = false;
                return p;
        }
        size_t need = HDR + class_size[c];
        if ((size_t) (arena_end - arena_next) < need) {
                /* the rest of the old arena is left unused: at most one block of the largest class */
                char *a = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                if (a == MAP_FAILED) {
                        unlock();
                        errno = ENOMEM;
                        return NULL;
                }
                arena_next = a;
                arena_end = a + ARENA_SIZE;
        }
        struct hdr *h = (struct hdr *) arena_next;
        arena_next += need;
        unlock();
        *h = (struct hdr){.size = class_size[c], .info = c + 1};
        *fresh = true;
        return h + 1;
}

static struct hdr *header_of(void *p, void **holder) {
        struct hdr *h = (struct hdr *) p - 1;
        if (h->info == INFO_ALIGNED) {
                p = (char *) p - h->size;
                h = (struct hdr *) p - 1;
        }
        *holder = p;
        return h;
}

void *malloc(size_t n) {
        bool fresh;
        return alloc(n, &fresh);
}

void free(void *p) {
        if (!p)
                return;
        struct hdr *h = header_of(p, &p);
        if (h->info == INFO_LARGE) {
                munmap(h, h->size);
                return;
        }
        if (h->info == 0 || h->info > N_CLASS)
                abort(); /* a double free (INFO_FREE is set) or not a block of ours */
        size_t c = h->info - 1;
        lock();
        h->info |= INFO_FREE;
        *(void **) p = free_list[c];
        free_list[c] = p;
        unlock();
}

void *calloc(size_t n, size_t m) {
        if (m && n > SIZE_MAX / m) {
                errno = ENOMEM;
                return NULL;
        }
        bool fresh;
        void *p = alloc(n * m, &fresh);
        if (p && !fresh)
                memset(p, 0, n * m);
        return p;
}

size_t malloc_usable_size(void *p) {
        if (!p)
                return 0;
        void *holder;
        struct hdr *h = header_of(p, &holder);
        size_t usable = h->info == INFO_LARGE ? h->size - HDR : class_size[h->info - 1];
        return usable - (size_t) ((char *) p - (char *) holder);
}

void *realloc(void *p, size_t n) {
        if (!p)
                return malloc(n);
        size_t usable = malloc_usable_size(p);
        if (n <= usable && n > usable / 4)
                return p;
        void *q = malloc(n);
        if (!q)
                return NULL;
        memcpy(q, p, MIN(n, usable));
        free(p);
        return q;
}

void *aligned_alloc(size_t align, size_t n) {
        if (align == 0 || (align & (align - 1))) {
                errno = EINVAL;
                return NULL;
        }
        if (align <= HDR)
                return malloc(n);
        if (n > SIZE_MAX - align - HDR) {
                errno = ENOMEM;
                return NULL;
        }
        char *holder = malloc(n + align + HDR);
        if (!holder)
                return NULL;
        char *p = (char *) (((uintptr_t) holder + HDR + align - 1) & ~(uintptr_t) (align - 1));
        ((struct hdr *) p)[-1] = (struct hdr){.size = (size_t) (p - holder), .info = INFO_ALIGNED};
        return p;
}

void *memalign(size_t align, size_t n) {
        return aligned_alloc(align, n);
}

int posix_memalign(void **ret, size_t align, size_t n) {
        if (align < sizeof(void *))
                return EINVAL;
        int saved = errno; /* it reports by its return value and leaves errno alone */
        void *p = aligned_alloc(align, n);
        int r = p ? 0 : errno;
        errno = saved;
        if (p)
                *ret = p;
        return r;
}
