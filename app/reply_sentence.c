// The spoken sentence after </act> must not say anything the action line does not.
//
// Every number in it is one of the action's ("temp=24.5" -> "24.5 degrees", "dest=80_hill_road"
// -> "80 hill road"); every word is a word of the action's values ("aunt maria" for
// contact=aunt_maria; "driver" for zone=driver) or a word of the corpus's sentences for the
// action's intent (app/reply_words.c), and the sentence follows the corpus's sentences for that
// intent item by item: each pair of neighbours ("calling @": a value after "calling"; "@" a
// run of value words, "#" a number, "^" the start, "$" the end) occurs in them. A copied value
// (dest=, contact=) of several words is said whole and in order; punctuation is the corpus's
// (space . , ! ? ' /) and letters are in the corpus's cases ("calling", "Calling", "ETA").
// So the car never does one thing while the assistant says another: "Okay, 25.5 degrees." for
// temp=24.5, "Calling felix now." for contact=ximena, "Warming the passenger side." for
// zone=driver, "Calling calling." Every reply in the corpus keeps the rule
// (tests/test_action_grammar.c checks the held-out references).
#include "app/reply_sentence.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool is_word_char(char c) { return isalpha((unsigned char)c) || c == '\''; }

// The end of the number starting at s[i] (s[i] a digit): digit runs joined by "." ("24.5";
// the "." of "25." at the end of a sentence is not part of it).
static size_t number_end(const char *s, size_t n, size_t i) {
    while (i < n && isdigit((unsigned char)s[i])) i++;
    while (i + 1 < n && s[i] == '.' && isdigit((unsigned char)s[i + 1]))
        for (i++; i < n && isdigit((unsigned char)s[i]); i++) {}
    return i;
}

void reply_sentence_rule_init(reply_sentence_rule *r, const char *action, size_t n) {
    memset(r, 0, sizeof *r);
    const char *sp = memchr(action, ' ', n);   // the values start after the intent
    size_t il = sp ? (size_t)(sp - action) : n;
    for (int k = 0; k < n_reply_vocabs && !r->vocab; k++)
        if (strlen(reply_vocabs[k].intent) == il && memcmp(reply_vocabs[k].intent, action, il) == 0) r->vocab = &reply_vocabs[k];
    for (size_t i = il; i < n; i++) {
        if (action[i] != '=') continue;
        // A value: its numbers and its words (between "_"). Copied values go on to their next
        // word; the car's own words do not ("Lane keeping off." for feature=lane_keep).
        bool copied = (i >= 4 && memcmp(action + i - 4, "dest", 4) == 0) || (i >= 7 && memcmp(action + i - 7, "contact", 7) == 0);
        size_t j = i + 1;
        int words_before = 0;
        char num_before[24] = "";   // the number just before the next word, if any
        while (j < n && action[j] != ' ') {
            if (isdigit((unsigned char)action[j])) {
                size_t e = number_end(action, n, j);
                if (e - j < sizeof r->num[0] && r->n_num < REPLY_SENTENCE_MAX_NUMBERS) {
                    memcpy(r->num[r->n_num], action + j, e - j);
                    r->num[r->n_num][e - j] = 0;
                    snprintf(num_before, sizeof num_before, "%s", r->num[r->n_num++]);
                }
                j = e;
            } else if (is_word_char(action[j])) {
                size_t e = j;
                while (e < n && is_word_char(action[e])) e++;
                if (e - j < sizeof r->word[0] && r->n_word < REPLY_SENTENCE_MAX_VALUE_WORDS) {
                    for (size_t k = j; k < e; k++) r->word[r->n_word][k - j] = (char)tolower((unsigned char)action[k]);
                    r->word[r->n_word][e - j] = 0;
                    bool more = false;   // another word of this value after this one
                    for (size_t k = e; k < n && action[k] != ' ' && !more; k++) more = isalpha((unsigned char)action[k]);
                    r->word_last[r->n_word] = !more || !copied;
                    r->word_copied[r->n_word] = copied;
                    r->word_inner[r->n_word] = copied && words_before > 0;
                    snprintf(r->word_num[r->n_word], sizeof r->word_num[0], "%s", copied ? num_before : "");
                    r->n_word++;
                }
                words_before++;
                num_before[0] = 0;
                j = e;
            } else {
                j++;
            }
        }
        i = j;
    }
}

// Is w[0..len) the whole of `full` (with `open`: its beginning)?
static bool matches(const char *full, const char *w, size_t len, bool open) {
    return strncmp(full, w, len) == 0 && (open || full[len] == 0) && strlen(full) >= len;
}

// The first entry of a sorted list not below key.
static int lower_bound(const char *const *list, int n, const char *key) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(list[mid], key) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Does the pair "prev next" occur (with `open`: "prev " followed by an item that begins with next)?
static bool pair_ok(const reply_sentence_rule *r, const char *prev, const char *next, size_t len, bool open) {
    if (!r->vocab) return true;
    char key[136];
    size_t pl = strlen(prev);
    if (pl + 1 + len >= sizeof key) return false;
    memcpy(key, prev, pl);
    key[pl] = ' ';
    memcpy(key + pl + 1, next, len);
    size_t kl = pl + 1 + len;
    key[kl] = 0;
    int k = lower_bound(r->vocab->pairs, r->vocab->n_pairs, key);
    return k < r->vocab->n_pairs && matches(r->vocab->pairs[k], key, kl, open);
}

// May anything but the end follow the item prev?
static bool has_next(const reply_sentence_rule *r, const char *prev) {
    if (!r->vocab) return true;
    char key[80];
    int kl = snprintf(key, sizeof key, "%s ", prev);
    for (int k = lower_bound(r->vocab->pairs, r->vocab->n_pairs, key);
         k < r->vocab->n_pairs && strncmp(r->vocab->pairs[k], key, (size_t)kl) == 0; k++)
        if (strcmp(r->vocab->pairs[k] + kl, "$") != 0) return true;
    return false;
}

static bool sentence_word(const reply_sentence_rule *r, const char *w, size_t len, bool open) {
    if (!r->vocab) return true;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)len, w);
    int k = lower_bound(r->vocab->words, r->vocab->n_words, key);
    return k < r->vocab->n_words && matches(r->vocab->words[k], key, len, open);
}

// The value word that w[0..len) is (or, if `open`, begins); -1 if none.
static int value_word(const reply_sentence_rule *r, const char *w, size_t len, bool open) {
    for (int k = 0; k < r->n_word; k++)
        if (matches(r->word[k], w, len, open)) return k;
    return -1;
}

// The letters' case: "calling", "Calling" or "ETA" (an open word: the beginning of one).
static bool case_ok(const char *s, size_t len) {
    bool lower = true, upper = true;
    for (size_t k = 1; k < len; k++) {
        if (!isalpha((unsigned char)s[k])) continue;
        if (isupper((unsigned char)s[k])) lower = false; else upper = false;
    }
    return lower || (upper && isupper((unsigned char)s[0]));
}

void reply_sentence_start(reply_sentence_state *st) {
    memset(st, 0, sizeof *st);
    strcpy(st->prev, "^");
    st->expect = -1;
}

int reply_sentence_scan(reply_sentence_state *st, const char *s, size_t n, bool ended, const reply_sentence_rule *r) {
    if (st->broken) return -1;
    char *prev = st->prev;
    int expect = st->expect;
    const char *punct = r->vocab ? r->vocab->punct : ".,/";
    bool run_open = st->run_open;
#define BEFORE(i) ((i) > 0 ? s[(i) - 1] : st->before)
    for (size_t i = 0; i < n; i++) {
        if (isdigit((unsigned char)s[i])) {
            size_t e = number_end(s, n, i);
            // Still open: at the end of the text, or a "." at the end that may lead to decimals.
            bool open = !ended && (e == n || (e + 1 == n && s[e] == '.'));
            bool ok = false;
            for (int k = 0; k < r->n_num && !ok; k++) {
                size_t vl = strlen(r->num[k]);
                if (vl == e - i && memcmp(r->num[k], s + i, vl) == 0) ok = true;   // the whole number
                else if (open && vl > n - i && memcmp(r->num[k], s + i, n - i) == 0) ok = true;   // its beginning
            }
            if (!ok || expect >= 0) return -1;
            // A copied value's number begins it ("24 copper row" is one "@" item, as in the
            // corpus's table); any other number is a "#".
            int first = -1;
            for (int k = 0; k < r->n_word && first < 0; k++)
                if (r->word_num[k][0] && matches(r->word_num[k], s + i, e - i, open)) first = k;
            bool as_value = first >= 0 && pair_ok(r, prev, "@", 1, false);
            bool as_number = (first < 0 || open) && pair_ok(r, prev, "#", 1, false);
            if (!as_value && !as_number) return -1;
            if (!as_value) first = -1;
            strcpy(prev, first >= 0 ? "@" : "#");
            expect = first;
            run_open = false;
            i = e - 1;
        } else if (is_word_char(s[i])) {
            size_t e = i;
            while (e < n && is_word_char(s[e])) e++;
            size_t len = e - i;
            bool open = !ended && e == n;
            char w[64];
            if (len >= sizeof w || !case_ok(s + i, len)) return -1;
            for (size_t k = 0; k < len; k++) w[k] = (char)tolower((unsigned char)s[i + k]);
            w[len] = 0;
            int v = value_word(r, w, len, open);
            if (expect >= 0) {   // inside a copied value: only its next word
                if (!matches(r->word[expect], w, len, open)) return -1;
                v = expect;
            } else {
                // A copied value is said from its start: its number if it has one ("24 copper
                // row"), else its first word; never from the middle ("maria" of aunt_maria).
                if (v >= 0 && r->word_copied[v] && (r->word_inner[v] || r->word_num[v][0])) v = -1;
                bool as_value = v >= 0 && ((run_open && !r->word_copied[v]) || pair_ok(r, prev, "@", 1, false));
                // A whole word that is a value's is read as one (as the corpus's table was made).
                bool as_word = !(r->values_only && e == n) && (open || v < 0) && sentence_word(r, w, len, open) &&
                               pair_ok(r, prev, w, len, open);
                if (!as_value && !as_word) return -1;
                if (!as_value) v = -1;
            }
            if (!open) {
                expect = v >= 0 && !r->word_last[v] ? v + 1 : -1;
                run_open = v >= 0 && !r->word_copied[v];
                if (v >= 0) strcpy(prev, "@"); else snprintf(prev, sizeof st->prev, "%s", w);
            }
            i = e - 1;
        } else if (s[i] == ' ') {
            if (BEFORE(i) == ' ') return -1;   // one space between words
            if (i + 1 == n && expect < 0 && !has_next(r, prev)) return -1;   // a space where the sentence must end
            continue;
        } else if (!s[i] || !strchr(punct, s[i])) {   // the corpus's marks for the intent
            return -1;
        } else if (expect >= 0 || !(is_word_char(BEFORE(i)) || isdigit((unsigned char)BEFORE(i)))) {
            return -1;   // punctuation inside a value, or not right after a word or number ("the . . .")
        }
    }
    // The end: after a full stop (or "!" or "?", where the intent's sentences have them), where a
    // sentence of the corpus ends.
    if (ended && (expect >= 0 || !BEFORE(n) || !strchr(".!?", BEFORE(n)) || !strchr(punct, BEFORE(n)) ||
                  !pair_ok(r, prev, "$", 1, false)))
        return -1;
#undef BEFORE
    st->expect = expect;
    st->run_open = run_open;
    if (n > 0) st->before = s[n - 1];
    return 0;
}

int reply_sentence_check(const char *s, size_t n, bool ended, const reply_sentence_rule *r) {
    reply_sentence_state st;
    reply_sentence_start(&st);
    return reply_sentence_scan(&st, s, n, ended, r);
}
