/* volume.c — `sandboxer volume`: the tenant's volumes (create, ls, rm) and their files without a
 * sandbox (ls NAME:PATH, cp, mkdir, rm NAME:PATH) — docs/api.md, "Volumes". A file operand is
 * NAME:PATH, as `sandboxer cp` names a sandbox's files by ID:PATH. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "cli/client/client.h"
#include "daemon/ops.h"
#include "verbs.h"

enum { O_SIZE = 0x300, O_DEPTH };

static const char usage_text[] =
        "sandboxer volume create NAME --size-mb N\n"
        "sandboxer volume ls [NAME:PATH [--depth N]]\n"
        "sandboxer volume rm NAME | NAME:PATH\n"
        "sandboxer volume cp SRC DST          (one of them NAME:PATH; - for stdin/stdout)\n"
        "sandboxer volume mkdir NAME:PATH     (its parents too)\n";

/* NAME:PATH into name (1 to 63 bytes) and *path; false when s is not one. */
static bool split(const char *s, char name[64], const char **path) {
        const char *colon = s ? strchr(s, ':') : NULL;
        if (!colon || colon == s || (size_t) (colon - s) >= 64)
                return false;
        snprintf(name, 64, "%.*s", (int) (colon - s), s);
        *path = colon + 1;
        return true;
}

static int call(const conn_opts *o, const char *method, const char *path, const char *ctype,
        const void *body, size_t len, response *r) {
        if (client_http(o, method, path, ctype, NULL, body ? body : "", len, r, NULL, NULL) < 0)
                return SBX_EXIT_FAILURE;
        return r->status >= 300 ? client_api_error(r) : 0;
}

static void print_entries(json_t *items) {
        json_t *e;
        size_t i;
        json_array_foreach(items, i, e) printf("%-9s %04llo %5lld %5lld %10lld  %s%s%s\n",
                json_string_value(json_object_get(e, "type")) ?: "?",
                (unsigned long long) json_integer_value(json_object_get(e, "mode")),
                (long long) json_integer_value(json_object_get(e, "uid")),
                (long long) json_integer_value(json_object_get(e, "gid")),
                (long long) json_integer_value(json_object_get(e, "size")),
                json_string_value(json_object_get(e, "path")) ?: "?",
                json_object_get(e, "target") ? " -> " : "",
                json_string_value(json_object_get(e, "target")) ?: "");
}

int client_volume(int argc, char **argv) {
        static const struct option opts[] = {{"size-mb", required_argument, NULL, O_SIZE},
                {"depth", required_argument, NULL, O_DEPTH}, CONN_OPTIONS, {0}};
        conn_opts o = {0};
        const char *size = NULL, *depth = NULL;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                int k = conn_option(&o, c, optarg);
                if (k < 0)
                        return SBX_EXIT_FAILURE;
                if (k > 0)
                        continue;
                if (c == O_SIZE || c == O_DEPTH) {
                        *(c == O_SIZE ? &size : &depth) = optarg;
                        continue;
                }
                if (c == 'h') {
                        printf("%s\n"
                               "Named filesystems of the tenant's that outlive sandboxes (each an ext4 "
                               "image "
                               "of its size;\n"
                               "a server run as root), and their files reached without a sandbox: never "
                               "through a\n"
                               "symlink a sandbox put there.\n\n"
                               "  --size-mb N        create: its size in MiB (1 to 1048576)\n"
                               "  --depth N          ls NAME:PATH: how many levels down (1 to 16; 1)\n%s",
                                usage_text, conn_help);
                        return 0;
                }
                cli_error("volume: see 'sandboxer volume --help'");
                return SBX_EXIT_FAILURE;
        }
        int left = argc - optind;
        const char *sub = left > 0 ? argv[optind] : NULL, *a1 = left > 1 ? argv[optind + 1] : NULL,
                   *a2 = left > 2 ? argv[optind + 2] : NULL;
        char name[64] = "", name2[64] = "", enc[4096], path[4400];
        const char *fpath = NULL, *fpath2 = NULL;
        bool has_file = a1 && split(a1, name, &fpath), ok;
        if (a1 && !has_file)
                snprintf(name, sizeof name, "%.63s", a1);
        if (streq_ptr(sub, "create"))
                ok = left == 2 && !has_file && size;
        else if (streq_ptr(sub, "ls"))
                ok = left == 1 || (left == 2 && has_file);
        else if (streq_ptr(sub, "rm"))
                ok = left == 2;
        else if (streq_ptr(sub, "mkdir"))
                ok = left == 2 && has_file;
        else if (streq_ptr(sub, "cp"))
                ok = left == 3 && (has_file != (a2 && split(a2, name2, &fpath2)));
        else
                ok = false;
        if (!ok) {
                cli_error("volume: usage:\n%s", usage_text);
                return SBX_EXIT_FAILURE;
        }
        if ((name[0] || name2[0]) && !sbx_volume_name_ok(name2[0] ? name2 : name)) {
                cli_error(
                        "volume: '%s' is not a volume name (1 to 63 of [A-Za-z0-9._-], not starting with . "
                        "or -)",
                        name2[0] ? name2 : name);
                return SBX_EXIT_FAILURE;
        }
        char *end = NULL;
        long long sz = size ? strtoll(size, &end, 10) : 0;
        if (size && (!*size || *end || sz < 1 || sz > 1024 * 1024)) {
                cli_error("volume: --size-mb: a whole number of MiB, 1 to 1048576 (not '%s')", size);
                return SBX_EXIT_FAILURE;
        }
        long long dp = depth ? strtoll(depth, &end, 10) : 1;
        if (depth && (!*depth || *end || dp < 1 || dp > 16)) {
                cli_error("volume: --depth: 1 to 16 (not '%s')", depth);
                return SBX_EXIT_FAILURE;
        }
        if (conn_finish(&o) < 0)
                return SBX_EXIT_FAILURE;
        response r = {0};
        int rc;
        client_urlenc(fpath ? fpath : fpath2 ? fpath2 : "", enc, sizeof enc);
        if (streq(sub, "create")) {
                json_t *body = json_pack("{s:s, s:I}", "name", name, "size_mb", (json_int_t) sz);
                char *text = json_dumps(body, JSON_COMPACT);
                json_decref(body);
                rc = call(&o, "POST", "/v1/volumes", "application/json", text, text ? strlen(text) : 0, &r);
                free(text);
        } else if (streq(sub, "ls") && !has_file)
                rc = call(&o, "GET", "/v1/volumes", NULL, NULL, 0, &r);
        else if (streq(sub, "ls")) {
                snprintf(path, sizeof path, "/v1/volumes/%s/dir?path=%s&depth=%lld", name, enc, dp);
                rc = call(&o, "GET", path, NULL, NULL, 0, &r);
        } else if (streq(sub, "rm") && !has_file) {
                snprintf(path, sizeof path, "/v1/volumes/%s", name);
                rc = call(&o, "DELETE", path, NULL, NULL, 0, &r);
        } else if (streq(sub, "rm")) {
                snprintf(path, sizeof path, "/v1/volumes/%s/files?path=%s", name, enc);
                rc = call(&o, "DELETE", path, NULL, NULL, 0, &r);
        } else if (streq(sub, "mkdir")) {
                snprintf(path, sizeof path, "/v1/volumes/%s/dir?path=%s&parents=true", name, enc);
                rc = call(&o, "POST", path, NULL, NULL, 0, &r);
        } else if (name2[0]) { /* cp LOCAL NAME:PATH */
                response data = {0};
                if (client_read_local("volume", a1, &data) < 0)
                        return SBX_EXIT_FAILURE;
                snprintf(path, sizeof path, "/v1/volumes/%s/files?path=%s", name2, enc);
                rc = call(&o, "PUT", path, "application/octet-stream", data.body, data.len, &r);
                free(data.body);
        } else { /* cp NAME:PATH LOCAL */
                snprintf(path, sizeof path, "/v1/volumes/%s/files?path=%s", name, enc);
                rc = call(&o, "GET", path, NULL, NULL, 0, &r);
                if (rc == 0 && client_write_local("volume", a2, &r) < 0)
                        rc = SBX_EXIT_FAILURE;
                free(r.body);
                return rc;
        }
        if (rc == 0) {
                json_t *j = client_body_json(&r);
                if (o.json)
                        client_print_json(j);
                else if (streq(sub, "ls") && !has_file) {
                        json_t *v;
                        size_t i;
                        printf("%-22s %-24s %8s  %s\n", "ID", "NAME", "SIZE_MB", "CREATED");
                        json_array_foreach(json_object_get(j, "items"), i, v)
                                printf("%-22s %-24s %8.0f  %s\n",
                                        json_string_value(json_object_get(v, "id")) ?: "?",
                                        json_string_value(json_object_get(v, "name")) ?: "?",
                                        json_number_value(json_object_get(v, "size_mb")),
                                        json_string_value(json_object_get(v, "created_at")) ?: "-");
                } else if (streq(sub, "ls"))
                        print_entries(json_object_get(j, "items"));
                else if (streq(sub, "create"))
                        printf("%s\n", json_string_value(json_object_get(j, "id")) ?: "?");
                json_decref(j);
        }
        free(r.body);
        return rc;
}
