// The tokenizer targets' common part (fuzz_tokenizer_spm.c, fuzz_tokenizer_bpe.c): the reference
// vocabularies of one kind are loaded once from ../shared/ref/vocab (the path relative to the
// repository root, where make fuzz and make test run); each input is encoded as text (arbitrary
// bytes, invalid UTF-8 included) with and without special tokens, every id's piece is read and
// the ids are decoded back.
#ifndef CABIN_FUZZ_TOKENIZER_H
#define CABIN_FUZZ_TOKENIZER_H

#include "fuzz/fuzz.h"
#include "engine/gguf.h"
#include "engine/tokenizer.h"

#define FUZZ_VOCAB_DIR "../shared/ref/vocab"
#define FUZZ_MAX_VOCABS 4

typedef struct fuzz_vocab { gguf_file g; tokenizer *tok; } fuzz_vocab;
static fuzz_vocab fuzz_vocabs[FUZZ_MAX_VOCABS];
static int fuzz_n_vocabs;

// Loads each named vocabulary (file names under FUZZ_VOCAB_DIR) that is present; says which are
// absent. Without any, every input is skipped: the run says so once here.
static void fuzz_vocab_load(const char *const *names, int n) {
    for (int i = 0; i < n && fuzz_n_vocabs < FUZZ_MAX_VOCABS; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", FUZZ_VOCAB_DIR, names[i]);
        errbuf err = {{0}};
        fuzz_vocab *v = &fuzz_vocabs[fuzz_n_vocabs];
        if (gguf_open(&v->g, path, &err)) { fprintf(stderr, "skipped: %s\n", err.msg); continue; }
        v->tok = tokenizer_load(&v->g, &err);
        FUZZ_CHECK(v->tok != NULL, "%s: %s", path, err.msg);
        fuzz_n_vocabs++;
    }
    if (!fuzz_n_vocabs)
        fprintf(stderr, "skipped: no reference vocabulary in %s: every input is skipped\n", FUZZ_VOCAB_DIR);
}

static void fuzz_encode_decode(const tokenizer *t, const char *text, size_t len, bool special) {
    int32_t cap = (int32_t)len + 4;   // most texts: at most a token a byte, and BOS/EOS
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) abort();
    int32_t n = tokenizer_encode(t, text, len, special, special, ids, cap);
    if (n < 0 && n != INT32_MIN) {     // more than cap: -n is the count, asked again with room
        cap = -n;
        if (!(ids = realloc(ids, (size_t)cap * sizeof *ids))) abort();
        n = tokenizer_encode(t, text, len, special, special, ids, cap);
    }
    FUZZ_CHECK(n >= 0 && n <= cap, "encode of %zu bytes gave %d (cap %d)", len, (int)n, (int)cap);
    int32_t n_vocab = tokenizer_n_vocab(t);
    char piece[64];
    for (int32_t i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab, "id %d of %d", (int)ids[i], (int)n_vocab);
        int32_t k = tokenizer_piece(t, ids[i], special, piece, (int32_t)sizeof piece);
        FUZZ_CHECK(k >= 0, "piece of %d: %d", (int)ids[i], (int)k);
    }
    char *back = tokenizer_decode(t, ids, n, special, true);
    FUZZ_CHECK(back != NULL, "decode of %d ids", (int)n);
    free(back);
    free(ids);
}

static int fuzz_tokenizer_input(const uint8_t *data, size_t size) {
    for (int i = 0; i < fuzz_n_vocabs; i++) {
        fuzz_encode_decode(fuzz_vocabs[i].tok, (const char *)data, size, false);
        fuzz_encode_decode(fuzz_vocabs[i].tok, (const char *)data, size, true);
    }
    return 0;
}

#endif
