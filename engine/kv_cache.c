// KV cache storage: F32/F16 rows, and KIVI-style Q8/Q4 (keys per channel over groups of
// KV_GROUP slots, values per slot over groups of gv channels, newest slots kept F16).
// Quantization is asymmetric: x ~ min + code * scale, code in [0, qmax]; scale and min are f16,
// min rounded down and scale rounded up so every x of the group maps into [0, qmax] and the
// error stays within scale/2 (docs/KV.md).
#include "kv_cache.h"
#include "engine/half.h"
#include "engine/cpu/kernels.h"
#include "engine/rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int qmax_of(enum kv_format f) { return (1 << kv_format_code_bits(f)) - 1; }
static size_t elem_bytes(enum kv_format f) { return f == KV_F32 ? 4 : 2; }

const char *kv_format_name(enum kv_format f) {
    static const char *const names[KV_FORMAT_COUNT] = { "f16", "f32", "q8", "q4" };
    return (unsigned)f < KV_FORMAT_COUNT ? names[f] : "?";
}

int kv_format_parse(const char *s, enum kv_format *out, errbuf *err) {
    for (int f = 0; f < KV_FORMAT_COUNT; f++)
        if (s && strcmp(s, kv_format_name((enum kv_format)f)) == 0) { *out = (enum kv_format)f; return 0; }
    return err_set(err, "kv format '%s' is not one of f16, q8, q4, f32", s ? s : "");
}

// Channels per value group: the largest even divisor of kv_dim up to KV_VGROUP (512 -> 128,
// 192 -> 192, 64 -> 64); kv_dim is even, so 2 always qualifies.
static int value_group(int kv_dim) {
    for (int g = KV_VGROUP; g >= 2; g -= 2)
        if (kv_dim % g == 0) return g;
    return 2;
}

// ---- f16 helpers for scale/min rounding ----
static uint16_t f16_next_up(uint16_t h) {           // smallest f16 > value(h)
    if (h == 0x8000) return 0x0001;
    return (h & 0x8000) ? (uint16_t)(h - 1) : (uint16_t)(h + 1);
}
static uint16_t f16_next_down(uint16_t h) {         // largest f16 < value(h)
    if (h == 0x0000) return 0x8001;
    return (h & 0x8000) ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

// (scale, min) for values in [lo, hi]: min <= lo, min + qmax*scale >= hi.
static void group_params(float lo, float hi, int qmax, uint16_t *scale_h, uint16_t *min_h) {
    uint16_t m = f32_to_fp16(lo);
    if (fp16_to_f32(m) > lo) m = f16_next_down(m);
    float mf = fp16_to_f32(m);
    float sc = (hi - mf) / (float)qmax;
    uint16_t s = f32_to_fp16(sc);
    for (int i = 0; i < 4 && mf + fp16_to_f32(s) * (float)qmax < hi; i++) s = f16_next_up(s);
    *scale_h = s;
    *min_h = m;
}

static int quant_code(float x, float sc, float mn, int qmax) {
    if (!(sc > 0.0f)) return 0;
    float c = roundf((x - mn) / sc);
    if (!(c >= 0.0f)) c = 0.0f;
    if (c > (float)qmax) c = (float)qmax;
    return (int)c;
}

static void put_code(enum kv_format f, uint8_t *base, size_t i, int code) {
    if (f == KV_Q8) { base[i] = (uint8_t)code; return; }
    uint8_t *b = base + i / 2;
    *b = (i & 1) ? (uint8_t)((*b & 0x0f) | (code << 4)) : (uint8_t)((*b & 0xf0) | code);
}
static int get_code(enum kv_format f, const uint8_t *base, size_t i) {
    if (f == KV_Q8) return base[i];
    return (base[i / 2] >> ((i & 1) * 4)) & 15;
}

// ---- init / free ----

int kv_windows_ring_rows(const kv_windows *w, int n_ctx) {
    if (!w || !w->layers || w->window <= 0) return 0;
    int64_t rows = (int64_t)w->window + (w->batch > 1 ? w->batch : 1) - 1;
    return rows < n_ctx ? (int)rows : 0;
}

int kv_cache_max_batch(const kv_cache *kv) {
    return kv->ring_rows > 0 ? kv->ring_rows - kv->ring_window + 1 : kv->n_ctx;
}

kv_windows kv_cache_windows(const kv_cache *kv) {
    kv_windows w = { kv->ring_layer, kv->ring_window, kv_cache_max_batch(kv) };
    return w;
}

int kv_cache_init(kv_cache *kv, enum kv_format format, int n_layer, int n_ctx, int kv_dim, errbuf *err) {
    return kv_cache_init_ex(kv, format, 0, n_layer, n_ctx, kv_dim, err);
}

int kv_cache_init_ex(kv_cache *kv, enum kv_format format, int recent, int n_layer, int n_ctx, int kv_dim,
                     errbuf *err) {
    return kv_cache_init_windows(kv, format, recent, n_layer, n_ctx, kv_dim, NULL, err);
}

int kv_cache_init_windows(kv_cache *kv, enum kv_format format, int recent, int n_layer, int n_ctx, int kv_dim,
                          const kv_windows *w, errbuf *err) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || kv_dim <= 0 || kv_dim % 2)
        return err_set(err, "kv cache: invalid shape (%d layers, %d positions, %d wide)", n_layer,
                       n_ctx, kv_dim);
    if ((unsigned)format >= KV_FORMAT_COUNT) return err_set(err, "kv cache: unknown format %d", (int)format);
    if (recent <= 0) recent = KV_RECENT_DEFAULT;
    if (recent > n_ctx) recent = n_ctx;
    // Q: the key window never needs more than recent + KV_GROUP - 1 rows (a group is folded
    // before the write that would fill it), nor more than n_ctx - groups * KV_GROUP.
    int rows = n_ctx, groups = 0, vrows = n_ctx;
    if (kv_format_quantized(format)) {
        groups = n_ctx > recent ? (n_ctx - recent) / KV_GROUP : 0;
        rows = recent + KV_GROUP - 1 < n_ctx ? recent + KV_GROUP - 1 : n_ctx;
        vrows = recent;
    }
    uint64_t bytes;
    if (!mul_u64((uint64_t)rows, (uint64_t)kv_dim * elem_bytes(format), &bytes) || bytes > SIZE_MAX / 4)
        return err_set(err, "kv cache: %d positions x %d is too large", n_ctx, kv_dim);
    kv->format = format;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->recent = recent;
    kv->gv = value_group(kv_dim);
    kv->q_groups = groups;
    kv->res_cap = rows;
    kv->vcap = vrows;
    kv->row_bytes = (size_t)kv_dim * elem_bytes(format);
    kv->ring_rows = kv_windows_ring_rows(w, n_ctx);
    kv->ring_window = kv->ring_rows ? w->window : 0;
    bool ok = (kv->k = try_calloc((size_t)n_layer, sizeof(void *))) &&
              (kv->v = try_calloc((size_t)n_layer, sizeof(void *))) &&
              (kv->nq = try_calloc((size_t)n_layer, sizeof(int))) &&
              (kv->nqv = try_calloc((size_t)n_layer, sizeof(int)));
    if (ok && kv->ring_rows) {
        ok = (kv->ring_layer = try_calloc((size_t)n_layer, 1)) != NULL;
        for (int l = 0; ok && l < n_layer; l++) kv->ring_layer[l] = w->layers[l] ? 1 : 0;
    }
    for (int l = 0; ok && l < n_layer; l++) {
        if (kv_layer_ring(kv, l))   // a ring: plain rows (elem_bytes is 2 for every format but F32)
            ok = (kv->k[l] = try_calloc((size_t)kv->ring_rows, kv->row_bytes)) &&
                 (kv->v[l] = try_calloc((size_t)kv->ring_rows, kv->row_bytes));
        else
            ok = (kv->k[l] = try_calloc(1, (size_t)bytes)) && (kv->v[l] = try_calloc((size_t)vrows, kv->row_bytes));
    }
    if (ok && kv_format_quantized(format)) {
        size_t cap = (size_t)groups * KV_GROUP, vcap_q = (size_t)(n_ctx - vrows);
        ok = (kv->kq = try_calloc((size_t)n_layer, sizeof(uint8_t *))) &&
             (kv->kp = try_calloc((size_t)n_layer, sizeof(uint16_t *))) &&
             (kv->vq = try_calloc((size_t)n_layer, sizeof(uint8_t *))) &&
             (kv->vp = try_calloc((size_t)n_layer, sizeof(uint16_t *)));
        for (int l = 0; ok && l < n_layer; l++)
            ok = kv_layer_ring(kv, l) ||   // a ring has no quantized store
                 ((kv->kq[l] = try_calloc(1, kv_format_code_bytes(format, cap * (size_t)kv_dim) + 1)) &&
                 (kv->kp[l] = try_calloc((size_t)groups * (size_t)kv_dim * 2 + 1, sizeof(uint16_t))) &&
                 (kv->vq[l] = try_calloc(1, vcap_q * kv_format_code_bytes(format, (size_t)kv_dim) + 1)) &&
                 (kv->vp[l] = try_calloc(vcap_q * (size_t)(kv_dim / kv->gv) * 2 + 1, sizeof(uint16_t))));
    }
    if (!ok) {
        uint64_t total = kv_windows_cache_bytes(format, recent, n_layer, n_ctx, kv_dim, w);
        kv_cache_free(kv);
        return err_set(err, "kv cache: out of memory for %d positions x %d layers (%.1f MiB)", n_ctx, n_layer,
                       (double)total / (1 << 20));
    }
    return 0;
}

static void free_stats(kv_cache *kv) {
    free(kv->mass); free(kv->last); free(kv->mask);
    kv->mass = kv->last = NULL;
    kv->mask = NULL;
}

// Frees what exists, also after an allocation failed half-way (NULL tables and rows).
static void free_storage(kv_cache *kv) {
    for (int l = 0; l < kv->n_layer; l++) {
        if (kv->k) free(kv->k[l]);
        if (kv->v) free(kv->v[l]);
        if (kv->kq) free(kv->kq[l]);
        if (kv->kp) free(kv->kp[l]);
        if (kv->vq) free(kv->vq[l]);
        if (kv->vp) free(kv->vp[l]);
    }
    free(kv->k); free(kv->v); free(kv->nq); free(kv->nqv);
    free(kv->kq); free(kv->kp); free(kv->vq); free(kv->vp);
    free(kv->ring_layer);
}

static void free_ropes(kv_cache *kv) {
    for (int r = 0; r < KV_ROPES; r++) {
        free(kv->rope_cs[r]);
        free(kv->rope_t[r]);
        kv->rope_cs[r] = kv->rope_t[r] = NULL;
    }
    memset(kv->rope, 0, sizeof kv->rope);
}

void kv_cache_free(kv_cache *kv) {
    if (!kv->k) return;
    free_storage(kv);
    free_ropes(kv);
    free(kv->layer_rope);
    free_stats(kv);
    memset(kv, 0, sizeof *kv);
}

void kv_cache_clear(kv_cache *kv) {
    kv->n_used = 0;
    kv->last_n = 0;
    if (kv->nq) memset(kv->nq, 0, (size_t)kv->n_layer * sizeof(int));
    if (kv->nqv) memset(kv->nqv, 0, (size_t)kv->n_layer * sizeof(int));
    size_t per = (size_t)kv->n_layer * (size_t)kv->shape.n_head * (size_t)kv->n_ctx;
    if (kv->mass) memset(kv->mass, 0, per * sizeof(float));
    if (kv->mask) memset(kv->mask, 0, (size_t)kv->n_layer * (size_t)kv->shape.n_kv_head * (size_t)kv->n_ctx);
}

// ---- shape, rope table, statistics ----

// -1 with err when there is no memory for them (err may be NULL: then they stay off).
static int alloc_stats(kv_cache *kv, errbuf *err) {
    if (!kv->track || kv->shape.n_head <= 0 || kv->mass) return 0;
    size_t per = (size_t)kv->n_layer * (size_t)kv->shape.n_head * (size_t)kv->n_ctx;
    kv->mass = try_calloc(per, sizeof(float));
    kv->last = try_calloc(per, sizeof(float));
    kv->last_n = 0;
    if (kv->mass && kv->last) return 0;
    free_stats(kv);
    return err ? err_set(err, "kv cache: out of memory for attention statistics (%zu floats)", 2 * per) : -1;
}

// Table r for the rotation f: every slot's (cos, sin), the angles the rope op gives that position.
static int make_rope(kv_cache *kv, int r, const rope_freqs *f) {
    const int half = f->rope_dim / 2;
    const size_t n = (size_t)kv->n_ctx;
    kv->rope[r] = *f;
    kv->rope_cs[r] = try_malloc(n * (size_t)half * 2 * sizeof(float));
    kv->rope_t[r] = try_malloc(n * (size_t)half * 2 * sizeof(float));
    if (!kv->rope_cs[r] || !kv->rope_t[r]) return -1;
    for (size_t s = 0; s < n; s++) {
        float *cs = kv->rope_cs[r] + s * half * 2;
        rope_cos_sin((int64_t)s, f, cs);
        for (int i = 0; i < half; i++) {
            kv->rope_t[r][(size_t)2 * i * n + s] = cs[2 * i];
            kv->rope_t[r][(size_t)(2 * i + 1) * n + s] = cs[2 * i + 1];
        }
    }
    return 0;
}

static bool same_rope(const rope_freqs *held, const float *table, const rope_freqs *want) {
    return want ? table && rope_freqs_same(held, want) : !table;
}

int kv_cache_set_shape(kv_cache *kv, const kv_shape *sh, errbuf *err) {
    int rope_dim = sh->rope ? sh->rope->rope_dim : 0;
    if (sh->n_kv_head <= 0 || sh->head_dim <= 0 || sh->n_kv_head * sh->head_dim != kv->kv_dim ||
        sh->n_head % sh->n_kv_head || rope_dim < 0 || rope_dim > sh->head_dim || rope_dim % 2 ||
        (sh->rope_alt && (!sh->rope || !sh->alt_layers || sh->rope_alt->rope_dim != rope_dim)))
        return err_set(err, "kv cache: shape %d/%d heads of %d (rope %d) does not fit rows of %d", sh->n_head,
                       sh->n_kv_head, sh->head_dim, rope_dim, kv->kv_dim);
    bool keep = same_rope(&kv->rope[0], kv->rope_cs[0], sh->rope) &&
                same_rope(&kv->rope[1], kv->rope_cs[1], sh->rope_alt);
    if (kv->shape.n_head != sh->n_head || kv->shape.n_kv_head != sh->n_kv_head) {
        free_stats(kv);
    }
    kv->shape = *sh;
    if (!kv->layer_rope && !(kv->layer_rope = try_calloc((size_t)kv->n_layer, 1)))
        return err_set(err, "kv cache: out of memory for %d layers' rope choice", kv->n_layer);
    for (int l = 0; l < kv->n_layer; l++) kv->layer_rope[l] = sh->rope_alt && sh->alt_layers[l] ? 1 : 0;
    if (!keep) {
        free_ropes(kv);
        if ((sh->rope && rope_dim > 0 && make_rope(kv, 0, sh->rope)) || (sh->rope_alt && make_rope(kv, 1, sh->rope_alt))) {
            free_ropes(kv);
            kv->shape.rope = kv->shape.rope_alt = NULL;
            return err_set(err, "kv cache: out of memory for the rope tables (%d positions)", kv->n_ctx);
        }
    }
    kv->shape.rope = kv->rope_cs[0] ? &kv->rope[0] : NULL;
    kv->shape.rope_alt = kv->rope_cs[1] ? &kv->rope[1] : NULL;
    kv->shape.alt_layers = kv->shape.rope_alt ? kv->layer_rope : NULL;
    return alloc_stats(kv, err);
}

void kv_cache_set_tracking(kv_cache *kv, bool on) {
    kv->track = on;
    if (on) alloc_stats(kv, NULL);
}

void kv_cache_rope_rows(const kv_cache *kv, int layer, int s0, int n, float *rows, int ld) {
    const float *cs = kv_layer_rope_cs(kv, layer);
    int half = kv->rope[0].rope_dim / 2;
    if (half <= 0 || !cs) return;
    rope_rows_ref(cs + (size_t)s0 * half * 2, half, kv->shape.rope_neox, n, rows, ld);   // the reference kernel
}

// ---- quantized store ----

// Quantizes group g of layer l's keys from rows (KV_GROUP, kv_dim) floats.
static void quant_key_group(kv_cache *kv, int l, int g, const float *rows) {
    int qmax = qmax_of(kv->format);
    size_t D = (size_t)kv->kv_dim;
    for (size_t c = 0; c < D; c++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < KV_GROUP; i++) {
            float x = rows[(size_t)i * D + c];
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        uint16_t *p = kv->kp[l] + ((size_t)g * D + c) * 2;
        group_params(lo, hi, qmax, &p[0], &p[1]);
        float sc = fp16_to_f32(p[0]), mn = fp16_to_f32(p[1]);
        uint8_t *codes = kv->kq[l] + kv_format_code_bytes(kv->format, ((size_t)g * D + c) * KV_GROUP);
        for (int i = 0; i < KV_GROUP; i++) put_code(kv->format, codes, (size_t)i, quant_code(rows[(size_t)i * D + c], sc, mn, qmax));
    }
}

// Quantizes one value row (kv_dim floats) into quantized slot s of layer l.
static void quant_value_row(kv_cache *kv, int l, int s, const float *row) {
    int qmax = qmax_of(kv->format), gv = kv->gv, ng = kv->kv_dim / gv;
    uint8_t *codes = kv->vq[l] + (size_t)s * kv_format_code_bytes(kv->format, (size_t)kv->kv_dim);
    for (int g = 0; g < ng; g++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int c = g * gv; c < (g + 1) * gv; c++) { lo = row[c] < lo ? row[c] : lo; hi = row[c] > hi ? row[c] : hi; }
        uint16_t *p = kv->vp[l] + ((size_t)s * ng + g) * 2;
        group_params(lo, hi, qmax, &p[0], &p[1]);
        float sc = fp16_to_f32(p[0]), mn = fp16_to_f32(p[1]);
        for (int c = g * gv; c < (g + 1) * gv; c++) put_code(kv->format, codes, (size_t)c, quant_code(row[c], sc, mn, qmax));
    }
}

static void f16_row_to_f32(const uint16_t *h, float *out, int n) {
    for (int i = 0; i < n; i++) out[i] = fp16_to_f32(h[i]);
}

// Moves the oldest KV_GROUP rows of layer l's key window into the quantized store.
static void fold_group(kv_cache *kv, int l) {
    size_t D = (size_t)kv->kv_dim;
    float *tmp = xmalloc((size_t)KV_GROUP * D * sizeof(float));
    int g = kv->nq[l] / KV_GROUP;
    for (int i = 0; i < KV_GROUP; i++) f16_row_to_f32((uint16_t *)kv->k[l] + (size_t)i * D, tmp + (size_t)i * D, (int)D);
    quant_key_group(kv, l, g, tmp);
    free(tmp);
    if (kv->res_cap > KV_GROUP) {
        size_t keep = (size_t)(kv->res_cap - KV_GROUP) * kv->row_bytes;
        memmove(kv->k[l], (uint8_t *)kv->k[l] + KV_GROUP * kv->row_bytes, keep);
    }
    kv->nq[l] += KV_GROUP;
}

// Quantizes the oldest row of layer l's value ring (slot nqv) and frees its row.
static void fold_value(kv_cache *kv, int l) {
    int s = kv->nqv[l];
    float tmp[4096], *row = kv->kv_dim <= 4096 ? tmp : xmalloc((size_t)kv->kv_dim * sizeof(float));
    f16_row_to_f32((uint16_t *)kv->v[l] + (size_t)(s % kv->vcap) * kv->kv_dim, row, kv->kv_dim);
    quant_value_row(kv, l, s, row);
    if (row != tmp) free(row);
    kv->nqv[l]++;
}

static void store_row(enum kv_format f, void *dst, const float *src, int n) {
    if (f == KV_F32) { memcpy(dst, src, (size_t)n * 4); return; }
    uint16_t *d = dst;
    for (int i = 0; i < n; i++) d[i] = f32_to_fp16(src[i]);
}

void kv_cache_put(kv_cache *kv, int l, int slot, const float *k, const float *v) {
    if (l < 0 || l >= kv->n_layer || slot < 0 || slot >= kv->n_ctx) return;
    const enum kv_format lf = kv_layer_format(kv, l);
    if (!kv_format_quantized(lf)) {
        size_t r = kv_plain_row(kv, l, slot);
        store_row(lf, (uint8_t *)kv->k[l] + r * kv->row_bytes, k, kv->kv_dim);
        store_row(lf, (uint8_t *)kv->v[l] + r * kv->row_bytes, v, kv->kv_dim);
        return;
    }
    size_t D = (size_t)kv->kv_dim;
    int nq = kv->nq[l], nqv = kv->nqv[l];   // after the folds this write brings (kv_fold_counters)
    kv_fold_counters(kv, slot, &nq, &nqv);
    // keys
    if (slot < kv->nq[l]) {   // rewrite inside the quantized store: requantize the key group
        int g = slot / KV_GROUP;
        float *tmp = xmalloc((size_t)KV_GROUP * D * sizeof(float));
        kv_cache_read(kv, l, 0, g * KV_GROUP, (g + 1) * KV_GROUP, 0, (int)D, tmp, (int)D, NULL);
        memcpy(tmp + (size_t)(slot - g * KV_GROUP) * D, k, D * sizeof(float));
        quant_key_group(kv, l, g, tmp);
        free(tmp);
    } else {
        while (kv->nq[l] < nq) fold_group(kv, l);
        int r = slot - kv->nq[l];
        if (r < kv->res_cap) store_row(KV_F16, (uint8_t *)kv->k[l] + (size_t)r * kv->row_bytes, k, kv->kv_dim);
    }
    // values
    if (slot < kv->nqv[l]) {
        quant_value_row(kv, l, slot, v);
    } else {
        while (kv->nqv[l] < nqv) fold_value(kv, l);
        store_row(KV_F16, (uint8_t *)kv->v[l] + (size_t)(slot % kv->vcap) * kv->row_bytes, v, kv->kv_dim);
    }
}

static void f16_span(const uint16_t *src, float *dst, int n, kv_f16_cvt_fn f16_to_f32) {
    if (f16_to_f32) f16_to_f32(src, dst, n);
    else f16_row_to_f32(src, dst, n);
}

void kv_cache_read(const kv_cache *kv, int l, int which, int s0, int s1, int c0, int nc, float *out, int ld,
                   kv_f16_cvt_fn f16_to_f32) {
    void *rows = which ? kv->v[l] : kv->k[l];
    size_t D = (size_t)kv->kv_dim;
    const enum kv_format lf = kv_layer_format(kv, l);
    if (!kv_format_quantized(lf)) {
        for (int s = s0; s < s1; s++) {
            const uint8_t *r = (const uint8_t *)rows + kv_plain_row(kv, l, s) * kv->row_bytes;
            float *o = out + (size_t)(s - s0) * ld;
            if (lf == KV_F32) memcpy(o, (const float *)r + c0, (size_t)nc * sizeof(float));
            else f16_span((const uint16_t *)r + c0, o, nc, f16_to_f32);
        }
        return;
    }
    int nq = which ? kv->nqv[l] : kv->nq[l], s = s0;
    if (which == 0) {
        // keys: per channel, contiguous codes along slots of a group
        while (s < s1 && s < nq) {
            int g = s / KV_GROUP, i0 = s - g * KV_GROUP, i1 = KV_GROUP;
            if (g * KV_GROUP + i1 > s1) i1 = s1 - g * KV_GROUP;
            if (g * KV_GROUP + i1 > nq) i1 = nq - g * KV_GROUP;
            for (int c = 0; c < nc; c++) {
                size_t ch = (size_t)g * D + (size_t)(c0 + c);
                const uint16_t *p = kv->kp[l] + ch * 2;
                float sc = fp16_to_f32(p[0]), mn = fp16_to_f32(p[1]);
                const uint8_t *codes = kv->kq[l] + kv_format_code_bytes(kv->format, ch * KV_GROUP);
                float *o = out + (size_t)(g * KV_GROUP - s0) * ld + c;
                if (kv->format == KV_Q8)
                    for (int i = i0; i < i1; i++) o[(size_t)i * ld] = mn + sc * (float)codes[i];
                else
                    for (int i = i0; i < i1; i++) o[(size_t)i * ld] = mn + sc * (float)((codes[i / 2] >> ((i & 1) * 4)) & 15);
            }
            s = g * KV_GROUP + i1;
        }
    } else {
        int gv = kv->gv, ng = kv->kv_dim / gv;
        size_t rb = kv_format_code_bytes(kv->format, D);
        for (; s < s1 && s < nq; s++) {
            const uint8_t *codes = kv->vq[l] + (size_t)s * rb;
            const uint16_t *p = kv->vp[l] + (size_t)s * ng * 2;
            float *o = out + (size_t)(s - s0) * ld;
            for (int c = 0; c < nc; c++) {
                int ch = c0 + c, g = ch / gv;
                o[c] = fp16_to_f32(p[2 * g + 1]) + fp16_to_f32(p[2 * g]) * (float)get_code(kv->format, codes, (size_t)ch);
            }
        }
    }
    for (; s < s1; s++) {   // the recent windows (keys: shifting rows; values: a ring)
        const uint16_t *r = (const uint16_t *)rows + (size_t)(which ? s % kv->vcap : s - nq) * D;
        f16_span(r + c0, out + (size_t)(s - s0) * ld, nc, f16_to_f32);
    }
}

// ---- whole-cache operations ----

// Rewrites layer l with rows[keep[i]] (floats (n_src, kv_dim) for K and V) for i < n.
// A ring takes only the slots it keeps, the newest ring_rows.
static void restore_layer(kv_cache *kv, int l, const float *kf, const float *vf, const int32_t *keep, int n) {
    if (kv->nq) kv->nq[l] = 0;
    if (kv->nqv) kv->nqv[l] = 0;
    size_t D = (size_t)kv->kv_dim;
    int ring = kv_layer_ring(kv, l);
    for (int i = ring && n > ring ? n - ring : 0; i < n; i++) {
        int src = keep ? keep[i] : i;
        kv_cache_put(kv, l, i, kf + (size_t)src * D, vf + (size_t)src * D);
    }
}

static void compact_stats(kv_cache *kv, int l, const int32_t *keep, int n) {
    if (kv->mass) {
        for (int h = 0; h < kv->shape.n_head; h++) {
            size_t base = ((size_t)l * kv->shape.n_head + h) * kv->n_ctx;
            for (int i = 0; i < n; i++) {
                kv->mass[base + i] = kv->mass[base + keep[i]];
                kv->last[base + i] = kv->last[base + keep[i]];
            }
            memset(kv->mass + base + n, 0, (size_t)(kv->n_ctx - n) * sizeof(float));
            memset(kv->last + base + n, 0, (size_t)(kv->n_ctx - n) * sizeof(float));
        }
    }
    if (kv->mask) {
        for (int h = 0; h < kv->shape.n_kv_head; h++) {
            uint8_t *m = kv->mask + ((size_t)l * kv->shape.n_kv_head + h) * kv->n_ctx;
            for (int i = 0; i < n; i++) m[i] = m[keep[i]];
            memset(m + n, 0, (size_t)(kv->n_ctx - n));
        }
    }
}

// A ring's compaction: kept slot keep[i] moves to row i % ring if the ring still holds it (it held
// the newest `ring` of the n_src slots), else row i % ring becomes zeros.
static void compact_ring(kv_cache *kv, int l, const int32_t *keep, int n_keep, int n_src) {
    const int ring = kv_layer_ring(kv, l);
    const size_t rb = kv->row_bytes, bytes = (size_t)ring * rb;
    uint8_t *old = xmalloc(2 * bytes), *k = kv->k[l], *v = kv->v[l];
    memcpy(old, k, bytes);
    memcpy(old + bytes, v, bytes);
    memset(k, 0, bytes);
    memset(v, 0, bytes);
    for (int i = n_keep > ring ? n_keep - ring : 0; i < n_keep; i++) {
        int s = keep[i];
        if (s < n_src - ring || s >= n_src) continue;
        size_t from = (size_t)(s % ring) * rb, to = (size_t)(i % ring) * rb;
        memcpy(k + to, old + from, rb);
        memcpy(v + to, old + bytes + from, rb);
    }
    free(old);
}

void kv_cache_compact_layer(kv_cache *kv, int l, const int32_t *keep, int n_keep) {
    int n_src = kv->n_used;
    if (n_keep <= 0 || n_src <= 0) { if (kv->nq) { kv->nq[l] = 0; kv->nqv[l] = 0; } return; }
    if (kv_layer_ring(kv, l)) {
        compact_ring(kv, l, keep, n_keep, n_src);
    } else if (!kv_format_quantized(kv->format)) {
        for (int i = 0; i < n_keep; i++) {
            if (keep[i] == i) continue;
            memcpy((uint8_t *)kv->k[l] + (size_t)i * kv->row_bytes, (uint8_t *)kv->k[l] + (size_t)keep[i] * kv->row_bytes, kv->row_bytes);
            memcpy((uint8_t *)kv->v[l] + (size_t)i * kv->row_bytes, (uint8_t *)kv->v[l] + (size_t)keep[i] * kv->row_bytes, kv->row_bytes);
        }
    } else {
        size_t D = (size_t)kv->kv_dim;
        float *kf = xmalloc((size_t)n_src * D * sizeof(float)), *vf = xmalloc((size_t)n_src * D * sizeof(float));
        kv_cache_read(kv, l, 0, 0, n_src, 0, (int)D, kf, (int)D, NULL);
        kv_cache_read(kv, l, 1, 0, n_src, 0, (int)D, vf, (int)D, NULL);
        restore_layer(kv, l, kf, vf, keep, n_keep);
        free(kf);
        free(vf);
    }
    compact_stats(kv, l, keep, n_keep);
}

int kv_cache_convert(kv_cache *kv, enum kv_format format, int recent, errbuf *err) {
    if (recent <= 0) recent = kv->recent;
    if (kv->bk_sync && kv->bk_sync(kv, KV_SYNC_PULL, err)) return -1;   // a device's copy into the host arrays
    kv_cache nk;
    kv_windows w = kv_cache_windows(kv);
    if (kv_cache_init_windows(&nk, format, recent, kv->n_layer, kv->n_ctx, kv->kv_dim, &w, err)) return -1;
    size_t D = (size_t)kv->kv_dim;
    int n = kv->n_used;
    float *kf = xmalloc(((size_t)n + 1) * D * sizeof(float)), *vf = xmalloc(((size_t)n + 1) * D * sizeof(float));
    for (int l = 0; l < kv->n_layer; l++) {
        kv_cache_read(kv, l, 0, 0, n, 0, (int)D, kf, (int)D, NULL);
        kv_cache_read(kv, l, 1, 0, n, 0, (int)D, vf, (int)D, NULL);
        restore_layer(&nk, l, kf, vf, NULL, n);
    }
    free(kf);
    free(vf);
    // swap the storage; shape, rope table, policy and statistics stay
    kv_cache old = *kv;
    kv->format = nk.format;
    kv->k = nk.k; kv->v = nk.v; kv->nq = nk.nq; kv->nqv = nk.nqv;
    kv->kq = nk.kq; kv->kp = nk.kp; kv->vq = nk.vq; kv->vp = nk.vp;
    kv->row_bytes = nk.row_bytes;
    kv->recent = nk.recent;
    kv->gv = nk.gv;
    kv->q_groups = nk.q_groups;
    kv->res_cap = nk.res_cap;
    kv->vcap = nk.vcap;
    kv->ring_layer = nk.ring_layer;   // the same layout, its own copy
    if (kv->bk_sync && kv->bk_sync(kv, KV_SYNC_PUSH, err)) {   // the device cannot take it: keep the old
        free_storage(kv);
        *kv = old;
        return -1;
    }
    free_storage(&old);
    return 0;
}

int kv_cache_copy(kv_cache *dst, const kv_cache *src, errbuf *err) {
    if (dst->format != src->format || dst->n_layer != src->n_layer || dst->kv_dim != src->kv_dim ||
        dst->n_ctx < src->n_used || dst->recent != src->recent || dst->q_groups < src->q_groups ||
        dst->vcap != src->vcap || dst->ring_rows != src->ring_rows ||
        (src->ring_rows && memcmp(dst->ring_layer, src->ring_layer, (size_t)src->n_layer)))
        return err_set(err, "kv cache: copy between caches of different shapes");
    size_t D = (size_t)src->kv_dim;
    int n = src->n_used;
    for (int l = 0; l < src->n_layer; l++) {
        if (kv_layer_ring(src, l)) {   // the whole ring
            memcpy(dst->k[l], src->k[l], (size_t)src->ring_rows * src->row_bytes);
            memcpy(dst->v[l], src->v[l], (size_t)src->ring_rows * src->row_bytes);
        } else if (!kv_format_quantized(src->format)) {
            memcpy(dst->k[l], src->k[l], (size_t)n * src->row_bytes);
            memcpy(dst->v[l], src->v[l], (size_t)n * src->row_bytes);
        } else {
            int nq = src->nq[l], nqv = src->nqv[l], g = nq / KV_GROUP;
            memcpy(dst->kq[l], src->kq[l], kv_format_code_bytes(src->format, (size_t)g * D * KV_GROUP));
            memcpy(dst->kp[l], src->kp[l], (size_t)g * D * 2 * sizeof(uint16_t));
            memcpy(dst->vq[l], src->vq[l], (size_t)nqv * kv_format_code_bytes(src->format, D));
            memcpy(dst->vp[l], src->vp[l], (size_t)nqv * (size_t)(src->kv_dim / src->gv) * 2 * sizeof(uint16_t));
            size_t rb = (size_t)(n - nq > 0 ? n - nq : 0) * src->row_bytes;
            memcpy(dst->k[l], src->k[l], rb);
            memcpy(dst->v[l], src->v[l], (size_t)src->vcap * src->row_bytes);   // the ring, whole
            dst->nq[l] = nq;
            dst->nqv[l] = nqv;
        }
    }
    dst->n_used = n;
    return 0;
}

// ---- accounting ----

// Quantized bytes per slot per layer: keys, values (codes + f16 (scale, min) per group).
static double q_key_bytes(enum kv_format f, int kv_dim) {
    return (double)kv_dim * ((kv_format_code_bits(f) / 8.0) + 4.0 / KV_GROUP);
}
static double q_value_bytes(enum kv_format f, int kv_dim) {
    return (double)kv_dim * (kv_format_code_bits(f) / 8.0) + 4.0 * (kv_dim / value_group(kv_dim));
}

double kv_format_token_bytes(enum kv_format f, int kv_dim) {
    if (!kv_format_quantized(f)) return 2.0 * (double)kv_dim * (double)elem_bytes(f);
    return q_key_bytes(f, kv_dim) + q_value_bytes(f, kv_dim);
}

// Per layer (Q): key store groups*KV_GROUP slots + key window min(R + KV_GROUP - 1, n_ctx) F16
// rows + value store (n_ctx - R) slots + value ring R F16 rows — what kv_cache_init_ex allocates.
uint64_t kv_format_cache_bytes(enum kv_format f, int recent, int n_layer, int n_ctx, int kv_dim) {
    if (!kv_format_quantized(f)) return (uint64_t)n_layer * (uint64_t)n_ctx * (uint64_t)(2.0 * kv_dim * elem_bytes(f));
    if (recent <= 0) recent = KV_RECENT_DEFAULT;
    if (recent > n_ctx) recent = n_ctx;
    uint64_t groups = n_ctx > recent ? (uint64_t)(n_ctx - recent) / KV_GROUP : 0;
    uint64_t krows = recent + KV_GROUP - 1 < n_ctx ? (uint64_t)(recent + KV_GROUP - 1) : (uint64_t)n_ctx;
    uint64_t row = 2ull * (uint64_t)kv_dim;
    uint64_t per = (uint64_t)(q_key_bytes(f, kv_dim) * (double)(groups * KV_GROUP)) + krows * row +
                   (uint64_t)(q_value_bytes(f, kv_dim) * (double)(n_ctx - recent)) + (uint64_t)recent * row;
    return (uint64_t)n_layer * per;
}

uint64_t kv_windows_cache_bytes(enum kv_format f, int recent, int n_layer, int n_ctx, int kv_dim,
                                const kv_windows *w) {
    int rows = kv_windows_ring_rows(w, n_ctx), rings = 0;
    for (int l = 0; rows && l < n_layer; l++) rings += w->layers[l] ? 1 : 0;
    uint64_t ring = 2ull * (uint64_t)rows * (uint64_t)kv_dim * elem_bytes(f);   // K and V rows
    return kv_format_cache_bytes(f, recent, n_layer - rings, n_ctx, kv_dim) + (uint64_t)rings * ring;
}

uint64_t kv_cache_bytes(const kv_cache *kv) {
    kv_windows w = kv_cache_windows(kv);
    return kv_windows_cache_bytes(kv->format, kv->recent, kv->n_layer, kv->n_ctx, kv->kv_dim, &w);
}

uint64_t kv_cache_used_bytes(const kv_cache *kv) {
    double pk = q_key_bytes(kv->format, kv->kv_dim), pv = q_value_bytes(kv->format, kv->kv_dim);
    uint64_t total = 0;
    for (int l = 0; l < kv->n_layer; l++) {
        int ring = kv_layer_ring(kv, l);
        if (ring || !kv_format_quantized(kv->format)) {   // plain rows: the slots held
            int held = ring && ring < kv->n_used ? ring : kv->n_used;
            total += 2ull * (uint64_t)held * kv->row_bytes;
            continue;
        }
        int nq = kv->nq[l] < kv->n_used ? kv->nq[l] : kv->n_used;
        int nqv = kv->nqv[l] < kv->n_used ? kv->nqv[l] : kv->n_used;
        total += (uint64_t)(pk * nq) + (uint64_t)(kv->n_used - nq) * kv->row_bytes +
                 (uint64_t)(pv * nqv) + (uint64_t)(kv->n_used - nqv) * kv->row_bytes;
    }
    return total;
}
