// The KV ops on the device copy of the cache (vk_kv.c; layout: shaders/kvq.glsl).
//   kv_store  writes a batch's keys (un-rotated) and values; for q8/q4 it first folds what leaves
//             the F16 windows into the quantized store, as kv_cache_put does token by token: the
//             host replays kv_cache_put's bookkeeping to learn which key groups and value slots
//             fold in this batch, records the folds, and advances kv->nq / kv->nqv.
//   attention reads every format directly (quantized codes dequantized in the shader), rotates
//             keys by slot, masks what the entropy policy hid, and, when an h2o/entropy policy
//             needs them, gathers the attention statistics (kv->mass, kv->last) on the device.
// Push-constant structs mirror the shaders' `PC` blocks.
#include "vulkan/vk.h"

#include <string.h>

#define GROUPS(n, per) ((uint32_t)(((n) + (per) - 1) / (per)))

static vk_bind whole(const vk_buf *b, bool write) { return (vk_bind){ b->buf, 0, VK_WHOLE_SIZE, write }; }

// shaders/kvq.glsl KV_PC_FIELDS
typedef struct kv_pc {
    uint32_t off_k, off_v, off_kq, off_kp, off_vq, off_vp, kv_dim, nq, nqv, vcap, gv, ring;
} kv_pc;

// Layer l's fields: its sections (a ring's, or the cache format's) and counters.
static kv_pc kv_fields(const vk_kv *k, const kv_cache *kv, int l) {
    bool q = kv_format_quantized(kv_layer_format(kv, l));
    const uint32_t *off = k->off[kv_layer_ring(kv, l) ? 1 : 0];
    return (kv_pc){ off[VKS_K], off[VKS_V], off[VKS_KQ], off[VKS_KP], off[VKS_VQ], off[VKS_VP],
                    (uint32_t)kv->kv_dim, q ? (uint32_t)kv->nq[l] : 0u, q ? (uint32_t)kv->nqv[l] : 0u,
                    (uint32_t)(kv->vcap > 0 ? kv->vcap : 1), (uint32_t)(kv->gv > 0 ? kv->gv : 2),
                    (uint32_t)kv_layer_ring(kv, l) };
}

static bool rows_ok(vk_backend *v, const bk_act *a, int n, const char *op) {
    if (!a || n > a->rows) {
        vk_fail(v, "vulkan: %s: %d rows do not fit the activation (%lld rows)", op, n, a ? (long long)a->rows : 0LL);
        return false;
    }
    return true;
}

// ---- kv_store ----

typedef struct store_pc {
    kv_pc kv;
    uint32_t k_stride, v_stride, s0, nq0, nqv0, copy_src, copy_dst, copy_words, copy_dir;
} store_pc;

enum { MODE_STORE, MODE_FOLD_K, MODE_FOLD_V, MODE_COPY };

// kv_cache_put's window bookkeeping (kv_fold_counters) for slots s0 .. s0+n-1 of layer l: the key and value
// counters after the batch (nq1, nqv1). False (batch failed) if the batch cannot be appended.
static bool fold_plan(vk_backend *v, const kv_cache *kv, int l, const int32_t *slots, int n, int *nq1, int *nqv1) {
    int s0 = slots[0], nq = kv->nq[l], nqv = kv->nqv[l];
    for (int t = 1; t < n; t++)
        if (slots[t] != s0 + t) {
            vk_fail(v, "vulkan: kv_store: a %s cache takes consecutive slots (slot %d after %d)",
                    kv_format_name(kv->format), slots[t], slots[t - 1]);
            return false;
        }
    if (s0 < nq || s0 < nqv) {
        vk_fail(v, "vulkan: kv_store: slot %d would rewrite the quantized store (%d key, %d value slots in it); the "
                "device copy only appends", s0, nq, nqv);
        return false;
    }
    for (int s = s0; s < s0 + n; s++) {
        kv_fold_counters(kv, s, &nq, &nqv);
        if (s - nq >= kv->res_cap) {
            vk_fail(v, "vulkan: kv_store: slot %d does not fit the key window (%d rows)", s, kv->res_cap);
            return false;
        }
    }
    *nq1 = nq;
    *nqv1 = nqv;
    return true;
}

// Records the folds of a q8/q4 batch (before its store) and advances the counters.
static void record_folds(vk_backend *v, kv_cache *kv, vk_kv *kd, int l, vk_bind bind[5], store_pc *pc, int n,
                         const int32_t *slots) {
    int nq1, nqv1, nq0 = kv->nq[l], nqv0 = kv->nqv[l], s0 = slots[0], f = kv->format;
    uint32_t hw = (uint32_t)kv->kv_dim / 2;
    if (!fold_plan(v, kv, l, slots, n, &nq1, &nqv1)) return;
    pc->s0 = (uint32_t)s0;
    pc->nq0 = (uint32_t)nq0;
    pc->nqv0 = (uint32_t)nqv0;
    if (nq1 > nq0) {
        vk_dispatch(v, &v->kv_store[f][MODE_FOLD_K], bind, 5, pc, sizeof *pc, GROUPS(kv->kv_dim, 64),
                    (uint32_t)((nq1 - nq0) / KV_GROUP), 1);
        int keep = s0 - nq1;   // old window rows that stay (slots [nq1, s0)) move to the window's start
        if (keep > 0) {
            uint32_t words = (uint32_t)keep * hw;
            if (!vk_scratch(v, &v->kv_scratch, (VkDeviceSize)words * 4)) return;
            vk_bind cb[5] = { bind[0], bind[1], bind[2], bind[3], whole(&v->kv_scratch, true) };
            store_pc cp = *pc;
            cp.copy_words = words;
            cp.copy_src = kd->off[0][VKS_K] + (uint32_t)(nq1 - nq0) * hw;
            cp.copy_dst = 0;
            cp.copy_dir = 0;
            vk_dispatch(v, &v->kv_store[f][MODE_COPY], cb, 5, &cp, sizeof cp, GROUPS(words, 64), 1, 1);
            cp.copy_src = 0;
            cp.copy_dst = kd->off[0][VKS_K];
            cp.copy_dir = 1;
            vk_dispatch(v, &v->kv_store[f][MODE_COPY], cb, 5, &cp, sizeof cp, GROUPS(words, 64), 1, 1);
        }
    }
    if (nqv1 > nqv0)
        vk_dispatch(v, &v->kv_store[f][MODE_FOLD_V], bind, 5, pc, sizeof *pc, (uint32_t)(nqv1 - nqv0), 1, 1);
    kv->nq[l] = nq1;
    kv->nqv[l] = nqv1;
    pc->kv.nq = (uint32_t)nq1;
    pc->kv.nqv = (uint32_t)nqv1;
}

void vk_op_kv_store(backend *b, kv_cache *kv, int layer, const bk_act *k, const bk_act *val, int n,
                    const int32_t *slots) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !rows_ok(v, k, n, "kv_store") || !rows_ok(v, val, n, "kv_store")) return;
    vk_kv *kd = vk_kv_of(v, kv);
    if (!kd) return;
    if (layer < 0 || layer >= kd->n_layer || k->cols < kv->kv_dim || val->cols < kv->kv_dim || kv->kv_dim % 2) {
        vk_fail(v, "vulkan: kv_store: layer %d or width %d does not fit the cache", layer, kv->kv_dim);
        return;
    }
    for (int t = 0; t < n; t++)
        if (slots[t] < 0 || slots[t] >= kv->n_ctx) { vk_fail(v, "vulkan: kv_store: slot %d out of range", slots[t]); return; }
    vk_bind sb;
    if (!vk_upload(v, slots, (size_t)n * sizeof *slots, &sb)) return;
    if (slots[0] == 0) kd->mask_n = 0;   // a new sequence (the cache was cleared): nothing is masked
    store_pc pc;
    memset(&pc, 0, sizeof pc);
    pc.kv = kv_fields(kd, kv, layer);
    pc.k_stride = (uint32_t)k->cols;
    pc.v_stride = (uint32_t)val->cols;
    vk_bind bind[5] = { whole(&k->buf, false), whole(&val->buf, false), whole(&kd->L[layer], true), sb, sb };
    vk_prof_begin(v);
    const enum kv_format f = kv_layer_format(kv, layer);   // a ring: plain rows
    if (kv_format_quantized(f)) record_folds(v, kv, kd, layer, bind, &pc, n, slots);
    vk_dispatch(v, &v->kv_store[f][MODE_STORE], bind, 5, &pc, sizeof pc, GROUPS(kv->kv_dim / 2, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_KV_STORE);
}

// ---- attention ----

typedef struct attn_pc {
    kv_pc kv;
    uint32_t n_past, n_tok, head_dim, n_head, group, q_stride, out_stride;
    float scale;
    uint32_t span, half, neox, rope, use_mask, mask_n, layer, n_ctx, last_off;
    uint32_t window, rope_off;   // attn_params.window (0: none); floats before the layer's rope table
    float softcap;               // attn_params.softcap (0: none)
} attn_pc;

void vk_op_attention(backend *b, const bk_act *q, kv_cache *kv, int layer, int n, int n_past,
                     const attn_params *p, bk_act *out) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !rows_ok(v, q, n, "attention") || !rows_ok(v, out, n, "attention")) return;
    vk_kv *kd = vk_kv_of(v, kv);
    if (!kd) return;
    int64_t q_dim = (int64_t)p->n_head * p->head_dim;
    if (layer < 0 || layer >= kd->n_layer || p->head_dim > 256 || p->head_dim % 2 || p->n_kv_head < 1 ||
        p->n_head % p->n_kv_head || (int64_t)p->n_kv_head * p->head_dim != kv->kv_dim || q->cols < q_dim ||
        out->cols < q_dim || n_past < 0 || n_past + n > kv->n_ctx) {
        vk_fail(v, "vulkan: attention: layer %d, %d/%d heads of %d, %d past + %d do not fit (head size <= 256)",
                layer, p->n_head, p->n_kv_head, p->head_dim, n_past, n);
        return;
    }
    // Keys are rotated by slot with the cache's table when the cache knows the rope shape
    // (model_forward sets it; a bare cache has none and uses keys as stored).
    vk_bind rb;
    if (!vk_kv_rope(v, kv, kd, &rb)) return;
    int rd = kv_layer_rope_cs(kv, layer) && kv->shape.head_dim == p->head_dim ? kd->rope_freqs[0].rope_dim : 0;
    // this layer's table: the second one follows the first (vk_kv_rope)
    uint32_t rope_off = rd && kv->layer_rope && kv->layer_rope[layer] ? (uint32_t)((size_t)kv->n_ctx * (size_t)rd) : 0u;
    bool stats = kv->track && kv->mass && kv->last && kv->shape.n_head == p->n_head &&
                 (kv->policy.kind == KVP_H2O || kv->policy.kind == KVP_ENTROPY);
    if (stats && !vk_kv_stats(v, kv, kd, p->n_head)) return;
    bool mask = kv->mask && kd->mask.buf && kd->mask_n > 0 && kv->shape.n_kv_head == p->n_kv_head;
    vk_bind mb = mask ? whole(&kd->mask, false) : rb;
    if (!vk_scratch(v, &v->attn_ml, (VkDeviceSize)n * p->n_head * 2 * sizeof(float))) return;
    int n_ctx = n_past + n;
    // Split the context across workgroups when there are few (token, head) pairs to spread
    // over the device and many slots (decoding a long context).
    int nz = 1;
    if (v->attn_split_force > 0) nz = v->attn_split_force;
    else if ((int64_t)n * p->n_head < 32 && n_ctx >= 512) nz = (n_ctx + 255) / 256;
    if (nz > 64) nz = 64;
    if (nz > n_ctx) nz = n_ctx;
    attn_pc pc = { kv_fields(kd, kv, layer), (uint32_t)n_past, (uint32_t)n, (uint32_t)p->head_dim, (uint32_t)p->n_head,
                   (uint32_t)(p->n_head / p->n_kv_head), (uint32_t)q->cols, (uint32_t)out->cols, p->scale,
                   (uint32_t)((n_ctx + nz - 1) / nz), (uint32_t)(rd / 2), kv->shape.rope_neox ? 1u : 0u, rd ? 1u : 0u,
                   mask ? 1u : 0u, (uint32_t)(mask ? kd->mask_n : 0), (uint32_t)layer, (uint32_t)kv->n_ctx,
                   (uint32_t)((size_t)kv->n_layer * (size_t)p->n_head * (size_t)kv->n_ctx),
                   (uint32_t)(p->window > 0 ? p->window : 0), rope_off, p->softcap > 0.0f ? p->softcap : 0.0f };
    int f = kv_layer_format(kv, layer);
    vk_bind ml = whole(&v->attn_ml, true);
    vk_prof_begin(v);
    if (nz == 1) {
        vk_bind bind[6] = { whole(&q->buf, false), whole(&kd->L[layer], false), rb, mb, whole(&out->buf, true), ml };
        vk_dispatch(v, &v->attention[f][0], bind, 6, &pc, sizeof pc, (uint32_t)p->n_head, (uint32_t)n, 1);
    } else {
        VkDeviceSize bytes = (VkDeviceSize)n * p->n_head * nz * (p->head_dim + 2) * sizeof(float);
        if (!vk_scratch(v, &v->attn_scratch, bytes)) return;
        vk_bind bind[6] = { whole(&q->buf, false), whole(&kd->L[layer], false), rb, mb, whole(&v->attn_scratch, true),
                            ml };
        vk_dispatch(v, &v->attention[f][1], bind, 6, &pc, sizeof pc, (uint32_t)p->n_head, (uint32_t)n, (uint32_t)nz);
        struct { uint32_t head_dim, n_head, nz, out_stride; } cp = {
            (uint32_t)p->head_dim, (uint32_t)p->n_head, (uint32_t)nz, (uint32_t)out->cols };
        vk_bind cb[3] = { whole(&v->attn_scratch, false), whole(&out->buf, true), ml };
        vk_dispatch(v, &v->attn_combine, cb, 3, &cp, sizeof cp, (uint32_t)p->n_head, (uint32_t)n, 1);
    }
    if (stats) {   // weights of every slot under every query token: mass += , last =
        vk_bind bind[6] = { whole(&q->buf, false), whole(&kd->L[layer], false), rb, mb, whole(&kd->stats, true),
                            whole(&v->attn_ml, false) };
        vk_dispatch(v, &v->attn_stats[f], bind, 6, &pc, sizeof pc, (uint32_t)p->n_head, GROUPS(n_ctx, 64), 1);
        kv->last_n = n_ctx;
    }
    vk_prof_end(v, OP_ATTENTION);
}
