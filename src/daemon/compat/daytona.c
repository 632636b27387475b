/* daytona.c — Daytona's API and toolbox on the control plane's server (filled in below). */
#include "daemon/compat/compat.h"

bool cx_daytona_handle(cx_req *rq) {
        return false;
}
