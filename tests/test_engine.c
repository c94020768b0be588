// The engine on generated random models: fast path against the scalar reference for every
// weight type and both architectures on odd shapes; batch vs incremental; threads; sampling;
// the session API. Chat templates: tests/test_chat_template.c.
#include "test.h"
#include "tests/rng.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "engine/wtype.h"

#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static const char *gen(const char *arch, uint32_t type, int dim, int heads, int kv, int ffn, uint64_t seed) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s-%s-%d-%llu.gguf", tmpdir, arch, wtype_name(type), dim, (unsigned long long)seed);
    modelgen_opts o = modelgen_defaults();
    o.arch = arch;
    o.type = o.embd_type = type;
    o.dim = dim; o.n_head = heads; o.n_kv_head = kv; o.ffn_dim = ffn; o.n_vocab = 300;
    o.seed = seed;
    o.tied = strcmp(arch, "qwen2") == 0;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return NULL; }
    return path;
}

static void fast_vs_scalar(const char *arch, uint32_t type, uint64_t seed) {
    const char *path = gen(arch, type, 96, 3, 1, 160, seed);
    if (!path) return;
    model *m;
    errbuf err = {{0}};
    if (model_load(&m, path, &err)) { CHECK(0, "%s", err.msg); return; }
    int nv = m->hp.n_vocab, n = 13;
    int32_t toks[13];
    for (int i = 0; i < n; i++) toks[i] = (int32_t)((seed * 31 + (uint64_t)i * 97) % (uint64_t)nv);
    float *ref = xmalloc((size_t)nv * n * sizeof(float)), *fast = xmalloc((size_t)nv * n * sizeof(float));
    float *inc = xmalloc((size_t)nv * sizeof(float)), *one = xmalloc((size_t)nv * n * sizeof(float));
    runner r;
    // scalar reference, all positions' logits
    if (runner_open(&r, m, "scalar", 1, KV_F32, 64, n, &err) ||
        model_forward(&r.fc, &r.kv, toks, n, true, ref, &err)) { CHECK(0, "%s", err.msg); goto out; }
    runner_close(&r);
    // fast path, 2 threads, F16 KV
    if (runner_open(&r, m, "auto", 2, KV_F16, 64, n, &err) ||
        model_forward(&r.fc, &r.kv, toks, n, true, fast, &err)) { CHECK(0, "%s", err.msg); goto out; }
    runner_close(&r);
    float scale = max_abs(ref, nv * n);
    // Activations rounded to 8 bits: Q8_0 blocks for the quantized types, bf16 for BF16 where
    // the processor has the BF16 dot product.
    double tol = (type == WT_Q8_0 || type == WT_Q4_0 || type == WT_BF16) ? 0.02 : 2e-3;
    float worst = 0;
    for (int i = 0; i < nv * n; i++) worst = fmaxf(worst, fabsf(ref[i] - fast[i]));
    CHECK(worst <= tol * scale, "%s %s seed %llu: fast vs scalar max diff %g (scale %g)", arch,
          wtype_name(type), (unsigned long long)seed, worst, scale);
    // incremental decode (one token at a time) gives the batch's last-row logits
    if (runner_open(&r, m, "auto", 2, KV_F16, 64, n, &err)) { CHECK(0, "%s", err.msg); goto out; }
    for (int i = 0; i < n; i++)
        if (model_forward(&r.fc, &r.kv, &toks[i], 1, false, inc, &err)) { CHECK(0, "%s", err.msg); break; }
    runner_close(&r);
    worst = 0;
    for (int i = 0; i < nv; i++) worst = fmaxf(worst, fabsf(inc[i] - fast[(n - 1) * nv + i]));
    CHECK(worst <= 1e-3 * scale, "%s %s: incremental vs batch max diff %g", arch, wtype_name(type), worst);
    // one thread gives the same result as two
    if (runner_open(&r, m, "auto", 1, KV_F16, 64, n, &err) ||
        model_forward(&r.fc, &r.kv, toks, n, true, one, &err)) { CHECK(0, "%s", err.msg); goto out; }
    worst = 0;
    for (int i = 0; i < nv * n; i++) worst = fmaxf(worst, fabsf(one[i] - fast[i]));
    CHECK(worst <= 1e-5 * scale, "%s %s: 1 vs 2 threads max diff %g", arch, wtype_name(type), worst);
out:
    runner_close(&r);
    free(ref); free(fast); free(inc); free(one);
    model_free(m);
    unlink(path);
}

static void test_sampler(void) {
    int nv = 1000;
    float *logits = xmalloc((size_t)nv * sizeof(float)), *tmp = xmalloc((size_t)nv * sizeof(float));
    for (int i = 0; i < nv; i++) logits[i] = sinf((float)i * 0.37f) * 3.0f;
    sampler_params p = sampler_defaults();
    p.temp = 0.0f;
    sampler *s = sampler_new(&p, nv);
    memcpy(tmp, logits, (size_t)nv * sizeof(float));
    p.repeat_penalty = 1.0f;
    CHECK(sampler_sample(s, tmp) == argmax_f32(logits, nv), "greedy is argmax");
    sampler_free(s);
    // same seed, same sequence; different seed, different sequence
    int32_t a[64], b[64], c[64];
    for (int run = 0; run < 3; run++) {
        sampler_params q = sampler_defaults();
        q.temp = 1.5f; q.top_k = 0; q.top_p = 1.0f; q.min_p = 0.0f; q.repeat_penalty = 1.0f;
        q.seed = run == 2 ? 7 : 42;
        sampler *t = sampler_new(&q, nv);
        int32_t *out = run == 0 ? a : run == 1 ? b : c;
        for (int i = 0; i < 64; i++) { memcpy(tmp, logits, (size_t)nv * sizeof(float)); out[i] = sampler_sample(t, tmp); }
        sampler_free(t);
    }
    CHECK(memcmp(a, b, sizeof a) == 0, "same seed gives the same tokens");
    CHECK(memcmp(a, c, sizeof a) != 0, "another seed gives other tokens");
    // top-k 1 is greedy at any temperature; min-p 1 keeps only the best
    sampler_params q = sampler_defaults();
    q.temp = 2.0f; q.top_k = 1; q.repeat_penalty = 1.0f;
    s = sampler_new(&q, nv);
    memcpy(tmp, logits, (size_t)nv * sizeof(float));
    CHECK(sampler_sample(s, tmp) == argmax_f32(logits, nv), "top-k 1 is greedy");
    sampler_free(s);
    // repetition penalty pushes a repeated argmax down
    q = sampler_defaults();
    q.temp = 0.0f; q.repeat_penalty = 100.0f;
    s = sampler_new(&q, nv);
    int best = argmax_f32(logits, nv);
    sampler_accept(s, best);
    memcpy(tmp, logits, (size_t)nv * sizeof(float));
    CHECK(sampler_sample(s, tmp) != best, "repetition penalty avoids the repeated token");
    sampler_free(s);
    // top-p: with a dominant token and top_p 0.5 only it is ever chosen
    for (int i = 0; i < nv; i++) tmp[i] = 0.0f;
    q = sampler_defaults();
    q.temp = 1.0f; q.top_k = 0; q.top_p = 0.5f; q.min_p = 0; q.repeat_penalty = 1.0f;
    s = sampler_new(&q, nv);
    int only = 1;
    for (int i = 0; i < 50; i++) {
        for (int j = 0; j < nv; j++) logits[j] = 0.0f;
        logits[123] = 10.0f;
        only &= sampler_sample(s, logits) == 123;
    }
    CHECK(only, "top-p keeps only the dominant token");
    sampler_free(s);
    free(logits);
    free(tmp);
}

typedef struct cb_state { int n, stop_after; } cb_state;
static bool count_cb(void *ud, int32_t tok, const char *piece, int len) {
    (void)tok; (void)piece; (void)len;
    cb_state *c = ud;
    return ++c->n < c->stop_after;
}

typedef struct rec_state { int32_t toks[64]; int n; } rec_state;
static bool record_cb(void *ud, int32_t tok, const char *piece, int len) {
    (void)piece; (void)len;
    rec_state *r = ud;
    if (r->n < 64) r->toks[r->n++] = tok;
    return true;
}

// model_copy_weights: the copy holds the file's bytes, nothing points into the mapping any more
// but the untied token embedding (a row read per token), the logits are bit-identical to reading
// the mapped file, and plans convert from the copy.
typedef struct in_map_ctx { const model *m; const uint8_t *lo, *hi; int n_in, n_rows_only_in; } in_map_ctx;
static void count_in_map(tensor *t, void *ud) {
    in_map_ctx *c = ud;
    const uint8_t *p = t->data;
    if (p >= c->lo && p < c->hi) {
        if (model_tensor_rows_only(c->m, t)) c->n_rows_only_in++;
        else c->n_in++;
    }
}

static void test_weights_copy(const char *arch, uint32_t type, uint64_t seed) {
    const char *path = gen(arch, type, 96, 3, 1, 160, seed);
    if (!path) return;
    model *a = NULL, *b = NULL;
    errbuf err = {{0}};
    if (model_load(&a, path, &err) || model_load(&b, path, &err)) { CHECK(0, "%s", err.msg); goto out; }
    uint64_t copied = model_copy_weights(b, 2, NULL);
    in_map_ctx im = { b, b->file.base, b->file.base + b->file.size, 0, 0 };
    model_for_each_tensor(b, count_in_map, &im);
    CHECK(copied >= a->weight_bytes / 2 && im.n_in == 0 && im.n_rows_only_in == !b->hp.tied_output &&
          b->output.data == (b->hp.tied_output ? b->tok_embd.data : b->output.data),
          "%s %s: %llu bytes copied, %d tensors still read from the mapping (%d read a row at a time)", arch,
          wtype_name(type), (unsigned long long)copied, im.n_in, im.n_rows_only_in);
    CHECK(model_copy_weights(b, 2, NULL) == 0, "a second copy is a no-op");
    int same = 1;
    for (int l = 0; l < a->hp.n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            tensor *x = model_tensor_by_kind(a, l, k), *y = model_tensor_by_kind(b, l, k);
            if (x && y && (x->n_bytes != y->n_bytes || memcmp(x->data, y->data, x->n_bytes) != 0)) same = 0;
        }
    CHECK(same && memcmp(a->tok_embd.data, b->tok_embd.data, a->tok_embd.n_bytes) == 0, "%s %s: copied bytes equal the file's",
          arch, wtype_name(type));
    int nv = a->hp.n_vocab, n = 7;
    int32_t toks[7];
    for (int i = 0; i < n; i++) toks[i] = (int32_t)((seed * 17 + (uint64_t)i * 53) % (uint64_t)nv);
    float *la = xmalloc((size_t)nv * n * sizeof(float)), *lb = xmalloc((size_t)nv * n * sizeof(float));
    runner r;
    int rc = runner_open(&r, a, "auto", 2, KV_F16, 32, n, &err) || model_forward(&r.fc, &r.kv, toks, n, true, la, &err);
    runner_close(&r);
    rc = rc || runner_open(&r, b, "auto", 2, KV_F16, 32, n, &err) || model_forward(&r.fc, &r.kv, toks, n, true, lb, &err);
    runner_close(&r);
    CHECK(!rc && memcmp(la, lb, (size_t)nv * n * sizeof(float)) == 0, "%s %s: logits from the copy equal the mapped file's %s",
          arch, wtype_name(type), rc ? err.msg : "");
    // a plan converts from the copy, and "keep" returns to it
    precision_plan p;
    plan_init(&p);
    p.default_type = type == WT_Q8_0 ? WT_Q4_0 : WT_Q8_0;
    rc = model_apply_plan(b, &p, NULL, &err);
    tensor *w = model_tensor_by_kind(b, 0, TK_ATTN_Q);
    CHECK(!rc && w->type == p.default_type, "plan on a copied model: %s", rc ? err.msg : wtype_name(w->type));
    plan_init(&p);
    rc = model_apply_plan(b, &p, NULL, &err);
    w = model_tensor_by_kind(b, 0, TK_ATTN_Q);
    CHECK(!rc && w->data == w->src_data && w->type == type && (const uint8_t *)w->data >= b->weights_copy &&
          (const uint8_t *)w->data < b->weights_copy + b->weights_copy_bytes, "back to the file's precision reads the copy");
    free(la); free(lb);
out:
    model_free(a);
    model_free(b);
    unlink(path);
}

static void test_session(void) {
    const char *path = gen("llama", WT_Q4_0, 64, 4, 2, 192, 5);
    if (!path) return;
    session_opts o = session_opts_default();
    o.model_path = path;
    o.n_ctx = 96;
    o.max_reply_tokens = 20;
    o.backend.n_threads = 2;
    o.sampling.seed = 3;
    errbuf err = {{0}};
    session *s = session_open(&o, &err);
    CHECK(s != NULL, "session_open: %s", err.msg);
    if (!s) return;
    cb_state c = { 0, 1000 };
    int rc = session_chat(s, "hello there", count_cb, &c, &err);
    session_stats st;
    session_get_stats(s, &st);
    CHECK(rc == 0, "chat turn: %s", err.msg);
    CHECK(c.n > 0 && st.gen_tokens > 0 && st.prompt_tokens > 0 && st.n_past > 0, "reply streamed (%d tokens)", c.n);
    CHECK(st.weight_bytes > 0 && st.kv_bytes > 0 && st.prefill_tps > 0, "stats filled");
    c = (cb_state){ 0, 3 };
    rc = session_chat(s, "again", count_cb, &c, &err);
    CHECK(rc == 0 && c.n == 3, "callback stops a reply after 3 tokens (got %d)", c.n);
    // same seed after reset gives the same tokens
    rec_state runs[2];
    memset(runs, 0, sizeof runs);
    for (int run = 0; run < 2; run++) {
        session_reset(s);
        session_get_stats(s, &st);
        CHECK(st.n_past == 0, "reset empties the cache");
        rc = session_complete(s, "abc", 20, record_cb, &runs[run], &err);
        CHECK(rc == 0, "completion: %s", err.msg);
    }
    CHECK(runs[0].n > 0 && runs[0].n == runs[1].n &&
          memcmp(runs[0].toks, runs[1].toks, (size_t)runs[0].n * sizeof(int32_t)) == 0,
          "same seed, same completion (%d vs %d tokens)", runs[0].n, runs[1].n);
    // context full: a clear error, and the session keeps working after reset
    session_reset(s);
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    for (size_t i = 0; i < sizeof big - 1; i += 4) big[i] = ' ';
    big[sizeof big - 1] = 0;
    rc = session_chat(s, big, NULL, NULL, &err);
    CHECK(rc != 0 && strstr(err.msg, "context"), "over-long prompt: %s", err.msg);
    session_reset(s);
    rc = session_chat(s, "short", NULL, NULL, &err);
    CHECK(rc == 0, "works after a context error: %s", err.msg);
    session_close(s);
    // bad model path and bad template name: errors, not crashes
    o.model_path = "/nonexistent/model.gguf";
    CHECK(session_open(&o, &err) == NULL && strstr(err.msg, "/nonexistent/model.gguf"), "missing file: %s", err.msg);
    o.model_path = path;
    o.template_name = "nope";
    CHECK(session_open(&o, &err) == NULL && strstr(err.msg, "nope"), "unknown template: %s", err.msg);
    unlink(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-engine-XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    uint64_t seed = test_seed();
    uint32_t types[] = { WT_F32, WT_F16, WT_BF16, WT_Q8_0, WT_Q4_0 };
    for (size_t i = 0; i < 5; i++) {
        fast_vs_scalar("llama", types[i], seed + i);
        fast_vs_scalar("qwen2", types[i], seed + 10 + i);
    }
    test_weights_copy("llama", WT_Q4_0, seed + 20);
    test_weights_copy("qwen2", WT_F16, seed + 21);
    test_weights_copy("llama", WT_Q8_0, seed + 22);
    test_sampler();
    test_session();
    rmdir(tmpdir);
    return test_finish();
}
