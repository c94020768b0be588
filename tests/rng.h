// Random numbers for the tests (splitmix64): reproducible from the seed a test prints and
// assigns to rng_state.
#ifndef CABIN_TEST_RNG_H
#define CABIN_TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state;

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
