// `cabin quantize` against the reference files: Q8_0 and Q4_0 made from the F16 reference model
// in "pure" mode (every 2-D tensor at the type) must be byte-identical to the reference's own
// Q8_0 / Q4_0 files; and the output loads back (standard types and keys).
#include "test.h"
#include "engine/gguf.h"
#include "engine/model.h"

#include <unistd.h>

static const char *cabin_bin(void) {
    const char *b = getenv("CABIN_BIN");
    return b && *b ? b : "build/cabin";
}

static void compare(const char *ref_dir, const char *type, const char *ref_name) {
    char cmd[2048], out[256], ref[1024], src[1024];
    snprintf(src, sizeof src, "%s/models/llama-spm-d64-F16.gguf", ref_dir);
    snprintf(ref, sizeof ref, "%s/models/%s", ref_dir, ref_name);
    snprintf(out, sizeof out, "/tmp/cabin-quantize-%d-%s.gguf", (int)getpid(), type);
    snprintf(cmd, sizeof cmd, "%s quantize %s %s %s --plan 'token_embd=%s;output=%s' >/dev/null",
             cabin_bin(), src, out, type, type, type);
    int rc = system(cmd);
    CHECK(rc == 0, "%s failed (%d)", cmd, rc);
    if (rc) return;
    gguf_file a, b;
    errbuf err = {{0}};
    if (gguf_open(&a, out, &err) || gguf_open(&b, ref, &err)) { CHECK(0, "%s", err.msg); return; }
    int identical = 0, compared = 0;
    for (uint64_t i = 0; i < b.n_tensors; i++) {
        const gguf_tensor *rt = &b.tensors[i];
        const gguf_tensor *ot = gguf_find_tensor(&a, rt->name);
        CHECK(ot != NULL, "%s: tensor %s missing", type, rt->name);
        if (!ot) continue;
        compared++;
        bool same = ot->type == rt->type && ot->n_bytes == rt->n_bytes && memcmp(ot->data, rt->data, rt->n_bytes) == 0;
        CHECK(same, "%s: tensor %s differs from the reference (type %u vs %u)", type, rt->name, ot->type, rt->type);
        identical += same;
    }
    printf("note: %s: %d of %d tensors byte-identical to the reference file\n", type, identical, compared);
    const gguf_kv *ft = gguf_find_kv(&a, "general.file_type");
    CHECK(ft && ft->v.u == (strcmp(type, "q4_0") == 0 ? 2u : 7u), "%s: general.file_type", type);
    gguf_close(&a);
    gguf_close(&b);
    model *m;
    CHECK(model_load(&m, out, &err) == 0, "quantized file loads: %s", err.msg);
    if (m) model_free(m);
    unlink(out);
}

int main(void) {
    const char *dir = test_ref_dir();
    if (!dir) { SKIP("../shared/ref not present"); return test_finish(); }
    compare(dir, "q8_0", "llama-spm-d64-Q8_0.gguf");
    compare(dir, "q4_0", "llama-spm-d64-Q4_0.gguf");
    return test_finish();
}
