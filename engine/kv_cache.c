#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

static size_t elem_bytes(enum kv_format f) { return f == KV_F32 ? 4 : 2; }

const char *kv_format_name(enum kv_format f) { return f == KV_F32 ? "f32" : "f16"; }

int kv_cache_init(kv_cache *kv, enum kv_format format, int n_layer, int n_ctx, int kv_dim,
                  errbuf *err) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || kv_dim <= 0)
        return err_set(err, "kv cache: invalid shape (%d layers, %d positions, %d wide)", n_layer,
                       n_ctx, kv_dim);
    uint64_t bytes;
    if (!mul_u64((uint64_t)n_ctx, (uint64_t)kv_dim * elem_bytes(format), &bytes) || bytes > SIZE_MAX / 4)
        return err_set(err, "kv cache: %d positions x %d is too large", n_ctx, kv_dim);
    kv->format = format;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->row_bytes = (size_t)kv_dim * elem_bytes(format);
    kv->k = xcalloc((size_t)n_layer, sizeof(void *));
    kv->v = xcalloc((size_t)n_layer, sizeof(void *));
    for (int l = 0; l < n_layer; l++) {
        kv->k[l] = xcalloc(1, (size_t)bytes);
        kv->v[l] = xcalloc(1, (size_t)bytes);
    }
    return 0;
}

void kv_cache_free(kv_cache *kv) {
    if (!kv->k) return;
    for (int l = 0; l < kv->n_layer; l++) { free(kv->k[l]); free(kv->v[l]); }
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

void kv_cache_clear(kv_cache *kv) { kv->n_used = 0; }

int kv_cache_copy(kv_cache *dst, const kv_cache *src, errbuf *err) {
    if (dst->format != src->format || dst->n_layer != src->n_layer || dst->kv_dim != src->kv_dim ||
        dst->n_ctx < src->n_used)
        return err_set(err, "kv cache: copy between caches of different shapes");
    for (int l = 0; l < src->n_layer; l++) {
        memcpy(dst->k[l], src->k[l], (size_t)src->n_used * src->row_bytes);
        memcpy(dst->v[l], src->v[l], (size_t)src->n_used * src->row_bytes);
    }
    dst->n_used = src->n_used;
    return 0;
}

uint64_t kv_cache_bytes(const kv_cache *kv) {
    return 2ull * (uint64_t)kv->n_layer * (uint64_t)kv->n_ctx * kv->row_bytes;
}

uint64_t kv_cache_used_bytes(const kv_cache *kv) {
    return 2ull * (uint64_t)kv->n_layer * (uint64_t)kv->n_used * kv->row_bytes;
}
