// A caller-visible error message. Functions that can fail return int status (0 ok, -1 error)
// and fill *err with one line saying where and what. err may be NULL.
#ifndef CABIN_BASE_ERR_H
#define CABIN_BASE_ERR_H

#define ERR_LINE 512   // bytes of one error line, its NUL included

typedef struct errbuf {
    char msg[ERR_LINE];
} errbuf;

int err_set(errbuf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Prepends "prefix: " to an existing message (e.g. a file name).
int err_prefix(errbuf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
