// The quantizers of engine/quantize.h on random and awkward rows (their byte identity with the
// reference files is tests/test_quantize_ref.c): round-trip error within each type's bound,
// exact zeros, no byte left unwritten, the importance-aware forms (all-ones importance gives the
// plain bytes; skewed importance lowers the importance-weighted error), the row-length
// fallbacks, and precision plans with K-quants: parsed, applied to a model whose rows are not
// a multiple of 256 (the fallback types), and chosen by the heat map's plan search.
#include "test.h"
#include "rng.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/quantize.h"
#include "engine/sensitivity.h"
#include "engine/wtype.h"

#include <math.h>
#include <unistd.h>

static float gauss(void) {
    float u1 = ((float)(rng_u64() >> 40) + 0.5f) / 16777216.0f, u2 = (float)(rng_u64() >> 40) / 16777216.0f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

// Each type with its bound on the relative RMS round-trip error of Gaussian rows (about 1.4x
// what the quantizer reaches with the default seed).
static const struct { uint32_t type; double rms_bound; } TYPES[] = {
    { WT_Q2_K, 0.44 }, { WT_Q3_K, 0.21 }, { WT_Q4_K, 0.12 }, { WT_Q5_K, 0.058 }, { WT_Q6_K, 0.025 },
    { WT_Q4_1, 0.125 }, { WT_Q5_0, 0.065 }, { WT_Q5_1, 0.058 }, { WT_IQ4_NL, 0.12 }, { WT_IQ4_XS, 0.12 },
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

// Rows of n weights: Gaussian, scaled per 16-weight group by a random factor (so groups differ),
// with the awkward groups mixed in: all zeros, constant, one spike, tiny (1e-30) values.
static void make_row(float *x, int n, bool awkward) {
    for (int g = 0; g < n; g += 16) {
        const float s = expf(2.0f * gauss() * 0.5f);
        const int kind = awkward ? (int)(rng_u64() % 6) : 5;
        for (int i = g; i < g + 16; i++) {
            switch (kind) {
            case 0: x[i] = 0.0f; break;
            case 1: x[i] = 0.5f; break;
            case 2: x[i] = i == g + 3 ? -7.0f : 0.01f * gauss(); break;
            case 3: x[i] = 1e-30f * gauss(); break;
            default: x[i] = s * gauss(); break;
            }
        }
    }
}

static void test_round_trip(void) {
    enum { N = 256 * 12 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    uint8_t *q0 = xmalloc(N * 2), *q1 = xmalloc(N * 2);
    for (size_t t = 0; t < N_TYPES; t++) {
        const wtype_info *ti = wtype_get(TYPES[t].type);
        // a row length that is a few blocks but not a power of two
        const int n = ti->block_size == 256 ? 256 * 7 : 32 * 13;
        const size_t bytes = (size_t)wtype_row_bytes(TYPES[t].type, (uint64_t)n);
        double err2 = 0, ref2 = 0;
        for (int rep = 0; rep < 8; rep++) {
            make_row(x, n, false);
            ti->from_f32(x, q0, n);
            ti->to_f32(q0, y, n);
            for (int i = 0; i < n; i++) {
                err2 += (double)(x[i] - y[i]) * (x[i] - y[i]);
                ref2 += (double)x[i] * x[i];
            }
        }
        const double rms = sqrt(err2 / ref2);
        printf("%-6s relative RMS round-trip error %.4f (bound %.3f)\n", ti->name, rms, TYPES[t].rms_bound);
        CHECK(rms < TYPES[t].rms_bound, "%s: relative RMS error %.4f over %.3f", ti->name, rms, TYPES[t].rms_bound);
        // awkward groups: every output finite and within half the row's largest magnitude, zero groups decode to exact zeros, and every byte
        // written (two quantizations into differently pre-filled buffers agree)
        int bad = 0, nonzero_zero = 0;
        for (int rep = 0; rep < 8; rep++) {
            make_row(x, n, true);
            memset(q0, 0x00, bytes);
            memset(q1, 0xff, bytes);
            ti->from_f32(x, q0, n);
            ti->from_f32(x, q1, n);
            CHECK(memcmp(q0, q1, bytes) == 0, "%s: a byte of the block is left unwritten", ti->name);
            ti->to_f32(q0, y, n);
            const float amax = max_abs(x, n);
            for (int i = 0; i < n; i++) {
                bad += !isfinite(y[i]) || fabsf(y[i] - x[i]) > 0.5f * amax;
                nonzero_zero += x[i] == 0.0f && y[i] != 0.0f && (ti->block_size == 32 || TYPES[t].type == WT_Q6_K);
            }
        }
        CHECK(bad == 0, "%s: %d awkward weights decode far off or not finite", ti->name, bad);
        // Q4_1/Q5_1/IQ4 and the K-quants with mins may shift a zero inside a mixed block; a
        // symmetric type's zero (Q5_0, Q6_K) stays exactly zero
        if (TYPES[t].type == WT_Q5_0 || TYPES[t].type == WT_Q6_K)
            CHECK(nonzero_zero == 0, "%s: %d zero weights decode non-zero", ti->name, nonzero_zero);
        // an all-zero row decodes to zeros
        memset(x, 0, (size_t)n * sizeof *x);
        ti->from_f32(x, q0, n);
        ti->to_f32(q0, y, n);
        int nz = 0;
        for (int i = 0; i < n; i++) nz += y[i] != 0.0f;
        CHECK(nz == 0, "%s: an all-zero row decodes to %d non-zeros", ti->name, nz);
    }
    free(x); free(y); free(q0); free(q1);
}

static double weighted_err(uint32_t type, const float *x, const double *imp, const uint8_t *q, int n, float *y) {
    wtype_get(type)->to_f32(q, y, n);
    double e = 0;
    for (int i = 0; i < n; i++) e += imp[i] * (double)(x[i] - y[i]) * (x[i] - y[i]);
    return e;
}

static void test_weighted(void) {
    const uint32_t kq[] = { WT_Q2_K, WT_Q3_K, WT_Q4_K, WT_Q5_K, WT_Q6_K };
    enum { N = 256 * 8 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    double *ones = xmalloc(N * sizeof *ones), *imp = xmalloc(N * sizeof *imp);
    uint8_t *qa = xmalloc(N), *qb = xmalloc(N);
    for (int i = 0; i < N; i++) ones[i] = 1.0;
    for (size_t t = 0; t < sizeof kq / sizeof kq[0]; t++) {
        const wtype_info *ti = wtype_get(kq[t]);
        quantize_weighted_fn wq = quantize_weighted_for(kq[t]);
        CHECK(wq != NULL, "%s: an importance-aware quantizer", ti->name);
        if (!wq) continue;
        double plain = 0, aware = 0;
        for (int rep = 0; rep < 6; rep++) {
            make_row(x, N, false);
            ti->from_f32(x, qa, N);
            wq(x, ones, qb, N);
            CHECK(memcmp(qa, qb, (size_t)wtype_row_bytes(kq[t], N)) == 0, "%s: all-ones importance changes the bytes", ti->name);
            // activations: a few loud columns (as real models have), the rest quiet
            for (int i = 0; i < N; i++) imp[i] = rng_u64() % 16 == 0 ? 50.0 + 50.0 * (double)(rng_u64() % 100) / 100 : 0.2;
            wq(x, imp, qb, N);
            plain += weighted_err(kq[t], x, imp, qa, N, y);
            aware += weighted_err(kq[t], x, imp, qb, N, y);
        }
        printf("%-6s importance-weighted error: plain %.4g, importance-aware %.4g (%.0f%% lower)\n", ti->name, plain,
               aware, 100 * (1 - aware / plain));
        CHECK(aware < 0.9 * plain, "%s: importance-aware error %.4g is not 10%% under plain %.4g", ti->name, aware, plain);
    }
    CHECK(quantize_weighted_for(WT_Q4_0) != NULL && quantize_weighted_for(WT_IQ4_NL) == NULL, "weighted table");
    free(x); free(y); free(ones); free(imp); free(qa); free(qb);
}

static void test_fit_type(void) {
    CHECK(quant_fit_type(WT_Q4_K, 512) == WT_Q4_K && quant_fit_type(WT_Q4_K, 64) == WT_Q5_0 &&
          quant_fit_type(WT_Q5_K, 704) == WT_Q5_1 && quant_fit_type(WT_Q6_K, 896) == WT_Q8_0 &&
          quant_fit_type(WT_Q2_K, 96) == WT_IQ4_NL && quant_fit_type(WT_Q3_K, 96) == WT_IQ4_NL &&
          quant_fit_type(WT_IQ4_XS, 160) == WT_IQ4_NL, "K-quant fallbacks");
    CHECK(quant_fit_type(WT_Q4_K, 48) == WT_F16 && quant_fit_type(WT_Q4_0, 48) == UINT32_MAX &&
          quant_fit_type(WT_Q4_0, 64) == WT_Q4_0 && quant_fit_type(WT_F16, 7) == WT_F16, "no fallback / F16");
}

// Plans name the new types; applied to a model with rows of 64 the K-quants take their
// fallbacks; the heat map's plan search upgrades Q4_K cells to Q6_K within a budget.
static void test_plans(void) {
    precision_plan p;
    errbuf err = {{0}};
    CHECK(plan_parse_shorthand(&p, "q4_k;q6_k:layers=0,attn_v,ffn_down;output=q6_k;token_embd=iq4_xs", 2, &err) == 0,
          "K-quant shorthand: %s", err.msg);
    CHECK(p.default_type == WT_Q4_K && plan_type_for(&p, 0, TK_ATTN_V) == WT_Q6_K && plan_type_for(&p, 1, TK_ATTN_V) == WT_Q4_K &&
          p.output_type == WT_Q6_K && p.token_embd_type == WT_IQ4_XS, "K-quant plan types");
    CHECK(plan_parse_json(&p, "{\"default\": \"Q5_K\", \"rules\": [{\"layers\": \"1\", \"tensors\": \"all\", \"type\": \"q3_k\"}]}",
                          "plan", 2, &err) == 0 && p.default_type == WT_Q5_K && plan_type_for(&p, 1, TK_FFN_UP) == WT_Q3_K,
          "K-quant JSON plan: %s", err.msg);
    CHECK(plan_parse_shorthand(&p, "q4_2", 2, &err) != 0 && strstr(err.msg, "Q4_K"), "unknown type lists the K-quants: %s", err.msg);

    char path[64];
    snprintf(path, sizeof path, "/tmp/cabin-kquant-%d.gguf", (int)getpid());
    modelgen_opts o = modelgen_defaults();   // dim 64, ffn 192: no row is a multiple of 256
    o.type = o.embd_type = WT_F16;
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return; }
    model *m;
    if (model_load(&m, path, &err)) { CHECK(0, "%s", err.msg); unlink(path); return; }
    plan_parse_shorthand(&p, "q4_k;q6_k:layers=1,ffn_down", o.n_layer, &err);
    CHECK(model_apply_plan(m, &p, NULL, &err) == 0, "apply a K-quant plan: %s", err.msg);
    CHECK(m->layers[0].wq.type == WT_Q5_0 && m->layers[0].w_down.type == WT_Q5_0 && m->layers[1].w_down.type == WT_Q8_0,
          "fallbacks applied: wq %s, w_down %s / %s", wtype_name(m->layers[0].wq.type), wtype_name(m->layers[0].w_down.type),
          wtype_name(m->layers[1].w_down.type));
    runner r;
    if (runner_open(&r, m, "auto", 1, KV_F16, 16, 4, &err) == 0) {
        float *logits = xmalloc((size_t)m->hp.n_vocab * sizeof *logits);
        int32_t prompt[3] = { 1, 30, 31 };
        CHECK(model_forward(&r.fc, &r.kv, prompt, 3, false, logits, &err) == 0, "forward: %s", err.msg);
        CHECK(isfinite(max_abs(logits, m->hp.n_vocab)), "logits finite under the fallback plan");
        free(logits);
    } else {
        CHECK(0, "%s", err.msg);
    }
    runner_close(&r);
    model_free(m);
    unlink(path);

    sensitivity_map map;
    sensitivity_map_init(&map, 2, WT_Q4_K);
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            sens_cell *c = sens_at(&map, l, k);
            c->done = true;
            c->n_weights = 4096;
            c->kl_mean = (l == 1 && k == TK_ATTN_V) ? 1e-2 : 1e-5 * (1 + k);
        }
    double bpw = 0;
    int kept = 0;
    const double budget = 4.5 + 2 * (6.5625 - 4.5) / 14;   // room for two Q6_K cells among 14
    CHECK(sensitivity_plan(&map, WT_Q6_K, budget, &p, &bpw, &kept, &err) == 0, "plan search with K-quants: %s", err.msg);
    CHECK(kept == 2 && bpw <= budget + 1e-9 && p.default_type == WT_Q4_K && plan_type_for(&p, 1, TK_ATTN_V) == WT_Q6_K &&
          plan_type_for(&p, 0, TK_ATTN_Q) == WT_Q4_K, "plan search: %d cells at Q6_K, %.4f bits/weight", kept, bpw);
    sensitivity_map_free(&map);
}

int main(void) {
    test_seed();
    test_round_trip();
    test_weighted();
    test_fit_type();
    test_plans();
    return test_finish();
}
