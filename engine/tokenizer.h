// Tokenizers: SentencePiece-style (tokenizer.ggml.model = "llama") and byte-level BPE ("gpt2")
// with the pre-tokenizer chosen by tokenizer.ggml.pre. Built from GGUF metadata.
#ifndef CABIN_TOKENIZER_H
#define CABIN_TOKENIZER_H

#include "gguf.h"

#include <stdbool.h>
#include <stdint.h>

enum tok_kind { TOK_SPM, TOK_BPE };

// GGUF token types (tokenizer.ggml.token_type)
enum tok_type {
    TT_UNDEFINED = 0, TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4,
    TT_UNUSED = 5, TT_BYTE = 6
};

typedef struct tokenizer tokenizer;

// Builds a tokenizer from the file's tokenizer.ggml.* keys. Errors name the file and key; a
// byte-level BPE file whose tokenizer.ggml.pre cabin has no rules for is one of them.
tokenizer *tokenizer_load(const gguf_file *g, errbuf *err);
void tokenizer_free(tokenizer *t);

enum tok_kind tokenizer_kind(const tokenizer *t);
const char *tokenizer_model_name(const tokenizer *t);  // "llama" / "gpt2"
const char *tokenizer_pre_name(const tokenizer *t);    // e.g. "llama-bpe", "default"
// NULL, or one line about something odd in the file that loading worked around (merges that
// name texts which are not tokens, skipped).
const char *tokenizer_note(const tokenizer *t);
int32_t tokenizer_n_vocab(const tokenizer *t);
int32_t tokenizer_bos(const tokenizer *t);             // -1 if none
int32_t tokenizer_eos(const tokenizer *t);             // -1 if none
int32_t tokenizer_eot(const tokenizer *t);             // end-of-turn (e.g. <|eot_id|>, <|im_end|>), -1 if none
bool tokenizer_add_bos(const tokenizer *t);
bool tokenizer_add_eos(const tokenizer *t);
// True for tokens that end generation (eos, eot and other end-of-generation control tokens).
bool tokenizer_is_eog(const tokenizer *t, int32_t id);
// Token id of an exact piece text (e.g. "<|im_end|>"), or -1.
int32_t tokenizer_find(const tokenizer *t, const char *piece);
int tokenizer_token_type(const tokenizer *t, int32_t id);

// Tokenizes text (len bytes, need not be NUL-terminated). add_special: prepend BOS / append EOS
// as the file's add_bos/add_eos flags say. parse_special: recognise control/user-defined token
// texts (e.g. "<|im_start|>") in the text. Returns the number of tokens written to out (at most
// cap) — if the true count exceeds cap, returns -(true count) and writes nothing useful.
// Details: user-defined tokens (type 4) are recognised even without parse_special, as HF
// tokenizers and the reference implementation do; control and unknown-type tokens only with it.
// At each position the longest such text wins. A text over 512 MiB gives INT32_MIN.
int32_t tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special,
                         bool parse_special, int32_t *out, int32_t cap);

// Appends the text of one token to buf (byte tokens give their byte; SPM '▁' gives a space;
// BPE byte-level chars map back to bytes). Control tokens give nothing unless render_special.
// Returns the number of bytes the piece has (may exceed n; writes at most n bytes, no NUL).
int32_t tokenizer_piece(const tokenizer *t, int32_t id, bool render_special, char *buf, int32_t n);
// Marks in twin[0..n_vocab) the byte tokens ("<0x2E>") whose byte a normal token spells on its
// own ("."): a second spelling of the same text, which the tokenizer never writes. Constrained
// decoding leaves them out where it masks by text, so that a text with one way to go on has one
// token to go on with (a token it can force: token_filter.forced).
void tokenizer_byte_twins(const tokenizer *t, bool *twin);
// Raw vocabulary text of a token (as stored in the file), NUL-terminated.
const char *tokenizer_token_text(const tokenizer *t, int32_t id);

// Detokenizes a whole sequence into a malloc'd NUL-terminated string. For SPM, the leading space
// the tokenizer added (add_space_prefix) is removed when remove_leading_space is true (encode
// adds it at the start and after each special token, so it is removed at those places).
// Unknown-type tokens give their text (e.g. "<unk>"); unused ones give nothing unless
// render_special.
char *tokenizer_decode(const tokenizer *t, const int32_t *ids, int32_t n, bool render_special,
                       bool remove_leading_space);

#endif
