/* fuzz-docker-response.c — libFuzzer target: how the docker backend (src/lib/backend/docker.c,
 * through backend/docker-api.h) reads the Engine API's answers: docker_read_answer() (the head,
 * then the body: Content-Length, chunked or to the end, chunked decoded), docker_read_head()
 * alone with a small buffer (as the ping and the attach read it), and the reads of the body the
 * backend makes through jansson (docker_json_parse/field): the container list the guard
 * sweeps, an inspect's State, a create's Id, an error's message, a wait's StatusCode.
 *
 * Input: the first byte's low 7 bits are the size of each read (0: all at once; see
 * fuzz-feed.h), the second byte the head buffer's size for docker_read_head (in 64-byte steps);
 * the rest is the engine's bytes. The JSON reader also runs over those bytes directly.
 * Not covered: what docker.c does with the values (kill, DELETE requests), engine_ping's
 * header scan (a loop of its own in a function that connects), the attached stream's frames. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/docker-api.h"
#include "fuzz-feed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void field(const json_t *obj, const char *key, size_t size) {
        char buf[96];
        memset(buf, 'x', sizeof buf);
        if (docker_json_field(obj, key, buf, size) && !memchr(buf, 0, size))
                abort(); /* not terminated within its size */
}

/* The JSON reads docker.c makes of an answer. */
static void read_json(const char *body) {
        json_t *j = docker_json_parse(body);
        /* the guard's sweep: an array of containers, each with Labels and Id */
        size_t i;
        json_t *c;
        if (json_is_array(j))
                json_array_foreach(j, i, c) {
                        field(json_object_get(c, "Labels"), "io.sandboxer.owner", 64);
                        field(c, "Id", 80);
                }
        const json_t *state = json_object_get(j, "State");
        field(state, "Running", 16);
        field(state, "ExitCode", 32);
        field(state, "OOMKilled", 16);
        field(j, "Id", 96);
        field(j, "message", 96);
        field(j, "StatusCode", 32);
        json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 2)
                return 0;
        size_t piece = data[0] & 0x7f, head_size = 64 * ((size_t) data[1] + 1);
        const uint8_t *in = data + 2;
        size_t n = size - 2;

        int fd = fuzz_feed(in, n, piece);
        if (fd >= 0) {
                char *body = NULL;
                int code = docker_read_answer(fd, &body);
                close(fd);
                if (code < 0 && body)
                        abort();
                if (body) {
                        size_t bl = strlen(body);
                        if (bl > n)
                                abort();
                        read_json(body);
                }
                free(body);
        }

        fd = fuzz_feed(in, n, piece);
        if (fd >= 0) {
                char *buf = malloc(head_size);
                size_t head = 0, have = 0;
                int code = buf ? docker_read_head(fd, buf, head_size, &head, &have) : -1;
                close(fd);
                if (code >= 0 && (head > have || have >= head_size || buf[have] != 0))
                        abort();
                free(buf);
        }

        char *s = malloc(n + 1);
        if (s) {
                memcpy(s, in, n);
                s[n] = 0;
                read_json(s);
                free(s);
        }
        return 0;
}
