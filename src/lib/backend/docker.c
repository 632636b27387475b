/* docker.c — the `docker` backend (placeholder while it is written). */
#include "backend/oci.h"

const sbx_backend sbx_backend_docker = {.id = SBX_BACKEND_DOCKER, .level = SBX_LEVEL_CONTAINER};
