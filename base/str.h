// Strings: a growable buffer and whole-file reads.
#ifndef CABIN_BASE_STR_H
#define CABIN_BASE_STR_H

#include "base/err.h"

#include <stdarg.h>
#include <stddef.h>

// A growable NUL-terminated string. Zero-initialised ({0}) is an empty one; free with strbuf_free.
typedef struct strbuf {
    char *s;        // NULL until the first append
    size_t len;     // bytes before the NUL
    size_t cap;
} strbuf;

void strbuf_append(strbuf *b, const char *s, size_t n);
void strbuf_puts(strbuf *b, const char *s);
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(strbuf *b, const char *fmt, va_list ap);
const char *strbuf_str(const strbuf *b);   // "" while empty
void strbuf_clear(strbuf *b);              // keeps the memory
void strbuf_free(strbuf *b);

// snprintf into a fixed buffer that cuts quietly: for names and paths bounded by their buffers on
// purpose (sysfs paths, source names), where a cut is acceptable and not worth a warning.
void str_cut_printf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// Reads a whole file into memory (NUL-terminated for convenience). Returns NULL and sets err.
char *read_file_all(const char *path, size_t *len, errbuf *err);
// The same for a file of at most max_bytes: a larger one is refused before it is read
// ("PATH: N bytes, more than the M a FILE_KIND may have").
char *read_file_max(const char *path, size_t max_bytes, const char *file_kind, size_t *len, errbuf *err);

#endif
