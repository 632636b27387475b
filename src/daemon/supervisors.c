/* supervisors.c — each sandbox's supervisor: started, spoken to over its socket, stopped; reports of execs
 * that ran while the server was away. */
#include "daemon/mgr-internal.h"
#include "basic/debug.h"

#include "basic/strv.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ---- supervisors --------------------------------------------------------------------------- */

int mgr_sv_connect(const box *b) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", b->sock);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int mgr_sv_take(sbx_mgr *m, box *b, bool *reused) {
        pthread_mutex_lock(&m->lock);
        int fd = b->sv_idle_n > 0 ? b->sv_idle[--b->sv_idle_n] : -1;
        pthread_mutex_unlock(&m->lock);
        *reused = fd >= 0;
        return fd >= 0 ? fd : mgr_sv_connect(b);
}

void mgr_sv_keep(sbx_mgr *m, box *b, int fd) {
        pthread_mutex_lock(&m->lock);
        bool kept = b->sv_idle_n < ELEMENTSOF(b->sv_idle);
        if (kept)
                b->sv_idle[b->sv_idle_n++] = fd;
        pthread_mutex_unlock(&m->lock);
        if (!kept)
                close(fd);
}

void mgr_sv_drop_idle(sbx_mgr *m, box *b) {
        pthread_mutex_lock(&m->lock);
        unsigned n = b->sv_idle_n;
        int fds[ELEMENTSOF(b->sv_idle)];
        memcpy(fds, b->sv_idle, n * sizeof *fds);
        b->sv_idle_n = 0;
        pthread_mutex_unlock(&m->lock);
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
}

int mgr_sv_send(int fd, json_t *req, const int *fds, int nfds) {
        char *text = json_dumps(req, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(3 * sizeof(int))];
        } cbuf;
        memset(&cbuf, 0, sizeof cbuf);
        struct iovec iov = {.iov_base = text, .iov_len = strlen(text)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (nfds > 0) {
                mh.msg_control = cbuf.b;
                mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, (size_t) nfds * sizeof(int));
        }
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        free(text);
        return n < 0 ? -errno : 0;
}

json_t *mgr_sv_recv(int fd, int timeout_ms) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int k;
        do
                k = poll(&pf, 1, timeout_ms);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return NULL;
        /* the answer's own size (one SEQPACKET message), not SBX_SV_ANS_MAX for each */
        char small[8192];
        ssize_t want = recv(fd, small, 0, MSG_PEEK | MSG_TRUNC);
        if (want <= 0)
                return NULL;
        size_t cap = (size_t) want <= sizeof small ? sizeof small : (size_t) want;
        if (cap > SBX_SV_ANS_MAX)
                cap = SBX_SV_ANS_MAX;
        char *buf = cap <= sizeof small ? small : malloc(cap);
        if (!buf)
                return NULL;
        ssize_t n = recv(fd, buf, cap, 0);
        json_t *j = NULL;
        if (n > 0) {
                json_error_t je;
                j = json_loadb(buf, (size_t) n, 0, &je);
        }
        if (buf != small)
                free(buf);
        return j;
}

/* One request without descriptors, its answer (NULL when the supervisor is not there). */
json_t *mgr_sv_call(const box *b, const char *op, int timeout_ms) {
        return mgr_sv_call_body(b, json_pack("{s:s}", "op", op), timeout_ms);
}

json_t *mgr_sv_call_body(const box *b, json_t *req, int timeout_ms) {
        int fd = mgr_sv_connect(b);
        if (fd < 0) {
                json_decref(req);
                return NULL;
        }
        json_t *ans = NULL;
        if (mgr_sv_send(fd, req, NULL, 0) >= 0)
                ans = mgr_sv_recv(fd, timeout_ms);
        json_decref(req);
        close(fd);
        return ans;
}

bool mgr_pidfd_dead(int pidfd) {
        if (pidfd < 0)
                return true;
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        return poll(&pf, 1, 0) > 0;
}

bool mgr_secret_name_ok(const char *s) {
        if (!s || !*s || strlen(s) > 128 || streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                            *p == '.' || *p == '_' || *p == '-'))
                        return false;
        return true;
}

/* The secrets b's profile names, from the secrets dir, as the supervisor reads them: a sealed
 * memfd holding {NAME: BASE64}. -1 and nothing when there are none; -errno with msg. */
static int secrets_fd(sbx_mgr *m, box *b, char *msg, size_t msgsz) {
        if (!b->secret_names) {
                sbx_profile *pr = NULL;
                sbx_error e = {0};
                char pref[PATH_MAX + 16];
                if (sbx_profile_load(mgr_box_profile_ref(b, pref, sizeof pref), &pr, &e) < 0) {
                        snprintf(msg, msgsz, "cannot load profile %.200s: %.600s", b->profile, e.message);
                        return -ENOENT;
                }
                b->secret_names = json_array();
                for (char **s = pr->secrets; s && *s; s++)
                        json_array_append_new(b->secret_names, json_string(*s));
                json_decref(b->profile_secrets);
                b->profile_secrets = json_deep_copy(b->secret_names);
                json_t *ref;
                size_t ri;
                json_array_foreach(
                        json_object_get(json_object_get(b->seed, "setup_metadata"), "secret_refs"), ri,
                        ref) if (!strv_contains(pr->secrets, json_string_value(ref)))
                        json_array_append(b->secret_names, ref);
                sbx_profile_free(pr);
        }
        if (json_array_size(b->secret_names) == 0)
                return -1;
        json_t *all = json_object();
        size_t i;
        json_t *n;
        int r = 0;
        json_array_foreach(b->secret_names, i, n) {
                const char *name = json_string_value(n);
                char path[PATH_MAX];
                if (!mgr_secret_name_ok(name)) {
                        snprintf(msg, msgsz, "secret name '%.130s' is not [A-Za-z0-9._-]", name ? name : "");
                        r = -EINVAL;
                        break;
                }
                /* the server's store for what the profile names; a create's own refs: the tenant's */
                int fd = mgr_secret_open(
                        m, b->tenant, name, mgr_json_has_str(b->profile_secrets, name), path, sizeof path);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 65536) {
                        snprintf(msg, msgsz,
                                "secret '%s' is neither the tenant's nor in the server's secret store (%s)",
                                name, fd < 0 ? strerror(-fd) : "not a regular file of at most 64 KiB");
                        if (fd >= 0)
                                close(fd);
                        r = -ENOKEY;
                        break;
                }
                char buf[65536];
                ssize_t k = read(fd, buf, sizeof buf);
                close(fd);
                if (k < 0) {
                        snprintf(msg, msgsz, "cannot read secret '%s': %s", name, strerror(errno));
                        r = -EIO;
                        break;
                }
                json_object_set_new(all, name, mgr_base64_json((const unsigned char *) buf, (size_t) k));
                explicit_bzero(buf, (size_t) k);
        }
        char *text = r >= 0 ? json_dumps(all, JSON_COMPACT) : NULL;
        json_decref(all);
        if (r < 0)
                return r;
        int fd = memfd_create("sandboxer-secrets", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        size_t len = text ? strlen(text) : 0;
        if (fd < 0 || write(fd, text, len) != (ssize_t) len || lseek(fd, 0, SEEK_SET) < 0) {
                snprintf(msg, msgsz, "cannot hand over the secrets: %s", strerror(errno));
                if (fd >= 0)
                        close(fd);
                fd = -EIO;
        } else
                (void) fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        if (text) {
                explicit_bzero(text, len);
                free(text);
        }
        return fd;
}

/* fd moved to a number >= min (close-on-exec), the original closed; fd itself when it already
 * is, or when it cannot be moved. */
static int fd_above(int fd, int min) {
        if (fd >= min)
                return fd;
        int n = fcntl(fd, F_DUPFD_CLOEXEC, min);
        if (n < 0)
                return fd;
        close(fd);
        return n;
}

/* b's resolved configuration in a sealed memfd, for --config-fd (the supervisor reads it to its
 * end). The fd, or -errno with msg. */
static int config_fd(const box *b, char *msg, size_t msgsz) {
        int fd = memfd_create("sandboxer-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || write(fd, b->config, b->config_len) != (ssize_t) b->config_len ||
                lseek(fd, 0, SEEK_SET) < 0) {
                int r = errno ? -errno : -EIO;
                snprintf(msg, msgsz, "cannot hand over the resolved configuration: %s", strerror(-r));
                safe_close(fd);
                return r;
        }
        (void) fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        return fd;
}

/* Start the supervisor for b (double fork: in a session of its own, not our child), wait for
 * its word. 0 with b's pids, backend and scratch filled; -errno with a message in msg.
 * meanwhile(ud), if given, runs once the supervisor is started (its ~6 ms of start-up overlap
 * whatever it does, e.g. storing the sandbox's first states), or before an early failure. */
static int sv_spawn_inner(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook *meanwhile, void *ud);

int mgr_sv_spawn_hooked(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook meanwhile, void *ud) {
        int r = sv_spawn_inner(m, b, budget_used, msg, msgsz, &meanwhile, ud);
        if (meanwhile)
                meanwhile(ud); /* not run yet: an early failure; the states go in in order still */
        return r;
}

int mgr_sv_spawn(sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz) {
        return mgr_sv_spawn_hooked(m, b, budget_used, msg, msgsz, NULL, NULL);
}

static int sv_spawn_inner(
        sbx_mgr *m, box *b, double budget_used, char *msg, size_t msgsz, spawn_hook *meanwhile, void *ud) {
        char budget[32], logpath[PATH_MAX + 32], ws[PATH_MAX + 16], pref[PATH_MAX + 16];
        snprintf(budget, sizeof budget, "%.3f", budget_used);
        snprintf(logpath, sizeof logpath, "%s/supervisor.log", b->dir);
        char *argv[24 + 2 * 16];
        char vols[16][PATH_MAX + 300];
        int n = 0;
        argv[n++] = m->exe;
        if (!m->supervise_exe_lean)
                argv[n++] = (char *) "supervise";
        argv[n++] = (char *) "--id";
        argv[n++] = b->id;
        argv[n++] = (char *) "--socket";
        argv[n++] = b->sock;
        argv[n++] = (char *) "--state";
        argv[n++] = b->dir;
        argv[n++] = (char *) "--profile";
        argv[n++] = (char *) mgr_box_profile_ref(b, pref, sizeof pref);
        argv[n++] = (char *) "--ready-fd";
        argv[n++] = (char *) SBX_SV_STR(SBX_SV_FD_READY);
        argv[n++] = (char *) "--budget-used";
        argv[n++] = budget;
        if (m->policy_file) {
                argv[n++] = (char *) "--policy";
                argv[n++] = m->policy_file;
        }
        if (b->skill) { /* the skill's verified files (skills.c) */
                snprintf(ws, sizeof ws, "%s/workspace", b->dir);
                argv[n++] = (char *) "--workspace";
                argv[n++] = ws;
        }
        /* its volumes (volumes.c): each mounted on the host, bound inside by the supervisor */
        json_t *v;
        size_t vi;
        json_array_foreach(b->volumes, vi, v) {
                if (vi >= 16)
                        break;
                char host[PATH_MAX];
                int err = 0;
                const char *name = json_string_value(json_object_get(v, "name"));
                if (!mgr_volume_host(m, b->tenant, name ?: "", host, sizeof host, &err)) {
                        snprintf(msg, msgsz, "volume '%.64s': %s", name ?: "",
                                err == -ENOENT ? "no such volume (deleted?)" : strerror(-err));
                        return err < 0 ? err : -ENOENT;
                }
                snprintf(vols[vi], sizeof vols[vi], "%s:%s:%s", host,
                        json_string_value(json_object_get(v, "mount")) ?: "",
                        streq_ptr(json_string_value(json_object_get(v, "access")), "ro") ? "ro" : "rw");
                argv[n++] = (char *) "--volume";
                argv[n++] = vols[vi];
        }
        int sfd = secrets_fd(m, b, msg, msgsz);
        if (sfd < -1)
                return sfd;
        if (sfd >= 0) {
                argv[n++] = (char *) "--secrets-fd";
                argv[n++] = (char *) SBX_SV_STR(SBX_SV_FD_SECRETS);
        }
        int cfd = -1;
        if (b->config) {
                cfd = config_fd(b, msg, msgsz);
                if (cfd < 0) {
                        safe_close(sfd);
                        return cfd;
                }
                argv[n++] = (char *) "--config-fd";
                argv[n++] = (char *) SBX_SV_STR(SBX_SV_FD_CONFIG);
        }
        argv[n] = NULL;
        extern char **environ;

        if (mkdir(b->dir, 0700) < 0 && errno != EEXIST) {
                int r = -errno;
                snprintf(msg, msgsz, "cannot create %.900s: %s", b->dir, strerror(errno));
                safe_close(sfd);
                safe_close(cfd);
                return r;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                int r = -errno;
                snprintf(msg, msgsz, "pipe: %s", strerror(errno));
                safe_close(sfd);
                safe_close(cfd);
                return r;
        }
        /* The descriptors dup2()ed to 3, 4 and 5 below must not be among 3..5 themselves (one
         * would be overwritten before its own turn). */
        p[1] = fd_above(p[1], 10);
        sfd = sfd >= 0 ? fd_above(sfd, 10) : sfd;
        cfd = cfd >= 0 ? fd_above(cfd, 10) : cfd;
#if SBX_TEST_HOOKS
        /* Test hook (-Dtest_hooks=true only): a pause between the create's resolution and the
         * supervisor's start, for a test that edits the policy file in it. */
        const char *delay = getenv("SANDBOXER_TEST_SPAWN_DELAY_MS");
        if (delay && atoi(delay) > 0)
                usleep((useconds_t) atoi(delay) * 1000);
#endif
        /* Through the spawner (spawner.c: a process with few descriptors, whose child it is and
         * which hands back its pidfd), else here: posix_spawn (vfork-like: no copy of this big,
         * threaded process), in a session of its own; our child until we reap it, re-parented to
         * init when we go. */
        pid_t c = 0;
        int sv_pidfd = -1, sr = 0;
        int vr = mgr_spawner_spawn(m, logpath, argv, p[1], sfd, cfd, &c, &sv_pidfd, &sr);
        if (vr > 0) { /* the spawner not asked: here */
                posix_spawn_file_actions_t fa;
                posix_spawnattr_t at;
                sbx_sv_spawnattr(&at);
                int top = sbx_sv_spawn_fds(&fa, logpath, p[1], sfd, cfd);
                posix_spawn_file_actions_addclosefrom_np(&fa, top + 1);
                sr = posix_spawn(&c, m->exe, &fa, &at, argv, environ);
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&at);
        }
        close(p[1]);
        safe_close(sfd);
        safe_close(cfd);
        if (vr < 0 || sr != 0) { /* asked and no answer (it may have started one: not a second) */
                close(p[0]);
                if (vr < 0)
                        snprintf(msg, msgsz, "the supervisors' spawner did not answer: %s", strerror(-vr));
                else
                        snprintf(msg, msgsz, "cannot start %.900s: %s", m->exe, strerror(sr));
                return vr < 0 ? vr : -sr;
        }
        b->sv_child = vr > 0; /* else the spawner's child: it reaps it */
        sbx_debug_mark("serve: supervisor started");
        if (*meanwhile) {
                (*meanwhile)(ud);
                *meanwhile = NULL;
        }
        char line[4400];
        size_t got = 0;
        int64_t deadline = mgr_now_ms() + PROVISION_TIMEOUT_MS;
        while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
                int64_t left = deadline - mgr_now_ms();
                struct pollfd pf = {.fd = p[0], .events = POLLIN};
                int k = left > 0 ? poll(&pf, 1, (int) left) : 0;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                ssize_t r = read(p[0], line + got, sizeof line - 1 - got);
                if (r <= 0)
                        break;
                got += (size_t) r;
        }
        sbx_debug_mark("serve: supervisor ready");
        close(p[0]);
        line[got] = 0;
        char *nl = strchr(line, '\n');
        if (nl)
                *nl = 0;
        int init_pid = 0, sv_pid = 0;
        char backend[16] = "", scratch[512] = "", home[256] = "";
        if (sscanf(line, "ready %d %d %15s %511s %255s", /* SBX_SV_READY_FMT */ &init_pid, &sv_pid, backend,
                    scratch, home) == 5 &&
                sv_pid > 0) {
                b->init_pid = init_pid;
                b->sv_pid = sv_pid;
                /* the spawner's pidfd (taken before it could reap it), else ours: our child,
                 * not reaped before we say so */
                if (sv_pidfd >= 0 && sv_pid == c)
                        b->sv_pidfd = TAKE_FD(sv_pidfd);
                else
                        b->sv_pidfd = (int) syscall(SYS_pidfd_open, sv_pid, 0);
                safe_close(sv_pidfd);
                snprintf(b->backend, sizeof b->backend, "%s", backend);
                snprintf(b->scratch, sizeof b->scratch, "%s", streq(scratch, "-") ? "" : scratch);
                snprintf(b->home, sizeof b->home, "%s", streq(home, "-") ? "" : home);
                return 0;
        }
        safe_close(sv_pidfd);
        if (strncmp(line, SBX_SV_ERROR_PREFIX, strlen(SBX_SV_ERROR_PREFIX)) == 0)
                snprintf(msg, msgsz, "%.1000s", line + 6);
        else if (got == 0)
                snprintf(msg, msgsz, "the supervisor ended without a word (see %.900s)", logpath);
        else
                snprintf(msg, msgsz, "the supervisor said: %.300s", line);
        return -EIO;
}

/* Whether id is one to take in: not stored, not one this server has in hand. */
static bool ingest_wanted(sbx_mgr *m, box *b, const char *id) {
        pthread_mutex_lock(&m->lock);
        bool in_hand = mgr_exec_in_hand_locked(b, id);
        pthread_mutex_unlock(&m->lock);
        return !in_hand && !sbx_store_exec_exists(m->store, id);
}

/* One report the supervisor kept that the store has not got: stored, counted, streamed. */
static void ingest_one(sbx_mgr *m, box *b, const char *id, json_t *rep) {
        mgr_skill_stamp_report(b, rep);
        char *text = json_dumps(rep, JSON_COMPACT);
        json_t *code = json_object_get(json_object_get(rep, "exit"), "code");
        sbx_store_exec x = {
                .id = id,
                .sandbox_id = b->id,
                .status = json_string_value(json_object_get(rep, "status")),
                .exit_code = json_is_integer(code) ? json_integer_value(code) : -1,
                .started_at = mgr_now_ms(),
                .ended_at = mgr_now_ms(),
                .report_json = text,
        };
        (void) sbx_store_exec_put(m->store, &x, true);
        free(text);
        mgr_skill_audit_exec(m, b, id, rep);
        pthread_mutex_lock(&m->lock);
        b->execs++;
        pthread_mutex_unlock(&m->lock);
        mgr_emit(m, b, "sandbox.exec", json_pack("{s:s, s:s}", "exec_id", id, "note", "recovered"));
}

/* Reports the supervisor kept that the store has not got (the server was away): its log
 * (SBX_SV_EXEC_LOG: "EXEC_ID LENGTH\n", the report, "\n"; a record cut short by a crash is the
 * last and is left), and the one-file-per-exec directory earlier supervisors wrote. */
void mgr_ingest_exec_reports(sbx_mgr *m, box *b) {
        if (!sbx_store_tx_open(m->store))
                mgr_settled(m, b); /* what it owes the store is there first */
        char path[PATH_MAX + 100];
        snprintf(path, sizeof path, "%s/" SBX_SV_EXEC_LOG, b->dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        char *log = NULL;
        size_t n = 0;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
                (uint64_t) st.st_size < ((uint64_t) 1 << 32) && (log = malloc((size_t) st.st_size + 1))) {
                while (n < (size_t) st.st_size) {
                        ssize_t k = read(fd, log + n, (size_t) st.st_size - n);
                        if (k <= 0)
                                break;
                        n += (size_t) k;
                }
                log[n] = 0;
        }
        safe_close(fd);
        for (size_t off = 0; log && off < n;) {
                char *nl = memchr(log + off, '\n', n - off),
                     *sp = nl ? memchr(log + off, ' ', (size_t) (nl - log - off)) : NULL;
                if (!sp)
                        break;
                char *end;
                unsigned long long len = strtoull(sp + 1, &end, 10);
                size_t body = (size_t) (nl - log) + 1;
                if (end != nl || len > n - body || n - body - len < 1 || log[body + len] != '\n')
                        break; /* cut short: the last one, written as the supervisor died */
                char id[80];
                if (sbx_sv_exec_id_ok(log + off, (size_t) (sp - log - off))) {
                        snprintf(id, sizeof id, "%.*s", (int) (sp - log - off), log + off);
                        json_error_t je;
                        json_t *rep = ingest_wanted(m, b, id) ? json_loadb(log + body, len, 0, &je) : NULL;
                        if (rep)
                                ingest_one(m, b, id, rep);
                        json_decref(rep);
                }
                off = body + len + 1;
        }
        free(log);

        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/execs", b->dir);
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (de->d_name[0] == '.' || l < 6 || !streq(de->d_name + l - 5, ".json") || l > 80)
                        continue;
                char id[80];
                snprintf(id, sizeof id, "%.*s", (int) (l - 5), de->d_name);
                if (!ingest_wanted(m, b, id))
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                json_error_t je;
                json_t *rep = json_load_file(path, 0, &je);
                if (!rep)
                        continue;
                ingest_one(m, b, id, rep);
                json_decref(rep);
        }
        closedir(d);
}

/* End the supervisor (and with it the sandbox), and remove what is left of it. */
void mgr_sv_stop(sbx_mgr *m, box *b) {
        mgr_sv_drop_idle(m, b);
        if (b->sv_pidfd >= 0 && !mgr_pidfd_dead(b->sv_pidfd)) {
                json_t *ans = mgr_sv_call(b, SBX_SV_OP_DESTROY, 5000);
                json_decref(ans);
                struct pollfd pf = {.fd = b->sv_pidfd, .events = POLLIN};
                int k;
                do
                        k = poll(&pf, 1, DESTROY_WAIT_MS);
                while (k < 0 && errno == EINTR);
                if (k == 0) {
                        (void) syscall(SYS_pidfd_send_signal, b->sv_pidfd, SIGKILL, NULL, 0);
                        do
                                k = poll(&pf, 1, DESTROY_WAIT_MS);
                        while (k < 0 && errno == EINTR);
                }
        } else if (b->sv_pidfd < 0 && b->sv_pid > 0) {
                /* no pidfd: ask, and trust the socket going away */
                json_decref(mgr_sv_call(b, SBX_SV_OP_DESTROY, 2000));
        }
        /* reaped if it is our child after all: a spawner's child re-parented to this server (PID
         * 1 of a container, or a subreaper) when its spawner died. Through the pidfd: no pid
         * reuse; not our child, ECHILD. */
        if (b->sv_pidfd >= 0 && !b->sv_child) {
                siginfo_t si;
                (void) waitid((idtype_t) 3 /* P_PIDFD */, (id_t) b->sv_pidfd, &si, WEXITED | WNOHANG);
        }
        if (b->sv_pidfd >= 0)
                close(b->sv_pidfd);
        b->sv_pidfd = -1;
        if (b->sv_child && b->sv_pid > 0) {
                (void) waitpid(b->sv_pid, NULL, WNOHANG); /* gone by now: no wait */
                b->sv_child = false;
        }
        (void) unlink(b->sock);
        mgr_ingest_exec_reports(m, b);
}
