/* daytona-internal.h — what daytona.c (the sandboxes API) and daytona-toolbox.c (the toolbox)
 * share. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "daemon/compat/compat.h"

/* The homes Daytona's paths name, standing for the scratch of a sandbox without its own. */
extern const char *const dt_homes[];
/* A native error body's message; "refused" when it has none. */
const char *dt_native_message(const json_t *j);
/* A native refusal in Daytona's error shape (410 → 404, 422 → 400). */
void dt_native_err(cx_req *rq, unsigned code, const json_t *j);
/* Daytona's network settings (daytona-network.c): a create's or an update's networkBlockAll,
 * networkAllowList and domainAllowList as egress rules; false with a sentence in err. */
struct sbx_network_req;
bool dt_network_decode(json_t *body, bool update, struct sbx_network_req *ret, char *err, size_t errsz);
/* The record's rules as Daytona's sandbox fields. */
void dt_network_info(json_t *j, const json_t *rec);
/* The caller's sandbox record (live: only a started one), or NULL with the 404 said. */
json_t *dt_record(cx_req *rq, const char *id, bool live);
/* /toolbox/ID/…: the toolbox (daytona-toolbox.c). */
void dt_toolbox(cx_req *rq, const char *path);

/* daytona.c: the id an archived (then started) sandbox's old id stands for, in place. */
void dt_alias_resolve(sbx_mgr *m, char *id, size_t size);
