#include "pretok.h"
#include "unicode.h"
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The text of one split, decoded once: code points, their flags and byte offsets.
typedef struct pt_text {
    const unsigned *cp;
    const unsigned short *fl;
    size_t n;
} pt_text;

// A matcher tries one expression at position pos of the piece [start, end) and returns how many
// code points the expression matches there (0: no match at pos).
typedef size_t (*pt_match_fn)(const pt_text *t, size_t start, size_t pos, size_t end);

// Flags of code point i, or 0 past the piece end (so no class test succeeds there).
static inline unsigned fl_at(const pt_text *t, size_t i, size_t end) {
    return i < end ? t->fl[i] : 0;
}
static inline unsigned cp_at(const pt_text *t, size_t i, size_t end) {
    return i < end ? t->cp[i] : 0xFFFFFFFFu;
}

#define F_L UFLAG_LETTER
#define F_N UFLAG_NUMBER
#define F_WS UFLAG_WHITESPACE

// [^\s\p{L}\p{N}]: any code point that is not whitespace, letter or number (false past the end).
static inline bool is_other(const pt_text *t, size_t i, size_t end) {
    return i < end && !(t->fl[i] & (F_L | F_N | F_WS));
}
static inline bool is_ws(const pt_text *t, size_t i, size_t end) { return fl_at(t, i, end) & F_WS; }
static inline bool is_letter(const pt_text *t, size_t i, size_t end) { return fl_at(t, i, end) & F_L; }
static inline bool is_number(const pt_text *t, size_t i, size_t end) { return fl_at(t, i, end) & F_N; }
static inline bool is_crlf(unsigned c) { return c == '\r' || c == '\n'; }

static inline unsigned ascii_lower(unsigned c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d, case-insensitive when fold is set. Returns the length or 0.
static size_t match_contraction(const pt_text *t, size_t pos, size_t end, bool fold) {
    if (cp_at(t, pos, end) != '\'' || pos + 1 >= end) return 0;
    unsigned a = cp_at(t, pos + 1, end), b = cp_at(t, pos + 2, end);
    if (fold) { a = ascii_lower(a); b = ascii_lower(b); }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// Length of the run from pos of code points that have any of the flags.
static size_t run_len(const pt_text *t, size_t pos, size_t end, unsigned flags) {
    size_t i = pos;
    while (i < end && (t->fl[i] & flags)) i++;
    return i - pos;
}

// \s+(?!\S)|\s+ at pos (pos is whitespace): the whole run when it reaches the end of the piece
// or is a single code point; otherwise all but its last code point, which stays to lead the next
// word (" world" keeps its space).
static size_t match_ws_run(const pt_text *t, size_t pos, size_t end) {
    size_t k = run_len(t, pos, end, F_WS);
    if (pos + k < end && k > 1) return k - 1;
    return k;
}

// gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (the |\s+ tail is implied: a lone whitespace before a word is left unmatched by \s+(?!\S),
// and an unmatched stretch becomes a piece of its own all the same).
static size_t match_gpt2(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t m = match_contraction(t, pos, end, false);
    if (m) return m;
    size_t sp = cp_at(t, pos, end) == ' ' ? 1 : 0;
    // ' ?' is greedy: with the space first, then without (where the space itself cannot start
    // a letter/number/other run, so only the first form can succeed after a space).
    size_t q = pos + sp;
    if (is_letter(t, q, end)) return sp + run_len(t, q, end, F_L);
    if (is_number(t, q, end)) return sp + run_len(t, q, end, F_N);
    if (is_other(t, q, end)) {
        size_t i = q;
        while (is_other(t, i, end)) i++;
        return i - pos;
    }
    if (is_ws(t, pos, end)) return match_ws_run(t, pos, end);
    return 0;
}

// llama3 / qwen2:
// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,N}
// | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
static size_t match_llama3_n(const pt_text *t, size_t pos, size_t end, size_t max_digits) {
    size_t m = match_contraction(t, pos, end, true);
    if (m) return m;
    unsigned c = t->cp[pos];
    unsigned f = t->fl[pos];
    // [^\r\n\p{L}\p{N}]?\p{L}+ : an optional lead (anything but CR, LF, letter, number) then
    // letters. A letter at pos cannot be the lead, so it starts the letter run itself.
    if (f & F_L) return run_len(t, pos, end, F_L);
    if (!is_crlf(c) && !(f & F_N) && is_letter(t, pos + 1, end))
        return 1 + run_len(t, pos + 1, end, F_L);
    if (f & F_N) {
        // Scan no further than max_digits: a long digit run is matched max_digits at a time,
        // and rescanning it to its end each time would be quadratic.
        size_t lim = end - pos < max_digits ? end - pos : max_digits;
        return run_len(t, pos, pos + lim, F_N);
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    size_t q = pos + (c == ' ' ? 1 : 0);
    if (is_other(t, q, end)) {
        size_t i = q;
        while (is_other(t, i, end)) i++;
        while (i < end && is_crlf(t->cp[i])) i++;
        return i - pos;
    }
    if (f & F_WS) {
        // \s*[\r\n]+ : greedy \s* backs off to the last CR/LF of the whitespace run, and [\r\n]+
        // takes it (nothing after it in the run is CR/LF).
        size_t k = run_len(t, pos, end, F_WS);
        for (size_t i = pos + k; i > pos; i--)
            if (is_crlf(t->cp[i - 1])) return i - pos;
        return match_ws_run(t, pos, end);
    }
    return 0;
}

static size_t match_llama3(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    return match_llama3_n(t, pos, end, 3);
}

static size_t match_qwen2(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    return match_llama3_n(t, pos, end, 1);
}

// \p{N}
static size_t match_one_number(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start; (void)end;
    return (t->fl[pos] & F_N) ? 1 : 0;
}

// \p{N}+
static size_t match_numbers(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    return run_len(t, pos, end, F_N);
}

// [0-9][0-9][0-9]
static size_t match_three_ascii_digits(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    for (size_t i = 0; i < 3; i++) {
        unsigned c = cp_at(t, pos + i, end);
        if (c < '0' || c > '9') return 0;
    }
    return 3;
}

// [\p{P}\$\+<=>\^~\|]+ (default); falcon's class adds the backtick. Past ASCII only \p{P} is
// in the class.
static bool is_default_punct(const pt_text *t, size_t i, size_t end, bool backtick) {
    if (i >= end) return false;
    if (t->fl[i] & UFLAG_PUNCT) return true;
    unsigned c = t->cp[i];
    return c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
           c == '|' || (backtick && c == '`');
}

static size_t match_default_punct(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t i = pos;
    while (is_default_punct(t, i, end, false)) i++;
    return i - pos;
}

// [\p{P}\$\+<=>\^~\|`]+
static size_t match_falcon_punct(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t i = pos;
    while (is_default_punct(t, i, end, true)) i++;
    return i - pos;
}

// \s?X+ where X is a class of flags: one whitespace code point joins the run only when the run
// follows it (the greedy \s? backs off otherwise, and X+ cannot start on whitespace).
static size_t match_ws_opt_run(const pt_text *t, size_t pos, size_t end, unsigned flags) {
    size_t q = pos + (is_ws(t, pos, end) && (fl_at(t, pos + 1, end) & flags) ? 1 : 0);
    size_t k = run_len(t, q, end, flags);
    return k ? q - pos + k : 0;
}

// ---- deepseek-coder ----
// \s, \p{L} and \p{P} are the Unicode properties: the reference matches these expressions on
// text where each code point past ASCII stands for its category (non-ASCII whitespace for \s).

// \s?\p{L}+
static size_t match_dsc_letters(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    return match_ws_opt_run(t, pos, end, F_L);
}

// \s?\p{P}+
static size_t match_dsc_punct(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    return match_ws_opt_run(t, pos, end, UFLAG_PUNCT);
}

// ---- deepseek-llm ----
// Its expressions are written with explicit character ranges and run (in the reference) on text
// where non-ASCII whitespace has been replaced by a plain whitespace character: so \s is the
// White_Space property and no whitespace code point is a member of the explicit classes.

typedef struct cp_range { unsigned lo, hi; } cp_range;

// Cased letters (Lu, Ll, Lt) as the deepseek-llm expression lists them.
static const cp_range ds_letters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

// ASCII and fullwidth punctuation and symbols, curly quotes, ideographic space/comma/full stop:
// [!-/:-~！-／：-～‘-‟　-。]
static const cp_range ds_punct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E},
};

// CJK ideographs, the blocks before them from U+0800, Hangul: [一-龥ࠀ-一가-퟿]
static const cp_range ds_cjk[] = {
    {0x800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF},
};

static bool in_ranges(const cp_range *r, size_t n, unsigned c) {
    size_t lo = 0, hi = n;
    while (lo < hi) {  // ranges are sorted by lo and do not overlap (ds_cjk's touch)
        size_t mid = lo + (hi - lo) / 2;
        if (c < r[mid].lo) hi = mid;
        else if (c > r[mid].hi) lo = mid + 1;
        else return true;
    }
    return false;
}

#define IN_CLASS(tab, t, i, end) \
    ((i) < (end) && !(((t)->cp[i] >= 0x80) && ((t)->fl[i] & F_WS)) && \
     in_ranges(tab, sizeof tab / sizeof tab[0], (t)->cp[i]))

// [\r\n]
static size_t match_ds_crlf(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start; (void)end;
    return is_crlf(t->cp[pos]) ? 1 : 0;
}

// \s?[letters]+
static size_t match_ds_letters(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t q = pos + (is_ws(t, pos, end) && IN_CLASS(ds_letters, t, pos + 1, end) ? 1 : 0);
    size_t i = q;
    while (IN_CLASS(ds_letters, t, i, end)) i++;
    return i > q ? i - pos : 0;
}

// \s?[punct]+
static size_t match_ds_punct(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t q = pos + (is_ws(t, pos, end) && IN_CLASS(ds_punct, t, pos + 1, end) ? 1 : 0);
    size_t i = q;
    while (IN_CLASS(ds_punct, t, i, end)) i++;
    return i > q ? i - pos : 0;
}

// \s+$ : the whitespace run that ends the piece. If pos-1 is whitespace the attempt there
// already failed (its run did not reach the end), and so does this one: that keeps a long
// whitespace run inside a piece linear.
static size_t match_ds_trailing_ws(const pt_text *t, size_t start, size_t pos, size_t end) {
    if (!is_ws(t, pos, end) || (pos > start && is_ws(t, pos - 1, end))) return 0;
    size_t k = run_len(t, pos, end, F_WS);
    return pos + k == end ? k : 0;
}

// [一-龥ࠀ-一가-퟿]+
static size_t match_ds_cjk(const pt_text *t, size_t start, size_t pos, size_t end) {
    (void)start;
    size_t i = pos;
    while (IN_CLASS(ds_cjk, t, i, end)) i++;
    return i - pos;
}

// ---- pre-tokenizers ----

typedef struct pretok_def {
    const char *name;
    pt_match_fn steps[6];  // NULL-terminated
} pretok_def;

static const pretok_def defs[PRETOK_COUNT] = {
    [PRETOK_GPT2] = { "gpt-2", { match_gpt2, NULL } },
    [PRETOK_LLAMA3] = { "llama-bpe", { match_llama3, NULL } },
    [PRETOK_QWEN2] = { "qwen2", { match_qwen2, NULL } },
    [PRETOK_SMOLLM] = { "smollm", { match_one_number, match_gpt2, NULL } },
    [PRETOK_DEEPSEEK_LLM] = { "deepseek-llm", { match_ds_crlf, match_ds_letters, match_ds_punct,
                                                match_ds_trailing_ws, match_ds_cjk,
                                                match_numbers } },
    [PRETOK_DEFAULT] = { "default", { match_default_punct, match_gpt2, match_numbers,
                                      match_three_ascii_digits, NULL } },
    [PRETOK_FALCON] = { "falcon", { match_falcon_punct, match_gpt2, match_three_ascii_digits,
                                    NULL } },
    [PRETOK_DEEPSEEK_CODER] = { "deepseek-coder", { match_ds_crlf, match_dsc_letters,
                                                    match_dsc_punct, match_ds_cjk,
                                                    match_one_number, NULL } },
    [PRETOK_DBRX] = { "dbrx", { match_llama3, NULL } },
};

// Every tokenizer.ggml.pre name to which the reference gives one of the expression sequences
// above (under a type of its own for many of them) and no other tokenization rule that cabin
// lacks. Left out, and so refused: the names with other expressions, and jina-v1-en,
// jina-v2-code and roberta-bpe (gpt-2's expression, but a separator token after the text).
static const struct { const char *name; enum pretok_kind kind; } names[] = {
    { "default", PRETOK_DEFAULT },
    { "gpt-2", PRETOK_GPT2 }, { "phi-2", PRETOK_GPT2 }, { "mpt", PRETOK_GPT2 },
    { "olmo", PRETOK_GPT2 }, { "jais", PRETOK_GPT2 }, { "exaone4", PRETOK_GPT2 },
    { "trillion", PRETOK_GPT2 }, { "granite-docling", PRETOK_GPT2 }, { "gigachat", PRETOK_GPT2 },
    { "jina-es", PRETOK_GPT2 }, { "jina-de", PRETOK_GPT2 }, { "jina-v2-es", PRETOK_GPT2 },
    { "jina-v2-de", PRETOK_GPT2 }, { "a.x-4.0", PRETOK_GPT2 }, { "mellum", PRETOK_GPT2 },
    { "modern-bert", PRETOK_GPT2 },
    { "llama-bpe", PRETOK_LLAMA3 }, { "llama3", PRETOK_LLAMA3 }, { "llama-v3", PRETOK_LLAMA3 },
    { "falcon3", PRETOK_LLAMA3 }, { "falcon-h1", PRETOK_LLAMA3 }, { "pixtral", PRETOK_LLAMA3 },
    { "midm-2.0", PRETOK_LLAMA3 }, { "lfm2", PRETOK_LLAMA3 }, { "jina-v5-nano", PRETOK_LLAMA3 },
    { "dbrx", PRETOK_DBRX }, { "smaug-bpe", PRETOK_DBRX }, { "chatglm-bpe", PRETOK_DBRX },
    { "glm4", PRETOK_DBRX },
    { "qwen2", PRETOK_QWEN2 }, { "deepseek-r1-qwen", PRETOK_QWEN2 }, { "kormo", PRETOK_QWEN2 },
    { "f2llmv2", PRETOK_QWEN2 }, { "megrez", PRETOK_QWEN2 }, { "stablelm2", PRETOK_QWEN2 },
    { "hunyuan", PRETOK_QWEN2 }, { "solar-open", PRETOK_QWEN2 }, { "grok-2", PRETOK_QWEN2 },
    { "smollm", PRETOK_SMOLLM }, { "starcoder", PRETOK_SMOLLM }, { "refact", PRETOK_SMOLLM },
    { "command-r", PRETOK_SMOLLM }, { "codeshell", PRETOK_SMOLLM }, { "exaone", PRETOK_SMOLLM },
    { "minerva-7b", PRETOK_SMOLLM }, { "mellum2", PRETOK_SMOLLM },
    { "deepseek-llm", PRETOK_DEEPSEEK_LLM },
    { "deepseek-coder", PRETOK_DEEPSEEK_CODER },
    { "falcon", PRETOK_FALCON },
};
#define N_NAMES (sizeof names / sizeof names[0])

bool pretok_from_name(const char *name, enum pretok_kind *kind) {
    if (!name) { *kind = PRETOK_DEFAULT; return true; }
    for (size_t i = 0; i < N_NAMES; i++)
        if (strcmp(names[i].name, name) == 0) { *kind = names[i].kind; return true; }
    return false;
}

const char *pretok_kind_name(enum pretok_kind kind) {
    return (unsigned)kind < PRETOK_COUNT ? defs[kind].name : "?";
}

void pretok_supported(char *buf, size_t cap) {
    if (cap == 0) return;
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < PRETOK_COUNT && k < cap; i++) {
        int n = snprintf(buf + k, cap - k, "%s, ", defs[i].name);
        if (n < 0) return;
        k += (size_t)n;
    }
    if (k < cap) snprintf(buf + k, cap - k, "and %zu other names for the same rules",
                          N_NAMES - PRETOK_COUNT);
}

bool pretok_ignore_merges(enum pretok_kind kind) { return kind == PRETOK_LLAMA3; }

bool pretok_default_add_bos(enum pretok_kind kind) { return kind == PRETOK_LLAMA3; }

void pretok_work_free(pretok_work *w) {
    free(w->cp);
    free(w->fl);
    free(w->off);
    free(w->bounds[0]);
    free(w->bounds[1]);
    memset(w, 0, sizeof *w);
}

// One pass: splits each piece of in (n_in ends) by matcher fn into out. Returns the count.
static size_t split_pass(const pt_text *t, pt_match_fn fn, const size_t *in, size_t n_in,
                         size_t *out) {
    size_t n_out = 0, start = 0;
    for (size_t p = 0; p < n_in; p++) {
        size_t end = in[p], pos = start, gap = start;
        while (pos < end) {
            size_t m = fn(t, start, pos, end);
            if (m == 0) { pos++; continue; }
            if (gap < pos) out[n_out++] = pos;   // the unmatched stretch before this match
            pos += m;
            out[n_out++] = pos;
            gap = pos;
        }
        if (gap < end) out[n_out++] = end;
        start = end;
    }
    return n_out;
}

size_t pretok_split(pretok_work *w, enum pretok_kind kind, const char *text, size_t len,
                    const size_t **ends) {
    *ends = NULL;
    if (len == 0) return 0;
    if ((unsigned)kind >= PRETOK_COUNT) kind = PRETOK_GPT2;
    // At most one code point per byte; piece ends at most one per code point.
    if (w->cap_cp < len) {
        w->cp = xrealloc(w->cp, len * sizeof *w->cp);
        w->fl = xrealloc(w->fl, len * sizeof *w->fl);
        w->off = xrealloc(w->off, (len + 1) * sizeof *w->off);
        w->cap_cp = len;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        uint32_t c;
        int k = utf8_decode(text + i, len - i, &c);
        w->cp[n] = c;
        w->fl[n] = (unsigned short)unicode_flags(c);
        w->off[n] = i;
        i += (size_t)k;
    }
    w->off[n] = len;
    if (w->cap_bounds < n) {
        w->bounds[0] = xrealloc(w->bounds[0], n * sizeof(size_t));
        w->bounds[1] = xrealloc(w->bounds[1], n * sizeof(size_t));
        w->cap_bounds = n;
    }
    pt_text t = { w->cp, w->fl, n };
    size_t *cur = w->bounds[0], *nxt = w->bounds[1];
    size_t n_pieces = 1;
    cur[0] = n;
    for (int s = 0; s < 6 && defs[kind].steps[s]; s++) {
        n_pieces = split_pass(&t, defs[kind].steps[s], cur, n_pieces, nxt);
        size_t *tmp = cur; cur = nxt; nxt = tmp;
    }
    for (size_t i = 0; i < n_pieces; i++) cur[i] = w->off[cur[i]];  // code points -> bytes
    *ends = cur;
    return n_pieces;
}
