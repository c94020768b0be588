#include "wtype.h"
#include "engine/half.h"
#include "engine/wtype_codes.h"
#include "engine/quantize.h"
#include "base/base.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static void f32_to_f32(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
static void f32_from_f32(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

static void f16_to_f32_row(const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_f32(s[i]);
}
static void f16_from_f32_row(const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = f32_to_fp16(src[i]);
}
static void bf16_to_f32_row(const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(s[i]);
}
static void bf16_from_f32_row(const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = f32_to_bf16(src[i]);
}

// Q4_0: code = nibble - 8 under the fp16 scale d.
WTYPE_DECODER void q4_0_decode(const block_q4_0 *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    for (int j = 0; j < 16; j++) {
        c->code[j] = (int8_t)((b->qs[j] & 0x0f) - 8);
        c->code[j + 16] = (int8_t)((b->qs[j] >> 4) - 8);
    }
}
WTYPE_CODES_DEFINE(q4_0, block_q4_0, QK4_0, 32, -8, 7, false, q4_0_decode)

// Q8_0: the int8 are the codes under the fp16 scale d.
WTYPE_DECODER void q8_0_decode(const block_q8_0 *b, const wtype_codes_out *c) {
    c->scale[0] = fp16_to_f32(b->d);
    memcpy(c->code, b->qs, 32);
}
WTYPE_CODES_DEFINE(q8_0, block_q8_0, QK8_0, 32, -128, 127, false, q8_0_decode)

// Q4_0 scale: the weight of largest magnitude (keeping its sign) maps to -8, so d = max / -8.
// Rounding matches the established GGUF quantizer: q = min(15, (int8)(x/d + 8.5)), with the
// scale stored as fp16 but the division done with the float value before rounding.
void quantize_row_q4_0_ref(const float *src, void *dst, int64_t n) {
    block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        const float *x = src + i * 32;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++) {
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        }
        const float d = max / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            const float x0 = x[j] * id, x1 = x[j + 16] * id;
            uint8_t q0 = (uint8_t)(int8_t)(x0 + 8.5f), q1 = (uint8_t)(int8_t)(x1 + 8.5f);
            if (q0 > 15) q0 = 15;
            if (q1 > 15) q1 = 15;
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

// Q8_0: d = amax / 127, q = round(x / d) (round half away from zero).
void quantize_row_q8_0_ref(const float *src, void *dst, int64_t n) {
    block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float *x = src + i * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        for (int j = 0; j < 32; j++) b[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

static const wtype_info table[WT_COUNT] = {
    [WT_F32]    = { "F32",    1,   4,   f32_to_f32,          f32_from_f32, false, NULL },
    [WT_F16]    = { "F16",    1,   2,   f16_to_f32_row,      f16_from_f32_row, false, NULL },
    [WT_Q4_0]   = { "Q4_0",   32,  18,  dequantize_row_q4_0, quantize_row_q4_0_ref, false, &wtype_codes_q4_0 },
    [WT_Q4_1]   = { "Q4_1",   32,  20,  dequantize_row_q4_1, quantize_row_q4_1_ref, false, &wtype_codes_q4_1 },
    [WT_Q5_0]   = { "Q5_0",   32,  22,  dequantize_row_q5_0, quantize_row_q5_0_ref, false, &wtype_codes_q5_0 },
    [WT_Q5_1]   = { "Q5_1",   32,  24,  dequantize_row_q5_1, quantize_row_q5_1_ref, false, &wtype_codes_q5_1 },
    [WT_Q8_0]   = { "Q8_0",   32,  34,  dequantize_row_q8_0, quantize_row_q8_0_ref, false, &wtype_codes_q8_0 },
    [WT_Q8_1]   = { "Q8_1",   32,  36,  NULL, NULL, false, NULL },
    [WT_Q2_K]   = { "Q2_K",   256, 84,  dequantize_row_q2_k, quantize_row_q2_k_ref, false, &wtype_codes_q2_k },
    [WT_Q3_K]   = { "Q3_K",   256, 110, dequantize_row_q3_k, quantize_row_q3_k_ref, false, &wtype_codes_q3_k },
    [WT_Q4_K]   = { "Q4_K",   256, 144, dequantize_row_q4_k, quantize_row_q4_k_ref, false, &wtype_codes_q4_k },
    [WT_Q5_K]   = { "Q5_K",   256, 176, dequantize_row_q5_k, quantize_row_q5_k_ref, false, &wtype_codes_q5_k },
    [WT_Q6_K]   = { "Q6_K",   256, 210, dequantize_row_q6_k, quantize_row_q6_k_ref, false, &wtype_codes_q6_k },
    [WT_Q8_K]   = { "Q8_K",   256, 292, NULL, NULL, false, NULL },
    [WT_IQ4_NL] = { "IQ4_NL", 32,  18,  dequantize_row_iq4_nl, quantize_row_iq4_nl_ref, false, &wtype_codes_iq4_nl },
    [WT_IQ4_XS] = { "IQ4_XS", 256, 136, dequantize_row_iq4_xs, quantize_row_iq4_xs_ref, false, &wtype_codes_iq4_xs },
    [WT_I8]     = { "I8",     1,   1,   NULL, NULL, false, NULL },
    [WT_I16]    = { "I16",    1,   2,   NULL, NULL, false, NULL },
    [WT_I32]    = { "I32",    1,   4,   NULL, NULL, false, NULL },
    [WT_I64]    = { "I64",    1,   8,   NULL, NULL, false, NULL },
    [WT_F64]    = { "F64",    1,   8,   NULL, NULL, false, NULL },
    [WT_BF16]   = { "BF16",   1,   2,   bf16_to_f32_row,     bf16_from_f32_row, false, NULL },
    [WT_FP8]    = { "FP8",    32,  34,  dequantize_row_fp8,  quantize_row_fp8, true, NULL },
};

const wtype_info *wtype_get(uint32_t type) {
    if (type >= WT_COUNT || !table[type].name) return NULL;
    return &table[type];
}

const wtype_codes *wtype_codes_get(uint32_t type) {
    const wtype_info *t = wtype_get(type);
    return t ? t->codes : NULL;
}

const char *wtype_name(uint32_t type) {
    const wtype_info *t = wtype_get(type);
    return t ? t->name : "unknown";
}

int wtype_from_name(const char *name) {
    for (int i = 0; i < WT_COUNT; i++)
        if (table[i].name && strcasecmp(table[i].name, name) == 0) return i;
    return -1;
}

double wtype_bpw(uint32_t type) {
    const wtype_info *t = wtype_get(type);
    return t ? (double)t->block_bytes * 8.0 / t->block_size : 0.0;
}

uint64_t wtype_row_bytes(uint32_t type, uint64_t n) {
    const wtype_info *t = wtype_get(type);
    if (!t || n % t->block_size) return 0;
    return n / t->block_size * t->block_bytes;
}

const char *wtype_supported_list(void) {
    return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS "
           "(and FP8 in memory)";
}

_Static_assert(sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24 &&
               sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136, "32-weight block layouts");
_Static_assert(sizeof(block_q2_k) == 84 && sizeof(block_q3_k) == 110 && sizeof(block_q4_k) == 144 &&
               sizeof(block_q5_k) == 176 && sizeof(block_q6_k) == 210 && sizeof(block_q8_k) == 292, "K-quant block layouts");
