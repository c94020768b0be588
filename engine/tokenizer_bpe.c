// Byte-level BPE (tokenizer.ggml.model = "gpt2").
//
// The pre-tokenizer splits the text into pieces. Each piece's bytes become byte-level characters
// (the GPT-2 byte-to-unicode map: printable bytes stand for themselves, the rest are moved to
// U+0100..U+0143), one symbol per byte; then, repeatedly, the adjacent pair with the lowest merge
// rank is merged (ties: the leftmost pair) until no adjacent pair has a merge. Merges are
// looked up by the pair of token ids in a hash, candidates wait in a min-heap and are checked
// for staleness when popped: O(n log n) for a piece of n bytes.
#include "tokenizer_internal.h"
#include "unicode.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void bpe_init_byte_map(tokenizer *t) {
    // Bytes that are printable Latin-1 characters keep their code point; the others, in byte
    // order, take U+0100, U+0101, ...
    uint32_t next = 0x100;
    for (int b = 0; b < 256; b++) {
        bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        t->byte_to_cp[b] = keep ? (uint32_t)b : next++;
    }
    for (size_t c = 0; c < sizeof t->cp_to_byte / sizeof t->cp_to_byte[0]; c++) t->cp_to_byte[c] = -1;
    for (int b = 0; b < 256; b++) t->cp_to_byte[t->byte_to_cp[b]] = (int16_t)b;
    for (int b = 0; b < 256; b++) {
        char u[4];
        int n = utf8_encode(t->byte_to_cp[b], u);
        t->byte_tok[b] = tok_hash_find(t, &t->vocab, u, (size_t)n);
    }
}

static inline uint32_t pair_hash(int32_t l, int32_t r) {
    uint64_t x = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static const bpe_merge *merge_find(const tokenizer *t, int32_t l, int32_t r) {
    if (!t->merges) return NULL;
    for (uint32_t i = pair_hash(l, r) & t->merges_mask;; i = (i + 1) & t->merges_mask) {
        const bpe_merge *m = &t->merges[i];
        if (m->left < 0) return NULL;
        if (m->left == l && m->right == r) return m;
    }
}

int bpe_load_merges(tokenizer *t, const gguf_kv *kv, errbuf *err) {
    uint64_t n = kv->arr_n;
    if (n > (uint64_t)INT32_MAX)
        return err_set(err, "%s: tokenizer.ggml.merges: %" PRIu64 " entries (at most %d supported)",
                       t->path, n, INT32_MAX);
    uint64_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->merges = try_malloc(cap * sizeof *t->merges);
    if (!t->merges) return err_set(err, "%s: out of memory for %" PRIu64 " merges", t->path, n);
    for (uint64_t i = 0; i < cap; i++) t->merges[i].left = -1;
    t->merges_mask = (uint32_t)(cap - 1);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_str *s = &kv->arr_strs[i];
        // "left right": split at the first space after the first byte (neither part holds a
        // plain space: byte-level text writes it as U+0120).
        const char *sp = s->len > 1 ? memchr(s->ptr + 1, ' ', s->len - 1) : NULL;
        if (!sp) { t->n_merges_skipped++; continue; }
        size_t ll = (size_t)(sp - s->ptr), rl = s->len - ll - 1;
        int32_t l = tok_hash_find(t, &t->vocab, s->ptr, ll);
        int32_t r = tok_hash_find(t, &t->vocab, sp + 1, rl);
        if (l < 0 || r < 0 || ll + rl > UINT32_MAX) { t->n_merges_skipped++; continue; }
        // The merged text is the two parts without the space.
        char small[256];
        char *m = ll + rl <= sizeof small ? small : xmalloc(ll + rl);
        memcpy(m, s->ptr, ll);
        memcpy(m + ll, sp + 1, rl);
        int32_t res = tok_hash_find(t, &t->vocab, m, ll + rl);
        if (m != small) free(m);
        if (res < 0) { t->n_merges_skipped++; continue; }
        uint32_t j = pair_hash(l, r) & t->merges_mask;
        while (t->merges[j].left >= 0 && !(t->merges[j].left == l && t->merges[j].right == r))
            j = (j + 1) & t->merges_mask;
        if (t->merges[j].left >= 0) continue;  // a repeated pair keeps its first (lowest) rank
        t->merges[j] = (bpe_merge){ l, r, res, (int32_t)i };
    }
    return 0;
}

typedef struct bpe_bigram {
    int32_t rank;
    int32_t left;             // symbol index of the left part
    int32_t left_id, right_id;// the parts' ids when queued (stale if either changed)
    int32_t result;
} bpe_bigram;

// Heap order: lower rank first, then the smaller left index.
static inline bool bpe_before(const bpe_bigram *a, const bpe_bigram *b) {
    if (a->rank != b->rank) return a->rank < b->rank;
    return a->left < b->left;
}

static void bpe_heap_push(tok_work *w, bpe_bigram e) {
    if (w->heap_n == w->heap_cap) {
        w->heap_cap = w->heap_cap ? 2 * w->heap_cap : 256;
        w->heap = xrealloc(w->heap, w->heap_cap * sizeof(bpe_bigram));
    }
    bpe_bigram *h = w->heap;
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bpe_before(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static bpe_bigram bpe_heap_pop(tok_work *w) {
    bpe_bigram *h = w->heap;
    bpe_bigram top = h[0], last = h[--w->heap_n];
    size_t n = w->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bpe_before(&h[c + 1], &h[c])) c++;
        if (!bpe_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static void bpe_try_pair(const tokenizer *t, tok_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    int32_t l = w->sym_id[left], r = w->sym_id[right];
    if (l < 0 || r < 0) return;
    const bpe_merge *m = merge_find(t, l, r);
    if (!m) return;
    bpe_bigram e = { m->rank, left, l, r, m->result };
    bpe_heap_push(w, e);
}

// Tokenizes one pre-tokenized piece.
static void bpe_encode_piece(const tokenizer *t, tok_work *w, const unsigned char *p, size_t len,
                             tok_out *o) {
    if (pretok_ignore_merges(t->pre) && len > 1) {
        // The whole piece as one token, if the vocabulary has it (mapped text: <= 2 bytes per byte).
        tok_work_buf(w, 2 * len);
        size_t k = 0;
        for (size_t i = 0; i < len; i++) k += (size_t)utf8_encode(t->byte_to_cp[p[i]], w->buf + k);
        int32_t id = tok_hash_find(t, &t->vocab, w->buf, k);
        if (id >= 0) { tok_out_push(o, id); return; }
    }
    tok_work_symbols(w, len);
    int32_t n = (int32_t)len;
    for (int32_t i = 0; i < n; i++) {
        w->sym_id[i] = t->byte_tok[p[i]];
        w->sym_prev[i] = i - 1;
        w->sym_next[i] = i + 1 < n ? i + 1 : -1;
    }
    w->heap_n = 0;
    for (int32_t i = 1; i < n; i++) bpe_try_pair(t, w, i - 1, i);
    while (w->heap_n) {
        bpe_bigram b = bpe_heap_pop(w);
        int32_t right = w->sym_next[b.left];
        // Stale if the left symbol was absorbed (its id is then -2), grew, or its right
        // neighbour changed: a symbol's text only grows, so equal ids mean unchanged parts.
        if (w->sym_id[b.left] != b.left_id || right < 0 || w->sym_id[right] != b.right_id) continue;
        w->sym_id[b.left] = b.result;
        w->sym_id[right] = -2;
        int32_t nx = w->sym_next[right];
        w->sym_next[b.left] = nx;
        if (nx >= 0) w->sym_prev[nx] = b.left;
        bpe_try_pair(t, w, w->sym_prev[b.left], b.left);
        bpe_try_pair(t, w, b.left, nx);
    }
    // A byte whose character is not in the vocabulary has no token and is dropped, as the
    // reference does; real byte-level vocabularies have all 256.
    for (int32_t i = 0; i != -1 && n > 0; i = w->sym_next[i])
        if (w->sym_id[i] >= 0) tok_out_push(o, w->sym_id[i]);
}

void bpe_encode_fragment(const tokenizer *t, tok_work *w, const char *text, size_t len, tok_out *o) {
    const size_t *ends;
    size_t n = pretok_split(&w->pt, t->pre, text, len, &ends);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        bpe_encode_piece(t, w, (const unsigned char *)text + start, ends[i] - start, o);
        start = ends[i];
    }
}

size_t bpe_unmap_text(const tokenizer *t, const char *text, size_t len, char *buf, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int cl = utf8_decode(text + i, len - i, &cp);
        if (cl == 1 && (unsigned char)text[i] >= 0x80) cp = 0xFFFFFFFFu;  // malformed: copy the byte
        if (cp < sizeof t->cp_to_byte / sizeof t->cp_to_byte[0] && t->cp_to_byte[cp] >= 0) {
            if (k < n) buf[k] = (char)t->cp_to_byte[cp];
            k++;
        } else {
            for (int j = 0; j < cl; j++) {
                if (k < n) buf[k] = text[i + j];
                k++;
            }
        }
        i += (size_t)cl;
    }
    return k;
}
