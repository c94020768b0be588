// The prefill kernels (cpu_kernels.matmul_prefill: AMX for F16 and BF16) against exact sums on
// fresh random inputs: odd k, row counts that are not a multiple of 16, random sub-ranges of
// rows, padded output strides, token counts on and off the 16-token blocks. Every output within
// the bound the kernels give (engine/cpu/kernels_amx_avx512.c: each product within 1.5 x 2^-16,
// plus float summation), and nothing written outside the rows and tokens asked for. Where no
// table has prefill kernels (no AMX-BF16, or the OS did not grant the tile state) it says so and
// skips. The seed is printed (tests/rng.h).
#include "engine/cpu/kernels.h"
#include "base/base.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <math.h>
#include <stdint.h>

static const float SENTINEL = -12345.5f;

static void fill(float *v, int64_t n) {
    static const float scales[] = { 1e-3f, 0.1f, 1.0f, 7.0f, 300.0f };
    const float s = scales[rng_int(5)];
    for (int64_t i = 0; i < n; i++) v[i] = rng_int(50) == 0 ? 0.0f : rng_uniform() * s;
}

// One case; 1 when every output is within its bound.
static int run_case(const cpu_kernels *kt, uint32_t type, int64_t k, int64_t rows, int64_t n, int64_t row0, int64_t row1,
                    int64_t ldy) {
    const wtype_info *ti = wtype_get(type);
    const size_t wrb = (size_t)wtype_row_bytes(type, (uint64_t)k);
    uint8_t *w = xmalloc((size_t)rows * wrb);
    float *wf = xmalloc(sizeof(float) * (size_t)(rows * k));
    for (int64_t r = 0; r < rows; r++) {
        fill(wf + r * k, k);
        ti->from_f32(wf + r * k, w + (size_t)r * wrb, k);
        ti->to_f32(w + (size_t)r * wrb, wf + r * k, k);   // the weights as stored
    }
    const size_t pbytes = cpu_r16_bytes(type, rows, k);
    uint8_t *packed = aligned_alloc(64, (pbytes + 63) / 64 * 64);
    cpu_pack_r16(type, w, wrb, rows, k, 0, (rows + 15) / 16, packed);
    float *x = xmalloc(sizeof(float) * (size_t)(n * k));
    for (int64_t t = 0; t < n; t++) fill(x + t * k, k);
    const enum act_format af = kt->act_format_prefill[type];
    const size_t xrb = cpu_act_row_bytes(af, k);
    const int64_t n_rows = (n + 15) / 16 * 16;
    uint8_t *xq = aligned_alloc(64, ((size_t)n_rows * xrb + 63) / 64 * 64);
    memset(xq, 0, (size_t)n_rows * xrb);
    cpu_act_prepare(kt, af, x, k, k, n, xq);
    float *y = xmalloc(sizeof(float) * (size_t)(n * ldy));
    for (int64_t i = 0; i < n * ldy; i++) y[i] = SENTINEL;
    kt->matmul_prefill[type](packed, 0, k, row0, row1, xq, xrb, n, y, ldy);
    int ok = 1;
    for (int64_t t = 0; t < n && ok; t++)
        for (int64_t r = 0; r < ldy && ok; r++) {
            const float v = y[t * ldy + r];
            if (r < row0 || r >= row1) {
                if (v != SENTINEL) printf("  wrote outside rows [%lld,%lld): y[%lld][%lld]\n", (long long)row0, (long long)row1,
                                          (long long)t, (long long)r), ok = 0;
                continue;
            }
            double exact = 0, mag = 0;
            for (int64_t i = 0; i < k; i++) {
                exact += (double)wf[r * k + i] * x[t * k + i];
                mag += fabs((double)wf[r * k + i] * x[t * k + i]);
            }
            const double bound = (1.5 * 0x1p-16 + 2.0 * (double)(k + 2) * 0x1p-24) * mag * 1.01 + 1e-30;
            if (!(fabs(v - exact) <= bound)) {
                printf("  %s k=%lld: y[%lld][%lld] = %.9g, exact %.9g (bound %.3g)\n", ti->name, (long long)k, (long long)t,
                       (long long)r, v, exact, bound);
                ok = 0;
            }
        }
    free(w);
    free(wf);
    free(packed);
    free(x);
    free(xq);
    free(y);
    return ok;
}

static void test_table(const cpu_kernels *kt) {
    static const uint32_t types[] = { WT_F16, WT_BF16 };
    static const int64_t ks[] = { 1, 17, 32, 33, 100, 2048 + 48 };
    static const int64_t rows_list[] = { 16, 17, 48, 67 };
    static const int64_t n_list[] = { 16, 17, 33, 64, 70, 131 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        if (!kt->matmul_prefill[type]) {
            SKIP("%s: no %s prefill kernel", kt->name, wtype_name(type));
            continue;
        }
        int cases = 0, failed = 0;
        for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
            for (size_t b = 0; b < sizeof rows_list / sizeof rows_list[0]; b++)
                for (size_t c = 0; c < sizeof n_list / sizeof n_list[0]; c++) {
                    const int64_t rows = rows_list[b], n = n_list[c];
                    int64_t row0 = 0, row1 = rows, ldy = rows;
                    if (rng_int(2)) {   // half the cases: a random sub-range of rows, a padded stride
                        row0 = rng_int((int)rows);
                        row1 = row0 + 1 + rng_int((int)(rows - row0));
                        ldy = rows + 1 + rng_int(7);
                    }
                    cases++;
                    if (!run_case(kt, type, ks[a], rows, n, row0, row1, ldy)) {
                        failed++;
                        printf("  ^ %s k=%lld rows=%lld n=%lld rows [%lld,%lld) ldy=%lld\n", wtype_name(type), (long long)ks[a],
                               (long long)rows, (long long)n, (long long)row0, (long long)row1, (long long)ldy);
                    }
                }
        CHECK(failed == 0, "%s %s prefill: %d of %d cases out of bounds", kt->name, wtype_name(type), failed, cases);
        printf("%s %s prefill (%d tokens or more): %d cases\n", kt->name, wtype_name(type), kt->prefill_min_tokens, cases);
    }
}

int main(void) {
    test_seed();
    const cpu_features *f = cpu_get_features();
    const cpu_kernels *tables[2] = { cpu_kernels_avx512(), cpu_kernels_avx512_bf16() };
    int tested = 0;
    for (int i = 0; i < 2; i++) {
        if (!tables[i] || (i == 1 && tables[1] == tables[0]) || !tables[i]->prefill_min_tokens) continue;
        test_table(tables[i]);
        tested++;
    }
    if (!tested)
        SKIP("no prefill kernels here: AMX advertised %d, AMX-BF16 %d, tile state granted by the OS %d", f->amx_tile_advertised,
             f->amx_bf16, f->amx_usable);
    return test_finish();
}
