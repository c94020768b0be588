// The Vulkan backend beyond tests/test_ops.c (which checks every op of the default device against
// cpu-scalar): the same op checks (tests/op_checks.h) on its variants (both matmul shapes whatever
// the device prefers, shared-memory reductions, attention split across workgroups, device buffers
// that are not host-visible) with validation-layer error counts, then whole models (generated,
// every weight type, llama and qwen2; prefill and token-by-token decode, profiled; a session's
// device time per token) and the reference models of ../shared/ref. Skips, saying why, when no Vulkan device is present. The seed:
// tests/rng.h; CABIN_VK_VALIDATE=1 also counts validation-layer errors.
#include "test.h"
#include "rng.h"
#include "op_checks.h"
#include "ref_util.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "engine/wtype.h"
#include "vulkan/vulkan_backend.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

// lavapipe (LLVM) keeps allocations that LeakSanitizer would report at exit; they are not ours.
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

static const uint32_t types[] = { WT_F32, WT_F16, WT_BF16, WT_Q8_0, WT_Q4_0 };
#define N_TYPES 5

// ---- models ----

static char tmpdir[256];

static const char *gen_model(const char *arch, uint32_t type, uint64_t seed) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s-%s.gguf", tmpdir, arch, wtype_name(type));
    modelgen_opts o = modelgen_defaults();
    o.arch = arch;
    o.type = o.embd_type = type;
    o.dim = 96; o.n_head = 3; o.n_kv_head = 1; o.ffn_dim = 160; o.n_vocab = 300;
    o.seed = seed;
    o.tied = strcmp(arch, "qwen2") == 0;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return NULL; }
    return path;
}

typedef struct vrun { backend *b; kv_cache kv; forward_ctx fc; } vrun;

static int vrun_open(vrun *r, backend *b, model *m, int n_ctx, int n_batch, errbuf *err) {
    memset(r, 0, sizeof *r);
    r->b = b;
    if (model_prepare_backend(m, b, err)) return -1;
    if (kv_cache_init(&r->kv, KV_F16, m->hp.n_layer, n_ctx, m->hp.n_kv_head * m->hp.head_dim, err)) return -1;
    if (b->kv_prepare(b, &r->kv, err)) return -1;
    return forward_ctx_init(&r->fc, b, m, n_batch, n_batch, err);
}

static void release_one(tensor *t, void *ud) { backend *b = ud; b->weight_release(b, t); }

static void vrun_close(vrun *r, model *m) {
    forward_ctx_free(&r->fc);
    if (r->kv.k) r->b->kv_release(r->b, &r->kv);
    kv_cache_free(&r->kv);
    model_for_each_tensor(m, release_one, r->b);
}

static float max_diff(const float *a, const float *b, size_t n) {
    float w = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= w)) w = d;
    }
    return w;
}

static void test_model(backend *vk, const char *arch, uint32_t type, uint64_t seed) {
    const char *path = gen_model(arch, type, seed);
    if (!path) return;
    model *m;
    errbuf err = {{0}};
    if (model_load(&m, path, &err)) { CHECK(0, "%s", err.msg); return; }
    int nv = m->hp.n_vocab, n = 13;
    int32_t toks[13];
    for (int i = 0; i < n; i++) toks[i] = rng_int(nv);
    float *ref = xmalloc((size_t)nv * n * sizeof(float)), *got = xmalloc((size_t)nv * n * sizeof(float));
    float *one = xmalloc((size_t)nv * sizeof(float));
    runner r;
    if (runner_open(&r, m, "scalar", 1, KV_F16, 32, n, &err) ||
        model_forward(&r.fc, &r.kv, toks, n, true, ref, &err)) {
        CHECK(0, "%s", err.msg);
        runner_close(&r);
        goto out;
    }
    runner_close(&r);
    float scale = max_abs(ref, nv * n);
    double tol = (type == WT_Q8_0 || type == WT_Q4_0) ? 0.02 : 2e-3;
    vrun v;
    if (vrun_open(&v, vk, m, 32, n, &err) || model_forward(&v.fc, &v.kv, toks, n, true, got, &err)) {
        CHECK(0, "%s %s: %s", arch, wtype_name(type), err.msg);
        vrun_close(&v, m);
        goto out;
    }
    float worst = max_diff(ref, got, (size_t)nv * n);
    CHECK(worst <= tol * scale, "%s %s prefill: max diff %g (scale %g)", arch, wtype_name(type), worst, scale);
    // token by token from an empty cache (profiled: timestamps per op kind)
    kv_cache_clear(&v.kv);
    vk->profile_reset(vk);
    vk->set_profiling(vk, true);
    float dec = 0;
    for (int i = 0; i < n; i++) {
        if (model_forward(&v.fc, &v.kv, &toks[i], 1, false, one, &err)) { CHECK(0, "%s", err.msg); break; }
        float d = max_diff(ref + (size_t)i * nv, one, (size_t)nv);
        if (d > dec) dec = d;
    }
    CHECK(dec <= tol * scale, "%s %s decode: max diff %g (scale %g)", arch, wtype_name(type), dec, scale);
    double secs[OP_COUNT];
    uint64_t calls[OP_COUNT];
    vk->profile_read(vk, secs, calls);
    vk->set_profiling(vk, false);
    CHECK(calls[OP_MATMUL] == (uint64_t)n * (7 * m->hp.n_layer + 1) && calls[OP_ATTENTION] == (uint64_t)n * m->hp.n_layer &&
          secs[OP_MATMUL] > 0 && secs[OP_ATTENTION] > 0, "%s %s profile: %llu matmuls in %g s, %llu attentions in %g s",
          arch, wtype_name(type), (unsigned long long)calls[OP_MATMUL], secs[OP_MATMUL],
          (unsigned long long)calls[OP_ATTENTION], secs[OP_ATTENTION]);
    printf("note: %s %s: vulkan vs scalar max diff prefill %.3g, decode %.3g (largest logit %.3g)\n", arch,
           wtype_name(type), worst, dec, scale);
    vrun_close(&v, m);
out:
    free(ref); free(got); free(one);
    model_free(m);
    unlink(path);
}

static void test_ref_model(backend *vk, const char *dir, const char *json_name) {
    char path[1600];
    errbuf err = {{0}};
    cJSON *root = ref_load_json(dir, json_name, path, sizeof path, &err);
    if (!root) { CHECK(0, "%s", err.msg); return; }
    model *m = NULL;
    if (model_load(&m, path, &err)) {
        SKIP("%s: not loadable here (%s)", json_name, err.msg);
        cJSON_Delete(root);
        return;
    }
    uint32_t t = m->layers[0].wq.type;
    double tol = ref_tolerance(t);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    int32_t *toks;
    int n = ref_load_ids(cJSON_GetObjectItem(c, "tokens"), &toks);
    float *logits = xmalloc((size_t)m->hp.n_vocab * sizeof(float));
    vrun v;
    if (vrun_open(&v, vk, m, n + 4, n, &err) || model_forward(&v.fc, &v.kv, toks, n, false, logits, &err)) {
        CHECK(0, "%s: %s", json_name, err.msg);
    } else {
        const cJSON *top = cJSON_GetObjectItem(c, "top_logits");
        double big, worst = ref_compare_top(top, logits, &big);
        CHECK(worst <= tol * big, "%s: vulkan vs reference top logits: max diff %.5f > %.5f", json_name, worst, tol * big);
        int ref_arg = (int)cJSON_GetArrayItem(cJSON_GetArrayItem(top, 0), 0)->valuedouble;
        double margin = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "greedy_margins"), 0)->valuedouble;
        int ours = argmax_f32(logits, m->hp.n_vocab);
        CHECK(ours == ref_arg || margin < 2 * tol * big, "%s: argmax %d, reference %d", json_name, ours, ref_arg);
        printf("note: %s: vulkan vs reference max diff %.5f (tolerance %.5f)\n", json_name, worst, tol * big);
    }
    vrun_close(&v, m);
    free(logits);
    free(toks);
    model_free(m);
    cJSON_Delete(root);
}

static void test_ref_models(backend *vk) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref is absent: no reference models"); return; }
    static ref_record recs[REF_MAX_RECORDS];
    int n = ref_list_records(dir, recs, REF_MAX_RECORDS);
    for (int i = 0; i < n; i++)
        if (!strstr(recs[i].name, "_K_")) test_ref_model(vk, recs[i].root, recs[i].name);
}

// A Vulkan backend made with environment overrides (var=value pairs; NULL ends the list).
static backend *vk_with_env(errbuf *err, const char *var, const char *val, const char *var2, const char *val2) {
    setenv(var, val, 1);
    if (var2) setenv(var2, val2, 1);
    backend *b = backend_vulkan_new(-1, err);
    unsetenv(var);
    if (var2) unsetenv(var2);
    return b;
}

static bool count_tok(void *ud, int32_t t, const char *piece, int len) {
    (void)t; (void)piece; (void)len;
    (*(int *)ud)++;
    return true;
}

// A profiled session on the default device: the device's own time per decoded token is there,
// and no more than the wall time of the decode (each batch is waited for before the next).
static void test_session_device_ms(uint64_t seed) {
    const char *path = gen_model("llama", WT_Q8_0, seed);
    if (!path) return;
    session_opts so = session_opts_default();
    so.model_path = path;
    so.n_ctx = 128;
    so.ignore_eog = true;
    so.sampling.temp = 0;
    so.backend.name = "vulkan";
    errbuf err = {{0}};
    session *s = session_open(&so, &err);
    CHECK(s != NULL, "vulkan session: %s", err.msg);
    if (s) {
        session_set_profiling(s, true);
        int got = 0;
        CHECK(session_complete(s, "ab", 16, count_tok, &got, &err) == 0, "complete: %s", err.msg);
        session_stats st;
        session_get_stats(s, &st);
        int passes = st.gen_tokens;   // ignore_eog: every sampled token is fed back, the last too
        CHECK(st.op_profiled && st.device_ms_per_token > 0, "device ms per token: %g", st.device_ms_per_token);
        CHECK(st.gen_tokens == 16 && st.device_ms_per_token * passes <= st.decode_ms * 1.01 + 0.05,
              "device time within the decode's wall time: %g ms x %d passes vs %g ms", st.device_ms_per_token,
              passes, st.decode_ms);
        printf("note: session on the device: %.3f ms device time per token, %.3f ms wall\n", st.device_ms_per_token,
               passes > 0 ? st.decode_ms / passes : 0.0);
        session_set_profiling(s, false);
        CHECK(session_complete(s, "ab", 4, count_tok, &got, &err) == 0, "complete: %s", err.msg);
        session_get_stats(s, &st);
        CHECK(!st.op_profiled && st.device_ms_per_token == 0, "not profiled: 0 (%g)", st.device_ms_per_token);
        session_close(s);
    }
    unlink(path);
}

int main(void) {
    uint64_t seed = test_seed();
    errbuf err = {{0}};
    backend *vk = backend_vulkan_new(-1, &err);
    if (!vk) {
        SKIP("no usable Vulkan device: %s", err.msg);
        return test_finish();
    }
    printf("device: %s\n", vk->description);
    backend *cpu = backend_cpu_new(1, "scalar", &err);
    if (!cpu) { CHECK(0, "%s", err.msg); backend_destroy(vk); return test_finish(); }
    double t0 = now_sec();

    // Both matmul shapes whatever the device prefers (row per invocation: CPU devices;
    // workgroup per row: GPUs), the shared-memory reductions (devices without subgroup
    // arithmetic) and forced attention splits.
    bool rows = strcmp(getenv("CABIN_VK_MATMUL") ? getenv("CABIN_VK_MATMUL") : "", "rows") == 0 ||
                strstr(vk->description, "llvmpipe") || strstr(vk->description, "CPU");
    backend *other = vk_with_env(&err, "CABIN_VK_MATMUL", rows ? "wg" : "rows", NULL, NULL);
    if (!other) CHECK(0, "%s", err.msg);
    else {
        backend *b1[2] = { cpu, other };
        op_check_matmul(b1, rows ? "workgroup-per-row" : "row-per-invocation");
        backend_destroy(other);
    }
    backend *sh = vk_with_env(&err, "CABIN_VK_NO_SUBGROUP", "1", "CABIN_VK_MATMUL", "wg");
    if (!sh) CHECK(0, "%s", err.msg);
    else {
        backend *b2[2] = { cpu, sh };
        op_check_matmul(b2, "shared-memory");
        op_check_elementwise(b2, "shared-memory");
        op_check_rmsnorm_heads(b2, "shared-memory");
        op_check_attention(b2, "shared-memory", false);
        CHECK(backend_vulkan_validation_errors(sh) == 0, "validation errors: %d", backend_vulkan_validation_errors(sh));
        backend_destroy(sh);
    }
    backend *sp = vk_with_env(&err, "CABIN_VK_ATTN_SPLIT", "3", NULL, NULL);
    if (!sp) CHECK(0, "%s", err.msg);
    else {
        backend *b3[2] = { cpu, sp };
        op_check_attention(b3, "split", false);
        CHECK(backend_vulkan_validation_errors(sp) == 0, "validation errors: %d", backend_vulkan_validation_errors(sp));
        backend_destroy(sp);
    }
    // device buffers that are not host-visible (a discrete GPU's): the KV store's pull, the rope
    // table and statistics uploads go through staging buffers
    backend *um = vk_with_env(&err, "CABIN_VK_UNMAPPED", "1", NULL, NULL);
    if (!um) CHECK(0, "%s", err.msg);
    else {
        backend *b4[2] = { cpu, um };
        op_check_kv_store(b4, "unmapped");
        op_attention_q_case(b4, KV_Q4, 4, 2, 32, 32, false, 290, 9, 0, false, 0.0f, "unmapped");
        op_attention_q_case(b4, KV_Q8, 3, 1, 64, 32, true, 150, 1, 40, true, 0.0f, "unmapped");   // a window layer's second rope table, uploaded through staging
        op_check_matmul(b4, "unmapped");   // activations written through staging buffers
        CHECK(backend_vulkan_validation_errors(um) == 0, "validation errors: %d", backend_vulkan_validation_errors(um));
        backend_destroy(um);
    }
    // The default device's ops are checked in test_ops; under the validation layers
    // (CABIN_VK_VALIDATE=1) they run here too, so every op's recording is validated.
    if (getenv("CABIN_VK_VALIDATE") && atoi(getenv("CABIN_VK_VALIDATE")) > 0) {
        backend *b5[2] = { cpu, vk };
        op_check_all(b5, "default device, validated");
        CHECK(backend_vulkan_validation_errors(vk) == 0, "validation errors: %d", backend_vulkan_validation_errors(vk));
    }
    printf("note: variants checked in %.1f s\n", now_sec() - t0);

    snprintf(tmpdir, sizeof tmpdir, "/tmp/cabin-test-vulkan-%d", (int)getpid());
    CHECK(mkdir(tmpdir, 0700) == 0, "mkdir %s", tmpdir);
    for (int a = 0; a < 2; a++)
        for (int ti = 0; ti < N_TYPES; ti++) test_model(vk, a ? "qwen2" : "llama", types[ti], seed + (uint64_t)ti);
    test_session_device_ms(seed);
    rmdir(tmpdir);
    printf("note: models checked in %.1f s\n", now_sec() - t0);
    test_ref_models(vk);

    uint64_t heaps[16];
    int nh = backend_vulkan_heap_bytes(vk, heaps, 16);
    CHECK(nh > 0, "no memory heaps reported");
    CHECK(backend_vulkan_validation_errors(vk) == 0, "validation errors: %d", backend_vulkan_validation_errors(vk));
    backend_destroy(vk);
    backend_destroy(cpu);
    printf("note: total %.1f s\n", now_sec() - t0);
    return test_finish();
}
