/* docker-api.h — how the docker backend (docker.c) reads the Engine API's answers: a minimal
 * HTTP/1.1 response reader over the unix socket and just enough JSON to find a member. Internal
 * to the backend; declared here so that fuzz/fuzz-docker-response.c can drive them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Read the response head (status line and headers) from the socket fd into buf (size bytes);
 * what followed it stays in buf + *ret_head .. + *ret_have. The status code, or -errno. */
int docker_read_head(int fd, char *buf, size_t size, size_t *ret_head, size_t *ret_have);
/* A whole answer from fd, once the request is sent: the status code, and the body (chunked
 * decoded, NUL-terminated) in *ret_body when non-NULL; -errno. */
int docker_read_answer(int fd, char **ret_body);

/* Past the whitespace at p. */
const char *docker_json_ws(const char *p);
/* Past the value at p (string, object, array or bare token); NULL if it does not end. */
const char *docker_json_skip(const char *p);
/* The value of obj's member "key" (obj points at an object), or NULL. */
const char *docker_json_member(const char *obj, const char *key);
/* The scalar member "key" of obj (a string, unescaped simply, or a bare token) into buf; false
 * if absent or not a scalar. */
bool docker_json_field(const char *obj, const char *key, char *buf, size_t size);
