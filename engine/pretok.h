// Pre-tokenizers of byte-level BPE vocabularies: split text into pieces before BPE merging, as
// the regular expressions named by tokenizer.ggml.pre do. Each expression is a hand-written
// matcher (no regex library) with the expression's semantics: at each position the first
// alternative that matches wins, quantifiers are greedy with backtracking, lookaheads and `$`
// see the end of the current piece as the end of the text.
//
// A pre-tokenizer is a sequence of expressions. The first splits the whole text; each next one
// splits every current piece further: its matches become pieces, and so does every stretch of a
// piece between matches.
#ifndef CABIN_PRETOK_H
#define CABIN_PRETOK_H

#include <stdbool.h>
#include <stddef.h>

// The pre-tokenizers, one per distinct sequence of expressions (tokenizer.ggml.pre names that
// share a sequence map to the same kind: see the name table in pretok.c).
enum pretok_kind {
    PRETOK_GPT2,          // gpt-2 (and mpt, olmo, phi-2, ...): 's|'t|...| ?\p{L}+| ?\p{N}+|...
    PRETOK_LLAMA3,        // llama-bpe (Llama 3): case-insensitive contractions, \p{N}{1,3}
    PRETOK_QWEN2,         // qwen2: as llama3 with single digits
    PRETOK_SMOLLM,        // smollm (and starcoder, refact, command-r, ...): \p{N}, then gpt-2
    PRETOK_DEEPSEEK_LLM,  // deepseek-llm: six expressions over explicit character classes
    PRETOK_DEFAULT,       // default: punctuation runs, gpt-2, \p{N}+, [0-9]{3}
    PRETOK_FALCON,        // falcon: punctuation runs (with `), gpt-2, [0-9]{3}
    PRETOK_DEEPSEEK_CODER,// deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, CJK runs, \p{N}
    PRETOK_DBRX,          // dbrx (and smaug-bpe, chatglm-bpe, glm4): llama3's expression, but
                          // every piece goes through the merges
    PRETOK_COUNT
};

// Maps a tokenizer.ggml.pre value to a pre-tokenizer; NULL (key absent) gives PRETOK_DEFAULT.
// Returns false, *kind unchanged, for a name cabin has no rules for: one the reference names
// with expressions cabin does not implement, or one it does not know at all. The caller refuses
// such a file: splitting with another name's rules would give other tokens than the model was
// trained on.
bool pretok_from_name(const char *name, enum pretok_kind *kind);
const char *pretok_kind_name(enum pretok_kind kind);
// Writes the supported pre-tokenizers for a message ("default, gpt-2, ... and N other names
// for the same rules") into buf (cap bytes, NUL-terminated, truncated to fit).
void pretok_supported(char *buf, size_t cap);
// True where the whole piece is looked up in the vocabulary before merging (Llama 3 does so:
// its vocabulary has pieces that its merges cannot build).
bool pretok_ignore_merges(enum pretok_kind kind);
// True where the reference adds BOS unless the file says otherwise (the Llama 3 names).
bool pretok_default_add_bos(enum pretok_kind kind);

// Reusable buffers of one split (a tokenizer call owns one; zero-initialise it).
typedef struct pretok_work {
    unsigned *cp;        // (n_cp) code points of the text; malformed UTF-8 bytes are U+FFFD
    unsigned short *fl;  // (n_cp) unicode_flags of each code point
    size_t *off;         // (n_cp + 1) byte offset where each code point starts; off[n_cp] = len
    size_t cap_cp;
    size_t *bounds[2];   // piece ends (code point indices), ping-pong between passes
    size_t cap_bounds;
} pretok_work;

void pretok_work_free(pretok_work *w);

// Splits text (len bytes) into pieces. Returns the number of pieces and sets *ends to an array
// (owned by w, valid until its next use) of piece end offsets in bytes: piece i is
// [i ? ends[i-1] : 0, ends[i]). Pieces are never empty; empty text gives 0 pieces.
size_t pretok_split(pretok_work *w, enum pretok_kind kind, const char *text, size_t len,
                    const size_t **ends);

#endif
