// `cabin quantize` against the reference files: each made by the reference quantizer from an F16
// reference model without an importance matrix, so cabin's file from the same F16 file must
// match it tensor by tensor, type and bytes:
//   llama-spm-d64 F16 -> Q8_0, Q4_0 ("pure": every 2-D tensor at the type);
//   llama-spm-d256 F16 -> the presets Q4_K_M, Q5_K_M, Q2_K, and pure Q4_1, IQ4_NL, IQ4_XS.
// The phi3 and qwen3 Q4_K_M files (rows of 64: the K-quant fallbacks) have no F16 original
// here: requantizing each to Q4_K_M must give every tensor the type the reference gave it.
// Every output loads back (standard types and keys).
#include "test.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/wtype.h"

#include <unistd.h>

static const char *cabin_bin(void) {
    const char *b = getenv("CABIN_BIN");
    return b && *b ? b : "build/cabin";
}

static uint32_t file_type_of(const gguf_file *g) {
    const gguf_kv *ft = gguf_find_kv(g, "general.file_type");
    return ft ? (uint32_t)ft->v.u : UINT32_MAX;
}

// Runs `cabin quantize SRC OUT ARGS` and compares OUT with the reference file REF: every
// tensor's type, and its bytes when `bytes`; the file_type. want_file_type UINT32_MAX: the
// reference file's own.
static void compare(const char *ref_dir, const char *src_name, const char *args, const char *ref_name,
                    uint32_t want_file_type, bool bytes) {
    char cmd[2048], out[256], ref[1024], src[1024];
    snprintf(src, sizeof src, "%s/models/%s", ref_dir, src_name);
    snprintf(ref, sizeof ref, "%s/models/%s", ref_dir, ref_name);
    snprintf(out, sizeof out, "/tmp/cabin-quantize-%d.gguf", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s quantize %s %s %s >/dev/null 2>&1", cabin_bin(), src, out, args);
    int rc = system(cmd);
    CHECK(rc == 0, "%s failed (%d)", cmd, rc);
    if (rc) return;
    gguf_file a, b;
    errbuf err = {{0}};
    if (gguf_open(&a, out, &err)) { CHECK(0, "%s", err.msg); return; }
    if (gguf_open(&b, ref, &err)) { CHECK(0, "%s", err.msg); gguf_close(&a); return; }
    int identical = 0, compared = 0;
    for (uint64_t i = 0; i < b.n_tensors; i++) {
        const gguf_tensor *rt = &b.tensors[i];
        const gguf_tensor *ot = gguf_find_tensor(&a, rt->name);
        CHECK(ot != NULL, "%s: tensor %s missing", ref_name, rt->name);
        if (!ot) continue;
        compared++;
        bool same = ot->type == rt->type && ot->n_bytes == rt->n_bytes &&
                    (!bytes || memcmp(ot->data, rt->data, rt->n_bytes) == 0);
        CHECK(same, "%s: tensor %s differs from the reference (type %s vs %s)", ref_name, rt->name,
              wtype_name(ot->type), wtype_name(rt->type));
        identical += same;
    }
    CHECK(a.n_tensors == b.n_tensors, "%s: %llu tensors, the reference has %llu", ref_name,
          (unsigned long long)a.n_tensors, (unsigned long long)b.n_tensors);
    printf("note: %s (quantize %s): %d of %d tensors %s the reference file\n", ref_name, args, identical,
           compared, bytes ? "byte-identical to" : "of the same type as");
    if (want_file_type == UINT32_MAX) want_file_type = file_type_of(&b);
    CHECK(file_type_of(&a) == want_file_type, "%s: general.file_type %u, want %u", ref_name, file_type_of(&a),
          want_file_type);
    gguf_close(&a);
    gguf_close(&b);
    model *m;
    CHECK(model_load(&m, out, &err) == 0, "%s: quantized file loads: %s", ref_name, err.msg);
    if (m) model_free(m);
    unlink(out);
}

int main(void) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref not present"); return test_finish(); }
    const char *d64 = "llama-spm-d64-F16.gguf", *d256 = "llama-spm-d256-F16.gguf";
    compare(dir, d64, "q8_0 --plan 'token_embd=q8_0;output=q8_0'", "llama-spm-d64-Q8_0.gguf", 7, true);
    compare(dir, d64, "q4_0 --plan 'token_embd=q4_0;output=q4_0'", "llama-spm-d64-Q4_0.gguf", 2, true);
    compare(dir, d256, "Q4_K_M", "llama-spm-d256-Q4_K_M.gguf", 15, true);
    compare(dir, d256, "q5_k_m", "llama-spm-d256-Q5_K_M.gguf", 17, true);
    compare(dir, d256, "Q2_K", "llama-spm-d256-Q2_K.gguf", 10, true);
    compare(dir, d256, "q4_1 --pure", "llama-spm-d256-Q4_1.gguf", 3, true);
    compare(dir, d256, "IQ4_NL --pure", "llama-spm-d256-IQ4_NL.gguf", 25, true);
    compare(dir, d256, "iq4_xs --pure", "llama-spm-d256-IQ4_XS.gguf", 30, true);
    compare(dir, "phi3-d64-Q4_K_M.gguf", "Q4_K_M", "phi3-d64-Q4_K_M.gguf", 15, false);
    compare(dir, "qwen3-d64-Q4_K_M.gguf", "Q4_K_M", "qwen3-d64-Q4_K_M.gguf", 15, false);
    return test_finish();
}
