// Private to engine/tokenizer*.c: the tokenizer struct and the pieces the SPM and BPE halves share.
// Calls go one way: tokenizer.c (loading, the encode driver, decoding) -> tokenizer_spm.c /
// tokenizer_bpe.c (the algorithms) -> tokenizer_common.c (hash, output list, encode scratch).
#ifndef CABIN_TOKENIZER_INTERNAL_H
#define CABIN_TOKENIZER_INTERNAL_H

#include "pretok.h"
#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

// Open-addressing hash of token ids keyed by their text. slots[i] = id + 1 (0: empty);
// capacity is a power of two at least twice the entries, so probes stay short.
typedef struct tok_hash {
    int32_t *slots;
    uint32_t mask;
} tok_hash;

// One BPE merge: the pair (left, right) of token ids merges into result at this rank (the
// merge's index in tokenizer.ggml.merges; lower merges first). left == -1: empty slot.
typedef struct bpe_merge {
    int32_t left, right, result, rank;
} bpe_merge;

struct tokenizer {
    enum tok_kind kind;
    char *path;               // file name, for messages
    char *model_name;         // tokenizer.ggml.model
    char *pre_name;           // tokenizer.ggml.pre ("default" when absent)
    enum pretok_kind pre;     // BPE pre-tokenizer
    char *note;               // NULL, or one line about something in the file worked around

    int32_t n_vocab;
    char *pool;               // every token text, each followed by a NUL
    size_t *text_off;         // (n_vocab) offset of token i's text in pool
    uint32_t *text_len;       // (n_vocab) its length in bytes (texts may contain NUL)
    uint32_t *text_hash;      // (n_vocab) tok_hash_bytes of the text
    float *scores;            // (n_vocab) SPM merge scores; 0 when the file has none
    uint8_t *types;           // (n_vocab) enum tok_type
    tok_hash vocab;           // text -> id (a duplicated text maps to its last id)

    // Special tokens that can be recognised in text (CONTROL, USER_DEFINED, UNKNOWN with a
    // non-empty text), indexed by first byte: the distinct text lengths of those starting with
    // byte b are sp_lens[sp_first[b] .. sp_first[b+1]), longest first.
    tok_hash special;
    uint32_t sp_first[257];
    uint32_t *sp_lens;

    // SPM: byte b's token <0xNN> (or the one-byte text b), -1 if the vocab has neither.
    // BPE: the token of byte b's byte-level character, -1 if absent.
    int32_t byte_tok[256];

    // BPE
    uint32_t byte_to_cp[256]; // GPT-2 byte-to-unicode map
    int16_t cp_to_byte[0x144];// inverse for code points below U+0144 (-1: not a byte's char)
    bpe_merge *merges;        // hash on (left, right); capacity mask + 1
    uint32_t merges_mask;
    uint64_t n_merges_skipped;

    int32_t bos, eos, eot, unk;
    bool add_bos, add_eos, add_space_prefix;
    int32_t eog[16];          // end-of-generation ids (eos, eot and other end tokens)
    int n_eog;
};

// Growable token list an encode call writes into.
typedef struct tok_out {
    int32_t *ids;
    size_t n, cap;
} tok_out;

// Scratch buffers of one encode call (the tokenizer itself stays read-only, so calls from
// several threads may share it).
typedef struct tok_work {
    pretok_work pt;
    char *buf;                // escaped (SPM) or byte-mapped (BPE) text
    size_t buf_cap;
    int32_t *sym_id, *sym_prev, *sym_next;
    uint32_t *sym_off, *sym_len;   // SPM: each symbol's bytes in buf
    size_t sym_cap;
    void *heap;               // bigram queue entries (SPM or BPE entry type)
    size_t heap_n, heap_cap;
} tok_work;

// ---- tokenizer_common.c ----

uint32_t tok_hash_bytes(const char *p, size_t n);
// Id of the token whose text is exactly p[0..n), or -1.
int32_t tok_hash_find(const tokenizer *t, const tok_hash *h, const char *p, size_t n);
// An empty table for count entries; false when there is no memory for it.
bool tok_hash_init(tok_hash *h, size_t count);
// Inserts token id (its text and text_hash already set); an id with the same text already
// there is replaced (the last one wins).
void tok_hash_insert(const tokenizer *t, tok_hash *h, int32_t id);
static inline const char *tok_text(const tokenizer *t, int32_t id) { return t->pool + t->text_off[id]; }

void tok_out_push(tok_out *o, int32_t id);
void tok_work_free(tok_work *w);
// Ensures room for n symbols in w.
void tok_work_symbols(tok_work *w, size_t n);
// Ensures w->buf holds n bytes.
void tok_work_buf(tok_work *w, size_t n);

// ---- tokenizer_spm.c ----

// SPM: tokenizes one fragment of raw text (no special tokens in it); add_prefix puts the
// leading space in front.
void spm_encode_fragment(const tokenizer *t, tok_work *w, const char *text, size_t len,
                         bool add_prefix, tok_out *o);

// ---- tokenizer_bpe.c ----

void bpe_init_byte_map(tokenizer *t);
// Reads tokenizer.ggml.merges into the merge hash (entries whose parts or result are not tokens
// are skipped and counted in n_merges_skipped).
int bpe_load_merges(tokenizer *t, const gguf_kv *merges, errbuf *err);
void bpe_encode_fragment(const tokenizer *t, tok_work *w, const char *text, size_t len, tok_out *o);
// Appends the bytes a BPE token's text stands for (each byte-level character back to its
// byte; a character outside the map is copied as its UTF-8). Returns the byte count; writes at
// most n.
size_t bpe_unmap_text(const tokenizer *t, const char *text, size_t len, char *buf, size_t n);

#endif
