// The packed weights' arena (engine/cpu/pack_arena.h): small weights share chunks, large ones
// get blocks of their own, every piece is 64-byte aligned and apart from the others, a chunk
// goes when its last weight is released (in any order), and a weight written after its
// neighbours were released keeps its bytes.
#include "test.h"
#include "engine/cpu/pack_arena.h"
#include "rng.h"

#include <stdbool.h>

#include <stdint.h>

enum { N = 200 };

int main(void) {
    test_seed();
    pack_arena a = { 0 };
    void *p[N];
    arena_chunk *c[N];
    size_t n[N];
    size_t small_total = 0;
    int big = 0;
    for (int i = 0; i < N; i++) {
        // mostly under 2 MiB (attention matrices), some of several MiB, now and then one of its own
        n[i] = i % 37 == 5 ? (size_t)ARENA_OWN_BYTES + (size_t)rng_int(1000) * 4096
               : i % 5 == 0 ? (size_t)(3 << 20) + (size_t)rng_int(1 << 20) : 1 + (size_t)rng_int(2 << 20);
        p[i] = pack_arena_alloc(&a, n[i], &c[i]);
        CHECK(p[i] != NULL && (uintptr_t)p[i] % 64 == 0, "weight %d (%zu bytes): aligned", i, n[i]);
        memset(p[i], i & 0xff, n[i] < 4096 ? n[i] : 4096);   // the first bytes, and the last
        memset((uint8_t *)p[i] + n[i] - (n[i] < 64 ? n[i] : 64), i & 0xff, n[i] < 64 ? n[i] : 64);
        if (n[i] >= ARENA_OWN_BYTES) big++;
        else small_total += n[i];
    }
    bool apart = true;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            const uintptr_t a0 = (uintptr_t)p[i], a1 = a0 + n[i], b0 = (uintptr_t)p[j], b1 = b0 + n[j];
            apart &= a1 <= b0 || b1 <= a0;
        }
    CHECK(apart, "no two weights overlap");
    const int chunks = pack_arena_chunks(&a);
    const int most = big + (int)(small_total / ((size_t)ARENA_CHUNK_BYTES - (4u << 20))) + 2;
    CHECK(chunks <= most, "%d blocks for %d own weights and %zu bytes of small ones (at most %d)", chunks, big, small_total, most);
    // release every other weight: the rest keep their bytes; then all, last first
    for (int i = 0; i < N; i += 2) pack_arena_free(&a, c[i]);
    bool kept = true;
    for (int i = 1; i < N; i += 2) {
        const uint8_t *q = p[i];
        kept &= q[0] == (i & 0xff) && q[n[i] - 1] == (i & 0xff);
    }
    CHECK(kept, "weights keep their bytes while others are released");
    void *again = pack_arena_alloc(&a, 1000, &c[0]);   // carving goes on after releases
    CHECK(again != NULL, "a weight after releases");
    pack_arena_free(&a, c[0]);
    for (int i = N - 1; i > 0; i -= 2) pack_arena_free(&a, c[i]);
    CHECK(pack_arena_chunks(&a) == 0, "every block freed with its last weight (%d left)", pack_arena_chunks(&a));
    // destroy takes what was never released
    for (int i = 0; i < 10; i++) p[i] = pack_arena_alloc(&a, (size_t)(i + 1) << 20, &c[i]);
    pack_arena_destroy(&a);
    CHECK(pack_arena_chunks(&a) == 0, "destroy frees everything");
    return test_finish();
}
