// Per-thread scratch for the kernels (cpu_kernels_scratch, engine/cpu/kernels.h). A file of its
// own so that the kernel files that ask for it (kernels_avx512.c, kernels_r16_avx512.c) call into
// a leaf and never back into kernels.c, which hands their tables out; baseline flags, as any
// file not named *_avx2.c / *_avx512.c.
#include "engine/cpu/kernels.h"
#include "base/base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Scratch: one block per thread, remembered in a thread-local for speed and in a pthread key
// so that it is freed when the thread exits.
static _Thread_local struct {
    void *base;    // as allocated
    uint8_t *mem;  // base rounded up to 64 bytes
    size_t size;   // usable bytes at mem
} scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_key_make(void) { pthread_key_create(&scratch_key, free); }

// The largest request that could not be met since cpu_kernels_scratch_failed last read it: one
// for the process (the kernels know no backend); a pass that fails reads it at its end.
static atomic_size_t failed_bytes;

size_t cpu_kernels_scratch_failed(void) { return atomic_exchange(&failed_bytes, 0); }

void cpu_kernels_scratch_release(void) {
    pthread_once(&scratch_once, scratch_key_make);
    free(scratch.base);
    memset(&scratch, 0, sizeof scratch);
    pthread_setspecific(scratch_key, NULL);
}

void *cpu_kernels_scratch(size_t bytes) {
    if (bytes <= scratch.size && scratch.mem) return scratch.mem;
    pthread_once(&scratch_once, scratch_key_make);
    size_t size = bytes < 64 * 1024 ? 64 * 1024 : bytes + bytes / 4; // grow with headroom
    size = (size + 63) & ~(size_t)63;
    free(scratch.base);
    scratch.base = try_malloc(size + 64);
    pthread_setspecific(scratch_key, scratch.base);
    if (!scratch.base) {
        scratch.mem = NULL;
        scratch.size = 0;
        size_t prev = atomic_load(&failed_bytes);
        while (prev < bytes && !atomic_compare_exchange_weak(&failed_bytes, &prev, bytes)) {}
        return NULL;
    }
    scratch.mem = (uint8_t *)scratch.base + (64 - (uintptr_t)scratch.base % 64) % 64;
    scratch.size = size;
    return scratch.mem;
}
