/* error.c — filling and formatting struct sbx_error. */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int sbx_error_setv(sbx_error *e, int errnum, const char *step, const char *fmt, va_list ap) {
        if (errnum < 0)
                errnum = -errnum;
        if (errnum == 0)
                errnum = EIO;
        if (e) {
                e->errnum = errnum;
                snprintf(e->step, sizeof e->step, "%s", step ? step : "");
                vsnprintf(e->message, sizeof e->message, fmt, ap);
                e->file[0] = 0;
                e->line = e->column = 0;
        }
        return -errnum;
}

int sbx_error_set(sbx_error *e, int errnum, const char *step, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = sbx_error_setv(e, errnum, step, fmt, ap);
        va_end(ap);
        return r;
}

int sbx_error_set_at(
        sbx_error *e, int errnum, const char *file, unsigned line, unsigned column, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = sbx_error_setv(e, errnum, "parse", fmt, ap);
        va_end(ap);
        if (e) {
                snprintf(e->file, sizeof e->file, "%s", file ? file : "");
                e->line = line;
                e->column = column;
        }
        return r;
}

int sbx_error_wrap(sbx_error *e, int r, const char *fmt, ...) {
        if (r >= 0)
                r = -EIO;
        if (!e)
                return r;
        if (e->errnum == 0) {
                e->errnum = -r;
                snprintf(e->message, sizeof e->message, "%s", strerror(-r));
        } else if (!e->message[0])
                snprintf(e->message, sizeof e->message, "%s", strerror(e->errnum));
        char context[sizeof e->message];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(context, sizeof context, fmt, ap);
        va_end(ap);
        if (n <= 0)
                return r;
        char joined[sizeof e->message];
        if (snprintf(joined, sizeof joined, "%s: %s", context, e->message) >= (int) sizeof joined)
                joined[sizeof joined - 1] = 0; /* the tail of the callee's message is lost */
        memcpy(e->message, joined, sizeof e->message);
        return r;
}

const char *sbx_error_format(const sbx_error *e, char *buf, size_t size) {
        if (!e || e->errnum == 0)
                snprintf(buf, size, "unknown error");
        else if (e->file[0])
                snprintf(buf, size, "%s:%u:%u: %s", e->file, e->line, e->column, e->message);
        else if (e->message[0])
                snprintf(buf, size, "%s", e->message);
        else
                snprintf(buf, size, "%s: %s", e->step, strerror(e->errnum));
        return buf;
}

/* "ENOSYS" for ENOSYS: glibc's strerrorname_np(), else the names a probe or a set-up step can
 * report (musl has no such table); NULL for any other. */
const char *sbx_errno_name(int errnum) {
#ifdef __GLIBC__
        return strerrorname_np(errnum);
#else
#define N(x) [x] = #x
        static const char *const names[] = {
                N(EPERM),
                N(ENOENT),
                N(ESRCH),
                N(EINTR),
                N(EIO),
                N(ENXIO),
                N(E2BIG),
                N(ENOEXEC),
                N(EBADF),
                N(ECHILD),
                N(EAGAIN),
                N(ENOMEM),
                N(EACCES),
                N(EFAULT),
                N(EBUSY),
                N(EEXIST),
                N(EXDEV),
                N(ENODEV),
                N(ENOTDIR),
                N(EISDIR),
                N(EINVAL),
                N(ENFILE),
                N(EMFILE),
                N(ENOTTY),
                N(ETXTBSY),
                N(EFBIG),
                N(ENOSPC),
                N(ESPIPE),
                N(EROFS),
                N(EMLINK),
                N(EPIPE),
                N(ERANGE),
                N(EDEADLK),
                N(ENAMETOOLONG),
                N(ENOSYS),
                N(ENOTEMPTY),
                N(ELOOP),
                N(ENODATA),
                N(ETIME),
                N(EPROTO),
                N(EOVERFLOW),
                N(EUSERS),
                N(ENOTSOCK),
                N(EPROTONOSUPPORT),
                N(EOPNOTSUPP),
                N(EAFNOSUPPORT),
                N(EADDRINUSE),
                N(EADDRNOTAVAIL),
                N(ENETUNREACH),
                N(ECONNRESET),
                N(ENOBUFS),
                N(ETIMEDOUT),
                N(ECONNREFUSED),
                N(EALREADY),
                N(EINPROGRESS),
                N(ESTALE),
                N(EDQUOT),
                N(ECANCELED),
                N(EOWNERDEAD),
        };
#undef N
        return errnum > 0 && (size_t) errnum < ELEMENTSOF(names) ? names[errnum] : NULL;
#endif
}
