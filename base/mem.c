#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
