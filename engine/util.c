#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

static void out_of_memory(size_t n) {
    fprintf(stderr, "cabin: out of memory (allocating %zu bytes)\n", n);
    exit(3);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory(n * size);
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

void *malloc_large(size_t n) {
    const size_t huge = (size_t)2 << 20;
    if (n < 2 * huge) return malloc(n ? n : 1);
    void *p = NULL;
    size_t rounded = (n + huge - 1) / huge * huge;
    if (posix_memalign(&p, huge, rounded) != 0) return NULL;
    madvise(p, rounded, MADV_HUGEPAGE);   // advice only: fine if the kernel declines
    return p;
}

void *xmalloc_large(size_t n) {
    void *p = malloc_large(n);
    if (!p) out_of_memory(n);
    return p;
}

uint64_t mem_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    if (f) fclose(f);
    if (kib) return (uint64_t)kib * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { // subnormal: normalise
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            man &= 0x3ff;
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    union { uint32_t u; float f; } v = { .u = bits };
    return v.f;
}

uint16_t f32_to_fp16(float f) {
    union { float f; uint32_t u; } v = { .f = f };
    uint32_t x = v.u;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xff;
    uint32_t man = x & 0x7fffff;
    if (exp == 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);    // inf / nan
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return sign | 0x7c00;                                // overflow -> inf
    if (e <= 0) {                                                     // subnormal or zero
        if (e < -10) return sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return sign | (uint16_t)half;
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;        // may carry into exponent: fine
    return sign | (uint16_t)half;
}

uint16_t f32_to_bf16(float f) {
    union { float f; uint32_t u; } v = { .f = f };
    if ((v.u & 0x7fffffff) > 0x7f800000) return (uint16_t)((v.u >> 16) | 64); // quiet NaN
    return (uint16_t)((v.u + (0x7fff + ((v.u >> 16) & 1))) >> 16);
}

double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *read_file_all(const char *path, size_t *len, errbuf *err) {
    FILE *f = fopen(path, "rb");
    if (!f) { err_set(err, "%s: %s", path, strerror(errno)); return NULL; }
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) { cap *= 2; buf = xrealloc(buf, cap); }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); err_set(err, "%s: read error", path); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

void run_on_threads(void *(*fn)(void *), void *args, size_t stride, int n) {
    pthread_t th[MAX_WORK_THREADS];
    bool started[MAX_WORK_THREADS] = { false };
    if (n > MAX_WORK_THREADS) n = MAX_WORK_THREADS;
    for (int i = 1; i < n; i++) {
        started[i] = pthread_create(&th[i], NULL, fn, (char *)args + (size_t)i * stride) == 0;
        if (!started[i]) fn((char *)args + (size_t)i * stride);   // no thread: do it here
    }
    fn(args);
    for (int i = 1; i < n; i++)
        if (started[i]) pthread_join(th[i], NULL);
}

int work_threads(int n_threads) {
    if (n_threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = nc > 0 ? (int)nc : 1;
    }
    return n_threads < MAX_WORK_THREADS ? n_threads : MAX_WORK_THREADS;
}
