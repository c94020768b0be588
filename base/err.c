#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(errbuf *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int err_prefix(errbuf *err, const char *fmt, ...) {
    if (err) {
        char joined[2 * sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(joined, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n < 0) n = 0;
        if ((size_t)n > sizeof err->msg - 1) n = sizeof err->msg - 1;
        memcpy(joined + n, ": ", 2);
        memcpy(joined + n + 2, err->msg, sizeof err->msg);  // err->msg is NUL-terminated
        joined[sizeof joined - 1] = 0;
        memcpy(err->msg, joined, sizeof err->msg - 1);
        err->msg[sizeof err->msg - 1] = 0;
    }
    return -1;
}
