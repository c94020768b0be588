// FP8 (E4M3) weights under an fp16 scale per 32: cabin's own in-memory type (engine/wtype.h).
// E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits. Exponent 0 is subnormal (m/8 * 2^-6);
// S.1111.111 is NaN; there are no infinities, so the largest finite value is 1.75 * 2^8 = 448.
#include "engine/wtype.h"
#include "engine/half.h"

#include <math.h>

// Every code's value as a constant expression: exponent field 0 is m * 2^-9, else (8 + m) *
// 2^(e - 10), as integer powers of two (exact); 0x7f and 0xff are NaN.
#define E4M3_EXP(c) (((c) >> 3) & 15)
#define E4M3_POW(c) ((float)(1 << E4M3_EXP(c)) / 1024.0f)
#define E4M3_MAG(c) (E4M3_EXP(c) == 0 ? (float)((c) & 7) / 512.0f : (float)(8 + ((c) & 7)) * E4M3_POW(c))
#define E4M3(c) (((c) & 0x7f) == 0x7f ? NAN : ((c) & 0x80 ? -E4M3_MAG(c) : E4M3_MAG(c)))
#define E4M3_4(c) E4M3(c), E4M3((c) + 1), E4M3((c) + 2), E4M3((c) + 3)
#define E4M3_16(c) E4M3_4(c), E4M3_4((c) + 4), E4M3_4((c) + 8), E4M3_4((c) + 12)
#define E4M3_64(c) E4M3_16(c), E4M3_16((c) + 16), E4M3_16((c) + 32), E4M3_16((c) + 48)
static const float e4m3_values[256] = { E4M3_64(0), E4M3_64(64), E4M3_64(128), E4M3_64(192) };

float e4m3_to_f32(uint8_t q) { return e4m3_values[q]; }

// Nearest with ties to even: the value in units of its binade's step (2^-9 below 2^-6, else
// 2^(e-3)) rounded by rintf (exact: the scaling is by a power of two); a carry past 16 steps
// lands on the next exponent's code, which is what code + 1 means in this encoding.
uint8_t f32_to_e4m3(float x) {
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    const float a = fabsf(x);
    if (isnan(x)) return sign | 0x7f;
    if (a >= 448.0f) return sign | 0x7e;
    int code;
    if (a < 0x1p-6f) {
        code = (int)rintf(a * 0x1p9f);   // 0..8; 8 is 2^-6, code 0x08
    } else {
        int E;
        frexpf(a, &E);                     // a in [2^(E-1), 2^E)
        const int e = E - 1;               // -6 .. 8
        const int q = (int)rintf(ldexpf(a, 3 - e));   // 8 .. 16 steps of 2^(e-3)
        code = ((e + 7) << 3) + (q - 8);
    }
    if (code > 0x7e) code = 0x7e;
    return (uint8_t)(sign | code);
}

void dequantize_row_fp8(const void *src, float *dst, int64_t n) {
    const block_fp8 *b = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < 32; j++) dst[j] = d * e4m3_values[b[i].qs[j]];
    }
}

// The block's largest magnitude maps to 448 (E4M3's largest): d = amax / 448, stored as fp16,
// and each weight is encoded as x / d with the stored d (saturating where fp16 rounded d down).
void quantize_row_fp8(const float *src, void *dst, int64_t n) {
    block_fp8 *b = dst;
    for (int64_t i = 0; i < n / 32; i++, src += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            if (fabsf(src[j]) > amax) amax = fabsf(src[j]);
        b[i].d = f32_to_fp16(amax / 448.0f);
        const float d = fp16_to_f32(b[i].d);
        const float id = d > 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; j++) b[i].qs[j] = f32_to_e4m3(src[j] * id);
    }
}
