/* ext-compose.c — ext.compose-ssh: a compose bundle brought up over SSH on a registered host
 * (DESIGN.md's first-priority extension). The registry entry:
 *
 *     id: ext.compose
 *     kind: compose-ssh
 *     url: ssh://deploy@build1.example:22   # the host when none is registered (POST /v1/hosts)
 *     auth: {secret: compose-key}           # the SSH private key: the tenant's, else the server's
 *     known_hosts: /etc/sandboxer/compose-known-hosts   # host keys checked, never learned
 *
 * A create names the bundle: `inputs: {compose_bundle_ref: PATH, compose_service: NAME}` — a
 * directory (with compose.yaml and its Containerfiles) or a tar of one, uploaded to the host
 * beforehand. Provision copies it to ~/.sandboxer/bundles/PROJECT there, builds its images there
 * from the local Containerfiles (no registry) and brings it up with podman-compose (Debian 12;
 * Docker's compose v2 is not packaged there), then checks every service runs (podman-compose
 * answers 0 though a container did not start). Podman's default rlimits are set to what the host
 * allows (containers.conf beside the bundle: podman 4.3 asks nofile 1048576 and lowers its own
 * nproc to 32768, and a host with lower hard limits refuses those containers). An exec runs in
 * the service's container (`compose_service`, else the first), its stdout and stderr kept apart,
 * at the end; files are that container's (cat in, cat out); teardown is `down` and the copy
 * removed; reachability names the SSH endpoint. The ssh client is OpenSSH's, with BatchMode, the
 * given known_hosts and StrictHostKeyChecking: a host whose key is not there is refused. */
#include "daemon/remote.h"

#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define OUT_MAX (16u * 1024 * 1024)

typedef struct ssh_to {
        char user[64], host[256], port[8];
        char key[PATH_MAX]; /* the private key, written 0600 for this call (removed after) */
        char known_hosts[PATH_MAX];
} ssh_to;

/* ssh://[USER@]HOST[:PORT] */
static bool parse_ssh(const char *a, ssh_to *t) {
        if (!a || strncmp(a, "ssh://", 6) != 0)
                return false;
        const char *p = a + 6, *at = strchr(p, '@');
        if (at) {
                snprintf(t->user, sizeof t->user, "%.*s", (int) (at - p), p);
                p = at + 1;
        } else
                snprintf(t->user, sizeof t->user, "root");
        const char *colon = strrchr(p, ':');
        size_t hl = colon ? (size_t) (colon - p) : strcspn(p, "/");
        snprintf(t->host, sizeof t->host, "%.*s", (int) hl, p);
        snprintf(t->port, sizeof t->port, "%s", colon ? colon + 1 : "22");
        t->port[strcspn(t->port, "/")] = 0;
        for (const char *q = t->user; *q; q++)
                if (!(isalnum((unsigned char) *q) || strchr("._-", *q)))
                        return false;
        return t->host[0] && t->host[0] != '-' && atoi(t->port) > 0 && !strpbrk(t->host, " \t\n'\"\\");
}

/* Where b's sandbox is: the chosen host's address, else the entry's url; its key and known_hosts. */
static bool target_of(sbx_mgr *m, const box *b, const remote_ep *ep, ssh_to *t, char *why, size_t n) {
        *t = (ssh_to){0};
        const char *host = json_string_value(json_object_get(b->route, "chosen_host"));
        json_t *hl = host ? mgr_hosts_of(m, ep->ext) : NULL, *h;
        const char *addr = NULL;
        size_t i;
        json_array_foreach(hl, i, h) if (streq_ptr(json_string_value(json_object_get(h, "id")), host)) addr =
                json_string_value(json_object_get(h, "address"));
        if (!addr && b->reach[0])
                addr = b->reach;
        if (!addr)
                addr = ep->url[0] ? ep->url : NULL;
        bool ok = parse_ssh(addr, t);
        if (!ok)
                snprintf(why, n,
                        "%s: no SSH host to reach (%s): register one (POST /v1/hosts {extension: %s, "
                        "address: "
                        "ssh://USER@HOST:PORT}) or give the entry a url",
                        ep->ext, addr ? addr : "none", ep->ext);
        json_decref(hl);
        json_t *x = ok ? mgr_registry_entry(ep->ext) : NULL;
        snprintf(t->known_hosts, sizeof t->known_hosts, "%s",
                json_string_value(json_object_get(x, "known_hosts")) ?: "");
        json_decref(x);
        if (ok && !ep->token[0]) {
                snprintf(why, n, "%s: no SSH key (the entry's auth.secret)", ep->ext);
                ok = false;
        }
        if (ok) { /* the key for ssh -i: 0600 in the runtime dir, this call's own */
                char id[24];
                mgr_random_id("key_", id, sizeof id);
                snprintf(t->key, sizeof t->key, "%.3000s/sandboxes/%s", m->runtime_dir, id);
                int fd = open(t->key, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                size_t kl = strlen(ep->token);
                ok = fd >= 0 && write(fd, ep->token, kl) == (ssize_t) kl && write(fd, "\n", 1) == 1;
                if (fd >= 0)
                        close(fd);
                if (!ok) {
                        snprintf(why, n, "cannot write the SSH key for this call (%s): %m", t->key);
                        (void) unlink(t->key);
                        t->key[0] = 0;
                }
        }
        return ok;
}

static void target_done(ssh_to *t) {
        if (t->key[0])
                (void) unlink(t->key);
        t->key[0] = 0;
}

/* 'word' for sh. */
static char *sq(const char *w) {
        size_t n = 3;
        for (const char *p = w; *p; p++)
                n += *p == '\'' ? 4 : 1;
        char *s = malloc(n), *o = s;
        if (!s)
                return NULL;
        *o++ = '\'';
        for (const char *p = w; *p; p++)
                if (*p == '\'') {
                        memcpy(o, "'\\''", 4);
                        o += 4;
                } else
                        *o++ = *p;
        *o++ = '\'';
        *o = 0;
        return s;
}

typedef struct ssh_out {
        char *out, *err;
        size_t on, en;
        int status; /* the remote command's exit status; 255: ssh's own failure; -1: not run */
} ssh_out;

static void ssh_out_done(ssh_out *o) {
        free(o->out);
        free(o->err);
        *o = (ssh_out){.status = -1};
}

static bool grab(int fd, char **buf, size_t *n) {
        char tmp[65536];
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k <= 0)
                return false;
        if (*n + (size_t) k > OUT_MAX)
                return true; /* past the cap: dropped, the command goes on */
        char *nb = realloc(*buf, *n + (size_t) k + 1);
        if (!nb)
                return true;
        memcpy(nb + *n, tmp, (size_t) k);
        *buf = nb;
        *n += (size_t) k;
        nb[*n] = 0;
        return true;
}

/* ssh to t, running cmd there with in on its stdin; everything collected; timeout_ms. 0, or
 * -errno with why (it could not run, or timed out: killed). */
static int ssh_run(sbx_mgr *m, const ssh_to *t, const char *cmd, const char *in, size_t inlen,
        int timeout_ms, ssh_out *o, char *why, size_t n) {
        *o = (ssh_out){.status = -1};
        int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
        if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
                int e = errno;
                snprintf(why, n, "pipe: %s", strerror(e));
                int *all[] = {pin, pout, perr};
                for (size_t i = 0; i < ELEMENTSOF(all); i++)
                        for (int j = 0; j < 2; j++)
                                if (all[i][j] >= 0)
                                        close(all[i][j]);
                return -e;
        }
        char kh[PATH_MAX + 32], ko[] = "StrictHostKeyChecking=yes";
        snprintf(kh, sizeof kh, "UserKnownHostsFile=%s", t->known_hosts[0] ? t->known_hosts : "/dev/null");
        char dest[340];
        snprintf(dest, sizeof dest, "%s@%s", t->user, t->host);
        char *argv[] = {(char *) "ssh", (char *) "-T", (char *) "-i", (char *) t->key, (char *) "-p",
                (char *) t->port, (char *) "-o", (char *) "BatchMode=yes", (char *) "-o", ko, (char *) "-o",
                kh, (char *) "-o", (char *) "IdentitiesOnly=yes", (char *) "-o",
                (char *) "ConnectTimeout=10", (char *) "-o", (char *) "ServerAliveInterval=10",
                (char *) "-o", (char *) "LogLevel=ERROR", (char *) "--", dest, (char *) cmd, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
        posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
        posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t none, dfl;
        sigemptyset(&none);
        sigemptyset(&dfl);
        sigaddset(&dfl, SIGPIPE);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &dfl);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        pid_t pid = -1;
        int r = posix_spawnp(&pid, "ssh", &fa, &at, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        close(pin[0]);
        close(pout[1]);
        close(perr[1]);
        if (r != 0) {
                close(pin[1]);
                close(pout[0]);
                close(perr[0]);
                snprintf(why, n, "cannot run ssh (OpenSSH's client: apt install openssh-client): %s",
                        strerror(r));
                return -r;
        }
        (void) fcntl(pin[1], F_SETFL, O_NONBLOCK);
        size_t off = 0;
        if (!in || inlen == 0) {
                close(pin[1]);
                pin[1] = -1;
        }
        int64_t deadline = mgr_now_ms() + timeout_ms;
        bool oo = true, eo = true, timed_out = false;
        while (oo || eo) {
                struct pollfd pf[3] = {{.fd = oo ? pout[0] : -1, .events = POLLIN},
                        {.fd = eo ? perr[0] : -1, .events = POLLIN}, {.fd = pin[1], .events = POLLOUT}};
                int64_t left = deadline - mgr_now_ms();
                if (left <= 0 || mgr_stopping(m)) {
                        timed_out = true;
                        break;
                }
                if (poll(pf, 3, left > 1000 ? 1000 : (int) left) < 0 && errno != EINTR)
                        break;
                if (pf[0].revents)
                        oo = grab(pout[0], &o->out, &o->on);
                if (pf[1].revents)
                        eo = grab(perr[0], &o->err, &o->en);
                if (pin[1] >= 0 && pf[2].revents) {
                        ssize_t k = pf[2].revents & POLLOUT ? write(pin[1], in + off, inlen - off) : -1;
                        if (k > 0)
                                off += (size_t) k;
                        if (k < 0 && errno == EAGAIN)
                                continue;
                        if (k <= 0 || off >= inlen) {
                                close(pin[1]);
                                pin[1] = -1;
                        }
                }
        }
        if (pin[1] >= 0)
                close(pin[1]);
        close(pout[0]);
        close(perr[0]);
        if (timed_out)
                (void) kill(pid, SIGKILL);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        if (timed_out) {
                snprintf(why, n, "%s:%s: no answer within %d s (killed)", t->host, t->port,
                        timeout_ms / 1000);
                return -ETIMEDOUT;
        }
        o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
        if (o->status == 255) {
                snprintf(why, n, "ssh to %s@%s:%s failed: %.400s", t->user, t->host, t->port,
                        o->en ? o->err : "no reason given");
                size_t l = strlen(why);
                while (l && (why[l - 1] == '\n' || why[l - 1] == '\r'))
                        why[--l] = 0;
                return -EHOSTUNREACH;
        }
        return 0;
}

/* PROJECT: the id without '_' (podman-compose's project names are [a-z0-9]). */
static void project_of(const box *b, char *buf, size_t n) {
        size_t k = 0;
        for (const char *p = b->id; *p && k + 1 < n; p++)
                if (*p != '_')
                        buf[k++] = *p;
        buf[k] = 0;
}

#define PRELUDE                                                                                             \
        "d=\"$HOME/.sandboxer/bundles/$P\"; export CONTAINERS_CONF=\"$d/.sandboxer-containers.conf\"; "

int compose_provision(sbx_mgr *m, box *b, const remote_ep *ep, json_t *body, char *why, size_t n) {
        json_t *in = json_object_get(body, "inputs");
        const char *ref = json_string_value(json_object_get(in, "compose_bundle_ref")),
                   *svc = json_string_value(json_object_get(in, "compose_service"));
        if (!ref || ref[0] != '/') {
                snprintf(why, n,
                        "%s needs inputs.compose_bundle_ref: the absolute path, on the host, of a compose "
                        "bundle "
                        "(a directory with compose.yaml, or a tar of one) uploaded there beforehand",
                        ep->ext);
                return -EINVAL;
        }
        if (svc && (!*svc || strspn(svc, "abcdefghijklmnopqrstuvwxyz0123456789_-.") != strlen(svc))) {
                snprintf(why, n, "inputs.compose_service: '%s' is not a service name", svc);
                return -EINVAL;
        }
        ssh_to t;
        if (!target_of(m, b, ep, &t, why, n))
                return -EINVAL;
        char proj[32], *qref = sq(ref), *cmd = NULL;
        project_of(b, proj, sizeof proj);
        int r = asprintf(&cmd,
                "set -e; P=%s; " PRELUDE "ref=%s; svc=%s; "
                "command -v podman-compose >/dev/null || { echo 'podman-compose is not installed on this "
                "host' >&2; "
                "exit 3; }; "
                "mkdir -p \"$d\"; "
                "if [ -d \"$ref\" ]; then cp -a \"$ref/.\" \"$d/\"; elif [ -f \"$ref\" ]; then tar -xf "
                "\"$ref\" -C \"$d\"; "
                "else echo \"no bundle at $ref on this host\" >&2; exit 3; fi; "
                "n=$(ulimit -Hn); case $n in unlimited) n=1048576;; esac; [ \"$n\" -le 1048576 ] || "
                "n=1048576; "
                "u=$(ulimit -Hu); case $u in unlimited) u=32768;; esac; [ \"$u\" -le 32768 ] || u=32768; "
                "printf '[containers]\\ndefault_ulimits = [\"nofile=%%s:%%s\", \"nproc=%%s:%%s\"]\\n' $n $n "
                "$u $u "
                ">\"$CONTAINERS_CONF\"; "
                "cd \"$d\"; "
                "if ! podman-compose -p \"$P\" up -d --build >\"$d/.up.log\" 2>&1; then tail -n 15 "
                "\"$d/.up.log\" >&2; "
                "exit 4; fi; "
                "bad=; for c in $(podman ps -a --filter label=io.podman.compose.project=$P --format "
                "'{{.Names}}'); do "
                "[ \"$(podman inspect --format '{{.State.Running}}' $c)\" = true ] || bad=\"$bad $c\"; "
                "done; "
                "if [ -n \"$bad\" ]; then echo \"not running: $bad\" >&2; grep -i error \"$d/.up.log\" | "
                "tail -n 5 >&2; "
                "exit 5; fi; "
                "if [ -n \"$svc\" ]; then podman ps --filter label=io.podman.compose.project=$P "
                "--filter label=com.docker.compose.service=$svc --format '{{.Names}}' | head -n 1; "
                "else podman ps --filter label=io.podman.compose.project=$P --format '{{.Names}}' | sort | "
                "head -n 1; fi",
                proj, qref ? qref : "''", svc ? svc : "''");
        free(qref);
        if (r < 0) {
                target_done(&t);
                snprintf(why, n, "out of memory");
                return -ENOMEM;
        }
        ssh_out o;
        r = ssh_run(m, &t, cmd, NULL, 0, PROVISION_TIMEOUT_MS * 10, &o, why, n);
        free(cmd);
        char container[128] = "";
        if (r == 0 && o.status == 0 && o.out)
                snprintf(container, sizeof container, "%.*s", (int) strcspn(o.out, "\n"), o.out);
        if (r == 0 && (o.status != 0 || !container[0])) {
                snprintf(why, n, "%s on %s: %.600s", ep->ext, t.host,
                        o.status != 0 ? (o.en ? o.err : "the bundle did not come up")
                        : svc         ? "no container of that service"
                                      : "no container came up");
                size_t l = strlen(why);
                while (l && why[l - 1] == '\n')
                        why[--l] = 0;
                r = -EPROTO;
        }
        if (r == 0) {
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_id, sizeof b->remote_id, "%s", proj);
                snprintf(b->remote_token, sizeof b->remote_token, "%s", container);
                snprintf(b->reach, sizeof b->reach, "ssh://%s@%.200s:%s", t.user, t.host, t.port);
                snprintf(b->ext, sizeof b->ext, "%s", ep->ext);
                snprintf(b->backend, sizeof b->backend, "compose");
                pthread_mutex_unlock(&m->lock);
                (void) mgr_box_save(m, b);
        } else if (r != -EINVAL) { /* half made there: taken down */
                pthread_mutex_lock(&m->lock);
                snprintf(b->remote_id, sizeof b->remote_id, "%s", proj);
                pthread_mutex_unlock(&m->lock);
                char w2[300];
                (void) compose_teardown(m, b, ep, w2, sizeof w2);
                pthread_mutex_lock(&m->lock);
                b->remote_id[0] = 0;
                pthread_mutex_unlock(&m->lock);
        }
        ssh_out_done(&o);
        target_done(&t);
        return r;
}

bool compose_teardown(sbx_mgr *m, const box *b, const remote_ep *ep, char *why, size_t n) {
        ssh_to t;
        if (!b->remote_id[0])
                return true;
        if (!target_of(m, b, ep, &t, why, n))
                return false;
        char *cmd = NULL;
        if (asprintf(&cmd,
                    "P=%s; " PRELUDE "[ -f \"$CONTAINERS_CONF\" ] || unset CONTAINERS_CONF; "
                    "if [ -d \"$d\" ]; then cd \"$d\" && podman-compose -p \"$P\" down >/dev/null 2>&1; fi; "
                    "left=$(podman ps -aq --filter label=io.podman.compose.project=$P); "
                    "[ -z \"$left\" ] || podman rm -f $left >/dev/null; "
                    "podman network rm -f \"${P}_default\" >/dev/null 2>&1; "
                    "cd / && rm -rf \"$d\"",
                    b->remote_id) < 0) {
                target_done(&t);
                snprintf(why, n, "out of memory");
                return false;
        }

        ssh_out o;
        int r = ssh_run(m, &t, cmd, NULL, 0, 120000, &o, why, n);
        free(cmd);
        bool ok = r == 0 && o.status == 0;
        if (r == 0 && !ok)
                snprintf(why, n, "%s: down on %s: %.400s", ep->ext, t.host, o.en ? o.err : "failed");
        ssh_out_done(&o);
        target_done(&t);
        return ok;
}

/* ---- requests ----------------------------------------------------------------------------- */

static unsigned exec_op(
        sbx_mgr *m, box *b, const remote_ep *ep, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        json_t *body =
                remote_exec_body(rq, ep, true, "tty (a terminal over SSH is not passed on yet)", NULL, rp);
        if (!body)
                return rp->code;
        json_t *argv = json_object_get(body, "argv"), *env = json_object_get(body, "env"),
               *cwd = json_object_get(body, "cwd"), *to = json_object_get(body, "timeout_s"), *x;
        size_t i;
        /* podman exec -i [-w CWD] [-e K=V]... CONTAINER ARGV..., each word quoted for the host's sh */
        size_t cap = 256, len = 0;
        char *cmd = malloc(cap);
        bool oom = !cmd;
#define ADD(s)                                                                                              \
        do {                                                                                                \
                const char *s_ = (s);                                                                       \
                size_t l_ = strlen(s_);                                                                     \
                if (!oom && len + l_ + 2 > cap) {                                                           \
                        while (len + l_ + 2 > cap)                                                          \
                                cap *= 2;                                                                   \
                        char *nc_ = realloc(cmd, cap);                                                      \
                        oom = !nc_;                                                                         \
                        if (nc_)                                                                            \
                                cmd = nc_;                                                                  \
                }                                                                                           \
                if (!oom) {                                                                                 \
                        memcpy(cmd + len, s_, l_);                                                          \
                        len += l_;                                                                          \
                        cmd[len++] = ' ';                                                                   \
                        cmd[len] = 0;                                                                       \
                }                                                                                           \
        } while (0)
#define ADDQ(s)                                                                                             \
        do {                                                                                                \
                char *q_ = sq(s);                                                                           \
                oom = oom || !q_;                                                                           \
                if (q_)                                                                                     \
                        ADD(q_);                                                                            \
                free(q_);                                                                                   \
        } while (0)
        if (cmd)
                cmd[0] = 0;
        ADD("exec podman exec -i");
        if (cwd) {
                ADD("-w");
                ADDQ(json_string_value(cwd));
        }
        const char *k;
        json_object_foreach(env, k, x) {
                char kv[8192];
                snprintf(kv, sizeof kv, "%s=%s", k, json_string_value(x));
                ADD("-e");
                ADDQ(kv);
        }
        ADDQ(b->remote_token);
        json_array_foreach(argv, i, x) ADDQ(json_string_value(x));
#undef ADD
#undef ADDQ
        const char *in = json_string_value(json_object_get(body, "stdin"));
        double t = to ? json_number_value(to) : 0;
        bool stream = json_is_true(json_object_get(body, "stream"));
        ssh_to tg;
        char why[800] = "";
        ssh_out o = {.status = -1};
        if (oom)
                mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        else if (!target_of(m, b, ep, &tg, why, sizeof why))
                mgr_reply_err(rp, 503, "unavailable", NULL, "%s", why);
        else {
                int r = ssh_run(m, &tg, cmd, in, in ? strlen(in) : 0,
                        t > 0 ? (int) (t * 1000) + 15000 : 3600 * 1000, &o, why, sizeof why);
                target_done(&tg);
                if (r < 0)
                        mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
                else {
                        json_t *jo, *je;
                        const char *e1 = remote_outputs_json(o.out, o.on, o.err, o.en, &jo, &je);
                        remote_exec_reply(b, stream, o.status, jo, je, e1, rp);
                }
        }
        ssh_out_done(&o);
        free(cmd);
        json_decref(body);
        return rp->code;
}

static unsigned files_op(
        sbx_mgr *m, box *b, const remote_ep *ep, bool write, const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        const char *path = remote_files_path(rq, rp);
        if (!path)
                return rp->code;
        char *qc = sq(b->remote_token), *qp = sq(path), *cmd = NULL, why[800] = "";
        if (!qc || !qp ||
                asprintf(&cmd,
                        write ? "exec podman exec -i %s sh -c 'cat > \"$1\"' sh %s"
                              : "exec podman exec %s sh -c 'if [ -f \"$1\" ]; then exec cat -- \"$1\"; else "
                                "echo "
                                "\"no such file: $1\" >&2; exit 44; fi' sh %s",
                        qc, qp) < 0)
                cmd = NULL;
        free(qc);
        free(qp);
        ssh_to tg;
        ssh_out o = {.status = -1};
        if (!cmd)
                mgr_reply_err(rp, 503, "unavailable", NULL, "out of memory");
        else if (!target_of(m, b, ep, &tg, why, sizeof why))
                mgr_reply_err(rp, 503, "unavailable", NULL, "%s", why);
        else {
                int r = ssh_run(m, &tg, cmd, write ? rq->body : NULL, write ? rq->len : 0, 300000, &o, why,
                        sizeof why);
                target_done(&tg);
                if (r < 0)
                        mgr_reply_err(rp, 502, "bad_gateway", NULL, "%s", why);
                else if (o.status == 44)
                        mgr_reply_err(rp, 404, "not_found", "path", "no such file: %s", path);
                else if (o.status != 0)
                        mgr_reply_err(rp, 400, "invalid_argument", "path", "%s: %.300s", path,
                                o.en ? o.err : "the container refused it");
                else if (write) {
                        rp->code = 200;
                        rp->json = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t) rq->len);
                } else {
                        rp->code = 200;
                        rp->raw = o.out ? TAKE_PTR(o.out) : strdup("");
                        rp->raw_len = o.on;
                        rp->ctype = "application/octet-stream";
                }
        }
        ssh_out_done(&o);
        free(cmd);
        return rp->code;
}

bool compose_route(sbx_mgr *m, box *b, const remote_ep *ep, const char *method, const char *sub,
        const sbx_mgr_request *rq, sbx_mgr_reply *rp) {
        bool get = streq(method, "GET"), post = streq(method, "POST"), put = streq(method, "PUT");
        if (!*sub && get) {
                ssh_to tg;
                char why[600] = "", cmd[600];
                ssh_out o = {.status = -1};
                if (!sbx_state_ending(b->state) && target_of(m, b, ep, &tg, why, sizeof why)) {
                        snprintf(cmd, sizeof cmd, "podman inspect --format '{{.State.Status}}' %s",
                                b->remote_token);
                        if (ssh_run(m, &tg, cmd, NULL, 0, 15000, &o, why, sizeof why) == 0 && o.status != 0)
                                remote_gone(m, b, "gone_at_backend"); /* its container is gone */
                        target_done(&tg);
                }
                ssh_out_done(&o);
                rp->code = 200;
                rp->json = remote_merged(m, b, NULL);
                return true;
        }
        if (streq(sub, "/exec") && post) {
                remote_exec_started(m, b);
                exec_op(m, b, ep, rq, rp);
                return true;
        }
        if (streq(sub, "/files") && (get || put || post)) {
                files_op(m, b, ep, !get, rq, rp);
                return true;
        }
        if ((streq(sub, "/ttl") && post) || (streq(sub, "/metadata") && put))
                return false; /* the front's own: its reaper takes the bundle down at the end */
        remote_lacks_sub(rp, ep->ext, method, sub);
        return true;
}
