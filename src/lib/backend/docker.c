/* docker.c — the `docker` backend: a hardened container made through the Docker Engine API over
 * a unix socket ($DOCKER_HOST unix://PATH, else /var/run/docker.sock): any engine that speaks
 * it (Docker, podman's `system service`). The supervisor, the output cap, the timeout and the
 * report are the shared ones.
 *
 * The API passes no descriptors, only the attached stdio: sandboxer's init cannot get its status
 * socket or its seccomp programs, and without them it cannot tell how the command ended (it
 * reports that on fd 3 and itself exits 0). So the container runs the engine's own init
 * (HostConfig.Init: docker-init, or podman's catatonit) over coreutils' `timeout -s KILL`, a
 * watchdog that ends the command at the run's deadline + 5 s even if sandboxer is killed; the
 * command's status comes from the engine. A relay process, our child, speaks the API: create,
 * attach (the multiplexed stdout/stderr stream to the supervisor's pipes, stdin from ours),
 * start, inspect (the exit code, and State.OOMKilled: the memory limit's evidence; a wait first
 * only if the command runs on after its output ended), delete; it stands in for the init on the
 * status socket (started, exited, signaled, exec failed). The whole rule table is the engine's seccomp
 * profile (JSON), with no listener: violations are refused, not recorded (observation: unavailable).
 *
 * network.egress (as root only): the relay makes the proxy's listening socket in the container's
 * network namespace from outside, by State.Pid, and hands it over the status socket as the init
 * does elsewhere; the command waits for it behind a one-byte gate on its stdin (docker-egress.c).
 * No transparent path and no resolver: both need the seccomp listener.
 *
 * The root is sandboxer's base root filesystem imported once as the image sandboxer-base:v1
 * (POST /images/create?fromSrc=-, a tar of empty mount points, built in memory; no registry);
 * /usr and the profile's read paths are bound read-only from the host, so the engine must run
 * on this host (a unix socket).
 *
 * Lifetime: the relay deletes the container; a run the supervisor ended (timeout, output cap,
 * cancellation: the relay is killed) is deleted by the backend before it returns; a run whose
 * sandboxer was killed is deleted by the relay's guard process at once (guard_start()).
 * Containers are labelled io.sandboxer.owner=<pid>.<pid namespace>: the guard deletes those of
 * dead owners (should a guard have failed too; their `timeout` watchdog ends them anyway), at
 * most every 10 s.
 *
 * Per run, beyond what a client must send (create, attach, start, inspect, delete): one GET
 * /_ping, the probe's, which also tells podman from Docker and a rootless engine from a rootful
 * one (engine_ping()).
 *
 * What the exit code cannot tell apart, said here and in docs/backends.md: 126/127 from
 * `timeout` (not executable / not found) and a command's own 126/127; 128+N from a command that
 * died by signal N and one that exited 128+N. */
#include "backend/oci.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "backend/docker-api.h"
#include "backend/docker-egress.h"
#include "basic/cache.h"
#include "basic/jsonw.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "init/protocol.h"

#define IMAGE_REPO "sandboxer-base"
#define IMAGE_TAG "v1"
#define API "/v1.41"

/* ---- a minimal HTTP/1.1 client over a unix socket ---------------------------------------- */

static int socket_path(char *buf, size_t size, char *reason, size_t rsize) {
        const char *h = getenv("DOCKER_HOST");
        if (h && *h) {
                if (strncmp(h, "unix://", 7) != 0) {
                        snprintf(reason, rsize,
                                "DOCKER_HOST=%s is not a unix socket: this backend binds host paths into "
                                "the "
                                "container, so the engine must run on this host (unix://PATH)",
                                h);
                        return -EPROTONOSUPPORT;
                }
                snprintf(buf, size, "%s", h + 7);
        } else
                snprintf(buf, size, "/var/run/docker.sock");
        return 0;
}

static int api_connect(const char *path, int timeout_s) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (timeout_s > 0) {
                struct timeval tv = {.tv_sec = timeout_s};
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        }
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int send_all(int fd, const void *buf, size_t n) {
        const char *p = buf;
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static int send_request(int fd, const char *method, const char *path, const char *ctype, const void *body,
        size_t len, bool upgrade) {
        char head[1024];
        int n = snprintf(head, sizeof head,
                "%s %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: sandboxer\r\nConnection: close\r\n%s%s%s"
                "Content-Length: %zu\r\n\r\n",
                method, path, ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "",
                body ? len : 0);
        if (upgrade)
                n = snprintf(head, sizeof head,
                        "%s %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: sandboxer\r\nConnection: Upgrade\r\n"
                        "Upgrade: tcp\r\nContent-Length: 0\r\n\r\n",
                        method, path);
        if (n < 0 || (size_t) n >= sizeof head)
                return -ENAMETOOLONG;
        int r = send_all(fd, head, (size_t) n);
        if (r >= 0 && body && len)
                r = send_all(fd, body, len);
        return r;
}

/* Read the response head (status line and headers) into buf; what followed it stays in
 * buf + *ret_head .. + *ret_have. Returns the status code or -errno. */
int docker_read_head(int fd, char *buf, size_t size, size_t *ret_head, size_t *ret_have) {
        size_t have = 0;
        for (;;) {
                if (have + 1 >= size)
                        return -E2BIG;
                ssize_t k = recv(fd, buf + have, size - 1 - have, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ECONNRESET;
                have += (size_t) k;
                buf[have] = 0;
                char *end = strstr(buf, "\r\n\r\n");
                if (end) {
                        *ret_head = (size_t) (end + 4 - buf);
                        *ret_have = have;
                        int code;
                        if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
                                return -EPROTO;
                        return code;
                }
        }
}

/* A whole request on a fresh connection: the status code, and the body (chunked decoded,
 * NUL-terminated) in *ret_body when non-NULL. */
static int api_call(const char *sock, const char *method, const char *path, const char *ctype,
        const void *body, size_t len, char **ret_body) {
        _cleanup_close_ int fd = api_connect(sock, 120);
        if (fd < 0)
                return fd;
        int r = send_request(fd, method, path, ctype, body, len, false);
        if (r < 0)
                return r;
        return docker_read_answer(fd, ret_body);
}

int docker_read_answer(int fd, char **ret_body) {
        size_t cap = 65536, have = 0, head;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        int code = docker_read_head(fd, buf, cap, &head, &have);
        if (code < 0)
                return code;
        bool chunked = false;
        long clen = -1;
        for (char *l = buf; l < buf + head; l = strstr(l, "\r\n") + 2) {
                if (strncasecmp(l, "transfer-encoding:", 18) == 0 && strcasestr(l, "chunked") &&
                        strcasestr(l, "chunked") < strstr(l, "\r\n"))
                        chunked = true;
                if (strncasecmp(l, "content-length:", 15) == 0)
                        clen = atol(l + 15);
                if (!strstr(l, "\r\n"))
                        break;
        }
        /* the rest of the body, until the length is reached or the peer closes */
        for (;;) {
                if ((clen >= 0 && have - head >= (size_t) clen) || code == 204 || code == 304 ||
                        code / 100 == 1)
                        break;
                if (chunked && have - head >= 5 && memcmp(buf + have - 5, "0\r\n\r\n", 5) == 0)
                        break;
                if (have + 4096 >= cap) {
                        char *p = realloc(buf, cap * 2);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        cap *= 2;
                }
                ssize_t k = recv(fd, buf + have, cap - 1 - have, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                have += (size_t) k;
        }
        buf[have] = 0;
        if (ret_body) {
                char *b = buf + head, *out = b;
                if (chunked) {
                        char *p = b;
                        for (;;) {
                                char *end;
                                unsigned long n = strtoul(p, &end, 16);
                                if (end == p || n == 0 || !(end = strstr(end, "\r\n")))
                                        break;
                                p = end + 2;
                                /* what is there at most: a size near ULONG_MAX ("-1" reads as one)
                                 * would wrap p + n around */
                                if (n > (unsigned long) (buf + have - p))
                                        n = (unsigned long) (buf + have - p);
                                memmove(out, p, n);
                                out += n;
                                if (n + 2 >= (unsigned long) (buf + have - p))
                                        break;
                                p += n + 2;
                        }
                        *out = 0;
                }
                *ret_body = strdup(b);
                if (!*ret_body)
                        return -ENOMEM;
        }
        return code;
}

/* ---- the engine's JSON, read with jansson -------------------------------------------------- */

json_t *docker_json_parse(const char *body) {
        return body ? json_loads(body, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL) : NULL;
}

bool docker_json_field(const json_t *obj, const char *key, char *buf, size_t size) {
        const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
        if (!v || size == 0)
                return false;
        switch (json_typeof(v)) {
        case JSON_STRING:
                snprintf(buf, size, "%s", json_string_value(v));
                return true;
        case JSON_INTEGER:
                snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                return true;
        case JSON_REAL:
                snprintf(buf, size, "%.17g", json_real_value(v));
                return true;
        case JSON_TRUE:
        case JSON_FALSE:
        case JSON_NULL:
                snprintf(buf, size, "%s", json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
                return true;
        case JSON_OBJECT:
        case JSON_ARRAY:
        default:
                return false;
        }
}

/* What a run needs to know of the engine, from one GET /_ping: whether it is podman (its
 * compatible API takes the seccomp profile as a path, Docker takes its content), told by the
 * Libpod-Api-Version header every podman answer carries; and whether it is rootless, told by
 * the kernel: the uid that listens on the socket (SO_PEERCRED, in our user namespace). A
 * rootful engine listens as root; a rootless one as its user (rootless Docker's daemon is root
 * only inside its own user namespace, which the kernel maps back), and so does a socket that a
 * user's service manager activates for it. /info says the same in 140 ms on podman and /version
 * the other in 270 ms; this costs one request that the probe makes anyway. */
typedef struct docker_engine {
        bool podman;
        bool rootless;
        uid_t uid; /* who listens on the socket */
} docker_engine;

static int engine_ping(const char *sock, docker_engine *eng, char *reason, size_t size) {
        _cleanup_close_ int fd = api_connect(sock, 5);
        if (fd < 0) {
                snprintf(reason, size,
                        "no Docker engine answers at %s (%s); start one, or point DOCKER_HOST=unix://PATH "
                        "at a "
                        "Docker-compatible API (podman system service --time=0 unix://PATH)",
                        sock, strerror(-fd));
                return fd;
        }
        struct ucred cred;
        socklen_t cl = sizeof cred;
        char buf[4096];
        size_t head = 0, have = 0;
        int r = send_request(fd, "GET", "/_ping", NULL, NULL, 0, false);
        if (r >= 0)
                r = docker_read_head(fd, buf, sizeof buf, &head, &have);
        if (r != 200) {
                snprintf(reason, size, "the engine at %s does not answer GET /_ping (%s)", sock,
                        r < 0 ? strerror(-r) : "unexpected status");
                return r < 0 ? r : -EPROTO;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
                r = -errno;
                snprintf(reason, size, "cannot tell who listens on %s: SO_PEERCRED: %s", sock, strerror(-r));
                return r;
        }
        buf[head] = 0;
        eng->podman = false;
        for (const char *l = strstr(buf, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n"))
                if (strncasecmp(l + 2, "Libpod-Api-Version:", 19) == 0)
                        eng->podman = true;
        eng->rootless = cred.uid != 0;
        eng->uid = cred.uid;
        return 0;
}

/* The probe's answer, for the run that follows it in this thread (backend selection probes, then
 * runs): taken once, within a second, for the same socket; any other run pings for itself. */
static _Thread_local struct {
        char sock[PATH_MAX];
        docker_engine eng;
        uint64_t at_ns;
} probed;

static int docker_probe(char *reason, size_t size) {
        char sock[PATH_MAX];
        docker_engine eng;
        int r = socket_path(sock, sizeof sock, reason, size);
        if (r >= 0)
                r = engine_ping(sock, &eng, reason, size);
        probed.at_ns = 0;
        if (r >= 0) {
                memcpy(probed.sock, sock, sizeof sock);
                probed.eng = eng;
                probed.at_ns = sbx_now_ns();
        }
        return r;
}

static int engine_facts(const char *sock, docker_engine *eng, char *reason, size_t size) {
        uint64_t at = probed.at_ns;
        probed.at_ns = 0;
        if (at != 0 && sbx_now_ns() - at < 1000000000ull && streq(probed.sock, sock)) {
                *eng = probed.eng;
                return 0;
        }
        return engine_ping(sock, eng, reason, size);
}

/* The base image, imported once from the skeleton tar (no registry). */
static int ensure_image(const char *sock, sbx_error *e) {
        int r = api_call(sock, "GET", API "/images/" IMAGE_REPO ":" IMAGE_TAG "/json", NULL, NULL, 0, NULL);
        if (r == 200)
                return 0;
        _cleanup_free_ char *tar = NULL, *body = NULL;
        size_t n;
        if ((r = sbx_oci_base_tar(&tar, &n, e)) < 0)
                return r;
        r = api_call(sock, "POST", API "/images/create?fromSrc=-&repo=" IMAGE_REPO "&tag=" IMAGE_TAG,
                "application/x-tar", tar, n, &body);
        if (r == 200 && api_call(sock, "GET", API "/images/" IMAGE_REPO ":" IMAGE_TAG "/json", NULL, NULL, 0,
                                NULL) != 200) {
                /* podman's compatible API ignores tag= on import: the image is :latest, tag it */
                r = api_call(sock, "POST",
                        API "/images/" IMAGE_REPO ":latest/tag?repo=" IMAGE_REPO "&tag=" IMAGE_TAG, NULL,
                        NULL, 0, NULL);
                if (r == 201 || r == 200) {
                        (void) api_call(
                                sock, "DELETE", API "/images/" IMAGE_REPO ":latest", NULL, NULL, 0, NULL);
                        r = 200;
                }
        }
        if (r != 200)
                return sbx_error_set(e, r < 0 ? -r : EPROTO, "docker: image",
                        "cannot import the base image " IMAGE_REPO ":" IMAGE_TAG
                        " into the engine at %s: %s",
                        sock,
                        r < 0  ? strerror(-r)
                        : body ? body
                               : "unexpected status");
        return 0;
}

/* "<pid>.<pid namespace inode>": who owns a container, so that a later run can tell a leftover. */
static void owner_label(char *buf, size_t size) {
        struct stat st;
        unsigned long ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long) st.st_ino : 0;
        snprintf(buf, size, "%d.%lx", (int) getpid(), ns);
}

/* Delete the containers of dead owners in our pid namespace (sandboxer killed mid-run). */
static void gc_dead_owners(const char *sock) {
        _cleanup_free_ char *body = NULL;
        int r = api_call(sock, "GET",
                API "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22io.sandboxer.owner%22%5D%7D",
                NULL, NULL, 0, &body);
        if (r != 200 || !body)
                return;
        char mine[64];
        owner_label(mine, sizeof mine);
        const char *ns = strchr(mine, '.');
        _cleanup_(json_decrefp) json_t *list = docker_json_parse(body);
        if (!json_is_array(list) || !ns)
                return;
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c) {
                char val[64], id[80];
                if (docker_json_field(json_object_get(c, "Labels"), "io.sandboxer.owner", val, sizeof val) &&
                        docker_json_field(c, "Id", id, sizeof id) && id[0] && !strchr(id, '/')) {
                        const char *dot = strchr(val, '.');
                        pid_t pid = (pid_t) atol(val);
                        if (dot && streq(dot, ns) && pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
                                char path[160];
                                snprintf(path, sizeof path, API "/containers/%s?force=1", id);
                                (void) api_call(sock, "DELETE", path, NULL, NULL, 0, NULL);
                        }
                }
        }
}

/* ---- the container ------------------------------------------------------------------------ */

static int create_body(const sbx_config *cfg, const sbx_run_plan *rp, char *const *argv, char *const *env,
        char *const *binds, const char *cwd, const char *seccomp_json, const char *run_id, bool gate,
        char **ret) {
        const sbx_profile *pr = cfg->profile;
        const sbx_limits *lim = &cfg->limits;
        double timeout = lim->value[SBX_LIMIT_TIMEOUT_S], budget = lim->value[SBX_LIMIT_BUDGET_S];
        double deadline = budget > 0 && budget < timeout ? budget : timeout;
        uint64_t mem = rp->memory_bytes, scratch = rp->scratch_bytes;
        uid_t uid = rp->uid;
        char user[32], wd[32], tmpfs[96], owner[64];
        snprintf(user, sizeof user, "%u:%u", (unsigned) uid, (unsigned) uid);
        snprintf(wd, sizeof wd, "%us", (unsigned) ceil(deadline) + 5);
        snprintf(tmpfs, sizeof tmpfs, "rw,size=%" PRIu64 ",mode=1777", scratch);
        owner_label(owner, sizeof owner);
        struct rlimit nofile = {0}, nproc = {0};
        (void) getrlimit(RLIMIT_NOFILE, &nofile);
        (void) getrlimit(RLIMIT_NPROC, &nproc);
        uint64_t nf =
                nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max > 1048576 ? 1048576 : nofile.rlim_max;
        uint64_t np = nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > 32768 ? 32768 : nproc.rlim_max;

        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, false);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "Image", IMAGE_REPO ":" IMAGE_TAG);
        jsonw_key(&w, "Entrypoint");
        jsonw_begin_array(&w);
        if (gate) { /* network.egress: the command waits for its way out (docker-egress.h) */
                jsonw_string(&w, "/bin/sh");
                jsonw_string(&w, "-c");
                jsonw_string(&w, DOCKER_EGRESS_GATE);
                jsonw_string(&w, "sh");
        }
        jsonw_string(&w, "/usr/bin/timeout");
        jsonw_string(&w, "-s");
        jsonw_string(&w, "KILL");
        jsonw_string(&w, wd);
        jsonw_end_array(&w);
        jsonw_key(&w, "Cmd");
        jsonw_begin_array(&w);
        for (char *const *a = argv; *a; a++)
                jsonw_string(&w, *a);
        jsonw_end_array(&w);
        jsonw_key(&w, "Env");
        jsonw_begin_array(&w);
        STRV_FOREACH(v, env)
                jsonw_string(&w, *v);
        jsonw_end_array(&w);
        jsonw_kv_string(&w, "User", user);
        jsonw_kv_string(&w, "WorkingDir", cwd);
        jsonw_kv_string(&w, "Hostname", "sandbox");
        jsonw_kv_bool(&w, "AttachStdin", true);
        jsonw_kv_bool(&w, "AttachStdout", true);
        jsonw_kv_bool(&w, "AttachStderr", true);
        jsonw_kv_bool(&w, "OpenStdin", true);
        jsonw_kv_bool(&w, "StdinOnce", true);
        jsonw_kv_bool(&w, "Tty", false);
        jsonw_key(&w, "Labels");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, SBX_OCI_LABEL, run_id);
        jsonw_kv_string(&w, "io.sandboxer.owner", owner);
        jsonw_end_object(&w);
        jsonw_key(&w, "HostConfig");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "NetworkMode", pr->net_allow ? "host" : "none");
        jsonw_kv_string(&w, "IpcMode", "none");
        jsonw_kv_bool(&w, "ReadonlyRootfs", true);
        jsonw_kv_bool(&w, "Init", true);
        jsonw_key(&w, "CapDrop");
        jsonw_begin_array(&w);
        jsonw_string(&w, "ALL");
        jsonw_end_array(&w);
        jsonw_key(&w, "SecurityOpt");
        jsonw_begin_array(&w);
        jsonw_string(&w, "no-new-privileges");
        {
                _cleanup_free_ char *opt = NULL;
                if (asprintf(&opt, "seccomp=%s", seccomp_json) < 0)
                        return -ENOMEM;
                jsonw_string(&w, opt);
        }
        jsonw_end_array(&w);
        jsonw_kv_uint(&w, "Memory", mem);
        jsonw_kv_uint(&w, "MemorySwap", mem);
        jsonw_kv_uint(&w, "NanoCpus", (uint64_t) (lim->value[SBX_LIMIT_CPUS] * 1e9));
        jsonw_kv_uint(&w, "PidsLimit", (uint64_t) lim->value[SBX_LIMIT_PIDS]);
        jsonw_key(&w, "Tmpfs");
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, SBX_OCI_SCRATCH, tmpfs);
        jsonw_end_object(&w);
        jsonw_key(&w, "Ulimits");
        jsonw_begin_array(&w);
        const struct {
                const char *name;
                uint64_t v;
        } ul[] = {{"nofile", nf}, {"nproc", np}, {"core", 0}};
        for (size_t i = 0; i < ELEMENTSOF(ul); i++) {
                jsonw_begin_object(&w);
                jsonw_kv_string(&w, "Name", ul[i].name);
                jsonw_kv_uint(&w, "Soft", ul[i].v);
                jsonw_kv_uint(&w, "Hard", ul[i].v);
                jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_key(&w, "Mounts");
        jsonw_begin_array(&w);
        for (char *const *b = binds; b && b[0] && b[1] && b[2]; b += 3) {
                jsonw_begin_object(&w);
                jsonw_kv_string(&w, "Type", "bind");
                jsonw_kv_string(&w, "Source", b[0]);
                jsonw_kv_string(&w, "Target", b[1]);
                jsonw_kv_bool(&w, "ReadOnly", streq(b[2], "ro"));
                jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
        jsonw_end_object(&w);
        if (w.error < 0)
                return w.error;
        *ret = TAKE_PTR(w.buf);
        return 0;
}

typedef struct docker_relay {
        const char *sock;
        const char *name;
        char *body; /* the create request */
        bool observe; /* say "unavailable": the API cannot hand us a listener */
        int oom_w; /* write end of the OOM pipe */
        char egress_ports[256]; /* network.egress: "3128[,SERVICE...]", or empty */
} docker_relay;

static void relay_msg(uint32_t type, int32_t a, int32_t b, const char *text) {
        struct sbx_init_msg m = {.magic = SBX_INIT_MAGIC, .type = type, .a = a, .b = b};
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        m.monotonic_ns = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
        if (text)
                snprintf(m.text, sizeof m.text, "%s", text);
        (void) send(SBX_INIT_STATUS_FD, &m, sizeof m, MSG_NOSIGNAL);
}

/* The guard: a process of the relay's that deletes the container when sandboxer dies (it is
 * killed with SIGKILL: the relay, our child, dies with it by PR_SET_PDEATHSIG, and the engine
 * would run the container on to its `timeout` watchdog). It holds nothing but a copy of the
 * status socket (fd 3), whose other end is the supervisor's: when the relay dies the guard is
 * told (its own death signal) and deletes the container only if that end is gone too — a
 * supervisor that killed the relay itself (timeout, cancellation) deletes the container. The
 * relay ends it at a normal end. */
static pid_t guard_pid;

static void guard_stop(void) {
        if (guard_pid > 0) {
                (void) kill(guard_pid, SIGKILL);
                (void) waitpid(guard_pid, NULL, 0);
                guard_pid = 0;
        }
}

/* Sweep the engine for dead owners' containers when it is due: at most once every 10 s per
 * user and socket, not on every run (a list of all containers: 0.5 ms of the engine's time, and
 * the CPUs are shared with it). The stamp is a file in the cache dir whose mtime is the last
 * finished sweep (one killed with its guard, at the end of a short run, is retried next time). */
static void sweep_if_due(const char *sock) {
        char dir[PATH_MAX], path[PATH_MAX + 32], hex[65];
        struct stat st;
        struct timespec now;
        bool stamp = sbx_cache_dir(dir, sizeof dir) >= 0;
        sha256_hex(sock, strlen(sock), hex); /* one stamp per socket */
        snprintf(path, sizeof path, "%s/docker-sweep-%.16s", stamp ? dir : "", hex);
        clock_gettime(CLOCK_REALTIME, &now);
        if (stamp && stat(path, &st) == 0 && st.st_mtim.tv_sec <= now.tv_sec &&
                now.tv_sec - st.st_mtim.tv_sec < 10)
                return;
        gc_dead_owners(sock);
        if (!stamp)
                return;
        sbx_cache_prune(dir, "docker-sweep-", 16); /* those of sockets long gone */
        int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
                (void) futimens(fd, NULL);
                close(fd);
        }
}

static void guard_start(const docker_relay *d) {
        pid_t relay = getpid();
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        pid_t pid = fork();
        if (pid != 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                guard_pid = pid > 0 ? pid : 0;
                return;
        }
        /* Every signal blocked, a process group of its own (no Ctrl-C, no signal to the caller's
         * group ends it early), nothing of the supervisor's but the copy of fd 3. */
        (void) setpgid(0, 0);
        int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3; fd++)
                if (nul < 0 || dup2(nul, fd) < 0)
                        (void) close(fd); /* not the supervisor's pipes: it reads them to their end */
        if (syscall(SYS_close_range, 4, ~0U, 0) < 0)
                for (int fd = 4; fd < 1024; fd++)
                        (void) close(fd);
        (void) prctl(PR_SET_PDEATHSIG, SIGRTMAX);
        /* while the container is made and runs: the containers of owners that died without
         * their guard */
        if (getppid() == relay)
                sweep_if_due(d->sock);
        while (getppid() == relay) {
                siginfo_t si;
                struct timespec ts = {.tv_sec = 1};
                (void) sigtimedwait(&all, &si, &ts);
        }
        struct pollfd p = {.fd = 3, .events = 0};
        if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
                char path[256];
                snprintf(path, sizeof path, API "/containers/%s?force=1", d->name);
                (void) api_call(d->sock, "DELETE", path, NULL, NULL, 0, NULL);
        }
        _exit(0);
}

static _noreturn_ void relay_fail(int err, const char *what, const char *body) {
        char text[64];
        char msg[512] = "";
        json_t *j = docker_json_parse(body);
        if (body && !docker_json_field(j, "message", msg, sizeof msg))
                snprintf(msg, sizeof msg, "%.200s", body);
        json_decref(j);
        snprintf(text, sizeof text, "docker: %s%s%s", what, msg[0] ? ": " : "", msg);
        /* the whole story on stderr (the message field of the report is 64 bytes) */
        dprintf(2, "sandboxer: docker: %s%s%s\n", what, msg[0] ? ": " : "", msg);
        relay_msg(SBX_INIT_MSG_SETUP_FAILED, err, 0, text);
        guard_stop();
        _exit(125);
}

/* Copy the attached stream (8-byte frame headers: stream, 0, 0, 0, size big-endian) to 1 and
 * 2, and our stdin to the container until its end; a cancellation signal goes to the
 * container. Returns when the engine closes the stream. */
static void relay_stream(docker_relay *d, int s, const char *pre, size_t npre, const char *id) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGQUIT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        static char buf[65536 + 8];
        size_t have = 0;
        if (npre > sizeof buf)
                npre = sizeof buf;
        memcpy(buf, pre, npre);
        have = npre;
        bool in_open = true;
        for (;;) {
                /* whole frames out */
                while (have >= 8) {
                        size_t len = ((size_t) (unsigned char) buf[4] << 24) |
                                     ((size_t) (unsigned char) buf[5] << 16) |
                                     ((size_t) (unsigned char) buf[6] << 8) |
                                     (size_t) (unsigned char) buf[7];
                        size_t take = have - 8 < len ? have - 8 : len;
                        if (take == 0 && len > 0)
                                break;
                        int out = buf[0] == 2 ? 2 : 1;
                        for (size_t off = 0; off < take;) {
                                ssize_t k = write(out, buf + 8 + off, take - off);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k < 0)
                                        break;
                                off += (size_t) k;
                        }
                        if (take < len) { /* a part of a large frame: keep the header, shrink it */
                                size_t rest = len - take;
                                buf[4] = (char) (rest >> 24), buf[5] = (char) (rest >> 16);
                                buf[6] = (char) (rest >> 8), buf[7] = (char) rest;
                                have = 8;
                                break;
                        }
                        memmove(buf, buf + 8 + len, have - 8 - len);
                        have -= 8 + len;
                }
                struct pollfd p[3] = {{.fd = s, .events = POLLIN},
                        {.fd = in_open ? 0 : -1, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                if (p[2].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                                char path[192];
                                snprintf(path, sizeof path, API "/containers/%s/kill?signal=%u", id,
                                        (unsigned) si.ssi_signo);
                                (void) api_call(d->sock, "POST", path, NULL, NULL, 0, NULL);
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char ib[16384];
                        ssize_t k = read(0, ib, sizeof ib);
                        if (k > 0)
                                (void) send_all(s, ib, (size_t) k);
                        else if (k == 0 || errno != EINTR) {
                                in_open = false;
                                (void) shutdown(s, SHUT_WR);
                        }
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        if (have >= sizeof buf)
                                have = 0; /* cannot happen: frames are drained above */
                        ssize_t k = recv(s, buf + have, sizeof buf - have, 0);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return;
                        have += (size_t) k;
                }
        }
}

/* The engine's word on a container that has ended: true with its exit code and State.OOMKilled
 * ("true"/"false") when it is not running; false when it runs on or cannot be inspected. */
static bool inspect_exited(const char *sock, const char *id, int *ret_code, char *oom, size_t size) {
        _cleanup_free_ char *resp = NULL;
        char path[192], running[16], exit_s[32];
        snprintf(path, sizeof path, API "/containers/%s/json", id);
        if (api_call(sock, "GET", path, NULL, NULL, 0, &resp) != 200)
                return false;
        _cleanup_(json_decrefp) json_t *j = docker_json_parse(resp);
        const json_t *state = json_object_get(j, "State");
        if (!docker_json_field(state, "Running", running, sizeof running) || !streq(running, "false") ||
                !docker_json_field(state, "ExitCode", exit_s, sizeof exit_s))
                return false;
        *ret_code = atoi(exit_s);
        if (!docker_json_field(state, "OOMKilled", oom, size))
                oom[0] = 0;
        return true;
}

/* The pid of a running container's init (State.Pid, in the engine's pid namespace), or 0. */
static pid_t inspect_pid(const char *sock, const char *id) {
        _cleanup_free_ char *resp = NULL;
        char path[192], running[16], pid_s[32];
        snprintf(path, sizeof path, API "/containers/%s/json", id);
        if (api_call(sock, "GET", path, NULL, NULL, 0, &resp) != 200)
                return 0;
        _cleanup_(json_decrefp) json_t *j = docker_json_parse(resp);
        const json_t *state = json_object_get(j, "State");
        if (!docker_json_field(state, "Running", running, sizeof running) || !streq(running, "true") ||
                !docker_json_field(state, "Pid", pid_s, sizeof pid_s))
                return 0;
        long pid = strtol(pid_s, NULL, 10);
        return pid > 0 && pid <= INT_MAX ? (pid_t) pid : 0;
}

/* network.egress: the proxy's (and the services') listening sockets in the container's network
 * namespace, handed to the supervisor (docker-egress.c). The pidfd is taken between two
 * inspects that both name the same running init: a pid reused in between would have had to
 * belong to another process while the container's init held it. */
static int relay_egress(const docker_relay *d, const char *id, const char **what) {
        pid_t pid = inspect_pid(d->sock, id);
        if (pid <= 0)
                return (*what = "network.egress: inspect: no State.Pid of a running container"), -ESRCH;
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return (*what = "network.egress: pidfd_open(State.Pid)"), -errno;
        if (inspect_pid(d->sock, id) != pid)
                return (*what = "network.egress: the container's init changed under us"), -ESRCH;
        return docker_egress_listen(pidfd, pid, d->egress_ports, what);
}

static _noreturn_ void relay_main(docker_relay *d) {
        _cleanup_free_ char *resp = NULL;
        char id[96], path[256], buf[8192];
        int r;
        /* the guard first: its start and its sweep overlap the create; it deletes by name */
        guard_start(d);
        snprintf(path, sizeof path, API "/containers/create?name=%s", d->name);
        r = api_call(d->sock, "POST", path, "application/json", d->body, strlen(d->body), &resp);
        if (r == 404) {
                /* No such image (the first run on this engine, or it was removed): import it and
                 * create again. Checking before every create would cost a request each run. */
                sbx_error ie = {0};
                int k = ensure_image(d->sock, &ie);
                if (k < 0) {
                        dprintf(2, "sandboxer: %s\n", ie.message);
                        relay_fail(-k, "import the base image", NULL);
                }
                free(resp);
                resp = NULL;
                r = api_call(d->sock, "POST", path, "application/json", d->body, strlen(d->body), &resp);
        }
        json_t *created = r == 201 ? docker_json_parse(resp) : NULL;
        bool have_id = docker_json_field(created, "Id", id, sizeof id);
        json_decref(created);
        if (r != 201 || !have_id)
                relay_fail(r < 0 ? -r : EPROTO, "create the container", resp);
        free(resp);
        resp = NULL;

        /* attach before start, so that no output is lost */
        int s = api_connect(d->sock, 0);
        if (s < 0)
                relay_fail(-s, "attach", NULL);
        snprintf(path, sizeof path, API "/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1", id);
        size_t head = 0, have = 0;
        if (send_request(s, "POST", path, NULL, NULL, 0, true) < 0 ||
                ((r = docker_read_head(s, buf, sizeof buf, &head, &have)) != 101 && r != 200))
                relay_fail(r < 0 ? -r : EPROTO, "attach", NULL);

        snprintf(path, sizeof path, API "/containers/%s/start", id);
        r = api_call(d->sock, "POST", path, NULL, NULL, 0, &resp);
        if (r != 204 && r != 304) {
                char del[192];
                snprintf(del, sizeof del, API "/containers/%s?force=1", id);
                (void) api_call(d->sock, "DELETE", del, NULL, NULL, 0, NULL);
                relay_fail(r < 0 ? -r : EPROTO, "start the container", resp);
        }
        if (d->egress_ports[0]) {
                const char *what = NULL;
                char gate = DOCKER_EGRESS_GATE_BYTE;
                if ((r = relay_egress(d, id, &what)) < 0 || (r = send_all(s, &gate, 1)) < 0) {
                        char del[192];
                        snprintf(del, sizeof del, API "/containers/%s?force=1", id);
                        (void) api_call(d->sock, "DELETE", del, NULL, NULL, 0, NULL);
                        relay_fail(-r, what ? what : "network.egress: open the gate", NULL);
                }
        }
        if (d->observe)
                relay_msg(SBX_INIT_MSG_UNOBSERVED, EOPNOTSUPP, 0, NULL);
        relay_msg(SBX_INIT_MSG_STARTED, 0, 0, NULL);
        relay_stream(d, s, buf + head, have - head, id);
        close(s);

        /* The stream ends when the command's output does: most often it has exited, and the
         * engine's state says so at once (podman: "stopped", its exit code read), while its wait
         * answers 90-390 ms later (podman 4.3). So: inspect; wait only if it still runs (it
         * closed its output and went on), then inspect again. The inspect holds the exit code
         * and State.OOMKilled, the memory limit's evidence. */
        int code = -1;
        char oom[16] = "";
        if (!inspect_exited(d->sock, id, &code, oom, sizeof oom)) {
                snprintf(path, sizeof path, API "/containers/%s/wait", id);
                char code_s[32];
                if (api_call(d->sock, "POST", path, NULL, NULL, 0, &resp) == 200) {
                        _cleanup_(json_decrefp) json_t *w = docker_json_parse(resp);
                        if (docker_json_field(w, "StatusCode", code_s, sizeof code_s))
                                code = atoi(code_s);
                }
                (void) inspect_exited(d->sock, id, &code, oom, sizeof oom);
        }
        free(resp);
        resp = NULL;
        if (streq(oom, "true") && write(d->oom_w, "O", 1) < 0) { /* the report then lacks the evidence */
        }
        snprintf(path, sizeof path, API "/containers/%s?force=1", id);
        (void) api_call(d->sock, "DELETE", path, NULL, NULL, 0, NULL);
        guard_stop();

        if (code < 0)
                relay_fail(EPROTO, "wait for the container", NULL);
        /* timeout(1): 127 not found, 126 not executable; the engine's init: 128+N for signal N */
        if (code == 127)
                relay_msg(SBX_INIT_MSG_EXEC_FAILED, ENOENT, 127, "the command");
        else if (code == 126)
                relay_msg(SBX_INIT_MSG_EXEC_FAILED, EACCES, 126, "the command");
        else if (code > 128 && code < 128 + 65)
                relay_msg(SBX_INIT_MSG_SIGNALED, code - 128, 0, NULL);
        else
                relay_msg(SBX_INIT_MSG_EXITED, code, 0, NULL);
        _exit(0);
}

static _noreturn_ void relay_run(void *ud) {
        relay_main(ud);
}

static int start_relay(void *ud, int in_fd, int out_fd, int err_fd, int status_fd, pid_t *ret_pid,
        int *ret_pidfd, sbx_error *e) {
        docker_relay *d = ud;
        return sbx_oci_fork_client(in_fd, out_fd, err_fd, status_fd, &d->oom_w, 1, relay_run, d,
                "docker: relay", ret_pid, ret_pidfd, e);
}

static int docker_run(
        const sbx_config *cfg, char *const *argv, const sbx_run_io *io, sbx_report *rep, sbx_error *e) {
        _cleanup_strv_free_ char **env = NULL, **binds = NULL;
        _cleanup_free_ char *json = NULL, *body = NULL;
        const sbx_profile *pr = cfg->profile;
        char sock[PATH_MAX], reason[512], name[128];
        int r;

        rep->backend = "docker";
        rep->isolation = "container";
        docker_engine eng;
        if ((r = socket_path(sock, sizeof sock, reason, sizeof reason)) < 0 ||
                (r = engine_facts(sock, &eng, reason, sizeof reason)) < 0)
                return sbx_error_set(e, -r, "docker", "cannot use the docker backend: %s", reason);
        /* network.egress: the relay enters the container's network namespace (docker-egress.c),
         * which takes CAP_SYS_ADMIN over it: root's, over any engine's containers. */
        if (sbx_profile_egress_proxied(pr) && geteuid() != 0)
                return sbx_error_set(e, EPERM, "docker",
                        "net.egress_proxy: the docker backend makes the egress proxy's socket in the "
                        "container's network namespace (setns), which needs CAP_SYS_ADMIN over it: run "
                        "sandboxer as root, or use --backend native, bwrap, firejail or podman");
        /* The engine runs the command as run_as, whoever we are. */
        static const sbx_plan_traits traits = {.backend = "docker",
                .flags = SBX_PLAN_MOUNT_VIEW | SBX_PLAN_RUN_AS,
                .ws_owner_fix = "use --backend native"};
        _cleanup_(sbx_run_plan_done) sbx_run_plan rp = {0};
        if ((r = sbx_run_plan_make(cfg, &traits, &rp, e)) < 0)
                return r;
        uid_t uid = rp.uid;

        /* A rootless engine on cgroup v1 takes Memory, PidsLimit and NanoCpus and enforces none
         * of them (it has no cgroup to write to). */
        char ignored[PATH_MAX + 192] = "";
        struct stat st;
        if (eng.rootless && stat("/sys/fs/cgroup/memory", &st) == 0)
                snprintf(ignored, sizeof ignored,
                        "the docker engine at %s is rootless (it listens as uid %u) on cgroup v1 and "
                        "ignores "
                        "container limits; use a rootful engine or cgroup v2, another backend",
                        sock, (unsigned) eng.uid);
        if ((r = sbx_oci_engine_limits(cfg, rep, ignored[0] ? ignored : NULL, e)) < 0)
                return r;

        /* No listener: the whole rule table, sockets and spawning included, is the engine's. */
        sbx_seccomp_opts o = {
                .deny_all_sockets_but_unix_pair =
                        !pr->net_allow && !pr->loopback && !sbx_profile_egress_proxied(pr),
                .kill_on_violation = pr->on_violation == SBX_ON_VIOLATION_KILL,
        };
        /* Docker takes the profile's content; podman's compatible API takes a path (on this host,
         * as the binds are). The file is made once per option set and build (building the JSON
         * costs 0.4 ms); Docker's content is read back from it. */
        char spath[PATH_MAX];
        if ((r = sbx_oci_seccomp_file_for(&o, spath, sizeof spath, e)) < 0)
                return r;
        if (eng.podman)
                json = strdup(spath);
        else {
                size_t n;
                _cleanup_free_ char *raw = NULL;
                if ((r = sbx_cache_read(spath, 4u << 20, &raw, &n)) < 0)
                        return sbx_error_set(e, -r, "seccomp", "cannot read %s: %s", spath, strerror(-r));
                json = strndup(raw, n);
        }
        if (!json)
                return sbx_error_set(e, ENOMEM, "docker", "out of memory");
        const char *cwd = sbx_run_plan_cwd(cfg, &rp, SBX_OCI_SCRATCH);
        if ((r = sbx_backend_build_env(cfg, SBX_OCI_SCRATCH, rp.ws_path, &env)) < 0)
                return sbx_error_set(e, -r, "environment", "out of memory");
        if ((r = sbx_oci_binds(&rp, rep, &binds, e)) < 0)
                return r;
        (void) sbx_report_add_mount(rep, IMAGE_REPO ":" IMAGE_TAG, "/", "image-ro");
        (void) sbx_report_add_mount(rep, "tmpfs", SBX_OCI_SCRATCH, "tmpfs");
        bool egress = sbx_profile_egress_proxied(pr);
        if ((r = create_body(cfg, &rp, argv, env, binds, cwd, json, rep->id, egress, &body)) < 0)
                return sbx_error_set(e, -r, "docker", "cannot build the create request: %s", strerror(-r));
        snprintf(name, sizeof name, "sandboxer-%s", rep->id);
        if (getenv("SANDBOXER_DEBUG_ARGV") && streq(getenv("SANDBOXER_DEBUG_ARGV"), "1"))
                fprintf(stderr, "sandboxer: docker: POST %s/containers/create?name=%s %s\n", sock, name,
                        body);

        (void) sbx_report_set_fence(rep, "namespaces", "mount, pid, ipc, uts, net%s (the engine at %s)",
                pr->net_allow ? " (shared with the host: network.default allow)" : "", sock);
        (void) sbx_report_set_fence(rep, "seccomp",
                "the rule table as the engine's profile (JSON), no listener (the API passes no "
                "descriptors)");
        (void) sbx_report_set_fence(
                rep, "landlock", "none (the container's mount namespace is the filesystem fence)");
        (void) sbx_report_set_fence(rep, "capabilities", "none (CapDrop ALL)");
        (void) sbx_report_set_fence(rep, "no_new_privs", "set (SecurityOpt no-new-privileges)");
        (void) sbx_report_set_fence(rep, "user", "uid %u (run_as) inside", (unsigned) uid);
        (void) sbx_report_set_fence(
                rep, "docker", "%s, container %s, image " IMAGE_REPO ":" IMAGE_TAG, sock, name);

        int oomp[2];
        if (pipe2(oomp, O_CLOEXEC | O_NONBLOCK) < 0)
                return sbx_error_set(e, errno, "pipes", "cannot create a pipe: %m");
        docker_relay d = {.sock = sock,
                .name = name,
                .body = body,
                .observe = pr->observe != SBX_OBSERVE_OFF,
                .oom_w = oomp[1]};
        if (egress && (r = sbx_backend_egress_ports(pr, d.egress_ports, sizeof d.egress_ports)) < 0) {
                close(oomp[0]);
                close(oomp[1]);
                return sbx_error_set(e, -r, "network.services", "too many services, or a malformed one");
        }
        sbx_oci_launch l = {
                .start = start_relay, .userdata = &d, .oom_report_fd = oomp[0], .egress = egress};
        r = sbx_oci_run(cfg, io, rep, &l, e);
        close(oomp[0]);
        close(oomp[1]);
        if (r < 0 || rep->killed_by_sandbox || rep->status == SBX_STATUS_CANCELLED) {
                uint64_t t = sbx_now_ns();
                char path[192];
                snprintf(path, sizeof path, API "/containers/%s?force=1", name);
                (void) api_call(sock, "DELETE", path, NULL, NULL, 0, NULL);
                rep->teardown_ms += (int64_t) ((sbx_now_ns() - t) / 1000000);
        }
        return r;
}

static const sbx_cap_decl docker_caps[_SBX_CAP_MAX] = {
        [SBX_CAP_FS_READONLY] = {true,
                "ReadonlyRootfs (sandboxer's base image) and each read path bound read-only"},
        [SBX_CAP_FS_PRIVATE_VIEW] = {true, "only the read paths are bound into the base image"},
        [SBX_CAP_FS_WRITE_PATHS] = {true, "Mounts type bind (read-write)"},
        [SBX_CAP_FS_EXEC_RULES] = {false,
                "needs Landlock, which the API cannot carry into the container; use --backend native or "
                "landlock"},
        [SBX_CAP_WORKSPACE_RO] = {true, "Mounts type bind, ReadOnly, at workspace.mount"},
        [SBX_CAP_WORKSPACE_RW] = {true,
                "Mounts type bind at workspace.mount; only a workspace owned by run_as (no idmapped mount)"},
        [SBX_CAP_SCRATCH] = {true, "Tmpfs at /tmp"},
        [SBX_CAP_HOME] = {false,
                "not implemented: a home would be a second tmpfs outside scratch_mb; use --backend native"},
        [SBX_CAP_NET_DENY] = {true, "NetworkMode none: a network namespace with loopback only"},
        [SBX_CAP_NET_LOOPBACK] = {true, "NetworkMode none brings up lo in the container's namespace"},
        [SBX_CAP_NET_HOST] = {true, "NetworkMode host when the policy allows host network"},
        [SBX_CAP_NET_EGRESS] = {true,
                "as root only: the relay enters the container's network namespace (NetworkMode none; "
                "setns by State.Pid, a pidfd) and makes the proxy's socket at 127.0.0.1:3128 there, "
                "handed over the status socket; the command waits for it on a one-byte gate on its "
                "stdin (/bin/sh, dd); no transparent path and no resolver (no seccomp listener)"},
        [SBX_CAP_PID_ISOLATION] = {true, "the container's pid namespace"},
        [SBX_CAP_IPC_ISOLATION] = {true, "IpcMode none: a private IPC namespace, no /dev/shm"},
        [SBX_CAP_HOSTNAME] = {true, "Hostname sandbox"},
        [SBX_CAP_IDENTITY] = {false,
                "the command runs as run_as (uid 65534 by default) inside too: mapping uid 1000 to it needs "
                "a user namespace the engine decides, not the request"},
        [SBX_CAP_SECCOMP] = {true, "the rule table as the engine's seccomp profile (JSON)"},
        [SBX_CAP_LANDLOCK] = {false,
                "the API passes no ruleset into the container; its mount namespace is the filesystem fence"},
        [SBX_CAP_CAPS_DROPPED] = {true, "CapDrop ALL"},
        [SBX_CAP_NO_NEW_PRIVS] = {true, "SecurityOpt no-new-privileges"},
        [SBX_CAP_NOT_HOST_ROOT] = {true, "User run_as (65534 by default)"},
        [SBX_CAP_SPAWN_FENCE] = {false,
                "exactly one execve needs the seccomp listener, which the API cannot hand over, and the "
                "engine's filter also binds the container's own init, which must fork"},
        [SBX_CAP_LIMIT_TIMEOUT] = {true, "supervisor; timeout -s KILL in the container as a backstop"},
        [SBX_CAP_LIMIT_OUTPUT] = {true, "supervisor (the attached stream)"},
        [SBX_CAP_LIMIT_MEMORY] = {true, "the engine's cgroup (Memory, MemorySwap)"},
        [SBX_CAP_LIMIT_PIDS] = {true, "the engine's cgroup (PidsLimit)"},
        [SBX_CAP_LIMIT_CPUS] = {true, "the engine's cgroup (NanoCpus)"},
        [SBX_CAP_LIMIT_SCRATCH] = {true, "Tmpfs size"},
        [SBX_CAP_OBSERVE_NETWORK] = {false,
                "no seccomp listener over the API (it passes no descriptors): refused, not recorded"},
        [SBX_CAP_OBSERVE_FS_WRITE] = {false, "no seccomp listener over the API (it passes no descriptors)"},
        [SBX_CAP_OBSERVE_SYSCALL] = {false,
                "no seccomp listener over the API (it passes no descriptors): refused, not recorded"},
        [SBX_CAP_OBSERVE_PROCESS] = {false,
                "the engine does not report refusals by PidsLimit, and there is no listener for spawns"},
        [SBX_CAP_OBSERVE_MEMORY] = {false,
                "the only evidence is the engine's State.OOMKilled, recorded when it is true; podman 4.3's "
                "API under runc on cgroup v1 leaves it false after an OOM kill (measured), so it is not "
                "claimed"},
        [SBX_CAP_OBSERVE_TIMEOUT] = {true, "supervisor"},
        [SBX_CAP_OBSERVE_OUTPUT] = {true, "supervisor"},
};

const sbx_backend sbx_backend_docker = {
        .id = SBX_BACKEND_DOCKER,
        .level = SBX_LEVEL_CONTAINER,
        .implemented = true,
        .caps = docker_caps,
        .probe = docker_probe,
        .run = docker_run,
        .persist_why = "each exec would be a container of its own (no init serving execs inside the "
                       "engine); use native or landlock",
};
