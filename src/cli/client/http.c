/* http.c — the client verbs' HTTP client to `sandboxer serve` (libcurl) and their shared options
 * (client.h). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "cli/client/client.h"
#include "verbs.h"

/* ---- HTTP: libcurl ----------------------------------------------------------------------------- */

int client_read_local(const char *verb, const char *local, response *data) {
        FILE *f = streq(local, "-") ? stdin : fopen(local, "re");
        if (!f) {
                cli_error("%s: cannot read %s: %m", verb, local);
                return -1;
        }
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                client_collect(data, buf, n);
        bool bad = ferror(f);
        if (f != stdin)
                fclose(f);
        if (bad) {
                cli_error("%s: cannot read %s", verb, local);
                free(data->body);
                *data = (response){0};
                return -1;
        }
        return 0;
}

int client_write_local(const char *verb, const char *local, const response *r) {
        FILE *f = streq(local, "-") ? stdout : fopen(local, "we");
        if (!f || fwrite(r->body ? r->body : "", 1, r->len, f) != r->len ||
                (f != stdout && fclose(f) != 0)) {
                cli_error("%s: cannot write %s: %m", verb, local);
                return -1;
        }
        return 0;
}

void client_collect(void *ud, const char *d, size_t n) {
        response *r = ud;
        char *p = realloc(r->body, r->len + n + 1);
        if (!p)
                return;
        r->body = p;
        memcpy(r->body + r->len, d, n);
        r->len += n;
        r->body[r->len] = 0;
}

typedef struct xfer {
        CURL *c;
        response *resp;
        body_sink sink;
        void *ud;
        bool decided; /* the status is known: the body goes to sink (a success) or is collected */
} xfer;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        xfer *x = userdata;
        size_t n = size * nmemb;
        if (!x->decided) {
                long status = 0;
                curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &status);
                x->resp->status = (int) status;
                if (!(x->sink && status < 300))
                        x->sink = NULL;
                x->decided = true;
        }
        if (x->sink)
                x->sink(x->ud, data, n);
        else
                client_collect(x->resp, data, n);
        return n;
}

static bool curl_ready(void) {
        static bool done, ok;
        if (!done) {
                ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
                done = true;
        }
        return ok;
}

int client_http(const conn_opts *o, const char *method, const char *path, const char *ctype,
        const char *extra_header, const void *body, size_t len, response *resp, body_sink sink, void *ud) {
        if (!curl_ready()) {
                cli_error("cannot initialise libcurl");
                return -ENOMEM;
        }
        CURL *c = curl_easy_init();
        if (!c) {
                cli_error("cannot initialise libcurl");
                return -ENOMEM;
        }
        char url[4200], auth[600], ct[300];
        if (o->addr.is_unix) {
                snprintf(url, sizeof url, "http://sandboxer%s", path);
                curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, o->addr.path);
        } else
                snprintf(url, sizeof url, strchr(o->addr.host, ':') ? "http://[%s]:%u%s" : "http://%s:%u%s",
                        o->addr.host, o->addr.port, path);
        struct curl_slist *h = NULL;
        h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip before a large body */
        if (ctype) {
                snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
                h = curl_slist_append(h, ct);
        }
        if (o->token) {
                snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->token);
                h = curl_slist_append(h, auth);
        }
        /* extra_header: "Name: value\r\n" lines */
        _cleanup_free_ char *extra = extra_header ? strdup(extra_header) : NULL;
        for (char *save = NULL, *l = extra ? strtok_r(extra, "\r\n", &save) : NULL; l;
                l = strtok_r(NULL, "\r\n", &save))
                h = curl_slist_append(h, l);
        char agent[64];
        snprintf(agent, sizeof agent, "sandboxer/%s", SBX_VERSION);
        xfer x = {.c = c, .resp = resp, .sink = sink, .ud = ud};
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_USERAGENT, agent);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
        if (len || streq(method, "POST") || streq(method, "PUT")) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, len ? body : "");
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
        }
        CURLcode cr = curl_easy_perform(c);
        long status = 0, oserr = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oserr);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        int r = 0;
        if (cr == CURLE_COULDNT_CONNECT || cr == CURLE_COULDNT_RESOLVE_HOST) {
                r = oserr ? -(int) oserr : cr == CURLE_COULDNT_RESOLVE_HOST ? -EHOSTUNREACH : -ECONNREFUSED;
                if (o->addr.is_unix)
                        cli_error("cannot reach the control plane at unix:%s: %s; is 'sandboxer serve' "
                                  "running? (--server ADDR names another)",
                                o->addr.path, strerror(-r));
                else
                        cli_error("cannot reach the control plane at %s:%u: %s", o->addr.host, o->addr.port,
                                strerror(-r));
                return r;
        }
        if (status == 0) {
                cli_error("the server's answer is not HTTP (%s)", curl_easy_strerror(cr));
                return -EPROTO;
        }
        /* a body cut short after the status (the server went away mid-stream): what came is kept */
        resp->status = (int) status;
        return 0;
}

/* An error answer: "sandboxer: MESSAGE (HTTP 404, not_found)". Always 125. */
int client_api_error(const response *r) {
        json_error_t je;
        json_t *j = r->body ? json_loadb(r->body, r->len, 0, &je) : NULL;
        json_t *e = json_object_get(j, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *code = json_string_value(json_object_get(e, "code"));
        cli_error("%s (HTTP %d%s%s)", msg ? msg : "the server refused the request", r->status,
                code ? ", " : "", code ? code : "");
        json_decref(j);
        return SBX_EXIT_FAILURE;
}

json_t *client_body_json(const response *r) {
        json_error_t je;
        /* an exec's output is bytes: NUL is "\u0000" in its string (put_data writes its length) */
        json_t *j = r->body ? json_loadb(r->body, r->len, JSON_ALLOW_NUL, &je) : NULL;
        if (!j)
                cli_error(
                        "the server's answer is not JSON%s%s", r->body ? ": " : "", r->body ? je.text : "");
        return j;
}

/* ---- options shared by every client verb ---------------------------------------------------- */

int conn_option(conn_opts *o, int c, const char *arg) {
        sbx_error e = {0};
        char buf[1024];
        switch (c) {
        case O_SERVER:
                if (sbx_listen_addr_parse(arg, &o->addr, &e) < 0) {
                        cli_error("--server: %s", sbx_error_format(&e, buf, sizeof buf));
                        return -EINVAL;
                }
                o->addr_text = arg;
                return 1;
        case O_TOKEN:
                o->token = arg;
                return 1;
        case O_JSON:
                o->json = true;
                return 1;
        default:
                return 0;
        }
}

int conn_finish(conn_opts *o) {
        if (!o->addr_text) {
                sbx_error e = {0};
                char buf[1024];
                if (sbx_listen_addr_default(&o->addr, &e) < 0) {
                        cli_error("%s", sbx_error_format(&e, buf, sizeof buf));
                        return -EINVAL;
                }
        }
        if (!o->token) {
                const char *t = getenv("SANDBOXER_TOKEN");
                if (t && *t)
                        o->token = t;
        }
        if (!o->addr.is_unix && !o->token) {
                cli_error("TCP needs a bearer token: --token TOKEN or SANDBOXER_TOKEN ('sandboxer token "
                          "create')");
                return -EINVAL;
        }
        return 0;
}

const char conn_help[] =
        "  --server ADDR      unix:PATH (default: the serve socket in the runtime dir) or HOST:PORT\n"
        "  --token TOKEN      bearer token for TCP (default: $SANDBOXER_TOKEN)\n"
        "  --json             print the server's JSON\n"
        "  -h, --help         this text\n";

bool client_id_ok(const char *s) {
        if (!s || strncmp(s, "sbx_", 4) != 0 || strlen(s) > 40)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* URL-encode s into out. */
void client_urlenc(const char *s, char *out, size_t size) {
        size_t o = 0;
        for (; *s && o + 4 < size; s++) {
                unsigned char c = (unsigned char) *s;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        strchr("-._~/", c))
                        out[o++] = (char) c;
                else
                        o += (size_t) snprintf(out + o, size - o, "%%%02X", c);
        }
        out[o] = 0;
}

void client_print_json(json_t *j) {
        char *s = json_dumps(j, JSON_INDENT(2));
        if (s) {
                puts(s);
                free(s);
        }
}
