/* docker-api.h — how the docker backend (docker.c) reads the Engine API's answers: a minimal
 * HTTP/1.1 response reader over the unix socket (the static CLI links no HTTP client: libcurl
 * would bring its TLS stack into every `sandboxer run`), and the JSON through jansson. Internal
 * to the backend; declared here so that fuzz/fuzz-docker-response.c can drive them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Read the response head (status line and headers) from the socket fd into buf (size bytes);
 * what followed it stays in buf + *ret_head .. + *ret_have. The status code, or -errno. */
int docker_read_head(int fd, char *buf, size_t size, size_t *ret_head, size_t *ret_have);
/* A whole answer from fd, once the request is sent: the status code, and the body (chunked
 * decoded, NUL-terminated) in *ret_body when non-NULL; -errno. */
int docker_read_answer(int fd, char **ret_body);

/* The engine's answer parsed (jansson; JSON_DECODE_ANY, duplicate keys refused), or NULL when
 * body is NULL or not JSON. json_decref() it. */
json_t *docker_json_parse(const char *body);
/* The scalar member "key" of obj (a string, a number, true, false, null: as text) into buf,
 * truncated to size; false when obj is not an object, or the member is absent or not a scalar. */
bool docker_json_field(const json_t *obj, const char *key, char *buf, size_t size);
