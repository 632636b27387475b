/* egress-run.c — see egress-run.h. */
#include "supervise/egress-run.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "supervise/egress-proxy.h"

#define PENDING_MAX 64 /* refusals waiting for the loop; beyond, they are only counted */

typedef struct kept_conn {
        sbx_report_conn c;
        uint64_t end_ns;
} kept_conn;

struct sbx_egress_run {
        sbx_egress *rules;
        sbx_egress_proxy *proxy;
        int efd;
        pthread_mutex_t lock;
        sbx_egress_refusal pending[PENDING_MAX];
        size_t n_pending;
        uint64_t refused, refused_lost;
        kept_conn *conns;
        size_t n_conns;
        uint64_t allowed, dropped, up, down;
        int init_pid;
        sbx_egress_owner_fn owner;
        sbx_egress_sink_fn sink;
        void *sink_ud;
};

/* The inode of the sandbox's socket connected from 127.0.0.1:port to the proxy, from the
 * sandbox's own TCP table. 0 when not found. */
static unsigned long client_inode(int init_pid, unsigned port) {
        char path[64], want[32], proxy[32];
        snprintf(path, sizeof path, "/proc/%d/net/tcp", init_pid);
        snprintf(want, sizeof want, "0100007F:%04X", port);
        snprintf(proxy, sizeof proxy, "0100007F:%04X", SBX_EGRESS_PROXY_PORT);
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        char line[512], local[64], rem[64];
        unsigned long ino = 0, found = 0;
        while (!found && fgets(line, sizeof line, f))
                if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, rem, &ino) == 3 &&
                        streq(local, want) && streq(rem, proxy))
                        found = ino;
        fclose(f);
        return found;
}

static bool holds_socket(int pid, const char *link) {
        char path[64], buf[64];
        snprintf(path, sizeof path, "/proc/%d/fd", pid);
        DIR *d = opendir(path);
        if (!d)
                return false;
        bool yes = false;
        for (struct dirent *de; !yes && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                ssize_t n = readlinkat(dirfd(d), de->d_name, buf, sizeof buf - 1);
                if (n > 0) {
                        buf[n] = 0;
                        yes = streq(buf, link);
                }
        }
        closedir(d);
        return yes;
}

#define WALK_MAX 4096

/* Who holds the socket: a walk of the init's descendants (breadth first, by the children lists
 * of each of their threads). */
static uint64_t identify(void *userdata, int fd) {
        sbx_egress_run *r = userdata;
        struct sockaddr_in peer;
        socklen_t len = sizeof peer;
        if (r->init_pid <= 0 || getpeername(fd, (struct sockaddr *) &peer, &len) < 0 ||
                peer.sin_family != AF_INET)
                return 0;
        unsigned long ino = client_inode(r->init_pid, ntohs(peer.sin_port));
        if (!ino)
                return 0;
        char link[48];
        snprintf(link, sizeof link, "socket:[%lu]", ino);
        int *q = malloc(WALK_MAX * sizeof *q), found = 0;
        if (!q)
                return 0;
        size_t head = 0, tail = 0;
        q[tail++] = r->init_pid;
        while (head < tail && !found) {
                int pid = q[head++];
                if (pid != r->init_pid && holds_socket(pid, link)) {
                        found = pid;
                        break;
                }
                char path[64];
                snprintf(path, sizeof path, "/proc/%d/task", pid);
                DIR *d = opendir(path);
                for (struct dirent *de; d && (de = readdir(d));) {
                        if (de->d_name[0] == '.')
                                continue;
                        char cp[384];
                        snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", pid, de->d_name);
                        FILE *f = fopen(cp, "re");
                        int c;
                        while (f && tail < WALK_MAX && fscanf(f, "%d", &c) == 1)
                                q[tail++] = c;
                        if (f)
                                fclose(f);
                }
                if (d)
                        closedir(d);
        }
        free(q);
        return r->owner ? r->owner(r->sink_ud, found) : (uint64_t) found;
}

size_t sbx_egress_refusal_details(const sbx_egress_refusal *f, sbx_detail d[SBX_EGRESS_DETAILS]) {
        size_t n = 0;
        d[n++] = (sbx_detail){.key = "host", .str = (char *) f->host};
        d[n++] = (sbx_detail){.key = "port", .num = f->port};
        d[n++] = (sbx_detail){.key = "via", .str = (char *) "proxy"};
        d[n++] = (sbx_detail){.key = "protocol", .str = (char *) f->via};
        d[n++] = (sbx_detail){.key = "reason", .str = (char *) sbx_egress_reason_to_string(f->reason)};
        d[n++] = (sbx_detail){.key = "rule", .str = (char *) f->rule};
        return n;
}

static bool grow(sbx_egress_run *r) {
        if (r->n_conns % 64 != 0)
                return true;
        kept_conn *n = reallocarray(r->conns, r->n_conns + 64, sizeof *n);
        if (!n)
                return false;
        r->conns = n;
        return true;
}

static void on_event(void *userdata, const sbx_egress_event *ev) {
        sbx_egress_run *r = userdata;
        uint64_t now = sbx_now_ns();
        bool refusal = !ev->allowed && ev->reason != SBX_EGRESS_UNRESOLVED;
        sbx_report_conn c = {.host = (char *) (ev->host ? ev->host : ""),
                .port = ev->port,
                .via = ev->via,
                .rule = (char *) (ev->rule ? ev->rule : ""),
                .bytes_up = ev->bytes_up,
                .bytes_down = ev->bytes_down,
                .ms = (int64_t) ev->ms,
                .unreachable = ev->unreachable || !ev->allowed};
        sbx_egress_refusal f = {.port = ev->port,
                .via = ev->via,
                .reason = ev->reason,
                .at_ns = now,
                .recorded = r->sink != NULL};
        snprintf(f.host, sizeof f.host, "%s", c.host);
        snprintf(f.rule, sizeof f.rule, "%s", c.rule);

        /* the sink first: the connection is still in flight for settle() until we return */
        if (r->sink)
                r->sink(r->sink_ud, ev->owner, refusal ? NULL : &c, refusal ? &f : NULL);

        pthread_mutex_lock(&r->lock);
        if (refusal) {
                r->refused++;
                if (r->n_pending < PENDING_MAX)
                        r->pending[r->n_pending++] = f;
                else
                        r->refused_lost++;
        } else {
                /* allowed (ended), or a name with no address: a connection that went nowhere */
                r->allowed++;
                r->up += ev->bytes_up;
                r->down += ev->bytes_down;
                if (r->sink)
                        ;
                else if (r->n_conns >= SBX_REPORT_MAX_CONNS)
                        r->dropped++;
                else if (!grow(r))
                        r->dropped++;
                else {
                        c.host = strdup(c.host);
                        c.rule = strdup(c.rule);
                        if (!c.host || !c.rule) {
                                free(c.host);
                                free(c.rule);
                                r->dropped++;
                        } else
                                r->conns[r->n_conns++] = (kept_conn){.c = c, .end_ns = now};
                }
        }
        pthread_mutex_unlock(&r->lock);
        if (refusal) {
                uint64_t one = 1;
                (void) !write(r->efd, &one, sizeof one);
        }
}

int sbx_egress_run_new(
        char *const *allow, char *const *deny, char *const *hosts, sbx_egress_run **ret, sbx_error *e) {
        sbx_egress_run *r = calloc(1, sizeof *r);
        if (!r)
                return sbx_error_set(e, ENOMEM, "egress", "out of memory");
        r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->efd < 0) {
                int k = errno;
                free(r);
                return sbx_error_set(e, k, "egress", "eventfd: %s", strerror(k));
        }
        pthread_mutex_init(&r->lock, NULL);
        int k = sbx_egress_new(allow, deny, hosts, NULL, NULL, &r->rules, e);
        if (k < 0) {
                sbx_egress_run_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

void sbx_egress_run_stop(sbx_egress_run *r) {
        if (r && r->proxy)
                r->proxy = sbx_egress_proxy_stop(r->proxy);
}

sbx_egress_run *sbx_egress_run_free(sbx_egress_run *r) {
        if (!r)
                return NULL;
        sbx_egress_run_stop(r);
        for (size_t i = 0; i < r->n_conns; i++) {
                free(r->conns[i].c.host);
                free(r->conns[i].c.rule);
        }
        free(r->conns);
        sbx_egress_free(r->rules);
        if (r->efd >= 0)
                close(r->efd);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
}

void sbx_egress_run_route(sbx_egress_run *r, int init_pid, sbx_egress_owner_fn owner,
        sbx_egress_sink_fn sink, void *userdata) {
        r->init_pid = init_pid;
        r->owner = owner;
        r->sink = sink;
        r->sink_ud = userdata;
}

void sbx_egress_run_settle(sbx_egress_run *r, uint64_t owner, int timeout_ms) {
        if (r && r->proxy && owner)
                (void) sbx_egress_proxy_settle(r->proxy, owner, timeout_ms);
}

int sbx_egress_run_event_fd(const sbx_egress_run *r) {
        return r->efd;
}

bool sbx_egress_run_started(const sbx_egress_run *r) {
        return r && r->proxy;
}

int sbx_egress_run_start(sbx_egress_run *r, int listen_fd) {
        if (r->proxy) {
                close(listen_fd);
                return -EALREADY;
        }
        return sbx_egress_proxy_start(
                listen_fd, r->rules, on_event, r->init_pid > 0 ? identify : NULL, r, &r->proxy);
}

size_t sbx_egress_run_take(sbx_egress_run *r, sbx_egress_refusal *out, size_t max) {
        uint64_t v;
        (void) !read(r->efd, &v, sizeof v);
        pthread_mutex_lock(&r->lock);
        size_t n = MIN(max, r->n_pending);
        memcpy(out, r->pending, n * sizeof *out);
        memmove(r->pending, r->pending + n, (r->n_pending - n) * sizeof *out);
        r->n_pending -= n;
        bool more = r->n_pending > 0;
        pthread_mutex_unlock(&r->lock);
        if (more) {
                uint64_t one = 1;
                (void) !write(r->efd, &one, sizeof one);
        }
        return n;
}

int sbx_egress_run_to_report(sbx_egress_run *r, sbx_report *rep, uint64_t start_ns) {
        sbx_egress_run_stop(r);
        rep->egress_proxy = "127.0.0.1:3128";
        int k = 0;
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_conns && k >= 0; i++) {
                sbx_report_conn c = r->conns[i].c;
                c.at_ms = r->conns[i].end_ns > start_ns
                                  ? (int64_t) ((r->conns[i].end_ns - start_ns) / 1000000)
                                  : 0;
                k = sbx_report_add_conn(rep, &c);
        }
        rep->egress_allowed = r->allowed; /* all of them: also those kept elsewhere (the sink) */
        rep->egress_bytes_up = r->up;
        rep->egress_bytes_down = r->down;
        rep->egress_conns_dropped += r->dropped;
        rep->egress_refused = r->refused;
        pthread_mutex_unlock(&r->lock);
        return k;
}
