#include "base/mem.h"

#include <stdatomic.h>
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

static atomic_long fault_calls, fault_at;   // calls since arm; the call that fails (0: none)
static atomic_bool fault_fired;

void mem_fault_arm(long n) {
    atomic_store(&fault_calls, 0);
    atomic_store(&fault_fired, false);
    atomic_store(&fault_at, n);
}

long mem_fault_count(void) { return atomic_load(&fault_calls); }
bool mem_fault_fired(void) { return atomic_load(&fault_fired); }

// Counts one fallible allocation; true when it is the one armed to fail.
static bool fault_now(void) {
    long k = atomic_fetch_add(&fault_calls, 1) + 1;
    if (k != atomic_load(&fault_at)) return false;
    atomic_store(&fault_fired, true);
    return true;
}

void *try_malloc(size_t n) { return fault_now() ? NULL : malloc(n ? n : 1); }

void *try_calloc(size_t n, size_t size) {
    return fault_now() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *try_realloc(void *p, size_t n) { return fault_now() ? NULL : realloc(p, n ? n : 1); }

void *try_aligned_alloc(size_t align, size_t n) {
    if (fault_now()) return NULL;
    size_t rounded = (n ? n : 1) + align - 1;   // aligned_alloc wants a multiple of align
    return aligned_alloc(align, rounded - rounded % align);
}

static void *large_alloc(size_t n) {
    const size_t huge = (size_t)2 << 20;
    if (n < 2 * huge) return malloc(n ? n : 1);
    void *p = NULL;
    size_t rounded = (n + huge - 1) / huge * huge;
    if (posix_memalign(&p, huge, rounded) != 0) return NULL;
    madvise(p, rounded, MADV_HUGEPAGE);   // advice only: fine if the kernel declines
    return p;
}

void *malloc_large(size_t n) { return fault_now() ? NULL : large_alloc(n); }

void *xmalloc_large(size_t n) {
    void *p = large_alloc(n);
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

bool mem_fits(uint64_t bytes, uint64_t *avail) {
    *avail = mem_available_bytes();
    return *avail == 0 || bytes <= *avail;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void mem_drop_pages(const void *p, size_t n) {
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + pg - 1) / pg * pg, b = ((uintptr_t)p + n) / pg * pg;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}
