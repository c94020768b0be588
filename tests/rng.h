// Random numbers for the tests (splitmix64) and the one seed rule every C test that draws random
// inputs follows: a fixed default seed, so a run repeats the last; CABIN_TEST_SEED=N takes seed
// N, CABIN_TEST_SEED=random a fresh one. test_seed() prints the seed used on one line.
#ifndef CABIN_TEST_RNG_H
#define CABIN_TEST_RNG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEST_SEED_DEFAULT 12345ull

static uint64_t rng_state;

// The seed of this run (see above); also starts rng_state from it.
static inline uint64_t test_seed(void) {
    const char *env = getenv("CABIN_TEST_SEED");
    uint64_t seed = TEST_SEED_DEFAULT;
    if (env && strcmp(env, "random") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 40) % 10000000000ull;
    } else if (env && *env) {
        char *end;
        seed = strtoull(env, &end, 0);
        if (*end) {
            fprintf(stderr, "CABIN_TEST_SEED=%s: not a number or 'random'; using the default seed\n", env);
            seed = TEST_SEED_DEFAULT;
        }
    }
    printf("seed %llu (CABIN_TEST_SEED=%llu repeats this run; =random draws a fresh seed)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    return seed;
}

static inline uint64_t rng_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int rng_int(int n) { return (int)(rng_u64() % (uint64_t)n); }       // [0, n)
static inline float rng_uniform(void) {                                            // [-1, 1)
    return (float)((double)(rng_u64() >> 11) * 0x1p-53 * 2.0 - 1.0);
}

#endif
