// The packed weights' memory (engine/cpu/pack_arena.h).
#include "engine/cpu/pack_arena.h"

#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>

struct arena_chunk {
    uint8_t *base;
    size_t size, used;
    int live;       // weights carved from it and not yet released
    int own;        // one weight's block of its own: never carved from again
    arena_chunk *next;
};

static void unlink_free(pack_arena *a, arena_chunk *c) {
    for (arena_chunk **p = &a->chunks; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    free(c->base);
    free(c);
}

void *pack_arena_alloc(pack_arena *a, size_t bytes, arena_chunk **chunk) {
    const size_t need = (bytes + 63) / 64 * 64;
    arena_chunk *c = a->chunks;
    if (need >= ARENA_OWN_BYTES || !c || c->own || c->size - c->used < need) {
        const int own = need >= ARENA_OWN_BYTES;
        arena_chunk *n = try_calloc(1, sizeof *n);
        if (!n) return NULL;
        n->size = own ? need : ARENA_CHUNK_BYTES;
        n->base = malloc_large(n->size);
        if (!n->base) {
            free(n);
            return NULL;
        }
        n->own = own;
        if (own && c && !c->own) {   // a block of its own goes behind the chunk being carved
            n->next = c->next;
            c->next = n;
        } else {
            n->next = a->chunks;
            a->chunks = n;
        }
        c = n;
    }
    void *p = c->base + c->used;
    c->used += need;
    c->live++;
    *chunk = c;
    return p;
}

void pack_arena_free(pack_arena *a, arena_chunk *c) {
    if (c && --c->live == 0) unlink_free(a, c);
}

void pack_arena_destroy(pack_arena *a) {
    while (a->chunks) unlink_free(a, a->chunks);
}

int pack_arena_chunks(const pack_arena *a) {
    int n = 0;
    for (const arena_chunk *c = a->chunks; c; c = c->next) n++;
    return n;
}
