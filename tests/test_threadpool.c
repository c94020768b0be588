// engine/cpu/threadpool: every slot of every job runs exactly once, whoever claims it, with the
// pool's threads sharing one core (workers mostly off-CPU: the caller claims their slots) or
// spread over all; the slots' writes are seen by the caller when threadpool_run returns.
#include "engine/cpu/threadpool.h"
#include "rng.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define JOBS 2000
#define MAX_T 8

typedef struct job {
    atomic_int runs[MAX_T];   // per slot
    int value[MAX_T];         // plain writes by the slot, read by the caller after the run
    int spin[MAX_T];          // work per slot (iterations)
    int round;
    pthread_t caller;
    atomic_int by_caller;     // slots the calling thread ran
} job;

static void slot_fn(void *ctx, int ith, int nth) {
    job *j = ctx;
    (void)nth;
    volatile int sink = 0;
    for (int i = 0; i < j->spin[ith]; i++) sink += i;
    j->value[ith] = j->round * 100 + ith;
    atomic_fetch_add(&j->runs[ith], 1);
    if (pthread_equal(pthread_self(), j->caller)) atomic_fetch_add(&j->by_caller, 1);
}

// Runs JOBS jobs; *by_caller: slots the calling thread ran in all.
static int run_jobs(int n_threads, int *by_caller) {
    threadpool *p = threadpool_new(n_threads);
    int nth = threadpool_size(p), bad = 0;
    job j;
    j.caller = pthread_self();
    atomic_init(&j.by_caller, 0);
    for (int r = 0; r < JOBS; r++) {
        j.round = r;
        for (int s = 0; s < nth; s++) {
            atomic_init(&j.runs[s], 0);
            j.value[s] = -1;
            j.spin[s] = rng_int(4) == 0 ? rng_int(20000) : rng_int(50);
        }
        threadpool_run(p, slot_fn, &j);
        for (int s = 0; s < nth; s++) bad += atomic_load(&j.runs[s]) != 1 || j.value[s] != r * 100 + s;
    }
    threadpool_free(p);
    *by_caller = atomic_load(&j.by_caller);
    return bad;
}

int main(void) {
    test_seed();
    int by_caller;
    for (int t = 1; t <= 4; t++) {
        int bad = run_jobs(t, &by_caller);
        CHECK(bad == 0, "%d threads: %d slots ran other than once or their writes were not seen", t, bad);
    }
    cpu_set_t one, all;
    if (sched_getaffinity(0, sizeof all, &all) == 0) {
        CPU_ZERO(&one);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &all)) { CPU_SET(c, &one); break; }
        if (sched_setaffinity(0, sizeof one, &one) == 0) {   // the pool's threads inherit it
            int bad = run_jobs(4, &by_caller);
            CHECK(bad == 0, "4 threads on one core: %d slots wrong", bad);
            // the workers are mostly off the core: the caller runs their slots instead of
            // waiting for them (a pool of fixed shares would give it exactly one per job)
            CHECK(by_caller > JOBS, "the caller ran %d slots in %d jobs", by_caller, JOBS);
            sched_setaffinity(0, sizeof all, &all);
        } else {
            SKIP("sched_setaffinity refused: the one-core case is not run");
        }
    }
    return test_finish();
}
