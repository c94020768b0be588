// What the tokenizer's halves share (declared in tokenizer_internal.h): the token-text hash,
// the growable output list, and the scratch buffers of one encode call. tokenizer.c loads and
// drives, tokenizer_spm.c and tokenizer_bpe.c encode; all three call into this file, which
// calls none of them.
#include "tokenizer_internal.h"
#include "base/base.h"

#include <stdlib.h>
#include <string.h>

// ---- hashing ----

uint32_t tok_hash_bytes(const char *p, size_t n) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}

int32_t tok_hash_find(const tokenizer *t, const tok_hash *h, const char *p, size_t n) {
    if (!h->slots) return -1;
    uint32_t hv = tok_hash_bytes(p, n);
    for (uint32_t i = hv & h->mask;; i = (i + 1) & h->mask) {
        int32_t s = h->slots[i];
        if (s == 0) return -1;
        int32_t id = s - 1;
        if (t->text_hash[id] == hv && t->text_len[id] == n && memcmp(tok_text(t, id), p, n) == 0)
            return id;
    }
}

// false when there is no memory for the table.
bool tok_hash_init(tok_hash *h, size_t count) {
    size_t cap = 16;
    while (cap < 2 * count) cap *= 2;
    h->slots = try_calloc(cap, sizeof *h->slots);
    h->mask = (uint32_t)(cap - 1);
    return h->slots != NULL;
}

// Inserts id; an id with the same text already there is replaced (the last one wins).
void tok_hash_insert(const tokenizer *t, tok_hash *h, int32_t id) {
    uint32_t hv = t->text_hash[id];
    for (uint32_t i = hv & h->mask;; i = (i + 1) & h->mask) {
        int32_t s = h->slots[i];
        if (s == 0 || (t->text_hash[s - 1] == hv && t->text_len[s - 1] == t->text_len[id] &&
                       memcmp(tok_text(t, s - 1), tok_text(t, id), t->text_len[id]) == 0)) {
            h->slots[i] = id + 1;
            return;
        }
    }
}

// ---- the output list and the encode scratch ----

void tok_out_push(tok_out *o, int32_t id) {
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->ids = xrealloc(o->ids, o->cap * sizeof *o->ids);
    }
    o->ids[o->n++] = id;
}

void tok_work_free(tok_work *w) {
    pretok_work_free(&w->pt);
    free(w->buf);
    free(w->sym_id);
    free(w->sym_prev);
    free(w->sym_next);
    free(w->sym_off);
    free(w->sym_len);
    free(w->heap);
    memset(w, 0, sizeof *w);
}

void tok_work_symbols(tok_work *w, size_t n) {
    if (n <= w->sym_cap) return;
    size_t cap = w->sym_cap ? w->sym_cap : 64;
    while (cap < n) cap *= 2;
    w->sym_id = xrealloc(w->sym_id, cap * sizeof *w->sym_id);
    w->sym_prev = xrealloc(w->sym_prev, cap * sizeof *w->sym_prev);
    w->sym_next = xrealloc(w->sym_next, cap * sizeof *w->sym_next);
    w->sym_off = xrealloc(w->sym_off, cap * sizeof *w->sym_off);
    w->sym_len = xrealloc(w->sym_len, cap * sizeof *w->sym_len);
    w->sym_cap = cap;
}

void tok_work_buf(tok_work *w, size_t n) {
    if (n <= w->buf_cap) return;
    size_t cap = w->buf_cap ? w->buf_cap : 256;
    while (cap < n) cap *= 2;
    w->buf = xrealloc(w->buf, cap);
    w->buf_cap = cap;
}

