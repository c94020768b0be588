// The rope's scalings (engine/rope.c) and what the loader makes of them: the frequencies each
// scaling gives against their definitions, the keys and tensors that ask for them read from a
// file, a forward pass that turns by them, and the files refused in one line (an unknown
// rope.scaling.type, a YaRN form cabin does not compute, a tensor nobody reads).
#include "test.h"
#include "model_util.h"
#include "engine/gguf.h"
#include "engine/modelgen.h"
#include "engine/rope.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static double plain_freq(int i, int rope_dim, double base) { return pow(base, -2.0 * i / rope_dim); }

static void test_plain_and_factors(void) {
    rope_freqs f;
    rope_freqs_plain(&f, 32, 10000.0f);
    bool ok = f.mscale == 1.0f;
    for (int i = 0; i < 16; i++) ok = ok && f.freq[i] == plain_freq(i, 32, 10000.0);
    CHECK(ok, "plain rope: freq_i = base^(-2i/d), mscale 1");
    float cs[32];
    rope_cos_sin(7, &f, cs);
    CHECK(cs[0] == (float)cos(7.0) && cs[1] == (float)sin(7.0) && cs[2] == (float)cos(7.0 * plain_freq(1, 32, 1e4)),
          "rope_cos_sin: (cos, sin) of pos * freq_i, rounded once");
    // llama3: one divisor per pair, applied to the plain frequency
    float fac[16];
    for (int i = 0; i < 16; i++) fac[i] = i < 4 ? 1.0f : i < 8 ? 1.0f + (float)i : 32.0f;
    rope_scaling s = { .kind = ROPE_NONE, .factor = 1, .attn_factor = 1, .factors = fac };
    rope_freqs_make(&f, 32, 10000.0f, &s, 4096);
    ok = f.mscale == 1.0f;
    for (int i = 0; i < 16; i++) ok = ok && f.freq[i] == plain_freq(i, 32, 1e4) / fac[i];
    CHECK(ok, "factors: freq_i = plain / factor_i");
    // linear: every pair slowed by the factor
    s = (rope_scaling){ .kind = ROPE_LINEAR, .factor = 4, .attn_factor = 1 };
    rope_freqs_make(&f, 32, 10000.0f, &s, 4096);
    ok = true;
    for (int i = 0; i < 16; i++) ok = ok && fabs(f.freq[i] - plain_freq(i, 32, 1e4) / 4) < 1e-18;
    CHECK(ok, "linear x4: freq_i = plain / 4");
}

// YaRN over an original context of 256 at factor 4: a pair that makes more than beta_fast turns
// over the original context keeps its frequency, one that makes less than beta_slow turns is
// slowed by the factor, those between lie in between (slower the fewer turns they make); cos and
// sin are scaled by 1 + 0.1 ln 4.
static void test_yarn(void) {
    const int d = 64, orig = 256;
    const double base = 10000.0;
    rope_scaling s = { .kind = ROPE_YARN, .factor = 4, .n_ctx_orig = orig, .attn_factor = 1, .beta_fast = 32,
                       .beta_slow = 1, .ext_factor = 1 };
    rope_freqs f;
    rope_freqs_make(&f, d, (float)base, &s, 1024);
    CHECK(fabs(f.mscale - (1 + 0.1 * log(4.0))) < 1e-6, "yarn: mscale %g, want 1 + 0.1 ln 4", (double)f.mscale);
    int kept = 0, scaled = 0, between = 0;
    double prev_ratio = 1.0;
    bool ok = true;
    for (int i = 0; i < d / 2; i++) {
        double p = plain_freq(i, d, base), turns = orig * p / (2 * M_PI), ratio = f.freq[i] / p;
        if (turns > 32 + 2) { ok = ok && ratio == 1.0; kept++; }                 // well above beta_fast
        else if (turns < 1 / 2.0) { ok = ok && fabs(ratio - 0.25) < 1e-12; scaled++; }   // well below beta_slow
        else between++;
        ok = ok && ratio >= 0.25 - 1e-12 && ratio <= 1.0 + 1e-12 && ratio <= prev_ratio + 1e-12;
        prev_ratio = ratio;
    }
    CHECK(ok && kept > 0 && scaled > 0 && between > 0, "yarn: %d pairs kept, %d scaled by 1/4, %d between (monotone)",
          kept, scaled, between);
    s.ext_factor = 0;   // no ramp: every pair interpolated, no YaRN attention scale
    rope_freqs_make(&f, d, (float)base, &s, 1024);
    ok = f.mscale == 1.0f;
    for (int i = 0; i < d / 2; i++) ok = ok && fabs(f.freq[i] / plain_freq(i, d, base) - 0.25) < 1e-12;
    CHECK(ok, "yarn with ext_factor 0 is linear interpolation");
}

static void test_longrope(void) {
    float lf[8], sf[8];
    for (int i = 0; i < 8; i++) lf[i] = 1.0f + (float)i, sf[i] = 1.0f + 0.1f * (float)i;
    rope_scaling s = { .kind = ROPE_LONGROPE, .factor = 1, .n_ctx_orig = 256, .attn_factor = 1.19f,
                       .long_factors = lf, .short_factors = sf };
    rope_freqs lo, hi;
    rope_freqs_make(&lo, 16, 10000.0f, &s, 256);
    rope_freqs_make(&hi, 16, 10000.0f, &s, 257);
    bool ok = lo.mscale == 1.19f && hi.mscale == 1.19f;
    for (int i = 0; i < 8; i++)
        ok = ok && lo.freq[i] == plain_freq(i, 16, 1e4) / sf[i] && hi.freq[i] == plain_freq(i, 16, 1e4) / lf[i];
    CHECK(ok, "longrope: short factors up to the original context, long beyond; cos/sin x attn_factor");
    CHECK(!rope_freqs_same(&lo, &hi), "longrope: the two contexts turn differently");
}

// ---- files ----

typedef struct extra {
    const char *key, *str;       // a string key (str) or a float one
    float f;
    const char *tensor;          // an F32 vector tensor of n values v
    int n;
    float v;
} extra;

// The model at src with extras added (and tensors named drop left out), in memory.
static uint8_t *rewrite(const char *src, const extra *ex, int n_ex, uint64_t *size, errbuf *err) {
    gguf_file g;
    if (gguf_open(&g, src, err)) return NULL;
    gguf_writer *w = gguf_writer_new();
    gguf_copy_kvs(w, &g);
    float vals[4][64];
    for (int i = 0; i < n_ex; i++) {
        if (ex[i].key && ex[i].str) gguf_set_str(w, ex[i].key, ex[i].str);
        else if (ex[i].key) gguf_set_f32(w, ex[i].key, ex[i].f);
    }
    int r = 0, nv = 0;
    for (uint64_t i = 0; i < g.n_tensors && !r; i++)
        r = gguf_add_tensor(w, g.tensors[i].name, g.tensors[i].type, g.tensors[i].n_dims, g.tensors[i].ne, g.tensors[i].data, err);
    for (int i = 0; i < n_ex && !r; i++) {
        if (!ex[i].tensor || nv == 4) continue;
        for (int k = 0; k < ex[i].n && k < 64; k++) vals[nv][k] = ex[i].v;
        uint64_t ne[4] = { (uint64_t)ex[i].n, 1, 1, 1 };
        r = gguf_add_tensor(w, ex[i].tensor, WT_F32, 1, ne, vals[nv++], err);
    }
    uint8_t *buf = NULL;
    if (!r) r = gguf_write_memory(w, &buf, size, err);
    gguf_writer_free(w);
    gguf_close(&g);
    return r ? NULL : buf;
}

// Loads src with extras; returns the model or NULL with err.
static model *load_with(const char *src, const extra *ex, int n_ex, uint8_t **buf, errbuf *err) {
    uint64_t size;
    *buf = rewrite(src, ex, n_ex, &size, err);
    if (!*buf) return NULL;
    model *m = NULL;
    if (model_load_memory(&m, *buf, size, "rope-test.gguf", err)) return NULL;
    return m;
}

static void expect_refused(const char *src, const extra *ex, int n_ex, const char *want, const char *what) {
    uint8_t *buf;
    errbuf err = {{0}};
    model *m = load_with(src, ex, n_ex, &buf, &err);
    CHECK(!m && strstr(err.msg, want) && strstr(err.msg, "rope-test.gguf") && !strchr(err.msg, '\n'),
          "%s: want one line naming the file and '%s', got '%s'", what, want, err.msg);
    model_free(m);
    free(buf);
}

// The last position's logits of a short prompt on the scalar path.
static int logits_of(model *m, float *out, errbuf *err) {
    runner r;
    static const int32_t toks[] = { 1, 17, 29, 3, 41, 5, 60, 7, 8, 90, 10, 11 };
    int rc = runner_open(&r, m, "scalar", 1, KV_F32, 64, 12, err) ||
             model_forward(&r.fc, &r.kv, toks, 12, false, out, err);
    runner_close(&r);
    return rc ? -1 : 0;
}

static void test_files(void) {
    char src[] = "/tmp/cabin-rope-XXXXXX";
    int fd = mkstemp(src);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    close(fd);
    modelgen_opts o = modelgen_defaults();   // llama, dim 64, 4 heads: rope dims 16, 8 pairs
    errbuf err = {{0}};
    if (modelgen_write(&o, src, &err)) { CHECK(0, "%s", err.msg); unlink(src); return; }
    expect_refused(src, (extra[]){ { .key = "llama.rope.scaling.type", .str = "dynamic" } }, 1,
                   "llama.rope.scaling.type 'dynamic' is not supported", "an unknown rope scaling type");
    expect_refused(src, (extra[]){ { .key = "llama.rope.scaling.type", .str = "yarn" },
                                   { .key = "llama.rope.scaling.factor", .f = 4 },
                                   { .key = "llama.rope.scaling.yarn_log_multiplier", .f = 0.1f } }, 3,
                   "yarn_log_multiplier", "YaRN with a log multiplier");
    expect_refused(src, (extra[]){ { .tensor = "blk.0.attn_sinks.weight", .n = 4, .v = 1 } }, 1,
                   "tensor blk.0.attn_sinks.weight", "a tensor the forward pass does not read");
    expect_refused(src, (extra[]){ { .tensor = "rope_freqs.weight", .n = 5, .v = 1 } }, 1,
                   "rope_freqs.weight", "rope factors of the wrong length");
    expect_refused(src, (extra[]){ { .tensor = "rope_freqs.weight", .n = 8, .v = -1 } }, 1,
                   "factors are positive", "a negative rope factor");
    expect_refused(src, (extra[]){ { .tensor = "rope_factors_long.weight", .n = 8, .v = 2 } }, 1,
                   "longrope needs both", "longrope without its short factors");
    // a value head of another size than the key head: the cache keeps one size for both
    uint8_t *vb;
    uint64_t vsize;
    gguf_writer *vw = gguf_writer_new();
    gguf_file vg;
    if (gguf_open(&vg, src, &err) == 0) {
        gguf_copy_kvs(vw, &vg);
        gguf_set_u32(vw, "llama.attention.value_length", 8);
        int r = 0;
        for (uint64_t i = 0; i < vg.n_tensors && !r; i++)
            r = gguf_add_tensor(vw, vg.tensors[i].name, vg.tensors[i].type, vg.tensors[i].n_dims, vg.tensors[i].ne, vg.tensors[i].data, &err);
        model *vm = NULL;
        if (!r && gguf_write_memory(vw, &vb, &vsize, &err) == 0) {
            CHECK(model_load_memory(&vm, vb, vsize, "rope-test.gguf", &err) != 0 && strstr(err.msg, "value_length 8 differs"),
                  "a value length unlike the key length: %s", err.msg);
            model_free(vm);
            free(vb);
        }
        gguf_close(&vg);
    }
    gguf_writer_free(vw);
    // model_load_any keeps a file with a tensor nobody reads and names it (cabin info's view)
    uint64_t size;
    uint8_t *buf = rewrite(src, (extra[]){ { .tensor = "blk.1.something.weight", .n = 4, .v = 1 } }, 1, &size, &err);
    char extra_path[64];
    snprintf(extra_path, sizeof extra_path, "%s-extra", src);
    FILE *f = buf ? fopen(extra_path, "wb") : NULL;
    CHECK(f && fwrite(buf, 1, size, f) == size && fclose(f) == 0, "writing %s", extra_path);
    model *any = NULL;
    const char *names[2] = { NULL, NULL };
    CHECK(model_load_any(&any, extra_path, &err) == 0 && any->n_unused == 1 &&
          model_unused_tensors(any, names, 2) == 1 && !strcmp(names[0], "blk.1.something.weight"),
          "model_load_any: %s", err.msg);
    model_free(any);
    unlink(extra_path);
    free(buf);

    // rope_freqs of all ones turns exactly as the plain rope; factors above one change the logits
    model *plain = NULL, *ones = NULL, *slow = NULL, *yarn = NULL, *lin = NULL;
    uint8_t *b1 = NULL, *b2 = NULL, *b3 = NULL, *b4 = NULL;
    CHECK(model_load(&plain, src, &err) == 0, "%s", err.msg);
    ones = load_with(src, (extra[]){ { .tensor = "rope_freqs.weight", .n = 8, .v = 1 } }, 1, &b1, &err);
    CHECK(ones && ones->hp.rope_scaling.factors, "rope_freqs.weight of ones: %s", err.msg);
    slow = load_with(src, (extra[]){ { .tensor = "rope_freqs.weight", .n = 8, .v = 8 } }, 1, &b2, &err);
    CHECK(slow && slow->hp.rope_scaling.factors && slow->hp.rope_scaling.factors[3] == 8, "rope_freqs.weight of 8: %s", err.msg);
    yarn = load_with(src, (extra[]){ { .key = "llama.rope.scaling.type", .str = "yarn" },
                                     { .key = "llama.rope.scaling.factor", .f = 4 } }, 2, &b3, &err);
    CHECK(yarn && yarn->hp.rope_scaling.kind == ROPE_YARN && yarn->hp.rope_scaling.factor == 4 &&
          yarn->hp.rope_scaling.beta_fast == 32 && yarn->hp.rope_scaling.ext_factor == 1, "yarn keys: %s", err.msg);
    // a factor without a type is a linear one, as the reference reads it
    lin = load_with(src, (extra[]){ { .key = "llama.rope.scaling.factor", .f = 2 } }, 1, &b4, &err);
    CHECK(lin && lin->hp.rope_scaling.kind == ROPE_LINEAR && lin->hp.rope_scaling.factor == 2, "a factor without a type: %s",
          err.msg);
    if (plain && ones && slow && yarn) {
        int nv = plain->hp.n_vocab;
        float *a = xmalloc((size_t)nv * 4 * sizeof(float));
        bool ran = !logits_of(plain, a, &err) && !logits_of(ones, a + nv, &err) && !logits_of(slow, a + 2 * nv, &err) &&
                   !logits_of(yarn, a + 3 * nv, &err);
        CHECK(ran, "%s", err.msg);
        if (ran) {
            CHECK(memcmp(a, a + nv, (size_t)nv * sizeof(float)) == 0, "factors of one: logits differ from the plain rope");
            double d1 = 0, d2 = 0;
            for (int i = 0; i < nv; i++) d1 = fmax(d1, fabs(a[i] - a[2 * nv + i])), d2 = fmax(d2, fabs(a[i] - a[3 * nv + i]));
            CHECK(d1 > 1e-4 && d2 > 1e-4, "factors of 8 / YaRN x4 leave the logits as they were (%g, %g)", d1, d2);
        }
        free(a);
        char desc[256];
        rope_scaling_describe(&slow->hp.rope_scaling, slow->hp.rope_dim, desc, sizeof desc);
        CHECK(strstr(desc, "per-frequency factors 8 to 8") != NULL, "describe: %s", desc);
        rope_scaling_describe(&yarn->hp.rope_scaling, yarn->hp.rope_dim, desc, sizeof desc);
        CHECK(strstr(desc, "YaRN x4") != NULL, "describe: %s", desc);
    }
    model_free(plain);
    model_free(ones);
    model_free(slow);
    model_free(yarn);
    model_free(lin);
    free(b4);
    free(b1);
    free(b2);
    free(b3);
    unlink(src);
}

int main(void) {
    test_plain_and_factors();
    test_yarn();
    test_longrope();
    test_files();
    return test_finish();
}
