// Lock-free single-producer single-consumer ring of int16 samples (C11 atomics). One thread
// writes (ring_write), one thread reads (ring_read); the audio callback is always one of the two,
// so it never takes a lock. Capacity is a power of two; head/tail count samples forever (wrap
// through the mask), so full = head - tail == cap and nothing is ever ambiguous.
#ifndef CABIN_AUDIO_RING_H
#define CABIN_AUDIO_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct sample_ring {
    int16_t *buf;              // cap samples
    size_t cap, mask;          // cap = 2^k
    _Atomic size_t head;       // samples written (producer)
    _Atomic size_t tail;       // samples read (consumer)
} sample_ring;

// Capacity rounded up to a power of two (at least 1024 samples). 0 ok, -1 out of memory.
static inline int ring_init(sample_ring *r, size_t min_cap) {
    size_t cap = 1024;
    while (cap < min_cap) cap <<= 1;
    r->buf = calloc(cap, sizeof(int16_t));
    if (!r->buf) return -1;
    r->cap = cap;
    r->mask = cap - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    return 0;
}

static inline void ring_free(sample_ring *r) { free(r->buf); r->buf = NULL; }

static inline size_t ring_used(sample_ring *r) {
    return atomic_load_explicit(&r->head, memory_order_acquire) - atomic_load_explicit(&r->tail, memory_order_acquire);
}

// Producer: writes up to n samples; returns how many fit.
static inline size_t ring_write(sample_ring *r, const int16_t *x, size_t n) {
    size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    size_t space = r->cap - (head - tail);
    if (n > space) n = space;
    for (size_t i = 0; i < n; i++) r->buf[(head + i) & r->mask] = x[i];
    atomic_store_explicit(&r->head, head + n, memory_order_release);
    return n;
}

// Consumer: reads up to n samples (x may be NULL: discard); returns how many were read.
static inline size_t ring_read(sample_ring *r, int16_t *x, size_t n) {
    size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t have = head - tail;
    if (n > have) n = have;
    if (x)
        for (size_t i = 0; i < n; i++) x[i] = r->buf[(tail + i) & r->mask];
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
    return n;
}

#endif
