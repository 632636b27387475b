/* serve.c — `sandboxer serve`: open the store, listen, answer the HTTP API until SIGTERM/SIGINT. */
#include <fcntl.h>
#include <getopt.h>
#include <sys/file.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "daemon/audit.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/sandboxes.h"
#include "daemon/store.h"
#include "basic/cache.h"
#include "verbs.h"

#define MAX_LISTEN 16

static void help(void) {
        printf("sandboxer serve [--listen ADDR]... [--state-dir DIR] [--store URL] [--policy FILE]\n"
               "                [--quota-sandboxes N] [--quota-execs N] [--quota-memory-mb N]\n"
               "                [--stop-sandboxes] [--secrets-dir DIR] [--warm-pool N] [--warm-profile "
               "P]...\n"
               "                [--domain DOMAIN] [--snapshot-dir DIR] [--quota-snapshot-mb N]\n"
               "                [--quota-volume-mb N] [--webhook-allow-private] [--registry DIR]\n"
               "                [--tls-cert FILE --tls-key FILE] [--heartbeat-s S] [--public-url URL]\n"
               "                [--credits] [--meter-interval S] [--quote-ttl S]\n"
               "                [--billing-export FILE] [--billing-webhook URL]\n\n"
               "The control plane: the HTTP API of docs/api.md — persistent sandboxes (create, exec,\n"
               "files, ttl, recreate, destroy), events, profiles, /metrics, /healthz. Each sandbox has a\n"
               "supervisor process of its own that outlives the server; at start the server re-adopts\n"
               "the live ones and cleans up the lost ones before it opens its sockets. SIGTERM or SIGINT\n"
               "stops serving and leaves the sandboxes running (unless --stop-sandboxes).\n\n"
               "  --listen ADDR     unix:PATH (mode 0660; the peer's uid is the actor: the socket's\n"
               "                    owner and root are adm) or HOST:PORT (TCP: bearer tokens from\n"
               "                    'sandboxer token create' required). Repeatable. Default:\n"
               "                    unix:$SANDBOXER_RUNTIME_DIR/sandboxer.sock, "
               "/run/sandboxer/sandboxer.sock\n"
               "                    as root, else $XDG_RUNTIME_DIR/sandboxer/sandboxer.sock\n"
               "  --state-dir DIR   default $SANDBOXER_STATE_DIR, /var/lib/sandboxer as root,\n"
               "                    else $XDG_STATE_HOME/sandboxer\n"
               "  --store URL       sqlite:PATH (default: sandboxer.db in the state dir)\n"
               "  --policy FILE     the site policy file for every sandbox (default: the usual lookup)\n"
               "  --quota-sandboxes N  sandboxes alive per tenant (default 1000; 0 = no limit)\n"
               "  --quota-execs N      execs running at once per tenant (default 256; 0 = no limit)\n"
               "  --quota-memory-mb N  sum of the sandboxes' memory_mb per tenant (default 0 = no limit)\n"
               "  --quota-snapshot-mb N  the stored bytes of a tenant's snapshots (default 0 = no limit)\n"
               "  --snapshot-dir DIR  the snapshot store (default: snapshots/ in the state dir)\n"
               "  --quota-volume-mb N  the sizes of a tenant's volumes (default 0 = no limit)\n"
               "  --stop-sandboxes  destroy every sandbox when stopping\n"
               "  --tls-cert FILE   with --tls-key: TCP listeners serve HTTPS with this certificate "
               "(chain)\n"
               "  --tls-key FILE    and key, PEM files (unix sockets stay plain); plain TCP beyond\n"
               "                    loopback is served with a warning\n"
               "  --heartbeat-s S   probe hosts and other nodes this often (default 10); two misses in a\n"
               "                    row make one unhealthy and fail the sandboxes it held (host_lost)\n"
               "  --public-url URL  this node's URL as other nodes reach it (GET /v1/node)\n"
               "  --credits         enforce credits: a create holds its estimated cost from the tenant's\n"
               "                    balance (402 payment_required without it); also the policy file's\n"
               "                    billing.enforce. Off by default\n"
               "  --meter-interval S  sample each sandbox's CPU and memory this often (default 15)\n"
               "  --quote-ttl S     how long a quote this node signs for a deal holds (default 60)\n"
               "  --billing-export FILE  append each ledger transaction to FILE as a billing event "
               "(NDJSON)\n"
               "  --billing-webhook URL  POST each billing event to URL (Idempotency-Key: its id), retried\n"
               "                    with backoff until taken\n"
               "  --registry DIR    extension files (DIR/NAME.yaml: id, kind, url, capabilities, pricing;\n"
               "                    docs/api.md, \"Extensions and routes\") beside the built-in ext.local\n"
               "  --webhook-allow-private  let create's webhook URLs reach loopback, private and\n"
               "                    link-local addresses (refused by default: a tenant's URL must not\n"
               "                    reach the server's own network)\n"
               "  --warm-pool N     keep N sandboxes of each warm profile started ahead, unassigned: a\n"
               "                    create takes one and the pool refills behind it (default 0)\n"
               "  --warm-profile P  a profile to keep warm (repeatable; default profile.default)\n"
               "  --secrets-dir DIR the secret store: a profile's `secrets: [NAME]` is the file DIR/NAME,\n"
               "                    delivered read-only at /run/secrets/NAME, never in the environment\n"
               "  --domain DOMAIN   also route a request whose Host is PORT-ID.DOMAIN to port PORT of\n"
               "                    sandbox ID (as /v1/sandboxes/ID/ports/PORT/ is); E2B's getHost and\n"
               "                    Daytona's preview links name such hosts (point DOMAIN's wildcard\n"
               "                    DNS at this server)\n"
               "Exit status: 0 stopped by a signal, 125 usage or startup error.\n");
}

/* Take RUNTIME/serve.lock (an exclusive flock, our pid written in it), or say who holds it. */
static int lock_runtime_dir(const char *runtime_dir, int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/serve.lock", runtime_dir) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0) {
                int r = -errno;
                cli_error("serve: cannot open %s: %s", path, strerror(-r));
                return r;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int r = -errno;
                char pid[32] = "";
                ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
                pid[n > 0 ? n : 0] = 0;
                pid[strcspn(pid, "\n")] = 0;
                if (r == -EWOULDBLOCK)
                        cli_error(
                                "serve: another sandboxer serve%s%s%s already uses the runtime directory %s "
                                "(its sandboxes' supervisors are there, and a second server would take "
                                "them for orphans); stop it, or give this one its own with "
                                "SANDBOXER_RUNTIME_DIR",
                                *pid ? " (pid " : "", pid, *pid ? ")" : "", runtime_dir);
                else
                        cli_error("serve: cannot lock %s: %s", path, strerror(-r));
                return r;
        }
        char buf[32];
        int l = snprintf(buf, sizeof buf, "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t) l, 0) != l) {
                /* the pid is only for the message above; the lock is what counts */
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int verb_serve(int argc, char **argv) {
        enum {
                ARG_LISTEN = 0x100,
                ARG_STATE_DIR,
                ARG_STORE,
                ARG_POLICY,
                ARG_QS,
                ARG_QE,
                ARG_QM,
                ARG_STOP,
                ARG_SECRETS,
                ARG_WARM,
                ARG_WARM_PROFILE,
                ARG_DOMAIN,
                ARG_SNAPDIR,
                ARG_QSNAP,
                ARG_QVOL,
                ARG_WH_PRIVATE,
                ARG_REGISTRY,
                ARG_TLS_CERT,
                ARG_TLS_KEY,
                ARG_HEARTBEAT,
                ARG_PUBLIC_URL,
                ARG_CREDITS,
                ARG_METER_INTERVAL,
                ARG_QUOTE_TTL,
                ARG_BILLING_EXPORT,
                ARG_BILLING_WEBHOOK
        };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"listen", required_argument, NULL, ARG_LISTEN},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"store", required_argument, NULL, ARG_STORE},
                {"policy", required_argument, NULL, ARG_POLICY},
                {"quota-sandboxes", required_argument, NULL, ARG_QS},
                {"quota-execs", required_argument, NULL, ARG_QE},
                {"quota-memory-mb", required_argument, NULL, ARG_QM},
                {"stop-sandboxes", no_argument, NULL, ARG_STOP},
                {"secrets-dir", required_argument, NULL, ARG_SECRETS},
                {"warm-pool", required_argument, NULL, ARG_WARM},
                {"warm-profile", required_argument, NULL, ARG_WARM_PROFILE},
                {"domain", required_argument, NULL, ARG_DOMAIN},
                {"snapshot-dir", required_argument, NULL, ARG_SNAPDIR},
                {"quota-snapshot-mb", required_argument, NULL, ARG_QSNAP},
                {"quota-volume-mb", required_argument, NULL, ARG_QVOL},
                {"webhook-allow-private", no_argument, NULL, ARG_WH_PRIVATE},
                {"registry", required_argument, NULL, ARG_REGISTRY},
                {"tls-cert", required_argument, NULL, ARG_TLS_CERT},
                {"tls-key", required_argument, NULL, ARG_TLS_KEY},
                {"heartbeat-s", required_argument, NULL, ARG_HEARTBEAT},
                {"public-url", required_argument, NULL, ARG_PUBLIC_URL},
                {"credits", no_argument, NULL, ARG_CREDITS},
                {"meter-interval", required_argument, NULL, ARG_METER_INTERVAL},
                {"quote-ttl", required_argument, NULL, ARG_QUOTE_TTL},
                {"billing-export", required_argument, NULL, ARG_BILLING_EXPORT},
                {"billing-webhook", required_argument, NULL, ARG_BILLING_WEBHOOK},
                {},
        };
        sbx_listen_addr addrs[MAX_LISTEN];
        size_t n_addrs = 0;
        const char *state_flag = NULL, *store_url = NULL, *policy = NULL;
        unsigned long quota_sandboxes = 1000, quota_execs = 256;
        double quota_mem = 0, quota_snap = 0, quota_vol = 0;
        const char *snapshot_dir = NULL;
        bool stop_sandboxes = false;
        bool webhook_private = false;
        const char *registry_dir = NULL, *tls_cert = NULL, *tls_key = NULL, *public_url = NULL;
        double heartbeat = 0, meter_interval = 0, quote_ttl = 0;
        bool credits = false;
        const char *billing_export = NULL, *billing_webhook = NULL;
        const char *secrets_dir = NULL, *domain = NULL;
        unsigned long warm = 0;
        _cleanup_strv_free_ char **warm_profiles = NULL;
        char *end;
        sbx_error e = {};
        char buf[1024];
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_LISTEN:
                        if (n_addrs >= MAX_LISTEN) {
                                cli_error("serve: at most %d --listen addresses", MAX_LISTEN);
                                return SBX_EXIT_FAILURE;
                        }
                        if (sbx_listen_addr_parse(optarg, &addrs[n_addrs], &e) < 0) {
                                cli_error("serve: --listen: %s", sbx_error_format(&e, buf, sizeof buf));
                                return SBX_EXIT_FAILURE;
                        }
                        n_addrs++;
                        break;
                case ARG_STATE_DIR:
                        state_flag = optarg;
                        break;
                case ARG_STORE:
                        store_url = optarg;
                        break;
                case ARG_POLICY:
                        if (access(optarg, R_OK) < 0) {
                                cli_error("serve: --policy %s: %m", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        policy = optarg;
                        break;
                case ARG_QS:
                case ARG_QE:
                        errno = 0;
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (errno || *end || !*optarg || optarg[0] == '-' || v > 1000000) {
                                cli_error("serve: --%s: '%s' is not a count (0 to 1000000)",
                                        c == ARG_QS ? "quota-sandboxes" : "quota-execs", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        if (c == ARG_QS)
                                quota_sandboxes = v;
                        else
                                quota_execs = v;
                        break;
                case ARG_QM:
                        quota_mem = strtod(optarg, &end);
                        if (*end || !*optarg || quota_mem < 0) {
                                cli_error("serve: --quota-memory-mb: '%s' is not a number of MiB", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                case ARG_QSNAP:
                case ARG_QVOL: {
                        double q = strtod(optarg, &end);
                        if (*end || !*optarg || !(q >= 0)) {
                                cli_error("serve: --quota-%s-mb: '%s' is not a number of MiB",
                                        c == ARG_QSNAP ? "snapshot" : "volume", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        *(c == ARG_QSNAP ? &quota_snap : &quota_vol) = q;
                        break;
                }
                case ARG_SNAPDIR:
                        if (!*optarg || optarg[0] != '/') {
                                cli_error("serve: --snapshot-dir: '%s' is not an absolute path", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        snapshot_dir = optarg;
                        break;
                case ARG_STOP:
                        stop_sandboxes = true;
                        break;
                case ARG_WH_PRIVATE:
                        webhook_private = true;
                        break;
                case ARG_TLS_CERT:
                case ARG_TLS_KEY:
                        if (!*optarg) {
                                cli_error("serve: --tls-%s: a PEM file is required",
                                        c == ARG_TLS_CERT ? "cert" : "key");
                                return SBX_EXIT_FAILURE;
                        }
                        *(c == ARG_TLS_CERT ? &tls_cert : &tls_key) = optarg;
                        break;
                case ARG_HEARTBEAT:
                        errno = 0;
                        heartbeat = strtod(optarg, &end);
                        if (errno || *end || !*optarg || !(heartbeat >= 0.2 && heartbeat <= 3600)) {
                                cli_error(
                                        "serve: --heartbeat-s: '%s' is not a number of seconds from 0.2 to "
                                        "3600",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                case ARG_CREDITS:
                        credits = true;
                        break;
                case ARG_METER_INTERVAL:
                        errno = 0;
                        meter_interval = strtod(optarg, &end);
                        if (errno || *end || !*optarg ||
                                !(meter_interval >= 0.2 && meter_interval <= 3600)) {
                                cli_error(
                                        "serve: --meter-interval: '%s' is not a number of seconds from 0.2 "
                                        "to 3600",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                case ARG_BILLING_EXPORT:
                        if (!*optarg) {
                                cli_error("serve: --billing-export: a file to append billing events to");
                                return SBX_EXIT_FAILURE;
                        }
                        billing_export = optarg;
                        break;
                case ARG_BILLING_WEBHOOK:
                        if (strncmp(optarg, "https://", 8) != 0 && strncmp(optarg, "http://", 7) != 0) {
                                cli_error("serve: --billing-webhook: '%s' is not an http:// or https:// URL",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        billing_webhook = optarg;
                        break;
                case ARG_QUOTE_TTL:
                        errno = 0;
                        quote_ttl = strtod(optarg, &end);
                        if (errno || *end || !*optarg || !(quote_ttl >= 1 && quote_ttl <= 86400)) {
                                cli_error("serve: --quote-ttl: '%s' is not a number of seconds from 1 to "
                                          "86400",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                case ARG_PUBLIC_URL:
                        if (strncmp(optarg, "https://", 8) != 0 && strncmp(optarg, "http://", 7) != 0) {
                                cli_error("serve: --public-url: '%s' is not an http:// or https:// URL",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        public_url = optarg;
                        break;
                case ARG_REGISTRY:
                        if (!*optarg) {
                                cli_error("serve: --registry: a directory is required");
                                return SBX_EXIT_FAILURE;
                        }
                        registry_dir = optarg;
                        break;
                case ARG_WARM:
                        errno = 0;
                        warm = strtoul(optarg, &end, 10);
                        if (errno || *end || !*optarg || optarg[0] == '-' || warm > 64) {
                                cli_error("serve: --warm-pool: '%s' is not a count from 0 to 64", optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        break;
                case ARG_DOMAIN: {
                        size_t dl = strlen(optarg);
                        bool ok = dl > 0 && dl <= 200 && optarg[0] != '.' && optarg[0] != '-' &&
                                  optarg[dl - 1] != '.';
                        for (const char *d = optarg; ok && *d; d++)
                                ok = (*d >= 'a' && *d <= 'z') || (*d >= 'A' && *d <= 'Z') ||
                                     (*d >= '0' && *d <= '9') || *d == '-' || *d == '.';
                        if (!ok) {
                                cli_error("serve: --domain: '%s' is not a domain name (letters, digits, '-' "
                                          "and '.', e.g. sandboxes.example.com)",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        domain = optarg;
                        break;
                }
                case ARG_WARM_PROFILE:
                        if (strv_extend(&warm_profiles, optarg) < 0)
                                return SBX_EXIT_FAILURE;
                        break;
                case ARG_SECRETS: {
                        struct stat sst;
                        if (optarg[0] != '/' || stat(optarg, &sst) < 0 || !S_ISDIR(sst.st_mode)) {
                                cli_error("serve: --secrets-dir %s: not an absolute path to a directory",
                                        optarg);
                                return SBX_EXIT_FAILURE;
                        }
                        secrets_dir = optarg;
                        break;
                }
                case '?':
                        cli_error("serve: see 'sandboxer serve --help'");
                        return SBX_EXIT_FAILURE;
                default:
                        return SBX_EXIT_FAILURE;
                }
        if (optind < argc) {
                cli_error("serve: unexpected argument '%s'", argv[optind]);
                return SBX_EXIT_FAILURE;
        }
        if (n_addrs == 0) {
                if (sbx_listen_addr_default(&addrs[0], &e) < 0) {
                        cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                        return SBX_EXIT_FAILURE;
                }
                n_addrs = 1;
        }

        _cleanup_free_ char *state_dir = NULL;
        if (sbx_state_dir(state_flag, &state_dir) < 0) {
                cli_error("serve: no state dir (set XDG_STATE_HOME or pass --state-dir)");
                return SBX_EXIT_FAILURE;
        }
        /* made when missing, parents too (0700 as the token verb and the store make it): the
         * store may live elsewhere (--store), the sandboxes' records are kept here */
        r = sbx_own_dir_p(state_dir, 0700, 0700);
        if (r < 0) {
                cli_error("serve: cannot use the state dir %s: %s%s; set SANDBOXER_STATE_DIR or pass "
                          "--state-dir",
                        state_dir, strerror(-r),
                        r == -EPERM ? " (not a directory of ours that only we can write)" : "");
                return SBX_EXIT_FAILURE;
        }
        _cleanup_store_ sbx_store *store = NULL;
        r = sbx_store_open(store_url, state_dir, &store, &e);
        if (r < 0) {
                cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                return SBX_EXIT_FAILURE;
        }

        /* Blocked before any server thread exists, so only sigwait() below sees them. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                cli_error("serve: sigprocmask: %m");
                return SBX_EXIT_FAILURE;
        }

        /* The sandboxes: reconciled with what runs before any socket opens. */
        char exe[PATH_MAX];
        ssize_t xl = readlink("/proc/self/exe", exe, sizeof exe - 1);
        _cleanup_free_ char *runtime_dir = NULL, *audit_path = NULL;
        if (xl <= 0) {
                cli_error("serve: cannot tell where this program is (/proc/self/exe): %m");
                return SBX_EXIT_FAILURE;
        }
        exe[xl] = 0;
        r = sbx_runtime_dir(&runtime_dir);
        if (r < 0) {
                cli_error(
                        "serve: no usable runtime dir (%s: it must be a directory of ours that only we can "
                        "write); set SANDBOXER_RUNTIME_DIR or XDG_RUNTIME_DIR",
                        strerror(-r));
                return SBX_EXIT_FAILURE;
        }
        /* One server per runtime directory: a server takes the supervisors' sockets it finds there
         * and does not know for orphans and destroys them, so a second one beside it would destroy
         * the first one's sandboxes. Held (close-on-exec, never passed to a supervisor) until exit. */
        _cleanup_close_ int lock_fd = -1;
        r = lock_runtime_dir(runtime_dir, &lock_fd);
        if (r < 0)
                return SBX_EXIT_FAILURE;
        if (asprintf(&audit_path, "%s/%s", state_dir, SBX_AUDIT_FILE) < 0)
                return SBX_EXIT_FAILURE;
        if (!tls_cert != !tls_key) {
                cli_error("serve: --tls-cert and --tls-key go together (a certificate and its key)");
                return SBX_EXIT_FAILURE;
        }
        sbx_mgr_options mo = {.state_dir = state_dir,
                .runtime_dir = runtime_dir,
                .exe = exe,
                .policy_file = policy,
                .secrets_dir = secrets_dir,
                .warm_pool = (unsigned) warm,
                .warm_profiles = warm_profiles,
                .audit_path = audit_path,
                .quota_sandboxes = (unsigned) quota_sandboxes,
                .quota_execs = (unsigned) quota_execs,
                .quota_memory_mb = quota_mem,
                .quota_snapshot_mb = quota_snap,
                .quota_volume_mb = quota_vol,
                .snapshot_dir = snapshot_dir,
                .stop_sandboxes = stop_sandboxes,
                .webhook_allow_private = webhook_private,
                .registry_dir = registry_dir,
                .heartbeat_s = heartbeat,
                .public_url = public_url,
                .credits = credits,
                .meter_interval_s = meter_interval,
                .quote_ttl_s = quote_ttl,
                .billing_export = billing_export,
                .billing_webhook = billing_webhook,
                .domain = domain};
        sbx_mgr *mgr = NULL;
        if (sbx_mgr_new(store, &mo, &mgr, &e) < 0 || sbx_mgr_start(mgr, &e) < 0) {
                cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                sbx_mgr_free(mgr);
                return SBX_EXIT_FAILURE;
        }

        sbx_http_server *srv = NULL;
        if (sbx_http_server_new(store, &srv) < 0) {
                cli_error("serve: out of memory");
                sbx_mgr_free(mgr);
                return SBX_EXIT_FAILURE;
        }
        sbx_http_server_set_sandboxes(srv, mgr);
        if (tls_cert && sbx_http_server_set_tls(srv, tls_cert, tls_key, &e) < 0) {
                cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                sbx_http_server_free(srv);
                sbx_mgr_free(mgr);
                return SBX_EXIT_FAILURE;
        }
        for (size_t i = 0; i < n_addrs; i++) {
                if (!addrs[i].is_unix && !tls_cert && !streq(addrs[i].host, "127.0.0.1") &&
                        !streq(addrs[i].host, "::1") && !streq(addrs[i].host, "localhost"))
                        sbx_log(SBX_LOG_WARNING, "plain_tcp", "listen", addrs[i].host, "hint",
                                "tokens cross the network in clear: give --tls-cert and --tls-key", NULL);
                r = sbx_http_server_listen(srv, &addrs[i], &e);
                if (r < 0) {
                        cli_error("serve: %s", sbx_error_format(&e, buf, sizeof buf));
                        sbx_http_server_free(srv);
                        sbx_mgr_free(mgr);
                        return SBX_EXIT_FAILURE;
                }
                char where[PATH_MAX + 16];
                if (addrs[i].is_unix)
                        snprintf(where, sizeof where, "unix:%s", addrs[i].path);
                else
                        snprintf(where, sizeof where, "%s%s%s:%u", strchr(addrs[i].host, ':') ? "[" : "",
                                addrs[i].host, strchr(addrs[i].host, ':') ? "]" : "", addrs[i].port);
                sbx_log(SBX_LOG_INFO, "listening", "addr", where, "store", sbx_store_path(store), "auth",
                        addrs[i].is_unix ? "peer" : "bearer", NULL);
        }

        int sig = 0;
        while (sigwait(&mask, &sig) != 0)
                ;
        sbx_log(SBX_LOG_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
        sbx_mgr_stop(mgr);
        sbx_http_server_free(srv);
        if (sbx_mgr_close(mgr) == -EBUSY)
                (void) TAKE_PTR(store); /* threads left running still use it: the exit frees it */
        return 0;
}
