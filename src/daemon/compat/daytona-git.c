/* daytona-git.c — Daytona's git toolbox (/git/…): each operation is `git` run inside the sandbox
 * (an exec, its argv built here: nothing the caller sends becomes shell text), so the repository,
 * its remotes and the credentials live in the sandbox under its fences. A remote the sandbox can
 * reach works — a local one over file:// or a path; https remotes need the network the sandbox
 * does not have (the egress proxy comes with the network work). git's own message is the error:
 * 400, or 404 for a path that is no repository. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/compat/compat.h"

typedef struct gctx {
        cx_req *rq;
        const char *id;
        char *const *env;
        const char *scratch;
        const char *const *homes;
        json_t *body;
} gctx;

#define ARGS_MAX 32

typedef struct args {
        char *v[ARGS_MAX + 1];
        int n;
} args;

static void add(args *a, const char *s) {
        if (a->n < ARGS_MAX && s)
                a->v[a->n++] = strdup(s);
}

static void args_done(args *a) {
        for (int i = 0; i < a->n; i++)
                free(a->v[i]);
        a->n = 0;
}

static const char *str(gctx *g, const char *k) {
        return json_string_value(json_object_get(g->body, k));
}

/* Run argv in the sandbox: true with its output in r when it exited 0; else the error said. */
static bool run(gctx *g, args *a, cx_run *r) {
        a->v[a->n] = NULL;
        unsigned code = cx_exec(g->rq, g->id, a->v, g->env, NULL, 0, NULL, 0, r);
        if (code) {
                cx_daytona_err(g->rq, code == 410 ? 404 : code, "%s",
                        json_string_value(json_object_get(json_object_get(r->refusal, "error"), "message"))
                                ?: "refused");
                return false;
        }
        if (r->exit_code == 0)
                return true;
        const char *e = r->err && *r->err ? r->err : r->out && *r->out ? r->out : r->error ? r->error : "";
        size_t l = strlen(e);
        while (l && (e[l - 1] == '\n' || e[l - 1] == ' '))
                l--;
        if (r->exit_code == 127)
                cx_daytona_err(
                        g->rq, 501, "git is not installed in this sandbox's image (%.*s)", (int) l, e);
        else
                cx_daytona_err(g->rq, strstr(e, "not a git repository") ? 404 : 400, "git: %.*s", (int) l,
                        e[0] ? e : "failed");
        return false;
}

/* `git -C PATH` with PATH from the body (or the query), into the sandbox. false when said. */
static bool git_at(gctx *g, args *a, const char *p) {
        _cleanup_free_ char *path = cx_path(p, g->scratch, g->homes);
        if (!path) {
                cx_daytona_err(g->rq, 400, "path: the repository's path is required");
                return false;
        }
        add(a, "git");
        add(a, "-C");
        add(a, path);
        return true;
}

/* A second step after one that succeeded: `git -C path ARG...` (NULL-terminated), into r. */
static bool then_git(gctx *g, cx_run *r, const char *path, ...) {
        args a = {0};
        cx_run_done(r);
        if (!git_at(g, &a, path))
                return false;
        va_list ap;
        va_start(ap, path);
        for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
                add(&a, s);
        va_end(ap);
        bool ok = run(g, &a, r);
        args_done(&a);
        return ok;
}

/* "--" and the paths of a list (strings_ok checked it). */
static void add_paths(args *a, const json_t *files) {
        size_t i;
        json_t *v;
        add(a, "--");
        json_array_foreach(files, i, v) add(a, json_string_value(v));
}

static bool strings_ok(const json_t *l) {
        size_t i;
        json_t *v;
        if (!json_is_array(l))
                return false;
        json_array_foreach(l, i, v) if (!json_is_string(v) || i >= ARGS_MAX - 8) return false;
        return true;
}

static void ok_empty(gctx *g) {
        cx_respond(g->rq, 200, "application/json", "", 0);
}

/* "## main...origin/main [ahead 1, behind 2]" and "XY name" lines → Daytona's GitStatus. */
static const char *status_name(char c) {
        switch (c) {
        case 'M':
                return "Modified";
        case 'A':
                return "Added";
        case 'D':
                return "Deleted";
        case 'R':
                return "Renamed";
        case 'C':
                return "Copied";
        case 'U':
                return "Updated but unmerged";
        case '?':
                return "Untracked";
        default:
                return "Unmodified";
        }
}

static json_t *status_json(char *out) {
        json_t *files = json_array(), *st = json_object();
        char *save = NULL;
        for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (strncmp(l, "## ", 3) == 0) {
                        char *b = l + 3, *ahead = strstr(b, "ahead "), *behind = strstr(b, "behind ");
                        if (strncmp(b, "No commits yet on ", 18) == 0)
                                b += 18;
                        char *br = strstr(b, " ["), *dots = strstr(b, "...");
                        if (br)
                                *br = 0;
                        if (dots) {
                                json_object_set_new(st, "upstream", json_string(dots + 3));
                                *dots = 0;
                        }
                        bool detached = strncmp(b, "HEAD (no branch)", 16) == 0;
                        json_object_set_new(st, "currentBranch", json_string(detached ? "HEAD" : b));
                        json_object_set_new(st, "detached", json_boolean(detached));
                        json_object_set_new(st, "branchPublished", json_boolean(dots != NULL));
                        json_object_set_new(st, "ahead", json_integer(ahead ? atoi(ahead + 6) : 0));
                        json_object_set_new(st, "behind", json_integer(behind ? atoi(behind + 7) : 0));
                } else if (strlen(l) > 3) {
                        char *name = l + 3, *arrow = strstr(name, " -> ");
                        json_t *f = json_pack("{s:s, s:s, s:s, s:s}", "name", arrow ? arrow + 4 : name,
                                "staging", status_name(l[0]), "worktree", status_name(l[1]), "extra", "");
                        if (arrow) {
                                *arrow = 0;
                                json_object_set_new(f, "extra", json_string(name));
                        }
                        json_array_append_new(files, f);
                }
        }
        if (!json_object_get(st, "currentBranch"))
                json_object_set_new(st, "currentBranch", json_string(""));
        json_object_set_new(st, "fileStatus", files);
        return st;
}

static json_t *history_json(char *out) {
        json_t *l = json_array();
        char *save = NULL;
        for (char *rec = strtok_r(out, "\x1e", &save); rec; rec = strtok_r(NULL, "\x1e", &save)) {
                while (*rec == '\n')
                        rec++;
                char *f[5] = {0}, *s2 = NULL;
                int k = 0;
                for (char *p = rec; k < 5 && p; k++) {
                        f[k] = p;
                        p = strchr(p, '\x1f');
                        if (p)
                                *p++ = 0;
                }
                (void) s2;
                if (k == 5 && f[0][0])
                        json_array_append_new(
                                l, json_pack("{s:s, s:s, s:s, s:s, s:s}", "hash", f[0], "author", f[1],
                                           "email", f[2], "timestamp", f[3], "message", f[4]));
        }
        return l;
}

static json_t *remotes_json(char *out) {
        json_t *l = json_array();
        char *save = NULL;
        for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *tab = strchr(line, '\t'), *sp = tab ? strrchr(tab, ' ') : NULL;
                if (!tab || !sp || !streq(sp, " (fetch)"))
                        continue;
                *tab = 0;
                *sp = 0;
                json_array_append_new(l, json_pack("{s:s, s:s}", "name", line, "url", tab + 1));
        }
        return json_pack("{s:o}", "remotes", l);
}

/* --global, --local (in the repository at path), --system */
static bool scope_arg(gctx *g, args *a, const char *scope, const char *path) {
        if (!scope || streq(scope, "global")) {
                add(a, "git");
                add(a, "config");
                add(a, "--global");
                return true;
        }
        if (streq(scope, "local")) {
                if (!git_at(g, a, path))
                        return false;
                add(a, "config");
                add(a, "--local");
                return true;
        }
        cx_daytona_err(g->rq, 400,
                "scope: global or local (the system's git config is not the sandbox's to write)");
        return false;
}

bool cx_daytona_git(cx_req *rq, const char *sandbox_id, const char *op, char *const *env,
        const char *scratch, const char *const *homes) {
        if (strncmp(op, "/git/", 5) != 0)
                return false;
        const char *what = op + 5;
        bool get = streq(rq->method, "GET"), post = streq(rq->method, "POST"),
             del = streq(rq->method, "DELETE");
        json_error_t je;
        gctx g = {.rq = rq, .id = sandbox_id, .env = env, .scratch = scratch, .homes = homes};
        if (post || del) {
                g.body = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
                if (!json_is_object(g.body)) {
                        cx_daytona_err(rq, 400, "the body must be a JSON object: %s", je.text);
                        json_decref(g.body);
                        return true;
                }
        }
        args a = {0};
        cx_run r = {0};
        const char *path = get ? cx_query(rq, "path") : str(&g, "path");
        if (streq(what, "status") && get) {
                if (git_at(&g, &a, path)) {
                        add(&a, "status");
                        add(&a, "--porcelain=v1");
                        add(&a, "--branch");
                        if (run(&g, &a, &r))
                                cx_respond_json(rq, 200, status_json(r.out ? r.out : (char *) ""));
                }
        } else if (streq(what, "init") && post) {
                _cleanup_free_ char *p = cx_path(path, scratch, homes);
                const char *ib = str(&g, "initial_branch");
                if (!p)
                        cx_daytona_err(rq, 400, "path: required");
                else {
                        add(&a, "git");
                        add(&a, "init");
                        add(&a, "-q");
                        if (json_is_true(json_object_get(g.body, "bare")))
                                add(&a, "--bare");
                        if (ib && *ib) {
                                add(&a, "-b");
                                add(&a, ib);
                        }
                        add(&a, "--");
                        add(&a, p);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if (streq(what, "clone") && post) {
                _cleanup_free_ char *p = cx_path(path, scratch, homes);
                const char *url = str(&g, "url"), *br = str(&g, "branch"), *commit = str(&g, "commit_id");
                json_t *depth = json_object_get(g.body, "depth");
                char dbuf[32];
                if (!p || !url || !*url)
                        cx_daytona_err(rq, 400, "url and path are required");
                else if (depth && !json_is_null(depth) &&
                         (!json_is_integer(depth) || json_integer_value(depth) < 1))
                        cx_daytona_err(rq, 400, "depth: a positive number of commits");
                else {
                        add(&a, "git");
                        add(&a, "clone");
                        add(&a, "-q");
                        if (br && *br) {
                                add(&a, "--branch");
                                add(&a, br);
                        }
                        if (json_is_integer(depth)) {
                                snprintf(dbuf, sizeof dbuf, "--depth=%lld",
                                        (long long) json_integer_value(depth));
                                add(&a, dbuf);
                        }
                        add(&a, "--");
                        add(&a, url);
                        add(&a, p);
                        bool done = run(&g, &a, &r);
                        if (done && commit && *commit)
                                done = then_git(&g, &r, p, "checkout", "-q", commit, NULL);
                        if (done)
                                ok_empty(&g);
                }
        } else if (streq(what, "add") && post) {
                json_t *files = json_object_get(g.body, "files");
                if (!strings_ok(files))
                        cx_daytona_err(
                                rq, 400, "files: a list of paths (at most %d) is required", ARGS_MAX - 8);
                else if (git_at(&g, &a, path)) {
                        add(&a, "add");
                        add_paths(&a, files);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if (streq(what, "commit") && post) {
                const char *msg = str(&g, "message"), *author = str(&g, "author"), *email = str(&g, "email");
                if (!msg || !author || !email)
                        cx_daytona_err(rq, 400, "message, author and email are required");
                else if (git_at(&g, &a, path)) {
                        char n[300], e[300];
                        snprintf(n, sizeof n, "user.name=%s", author);
                        snprintf(e, sizeof e, "user.email=%s", email);
                        add(&a, "-c");
                        add(&a, n);
                        add(&a, "-c");
                        add(&a, e);
                        add(&a, "commit");
                        add(&a, "-q");
                        if (json_is_true(json_object_get(g.body, "allow_empty")))
                                add(&a, "--allow-empty");
                        add(&a, "-m");
                        add(&a, msg);
                        if (run(&g, &a, &r) && then_git(&g, &r, path, "rev-parse", "HEAD", NULL)) {
                                size_t l = r.out_len;
                                while (l && r.out[l - 1] == '\n')
                                        l--;
                                cx_respond_json(rq, 200, json_pack("{s:s%}", "hash", r.out ? r.out : "", l));
                        }
                }
        } else if (streq(what, "branches") && get) {
                if (git_at(&g, &a, path)) {
                        add(&a, "branch");
                        add(&a, "--format=%(HEAD)%(refname:short)");
                        if (run(&g, &a, &r)) {
                                json_t *l = json_array();
                                const char *cur = "";
                                char *save = NULL;
                                for (char *b = strtok_r(r.out ? r.out : (char *) "", "\n", &save); b;
                                        b = strtok_r(NULL, "\n", &save)) {
                                        json_array_append_new(l, json_string(b + 1));
                                        if (b[0] == '*')
                                                cur = b + 1;
                                }
                                cx_respond_json(
                                        rq, 200, json_pack("{s:o, s:s}", "branches", l, "current", cur));
                        }
                }
        } else if (streq(what, "branches") && (post || del)) {
                const char *name = str(&g, "name");
                if (!name || !*name)
                        cx_daytona_err(rq, 400, "name: the branch is required");
                else if (git_at(&g, &a, path)) {
                        add(&a, "branch");
                        if (del)
                                add(&a, "-D");
                        add(&a, "--");
                        add(&a, name);
                        if (run(&g, &a, &r))
                                cx_respond(rq, del ? 204 : 201, "application/json", "", 0);
                }
        } else if (streq(what, "checkout") && post) {
                const char *br = str(&g, "branch");
                if (!br || !*br)
                        cx_daytona_err(rq, 400, "branch is required");
                else if (git_at(&g, &a, path)) {
                        add(&a, "checkout");
                        add(&a, "-q");
                        add(&a, br);
                        add(&a, "--");
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if ((streq(what, "pull") || streq(what, "push")) && post) {
                const char *remote = str(&g, "remote"), *br = str(&g, "branch");
                if (git_at(&g, &a, path)) {
                        add(&a, what);
                        add(&a, "-q");
                        if (streq(what, "push") && json_is_true(json_object_get(g.body, "set_upstream")))
                                add(&a, "--set-upstream");
                        if ((remote && *remote) || (br && *br))
                                add(&a, remote && *remote ? remote : "origin");
                        if (br && *br)
                                add(&a, br);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if (streq(what, "history") && get) {
                if (git_at(&g, &a, path)) {
                        add(&a, "log");
                        add(&a, "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e");
                        if (run(&g, &a, &r))
                                cx_respond_json(rq, 200, history_json(r.out ? r.out : (char *) ""));
                }
        } else if (streq(what, "remotes") && get) {
                if (git_at(&g, &a, path)) {
                        add(&a, "remote");
                        add(&a, "-v");
                        if (run(&g, &a, &r))
                                cx_respond_json(rq, 200, remotes_json(r.out ? r.out : (char *) ""));
                }
        } else if (streq(what, "remotes") && post) {
                const char *name = str(&g, "name"), *url = str(&g, "url");
                bool over = json_is_true(json_object_get(g.body, "overwrite"));
                if (!name || !*name || !url || !*url)
                        cx_daytona_err(rq, 400, "name and url are required");
                else if (git_at(&g, &a, path)) {
                        /* overwrite: set-url when it exists (remove then add, in one shell with argv) */
                        args s = {0};
                        bool done;
                        if (over) {
                                add(&s, "/bin/sh");
                                add(&s, "-c");
                                add(&s, "git -C \"$1\" remote remove \"$2\" 2>/dev/null; git -C \"$1\" "
                                        "remote add -- "
                                        "\"$2\" \"$3\"");
                                add(&s, "sh");
                                add(&s, a.v[2]);
                                add(&s, name);
                                add(&s, url);
                                done = run(&g, &s, &r);
                        } else {
                                add(&a, "remote");
                                add(&a, "add");
                                add(&a, "--");
                                add(&a, name);
                                add(&a, url);
                                done = run(&g, &a, &r);
                        }
                        if (done && json_is_true(json_object_get(g.body, "fetch")))
                                done = then_git(&g, &r, path, "fetch", "-q", name, NULL);
                        if (done)
                                ok_empty(&g);
                        args_done(&s);
                }
        } else if (streq(what, "reset") && post) {
                const char *mode = str(&g, "mode"), *target = str(&g, "target");
                json_t *files = json_object_get(g.body, "files");
                if (mode && !streq(mode, "soft") && !streq(mode, "mixed") && !streq(mode, "hard"))
                        cx_daytona_err(rq, 400, "mode: soft, mixed or hard");
                else if (files && !json_is_null(files) && !strings_ok(files))
                        cx_daytona_err(rq, 400, "files: a list of paths");
                else if (git_at(&g, &a, path)) {
                        char m[16];
                        add(&a, "reset");
                        add(&a, "-q");
                        if (mode && json_array_size(files) == 0) {
                                snprintf(m, sizeof m, "--%s", mode);
                                add(&a, m);
                        }
                        if (target && *target)
                                add(&a, target);
                        if (json_array_size(files))
                                add_paths(&a, files);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if (streq(what, "restore") && post) {
                json_t *files = json_object_get(g.body, "files");
                const char *source = str(&g, "source");
                if (!strings_ok(files) || !json_array_size(files))
                        cx_daytona_err(rq, 400, "files: a list of paths is required");
                else if (git_at(&g, &a, path)) {
                        char s[300];
                        add(&a, "restore");
                        if (json_is_true(json_object_get(g.body, "staged")))
                                add(&a, "--staged");
                        if (json_is_true(json_object_get(g.body, "worktree")))
                                add(&a, "--worktree");
                        if (source && *source) {
                                snprintf(s, sizeof s, "--source=%s", source);
                                add(&a, s);
                        }
                        add_paths(&a, files);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else if (streq(what, "config") && get) {
                const char *key = cx_query(rq, "key");
                if (!key || !*key)
                        cx_daytona_err(rq, 400, "key is required");
                else if (scope_arg(&g, &a, cx_query(rq, "scope"), path)) {
                        add(&a, "--get");
                        add(&a, key);
                        a.v[a.n] = NULL;
                        unsigned code = cx_exec(rq, sandbox_id, a.v, env, NULL, 0, NULL, 0, &r);
                        if (code)
                                cx_daytona_err(rq, code, "the sandbox refused the command");
                        else if (r.exit_code == 1) /* not set */
                                cx_respond_json(rq, 200, json_object());
                        else if (r.exit_code == 0) {
                                size_t l = r.out_len;
                                while (l && r.out[l - 1] == '\n')
                                        l--;
                                cx_respond_json(
                                        rq, 200, json_pack("{s:s%}", "value", r.out ? r.out : "", l));
                        } else
                                cx_daytona_err(rq, 400, "git config: %s", r.err ? r.err : "failed");
                }
        } else if ((streq(what, "config") || streq(what, "config/user")) && post) {
                bool user = streq(what, "config/user");
                const char *key = str(&g, "key"), *value = str(&g, "value"), *name = str(&g, "name"),
                           *email = str(&g, "email");
                if (user ? !name || !email : !key || !*key || !value)
                        cx_daytona_err(rq, 400,
                                user ? "name and email are required" : "key and value are required");
                else if (scope_arg(&g, &a, str(&g, "scope"), path)) {
                        add(&a, user ? "user.name" : key);
                        add(&a, user ? name : value);
                        bool done = run(&g, &a, &r);
                        if (done && user) {
                                args e = {0};
                                cx_run_done(&r);
                                (void) scope_arg(&g, &e, str(&g, "scope"), path);
                                add(&e, "user.email");
                                add(&e, email);
                                done = run(&g, &e, &r);
                                args_done(&e);
                        }
                        if (done)
                                ok_empty(&g);
                }
        } else if (streq(what, "credentials") && post) {
                /* git's store helper, in the sandbox's home: https remotes use them once the
                 * sandbox has a network */
                const char *u = str(&g, "username"), *pw = str(&g, "password"), *host = str(&g, "host"),
                           *proto = str(&g, "protocol");
                if (!u || !pw)
                        cx_daytona_err(rq, 400, "username and password are required");
                else {
                        add(&a, "/bin/sh");
                        add(&a, "-c");
                        add(&a, "git config --global credential.helper store && printf "
                                "'protocol=%s\\nhost=%s\\n"
                                "username=%s\\npassword=%s\\n\\n' \"$1\" \"$2\" \"$3\" \"$4\" | git "
                                "credential approve");
                        add(&a, "sh");
                        add(&a, proto && *proto ? proto : "https");
                        add(&a, host && *host ? host : "github.com");
                        add(&a, u);
                        add(&a, pw);
                        if (run(&g, &a, &r))
                                ok_empty(&g);
                }
        } else
                cx_daytona_err(rq, 404, "no such git operation: %s %s", rq->method, op);
        args_done(&a);
        cx_run_done(&r);
        json_decref(g.body);
        return true;
}
