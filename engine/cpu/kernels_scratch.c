// Per-thread scratch for the kernels (cpu_kernels_scratch, engine/cpu/kernels.h). A file of its
// own so that the kernel files that ask for it (kernels_avx512.c, kernels_r16_avx512.c) call into
// a leaf and never back into kernels.c, which hands their tables out; baseline flags, as any
// file not named *_avx2.c / *_avx512.c.
#include "engine/cpu/kernels.h"
#include "base/base.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

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

void *cpu_kernels_scratch(size_t bytes) {
    if (bytes <= scratch.size && scratch.mem) return scratch.mem;
    pthread_once(&scratch_once, scratch_key_make);
    size_t size = bytes < 64 * 1024 ? 64 * 1024 : bytes + bytes / 4; // grow with headroom
    size = (size + 63) & ~(size_t)63;
    free(scratch.base);
    scratch.base = xmalloc(size + 64);
    scratch.mem = (uint8_t *)scratch.base + (64 - (uintptr_t)scratch.base % 64) % 64;
    scratch.size = size;
    pthread_setspecific(scratch_key, scratch.base);
    return scratch.mem;
}
