// Comparing the two searches' readings (see asr.h): words in common, in order; hesitations.
#include "audio/asr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// A hypothesis split into words (a copy of its text in buf; at most MAX_HYP_WORDS words kept).
enum { MAX_HYP_WORDS = 64 };
typedef struct hyp_words {
    char buf[512];
    const char *w[MAX_HYP_WORDS];
    int n;
} hyp_words;

static void split_words(hyp_words *h, const char *s) {
    snprintf(h->buf, sizeof h->buf, "%s", s);
    h->n = 0;
    char *save = NULL;
    for (char *t = strtok_r(h->buf, " ", &save); t && h->n < MAX_HYP_WORDS; t = strtok_r(NULL, " ", &save))
        h->w[h->n++] = t;
}

// m[i][j] = length of the longest common subsequence of a's words from i on and b's from j on.
static void lcs_table(const hyp_words *a, const hyp_words *b, int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1]) {
    for (int i = a->n; i >= 0; i--)
        for (int j = b->n; j >= 0; j--)
            m[i][j] = i == a->n || j == b->n ? 0 : strcmp(a->w[i], b->w[j]) == 0 ? m[i + 1][j + 1] + 1
                    : m[i + 1][j] > m[i][j + 1] ? m[i + 1][j] : m[i][j + 1];
}

// Share of a's words that b has in the same order: longest common subsequence / words of a.
double asr_word_agreement(const char *a, const char *b) {
    hyp_words wa, wb;
    split_words(&wa, a);
    split_words(&wb, b);
    if (!wa.n) return 0;
    int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1];
    lcs_table(&wa, &wb, m);
    return (double)m[0][0] / wa.n;
}

// The two hypotheses as one small grammar: their common words (longest common subsequence) in
// order, and where they differ either one's words ("turn ( uh | um ) down the music", "[ so ]
// turn ..."). Decoding the utterance again with it lets the acoustics alone choose.
static void appendf(char *out, size_t cap, size_t *k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    *k += (size_t)vsnprintf(out + *k, *k < cap ? cap - *k : 0, fmt, ap);
    va_end(ap);
}

int asr_union_grammar(const char *g, const char *l, char *out, size_t cap) {
    hyp_words wg, wl;
    split_words(&wg, g);
    split_words(&wl, l);
    if (wg.n == MAX_HYP_WORDS || wl.n == MAX_HYP_WORDS) return -1;   // (possibly) cut short: no union of parts
    int m[MAX_HYP_WORDS + 1][MAX_HYP_WORDS + 1];
    lcs_table(&wg, &wl, m);
    size_t k = 0;
    appendf(out, cap, &k, "#JSGF V1.0;\ngrammar pick;\npublic <pick> =");
    int i = 0, j = 0;
    while (i < wg.n || j < wl.n) {
        if (i < wg.n && j < wl.n && strcmp(wg.w[i], wl.w[j]) == 0) {
            appendf(out, cap, &k, " %s", wg.w[i]);
            i++, j++;
            continue;
        }
        // the differing stretch: up to the next common word of the LCS
        int i2 = i, j2 = j;
        while (i2 < wg.n || j2 < wl.n) {
            if (i2 < wg.n && j2 < wl.n && strcmp(wg.w[i2], wl.w[j2]) == 0) break;
            if (i2 < wg.n && (j2 == wl.n || m[i2 + 1][j2] >= m[i2][j2 + 1])) i2++;
            else j2++;
        }
        // "( g's | l's )" where both have words, "[ the one's ]" where one has none
        bool both = i2 > i && j2 > j;
        appendf(out, cap, &k, both ? " (" : " [");
        for (int x = i; x < i2; x++) appendf(out, cap, &k, " %s", wg.w[x]);
        if (both) appendf(out, cap, &k, " |");
        for (int x = j; x < j2; x++) appendf(out, cap, &k, " %s", wl.w[x]);
        appendf(out, cap, &k, both ? " )" : " ]");
        i = i2, j = j2;
    }
    appendf(out, cap, &k, ";\n");
    return k < cap ? 0 : -1;
}

static bool is_filler(const char *w) {
    static const char *const fillers[] = { "uh", "um", "er", "hmm", "so" };
    for (size_t k = 0; k < sizeof fillers / sizeof *fillers; k++)
        if (strcmp(w, fillers[k]) == 0) return true;
    return false;
}

// Whether a and b are the same words once hesitations and a discourse "so" are left out
// (the two searches often differ only there: the grammar's filler loop puts "uh" or "so" where
// espeak-ng's voice starts, the n-gram search drops a real "um").
bool asr_same_but_fillers(const char *a, const char *b) {
    hyp_words wa, wb;
    split_words(&wa, a);
    split_words(&wb, b);
    if (wa.n == MAX_HYP_WORDS || wb.n == MAX_HYP_WORDS) return false;   // (possibly) cut short
    int i = 0, j = 0;
    for (;;) {
        while (i < wa.n && is_filler(wa.w[i])) i++;
        while (j < wb.n && is_filler(wb.w[j])) j++;
        if (i == wa.n || j == wb.n) return i == wa.n && j == wb.n;
        if (strcmp(wa.w[i], wb.w[j]) != 0) return false;
        i++, j++;
    }
}
