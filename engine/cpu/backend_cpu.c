// CPU backend: runs each op at once, in parallel over a thread pool, with the kernel table
// chosen at creation ("scalar" is the reference; "auto" the fastest this machine can run).
#include "engine/backend.h"
#include "base/threads.h"
#include "engine/cpu/attn_kv.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/pack_arena.h"
#include "engine/rope.h"
#include "engine/cpu/threadpool.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bk_act {
    float *data;        // (rows, cols) row-major
    int64_t rows, cols;
    bool view;          // rows of another activation (cpu_act_rows): data is not its own
};

typedef struct cpu_backend {
    const cpu_kernels *k;
    threadpool *pool;
    int n_threads;
    void *qbuf;          // quantized activations scratch
    size_t qbuf_bytes;
    float **scores;      // per thread: attention scores scratch
    int scores_len;
    char oom[160];       // an op's scratch that could not be had: the pass fails at end_batch ("" none)
    bool profiling;
    double op_secs[OP_COUNT];
    uint64_t op_calls[OP_COUNT];
    struct cpu_packed *packs;   // weights packed for the table's r16 kernels (cpu_weight_prepare)
    pack_arena arena;           // their memory
    int n_packs, cap_packs;
} cpu_backend;

#define CPU(b) ((cpu_backend *)(b)->impl)

static double prof_begin(cpu_backend *c) { return c->profiling ? now_sec() : 0.0; }
static void prof_end(cpu_backend *c, enum op_kind k, double t0) {
    if (!c->profiling) return;
    c->op_secs[k] += now_sec() - t0;
    c->op_calls[k]++;
}

// A weight the kernel table multiplies in its row-interleaved layout (cpu_pack_r16). The
// backend keeps its packs itself, found by the weights the tensor was made from, its type and
// shape (tensor.bk stays NULL on the CPU): a backend destroyed without releasing its weights
// takes its packs with it and leaves nothing dangling in the model. The key is the tensor's
// source, not its rows, because a converted weight's rows are freed once packed
// (model_prepare_tensor) and a conversion of one source to one type is always the same.
typedef struct cpu_packed {
    const void *src;          // pack_key of the tensor it was packed from
    uint32_t type;
    int64_t ne0, ne1;
    void *data;
    size_t bytes;
    arena_chunk *chunk;       // where data was carved from (c->arena)
} cpu_packed;

static const void *pack_key(const tensor *w) { return w->src_data ? w->src_data : w->data; }

static cpu_packed *packed_of(cpu_backend *c, const tensor *w) {
    for (int i = 0; i < c->n_packs; i++) {
        cpu_packed *p = &c->packs[i];
        if (p->src == pack_key(w) && p->type == w->type && p->ne0 == w->ne0 && p->ne1 == w->ne1) return p;
    }
    return NULL;
}

static bool cpu_weight_keeps_own(backend *b, const tensor *w) {
    return w->ne1 > 1 && CPU(b)->k->matmul_packed[w->type] && cpu_r16_type(w->type);
}

typedef struct pack_job { const tensor *w; void *dst; } pack_job;

static void pack_worker(void *ctx, int ith, int nth) {
    const pack_job *j = ctx;
    int64_t lo, hi;
    split_range((j->w->ne1 + 15) / 16, ith, nth, 1, &lo, &hi);
    cpu_pack_r16(j->w->type, j->w->data, j->w->row_bytes, j->w->ne1, j->w->ne0, lo, hi, j->dst);
}

// Packing is a speed-up only: without the memory for it the weight stays in rows, read by the
// table's row kernel.
static int cpu_weight_prepare(backend *b, tensor *w, errbuf *err) {
    cpu_backend *c = CPU(b);
    if (!cpu_weight_keeps_own(b, w) || packed_of(c, w)) return 0;
    if (!w->data) return err_set(err, "cpu: tensor %s: no rows to pack (another backend's copy was its only one)", w->name);
    if (c->n_packs == c->cap_packs) {
        int cap = c->cap_packs ? 2 * c->cap_packs : 64;
        cpu_packed *grown = try_realloc(c->packs, (size_t)cap * sizeof *grown);
        if (!grown) return 0;
        c->packs = grown;
        c->cap_packs = cap;
    }
    const size_t bytes = cpu_r16_bytes(w->type, w->ne1, w->ne0);
    arena_chunk *chunk;
    void *data = pack_arena_alloc(&c->arena, bytes, &chunk);
    if (!data) return 0;
    pack_job j = { w, data };
    threadpool_run(c->pool, pack_worker, &j);
    c->packs[c->n_packs++] = (cpu_packed){ pack_key(w), w->type, w->ne0, w->ne1, data, bytes, chunk };
    b->own_weight_bytes += bytes;
    return 0;
}

static bool cpu_weight_holds_own(backend *b, const tensor *w) { return packed_of(CPU(b), w) != NULL; }

static void cpu_weight_release(backend *b, tensor *w) {
    cpu_backend *c = CPU(b);
    cpu_packed *p = packed_of(c, w);
    if (!p) return;
    b->own_weight_bytes -= p->bytes;
    pack_arena_free(&c->arena, p->chunk);
    *p = c->packs[--c->n_packs];
}

static bool cpu_supports_type(backend *b, uint32_t t) {
    return t < WT_COUNT && CPU(b)->k->matmul[t] != NULL;
}

static bk_act *cpu_act_new(backend *b, int64_t rows, int64_t cols) {
    (void)b;
    bk_act *a = xcalloc(1, sizeof *a);
    a->rows = rows;
    a->cols = cols;
    a->data = try_aligned_alloc(64, (size_t)(rows * cols) * sizeof(float));
    if (!a->data) { free(a); return NULL; }
    memset(a->data, 0, (size_t)(rows * cols) * sizeof(float));
    return a;
}
static void cpu_act_free(backend *b, bk_act *a) {
    (void)b;
    if (!a) return;
    if (!a->view) free(a->data);
    free(a);
}

static bk_act *cpu_act_rows(backend *b, bk_act *a, int64_t row0, int64_t n) {
    (void)b;
    bk_act *v = xcalloc(1, sizeof *v);
    *v = (bk_act){ a->data + row0 * a->cols, n, a->cols, true };
    return v;
}
static void cpu_act_read(backend *b, const bk_act *a, int64_t row0, int64_t n_rows, float *dst) {
    (void)b;
    memcpy(dst, a->data + row0 * a->cols, (size_t)(n_rows * a->cols) * sizeof(float));
}

static void cpu_act_write(backend *b, bk_act *a, int64_t row0, int64_t n_rows, const float *src) {
    (void)b;
    memcpy(a->data + row0 * a->cols, src, (size_t)(n_rows * a->cols) * sizeof(float));
}

static int cpu_kv_prepare(backend *b, kv_cache *kv, errbuf *err) { (void)b; (void)kv; (void)err; return 0; }
static void cpu_kv_release(backend *b, kv_cache *kv) { (void)b; (void)kv; }
static void cpu_begin_batch(backend *b) { (void)b; }
// The ops run as they are recorded; a scratch one of them could not have fails the pass here
// (model_forward then leaves the cache's length as it was, and the turn fails with this line).
static int cpu_end_batch(backend *b, errbuf *err) {
    cpu_backend *c = CPU(b);
    size_t kernel_bytes = cpu_kernels_scratch_failed();
    if (c->oom[0]) {
        err_set(err, "%s", c->oom);
        c->oom[0] = 0;
        return -1;
    }
    if (kernel_bytes) return err_set(err, "cpu: out of memory for the kernels' scratch (%zu bytes)", kernel_bytes);
    return 0;
}

// ---- embed ----
static void cpu_embed(backend *b, const tensor *emb, const int32_t *ids, int n, bk_act *out) {
    double t0 = prof_begin(CPU(b));
    const wtype_info *ti = wtype_get(emb->type);
    for (int t = 0; t < n; t++) {
        const uint8_t *row = (const uint8_t *)emb->data + (size_t)ids[t] * emb->row_bytes;
        ti->to_f32(row, out->data + (int64_t)t * out->cols, emb->ne0);
    }
    prof_end(CPU(b), OP_EMBED, t0);
}

// ---- rmsnorm ----
static void cpu_rmsnorm(backend *b, const bk_act *x, const tensor *w, float eps, int n, bk_act *out) {
    double t0 = prof_begin(CPU(b));
    const float *g = w->data;   // F32 norm weights (checked at load)
    // d: elements normalized together (the row, or each group of w->ne0: per-head norm)
    int64_t d = w->ne0 < x->cols ? w->ne0 : x->cols;
    for (int t = 0; t < n; t++)
        for (int64_t j = 0; j + d <= x->cols; j += d) {
            const float *xr = x->data + (int64_t)t * x->cols + j;
            float *o = out->data + (int64_t)t * out->cols + j;
            double ss = 0.0;
            for (int64_t i = 0; i < d; i++) ss += (double)xr[i] * xr[i];
            float scale = (float)(1.0 / sqrt(ss / (double)d + (double)eps));
            for (int64_t i = 0; i < d; i++) o[i] = xr[i] * scale * g[i];
        }
    prof_end(CPU(b), OP_RMSNORM, t0);
}

// ---- matmul ----
typedef struct mm_job {
    const cpu_kernels *k;
    const tensor *w;
    const cpu_packed *packed; // w in the table's row-interleaved layout, or NULL: its rows
    const float *xf;          // f32 rows (stride xf_cols)
    int64_t xf_cols;
    void *xq;                 // prepared rows (Q8_0 or Q8_K blocks, bf16, as act_format says)
    size_t xq_row_bytes;
    enum act_format af;
    bool prefill;             // the table's prefill kernel (matmul_prefill) runs it
    int n;
    float *y;
    int64_t ldy;
} mm_job;

static void mm_quantize_worker(void *ctx, int ith, int nth) {
    mm_job *j = ctx;
    int64_t lo, hi;
    split_range(j->n, ith, nth, j->prefill ? 16 : 1, &lo, &hi);   // a prefill format's blocks of 16 whole
    if (lo < hi)
        cpu_act_prepare(j->k, j->af, j->xf + lo * j->xf_cols, j->xf_cols, j->w->ne0, hi - lo,
                        (uint8_t *)j->xq + lo * j->xq_row_bytes);
}

static void mm_worker(void *ctx, int ith, int nth) {
    mm_job *j = ctx;
    const int64_t k = j->w->ne0;
    int64_t lo, hi;
    split_range(j->w->ne1, ith, nth, 16, &lo, &hi);
    if (lo >= hi) return;
    const void *x = j->xq ? j->xq : (const void *)j->xf;
    size_t x_row_bytes = j->xq ? j->xq_row_bytes : (size_t)j->xf_cols * sizeof(float);
    if (j->prefill) j->k->matmul_prefill[j->w->type](j->packed->data, 0, k, lo, hi, x, x_row_bytes, j->n, j->y, j->ldy);
    else if (j->packed) j->k->matmul_packed[j->w->type](j->packed->data, 0, k, lo, hi, x, x_row_bytes, j->n, j->y, j->ldy);
    else j->k->matmul[j->w->type](j->w->data, j->w->row_bytes, k, lo, hi, x, x_row_bytes, j->n, j->y, j->ldy);
}

static void cpu_matmul(backend *b, const tensor *w, const bk_act *x, int64_t x_row0, int n, bk_act *out) {
    cpu_backend *c = CPU(b);
    double t0 = prof_begin(c);
    mm_job j = { .k = c->k, .w = w, .packed = packed_of(c, w), .xf = x->data + x_row0 * x->cols, .xf_cols = x->cols, .n = n,
                 .y = out->data, .ldy = out->cols };
    // a prefill kernel reads whole blocks of 16 tokens: the rows past n are there, zero
    j.prefill = j.packed && c->k->matmul_prefill[w->type] && n >= c->k->prefill_min_tokens;
    j.af = j.prefill ? c->k->act_format_prefill[w->type] : c->k->act_format[w->type];
    const int n_rows = j.prefill ? (n + 15) / 16 * 16 : n;
    if (j.af != ACT_F32) {
        j.xq_row_bytes = cpu_act_row_bytes(j.af, w->ne0);
        size_t need = j.xq_row_bytes * (size_t)n_rows;
        if (need > c->qbuf_bytes) {
            free(c->qbuf);
            c->qbuf = try_malloc(need);
            c->qbuf_bytes = c->qbuf ? need : 0;
            if (!c->qbuf) {
                snprintf(c->oom, sizeof c->oom, "cpu: out of memory for the quantized activations (%zu bytes)", need);
                prof_end(c, OP_MATMUL, t0);
                return;
            }
        }
        j.xq = c->qbuf;
        if (n_rows > n) memset((uint8_t *)j.xq + (size_t)n * j.xq_row_bytes, 0, (size_t)(n_rows - n) * j.xq_row_bytes);
        if (n == 1) mm_quantize_worker(&j, 0, 1);
        else threadpool_run(c->pool, mm_quantize_worker, &j);
    }
    threadpool_run(c->pool, mm_worker, &j);
    prof_end(c, OP_MATMUL, t0);
}

static void cpu_add_bias(backend *b, bk_act *x, const tensor *bias, int n) {
    double t0 = prof_begin(CPU(b));
    const float *bb = bias->data;
    for (int t = 0; t < n; t++) {
        float *r = x->data + (int64_t)t * x->cols;
        for (int64_t i = 0; i < bias->ne0; i++) r[i] += bb[i];
    }
    prof_end(CPU(b), OP_BIAS, t0);
}

// ---- rope ----
static void cpu_rope(backend *b, bk_act *x, int n, const int32_t *positions, const rope_params *p) {
    double t0 = prof_begin(CPU(b));
    int half = p->freqs->rope_dim / 2;
    float cs[2 * ROPE_MAX_PAIRS];   // (half, 2) cos, sin
    for (int t = 0; t < n; t++) {
        rope_cos_sin(positions[t], p->freqs, cs);
        float *row = x->data + (int64_t)t * x->cols;
        for (int h = 0; h < p->n_heads; h++)   // every head of a token: the same angles
            rope_rows_ref(cs, half, p->neox, 1, row + (int64_t)h * p->head_dim, p->head_dim);
    }
    prof_end(CPU(b), OP_ROPE, t0);
}

// ---- kv store ----
static void cpu_kv_store(backend *b, kv_cache *kv, int layer, const bk_act *k, const bk_act *v,
                         int n, const int32_t *slots) {
    double t0 = prof_begin(CPU(b));
    for (int t = 0; t < n; t++)
        kv_cache_put(kv, layer, slots[t], k->data + (int64_t)t * k->cols, v->data + (int64_t)t * v->cols);
    prof_end(CPU(b), OP_KV_STORE, t0);
}

// ---- attention ----
// Keys are stored un-rotated (engine/kv_cache.h); q arrives rotated by its slot. One job is one
// kv head and a block of ATT_QB query tokens: it reads tiles of ATT_TS slots of that head's keys
// once (dequantized, channel-major, rotated by slot: engine/cpu/attn_kv.c) and scores them for
// every query token and q head of the group, takes the softmax of each row (keeping the weights
// when the cache tracks statistics), then sums value tiles. Scratch per thread: scores
// (ATT_QB*group, n_ctx), a (head_dim, ATT_TS) key tile and an (ATT_TS, head_dim) value tile,
// and, when tracking, the attention mass (n_head, n_ctx), summed over threads afterwards.
#define ATT_QB 16
#define ATT_TS 64

typedef struct attn_job {
    cpu_backend *c;
    const bk_act *q;
    kv_cache *kv;
    int layer, n, n_past;
    const attn_params *p;
    bk_act *out;
    int n_qblocks;
    bool track;
} attn_job;

// gemma2's soft cap on `group` rows of n scores (at stride ld): s = cap * tanh(s / cap).
static void softcap_rows(float *rows, int group, int64_t ld, int n, float cap) {
    for (int g = 0; g < group; g++)
        for (int i = 0; i < n; i++) rows[g * ld + i] = cap * tanhf(rows[g * ld + i] / cap);
}

// The first slot a token whose context is [0, ctx) sees: 0, or ctx - window on a window layer.
static int window_first(const attn_params *p, int ctx) { return p->window > 0 && ctx > p->window ? ctx - p->window : 0; }

static void attn_worker(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    const cpu_kernels *k = j->c->k;
    const attn_params *p = j->p;
    const kv_cache *kv = j->kv;
    int group = p->n_head / p->n_kv_head, hd = p->head_dim;
    int64_t total = (int64_t)p->n_kv_head * j->n_qblocks, lo, hi;
    split_range(total, ith, nth, 1, &lo, &hi);
    float *scratch = j->c->scores[ith];
    int n_max = j->n_past + j->n;                     // the longest causal context of this pass
    float *ktile = scratch, *vtile = ktile + ATT_TS * hd;
    float *mass = vtile + ATT_TS * hd;                // (n_head, n_max) when tracking
    float *sc = mass + (j->track ? (size_t)p->n_head * n_max : 0);   // (ATT_QB, group, n_max)
    for (int64_t job = lo; job < hi; job++) {
        int kvh = (int)(job / j->n_qblocks), t0 = (int)(job % j->n_qblocks) * ATT_QB;
        int t1 = t0 + ATT_QB < j->n ? t0 + ATT_QB : j->n;
        int ctx_hi = j->n_past + t1;                  // slots any token of the block sees
        // a window layer: the block's first token sees nothing below window_first(t0), the others
        // less; tiles wholly below it are skipped, the rest of each row's past masked
        int tile0 = window_first(p, j->n_past + t0 + 1) / ATT_TS * ATT_TS;
        const uint8_t *mask = kv->mask ? kv->mask + ((size_t)j->layer * p->n_kv_head + kvh) * kv->n_ctx : NULL;
        // scores, one tile of keys at a time (channel-major, rotated: engine/cpu/attn_kv.c); the
        // group's query heads share each tile
        for (int s0 = tile0; s0 < ctx_hi; s0 += ATT_TS) {
            int ns = ctx_hi - s0 < ATT_TS ? ctx_hi - s0 : ATT_TS;
            attn_kv_keys_t(k, kv, j->layer, kvh, hd, s0, ns, ktile, ATT_TS);
            for (int t = t0; t < t1; t++) {
                int ctx_t = j->n_past + t + 1, nt = ctx_t - s0 < ns ? ctx_t - s0 : ns;
                if (nt <= 0) continue;
                const float *q = j->q->data + (int64_t)t * j->q->cols + (int64_t)kvh * group * hd;
                float *rows = sc + (size_t)(t - t0) * group * n_max + s0;
                k->attn_scores_t(q, group, ktile, ATT_TS, nt, hd, p->scale, rows, n_max);
                if (p->softcap > 0.0f) softcap_rows(rows, group, n_max, nt, p->softcap);
                if (mask)
                    for (int g = 0; g < group; g++)
                        for (int i = 0; i < nt; i++)
                            if (mask[s0 + i]) rows[(size_t)g * n_max + i] = -INFINITY;
            }
        }
        for (int t = t0; t < t1; t++) {
            int ctx_t = j->n_past + t + 1, first = window_first(p, ctx_t);
            for (int g = 0; g < group; g++) {
                int h = kvh * group + g;
                float *row = sc + ((size_t)(t - t0) * group + g) * n_max;
                for (int s = 0; s < first; s++) row[s] = -INFINITY;
                k->softmax(row, ctx_t);
                if (j->track) {
                    float *m = mass + (size_t)h * n_max;
                    for (int s = 0; s < ctx_t; s++) m[s] += row[s];
                    if (t == j->n - 1)
                        memcpy(kv->last + ((size_t)j->layer * p->n_head + h) * kv->n_ctx, row, (size_t)ctx_t * sizeof(float));
                }
            }
            memset(j->out->data + (int64_t)t * j->out->cols + (int64_t)kvh * group * hd, 0, (size_t)group * hd * sizeof(float));
        }
        // values, one tile at a time, accumulated into the group's output rows (straight from the
        // store; quantized rows made float rows once when a block of queries shares the tile)
        for (int s0 = tile0; s0 < ctx_hi; s0 += ATT_TS) {
            int ns = ctx_hi - s0 < ATT_TS ? ctx_hi - s0 : ATT_TS;
            int nrows = attn_kv_values_tile(k, kv, j->layer, kvh, hd, s0, ns, vtile, t1 - t0 > 1);
            for (int t = t0; t < t1; t++) {
                int ctx_t = j->n_past + t + 1, nt = ctx_t - s0 < ns ? ctx_t - s0 : ns;
                if (nt <= 0) continue;
                attn_kv_values(k, kv, j->layer, kvh, hd, s0, nt, sc + (size_t)(t - t0) * group * n_max + s0, n_max,
                               group, j->out->data + (int64_t)t * j->out->cols + (int64_t)kvh * group * hd, vtile, nrows);
            }
        }
    }
}

static void cpu_attention(backend *b, const bk_act *q, kv_cache *kv, int layer, int n, int n_past,
                          const attn_params *p, bk_act *out) {
    cpu_backend *c = CPU(b);
    double t0 = prof_begin(c);
    int n_max = n_past + n, group = p->n_head / p->n_kv_head;
    bool track = kv->track && kv->mass && kv->shape.n_head == p->n_head;
    int qb = n < ATT_QB ? n : ATT_QB;
    size_t need = (size_t)2 * ATT_TS * p->head_dim + (size_t)qb * group * n_max +
                  (track ? (size_t)p->n_head * n_max : 0);
    if (need > (size_t)c->scores_len) {
        bool ok = true;
        for (int i = 0; i < c->n_threads; i++) {
            free(c->scores[i]);
            c->scores[i] = ok ? try_malloc(need * sizeof(float)) : NULL;
            ok = ok && c->scores[i];
        }
        c->scores_len = ok ? (int)need : 0;
        if (!ok) {
            snprintf(c->oom, sizeof c->oom, "cpu: out of memory for the attention scores (%zu bytes a thread)",
                     need * sizeof(float));
            prof_end(c, OP_ATTENTION, t0);
            return;
        }
    }
    int n_threads = c->n_threads;
    if (track)
        for (int i = 0; i < n_threads; i++)
            memset(c->scores[i] + 2 * ATT_TS * p->head_dim, 0, (size_t)p->n_head * n_max * sizeof(float));
    attn_job j = { c, q, kv, layer, n, n_past, p, out, (n + ATT_QB - 1) / ATT_QB, track };
    threadpool_run(c->pool, attn_worker, &j);
    if (track) {
        for (int h = 0; h < p->n_head; h++) {
            float *dst = kv->mass + ((size_t)layer * p->n_head + h) * kv->n_ctx;
            for (int i = 0; i < n_threads; i++) {
                const float *src = c->scores[i] + 2 * ATT_TS * p->head_dim + (size_t)h * n_max;
                for (int s = 0; s < n_max; s++) dst[s] += src[s];
            }
        }
        kv->last_n = n_max;
    }
    prof_end(c, OP_ATTENTION, t0);
}

// GELU with the tanh approximation: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
static inline float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

typedef struct glu_job {
    bk_act *gate;
    const bk_act *up;
    int n, act;
} glu_job;

// A share of the n x cols elements (whole rows when there are several, else a share of the one).
static void glu_worker(void *ctx, int ith, int nth) {
    glu_job *j = ctx;
    const int64_t cols = j->gate->cols, total = (int64_t)j->n * cols;
    int64_t lo, hi;
    split_range(total, ith, nth, j->n > 1 ? cols : 16, &lo, &hi);
    float *g = j->gate->data;
    const float *u = j->up->data;
    if (j->act == GLU_GELU_TANH)
        for (int64_t i = lo; i < hi; i++) g[i] = gelu_tanh(g[i]) * u[i];
    else
        for (int64_t i = lo; i < hi; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

// gate = act(gate) * up, row by row; the rows of both are contiguous (cols floats each).
static void cpu_glu(backend *b, bk_act *gate, const bk_act *up, int n, int act) {
    double t0 = prof_begin(CPU(b));
    glu_job j = { gate, up, n, act };
    threadpool_run(CPU(b)->pool, glu_worker, &j);
    prof_end(CPU(b), OP_GLU, t0);
}

static void cpu_scale(backend *b, bk_act *x, float s, int n) {
    double t0 = prof_begin(CPU(b));
    for (int64_t i = 0; i < (int64_t)n * x->cols; i++) x->data[i] *= s;
    prof_end(CPU(b), OP_SCALE, t0);
}

static void cpu_add(backend *b, bk_act *x, const bk_act *y, int n) {
    double t0 = prof_begin(CPU(b));
    for (int t = 0; t < n; t++) {
        float *a = x->data + (int64_t)t * x->cols;
        const float *bb = y->data + (int64_t)t * y->cols;
        for (int64_t i = 0; i < x->cols; i++) a[i] += bb[i];
    }
    prof_end(CPU(b), OP_ADD, t0);
}

static void cpu_set_profiling(backend *b, bool on) { CPU(b)->profiling = on; }
static void cpu_profile_read(backend *b, double secs[OP_COUNT], uint64_t calls[OP_COUNT]) {
    memcpy(secs, CPU(b)->op_secs, sizeof CPU(b)->op_secs);
    memcpy(calls, CPU(b)->op_calls, sizeof CPU(b)->op_calls);
}
static void cpu_profile_reset(backend *b) {
    memset(CPU(b)->op_secs, 0, sizeof CPU(b)->op_secs);
    memset(CPU(b)->op_calls, 0, sizeof CPU(b)->op_calls);
}

static void cpu_destroy(backend *b) {
    cpu_backend *c = CPU(b);
    threadpool_free(c->pool);
    for (int i = 0; i < c->n_threads; i++) free(c->scores[i]);
    free(c->scores);
    free(c->qbuf);
    pack_arena_destroy(&c->arena);
    free(c->packs);
    free(c);
    free(b);
}

static backend *cpu_create(const backend_opts *o, errbuf *err) {
    return backend_cpu_new(o->n_threads, o->kernels ? o->kernels : "auto", err);
}

static backend *cpu_scalar_create(const backend_opts *o, errbuf *err) {
    return backend_cpu_new(o->n_threads, "scalar", err);
}

const backend_info backend_cpu_info = {
    .name = "cpu",
    .summary = "the processor: the fastest kernel set it runs (avx512, avx2, scalar; --kernels)",
    .caps = BACKEND_CAP_HOST_WEIGHTS | BACKEND_CAP_HOST_KV,
    .create = cpu_create,
};

const backend_info backend_cpu_scalar_info = {
    .name = "cpu-scalar",
    .summary = "the processor, scalar kernels: the reference every faster path is tested against",
    .caps = BACKEND_CAP_HOST_WEIGHTS | BACKEND_CAP_HOST_KV,
    .create = cpu_scalar_create,
};

backend *backend_cpu_new(int n_threads, const char *kernels, errbuf *err) {
    const cpu_kernels *k = cpu_kernels_select(kernels);
    if (!k) {
        const char *env = getenv("CABIN_KERNELS");
        const char *want = (!kernels || strcmp(kernels, "auto") == 0) && env && *env ? env : kernels ? kernels : "auto";
        err_set(err, "cpu backend: kernel set '%s'%s is unknown or cannot run on this processor (auto, avx512, avx2, scalar)",
                want, want == env ? " (from CABIN_KERNELS)" : "");
        return NULL;
    }
    if (n_threads <= 0) n_threads = default_threads();
    if (n_threads > 256) n_threads = 256;
    cpu_backend *c = xcalloc(1, sizeof *c);
    c->k = k;
    c->n_threads = n_threads;
    c->pool = threadpool_new(n_threads);
    c->scores = xcalloc((size_t)n_threads, sizeof(float *));
    backend *b = xcalloc(1, sizeof *b);
    const backend_info *row = strcmp(k->name, "scalar") == 0 ? &backend_cpu_scalar_info : &backend_cpu_info;
    b->name = row->name;
    b->caps = row->caps;
    snprintf(b->description, sizeof b->description, "cpu %s, %d thread%s", k->name, n_threads,
             n_threads == 1 ? "" : "s");
    b->impl = c;
    b->weight_prepare = cpu_weight_prepare;
    b->weight_release = cpu_weight_release;
    b->weight_keeps_own = cpu_weight_keeps_own;
    b->weight_holds_own = cpu_weight_holds_own;
    b->supports_type = cpu_supports_type;
    for (int t = 0; t < WT_COUNT; t++)
        if (k->matmul[t] && k->act_format[t] == ACT_BF16) b->act_bf16_types |= 1ull << t;
        else if (k->matmul[t] && k->act_format[t] != ACT_F32) {
            b->act_q8_types |= 1ull << t;
            if (k->act_format[t] == ACT_Q8_K) b->act_q8k_types |= 1ull << t;
        }
    b->act_new = cpu_act_new;
    b->act_free = cpu_act_free;
    b->act_rows = cpu_act_rows;
    b->act_read = cpu_act_read;
    b->act_write = cpu_act_write;
    b->kv_prepare = cpu_kv_prepare;
    b->kv_release = cpu_kv_release;
    b->begin_batch = cpu_begin_batch;
    b->end_batch = cpu_end_batch;
    b->embed = cpu_embed;
    b->rmsnorm = cpu_rmsnorm;
    b->matmul = cpu_matmul;
    b->add_bias = cpu_add_bias;
    b->rope = cpu_rope;
    b->kv_store = cpu_kv_store;
    b->attention = cpu_attention;
    b->glu = cpu_glu;
    b->add = cpu_add;
    b->scale = cpu_scale;
    b->set_profiling = cpu_set_profiling;
    b->profile_read = cpu_profile_read;
    b->profile_reset = cpu_profile_reset;
    b->destroy = cpu_destroy;
    return b;
}
