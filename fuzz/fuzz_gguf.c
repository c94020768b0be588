// GGUF reader: metadata and tensor infos (gguf_open_memory) on any bytes; when the bytes load as
// a model (model_load_memory: hyperparameters, tokenizer, tensors), one forward step of two
// tokens and one more on the scalar CPU backend, for models small enough to stay under a memory
// cap (FORWARD_CAP_BYTES of weights and scratch). CABIN_FUZZ_VERBOSE=1 says what each input got to.
#include "fuzz/fuzz.h"
#include "engine/backend.h"
#include "engine/kv_cache.h"
#include "engine/model.h"

#define FORWARD_CAP_BYTES ((uint64_t)32 << 20)
#define FORWARD_CTX 4      // KV slots: the three tokens run

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

static void read_metadata(const gguf_file *g) {
    char buf[256];
    for (uint64_t i = 0; i < g->n_kv; i++) gguf_kv_format(&g->kv[i], buf, sizeof buf);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        FUZZ_CHECK(t->offset <= g->size && t->n_bytes <= g->size - g->data_offset, "%s: bytes past the end", t->name);
        FUZZ_CHECK(gguf_find_tensor(g, t->name) != NULL, "%s: not found by name", t->name);
    }
}

// Scratch floats per batch row, roughly: the activations forward_ctx_init allocates.
static uint64_t forward_bytes(const model_hparams *hp) {
    uint64_t q = (uint64_t)hp->n_head * (uint64_t)hp->head_dim;
    uint64_t kv = (uint64_t)hp->n_kv_head * (uint64_t)hp->head_dim;
    uint64_t row = (uint64_t)hp->dim * 3 + q * 2 + kv * 2 + (uint64_t)hp->ffn_dim * 2 + (uint64_t)hp->n_vocab;
    uint64_t cache = (uint64_t)hp->n_layer * FORWARD_CTX * kv * 2 * sizeof(float);
    return row * sizeof(float) * 2 + cache;
}

static void forward_step(model *m) {
    if (m->weight_bytes > FORWARD_CAP_BYTES || forward_bytes(&m->hp) > FORWARD_CAP_BYTES) {
        if (getenv("CABIN_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_gguf: over the memory cap: no forward step\n");
        return;
    }
    errbuf err = {{0}};
    backend *b = backend_cpu_new(1, "scalar", &err);
    FUZZ_CHECK(b != NULL, "%s", err.msg);
    kv_cache kv;
    memset(&kv, 0, sizeof kv);
    forward_ctx fc;
    memset(&fc, 0, sizeof fc);
    int n_vocab = m->hp.n_vocab;
    float *logits = malloc((size_t)n_vocab * sizeof(float) + 1);
    if (!logits) abort();
    int32_t toks[3] = { 0, n_vocab - 1, n_vocab / 2 };
    if (!model_prepare_backend(m, b, &err) &&
        !kv_cache_init(&kv, KV_F32, m->hp.n_layer, FORWARD_CTX, m->hp.n_kv_head * m->hp.head_dim, &err) &&
        !forward_ctx_init(&fc, b, m, 2, 2, &err) &&
        !model_forward(&fc, &kv, toks, 2, false, logits, &err))
        model_forward(&fc, &kv, toks + 2, 1, false, logits, &err);
    if (getenv("CABIN_FUZZ_VERBOSE"))   // why a model that loaded did not run (or "ran")
        fprintf(stderr, "fuzz_gguf: forward step: %s\n", err.msg[0] ? err.msg : "ran");
    free(logits);
    forward_ctx_free(&fc);
    kv_cache_free(&kv);
    backend_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    errbuf err = {{0}};
    gguf_file g;
    if (gguf_open_memory(&g, data, size, "fuzz.gguf", &err) == 0) {
        read_metadata(&g);
        gguf_close(&g);
        model *m = NULL;
        if (model_load_memory(&m, data, size, "fuzz.gguf", &err) == 0) {
            forward_step(m);
            model_free(m);
        } else if (getenv("CABIN_FUZZ_VERBOSE")) {
            fprintf(stderr, "fuzz_gguf: not a model: %s\n", err.msg);
        }
    } else {
        FUZZ_CHECK(err.msg[0] != 0, "a failed open says why");
    }
    return 0;
}
