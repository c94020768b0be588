// Weight-type tests: half/bfloat conversions on hand-computed bit patterns, Q4_0/Q8_0 error
// bounds on random data, the wtype table, and (with ../shared/ref) byte identity of the
// reference quantizers with the blocks the established GGUF implementation wrote.
#include "engine/gguf.h"
#include "engine/half.h"
#include "base/base.h"
#include "engine/wtype.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>

static float f_of(uint32_t u) { union { uint32_t u; float f; } v = { .u = u }; return v.f; }
static uint32_t u_of(float f) { union { float f; uint32_t u; } v = { .f = f }; return v.u; }

static float rng_unit(void) { return (float)(rng_u64() >> 40) / (float)(1 << 24); } // [0,1)
static float rng_normal(void) {
    float u1 = rng_unit(), u2 = rng_unit();
    if (u1 < 1e-7f) u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

// ---- fp16 ----
static void test_fp16(void) {
    // f32 bits -> expected half bits (round to nearest even).
    static const struct { uint32_t f; uint16_t h; const char *what; } to_h[] = {
        { 0x00000000u, 0x0000, "+0" },
        { 0x80000000u, 0x8000, "-0" },
        { 0x3f800000u, 0x3c00, "1.0" },
        { 0xbf800000u, 0xbc00, "-1.0" },
        { 0x40000000u, 0x4000, "2.0" },
        { 0x3eaaaaabu, 0x3555, "1/3 (rounds down)" },
        { 0x477fe000u, 0x7bff, "65504 = max half" },
        { 0x477fefffu, 0x7bff, "65519.99 rounds down to 65504" },
        { 0x477ff000u, 0x7c00, "65520 (tie, odd -> even) overflows to inf" },
        { 0x47800000u, 0x7c00, "65536 -> inf" },
        { 0x7f7fffffu, 0x7c00, "FLT_MAX -> inf" },
        { 0xff7fffffu, 0xfc00, "-FLT_MAX -> -inf" },
        { 0x7f800000u, 0x7c00, "+inf" },
        { 0xff800000u, 0xfc00, "-inf" },
        { 0x38800000u, 0x0400, "2^-14 smallest normal" },
        { 0x38000000u, 0x0200, "2^-15 subnormal" },
        { 0x33800000u, 0x0001, "2^-24 smallest subnormal" },
        { 0xb3800000u, 0x8001, "-2^-24" },
        { 0x33000000u, 0x0000, "2^-25 (tie with 0 -> even 0)" },
        { 0x33000001u, 0x0001, "just above 2^-25 -> 2^-24" },
        { 0x33c00000u, 0x0002, "1.5*2^-24 (tie between 1 and 2 -> even 2)" },
        { 0x34200000u, 0x0002, "2.5*2^-24 (tie between 2 and 3 -> even 2)" },
        { 0x32800000u, 0x0000, "2^-26 -> 0" },
        { 0x387fc000u, 0x03ff, "largest subnormal 1023*2^-24" },
        { 0x387fe000u, 0x0400, "1023.5*2^-24 (tie, odd -> even) rounds up to smallest normal" },
        // ties in the normal range: 1 + 2^-11 lies between 0x3c00 and 0x3c01
        { 0x3f801000u, 0x3c00, "1+2^-11 (tie, even 0x3c00)" },
        { 0x3f803000u, 0x3c02, "1+3*2^-11 (tie, odd 0x3c01 -> even 0x3c02)" },
        { 0x3f801001u, 0x3c01, "just above the tie rounds up" },
        { 0x3f800fffu, 0x3c00, "just below the tie rounds down" },
        { 0x3fffffffu, 0x4000, "2-ulp rounds up, carrying into the exponent" },
    };
    for (size_t i = 0; i < sizeof to_h / sizeof to_h[0]; i++) {
        uint16_t h = f32_to_fp16(f_of(to_h[i].f));
        CHECK(h == to_h[i].h, "f32_to_fp16(%s, 0x%08x) = 0x%04x, want 0x%04x", to_h[i].what,
              to_h[i].f, h, to_h[i].h);
    }
    // NaN stays NaN, whatever the payload (including payloads that live only in the low bits).
    static const uint32_t nans[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u, 0xff800fffu };
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = f32_to_fp16(f_of(nans[i]));
        CHECK((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0, "NaN 0x%08x -> 0x%04x is not a NaN",
              nans[i], h);
        CHECK((h & 0x8000) == ((nans[i] >> 16) & 0x8000), "NaN 0x%08x lost its sign", nans[i]);
        CHECK(isnan(fp16_to_f32(h)), "half NaN 0x%04x -> not NaN", h);
    }
    // half bits -> expected f32 bits
    static const struct { uint16_t h; uint32_t f; } to_f[] = {
        { 0x0000, 0x00000000u }, { 0x8000, 0x80000000u }, { 0x3c00, 0x3f800000u },
        { 0xc000, 0xc0000000u }, { 0x7bff, 0x477fe000u }, { 0xfbff, 0xc77fe000u },
        { 0x0400, 0x38800000u }, { 0x03ff, 0x387fc000u }, { 0x0001, 0x33800000u },
        { 0x8001, 0xb3800000u }, { 0x0200, 0x38000000u }, { 0x7c00, 0x7f800000u },
        { 0xfc00, 0xff800000u }, { 0x3555, 0x3eaaa000u },
    };
    for (size_t i = 0; i < sizeof to_f / sizeof to_f[0]; i++) {
        uint32_t u = u_of(fp16_to_f32(to_f[i].h));
        CHECK(u == to_f[i].f, "fp16_to_f32(0x%04x) = 0x%08x, want 0x%08x", to_f[i].h, u, to_f[i].f);
    }
    // Every half round-trips exactly (NaNs: stay NaN).
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_f32((uint16_t)h);
        uint16_t back = f32_to_fp16(f);
        bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan ? !isnan(f) || (back & 0x7c00) != 0x7c00 || !(back & 0x3ff) : back != h) {
            if (bad++ < 5) fprintf(stderr, "half 0x%04x -> %g -> 0x%04x\n", h, (double)f, back);
        }
    }
    CHECK(bad == 0, "%d of 65536 halves do not round-trip", bad);
    // Random floats: the result is the nearest half (checked by neighbours), ties to even.
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        float x = f_of((uint32_t)rng_u64());
        if (isnan(x) || fabsf(x) > 65504.0f) continue;
        uint16_t h = f32_to_fp16(x);
        double r = fp16_to_f32(h), err = fabs(r - (double)x);
        // neighbours of h in magnitude
        uint16_t mag = h & 0x7fff;
        double up = mag < 0x7bff ? fp16_to_f32((uint16_t)(mag + 1)) : INFINITY;
        double dn = mag > 0 ? fp16_to_f32((uint16_t)(mag - 1)) : -INFINITY;
        double ax = fabs((double)x);
        bool ok = fabs(up - ax) >= err && fabs(ax - dn) >= err;
        if (ok && (fabs(up - ax) == err || fabs(ax - dn) == err) && mag != 0) ok = (mag & 1) == 0;
        if (!ok && bad++ < 5) fprintf(stderr, "f32_to_fp16(%a) = 0x%04x not nearest-even\n", (double)x, h);
    }
    CHECK(bad == 0, "%d random floats not rounded to nearest-even half", bad);
}

// ---- bf16 ----
static void test_bf16(void) {
    static const struct { uint32_t f; uint16_t b; const char *what; } to_b[] = {
        { 0x00000000u, 0x0000, "+0" }, { 0x80000000u, 0x8000, "-0" },
        { 0x3f800000u, 0x3f80, "1.0" }, { 0xc0490fdbu, 0xc049, "-pi (rounds down)" },
        { 0x3f808000u, 0x3f80, "tie, even stays" }, { 0x3f818000u, 0x3f82, "tie, odd -> even up" },
        { 0x3f808001u, 0x3f81, "just above tie" }, { 0x3f807fffu, 0x3f80, "just below tie" },
        { 0x7f800000u, 0x7f80, "+inf" }, { 0xff800000u, 0xff80, "-inf" },
        { 0x7f7fffffu, 0x7f80, "FLT_MAX rounds to inf" }, { 0x7f7f0000u, 0x7f7f, "max bf16" },
        { 0x00000001u, 0x0000, "smallest f32 subnormal -> 0" },
        { 0x00010000u, 0x0001, "subnormal kept" }, { 0x00018000u, 0x0002, "subnormal tie -> even" },
        { 0x807fffffu, 0x8080, "-largest subnormal rounds to -smallest normal" },
    };
    for (size_t i = 0; i < sizeof to_b / sizeof to_b[0]; i++) {
        uint16_t b = f32_to_bf16(f_of(to_b[i].f));
        CHECK(b == to_b[i].b, "f32_to_bf16(%s, 0x%08x) = 0x%04x, want 0x%04x", to_b[i].what,
              to_b[i].f, b, to_b[i].b);
    }
    static const uint32_t nans[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fff0000u, 0xff80ffffu };
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t b = f32_to_bf16(f_of(nans[i]));
        CHECK(isnan(bf16_to_f32(b)), "bf16 of NaN 0x%08x = 0x%04x is not NaN", nans[i], b);
        CHECK((b & 0x8000) == ((nans[i] >> 16) & 0x8000), "NaN 0x%08x lost its sign", nans[i]);
    }
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = bf16_to_f32((uint16_t)b);
        if (u_of(f) != b << 16) bad++;
        uint16_t back = f32_to_bf16(f);
        if (isnan(f) ? !isnan(bf16_to_f32(back)) : back != b) bad++;
    }
    CHECK(bad == 0, "%d of 65536 bf16 values do not round-trip", bad);
}

// ---- Q4_0 / Q8_0 error bounds ----
static void test_quant_bounds(void) {
    enum { N = 32 * 512 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    block_q4_0 *q4 = xmalloc(N / 32 * sizeof *q4);
    block_q8_0 *q8 = xmalloc(N / 32 * sizeof *q8);
    CHECK(sizeof(block_q4_0) == 18 && sizeof(block_q8_0) == 34, "block sizes %zu %zu",
          sizeof(block_q4_0), sizeof(block_q8_0));
    for (int i = 0; i < N; i++) {
        int blk = i / 32;
        float scale = (blk % 7 == 0) ? 1e-3f : (blk % 7 == 1) ? 100.0f : 1.0f;
        x[i] = rng_normal() * scale;
        if (blk % 11 == 3) x[i] = 0.0f;               // an all-zero block
        if (blk % 13 == 5 && i % 32 == 7) x[i] = -40.0f; // a dominant negative outlier
        if (blk % 17 == 6) x[i] = 0.25f;              // a constant block
    }
    quantize_row_q4_0_ref(x, q4, N);
    dequantize_row_q4_0(q4, y, N);
    int bad = 0, clamped = 0;
    for (int b = 0; b < N / 32; b++) {
        float d = fp16_to_f32(q4[b].d);
        // The rounding happens against the float scale d_f = max/-8; the stored scale is d_f
        // rounded to fp16 (relative 2^-11, or absolute 2^-25 when subnormal), and that error is
        // multiplied by |q-8| <= 8. Plus a few float ulps of x.
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++)
            if (fabsf(x[b * 32 + j]) > amax) { amax = fabsf(x[b * 32 + j]); max = x[b * 32 + j]; }
        float d_f = max / -8.0f;
        float tol = fabsf(d_f) / 2 + 8.0f * fabsf(d - d_f) + amax * 1e-6f;
        for (int j = 0; j < 32; j++) {
            int i = b * 32 + j;
            uint8_t nib = j < 16 ? (q4[b].qs[j] & 15) : (q4[b].qs[j - 16] >> 4);
            float err = fabsf(y[i] - x[i]);
            if (nib == 15 && err > tol) { clamped++; continue; } // +max clamped to 7*d
            if (err > tol) {
                if (bad++ < 5) fprintf(stderr, "q4_0 block %d #%d: x=%g y=%g d=%g\n", b, j,
                                       (double)x[i], (double)y[i], (double)d);
            }
        }
        if (amax == 0) CHECK((q4[b].d & 0x7fff) == 0 && y[b * 32] == 0, "zero block %d", b);
    }
    CHECK(bad == 0, "%d Q4_0 weights off by more than d/2", bad);
    // The clamp: a block whose largest-magnitude weight is positive maps it to -8*d with d<0,
    // and the most negative weight can reach q=16 -> clamped to 15 (error up to |d|).
    float cx[32];
    for (int j = 0; j < 32; j++) cx[j] = 0.0f;
    cx[0] = 8.0f; cx[1] = -8.0f; // max=8 -> d=-1 -> x=-8 maps to 16, clamped to 15 (w=-7)
    block_q4_0 cb;
    float cy[32];
    quantize_row_q4_0_ref(cx, &cb, 32);
    dequantize_row_q4_0(&cb, cy, 32);
    CHECK(cy[0] == 8.0f && cy[1] == -7.0f && cy[2] == 0.0f, "clamp case: %g %g %g", (double)cy[0],
          (double)cy[1], (double)cy[2]);
    CHECK(clamped <= N / 32, "%d clamped weights", clamped);

    quantize_row_q8_0_ref(x, q8, N);
    dequantize_row_q8_0(q8, y, N);
    bad = 0;
    for (int b = 0; b < N / 32; b++) {
        float d = fp16_to_f32(q8[b].d);
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
        float d_f = amax / 127.0f; // as for Q4_0: float scale, then its fp16 rounding x |q| <= 127
        float tol = d_f / 2 + 127.0f * fabsf(d - d_f) + amax * 1e-6f;
        for (int j = 0; j < 32; j++) {
            int i = b * 32 + j;
            if (fabsf(y[i] - x[i]) > tol && bad++ < 5)
                fprintf(stderr, "q8_0 block %d #%d: x=%g y=%g d=%g\n", b, j, (double)x[i],
                        (double)y[i], (double)d);
            if (q8[b].qs[j] < -127) bad++;
        }
        CHECK(d >= 0, "q8_0 scale negative in block %d", b);
    }
    CHECK(bad == 0, "%d Q8_0 weights off by more than d/2 (+ fp16 scale rounding)", bad);
    // Exact representable values survive: d = 1, integers in [-127, 127].
    float ex[32], ey[32];
    block_q8_0 eb;
    for (int j = 0; j < 32; j++) ex[j] = (float)(j * 8 - 127 > 127 ? 127 : j * 8 - 127);
    ex[31] = 127.0f;
    quantize_row_q8_0_ref(ex, &eb, 32);
    dequantize_row_q8_0(&eb, ey, 32);
    CHECK(memcmp(ex, ey, sizeof ex) == 0, "q8_0 integers do not survive");
    free(x); free(y); free(q4); free(q8);
}

// ---- wtype table ----
static void test_wtype_table(void) {
    CHECK(wtype_row_bytes(WT_F32, 10) == 40, "F32 row");
    CHECK(wtype_row_bytes(WT_F16, 7) == 14, "F16 row");
    CHECK(wtype_row_bytes(WT_BF16, 3) == 6, "BF16 row");
    CHECK(wtype_row_bytes(WT_Q4_0, 64) == 36, "Q4_0 row");
    CHECK(wtype_row_bytes(WT_Q8_0, 96) == 102, "Q8_0 row");
    CHECK(wtype_row_bytes(WT_Q4_0, 33) == 0, "Q4_0 row 33 must be 0");
    CHECK(wtype_row_bytes(WT_Q4_K, 256) == 144, "Q4_K row");
    CHECK(wtype_row_bytes(WT_Q6_K, 512) == 420, "Q6_K row");
    CHECK(wtype_row_bytes(WT_Q4_K, 32) == 0, "Q4_K row 32 must be 0");
    CHECK(wtype_row_bytes(99, 32) == 0, "unknown type row");
    CHECK(wtype_row_bytes(4, 32) == 0, "type 4 (removed Q4_2) must be unknown");
    CHECK(wtype_get(4) == NULL && wtype_get(5) == NULL && wtype_get(WT_COUNT) == NULL &&
          wtype_get(UINT32_MAX) == NULL, "unknown ids");
    // reads: a to_f32 (cabin loads and multiplies it); writes: a from_f32 (cabin produces it)
    static const struct { uint32_t id; const char *name; uint32_t bs, bb; int reads, writes; } known[] = {
        { WT_F32, "F32", 1, 4, 1, 1 }, { WT_F16, "F16", 1, 2, 1, 1 }, { WT_BF16, "BF16", 1, 2, 1, 1 },
        { WT_Q4_0, "Q4_0", 32, 18, 1, 1 }, { WT_Q8_0, "Q8_0", 32, 34, 1, 1 },
        { WT_Q4_1, "Q4_1", 32, 20, 1, 1 }, { WT_Q5_0, "Q5_0", 32, 22, 1, 1 },
        { WT_Q5_1, "Q5_1", 32, 24, 1, 1 }, { WT_Q8_1, "Q8_1", 32, 36, 0, 0 },
        { WT_Q2_K, "Q2_K", 256, 84, 1, 1 }, { WT_Q3_K, "Q3_K", 256, 110, 1, 1 },
        { WT_Q4_K, "Q4_K", 256, 144, 1, 1 }, { WT_Q5_K, "Q5_K", 256, 176, 1, 1 },
        { WT_Q6_K, "Q6_K", 256, 210, 1, 1 }, { WT_Q8_K, "Q8_K", 256, 292, 0, 0 },
        { WT_IQ4_NL, "IQ4_NL", 32, 18, 1, 1 }, { WT_IQ4_XS, "IQ4_XS", 256, 136, 1, 1 },
        { WT_I8, "I8", 1, 1, 0, 0 }, { WT_I16, "I16", 1, 2, 0, 0 }, { WT_I32, "I32", 1, 4, 0, 0 },
        { WT_I64, "I64", 1, 8, 0, 0 }, { WT_F64, "F64", 1, 8, 0, 0 },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const wtype_info *t = wtype_get(known[i].id);
        CHECK(t && strcmp(t->name, known[i].name) == 0 && t->block_size == known[i].bs &&
              t->block_bytes == known[i].bb, "wtype %u (%s)", known[i].id, known[i].name);
        if (!t) continue;
        CHECK((t->to_f32 != NULL) == known[i].reads && (t->from_f32 != NULL) == known[i].writes,
              "%s: reads %d, writes %d", known[i].name, known[i].reads, known[i].writes);
        CHECK(wtype_from_name(known[i].name) == (int)known[i].id, "from_name %s", known[i].name);
        CHECK(strcmp(wtype_name(known[i].id), known[i].name) == 0, "wtype_name %s", known[i].name);
    }
    CHECK(wtype_from_name("q4_0") == WT_Q4_0 && wtype_from_name("f16") == WT_F16 &&
          wtype_from_name("bf16") == WT_BF16 && wtype_from_name("Q8_0") == WT_Q8_0,
          "case-insensitive names");
    CHECK(wtype_from_name("Q4_2") == -1 && wtype_from_name("") == -1 &&
          wtype_from_name("Q4_0 ") == -1 && wtype_from_name("F") == -1, "unknown names");
    CHECK(strcmp(wtype_name(99), "unknown") == 0, "wtype_name(99)");
    CHECK(fabs(wtype_bpw(WT_Q4_0) - 4.5) < 1e-12 && fabs(wtype_bpw(WT_Q8_0) - 8.5) < 1e-12 &&
          wtype_bpw(WT_F16) == 16.0 && wtype_bpw(99) == 0.0, "bpw");
    // F16/BF16/F32 row converters go through the table
    float src[4] = { 1.0f, -2.5f, 65504.0f, 0.0f }, dst[4];
    uint16_t h[4];
    wtype_get(WT_F16)->from_f32(src, h, 4);
    wtype_get(WT_F16)->to_f32(h, dst, 4);
    CHECK(memcmp(src, dst, sizeof src) == 0, "F16 row round trip");
    wtype_get(WT_BF16)->from_f32(src, h, 4);
    CHECK(h[0] == 0x3f80 && h[1] == 0xc020 && h[3] == 0, "BF16 row");
    float f32b[4];
    wtype_get(WT_F32)->from_f32(src, f32b, 4);
    wtype_get(WT_F32)->to_f32(f32b, dst, 4);
    CHECK(memcmp(src, dst, sizeof src) == 0, "F32 row");
}

// ---- byte identity with the reference quantizer's files ----
static int open_ref(gguf_file *g, const char *dir, const char *name) {
    char path[1024];
    errbuf err = {{0}};
    snprintf(path, sizeof path, "%s/models/%s", dir, name);
    int r = gguf_open(g, path, &err);
    CHECK(r == 0, "open %s: %s", path, err.msg);
    return r;
}

// Quantizes every 2-D F16 tensor of src with the reference quantizer of `type` and compares
// with the same tensor of ref. Returns identical / total block counts.
static void compare_quant(const gguf_file *src, const gguf_file *ref, uint32_t type,
                          uint64_t *same, uint64_t *total, int *n_tensors) {
    const wtype_info *ti = wtype_get(type);
    *same = *total = 0;
    *n_tensors = 0;
    for (uint64_t i = 0; i < src->n_tensors; i++) {
        const gguf_tensor *s = &src->tensors[i];
        const gguf_tensor *r = gguf_find_tensor(ref, s->name);
        CHECK(r != NULL, "%s missing in the %s file", s->name, ti->name);
        if (!r) continue;
        CHECK(r->n_dims == s->n_dims && memcmp(r->ne, s->ne, sizeof r->ne) == 0, "%s shape", s->name);
        if (s->n_dims != 2) {
            // 1-D (norms): F32 in both files ("pure" mode keeps them F32)
            CHECK(s->type == WT_F32 && r->type == WT_F32 && r->n_bytes == s->n_bytes &&
                  memcmp(r->data, s->data, s->n_bytes) == 0, "%s: 1-D tensor differs", s->name);
            continue;
        }
        CHECK(s->type == WT_F16, "%s in the F16 file has type %s", s->name, wtype_name(s->type));
        CHECK(r->type == type, "%s in the %s file has type %s", s->name, ti->name, wtype_name(r->type));
        if (s->type != WT_F16 || r->type != type) continue;
        (*n_tensors)++;
        uint64_t n = s->n_elements, nb = n / ti->block_size;
        float *x = xmalloc(n * sizeof *x);
        uint8_t *q = xmalloc(r->n_bytes);
        wtype_get(WT_F16)->to_f32(s->data, x, (int64_t)n);
        ti->from_f32(x, q, (int64_t)n);
        uint64_t tsame = 0;
        int shown = 0;
        for (uint64_t b = 0; b < nb; b++) {
            const uint8_t *mine = q + b * ti->block_bytes;
            const uint8_t *theirs = (const uint8_t *)r->data + b * ti->block_bytes;
            if (memcmp(mine, theirs, ti->block_bytes) == 0) { tsame++; continue; }
            if (shown++ < 3) {
                fprintf(stderr, "%s %s block %" PRIu64 " differs:\n  mine:  ", ti->name, s->name, b);
                for (uint32_t k = 0; k < ti->block_bytes; k++) fprintf(stderr, "%02x", mine[k]);
                fprintf(stderr, "\n  theirs:");
                for (uint32_t k = 0; k < ti->block_bytes; k++) fprintf(stderr, "%02x", theirs[k]);
                fprintf(stderr, "\n");
            }
        }
        CHECK(tsame == nb, "%s %s: %" PRIu64 " of %" PRIu64 " blocks identical", ti->name,
              s->name, tsame, nb);
        *same += tsame;
        *total += nb;
        free(x);
        free(q);
    }
}

static void test_ref_identity(void) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref not present: Q4_0/Q8_0 byte identity not checked"); return; }
    gguf_file f16, q4, q8, bf;
    if (open_ref(&f16, dir, "llama-spm-d64-F16.gguf")) return;
    if (open_ref(&q4, dir, "llama-spm-d64-Q4_0.gguf") == 0) {
        uint64_t same, total;
        int nt;
        compare_quant(&f16, &q4, WT_Q4_0, &same, &total, &nt);
        printf("Q4_0: %" PRIu64 " of %" PRIu64 " blocks identical over %d 2-D tensors\n", same,
               total, nt);
        CHECK(total > 0 && nt >= 2 * 7 + 2, "Q4_0: only %d 2-D tensors compared", nt);
        gguf_close(&q4);
    }
    if (open_ref(&q8, dir, "llama-spm-d64-Q8_0.gguf") == 0) {
        uint64_t same, total;
        int nt;
        compare_quant(&f16, &q8, WT_Q8_0, &same, &total, &nt);
        printf("Q8_0: %" PRIu64 " of %" PRIu64 " blocks identical over %d 2-D tensors\n", same,
               total, nt);
        CHECK(total > 0 && nt >= 2 * 7 + 2, "Q8_0: only %d 2-D tensors compared", nt);
        gguf_close(&q8);
    }
    // BF16: made from the same F16 file; F16 -> F32 -> BF16 is f32_to_bf16 (nearest even).
    if (open_ref(&bf, dir, "llama-spm-d64-BF16.gguf") == 0) {
        uint64_t same = 0, total = 0;
        for (uint64_t i = 0; i < f16.n_tensors; i++) {
            const gguf_tensor *s = &f16.tensors[i];
            const gguf_tensor *r = gguf_find_tensor(&bf, s->name);
            if (!r || s->type != WT_F16 || r->type != WT_BF16 || r->n_elements != s->n_elements) continue;
            const uint16_t *h = s->data, *b = r->data;
            for (uint64_t k = 0; k < s->n_elements; k++) {
                uint16_t bb;
                memcpy(&bb, b + k, 2);
                uint16_t hh;
                memcpy(&hh, h + k, 2);
                same += f32_to_bf16(fp16_to_f32(hh)) == bb;
                total++;
            }
        }
        printf("BF16: %" PRIu64 " of %" PRIu64 " values identical\n", same, total);
        CHECK(total > 0 && same == total, "BF16: %" PRIu64 " of %" PRIu64 " identical", same, total);
        gguf_close(&bf);
    }
    gguf_close(&f16);
}

// FP8 (E4M3 under an fp16 scale per 32, cabin's own): known codes both ways, ties to even,
// saturation, every finite code back to itself, the block quantizer's error bound, and GGUF
// files that never hold it (the writer refuses it with its reason; the reader sees type 63 as
// unknown).
static void test_fp8(void) {
    static const struct { float v; uint8_t code; } known[] = {
        { 0.0f, 0x00 }, { 0x1p-9f, 0x01 }, { 7 * 0x1p-9f, 0x07 }, { 0x1p-6f, 0x08 }, { 0.5f, 0x30 },
        { 1.0f, 0x38 }, { 1.125f, 0x39 }, { 1.75f, 0x3e }, { 2.0f, 0x40 }, { 240.0f, 0x77 },
        { 256.0f, 0x78 }, { 448.0f, 0x7e }, { -1.0f, 0xb8 }, { -448.0f, 0xfe },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        CHECK(f32_to_e4m3(known[i].v) == known[i].code, "e4m3(%g) = 0x%02x, expected 0x%02x", known[i].v,
              f32_to_e4m3(known[i].v), known[i].code);
        CHECK(e4m3_to_f32(known[i].code) == known[i].v, "e4m3 0x%02x = %g, expected %g", known[i].code,
              e4m3_to_f32(known[i].code), known[i].v);
    }
    // ties go to the even code; past 448 saturates; NaN stays NaN
    CHECK(f32_to_e4m3(1.0625f) == 0x38 && f32_to_e4m3(1.1875f) == 0x3a, "ties to even (normal)");
    CHECK(f32_to_e4m3(0x1p-10f) == 0x00 && f32_to_e4m3(3 * 0x1p-10f) == 0x02, "ties to even (subnormal)");
    CHECK(f32_to_e4m3(15.5f * 0x1p-4f) == 0x38, "a tie at the top of a binade carries into the next exponent (1.0)");
    CHECK(f32_to_e4m3(464.0f) == 0x7e && f32_to_e4m3(1e9f) == 0x7e && f32_to_e4m3(-1e9f) == 0xfe, "saturation");
    CHECK(isnan(e4m3_to_f32(0x7f)) && isnan(e4m3_to_f32(0xff)) && f32_to_e4m3(NAN) == 0x7f, "NaN");
    int back = 0;
    for (int c = 0; c < 256; c++)
        if ((c & 0x7f) != 0x7f) back += f32_to_e4m3(e4m3_to_f32((uint8_t)c)) == c;
    CHECK(back == 254, "every finite code encodes back to itself (%d of 254)", back);
    // a block: within half a step of its binade (relative 1/16) plus fp16 rounding of the scale
    float x[64], y[64];
    block_fp8 b[2];
    for (int i = 0; i < 64; i++) x[i] = (rng_uniform() - 0.5f) * (i < 32 ? 1.0f : 1e-3f);
    quantize_row_fp8(x, b, 64);
    dequantize_row_fp8(b, y, 64);
    double worst = 0;
    for (int i = 0; i < 64; i++) {
        float amax = 0;
        for (int j = i / 32 * 32; j < i / 32 * 32 + 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        double err = fabs((double)y[i] - x[i]) / (fabs(x[i]) / 16 + amax / 448 * 0x1p-9 * 2 + 1e-30);
        if (err > worst) worst = err;
    }
    CHECK(worst <= 1.0, "FP8 block round trip within half a step (worst error / bound %g)", worst);
    const wtype_info *t = wtype_get(WT_FP8);
    CHECK(t && t->in_memory_only && t->to_f32 && t->from_f32 && wtype_from_name("fp8") == WT_FP8 &&
          fabs(wtype_bpw(WT_FP8) - 8.5) < 1e-12, "FP8 in the table, cabin's own");
    gguf_writer *w = gguf_writer_new();
    errbuf err = {{0}};
    const uint64_t ne[2] = { 32, 2 };
    CHECK(gguf_add_tensor(w, "blk.0.ffn_up.weight", WT_FP8, 2, ne, b, &err) == -1 &&
          strstr(err.msg, "in-memory") && strstr(err.msg, "blk.0.ffn_up.weight"), "the writer refuses FP8: %s", err.msg);
    gguf_writer_free(w);
}

int main(void) {
    test_seed();
    test_fp8();
    test_fp16();
    test_bf16();
    test_quant_bounds();
    test_wtype_table();
    test_ref_identity();
    return test_finish();
}
