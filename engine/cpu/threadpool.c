#include "threadpool.h"
#include "base/base.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A job is n slots (slot ith of nth: the caller's share function); any thread may run any slot,
// each slot runs once. A thread claims slots until none is left, so when a worker is not
// running (another process holds its core) the caller does its share instead of waiting for it
// to be scheduled: only a slot already claimed is waited for.
struct threadpool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t state;   // (job generation << 32) | the next slot to claim
    atomic_int done;          // slots of the current job finished
    atomic_bool stop;
    pool_fn fn;               // the current job: written before its generation is published
    void *ctx;
};

typedef struct worker_arg { threadpool *p; int ith; } worker_arg;

static uint32_t gen_of(uint64_t state) { return (uint32_t)(state >> 32); }

// Claims and runs slots of job gen until none is left or the job is over.
static void run_slots(threadpool *p, uint32_t gen) {
    uint64_t st = atomic_load_explicit(&p->state, memory_order_acquire);
    while (gen_of(st) == gen && (uint32_t)st < (uint32_t)p->n) {
        // the claim succeeds only while the job is still gen: its fn and ctx stay until every
        // claimed slot is done
        if (!atomic_compare_exchange_weak_explicit(&p->state, &st, st + 1, memory_order_acq_rel, memory_order_acquire))
            continue;
        p->fn(p->ctx, (int)(uint32_t)st, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        st = atomic_load_explicit(&p->state, memory_order_acquire);
    }
}

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    threadpool *p = wa.p;
    uint32_t seen = 0;
    for (;;) {
        uint32_t gen;
        int spins = 0;
        while ((gen = gen_of(atomic_load_explicit(&p->state, memory_order_acquire))) == seen && !atomic_load(&p->stop)) {
            if (++spins < 20000) {
                __builtin_ia32_pause();
                if (spins % 1024 == 0) sched_yield();   // let a descheduled peer run
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while (gen_of(atomic_load(&p->state)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = gen;
        run_slots(p, gen);
    }
}

threadpool *threadpool_new(int n_threads) {
    threadpool *p = xcalloc(1, sizeof *p);
    p->n = n_threads < 1 ? 1 : n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = xcalloc((size_t)p->n, sizeof(pthread_t));
    for (int i = 1; i < p->n; i++) {
        worker_arg *wa = xmalloc(sizeof *wa);
        wa->p = p;
        wa->ith = i;
        int e = pthread_create(&p->threads[i], NULL, worker_main, wa);
        if (e != 0) {
            // The pool runs on the threads it has: a job splits into p->n slots, so fewer is
            // slower, never wrong. No worker reads p->n before the first job.
            free(wa);
            fprintf(stderr, "cabin: thread %d of %d could not start (%s); running on %d\n", i + 1, p->n,
                    strerror(e), i);
            p->n = i;
            break;
        }
    }
    return p;
}

void threadpool_free(threadpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

int threadpool_size(const threadpool *p) { return p->n; }

void threadpool_run(threadpool *p, pool_fn fn, void *ctx) {
    if (p->n == 1) { fn(ctx, 0, 1); return; }
    // the previous job is over (every slot done): nothing reads fn, ctx or done now
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    uint32_t gen = gen_of(atomic_load_explicit(&p->state, memory_order_relaxed)) + 1;
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->state, (uint64_t)gen << 32, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    run_slots(p, gen);
    // Wait for the slots workers claimed: spin briefly (they finish within microseconds), then
    // yield the core — a worker may need it when another process holds the other.
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < p->n) {
        if (++spins < 2000) __builtin_ia32_pause();
        else sched_yield();
    }
}
