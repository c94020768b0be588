// SentencePiece-style tokenization (tokenizer.ggml.model = "llama").
//
// The text (with a leading space when asked, every ' ' written as U+2581 '▁') is split into
// UTF-8 characters; then, repeatedly, the adjacent pair whose concatenation is a vocabulary piece
// with the highest score is merged (ties: the leftmost pair), until no adjacent pair forms a
// piece. Candidate pairs wait in a max-heap and are checked for staleness when popped, so a text
// of n characters costs O(n log n) hash lookups, not a rescan per merge.
//
// A merged symbol is always a vocabulary piece (a pair enters the heap only when its text is
// one), so the only symbols that need resegmenting at the end are single characters the
// vocabulary lacks: they fall back to their bytes' <0xNN> tokens, or the unknown token where the
// vocabulary has no byte tokens.
#include "tokenizer_internal.h"
#include "unicode.h"
#include "base/base.h"

#include <string.h>

typedef struct spm_bigram {
    float score;       // score of the merged piece
    int32_t left;      // symbol index of the left part
    int32_t right;     // symbol index of the right part
    uint32_t size;     // bytes of the merged text (the pair is stale if the parts changed)
    int32_t id;        // token id of the merged piece
} spm_bigram;

// Heap order: higher score first, then the smaller left index.
static inline bool spm_before(const spm_bigram *a, const spm_bigram *b) {
    if (a->score != b->score) return a->score > b->score;
    return a->left < b->left;
}

static void spm_heap_push(tok_work *w, spm_bigram e) {
    if (w->heap_n == w->heap_cap) {
        w->heap_cap = w->heap_cap ? 2 * w->heap_cap : 256;
        w->heap = xrealloc(w->heap, w->heap_cap * sizeof(spm_bigram));
    }
    spm_bigram *h = w->heap;
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!spm_before(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static spm_bigram spm_heap_pop(tok_work *w) {
    spm_bigram *h = w->heap;
    spm_bigram top = h[0], last = h[--w->heap_n];
    size_t n = w->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && spm_before(&h[c + 1], &h[c])) c++;
        if (!spm_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static void spm_try_pair(const tokenizer *t, tok_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    uint32_t off = w->sym_off[left];
    uint32_t size = w->sym_len[left] + w->sym_len[right];
    int32_t id = tok_hash_find(t, &t->vocab, w->buf + off, size);
    if (id < 0) return;
    spm_bigram e = { t->scores[id], left, right, size, id };
    spm_heap_push(w, e);
}

void spm_encode_fragment(const tokenizer *t, tok_work *w, const char *text, size_t len,
                         bool add_prefix, tok_out *o) {
    // Escape: optional leading space, ' ' -> U+2581 (3 bytes). Offsets fit in 32 bits: the
    // caller limits texts to well under 4 GiB / 3.
    size_t n_sp = add_prefix ? 1 : 0;
    for (size_t i = 0; i < len; i++) n_sp += text[i] == ' ';
    size_t elen = len + (add_prefix ? 1 : 0) + 2 * n_sp;
    if (elen == 0) return;
    tok_work_buf(w, elen);
    char *e = w->buf;
    size_t k = 0;
    if (add_prefix) { memcpy(e, "\xE2\x96\x81", 3); k = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(e + k, "\xE2\x96\x81", 3); k += 3; }
        else e[k++] = text[i];
    }
    elen = k;

    // Symbols: one per UTF-8 character; each byte of a malformed sequence is a symbol of its
    // own (so a truncated sequence cannot swallow the '▁' after it).
    tok_work_symbols(w, elen);
    int32_t n = 0;
    for (size_t i = 0; i < elen; n++) {
        uint32_t cp;
        size_t cl = (size_t)utf8_decode(e + i, elen - i, &cp);
        w->sym_off[n] = (uint32_t)i;
        w->sym_len[n] = (uint32_t)cl;
        w->sym_id[n] = tok_hash_find(t, &t->vocab, e + i, cl);
        w->sym_prev[n] = n - 1;
        i += cl;
        w->sym_next[n] = i == elen ? -1 : n + 1;
    }

    w->heap_n = 0;
    for (int32_t i = 1; i < n; i++) spm_try_pair(t, w, i - 1, i);
    while (w->heap_n) {
        spm_bigram b = spm_heap_pop(w);
        uint32_t ln = w->sym_len[b.left], rn = w->sym_len[b.right];
        if (ln == 0 || rn == 0 || ln + rn != b.size) continue;  // a part merged elsewhere since
        w->sym_len[b.left] = ln + rn;
        w->sym_len[b.right] = 0;
        w->sym_id[b.left] = b.id;
        int32_t nx = w->sym_next[b.right];
        w->sym_next[b.left] = nx;
        if (nx >= 0) w->sym_prev[nx] = b.left;
        spm_try_pair(t, w, w->sym_prev[b.left], b.left);
        spm_try_pair(t, w, b.left, nx);
    }

    for (int32_t i = 0; i != -1 && n > 0; i = w->sym_next[i]) {
        if (w->sym_id[i] >= 0) { tok_out_push(o, w->sym_id[i]); continue; }
        for (uint32_t j = 0; j < w->sym_len[i]; j++) {
            int32_t id = t->byte_tok[(unsigned char)e[w->sym_off[i] + j]];
            if (id < 0) id = t->unk;
            if (id >= 0) tok_out_push(o, id);
            if (t->byte_tok[(unsigned char)e[w->sym_off[i] + j]] < 0) break;  // one unk per char
        }
    }
}
