/* relay-floor.c — what any relay costs on this host: the floor under the egress proxy's
 * throughput (docs/performance.md, "The egress proxy"). A server on loopback sends N MiB to a
 * client three ways, in one run:
 *   direct   the client connects to the server;
 *   splice   through a relay of two threads splicing each way through a 1 MiB pipe (what the
 *            proxy does once a tunnel is judged), the least a userspace relay can do;
 *   sockmap  through an in-kernel relay (root only): a SOCKHASH keyed by each socket's 4-tuple
 *            and an sk_skb stream-verdict program redirecting every segment to the other socket's
 *            egress; the relay thread only waits for the end. Also says whether every byte
 *            arrived (a redirect still queued when the upstream's FIN is seen is lost unless the
 *            relay waits for it; a run silent for 5 s is ended and counted short).
 * Prints MB/s (median of RUNS) and the ratio to direct. Not a test.
 *
 *   cc -O2 -o /tmp/relay-floor bench/relay-floor.c -lpthread && /tmp/relay-floor [MIB] [RUNS] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { DIRECT, SPLICE, SOCKMAP };
static long long total;
static int mode, map_fd = -1, srv_fd, relay_fd, srv_port;

static int bpf(int cmd, union bpf_attr *a) {
        return (int) syscall(SYS_bpf, cmd, a, sizeof *a);
}

static int listen_any(int *port) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof sa;
        if (s < 0 || bind(s, (void *) &sa, sizeof sa) < 0 || listen(s, 16) < 0 ||
                getsockname(s, (void *) &sa, &l) < 0) {
                perror("listen");
                exit(1);
        }
        *port = ntohs(sa.sin_port);
        return s;
}

static int dial(int port) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {
                .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (s < 0 || connect(s, (void *) &sa, sizeof sa) < 0) {
                perror("connect");
                exit(1);
        }
        return s;
}

static void *server(void *u) {
        static char buf[1 << 20];
        (void) u;
        for (;;) {
                int c = accept4(srv_fd, NULL, NULL, SOCK_CLOEXEC);
                for (long long left = total; c >= 0 && left > 0;) {
                        ssize_t n =
                                write(c, buf, left > (long long) sizeof buf ? sizeof buf : (size_t) left);
                        if (n <= 0)
                                break;
                        left -= n;
                }
                close(c);
        }
        return NULL;
}

typedef struct {
        int from, to;
} pump_arg;

static void *pump(void *u) {
        pump_arg *p = u;
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) < 0)
                return NULL;
        (void) fcntl(pp[1], F_SETPIPE_SZ, 1 << 20);
        for (;;) {
                ssize_t n = splice(p->from, NULL, pp[1], NULL, 1 << 20, SPLICE_F_MOVE);
                if (n <= 0)
                        break;
                while (n > 0) {
                        ssize_t m = splice(pp[0], NULL, p->to, NULL, (size_t) n, SPLICE_F_MOVE);
                        if (m <= 0)
                                goto out;
                        n -= m;
                }
        }
out:
        shutdown(p->to, SHUT_WR);
        close(pp[0]);
        close(pp[1]);
        return NULL;
}

/* the key the verdict program builds from the skb arriving on s: local and remote address,
 * local port (host order), remote port (network order, in the upper half) */
typedef struct {
        uint32_t lip, rip, lport, rport;
} key4;

static void key_of(int s, key4 *k) {
        struct sockaddr_in l, r;
        socklen_t n = sizeof l;
        getsockname(s, (void *) &l, &n);
        n = sizeof r;
        getpeername(s, (void *) &r, &n);
        *k = (key4){l.sin_addr.s_addr, r.sin_addr.s_addr, ntohs(l.sin_port), (uint32_t) r.sin_port << 16};
}

static int map_put(key4 *k, int fd) {
        uint32_t v = (uint32_t) fd;
        union bpf_attr a = {.map_fd = (uint32_t) map_fd, .key = (uintptr_t) k, .value = (uintptr_t) &v};
        return bpf(BPF_MAP_UPDATE_ELEM, &a);
}

static void *relay(void *u) {
        (void) u;
        for (;;) {
                int a = accept4(relay_fd, NULL, NULL, SOCK_CLOEXEC), b = dial(srv_port);
                if (mode == SPLICE) {
                        pump_arg up = {a, b}, down = {b, a};
                        pthread_t t1, t2;
                        pthread_create(&t1, NULL, pump, &up);
                        pthread_create(&t2, NULL, pump, &down);
                        pthread_join(t2, NULL); /* the server ends first */
                        shutdown(a, SHUT_RD);
                        pthread_join(t1, NULL);
                } else {
                        key4 ka, kb;
                        key_of(a, &ka);
                        key_of(b, &kb);
                        if (map_put(&kb, a) < 0 || map_put(&ka, b) < 0)
                                perror("sockhash update");
                        struct pollfd pf = {.fd = b, .events = POLLRDHUP};
                        (void) poll(&pf, 1, -1); /* the server's FIN: nothing else reaches us */
                        shutdown(a, SHUT_WR);
                }
                close(a);
                close(b);
        }
        return NULL;
}

static double client(int port, long long *got) {
        static char buf[1 << 20];
        struct timespec t0, t1;
        int s = dial(port);
        struct timeval tv = {.tv_sec = 5}; /* a stalled in-kernel relay ends the run, counted short */
        (void) setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        *got = 0;
        for (;;) {
                ssize_t n = read(s, buf, sizeof buf);
                if (n <= 0)
                        break;
                *got += n;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        close(s);
        return (double) *got /
               ((double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9) / 1e6;
}

#define I(c, d, s, o, i)                                                                                    \
        ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static int sockmap_setup(void) {
        union bpf_attr a = {.map_type = BPF_MAP_TYPE_SOCKHASH,
                .key_size = sizeof(key4),
                .value_size = 4,
                .max_entries = 64};
        map_fd = bpf(BPF_MAP_CREATE, &a);
        if (map_fd < 0)
                return -1;
        struct bpf_insn p[] = {
                I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),
                I(BPF_LDX | BPF_MEM | BPF_W, 2, 6, offsetof(struct __sk_buff, local_ip4), 0),
                I(BPF_STX | BPF_MEM | BPF_W, 10, 2, -16, 0),
                I(BPF_LDX | BPF_MEM | BPF_W, 2, 6, offsetof(struct __sk_buff, remote_ip4), 0),
                I(BPF_STX | BPF_MEM | BPF_W, 10, 2, -12, 0),
                I(BPF_LDX | BPF_MEM | BPF_W, 2, 6, offsetof(struct __sk_buff, local_port), 0),
                I(BPF_STX | BPF_MEM | BPF_W, 10, 2, -8, 0),
                I(BPF_LDX | BPF_MEM | BPF_W, 2, 6, offsetof(struct __sk_buff, remote_port), 0),
                I(BPF_STX | BPF_MEM | BPF_W, 10, 2, -4, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
                I(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, map_fd),
                I(0, 0, 0, 0, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0),
                I(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -16),
                I(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0),
                I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_redirect_hash),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        memset(&a, 0, sizeof a);
        a.prog_type = BPF_PROG_TYPE_SK_SKB;
        a.insns = (uintptr_t) p;
        a.insn_cnt = sizeof p / sizeof p[0];
        a.license = (uintptr_t) "GPL";
        a.expected_attach_type = BPF_SK_SKB_STREAM_VERDICT;
        int prog = bpf(BPF_PROG_LOAD, &a);
        memset(&a, 0, sizeof a);
        a.target_fd = (uint32_t) map_fd;
        a.attach_bpf_fd = (uint32_t) prog;
        a.attach_type = BPF_SK_SKB_STREAM_VERDICT;
        return prog < 0 || bpf(BPF_PROG_ATTACH, &a) < 0 ? -1 : 0;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        total = (argc > 1 ? atoll(argv[1]) : 1024) << 20;
        int runs = argc > 2 ? atoi(argv[2]) : 5;
        if (runs < 1 || runs > 100 || total <= 0) {
                fprintf(stderr, "usage: relay-floor [MIB] [RUNS]\n");
                return 2;
        }
        srv_fd = listen_any(&srv_port);
        int relay_port;
        relay_fd = listen_any(&relay_port);
        pthread_t t;
        pthread_create(&t, NULL, server, NULL);
        pthread_create(&t, NULL, relay, NULL);
        static const char *const names[] = {"direct", "splice", "sockmap"};
        double direct = 0;
        printf("%-8s %10s %8s  %s\n", "path", "MB/s", "× direct", "bytes");
        for (mode = DIRECT; mode <= SOCKMAP; mode++) {
                if (mode == SOCKMAP && sockmap_setup() < 0) {
                        printf("%-8s %10s %8s  (%m: needs CAP_BPF and CAP_NET_ADMIN)\n", names[mode], "-",
                                "-");
                        break;
                }
                double v[100];
                long long got = 0, short_runs = 0;
                for (int i = 0; i < runs; i++) {
                        v[i] = client(mode == DIRECT ? srv_port : relay_port, &got);
                        short_runs += got != total;
                }
                qsort(v, (size_t) runs, sizeof v[0], cmp);
                double med = v[runs / 2];
                if (mode == DIRECT)
                        direct = med;
                printf("%-8s %10.0f %8.2f  %s\n", names[mode], med, med / direct,
                        short_runs ? "SHORT: bytes lost or stalled (a run ends after 5 s of silence)"
                                   : "all arrived");
        }
        return 0;
}
