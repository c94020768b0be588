// The quantized weight types beyond Q4_0/Q8_0 (Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K..Q6_K):
// each dequantization on hand-made blocks (known scales, mins and codes, packed here from the
// GGUF layout's description: known values), every quantized type's codes (the one decoding its
// dequantization is derived from) against what the header promises, the Q8_K activation
// quantizer on known rows, and each type's CPU matmul kernel (engine/cpu/kernels_dequant_avx2.c)
// against the double dot product of the dequantized weights and the dequantized 8-bit
// activations on random blocks.
#include "test.h"
#include "rng.h"
#include "base/base.h"
#include "engine/cpu/kernels.h"
#include "engine/half.h"
#include "engine/wtype.h"
#include "engine/wtype_codes.h"

#include <math.h>

static int same(const float *got, const float *want, int n, const char *what) {
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s: weight %d: %g, expected %g", what, i, got[i], want[i]);
            return 0;
        }
    CHECK(1, "%s", what);
    return 1;
}

static void check_legacy(void) {
    float got[256], want[256];
    block_q4_1 a = { f32_to_fp16(0.5f), f32_to_fp16(-1.0f), { 0 } };
    for (int j = 0; j < 16; j++) {
        a.qs[j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = 0.5f * (float)j - 1.0f;
        want[j + 16] = 0.5f * (float)(15 - j) - 1.0f;
    }
    dequantize_row_q4_1(&a, got, 32);
    same(got, want, 32, "Q4_1: d*q + m");

    block_q5_0 b = { f32_to_fp16(0.25f), { 0 }, { 0 } };   // 5th bit set for even weights
    uint32_t qh = 0;
    for (int i = 0; i < 32; i += 2) qh |= 1u << i;
    memcpy(b.qh, &qh, 4);   // little-endian, as the file has it
    for (int j = 0; j < 16; j++) {
        b.qs[j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = 0.25f * (float)(j + (j % 2 ? 0 : 16) - 16);
        want[j + 16] = 0.25f * (float)(15 - j + ((j + 16) % 2 ? 0 : 16) - 16);
    }
    dequantize_row_q5_0(&b, got, 32);
    same(got, want, 32, "Q5_0: d*(q - 16), 5th bit from qh");

    block_q5_1 c = { f32_to_fp16(1.0f), f32_to_fp16(0.5f), { 0 }, { 0 } };
    memcpy(c.qh, &qh, 4);
    for (int j = 0; j < 16; j++) {
        c.qs[j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(j + (j % 2 ? 0 : 16)) + 0.5f;
        want[j + 16] = (float)(15 - j + (j % 2 ? 0 : 16)) + 0.5f;
    }
    dequantize_row_q5_1(&c, got, 32);
    same(got, want, 32, "Q5_1: d*q + m");

    block_iq4_nl e = { f32_to_fp16(2.0f), { 0 } };
    for (int j = 0; j < 16; j++) {
        e.qs[j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = 2.0f * (float)iq4_levels[j];
        want[j + 16] = 2.0f * (float)iq4_levels[15 - j];
    }
    dequantize_row_iq4_nl(&e, got, 32);
    same(got, want, 32, "IQ4_NL: d*level[q]");
    CHECK(iq4_levels[0] == -127 && iq4_levels[8] == 1 && iq4_levels[15] == 113, "IQ4 grid");

    // IQ4_XS: sub-block s has ls = 32 + 3s - 10 (6 bits: low nibble in scales_l, high 2 in scales_h)
    block_iq4_xs x;
    memset(&x, 0, sizeof x);
    x.d = f32_to_fp16(0.5f);
    for (int s = 0; s < 8; s++) {
        int ls = 32 + 3 * s - 10;
        x.scales_l[s / 2] |= (uint8_t)((ls & 15) << 4 * (s % 2));
        x.scales_h |= (uint16_t)((ls >> 4) << 2 * s);
        for (int j = 0; j < 16; j++) {
            x.qs[16 * s + j] = (uint8_t)((s + j) % 16 | ((s * j) % 16) << 4);
            want[32 * s + j] = 0.5f * (float)(ls - 32) * (float)iq4_levels[(s + j) % 16];
            want[32 * s + j + 16] = 0.5f * (float)(ls - 32) * (float)iq4_levels[(s * j) % 16];
        }
    }
    dequantize_row_iq4_xs(&x, got, 256);
    same(got, want, 256, "IQ4_XS: d*(ls - 32)*level[q]");
}

// Q2_K/Q3_K weight i: group g = i/16 (scale g), code bits at byte 32*(g/8) + (i%32) of qs, shift
// 2*((g%8)/2); Q3_K's high bit at hmask[i%32], bit g/2.
static void check_k_low(void) {
    float got[256], want[256];
    block_q2_k a;
    memset(&a, 0, sizeof a);
    a.d = f32_to_fp16(0.5f);
    a.dmin = f32_to_fp16(0.25f);
    for (int g = 0; g < 16; g++) a.scales[g] = (uint8_t)(g | (15 - g) << 4);
    for (int i = 0; i < 256; i++) {
        int g = i / 16, q = (i * 5 + g) % 4;
        a.qs[32 * (g / 8) + i % 32] |= (uint8_t)(q << 2 * ((g % 8) / 2));
        want[i] = 0.5f * (float)g * (float)q - 0.25f * (float)(15 - g);
    }
    dequantize_row_q2_k(&a, got, 256);
    same(got, want, 256, "Q2_K: d*sc*q - dmin*m");

    block_q3_k b;
    memset(&b, 0, sizeof b);
    b.d = f32_to_fp16(0.25f);
    int sc[16];
    for (int g = 0; g < 16; g++) {
        sc[g] = 4 * g - 30;   // stored as sc + 32: 6 bits, low 4 in byte g%8 (nibble g/8), high 2 in byte 8 + g%4
        int v = sc[g] + 32;
        b.scales[g % 8] |= (uint8_t)((v & 15) << 4 * (g / 8));
        b.scales[8 + g % 4] |= (uint8_t)((v >> 4) << 2 * (g / 4));
    }
    for (int i = 0; i < 256; i++) {
        int g = i / 16, q = (i * 3 + g) % 4, high = (i + g) % 3 != 0;
        b.qs[32 * (g / 8) + i % 32] |= (uint8_t)(q << 2 * ((g % 8) / 2));
        if (high) b.hmask[i % 32] |= (uint8_t)(1 << (g / 2));
        want[i] = 0.25f * (float)sc[g] * (float)(q - (high ? 0 : 4));
    }
    dequantize_row_q3_k(&b, got, 256);
    same(got, want, 256, "Q3_K: d*(sc - 32)*(q - 4 unless the hmask bit)");
}

// Q4_K/Q5_K (scale, min) j, 6 bits each: j < 4 in the low 6 bits of bytes j and j+4; j >= 4: low
// nibbles in byte j+4, high 2 bits in the top of bytes j-4 (scale) and j (min).
static void pack_scale_min(uint8_t q[12], const int sc[8], const int mn[8]) {
    memset(q, 0, 12);
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        q[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        q[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
}

static void check_k_high(void) {
    float got[256], want[256];
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) { sc[j] = 63 - 7 * j; mn[j] = 9 * j; }
    uint8_t packed[12];
    pack_scale_min(packed, sc, mn);
    int ok = 1;
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        kquant_scale_min(j, packed, &s, &m);
        ok &= s == sc[j] && m == mn[j];
    }
    CHECK(ok, "Q4_K/Q5_K packed 6-bit scales and mins read back");

    // weight i: group g = i/32, byte 32*(g/2) + i%32 of qs, low nibble for even g
    block_q4_k a;
    memset(&a, 0, sizeof a);
    a.d = f32_to_fp16(0.125f);
    a.dmin = f32_to_fp16(0.5f);
    memcpy(a.scales, packed, 12);
    block_q5_k b;
    memset(&b, 0, sizeof b);
    b.d = a.d;
    b.dmin = a.dmin;
    memcpy(b.scales, packed, 12);
    float want5[256];
    for (int i = 0; i < 256; i++) {
        int g = i / 32, q = (i * 7 + g) % 16, high = (i * 3 + g) % 5 < 2;
        a.qs[32 * (g / 2) + i % 32] |= (uint8_t)(q << 4 * (g % 2));
        b.qs[32 * (g / 2) + i % 32] |= (uint8_t)(q << 4 * (g % 2));
        if (high) b.qh[i % 32] |= (uint8_t)(1 << g);
        want[i] = 0.125f * (float)sc[g] * (float)q - 0.5f * (float)mn[g];
        want5[i] = 0.125f * (float)sc[g] * (float)(q + 16 * high) - 0.5f * (float)mn[g];
    }
    dequantize_row_q4_k(&a, got, 256);
    same(got, want, 256, "Q4_K: d*sc*q - dmin*m");
    dequantize_row_q5_k(&b, got, 256);
    same(got, want5, 256, "Q5_K: d*sc*(q + 16 qh) - dmin*m");

    // Q6_K weight i: half h = i/128, r = i%128, quarter p = r/32, l = r%32; low 4 bits in
    // ql[64h + l + 32(p%2)] (high nibble for p >= 2), high 2 bits in qh[32h + l] at 2p; scale
    // 8h + l/16 + 2p.
    block_q6_k c;
    memset(&c, 0, sizeof c);
    c.d = f32_to_fp16(0.5f);
    for (int s = 0; s < 16; s++) c.scales[s] = (int8_t)(s * 9 - 70);
    for (int i = 0; i < 256; i++) {
        int h = i / 128, r = i % 128, p = r / 32, l = r % 32, q = (i * 11 + 5) % 64;
        c.ql[64 * h + l + 32 * (p % 2)] |= (uint8_t)((q & 15) << 4 * (p / 2));
        c.qh[32 * h + l] |= (uint8_t)((q >> 4) << 2 * p);
        want[i] = 0.5f * (float)c.scales[8 * h + l / 16 + 2 * p] * (float)(q - 32);
    }
    dequantize_row_q6_k(&c, got, 256);
    same(got, want, 256, "Q6_K: d*sc*(q - 32)");
}

static void check_q8_k(void) {
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = (float)(i - 100) / 8.0f;   // largest magnitude: 155/8
    block_q8_k b;
    quantize_row_q8_k_ref(x, &b, 256);
    int ok = b.qs[255] == -127 && b.qs[100] == 0, sums = 1;
    for (int i = 0; i < 256; i++) ok &= fabsf(b.d * (float)b.qs[i] - x[i]) <= fabsf(b.d) * 0.5f * (1 + 1e-5f);
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += b.qs[16 * g + i];
        sums &= s == b.bsums[g];
    }
    CHECK(ok && fabsf(b.d + 155.0f / 8 / 127) < 1e-6f, "Q8_K: the largest maps to -127, each within half a step (d %g)", b.d);
    CHECK(sums, "Q8_K: sums of 16");
    memset(x, 0, sizeof x);
    quantize_row_q8_k_ref(x, &b, 256);
    ok = b.d == 0;
    for (int i = 0; i < 256; i++) ok &= b.qs[i] == 0;
    CHECK(ok, "Q8_K: a zero block");
}

// Random bytes with sane fp16 super-scales (cf. tests/op_checks.h): enough to exercise every bit.
// full: every byte but the fp16 scales 0xFF instead, which puts each code at the top of its
// range (the largest sums an integer kernel adds up).
static void rand_blocks_as(uint32_t type, uint8_t *p, size_t n_blocks, bool full) {
    static const struct { uint32_t type; int off[2], n; } f16_at[] = {
        { WT_Q4_0, { 0 }, 1 }, { WT_Q8_0, { 0 }, 1 }, { WT_Q4_1, { 0, 2 }, 2 }, { WT_Q5_0, { 0 }, 1 },
        { WT_Q5_1, { 0, 2 }, 2 }, { WT_IQ4_NL, { 0 }, 1 }, { WT_IQ4_XS, { 0 }, 1 }, { WT_Q2_K, { 80, 82 }, 2 },
        { WT_Q3_K, { 108 }, 1 }, { WT_Q4_K, { 0, 2 }, 2 }, { WT_Q5_K, { 0, 2 }, 2 }, { WT_Q6_K, { 208 }, 1 },
    };
    const wtype_info *ti = wtype_get(type);
    for (size_t i = 0; i < n_blocks * ti->block_bytes; i++) p[i] = full ? 0xFF : (uint8_t)rng_int(256);
    for (size_t k = 0; k < sizeof f16_at / sizeof f16_at[0]; k++)
        if (f16_at[k].type == type)
            for (size_t b = 0; b < n_blocks; b++)
                for (int j = 0; j < f16_at[k].n; j++) {
                    uint16_t h = f32_to_fp16(rng_uniform() * 0.01f);
                    memcpy(p + b * ti->block_bytes + f16_at[k].off[j], &h, 2);
                }
}
static void rand_blocks(uint32_t type, uint8_t *p, size_t n_blocks) { rand_blocks_as(type, p, n_blocks, false); }

// Each type's fast-table kernel against Σ w·x in double over the dequantized weights and the
// dequantized activation blocks it was given: only float summation separates them. A type the
// table also packs (cpu_pack_r16) is checked the same way through its matmul_packed kernel, on
// 19 rows (a group of 16 and a padded one) and on a range that starts and ends inside a group;
// then once more with every code at its largest against activations all at +-127 (the largest
// sums: an int16 partial sum that could overflow would show here).
static void check_table(const cpu_kernels *ks);
static void check_kernels(void) {
    static const char *const names[] = { "avx512", "avx2" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const cpu_kernels *ks = cpu_kernels_select(names[i]);
        if (!ks) { SKIP("the %s table: this processor or OS does not run it", names[i]); continue; }
        check_table(ks);
    }
}

static void check_table(const cpu_kernels *ks) {
    static const uint32_t types[] = { WT_Q4_0, WT_Q8_0, WT_Q4_1, WT_Q5_0, WT_Q5_1, WT_IQ4_NL, WT_IQ4_XS,
                                      WT_Q2_K, WT_Q3_K, WT_Q4_K, WT_Q5_K, WT_Q6_K };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (int full = 0; full < 2; full++) {
        const uint32_t t = types[ti];
        const wtype_info *info = wtype_get(t);
        const enum act_format af = ks->act_format[t];
        CHECK(ks->matmul[t] && af == (info->block_size == 256 ? ACT_Q8_K : ACT_Q8_0), "%s: kernel and activation format", info->name);
        if (!ks->matmul[t]) continue;
        // K: 1, 3, 5 blocks; rows kernel: 7 rows, 3 tokens; packed: 19 rows [3, 18), 6 tokens, and
        // 40 rows [3, 37), 1 token (decode's two groups at a time, then one)
        for (int kb = 1; kb <= 5; kb += 2)
        for (int packed = 0; packed < (ks->matmul_packed[t] ? 3 : 1); packed++) {
            const int64_t K = kb * (int64_t)(info->block_size == 256 ? 256 : 288);
            const int64_t M = packed == 2 ? 40 : packed ? 19 : 7, N = packed == 2 ? 1 : packed ? 6 : 3;
            const int64_t row0 = packed ? 3 : 0, row1 = packed == 2 ? 37 : packed ? 18 : M;
            const size_t wrb = wtype_row_bytes(t, (uint64_t)K);
            const size_t xrb = cpu_act_row_bytes(af, K);
            uint8_t *w = xmalloc(wrb * M), *xq = xmalloc(xrb * N);
            float *wf = xmalloc(sizeof(float) * (size_t)(K * M)), *xf = xmalloc(sizeof(float) * (size_t)(K * N));
            float y[6 * 40];
            rand_blocks_as(t, w, (size_t)(K / info->block_size * M), full);
            for (int64_t i = 0; i < K * N; i++) xf[i] = full ? (i / K % 2 ? -1.0f : 1.0f) : rng_uniform();
            for (int64_t r = 0; r < N; r++) {
                cpu_act_prepare(ks, af, xf + r * K, 0, K, 1, xq + r * xrb);
                for (int64_t i = 0; i < K; i++) {   // the activation as the kernel sees it
                    if (af == ACT_Q8_K) { const block_q8_k *b = (const block_q8_k *)(xq + r * xrb) + i / 256; xf[r * K + i] = b->d * (float)b->qs[i % 256]; }
                    else { const block_q8_0 *b = (const block_q8_0 *)(xq + r * xrb) + i / 32; xf[r * K + i] = fp16_to_f32(b->d) * (float)b->qs[i % 32]; }
                }
            }
            for (int64_t r = 0; r < M; r++) info->to_f32(w + r * wrb, wf + r * K, K);
            for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) y[i] = -12345.5f;
            if (packed) {
                uint8_t *wp = aligned_alloc(64, (cpu_r16_bytes(t, M, K) + 63) / 64 * 64);
                cpu_pack_r16(t, w, wrb, M, K, 0, (M + 15) / 16, wp);
                ks->matmul_packed[t](wp, 0, K, row0, row1, xq, xrb, N, y, M);
                free(wp);
                bool untouched = true;
                for (int64_t n = 0; n < N; n++)
                    for (int64_t r = 0; r < M; r++)
                        if (r < row0 || r >= row1) untouched &= y[n * M + r] == -12345.5f;
                CHECK(untouched, "%s K=%lld: the packed kernel writes only rows [%lld, %lld)", info->name, (long long)K,
                      (long long)row0, (long long)row1);
            } else {
                ks->matmul[t](w, wrb, K, 0, M, xq, xrb, N, y, M);
            }
            double worst = 0;
            for (int64_t n = 0; n < N; n++)
                for (int64_t r = row0; r < row1; r++) {
                    double s = 0, sa = 0;
                    for (int64_t i = 0; i < K; i++) { s += (double)wf[r * K + i] * xf[n * K + i]; sa += fabs((double)wf[r * K + i] * xf[n * K + i]); }
                    double q = fabs(y[n * M + r] - s) / (2.0 * (double)(K + 2) * 0x1p-24 * sa + 1e-30);
                    if (q > worst) worst = q;
                }
            CHECK(worst <= 1.0, "%s %s%s%s K=%lld N=%lld: kernel vs double dot: |diff| / float bound %g", ks->name,
                  info->name, packed ? " packed" : "", full ? " (largest codes)" : "", (long long)K, (long long)N, worst);
            free(w); free(xq); free(wf); free(xf);
        }
    }
}

// Every quantized type's decoding is written once, as codes under per-group (scale, min)
// (engine/wtype_codes.h), and its to_f32 derived from it; the hand-made blocks above check the
// decoding through to_f32. Here, on random blocks (1, 9, 25 and 300 of them: whole and partial
// runs of 256 weights): to_f32 is exactly scale * code - min in float, bit for bit, as the header
// states and the Vulkan repacking relies on; the stated code range holds and is tight (both ends
// occur: a backend picks its layout by it); mins are zeros where the type has none, and may be
// NULL.
static void check_codes(void) {
    static const uint32_t types[] = { WT_Q4_0, WT_Q8_0, WT_Q4_1, WT_Q5_0, WT_Q5_1, WT_IQ4_NL, WT_IQ4_XS,
                                      WT_Q2_K, WT_Q3_K, WT_Q4_K, WT_Q5_K, WT_Q6_K };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        const wtype_info *info = wtype_get(t);
        const wtype_codes *c = wtype_codes_get(t);
        CHECK(c != NULL && c == info->codes && info->block_size % (uint32_t)c->group == 0, "%s: codes", info->name);
        if (!c) continue;
        int lo = 127, hi = -128;
        static const int64_t blocks[] = { 1, 9, 25, 300 };   // 300: every code of Q8_0 comes up
        for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
            const int64_t nb = blocks[k], n = nb * info->block_size, ng = n / c->group;
            uint8_t *w = xmalloc((size_t)wtype_row_bytes(t, (uint64_t)n));
            float *want = xmalloc(sizeof(float) * (size_t)n), *scale = xmalloc(sizeof(float) * (size_t)ng);
            float *min = xmalloc(sizeof(float) * (size_t)ng);
            int8_t *code = xmalloc((size_t)n), *code2 = xmalloc((size_t)n);
            rand_blocks(t, w, (size_t)nb);
            info->to_f32(w, want, n);
            for (int64_t g = 0; g < ng; g++) min[g] = -12345.5f;
            c->to_codes(w, code, scale, min, n);
            int bad = -1, range = -1, zero = 1;
            for (int64_t i = 0; i < n && bad < 0; i++) {
                const int64_t g = i / c->group;
                const float got = c->has_min ? scale[g] * (float)code[i] - min[g] : scale[g] * (float)code[i];
                if (memcmp(&got, &want[i], sizeof got) != 0) bad = (int)i;
                if (range < 0 && (code[i] < c->code_lo || code[i] > c->code_hi)) range = (int)i;
                if (code[i] < lo) lo = code[i];
                if (code[i] > hi) hi = code[i];
            }
            for (int64_t g = 0; g < ng && !c->has_min; g++) zero &= min[g] == 0.0f;
            CHECK(bad < 0, "%s n=%lld: scale * code - min differs from the dequantized weight at %d", info->name,
                  (long long)n, bad);
            CHECK(range < 0, "%s n=%lld: code %d at %d outside %d..%d", info->name, (long long)n,
                  range < 0 ? 0 : code[range], range, c->code_lo, c->code_hi);
            CHECK(zero, "%s n=%lld: mins are zeros (no min in this type)", info->name, (long long)n);
            if (!c->has_min) {
                c->to_codes(w, code2, scale, NULL, n);
                CHECK(memcmp(code, code2, (size_t)n) == 0, "%s n=%lld: the same codes without mins", info->name, (long long)n);
            }
            free(w); free(want); free(scale); free(min); free(code); free(code2);
        }
        CHECK(lo == c->code_lo && hi == c->code_hi, "%s: codes span %d..%d, stated %d..%d", info->name, lo, hi,
              c->code_lo, c->code_hi);
    }
    static const uint32_t no_codes[] = { WT_F32, WT_F16, WT_BF16, WT_FP8, WT_Q8_1, WT_Q8_K, WT_I8 };
    int none = 1;
    for (size_t i = 0; i < sizeof no_codes / sizeof no_codes[0]; i++) none &= wtype_codes_get(no_codes[i]) == NULL;
    CHECK(none && wtype_codes_get(WT_COUNT) == NULL && wtype_codes_get(5) == NULL,
          "no codes for the float types, FP8, types cabin does not compute and unknown ids");
}

int main(void) {
    test_seed();
    check_codes();
    check_legacy();
    check_k_low();
    check_k_high();
    check_q8_k();
    check_kernels();
    return test_finish();
}
