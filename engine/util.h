// Small shared helpers: error messages, overflow-safe arithmetic, half/bfloat conversion, time.
#ifndef CABIN_UTIL_H
#define CABIN_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A caller-visible error message. Functions that can fail return int status (0 ok, -1 error)
// and fill *err with one line saying where and what. err may be NULL.
typedef struct errbuf {
    char msg[512];
} errbuf;

int err_set(errbuf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Prepends "prefix: " to an existing message (e.g. a file name).
int err_prefix(errbuf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Overflow-safe arithmetic: return false on overflow, leaving *out unspecified.
static inline bool add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

// Allocation that never returns NULL for n > 0 (out of memory is the one fatal condition).
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
// For large buffers (converted weights): 2 MiB-aligned and marked for transparent huge pages,
// so first touch costs one fault per 2 MiB instead of per 4 KiB. Free with free().
void *xmalloc_large(size_t n);
void *malloc_large(size_t n);       // the same, NULL when there is no memory
// Memory the system can give without swapping (MemAvailable), bytes; 0 when unknown.
uint64_t mem_available_bytes(void);
// Short-lived parallel work: fn(args + i * stride) for i in [0, n), on n - 1 new threads and
// the caller (a thread that cannot be started runs its part on the caller). n: 1..64.
#define MAX_WORK_THREADS 64
void run_on_threads(void *(*fn)(void *), void *args, size_t stride, int n);
// n_threads, or the online cores when it is <= 0; at most MAX_WORK_THREADS.
int work_threads(int n_threads);
char *xstrndup(const char *s, size_t n);

// IEEE half <-> float, round-to-nearest-even, as the GGUF F16 type stores it.
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
// bfloat16 <-> float; f32_to_bf16 rounds to nearest even and keeps NaN a NaN.
static inline float bf16_to_f32(uint16_t b) {
    union { uint32_t u; float f; } v = { .u = (uint32_t)b << 16 };
    return v.f;
}
uint16_t f32_to_bf16(float f);

// Monotonic clock in seconds.
double now_sec(void);

// Reads a whole file into memory (NUL-terminated for convenience). Returns NULL and sets err.
char *read_file_all(const char *path, size_t *len, errbuf *err);

// Aligns x up to a multiple of a (a > 0). Returns false on overflow.
static inline bool align_up_u64(uint64_t x, uint64_t a, uint64_t *out) {
    uint64_t r = x % a;
    if (r == 0) { *out = x; return true; }
    return add_u64(x, a - r, out);
}

#endif
