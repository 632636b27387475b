/* fuzz-skill-tar.c — libFuzzer target: POST /v1/skills with the fuzz input as the tar, through
 * the route a client calls (sbx_mgr_route): the extraction (libarchive's tar reader, then the
 * entry checks: names, types, sizes, entries given twice) into a directory of the manager's
 * state, and what follows for an input that extracts: the manifest's lookup, its parse and the
 * verification against the policy (the default lookup; no trusted key is this target's).
 *
 * Checked: each input answers a status with a JSON body, and nothing is left of a refused upload
 * (skills/ holds records only). A 201 (an unsigned skill where the policy allows one) is deleted
 * again, so that the tenant's quota never fills.
 * Not covered: http.c's own reading of the body (libmicrohttpd's), the Content-Type (none is
 * given: the route takes that as a tar). */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/mgr-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/sbx-fuzz-skill-XXXXXX";
static char state_dir[sizeof dir + 16], runtime_dir[sizeof dir + 16], skills[sizeof dir + 32];
static sbx_store *store;
static sbx_mgr *mgr;
static const sbx_caller admin = {.kind = "adm", .name = "fuzz", .tenant = "default"};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
        (void) remove(path);
        return 0;
}

static void teardown(void) {
        mgr = sbx_mgr_free(mgr);
        store = sbx_store_free(store);
        (void) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool setup(void) {
        sbx_error e = {0};
        if (!mkdtemp(dir))
                return false;
        atexit(teardown);
        snprintf(state_dir, sizeof state_dir, "%s/state", dir);
        snprintf(runtime_dir, sizeof runtime_dir, "%s/run", dir);
        snprintf(skills, sizeof skills, "%s/skills", state_dir);
        if (sbx_store_open(NULL, state_dir, &store, &e) < 0)
                return false;
        sbx_mgr_options o = {
                .state_dir = state_dir, .runtime_dir = runtime_dir, .exe = "/nonexistent/sandboxer"};
        return sbx_mgr_new(store, &o, &mgr, &e) >= 0;
}

/* The entries of skills/ (the records kept), or -1 when one is a leftover of an upload. */
static int kept(void) {
        DIR *d = opendir(skills);
        if (!d)
                return 0;
        int n = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (strncmp(de->d_name, "skl_", 4) != 0)
                        n = -1;
                else if (n >= 0)
                        n++;
        }
        closedir(d);
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool ready, failed;
        if (!ready && !failed && !(ready = setup())) {
                failed = true;
                fprintf(stderr, "fuzz-skill-tar: cannot set up the manager in %s\n", dir);
        }
        if (!ready)
                return 0;
        char *body = malloc(size ? size : 1); /* its exact size: nothing may read past it */
        if (!body)
                return 0;
        memcpy(body, data, size);
        sbx_mgr_request rq = {.who = &admin, .body = body, .len = size, .query = NULL, .header = NULL};
        sbx_mgr_reply rp = {.stream_fd = -1};
        if (!sbx_mgr_route(mgr, "POST", "/v1/skills", &rq, &rp))
                abort();
        if (rp.code < 200 || rp.code > 599 || !rp.json || rp.stream_fd >= 0)
                abort();
        if (rp.code == 201) {
                const char *id = json_string_value(json_object_get(rp.json, "id"));
                sbx_mgr_reply dr = {.stream_fd = -1};
                if (!id || sbx_ops_skill_delete(mgr, &admin, id, &dr) != 200)
                        abort();
                sbx_mgr_reply_done(&dr);
        }
        sbx_mgr_reply_done(&rp);
        if (kept() != 0)
                abort(); /* a refused upload left something, or a deleted one stayed */
        free(body);
        return 0;
}
