// Allocation that never fails quietly, overflow-safe size arithmetic, large aligned buffers.
#ifndef CABIN_BASE_MEM_H
#define CABIN_BASE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Overflow-safe arithmetic: return false on overflow, leaving *out unspecified.
static inline bool add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

// Aligns x up to a multiple of a (a > 0). Returns false on overflow.
static inline bool align_up_u64(uint64_t x, uint64_t a, uint64_t *out) {
    uint64_t r = x % a;
    if (r == 0) { *out = x; return true; }
    return add_u64(x, a - r, out);
}

// Allocation that never returns NULL for n > 0: for small bookkeeping (a struct, a name, a list
// that grows by a few items), where running out is fatal ("cabin: out of memory", exit 3).
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
// For large buffers (converted weights): 2 MiB-aligned and marked for transparent huge pages,
// so first touch costs one fault per 2 MiB instead of per 4 KiB. Free with free().
void *xmalloc_large(size_t n);
void *malloc_large(size_t n);       // the same, NULL when there is no memory

// Allocation that may fail (NULL): for buffers sized by a file or a request (vocabulary and
// tensor tables, the KV cache, activations, token and logit buffers), whose caller returns an
// error naming what it could not allocate and leaves what existed usable.
void *try_malloc(size_t n);
void *try_calloc(size_t n, size_t size);
void *try_realloc(void *p, size_t n);   // NULL: p is untouched and still owned by the caller
void *try_aligned_alloc(size_t align, size_t n);   // align: a power of two; free with free()

// Fault injection for tests. Every call of the try_* functions and of malloc_large
// is counted; after mem_fault_arm(n) the nth such call from then on (1-based) fails as if memory
// had run out, once; n = 0 counts without failing. mem_fault_count: calls since the last arm.
void mem_fault_arm(long n);
long mem_fault_count(void);
bool mem_fault_fired(void);             // the armed failure has happened
// The whole pages of [p, p+n) of a file's mapping are no longer read: drop them from this process
// right away, so the resident set never holds a file's bytes and a copy of them at once (the page
// cache keeps the file while memory allows; a later read faults the pages back).
void mem_drop_pages(const void *p, size_t n);
// Memory the system can give without swapping (MemAvailable), bytes; 0 when unknown.
uint64_t mem_available_bytes(void);
// Whether a buffer of `bytes` fits in the memory available now (true when that is unknown), so a
// size claimed by a file or asked for is refused with a clear error before it is allocated;
// *avail gets the figure compared against (0: unknown).
bool mem_fits(uint64_t bytes, uint64_t *avail);

#endif
