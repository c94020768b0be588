// Tiles of the KV cache for the CPU attention (layout: engine/kv_cache.h, docs/KV.md).
//
// Keys. Q8/Q4 keys are stored per channel, a group's codes of one channel contiguous along
// its KV_GROUP slots; a key tile is built CHANNEL-major (kt: (hd, ns)) so that dequantization
// (kq_tile), RoPE by slot (rope_t, with the slot-major table kv->rope_t) and the scores
// (attn_scores_t) all run along slots, 16 per vector, without horizontal sums. F16 rows (the
// F16 format, and the recent key window of Q8/Q4) are transposed into the same form
// (f16_rows_t), so every format shares one scoring path.
//
// Values. Q8/Q4 values are stored per slot (groups of gv channels with one (scale, min)); a
// single query sums them straight from the codes (attn_values_q: o += (p*scale)*code, plus
// p*min once per slot and group); a block of queries (prefill) has them dequantized once into
// float rows. F16 rows (the format, the value ring) are summed as they are loaded
// (attn_values_f16), with no float copy.
#include "engine/cpu/attn_kv.h"

#include <string.h>


// Layer l's slot-major cos/sin table from slot s on (NULL without RoPE).
static const float *rope_at(const kv_cache *kv, int l, int s) {
    const float *t = kv_layer_rope_t(kv, l);
    return t ? t + s : NULL;
}

// Of slots [s, s + n) of a plain layer, how many lie in consecutive rows from slot s's (a
// ring wraps to row 0).
static int plain_run(const kv_cache *kv, int l, int s, int n) {
    int ring = kv_layer_ring(kv, l);
    if (!ring) return n;
    int left = ring - s % ring;
    return left < n ? left : n;
}

void attn_kv_keys_t(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                    float *kt, int64_t ldt) {
    const size_t D = (size_t)kv->kv_dim, c0 = (size_t)kvh * hd;
    const int half = kv_layer_rope_t(kv, l) ? kv->rope[0].rope_dim / 2 : 0, neox = kv->shape.rope_neox;
    const enum kv_format lf = kv_layer_format(kv, l);
    if (lf == KV_F16) {   // transposed and rotated in one pass, a run of consecutive rows at a time
        for (int i = 0, run; i < ns; i += run) {
            run = plain_run(kv, l, s0 + i, ns - i);
            k->f16_rows_t((const uint16_t *)kv->k[l] + kv_plain_row(kv, l, s0 + i) * D + c0, (int64_t)D, run, hd,
                          rope_at(kv, l, s0 + i), kv->n_ctx, half, neox, kt + i, ldt);
        }
        return;
    }
    if (lf == KV_F32) {   // rarely used: a plain transposition, then RoPE
        for (int i = 0; i < ns; i++) {
            const float *r = (const float *)kv->k[l] + kv_plain_row(kv, l, s0 + i) * D + c0;
            for (int c = 0; c < hd; c++) kt[c * ldt + i] = r[c];
        }
        if (half > 0) k->rope_t(rope_at(kv, l, s0), kv->n_ctx, half, neox, ns, kt, ldt);
        return;
    }
    // the quantized store, one key group at a time (dequantized and rotated in one pass): channel
    // ch of group g has its (scale, min) at kp + (g*D + ch)*2 and its KV_GROUP codes from code
    // number (g*D + ch)*KV_GROUP on
    const int bits = kv_format_code_bits(kv->format), nq = kv->nq[l], s1 = s0 + ns;
    const size_t cstride = kv_format_code_bytes(kv->format, KV_GROUP);
    int s = s0;
    while (s < s1 && s < nq) {
        int g = s / KV_GROUP, i0 = s - g * KV_GROUP, e = (g + 1) * KV_GROUP;
        if (e > s1) e = s1;
        if (e > nq) e = nq;
        size_t ch = (size_t)g * D + c0;
        k->kq_tile(kv->kq[l] + ch * cstride, cstride, bits, i0, kv->kp[l] + ch * 2, hd, e - s, rope_at(kv, l, s),
                   kv->n_ctx, half, neox, kt + (s - s0), ldt);
        s = e;
    }
    if (s < s1)   // the recent F16 window: row r holds slot nq + r
        k->f16_rows_t((const uint16_t *)kv->k[l] + (size_t)(s - nq) * D + c0, (int64_t)D, s1 - s, hd, rope_at(kv, l, s),
                      kv->n_ctx, half, neox, kt + (s - s0), ldt);
}

int attn_kv_values_tile(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                        float *vtile, int many) {
    const size_t c0 = (size_t)kvh * hd;
    const enum kv_format lf = kv_layer_format(kv, l);
    if (lf == KV_F32) {
        kv_cache_read(kv, l, 1, s0, s0 + ns, (int)c0, hd, vtile, hd, NULL);
        return ns;
    }
    if (!kv_format_quantized(lf) || !many) return 0;
    int nquant = kv->nqv[l] - s0 < 0 ? 0 : kv->nqv[l] - s0 > ns ? ns : kv->nqv[l] - s0;
    // each quantized row "summed" once with weight 1 into zeros
    const float one = 1.0f;
    memset(vtile, 0, (size_t)nquant * hd * sizeof(float));
    for (int i = 0; i < nquant; i++) attn_kv_values_q(k, kv, l, kvh, hd, s0 + i, 1, &one, 1, 1, vtile + (size_t)i * hd, hd);
    return nquant;
}

void attn_kv_values(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int nt,
                    const float *p, int64_t ldp, int G, float *o, const float *vtile, int nrows) {
    const size_t D = (size_t)kv->kv_dim, c0 = (size_t)kvh * hd;
    int i = nrows < nt ? nrows : nt;
    if (i > 0) k->attn_values(p, ldp, G, vtile, i, hd, o);
    if (i >= nt) return;
    const uint16_t *rows = (const uint16_t *)kv->v[l] + c0;
    if (kv_layer_format(kv, l) == KV_F16) {   // a run of consecutive rows at a time
        for (int run; i < nt; i += run) {
            run = plain_run(kv, l, s0 + i, nt - i);
            k->attn_values_f16(p + i, ldp, G, rows + kv_plain_row(kv, l, s0 + i) * D, (int64_t)D, run, hd, o);
        }
        return;
    }
    int e = kv->nqv[l] - s0 < nt ? kv->nqv[l] - s0 : nt;   // the quantized store ends at slot nqv
    if (i < e) {
        attn_kv_values_q(k, kv, l, kvh, hd, s0 + i, e - i, p + i, ldp, G, o, hd);
        i = e;
    }
    while (i < nt) {   // the value ring, slot s at row s % vcap: runs of consecutive rows
        int r = (s0 + i) % kv->vcap, run = kv->vcap - r < nt - i ? kv->vcap - r : nt - i;
        k->attn_values_f16(p + i, ldp, G, rows + (size_t)r * D, (int64_t)D, run, hd, o);
        i += run;
    }
}

void attn_kv_values_q(const cpu_kernels *k, const kv_cache *kv, int l, int kvh, int hd, int s0, int ns,
                      const float *p, int64_t ldp, int G, float *o, int64_t ldo) {
    // slot s: codes at vq + s*rb (rb bytes per row), group g's (scale, min) at vp + (s*ng + g)*2;
    // a head's channels may straddle value groups, so they go in runs within one group
    const int bits = kv_format_code_bits(kv->format), gv = kv->gv, ng = kv->kv_dim / gv;
    const size_t rb = kv_format_code_bytes(kv->format, (size_t)kv->kv_dim);
    const uint8_t *codes = kv->vq[l] + (size_t)s0 * rb;
    for (int c = 0; c < hd;) {
        int ch = kvh * hd + c, g = ch / gv, e = (g + 1) * gv - kvh * hd;
        if (e > hd) e = hd;
        k->attn_values_q(p, ldp, G, codes, rb, bits, ch, kv->vp[l] + ((size_t)s0 * ng + g) * 2, (int64_t)ng * 2, ns,
                         e - c, o + c, ldo);
        c = e;
    }
}
