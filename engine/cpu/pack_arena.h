// Memory for the CPU backend's packed weights (engine/cpu/pack_r16.c): 2 MiB pages without a
// partly used page per weight. A weight of ARENA_OWN_BYTES or more gets a block of its own; the
// smaller ones are carved one after another (64-byte aligned) from shared chunks of
// ARENA_CHUNK_BYTES, whose pages become resident only as they are written. A chunk is freed
// when the last weight carved from it is released. Rounding each weight up to whole 2 MiB pages
// cost the 1B Q2_K file 37 MiB of resident set (8% of it: every attention matrix is under 2 MiB).
// Not thread-safe: the backend allocates and releases between passes.
#ifndef CABIN_PACK_ARENA_H
#define CABIN_PACK_ARENA_H

#include <stddef.h>

enum {
    ARENA_OWN_BYTES = 16 << 20,
    ARENA_CHUNK_BYTES = 64 << 20,
};

typedef struct arena_chunk arena_chunk;
typedef struct pack_arena {
    arena_chunk *chunks;   // a list; the first is the one being carved
} pack_arena;

// bytes from the arena (64-byte aligned), or NULL when there is no memory; *chunk is what
// pack_arena_free takes back with it.
void *pack_arena_alloc(pack_arena *a, size_t bytes, arena_chunk **chunk);
void pack_arena_free(pack_arena *a, arena_chunk *chunk);
void pack_arena_destroy(pack_arena *a);   // everything, released or not
int pack_arena_chunks(const pack_arena *a);   // blocks held (tests)

#endif
