#include "base/str.h"
#include "base/mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void strbuf_reserve(strbuf *b, size_t extra) {
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void strbuf_append(strbuf *b, const char *s, size_t n) {
    strbuf_reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void strbuf_puts(strbuf *b, const char *s) { strbuf_append(b, s, strlen(s)); }

void strbuf_vprintf(strbuf *b, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n > 0) {
        strbuf_reserve(b, (size_t)n);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void strbuf_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *strbuf_str(const strbuf *b) { return b->s ? b->s : ""; }

void strbuf_clear(strbuf *b) {
    b->len = 0;
    if (b->s) b->s[0] = 0;
}

void strbuf_free(strbuf *b) {
    free(b->s);
    *b = (strbuf){0};
}

char *read_file_all(const char *path, size_t *len, errbuf *err) {
    return read_file_max(path, SIZE_MAX - 1, NULL, len, err);
}

char *read_file_max(const char *path, size_t max_bytes, const char *file_kind, size_t *len, errbuf *err) {
    FILE *f = fopen(path, "rb");
    if (!f) { err_set(err, "%s: %s", path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
        fclose(f);
        err_set(err, "%s: %llu bytes, more than the %zu a %s may have", path, (unsigned long long)st.st_size,
                max_bytes, file_kind);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) { cap *= 2; buf = xrealloc(buf, cap); }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n > max_bytes) {   // not a regular file, or one that grew while read
            fclose(f);
            free(buf);
            err_set(err, "%s: more than the %zu bytes a %s may have", path, max_bytes, file_kind);
            return NULL;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); err_set(err, "%s: read error", path); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

void str_cut_printf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}
