// engine/cpu/threadpool: every slot of every job runs exactly once, whoever claims it, with the
// pool's threads sharing one core (workers mostly off-CPU: the caller claims their slots) or
// spread over all; the slots' writes are seen by the caller when threadpool_run returns. And the
// default thread count: physical cores read from a CPU topology tree (base/threads.c).
#include "engine/cpu/threadpool.h"
#include "base/threads.h"
#include "rng.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

// dir/cpuN/topology/{physical_package_id,core_id} = pkg, core (core < 0: no topology).
static void fake_cpu(const char *dir, int n, int pkg, int core) {
    char p[512];
    snprintf(p, sizeof p, "%s/cpu%d", dir, n);
    mkdir(p, 0700);
    if (core < 0) return;
    snprintf(p, sizeof p, "%s/cpu%d/topology", dir, n);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/cpu%d/topology/physical_package_id", dir, n);
    FILE *f = fopen(p, "w");
    if (f) { fprintf(f, "%d\n", pkg); fclose(f); }
    snprintf(p, sizeof p, "%s/cpu%d/topology/core_id", dir, n);
    f = fopen(p, "w");
    if (f) { fprintf(f, "%d\n", core); fclose(f); }
}

static int even_only(int cpu, void *ud) { (void)ud; return cpu % 2 == 0; }
static int below_4(int cpu, void *ud) { (void)ud; return cpu < 4; }

// Two packages of two cores with two hardware threads each (cpu0..7), cpu8 without topology
// (offline), and the directory's other entries ("cpufreq", "online"): 4 physical cores; still 4
// with one thread of each core allowed (the even CPUs), 2 with package 0's CPUs only.
static void check_physical_cores(void) {
    char dir[] = "/tmp/cabin-cpus-XXXXXX";
    if (!mkdtemp(dir)) { SKIP("no temporary directory: physical cores not checked"); return; }
    static const int pkg[8] = { 0, 0, 0, 0, 1, 1, 1, 1 }, core[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
    for (int i = 0; i < 8; i++) fake_cpu(dir, i, pkg[i], core[i]);
    fake_cpu(dir, 8, 0, -1);
    char p[512];
    snprintf(p, sizeof p, "%s/cpufreq", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/online", dir);
    FILE *f = fopen(p, "w");
    if (f) { fputs("0-7\n", f); fclose(f); }
    int all = physical_cores_in(dir, NULL, NULL), even = physical_cores_in(dir, even_only, NULL);
    CHECK(all == 4, "physical cores of 2 packages x 2 cores x 2 threads: %d, not 4", all);
    // cpu0 (0,0) cpu2 (0,1) cpu4 (1,0) cpu6 (1,1): every core keeps one thread
    CHECK(even == 4, "physical cores of the even CPUs: %d, not 4", even);
    int pkg0 = physical_cores_in(dir, below_4, NULL);
    CHECK(pkg0 == 2, "physical cores of package 0's CPUs: %d, not 2", pkg0);
    CHECK(physical_cores_in("/nonexistent-cabin-dir", NULL, NULL) == 0, "a missing directory gives 0");
    int d = default_threads();
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(d >= 1 && (online <= 0 || d <= online), "default threads %d, online CPUs %ld", d, online);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
}

int main(void) {
    test_seed();
    check_physical_cores();
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
