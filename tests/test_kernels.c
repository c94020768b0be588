// CPU kernel tables: every fast table (AVX2, AVX-512) against the scalar reference on fresh
// random inputs, for every weight type and for odd shapes, sub-ranges of rows and padded
// strides. The seed is printed (tests/rng.h: fixed by default, CABIN_TEST_SEED=N or =random).
#include "engine/cpu/kernels.h"
#include "engine/half.h"
#include "base/base.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

// Values of mixed magnitude: a per-row scale (small, unit, large) and a few exact zeros, so
// block scales vary and zero blocks happen.
static void fill_row(float *v, int64_t n) {
    static const float scales[] = { 1e-3f, 0.1f, 1.0f, 7.0f, 300.0f };
    const float s = scales[rng_int(5)];
    for (int64_t i = 0; i < n; i++) v[i] = rng_int(50) == 0 ? 0.0f : rng_uniform() * s;
    if (n >= 32 && rng_int(8) == 0) { // one all-zero block now and then
        int64_t b = rng_int((int)(n / 32));
        for (int j = 0; j < 32; j++) v[b * 32 + j] = 0.0f;
    }
}

static uint16_t ld_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

// ---------------------------------------------------------------------------------------------
// Matmul against the scalar table.

static const uint32_t types[] = { WT_F32, WT_F16, WT_BF16, WT_Q8_0, WT_Q4_0 };

static const float SENTINEL = -12345.5f;

// Tolerance of float kernels (and of a quantized kernel's float accumulation): relative to
// sum |w*x|, so a result near zero from cancelling terms is judged by the size of its terms.
static const double REL_TOL = 1e-5;

typedef struct {
    int64_t k, rows, n_tok, row0, row1, ldy;
} shape;

// Signed integer weight j of block b (Q4_0: nibble - 8, Q8_0: int8) and the block's scale.
static int q_weight(uint32_t type, const uint8_t *row, int64_t b, int j) {
    if (type == WT_Q4_0) {
        const uint8_t byte = row[b * 18 + 2 + (j & 15)];
        return (j < 16 ? byte & 15 : byte >> 4) - 8;
    }
    return (int8_t)row[b * 34 + 2 + j];
}
static float q_scale(uint32_t type, const uint8_t *row, int64_t b) {
    return fp16_to_f32(ld_u16(row + b * (type == WT_Q4_0 ? 18 : 34)));
}

// Returns 1 if every output of this case is within its bound; prints the first miss.
static int run_case(const cpu_kernels *fast, uint32_t type, shape s, int *n_checked) {
    const cpu_kernels *ref = cpu_kernels_scalar();
    const wtype_info *ti = wtype_get(type);
    const int64_t k = s.k, rows = s.rows, n_tok = s.n_tok;
    const size_t elem_align = type == WT_F32 ? 4 : 2;
    const size_t rb = (size_t)wtype_row_bytes(type, (uint64_t)k);
    const size_t wrb = rb + elem_align * (size_t)rng_int(3) * 3; // sometimes padded rows
    const size_t xs = (size_t)k + (size_t)rng_int(2) * 5;        // floats per activation row
    const enum act_format af = fast->act_format[type];
    const int quant_act = af == ACT_Q8_0, bf16_act = af == ACT_BF16;
    const size_t xqrb = cpu_act_row_bytes(af, k) + 2 * (size_t)rng_int(2);

    // Buffers start off vector alignment (+elem_align bytes, +1 float) to catch aligned loads.
    uint8_t *wbuf = xmalloc(rows * wrb + 64);
    uint8_t *w = wbuf + elem_align;
    memset(wbuf, 0xA5, rows * wrb + 64);
    float *wf = xmalloc(sizeof(float) * (size_t)(rows * k)); // dequantized weights
    float *tmp = xmalloc(sizeof(float) * (size_t)k);
    for (int64_t r = 0; r < rows; r++) {
        fill_row(tmp, k);
        ti->from_f32(tmp, w + r * wrb, k);
        ti->to_f32(w + r * wrb, wf + r * k, k);
    }
    float *xbuf = xmalloc(sizeof(float) * (n_tok * xs + 1));
    float *x = xbuf + 1;
    for (int64_t t = 0; t < n_tok; t++) fill_row(x + t * xs, k);
    uint8_t *xq = NULL;
    if (quant_act || bf16_act) {
        xq = xmalloc(n_tok * xqrb + 2);
        for (int64_t t = 0; t < n_tok; t++) cpu_act_prepare(fast, af, x + t * xs, 0, k, 1, xq + t * xqrb);
    }
    const size_t ny = (size_t)(n_tok * s.ldy);
    float *yr = xmalloc(sizeof(float) * ny), *yf = xmalloc(sizeof(float) * ny);
    for (size_t i = 0; i < ny; i++) yr[i] = yf[i] = SENTINEL;

    ref->matmul[type](w, wrb, k, s.row0, s.row1, x, xs * 4, n_tok, yr, s.ldy);
    if (xq)
        fast->matmul[type](w, wrb, k, s.row0, s.row1, xq, xqrb, n_tok, yf, s.ldy);
    else
        fast->matmul[type](w, wrb, k, s.row0, s.row1, x, xs * 4, n_tok, yf, s.ldy);

    // The table's kernel over the row-interleaved layout (cpu_pack_r16), when it has one: the
    // same checks on its outputs, packed from the same rows.
    float *yp = NULL;
    uint8_t *packed = NULL;
    if (fast->matmul_packed[type]) {
        const size_t pbytes = cpu_r16_bytes(type, rows, k);
        packed = aligned_alloc(64, (pbytes + 63) / 64 * 64);
        memset(packed, 0x5A, pbytes);
        const int64_t ng = (rows + 15) / 16, mid = ng / 2;   // packed in two calls, as threads do
        cpu_pack_r16(type, w, wrb, rows, k, 0, mid, packed);
        cpu_pack_r16(type, w, wrb, rows, k, mid, ng, packed);
        yp = xmalloc(sizeof(float) * ny);
        for (size_t i = 0; i < ny; i++) yp[i] = SENTINEL;
        if (xq) fast->matmul_packed[type](packed, 0, k, s.row0, s.row1, xq, xqrb, n_tok, yp, s.ldy);
        else fast->matmul_packed[type](packed, 0, k, s.row0, s.row1, x, xs * 4, n_tok, yp, s.ldy);   // float activations (F16)
    }

    int ok = 1;
    for (int pass = 0; pass < (yp ? 2 : 1) && ok; pass++)
    for (int64_t t = 0; t < n_tok && ok; t++) {
        for (int64_t r = 0; r < s.ldy && ok; r++) {
            const float vr = yr[t * s.ldy + r], vf = (pass ? yp : yf)[t * s.ldy + r];
            const char *kname = pass ? "r16" : "";
            if (r < s.row0 || r >= s.row1) {
                if (vr != SENTINEL || vf != SENTINEL) {
                    printf("  %s%s %s: wrote outside rows [%lld,%lld): y[%lld][%lld]\n", fast->name,
                           kname, ti->name, (long long)s.row0, (long long)s.row1, (long long)t,
                           (long long)r);
                    ok = 0;
                }
                continue;
            }
            const float *wr = wf + r * k, *xt = x + t * xs;
            double exact = 0, mag = 0;
            for (int64_t i = 0; i < k; i++) {
                exact += (double)wr[i] * xt[i];
                mag += fabs((double)wr[i] * xt[i]);
            }
            (*n_checked)++;
            // The reference itself: double sums of exactly dequantized weights.
            if (!(fabs(vr - exact) <= 1e-6 * mag + 1e-30)) {
                printf("  scalar %s: y[%lld][%lld] = %.9g, exact %.9g\n", ti->name, (long long)t,
                       (long long)r, vr, exact);
                ok = 0;
                break;
            }
            if (bf16_act) {
                // Activations rounded to bf16: (1) against the exact sum over the rounded
                // activations, within float summation (2(k+2)u of the terms); (2) against the
                // scalar f32 result, within the rounding (2^-8 of each term) as well.
                const uint16_t *xb = (const uint16_t *)(const void *)(xq + t * xqrb);
                double yb = 0, magb = 0;
                for (int64_t i = 0; i < k; i++) {
                    yb += (double)wr[i] * bf16_to_f32(xb[i]);
                    magb += fabs((double)wr[i] * bf16_to_f32(xb[i]));
                }
                const double sum_err = 2.0 * (double)(k + 2) * 0x1p-24 * magb;
                if (!(fabs(vf - yb) <= sum_err + 1e-30) ||
                    !(fabs(vf - vr) <= 0x1p-8 * mag * 1.01 + sum_err + REL_TOL * mag + 1e-30)) {
                    printf("  %s%s %s k=%lld: y[%lld][%lld] = %.9g, over bf16 activations %.9g, scalar %.9g\n",
                           fast->name, kname, ti->name, (long long)k, (long long)t, (long long)r, vf, yb, vr);
                    ok = 0;
                }
                continue;
            }
            if (!quant_act) {
                if (!(fabs(vf - vr) <= REL_TOL * mag + 1e-30)) {
                    printf("  %s %s k=%lld: y[%lld][%lld] = %.9g, scalar %.9g (sum|wx| %.3g)\n",
                           fast->name, ti->name, (long long)k, (long long)t, (long long)r, vf, vr,
                           mag);
                    ok = 0;
                }
                continue;
            }
            // Quantized activations. (1) Against the same computation in integers: the int
            // block dot products are exact, so only the float scaling/accumulation differs.
            // (2) Against the scalar f32 result: the difference is the activation rounding,
            // bounded per element by d/2 (round to nearest) + |d - fp16(d)| * 127 (the scale
            // is stored as fp16 after q was computed from the float d).
            const uint8_t *wrow = w + r * wrb, *xrow = xq + t * xqrb;
            double yint = 0, magq = 0, bound = 0;
            for (int64_t b = 0; b < k / 32; b++) {
                const double dd = (double)q_scale(type, wrow, b) * fp16_to_f32(ld_u16(xrow + b * 34));
                int64_t isum = 0, iabs = 0;
                double wabs = 0;
                float amax = 0;
                for (int j = 0; j < 32; j++) {
                    const int p = q_weight(type, wrow, b, j) * (int8_t)xrow[b * 34 + 2 + j];
                    isum += p;
                    iabs += p < 0 ? -p : p;
                    wabs += fabs(wr[b * 32 + j]);
                    amax = fmaxf(amax, fabsf(xt[b * 32 + j]));
                }
                yint += dd * (double)isum;
                magq += fabs(dd) * (double)iabs;
                const float d = amax / 127.0f;
                bound += wabs * (d / 2.0 + fabs((double)d - fp16_to_f32(f32_to_fp16(d))) * 127.0);
            }
            if (!(fabs(vf - yint) <= REL_TOL * magq + 1e-30)) {
                printf("  %s%s %s k=%lld: y[%lld][%lld] = %.9g, integer reference %.9g (mag %.3g)\n",
                       fast->name, kname, ti->name, (long long)k, (long long)t, (long long)r, vf, yint,
                       magq);
                ok = 0;
            } else if (!(fabs(vf - vr) <= bound * 1.01 + REL_TOL * (magq + mag) + 1e-30)) {
                printf("  %s%s %s k=%lld: y[%lld][%lld] = %.9g, scalar %.9g, activation bound %.3g\n",
                       fast->name, kname, ti->name, (long long)k, (long long)t, (long long)r, vf, vr,
                       bound);
                ok = 0;
            }
        }
    }
    free(wbuf);
    free(wf);
    free(tmp);
    free(xbuf);
    free(xq);
    free(yr);
    free(yf);
    free(yp);
    free(packed);
    return ok;
}

static void test_matmul(const cpu_kernels *fast) {
    static const int64_t ks_q[] = { 32, 64, 96, 160, 224, 4096 + 32 };
    static const int64_t ks_f[] = { 1, 5, 17, 32, 33, 100, 224, 4096 + 32 + 3 };
    static const int64_t rows_list[] = { 1, 3, 17, 48, 67 };
    static const int64_t ntok_list[] = { 1, 2, 3, 5, 8, 13, 33 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        if (!fast->matmul[type]) {
            SKIP("%s: no %s matmul", fast->name, wtype_name(type));
            continue;
        }
        const int q = wtype_get(type)->block_size == 32;
        const int64_t *ks = q ? ks_q : ks_f;
        const size_t nk = q ? sizeof ks_q / sizeof ks_q[0] : sizeof ks_f / sizeof ks_f[0];
        int cases = 0, failed = 0, outputs = 0;
        for (size_t a = 0; a < nk; a++)
            for (size_t b = 0; b < sizeof rows_list / sizeof rows_list[0]; b++)
                for (size_t c = 0; c < sizeof ntok_list / sizeof ntok_list[0]; c++) {
                    shape s = { ks[a], rows_list[b], ntok_list[c], 0, rows_list[b], rows_list[b] };
                    // Half the cases: a random sub-range of rows and a padded output stride.
                    if (rng_int(2)) {
                        s.row0 = rng_int((int)s.rows);
                        s.row1 = s.row0 + 1 + rng_int((int)(s.rows - s.row0));
                        s.ldy = s.rows + 1 + rng_int(7);
                    }
                    cases++;
                    if (!run_case(fast, type, s, &outputs)) {
                        failed++;
                        printf("  ^ case k=%lld rows=%lld n_tok=%lld rows [%lld,%lld) ldy=%lld\n",
                               (long long)s.k, (long long)s.rows, (long long)s.n_tok,
                               (long long)s.row0, (long long)s.row1, (long long)s.ldy);
                    }
                }
        // Long rows: the activations of 33 tokens no longer fit one token group (kernels
        // work through tokens in groups sized for the cache).
        static const int64_t long_ntok[] = { 7, 21, 33 };
        for (size_t c = 0; c < sizeof long_ntok / sizeof long_ntok[0]; c++) {
            shape s = { q ? 16384 + 32 : 16384 + 5, 5, long_ntok[c], 1, 4, 6 };
            cases++;
            if (!run_case(fast, type, s, &outputs)) {
                failed++;
                printf("  ^ case k=%lld n_tok=%lld\n", (long long)s.k, (long long)s.n_tok);
            }
        }
        CHECK(failed == 0, "%s %s matmul: %d of %d cases out of bounds", fast->name,
              wtype_name(type), failed, cases);
        printf("%s %s matmul: %d cases, %d outputs checked, %d failed\n", fast->name,
               wtype_name(type), cases, outputs, failed);
    }
}

// ---------------------------------------------------------------------------------------------
// Activation quantizer against quantize_row_q8_0_ref.

static void test_quantize(const cpu_kernels *fast) {
    static const int64_t ks[] = { 32, 64, 96, 160, 4096 + 32 };
    int bad_d = 0, bad_q = 0, near_half = 0, blocks = 0;
    for (int rep = 0; rep < 40; rep++) {
        const int64_t k = ks[rep % 5];
        float *x = xmalloc(sizeof(float) * (size_t)k);
        fill_row(x, k);
        if (rep == 0) { // halves exactly: amax 127 gives d = 1, so x*id = x lands on .5
            for (int j = 0; j < 32; j++) x[j] = (float)(j - 16) + 0.5f;
            x[31] = 127.0f;
        }
        block_q8_0 *yr = xmalloc(sizeof(block_q8_0) * (size_t)(k / 32));
        block_q8_0 *yf = xmalloc(sizeof(block_q8_0) * (size_t)(k / 32));
        quantize_row_q8_0_ref(x, yr, k);
        fast->quantize_act_q8_0(x, yf, k);
        for (int64_t b = 0; b < k / 32; b++) {
            blocks++;
            // The scale may differ by float rounding only: at most one fp16 step.
            if (abs((int)yr[b].d - (int)yf[b].d) > 1) bad_d++;
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int j = 0; j < 32; j++) {
                if (yr[b].qs[j] == yf[b].qs[j]) continue;
                const double v = fabs((double)(x[b * 32 + j] * id));
                if (abs(yr[b].qs[j] - yf[b].qs[j]) == 1 && fabs(v - floor(v) - 0.5) < 1e-6)
                    near_half++;
                else
                    bad_q++;
            }
        }
        free(x);
        free(yr);
        free(yf);
    }
    CHECK(bad_d == 0, "%s quantize_act_q8_0: %d of %d block scales differ", fast->name, bad_d, blocks);
    CHECK(bad_q == 0, "%s quantize_act_q8_0: %d quants differ", fast->name, bad_q);
    printf("%s quantize_act_q8_0: %d blocks, %d ties rounded differently\n", fast->name, blocks,
           near_half);
}

// The Q8_K activation quantizer against quantize_row_q8_k_ref, byte for byte: random rows of
// every scale, and blocks whose largest magnitude comes twice with both signs (the first one's
// sign sets the scale), all zero, or one element alone.
static void test_quantize_q8_k(const cpu_kernels *fast) {
    int bad = 0, blocks = 0;
    for (int rep = 0; rep < 60; rep++) {
        const int64_t k = QK_K * (1 + rep % 5);
        float *x = xmalloc(sizeof(float) * (size_t)k);
        fill_row(x, k);
        const int64_t b0 = rng_int((int)(k / QK_K)) * QK_K;
        switch (rep % 4) {
        case 1: {   // +a then -a (or the other way): the first sets the sign
            const int i = rng_int(QK_K / 2), j = QK_K / 2 + rng_int(QK_K / 2);
            const float a = 1000.0f * (rng_int(2) ? 1 : -1);
            x[b0 + i] = a;
            x[b0 + j] = -a;
            break;
        }
        case 2: memset(x + b0, 0, QK_K * sizeof(float)); break;
        case 3:
            memset(x + b0, 0, QK_K * sizeof(float));
            x[b0 + rng_int(QK_K)] = -rng_uniform() - 0.5f;
            break;
        }
        block_q8_k *yr = xcalloc((size_t)(k / QK_K), sizeof *yr), *yf = xcalloc((size_t)(k / QK_K), sizeof *yf);
        quantize_row_q8_k_ref(x, yr, k);
        fast->quantize_act_q8_k(x, yf, k);
        for (int64_t b = 0; b < k / QK_K; b++, blocks++) bad += memcmp(&yr[b], &yf[b], sizeof yr[b]) != 0;
        free(x);
        free(yr);
        free(yf);
    }
    CHECK(bad == 0, "%s quantize_act_q8_k: %d of %d blocks differ from quantize_row_q8_k_ref", fast->name, bad, blocks);
}

// ---------------------------------------------------------------------------------------------
// Row helpers on odd n; the elements past n must stay untouched.

static void test_helpers(const cpu_kernels *fast) {
    const cpu_kernels *ref = cpu_kernels_scalar();
    static const int64_t ns[] = { 0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 4097 };
    int bad_dot = 0, bad_dot16 = 0, bad_axpy = 0, bad_axpy16 = 0;
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const int64_t n = ns[c];
        float *a = xmalloc(sizeof(float) * (size_t)(n + 1) + 4), *b = xmalloc(sizeof(float) * (size_t)(n + 1));
        uint16_t *h = xmalloc(sizeof(uint16_t) * (size_t)(n + 2));
        float *y0 = xmalloc(sizeof(float) * (size_t)(n + 4)), *yr = xmalloc(sizeof(float) * (size_t)(n + 4)),
              *yf = xmalloc(sizeof(float) * (size_t)(n + 4));
        float *ao = a + 1; // off vector alignment
        uint16_t *ho = h + 1;
        fill_row(ao, n);
        fill_row(b, n);
        fill_row(y0, n);
        for (int64_t i = 0; i < n; i++) ho[i] = f32_to_fp16(ao[i]);
        double mag = 0, mag16 = 0;
        for (int64_t i = 0; i < n; i++) {
            mag += fabs((double)ao[i] * b[i]);
            mag16 += fabs((double)fp16_to_f32(ho[i]) * b[i]);
        }
        if (!(fabs(fast->dot_f32(ao, b, n) - ref->dot_f32(ao, b, n)) <= REL_TOL * mag + 1e-30)) bad_dot++;
        if (!(fabs(fast->dot_f16_f32(ho, b, n) - ref->dot_f16_f32(ho, b, n)) <= REL_TOL * mag16 + 1e-30))
            bad_dot16++;
        const float alpha = rng_uniform() * 3.0f;
        for (int pass = 0; pass < 2; pass++) {
            for (int64_t i = 0; i < n; i++) yr[i] = yf[i] = y0[i];
            for (int64_t i = n; i < n + 4; i++) yr[i] = yf[i] = SENTINEL;
            if (pass == 0) {
                ref->axpy_f32(alpha, ao, yr, n);
                fast->axpy_f32(alpha, ao, yf, n);
            } else {
                ref->axpy_f16_f32(alpha, ho, yr, n);
                fast->axpy_f16_f32(alpha, ho, yf, n);
            }
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                const double term = fabs((double)alpha * (pass ? fp16_to_f32(ho[i]) : ao[i]));
                // fused vs separate multiply-add: two roundings at most apart.
                if (!(fabs(yf[i] - yr[i]) <= 0x1p-22 * (fabs(y0[i]) + term) + 1e-30)) bad = 1;
            }
            for (int64_t i = n; i < n + 4; i++)
                if (yf[i] != SENTINEL) bad = 1;
            if (bad) *(pass ? &bad_axpy16 : &bad_axpy) += 1;
        }
        free(a);
        free(b);
        free(h);
        free(y0);
        free(yr);
        free(yf);
    }
    CHECK(bad_dot == 0, "%s dot_f32: %d sizes off", fast->name, bad_dot);
    CHECK(bad_dot16 == 0, "%s dot_f16_f32: %d sizes off", fast->name, bad_dot16);
    CHECK(bad_axpy == 0, "%s axpy_f32: %d sizes off or wrote past n", fast->name, bad_axpy);
    CHECK(bad_axpy16 == 0, "%s axpy_f16_f32: %d sizes off or wrote past n", fast->name, bad_axpy16);
}


// ---------------------------------------------------------------------------------------------
// Attention pieces on random tiles: head dims with and without the fast paths, 1..8 heads per kv
// head, odd tile lengths; nothing written outside the rows asked for.

static float max_abs(const float *x, int64_t n) {
    float m = 0;
    for (int64_t i = 0; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

static void test_attention(const cpu_kernels *fast) {
    const cpu_kernels *ref = cpu_kernels_scalar();
    static const int hds[] = { 64, 128, 80, 32, 16, 8, 96 };
    static const int Gs[] = { 1, 2, 3, 4, 5, 8 };
    static const int nss[] = { 1, 7, 16, 33, 64 };
    int bad_s = 0, bad_v = 0, cases = 0;
    for (size_t a = 0; a < sizeof hds / sizeof hds[0]; a++)
        for (size_t b = 0; b < sizeof Gs / sizeof Gs[0]; b++)
            for (size_t c = 0; c < sizeof nss / sizeof nss[0]; c++) {
                const int hd = hds[a], G = Gs[b], ns = nss[c], ld = ns + 3;
                float *q = xmalloc(sizeof(float) * (size_t)G * hd), *k = xmalloc(sizeof(float) * (size_t)ns * hd);
                float *sr = xmalloc(sizeof(float) * (size_t)G * ld), *sf = xmalloc(sizeof(float) * (size_t)G * ld);
                float *or = xmalloc(sizeof(float) * (size_t)G * hd), *of = xmalloc(sizeof(float) * (size_t)G * hd);
                fill_row(q, (int64_t)G * hd);
                fill_row(k, (int64_t)ns * hd);
                for (int i = 0; i < G * ld; i++) sr[i] = sf[i] = SENTINEL;
                const float scale = 0.125f;
                ref->attn_scores(q, G, k, ns, hd, scale, sr, ld);
                fast->attn_scores(q, G, k, ns, hd, scale, sf, ld);
                for (int g = 0; g < G; g++)
                    for (int i = 0; i < ld; i++) {
                        double mag = 0;
                        for (int d = 0; d < hd && i < ns; d++) mag += fabs((double)q[g * hd + d] * k[i * hd + d]);
                        float x = sr[g * ld + i], y = sf[g * ld + i];
                        if (i >= ns ? y != SENTINEL : !(fabs(x - y) <= REL_TOL * mag * scale + 1e-30)) bad_s++;
                    }
                // values: p rows as softmax weights, o accumulated onto random rows
                for (int g = 0; g < G; g++) for (int i = 0; i < ns; i++) sr[g * ld + i] = fabsf(rng_uniform());
                fill_row(or, (int64_t)G * hd);
                memcpy(of, or, sizeof(float) * (size_t)G * hd);
                ref->attn_values(sr, ld, G, k, ns, hd, or);
                fast->attn_values(sr, ld, G, k, ns, hd, of);
                for (int g = 0; g < G; g++)
                    for (int d = 0; d < hd; d++) {
                        double mag = fabs(or[g * hd + d]);
                        for (int i = 0; i < ns; i++) mag += fabs((double)sr[g * ld + i] * k[i * hd + d]);
                        if (!(fabs(or[g * hd + d] - of[g * hd + d]) <= REL_TOL * mag + 1e-30)) bad_v++;
                    }
                cases++;
                free(q); free(k); free(sr); free(sf); free(or); free(of);
            }
    CHECK(bad_s == 0, "%s attn_scores: %d of the scores differ from the reference", fast->name, bad_s);
    CHECK(bad_v == 0, "%s attn_values: %d outputs differ from the reference", fast->name, bad_v);

    // softmax numerators: scores spanning exp's range, -inf (masked), odd lengths
    int bad_e = 0;
    static const int64_t ens[] = { 1, 5, 16, 17, 31, 32, 33, 100, 4097 };
    for (size_t c = 0; c < sizeof ens / sizeof ens[0]; c++) {
        const int64_t n = ens[c];
        float *x = xmalloc(sizeof(float) * (size_t)(n + 2)), *xr = xmalloc(sizeof(float) * (size_t)(n + 2)),
              *xf = xmalloc(sizeof(float) * (size_t)(n + 2));
        float mx = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            x[i] = rng_int(9) == 0 ? -INFINITY : rng_uniform() * 60.0f;
            mx = x[i] > mx ? x[i] : mx;
        }
        for (int64_t i = 0; i < n + 2; i++) xr[i] = xf[i] = i < n ? x[i] : SENTINEL;
        float sr_ = ref->exp_shift(xr, n, mx), sf_ = fast->exp_shift(xf, n, mx);
        for (int64_t i = 0; i < n; i++)
            if (!(fabsf(xf[i] - xr[i]) <= 4e-7f * xr[i] + 1e-37f) || (x[i] == -INFINITY && xf[i] != 0.0f)) bad_e++;
        if (xf[n] != SENTINEL || xf[n + 1] != SENTINEL) bad_e++;
        if (!(fabsf(sf_ - sr_) <= 1e-5f * sr_)) bad_e++;
        free(x); free(xr); free(xf);
    }
    CHECK(bad_e == 0, "%s exp_shift: %d values or sums off", fast->name, bad_e);

    // RoPE rows: interleaved and neox pairs, rope dims with and without a vector remainder
    int bad_r = 0;
    static const int halves[] = { 32, 64, 8, 16, 20, 3, 40 };
    for (size_t c = 0; c < sizeof halves / sizeof halves[0]; c++)
        for (int neox = 0; neox < 2; neox++) {
            const int half = halves[c], n = 5, ld = 2 * half + 6;
            float *cs = xmalloc(sizeof(float) * (size_t)n * half * 2);
            float *rr = xmalloc(sizeof(float) * (size_t)n * ld), *rf = xmalloc(sizeof(float) * (size_t)n * ld);
            for (int i = 0; i < n * half; i++) {
                float th = rng_uniform() * 3.14159265f;
                cs[2 * i] = cosf(th);
                cs[2 * i + 1] = sinf(th);
            }
            fill_row(rr, (int64_t)n * ld);
            memcpy(rf, rr, sizeof(float) * (size_t)n * ld);
            const float in_mag = max_abs(rr, (int64_t)n * ld);
            ref->rope_rows(cs, half, neox, n, rr, ld);
            fast->rope_rows(cs, half, neox, n, rf, ld);
            for (int i = 0; i < n * ld; i++) {
                // each output is a*c +/- b*s: fused or not, two roundings of the products apart at
                // most (relative to the inputs: a result may be small by cancellation)
                if (!(fabsf(rr[i] - rf[i]) <= 0x1p-21f * (fabsf(rr[i]) + 2.0f * in_mag + 1.0f) * 4.0f)) bad_r++;
            }
            free(cs); free(rr); free(rf);
        }
    CHECK(bad_r == 0, "%s rope_rows: %d values off", fast->name, bad_r);
    printf("%s attention pieces: %d tile shapes, exp and rope checked\n", fast->name, cases);
}

// ---------------------------------------------------------------------------------------------
// KV cache tiles (engine/cpu/attn_kv.c): channel-major key tiles from per-channel codes (q8, q4,
// odd and even first slots) and from F16 rows, RoPE by slot (interleaved, NeoX, partial, none),
// scores over them, values summed from per-slot codes and from F16 rows, softmax with masked
// slots. Outputs are checked within rounding of the reference, and nothing is written past them.

// rows (hd) of ldt floats: [0, ns) within tol of the reference, [ns, ldt) untouched
static int tile_bad(const float *r, const float *f, int hd, int ns, int64_t ldt, float tol) {
    int bad = 0;
    for (int c = 0; c < hd; c++)
        for (int64_t i = 0; i < ldt; i++) {
            float a = r[c * ldt + i], b = f[c * ldt + i];
            if (i >= ns ? b != SENTINEL : !(fabsf(a - b) <= tol)) bad++;
        }
    return bad;
}

static void test_kv_tiles(const cpu_kernels *fast) {
    const cpu_kernels *ref = cpu_kernels_scalar();
    static const int hds[] = { 64, 128, 40, 72, 8 };
    static const int nss[] = { 1, 5, 16, 17, 63, 64, 65, 100, 128 };
    int bad_k = 0, bad_f = 0, bad_r = 0, bad_s = 0, bad_vq = 0, bad_vf = 0, cases = 0;
    const int64_t ldc = 211;                     // slot-major cos/sin: (half, 2, ldc)
    float *cst = xmalloc(sizeof(float) * 64 * 2 * ldc);
    for (int f = 0; f < 64; f++)
        for (int i = 0; i < ldc; i++) {
            float th = rng_uniform() * 3.14159265f;
            cst[2 * f * ldc + i] = cosf(th);
            cst[(2 * f + 1) * ldc + i] = sinf(th);
        }
    for (size_t a = 0; a < sizeof hds / sizeof hds[0]; a++)
        for (size_t b = 0; b < sizeof nss / sizeof nss[0]; b++) {
            const int hd = hds[a], ns = nss[b], bits = rng_int(2) ? 8 : 4, neox = rng_int(2);
            const int halves[3] = { 0, hd / 2, hd / 4 };
            const int half = halves[rng_int(3)];
            const int i0 = ns >= 128 ? 0 : rng_int(128 - ns + 1);   // odd first slots too
            const int64_t ldt = ns + 3;
            const size_t cstride = 128 * (size_t)bits / 8;
            uint8_t *codes = xmalloc(cstride * (size_t)hd);
            uint16_t *sm = xmalloc(sizeof(uint16_t) * 2 * (size_t)hd), *rows = xmalloc(sizeof(uint16_t) * (size_t)ns * (hd + 5));
            for (size_t i = 0; i < cstride * (size_t)hd; i++) codes[i] = (uint8_t)rng_int(256);
            for (int c = 0; c < hd; c++) {
                sm[2 * c] = f32_to_fp16(fabsf(rng_uniform()) * 0.05f);
                sm[2 * c + 1] = f32_to_fp16(rng_uniform() * 4.0f);
            }
            for (int i = 0; i < ns * (hd + 5); i++) rows[i] = f32_to_fp16(rng_uniform() * 8.0f);
            float *kr = xmalloc(sizeof(float) * (size_t)hd * ldt), *kf = xmalloc(sizeof(float) * (size_t)hd * ldt);
            // keys from codes, rotated
            for (int64_t i = 0; i < hd * ldt; i++) kr[i] = kf[i] = SENTINEL;
            ref->kq_tile(codes, cstride, bits, i0, sm, hd, ns, cst + i0, ldc, half, neox, kr, ldt);
            fast->kq_tile(codes, cstride, bits, i0, sm, hd, ns, cst + i0, ldc, half, neox, kf, ldt);
            bad_k += tile_bad(kr, kf, hd, ns, ldt, 4e-6f * 20.0f);
            // keys from F16 rows (stride hd + 5), rotated
            for (int64_t i = 0; i < hd * ldt; i++) kr[i] = kf[i] = SENTINEL;
            ref->f16_rows_t(rows, hd + 5, ns, hd, cst + i0, ldc, half, neox, kr, ldt);
            fast->f16_rows_t(rows, hd + 5, ns, hd, cst + i0, ldc, half, neox, kf, ldt);
            bad_f += tile_bad(kr, kf, hd, ns, ldt, 4e-6f * 16.0f);
            // RoPE alone, on that tile
            memcpy(kf, kr, sizeof(float) * (size_t)hd * ldt);
            if (hd / 2 > 0) {
                ref->rope_t(cst + 3, ldc, hd / 2, neox, ns, kr, ldt);
                fast->rope_t(cst + 3, ldc, hd / 2, neox, ns, kf, ldt);
                bad_r += tile_bad(kr, kf, hd, ns, ldt, 4e-6f * 16.0f);
            }
            // scores of G heads over the tile
            const int G = 1 + rng_int(7);
            float *q = xmalloc(sizeof(float) * (size_t)G * hd);
            float *sr = xmalloc(sizeof(float) * (size_t)G * ldt), *sf = xmalloc(sizeof(float) * (size_t)G * ldt);
            fill_row(q, (int64_t)G * hd);
            for (int64_t i = 0; i < G * ldt; i++) sr[i] = sf[i] = SENTINEL;
            ref->attn_scores_t(q, G, kr, ldt, ns, hd, 0.125f, sr, ldt);
            fast->attn_scores_t(q, G, kr, ldt, ns, hd, 0.125f, sf, ldt);
            for (int g = 0; g < G; g++)
                for (int64_t i = 0; i < ldt; i++) {
                    double mag = 0;
                    for (int c = 0; c < hd && i < ns; c++) mag += fabs((double)q[g * hd + c] * kr[c * ldt + i]);
                    if (i >= ns ? sf[g * ldt + i] != SENTINEL
                                : !(fabs(sr[g * ldt + i] - sf[g * ldt + i]) <= REL_TOL * mag * 0.125 + 1e-30)) bad_s++;
                }
            // values: ns slots of per-slot codes (row stride rb, channels c0.. of one group) and F16 rows
            const int c0 = rng_int(3), rb = (c0 + hd + 7) * bits / 8 + 1;
            uint8_t *vq = xmalloc((size_t)ns * rb);
            uint16_t *vp = xmalloc(sizeof(uint16_t) * 3 * (size_t)ns);
            for (int i = 0; i < ns * rb; i++) vq[i] = (uint8_t)rng_int(256);
            for (int i = 0; i < ns; i++) {
                vp[3 * i] = f32_to_fp16(fabsf(rng_uniform()) * 0.05f);
                vp[3 * i + 1] = f32_to_fp16(rng_uniform() * 4.0f);
            }
            for (int i = 0; i < G * ns; i++) sr[i] = fabsf(rng_uniform());   // weights, ldp = ns
            float *o0 = xmalloc(sizeof(float) * (size_t)(G * hd + 4)), *or = xmalloc(sizeof(float) * (size_t)(G * hd + 4)),
                  *of = xmalloc(sizeof(float) * (size_t)(G * hd + 4));
            fill_row(o0, (int64_t)G * hd);
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < G * hd + 4; i++) or[i] = of[i] = i < G * hd ? o0[i] : SENTINEL;
                if (pass == 0) {
                    ref->attn_values_q(sr, ns, G, vq, (size_t)rb, bits, c0, vp, 3, ns, hd, or, hd);
                    fast->attn_values_q(sr, ns, G, vq, (size_t)rb, bits, c0, vp, 3, ns, hd, of, hd);
                } else {
                    ref->attn_values_f16(sr, ns, G, rows, hd + 5, ns, hd, or);
                    fast->attn_values_f16(sr, ns, G, rows, hd + 5, ns, hd, of);
                }
                // terms are at most |p| * (4 + 0.05 * 255) or |p| * 8
                double tol = 1e-5 * (max_abs(o0, (int64_t)G * hd) + ns * 17.0);
                int bad = 0;
                for (int i = 0; i < G * hd + 4; i++)
                    if (i >= G * hd ? of[i] != SENTINEL : !(fabs(or[i] - of[i]) <= tol)) bad++;
                *(pass ? &bad_vf : &bad_vq) += bad;
            }
            cases++;
            free(codes); free(sm); free(rows); free(kr); free(kf); free(q); free(sr); free(sf);
            free(vq); free(vp); free(o0); free(or); free(of);
        }
    free(cst);
    CHECK(bad_k == 0, "%s kq_tile: %d values off", fast->name, bad_k);
    CHECK(bad_f == 0, "%s f16_rows_t: %d values off", fast->name, bad_f);
    CHECK(bad_r == 0, "%s rope_t: %d values off", fast->name, bad_r);
    CHECK(bad_s == 0, "%s attn_scores_t: %d scores off", fast->name, bad_s);
    CHECK(bad_vq == 0, "%s attn_values_q: %d outputs off", fast->name, bad_vq);
    CHECK(bad_vf == 0, "%s attn_values_f16: %d outputs off", fast->name, bad_vf);

    // softmax (masked slots, a fully masked row) and f16 -> f32
    int bad_m = 0, bad_c = 0;
    static const int64_t mns[] = { 1, 7, 16, 33, 1000, 4097 };
    for (size_t c = 0; c < sizeof mns / sizeof mns[0]; c++)
        for (int all_masked = 0; all_masked < 2; all_masked++) {
            const int64_t n = mns[c];
            float *xr = xmalloc(sizeof(float) * (size_t)(n + 2)), *xf = xmalloc(sizeof(float) * (size_t)(n + 2));
            uint16_t *h = xmalloc(sizeof(uint16_t) * (size_t)n);
            for (int64_t i = 0; i < n + 2; i++)
                xr[i] = xf[i] = i >= n ? SENTINEL : all_masked || rng_int(9) == 0 ? -INFINITY : rng_uniform() * 30.0f;
            ref->softmax(xr, n);
            fast->softmax(xf, n);
            for (int64_t i = 0; i < n; i++)
                if (!(fabsf(xf[i] - xr[i]) <= 1e-5f * xr[i] + 1e-7f)) bad_m++;
            if (xf[n] != SENTINEL || xf[n + 1] != SENTINEL) bad_m++;
            for (int64_t i = 0; i < n; i++) h[i] = (uint16_t)rng_u64();
            for (int64_t i = 0; i < n + 2; i++) xf[i] = SENTINEL;
            fast->f16_to_f32(h, xf, n);
            for (int64_t i = 0; i < n; i++) {
                float want = fp16_to_f32(h[i]);
                if (memcmp(&want, &xf[i], sizeof want) != 0 && !(want != want && xf[i] != xf[i])) bad_c++;
            }
            if (xf[n] != SENTINEL) bad_c++;
            free(xr); free(xf); free(h);
        }
    CHECK(bad_m == 0, "%s softmax: %d values off", fast->name, bad_m);
    CHECK(bad_c == 0, "%s f16_to_f32: %d values differ", fast->name, bad_c);
    printf("%s kv tiles: %d tile shapes (q8/q4 codes, f16 rows, rope variants), softmax, f16 rows checked\n",
           fast->name, cases);
}

// ---------------------------------------------------------------------------------------------

static void test_selection(void) {
    const cpu_features *f = cpu_get_features();
    printf("features: avx2 %d fma %d f16c %d avx512f %d bw %d vl %d dq %d vnni %d bf16 %d "
           "amx advertised %d usable %d\n",
           f->avx2, f->fma, f->f16c, f->avx512f, f->avx512bw, f->avx512vl, f->avx512dq,
           f->avx512vnni, f->avx512bf16, f->amx_tile_advertised, f->amx_usable);
    CHECK(!f->avx512f || f->avx2, "AVX-512F usable but not AVX2");
    CHECK(!cpu_kernels_avx512() || cpu_kernels_avx2(), "avx512 table without avx2 table");
    CHECK(!f->amx_usable || f->amx_tile_advertised, "AMX usable but not advertised");
    CHECK(cpu_get_features() == f, "features not cached");
    CHECK(cpu_kernels_scalar() != NULL, "no scalar table");
    CHECK(cpu_kernels_select("scalar") == cpu_kernels_scalar(), "select(scalar)");
    CHECK(cpu_kernels_select("avx2") == cpu_kernels_avx2(), "select(avx2)");
    CHECK(cpu_kernels_select("avx512") == cpu_kernels_avx512(), "select(avx512)");
    CHECK(cpu_kernels_select("sse9") == NULL, "select(unknown) not NULL");

    // CABIN_KERNELS steers "auto" and NULL; restore whatever the caller had set.
    const char *saved_env = getenv("CABIN_KERNELS");
    char *saved = saved_env ? xstrdup(saved_env) : NULL;
    unsetenv("CABIN_KERNELS");
    const cpu_kernels *best = cpu_kernels_avx512() ? cpu_kernels_avx512()
                              : cpu_kernels_avx2() ? cpu_kernels_avx2() : cpu_kernels_scalar();
    CHECK(cpu_kernels_select("auto") == best, "auto picked %s", cpu_kernels_select("auto")->name);
    CHECK(cpu_kernels_select(NULL) == best, "NULL is not auto");
    setenv("CABIN_KERNELS", "scalar", 1);
    CHECK(cpu_kernels_select(NULL) == cpu_kernels_scalar(), "CABIN_KERNELS=scalar ignored (NULL)");
    CHECK(cpu_kernels_select("auto") == cpu_kernels_scalar(), "CABIN_KERNELS=scalar ignored (auto)");
    CHECK(cpu_kernels_select("avx2") == cpu_kernels_avx2(), "CABIN_KERNELS overrode an explicit name");
    if (saved) setenv("CABIN_KERNELS", saved, 1);
    else unsetenv("CABIN_KERNELS");
    free(saved);
    printf("kernels: auto = %s\n", cpu_kernels_select("auto") ? cpu_kernels_select("auto")->name : "(none)");
}

int main(void) {
    test_seed();

    test_selection();
    const struct {
        const char *name;
        const cpu_kernels *k;
    } fast[] = { { "avx2", cpu_kernels_avx2() }, { "avx512", cpu_kernels_avx512() } };
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++) {
        if (!fast[i].k) {
            SKIP("%s kernels: this processor or OS does not allow them (see features above)",
                 fast[i].name);
            continue;
        }
        test_quantize(fast[i].k);
        test_quantize_q8_k(fast[i].k);
        test_helpers(fast[i].k);
        test_attention(fast[i].k);
        test_kv_tiles(fast[i].k);
        test_matmul(fast[i].k);
    }
    // On a processor with AVX-512 BF16 the avx512 table is one of two, with the vdpbf16ps kernels
    // in BF16's place or its own FMA ones (whichever is the faster here): the other one runs the
    // same checks, since this processor can run it.
    const cpu_kernels *other_avx512 = !cpu_kernels_avx512_bf16()                          ? NULL
                                      : cpu_kernels_avx512() == cpu_kernels_avx512_bf16() ? &cpu_kernels_avx512_table
                                                                                          : cpu_kernels_avx512_bf16();
    if (other_avx512) {
        printf("avx512 BF16: %s here; the other kernels checked too\n",
               cpu_kernels_avx512() == cpu_kernels_avx512_bf16() ? "vdpbf16ps" : "FMA");
        test_matmul(other_avx512);
    } else {
        SKIP("the avx512 table's second BF16 kernels: %s", cpu_kernels_avx512() ? "this processor has no AVX-512 BF16"
                                                                                  : "this processor does not run avx512");
    }
    // The scalar table's own helpers on the reference quantizer (they are the same function).
    block_q8_0 a[2], b[2];
    float x[64];
    fill_row(x, 64);
    cpu_kernels_scalar()->quantize_act_q8_0(x, a, 64);
    quantize_row_q8_0_ref(x, b, 64);
    CHECK(memcmp(a, b, sizeof a) == 0, "scalar quantize_act_q8_0 is not the reference");
    return test_finish();
}
