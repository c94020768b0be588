// The KV cache: for every layer, keys and values of each cached position.
// Storage (F16 for now): k[layer]: (n_ctx, n_kv_head*head_dim) rows are positions; v likewise.
// Keys are stored after RoPE. The compression issue extends this module with quantized formats
// and eviction; backends read it through kv_cache_* accessors or their own device copy (bk).
#ifndef CABIN_KV_CACHE_H
#define CABIN_KV_CACHE_H

#include "util.h"

#include <stdint.h>

enum kv_format { KV_F16 = 0, KV_F32 = 1 };

typedef struct kv_cache {
    enum kv_format format;
    int n_layer;
    int n_ctx;           // capacity in positions
    int kv_dim;          // n_kv_head * head_dim
    int n_used;          // positions filled (0..n_ctx)
    void **k, **v;       // per layer: n_ctx rows of kv_dim elements of `format`
    size_t row_bytes;    // bytes of one position's keys (or values) in one layer
    void *bk;            // backend-side storage, if any
} kv_cache;

int kv_cache_init(kv_cache *kv, enum kv_format format, int n_layer, int n_ctx, int kv_dim,
                  errbuf *err);
void kv_cache_free(kv_cache *kv);
void kv_cache_clear(kv_cache *kv);
// Copies the filled positions of src into dst (same shape and format); -1 otherwise.
int kv_cache_copy(kv_cache *dst, const kv_cache *src, errbuf *err);
// Bytes of all layers' K and V storage for the current capacity.
uint64_t kv_cache_bytes(const kv_cache *kv);
// Bytes used by the positions filled so far.
uint64_t kv_cache_used_bytes(const kv_cache *kv);
const char *kv_format_name(enum kv_format f);

#endif
