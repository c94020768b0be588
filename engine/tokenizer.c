// Tokenizer: loading from GGUF metadata, special tokens, the encode driver, detokenization.
// The SPM and BPE algorithms live in tokenizer_spm.c and tokenizer_bpe.c; the hash, the output
// list and the encode scratch they share with this file in tokenizer_common.c.
#include "tokenizer_internal.h"
#include "unicode.h"
#include "base/base.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Longest text one encode call accepts: keeps every byte offset (SPM escaping triples spaces)
// within 32 bits and every token count within int32_t.
#define TOK_MAX_TEXT ((size_t)1 << 29)
#define TOK_MAX_TOKEN_TEXT (1u << 20)

// ---- small helpers ----

// Copies a file string for a message: at most 48 bytes, non-printable bytes as '?'.
static void printable(char *dst, size_t n, const char *s, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < len && k + 4 < n && i < 48; i++)
        dst[k++] = (s[i] >= 0x20 && s[i] < 0x7F) ? s[i] : '?';
    if (len > 48 && k + 4 < n) { memcpy(dst + k, "...", 3); k += 3; }
    dst[k] = 0;
}

static void add_note(tokenizer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(tokenizer *t, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t old = t->note ? strlen(t->note) : 0;
    t->note = xrealloc(t->note, old + strlen(line) + 3);
    if (old) { memcpy(t->note + old, "; ", 2); old += 2; }
    memcpy(t->note + old, line, strlen(line) + 1);
}

static bool is_special_type(int ty) {
    return ty == TT_CONTROL || ty == TT_USER_DEFINED || ty == TT_UNKNOWN;
}

// ---- loading ----

// Reads an optional token-id key: absent leaves *id, present must be in [0, n_vocab).
static int read_id(const gguf_file *g, tokenizer *t, const char *key, int32_t *id, errbuf *err) {
    int64_t v;
    int r = gguf_get_i64(g, key, &v, err);
    if (r < 0) return -1;
    if (r == 0) return 0;
    if (v < 0 || v >= t->n_vocab)
        return err_set(err, "%s: %s = %" PRId64 " is out of range (the vocabulary has %d tokens)",
                       t->path, key, v, t->n_vocab);
    *id = (int32_t)v;
    return 0;
}

static int read_flag(const gguf_file *g, const char *key, bool *flag, errbuf *err) {
    return gguf_get_bool(g, key, flag, err) < 0 ? -1 : 0;
}

static int load_tokens(const gguf_file *g, tokenizer *t, errbuf *err) {
    const gguf_kv *kv;
    int r = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_STRING, &kv, err);
    if (r < 0) return -1;
    if (r == 0) return err_set(err, "%s: tokenizer.ggml.tokens is missing", t->path);
    if (kv->arr_n == 0) return err_set(err, "%s: tokenizer.ggml.tokens is empty", t->path);
    if (kv->arr_n > (uint64_t)INT32_MAX / 2)
        return err_set(err, "%s: tokenizer.ggml.tokens has %" PRIu64 " entries (too many)",
                       t->path, kv->arr_n);
    int32_t n = (int32_t)kv->arr_n;
    uint64_t pool = 0;
    for (int32_t i = 0; i < n; i++) {
        uint64_t len = kv->arr_strs[i].len;
        // Real token texts are tens of bytes; the limit keeps piece lengths far inside int32_t.
        if (len > TOK_MAX_TOKEN_TEXT || !add_u64(pool, len + 1, &pool) || pool > SIZE_MAX / 2)
            return err_set(err, "%s: tokenizer.ggml.tokens[%d]: text of %" PRIu64 " bytes is too "
                           "long (at most %u)", t->path, i, len, (unsigned)TOK_MAX_TOKEN_TEXT);
    }
    t->n_vocab = n;
    t->pool = try_malloc((size_t)pool);
    t->text_off = try_malloc((size_t)n * sizeof *t->text_off);
    t->text_len = try_malloc((size_t)n * sizeof *t->text_len);
    t->text_hash = try_malloc((size_t)n * sizeof *t->text_hash);
    if (!t->pool || !t->text_off || !t->text_len || !t->text_hash)
        return err_set(err, "%s: out of memory for a vocabulary of %d tokens (%" PRIu64 " bytes of text)",
                       t->path, n, pool);
    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        const gguf_str *s = &kv->arr_strs[i];
        memcpy(t->pool + off, s->ptr, (size_t)s->len);
        t->pool[off + s->len] = 0;
        t->text_off[i] = off;
        t->text_len[i] = (uint32_t)s->len;
        t->text_hash[i] = tok_hash_bytes(s->ptr, (size_t)s->len);
        off += (size_t)s->len + 1;
    }
    if (!tok_hash_init(&t->vocab, (size_t)n))
        return err_set(err, "%s: out of memory for the index of %d tokens", t->path, n);
    for (int32_t i = 0; i < n; i++) tok_hash_insert(t, &t->vocab, i);
    return 0;
}

// Parses "<0xNN>" (as SentencePiece names byte tokens). Returns the byte or -1.
static int parse_byte_token(const char *s, size_t len) {
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 :
                c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static int load_types_scores(const gguf_file *g, tokenizer *t, errbuf *err) {
    int32_t n = t->n_vocab;
    t->types = try_malloc((size_t)n);
    t->scores = try_calloc((size_t)n, sizeof *t->scores);
    if (!t->types || !t->scores)
        return err_set(err, "%s: out of memory for the types and scores of %d tokens", t->path, n);
    const gguf_kv *kv;
    int r = gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_I64, &kv, err);
    if (r < 0) return -1;
    if (r > 0) {
        if (kv->arr_n != (uint64_t)n)
            return err_set(err, "%s: tokenizer.ggml.token_type has %" PRIu64 " entries but "
                           "tokenizer.ggml.tokens has %d", t->path, kv->arr_n, n);
        for (int32_t i = 0; i < n; i++) {
            int64_t v = gguf_arr_i64(kv, (uint64_t)i);
            if (v < TT_UNDEFINED || v > TT_BYTE)
                return err_set(err, "%s: tokenizer.ggml.token_type[%d] = %" PRId64
                               " is not a token type (0..6)", t->path, i, v);
            t->types[i] = (uint8_t)v;
        }
    } else {
        // No types: every token is normal, except SentencePiece byte tokens by their names.
        for (int32_t i = 0; i < n; i++)
            t->types[i] = t->kind == TOK_SPM && parse_byte_token(tok_text(t, i), t->text_len[i]) >= 0
                          ? TT_BYTE : TT_NORMAL;
    }
    r = gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_F64, &kv, err);
    if (r < 0) return -1;
    if (r > 0) {
        if (kv->arr_n != (uint64_t)n)
            return err_set(err, "%s: tokenizer.ggml.scores has %" PRIu64 " entries but "
                           "tokenizer.ggml.tokens has %d", t->path, kv->arr_n, n);
        for (int32_t i = 0; i < n; i++) {
            double v = gguf_arr_f64(kv, (uint64_t)i);
            t->scores[i] = isnan(v) ? -INFINITY : (float)v;  // NaN would break the heap order
        }
    }
    return 0;
}

static int cmp_u64_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

// Indexes the tokens that can be recognised in text by first byte and length.
static int build_special_index(tokenizer *t, errbuf *err) {
    size_t count = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (is_special_type(t->types[i]) && t->text_len[i] > 0) count++;
    // (first byte, length) keys, sorted so each byte's lengths come longest first.
    uint64_t *keys = tok_hash_init(&t->special, count) ? try_malloc((count ? count : 1) * sizeof *keys) : NULL;
    if (keys) t->sp_lens = try_malloc((count ? count : 1) * sizeof *t->sp_lens);
    if (!keys || !t->sp_lens) {
        free(keys);
        return err_set(err, "%s: out of memory for the index of %zu special tokens", t->path, count);
    }
    size_t k = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (!is_special_type(t->types[i]) || t->text_len[i] == 0) continue;
        tok_hash_insert(t, &t->special, i);
        unsigned char b = (unsigned char)tok_text(t, i)[0];
        keys[k++] = (uint64_t)(255 - b) << 32 | t->text_len[i];
    }
    qsort(keys, k, sizeof *keys, cmp_u64_desc);  // byte ascending, then length descending
    size_t n = 0;
    memset(t->sp_first, 0, sizeof t->sp_first);
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && keys[i] == keys[i - 1]) continue;
        unsigned b = 255 - (unsigned)(keys[i] >> 32);
        t->sp_lens[n++] = (uint32_t)keys[i];
        t->sp_first[b + 1]++;
    }
    for (int b = 0; b < 256; b++) t->sp_first[b + 1] += t->sp_first[b];
    free(keys);
    return 0;
}

// End-of-turn and other end-of-generation token texts, the end-of-turn candidates first in the
// order they are preferred. The last is split after its first hex escape, which would otherwise
// run on into "end"; the parentheses tell clang the split is meant.
static const char *const end_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>", ("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"),
};
#define N_EOT_CANDIDATES 5

static void add_eog(tokenizer *t, int32_t id) {
    if (id < 0) return;
    for (int i = 0; i < t->n_eog; i++) if (t->eog[i] == id) return;
    if (t->n_eog < (int)(sizeof t->eog / sizeof t->eog[0])) t->eog[t->n_eog++] = id;
}

static int32_t find_special_text(const tokenizer *t, const char *s) {
    int32_t id = tok_hash_find(t, &t->special, s, strlen(s));
    return id >= 0 && is_special_type(t->types[id]) ? id : -1;
}

tokenizer *tokenizer_load(const gguf_file *g, errbuf *err) {
    tokenizer *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(g->path ? g->path : "(gguf)");
    t->bos = t->eos = t->eot = t->unk = -1;
    for (int b = 0; b < 256; b++) t->byte_tok[b] = -1;
    char shown[64];

    gguf_str s;
    int r = gguf_get_str(g, "tokenizer.ggml.model", &s, err);
    if (r < 0) goto fail;
    if (r == 0) { err_set(err, "%s: tokenizer.ggml.model is missing (no tokenizer in this file)", t->path); goto fail; }
    t->model_name = xstrndup(s.ptr, (size_t)s.len);
    if (s.len == 5 && memcmp(s.ptr, "llama", 5) == 0) t->kind = TOK_SPM;
    else if (s.len == 4 && memcmp(s.ptr, "gpt2", 4) == 0) t->kind = TOK_BPE;
    else {
        printable(shown, sizeof shown, s.ptr, (size_t)s.len);
        err_set(err, "%s: tokenizer.ggml.model '%s' is not supported (llama and gpt2 are)", t->path, shown);
        goto fail;
    }

    r = gguf_get_str(g, "tokenizer.ggml.pre", &s, err);
    if (r < 0) goto fail;
    t->pre_name = r ? xstrndup(s.ptr, (size_t)s.len) : xstrdup("default");
    // A byte-level BPE file whose pre-tokenizer cabin has no rules for is refused: another
    // pre-tokenizer's pieces would give other tokens than the model was trained on. (SPM files
    // carry the key too, but nothing reads it.)
    bool pre_ok = r ? strlen(t->pre_name) == (size_t)s.len && pretok_from_name(t->pre_name, &t->pre)
                    : pretok_from_name(NULL, &t->pre);
    if (t->kind == TOK_BPE && !pre_ok) {
        char supported[320];
        printable(shown, sizeof shown, s.ptr, (size_t)s.len);
        pretok_supported(supported, sizeof supported);
        err_set(err, "%s: tokenizer.ggml.pre '%s' is not supported (supported: %s)", t->path,
                shown, supported);
        goto fail;
    }
    if (t->kind == TOK_BPE) t->add_bos = pretok_default_add_bos(t->pre);

    if (load_tokens(g, t, err) || load_types_scores(g, t, err) || build_special_index(t, err)) goto fail;

    if (t->kind == TOK_SPM) {
        // SentencePiece's fixed ids, unless the file says otherwise.
        t->unk = 0;
        if (t->n_vocab > 1) t->bos = 1;
        if (t->n_vocab > 2) t->eos = 2;
        t->add_bos = true;
        t->add_space_prefix = true;
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", b);
            int32_t id = tok_hash_find(t, &t->vocab, name, 6);
            if (id < 0) { name[0] = (char)b; id = tok_hash_find(t, &t->vocab, name, 1); }
            t->byte_tok[b] = id;
        }
    } else {
        const gguf_kv *kv;
        r = gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_STRING, &kv, err);
        if (r < 0) goto fail;
        if (r == 0) { err_set(err, "%s: tokenizer.ggml.merges is missing (a gpt2 tokenizer needs it)", t->path); goto fail; }
        bpe_init_byte_map(t);
        if (bpe_load_merges(t, kv, err)) goto fail;
        if (t->n_merges_skipped)
            add_note(t, "%s: tokenizer.ggml.merges: %" PRIu64 " of %" PRIu64 " entries skipped "
                     "(malformed, or naming texts that are not tokens)", t->path,
                     t->n_merges_skipped, kv->arr_n);
    }

    if (read_id(g, t, "tokenizer.ggml.bos_token_id", &t->bos, err) ||
        read_id(g, t, "tokenizer.ggml.eos_token_id", &t->eos, err) ||
        read_id(g, t, "tokenizer.ggml.unknown_token_id", &t->unk, err) ||
        read_id(g, t, "tokenizer.ggml.eot_token_id", &t->eot, err) ||
        read_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err) ||
        read_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos, err) ||
        read_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err))
        goto fail;

    if (t->eot < 0)
        for (int i = 0; i < N_EOT_CANDIDATES && t->eot < 0; i++) t->eot = find_special_text(t, end_texts[i]);
    add_eog(t, t->eos);
    add_eog(t, t->eot);
    for (size_t i = 0; i < sizeof end_texts / sizeof end_texts[0]; i++)
        add_eog(t, find_special_text(t, end_texts[i]));
    return t;

fail:
    tokenizer_free(t);
    return NULL;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    free(t->path);
    free(t->model_name);
    free(t->pre_name);
    free(t->note);
    free(t->pool);
    free(t->text_off);
    free(t->text_len);
    free(t->text_hash);
    free(t->scores);
    free(t->types);
    free(t->vocab.slots);
    free(t->special.slots);
    free(t->sp_lens);
    free(t->merges);
    free(t);
}

// ---- accessors ----

enum tok_kind tokenizer_kind(const tokenizer *t) { return t->kind; }
const char *tokenizer_model_name(const tokenizer *t) { return t->model_name; }
const char *tokenizer_pre_name(const tokenizer *t) { return t->pre_name; }
const char *tokenizer_note(const tokenizer *t) { return t->note; }
int32_t tokenizer_n_vocab(const tokenizer *t) { return t->n_vocab; }
int32_t tokenizer_bos(const tokenizer *t) { return t->bos; }
int32_t tokenizer_eos(const tokenizer *t) { return t->eos; }
int32_t tokenizer_eot(const tokenizer *t) { return t->eot; }
bool tokenizer_add_bos(const tokenizer *t) { return t->add_bos && t->bos >= 0; }
bool tokenizer_add_eos(const tokenizer *t) { return t->add_eos && t->eos >= 0; }

bool tokenizer_is_eog(const tokenizer *t, int32_t id) {
    if (id < 0) return false;
    for (int i = 0; i < t->n_eog; i++) if (t->eog[i] == id) return true;
    return false;
}

int32_t tokenizer_find(const tokenizer *t, const char *piece) {
    return piece ? tok_hash_find(t, &t->vocab, piece, strlen(piece)) : -1;
}

int tokenizer_token_type(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->types[id] : TT_UNDEFINED;
}

void tokenizer_byte_twins(const tokenizer *t, bool *twin) {
    bool spelled[256] = { false };   // bytes a normal token spells alone
    char c;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->types[id] == TT_NORMAL && tokenizer_piece(t, id, false, &c, 1) == 1) spelled[(unsigned char)c] = true;
    for (int32_t id = 0; id < t->n_vocab; id++)
        twin[id] = t->types[id] == TT_BYTE && tokenizer_piece(t, id, false, &c, 1) == 1 && spelled[(unsigned char)c];
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? tok_text(t, id) : "";
}

// ---- encoding ----

// The special token whose text starts text (n bytes), longest first: user-defined tokens
// always, control and unknown tokens only with parse_special. Returns its id (and *len) or -1.
static int32_t match_special(const tokenizer *t, const char *text, size_t n, bool parse_special,
                             size_t *len) {
    unsigned char b = (unsigned char)text[0];
    for (uint32_t k = t->sp_first[b]; k < t->sp_first[b + 1]; k++) {
        uint32_t l = t->sp_lens[k];
        if (l > n) continue;
        int32_t id = tok_hash_find(t, &t->special, text, l);
        if (id < 0) continue;
        if (parse_special || t->types[id] == TT_USER_DEFINED) { *len = l; return id; }
    }
    return -1;
}

static void encode_fragment(const tokenizer *t, tok_work *w, const char *text, size_t len,
                            bool after_special, tok_out *o) {
    if (len == 0) return;
    if (t->kind == TOK_SPM) spm_encode_fragment(t, w, text, len, t->add_space_prefix && after_special, o);
    else bpe_encode_fragment(t, w, text, len, o);
}

int32_t tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special,
                         bool parse_special, int32_t *out, int32_t cap) {
    if (!text) len = 0;
    if (!out) cap = 0;
    if (len > TOK_MAX_TEXT) return INT32_MIN;
    tok_out o = {0};
    tok_work w = {0};
    if (add_special && tokenizer_add_bos(t)) tok_out_push(&o, t->bos);
    // Text is cut at special tokens; each stretch between them is tokenized on its own (for SPM
    // with the leading space at the start and after every special token, as SentencePiece's
    // "legacy" behaviour has it).
    bool after_special = true;
    size_t frag = 0, i = 0;
    while (i < len) {
        size_t ml;
        int32_t id = t->sp_first[256] ? match_special(t, text + i, len - i, parse_special, &ml) : -1;
        if (id < 0) { i++; continue; }
        if (i > frag) { encode_fragment(t, &w, text + frag, i - frag, after_special, &o); }
        tok_out_push(&o, id);
        after_special = true;
        i += ml;
        frag = i;
    }
    encode_fragment(t, &w, text + frag, len - frag, after_special, &o);
    if (add_special && tokenizer_add_eos(t)) tok_out_push(&o, t->eos);
    tok_work_free(&w);

    int32_t n = (int32_t)o.n;
    if (cap < 0) cap = 0;
    if (n > cap) { free(o.ids); return -n; }
    if (n) memcpy(out, o.ids, (size_t)n * sizeof *out);
    free(o.ids);
    return n;
}

// ---- decoding ----

static int32_t copy_out(const char *s, size_t len, char *buf, int32_t n) {
    if (n > 0) memcpy(buf, s, len < (size_t)n ? len : (size_t)n);
    return (int32_t)len;
}

int32_t tokenizer_piece(const tokenizer *t, int32_t id, bool render_special, char *buf, int32_t n) {
    if (id < 0 || id >= t->n_vocab) return 0;
    if (n < 0) n = 0;
    const char *s = tok_text(t, id);
    size_t len = t->text_len[id];
    switch (t->types[id]) {
    case TT_CONTROL:
    case TT_UNUSED:
        return render_special ? copy_out(s, len, buf, n) : 0;
    case TT_UNKNOWN:
    case TT_USER_DEFINED:
        return copy_out(s, len, buf, n);
    case TT_BYTE: {
        int b = parse_byte_token(s, len);
        if (b >= 0) {
            if (n > 0) buf[0] = (char)b;
            return 1;
        }
        break;  // not a <0xNN> name: decode as a normal token
    }
    default:
        break;
    }
    if (t->kind == TOK_BPE) return (int32_t)bpe_unmap_text(t, s, len, buf, (size_t)n);
    // SPM: U+2581 stands for a space.
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
            if (k < (size_t)n) buf[k] = ' ';
            k++;
            i += 3;
        } else {
            if (k < (size_t)n) buf[k] = s[i];
            k++;
            i++;
        }
    }
    return (int32_t)k;
}

char *tokenizer_decode(const tokenizer *t, const int32_t *ids, int32_t n, bool render_special,
                       bool remove_leading_space) {
    size_t cap = 64, len = 0;
    char *out = xmalloc(cap);
    if (!ids) n = 0;
    // SPM puts a space at the start of the text and after each special token (see encode): the
    // first non-empty piece after those places loses one leading space.
    bool strip = remove_leading_space && t->kind == TOK_SPM && t->add_space_prefix;
    bool strip_next = true;
    for (int32_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab) continue;
        // A piece is at most one token text (<= 1 MiB), so room is grown once at most.
        size_t room = cap - len - 1;
        int32_t k = tokenizer_piece(t, id, render_special, out + len,
                                    room > INT32_MAX ? INT32_MAX : (int32_t)room);
        if (k < 0) k = 0;
        if ((size_t)k > room) {
            while ((size_t)k > cap - len - 1) cap *= 2;
            out = xrealloc(out, cap);
            k = tokenizer_piece(t, id, render_special, out + len, k);
        }
        // (Unknown-type tokens mostly stand for characters the vocabulary lacks, with no space
        // added after them, so they do not count here.)
        int ty = t->types[id];
        if (ty == TT_CONTROL || ty == TT_USER_DEFINED) { strip_next = true; len += (size_t)k; continue; }
        if (k == 0) continue;
        if (strip && strip_next && out[len] == ' ') {
            memmove(out + len, out + len + 1, (size_t)k - 1);
            k--;
        }
        strip_next = false;
        len += (size_t)k;
    }
    out[len] = 0;
    return out;
}
