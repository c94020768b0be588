// A fixed pool of worker threads for data-parallel loops. A job is nth slots (nth = the pool's
// size), each run once by whichever thread claims it first — the calling thread too — so a
// worker that another process keeps off its core costs nothing unless it already claimed a
// slot. Workers spin briefly between jobs (decode issues hundreds of small jobs per token) and
// then sleep on a condition variable.
#ifndef CABIN_THREADPOOL_H
#define CABIN_THREADPOOL_H

#include <stdint.h>

typedef struct threadpool threadpool;

// fn(ctx, ith, nth): slot ith of nth does its share (per-slot scratch is indexed by ith; no
// two threads run the same slot).
typedef void (*pool_fn)(void *ctx, int ith, int nth);

threadpool *threadpool_new(int n_threads);   // n_threads >= 1 (1: no extra threads)
void threadpool_free(threadpool *p);
int threadpool_size(const threadpool *p);
// Runs fn on every worker and returns when all are done.
void threadpool_run(threadpool *p, pool_fn fn, void *ctx);

// Splits [0, n) into nth nearly equal parts aligned to `align`; part ith is [*lo, *hi).
static inline void split_range(int64_t n, int ith, int nth, int64_t align, int64_t *lo, int64_t *hi) {
    int64_t units = (n + align - 1) / align;
    int64_t per = units / nth, rem = units % nth;
    int64_t u0 = ith * per + (ith < rem ? ith : rem);
    int64_t u1 = u0 + per + (ith < rem ? 1 : 0);
    *lo = u0 * align < n ? u0 * align : n;
    *hi = u1 * align < n ? u1 * align : n;
}

#endif
