// Fast weight conversion is bit-identical to the reference functions: F16 -> F32, and F32 ->
// Q4_0 / Q8_0 (including ties at .5, equal magnitudes of both signs, zeros and tiny values).
#include "test.h"
#include "tests/rng.h"
#include "engine/half.h"
#include "engine/convert.h"
#include "engine/wtype.h"
#include "base/base.h"

#include <math.h>
#include <time.h>

static uint64_t rng;
static float frand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 11) * 0x1.0p-53) * 2.0f - 1.0f;
}

// Rows with the awkward cases the rounding rules care about.
static void fill(float *x, int64_t n, int pattern) {
    for (int64_t i = 0; i < n; i++) {
        float v = frand();
        switch (pattern) {
        case 0: x[i] = v; break;
        case 1: x[i] = v * 1e-6f; break;                         // tiny
        case 2: x[i] = (float)((int)(v * 16)) / 2.0f; break;     // many exact halves / ties
        case 3: x[i] = (i % 32 == 5) ? 3.0f : (i % 32 == 9) ? -3.0f : v; break; // equal |max| both signs
        case 4: x[i] = (i % 7 == 0) ? 0.0f : v * 1000.0f; break;
        default: x[i] = 0.0f; break;                             // all zero
        }
    }
}

int main(void) {
    rng = test_seed() | 1;
    if (!convert_avx512_usable()) {
        SKIP("AVX-512 is not usable here; the fast converters are not used either");
        return test_finish();
    }
    const int64_t n = 32 * 64;
    float *x = xmalloc(n * sizeof(float)), *a = xmalloc(n * sizeof(float)), *b = xmalloc(n * sizeof(float));
    uint8_t *qa = xmalloc(n * 2), *qb = xmalloc(n * 2);
    for (int pattern = 0; pattern < 6; pattern++) {
        for (int rep = 0; rep < 20; rep++) {
            fill(x, n, pattern);
            quantize_row_q4_0_ref(x, qa, n);
            quantize_row_q4_0_avx512(x, qb, n);
            CHECK(memcmp(qa, qb, (size_t)(n / 32 * 18)) == 0, "Q4_0 fast == reference (pattern %d)", pattern);
            quantize_row_q8_0_ref(x, qa, n);
            quantize_row_q8_0_avx512(x, qb, n);
            CHECK(memcmp(qa, qb, (size_t)(n / 32 * 34)) == 0, "Q8_0 fast == reference (pattern %d)", pattern);
        }
    }
    // every half value converts exactly
    uint16_t *h = xmalloc(65536 * 2);
    float *f1 = xmalloc(65536 * 4), *f2 = xmalloc(65536 * 4);
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    f16_to_f32_avx512(h, f1, 65536);
    wtype_get(WT_F16)->to_f32(h, f2, 65536);
    int same = 0;
    for (int i = 0; i < 65536; i++) {
        uint32_t u1, u2;
        memcpy(&u1, &f1[i], 4);
        memcpy(&u2, &f2[i], 4);
        same += u1 == u2 || (isnan(f1[i]) && isnan(f2[i]));
    }
    CHECK(same == 65536, "all 65536 halves convert as the reference (%d)", same);
    // whole-tensor conversion in parallel == row by row with the reference
    int64_t rows = 37, k = 96;
    uint16_t *src = xmalloc((size_t)(rows * k) * 2);
    for (int64_t i = 0; i < rows * k; i++) src[i] = f32_to_fp16(frand() * 4);
    uint8_t *d1 = xmalloc((size_t)(rows * k)), *d2 = xmalloc((size_t)(rows * k));
    size_t rb = (size_t)wtype_row_bytes(WT_Q4_0, (uint64_t)k);
    convert_rows(src, WT_F16, (size_t)k * 2, d1, WT_Q4_0, rb, k, rows, 2);
    float *row = xmalloc((size_t)k * 4);
    for (int64_t r = 0; r < rows; r++) {
        wtype_get(WT_F16)->to_f32(src + r * k, row, k);
        quantize_row_q4_0_ref(row, d2 + (size_t)r * rb, k);
    }
    CHECK(memcmp(d1, d2, rb * (size_t)rows) == 0, "parallel F16 -> Q4_0 conversion == reference");
    free(x); free(a); free(b); free(qa); free(qb); free(h); free(f1); free(f2); free(src); free(d1); free(d2); free(row);
    return test_finish();
}
