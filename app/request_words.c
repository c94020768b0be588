// The words of a request, its numbers, and which way its words of direction, switching and
// setting go (see request_words.h).
#include "app/request_words.h"
#include "app/action_grammar.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ones_words[] = { "zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", NULL };
static const char *const tens_words[] = { "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
    "ninety", NULL };

int action_grammar_spell_number(long n, char *buf, size_t cap) {
    if (n < 0 || n > 99 || cap == 0) return -1;
    int k = n < 20 ? snprintf(buf, cap, "%s", ones_words[n])
          : n % 10 == 0 ? snprintf(buf, cap, "%s", tens_words[n / 10 - 2])
          : snprintf(buf, cap, "%s %s", tens_words[n / 10 - 2], ones_words[n % 10]);
    return k >= 0 && (size_t)k < cap ? 0 : -1;
}

int request_word_index(const char *const *list, const char *w) {
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], w) == 0) return i;
    return -1;
}

bool request_says(const request_words *r, const char *const *list) {
    for (int i = 0; i < r->n; i++)
        if (request_word_index(list, r->w[i]) >= 0) return true;
    return false;
}

static void add_number(request_words *r, double x) {
    for (int i = 0; i < r->n_num; i++)
        if (r->num[i] == x) return;
    if (r->n_num < REQUEST_MAX_NUMBERS) r->num[r->n_num++] = x;
}

// The numbers a request states, as speech recognition or a keyboard gives them: "22", "22.5",
// "twenty two", "eighteen and a half", "twenty point five", "one hundred thirty nine"; and the
// parts of the way the corpus names ("half", "a quarter", "three quarters": 50, 25, 75 percent).
// A stutter ("twenty twenty two") gives both readings.
static const char *const fillers[] = { "uh", "um", "er", "hmm", "like", NULL };

bool request_is_filler(const char *w) { return request_word_index(fillers, w) >= 0; }

// A whole number spelled in words starting at w[i] ("twenty two", "one hundred thirty nine"):
// its value, and *end the index after it; -1 if w[i] starts none.
static double number_words_at(const char *const *w, int n, int i, int *end) {
    int o = request_word_index(ones_words, w[i]), t = request_word_index(tens_words, w[i]);
    double x;
    int j = i + 1;
    if (strcmp(w[i], "hundred") == 0) x = 100;
    else if (o == 1 && j < n && strcmp(w[j], "hundred") == 0) { x = 100; j++; }
    else if (o >= 0) { *end = j; return o; }
    else if (t >= 0) {
        x = 20 + 10 * t;
        int u = j < n ? request_word_index(ones_words, w[j]) : -1;
        if (u >= 1 && u <= 9) { x += u; j++; }
        *end = j;
        return x;
    } else return -1;
    if (j < n) {   // "one hundred [and] thirty nine"
        int k = j + (strcmp(w[j], "and") == 0 && j + 1 < n);
        int e;
        double rest = request_word_index(ones_words, w[k]) >= 1 || request_word_index(tens_words, w[k]) >= 0
                          ? number_words_at(w, n, k, &e) : -1;
        if (rest >= 1 && rest <= 99) { x += rest; j = e; }
    }
    *end = j;
    return x;
}

static void find_numbers(const char *text, request_words *r) {
    r->n_num = 0;
    for (const char *p = text; *p; p++) {   // digits, with an optional ".5"
        if (!isdigit((unsigned char)*p) || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '.'))) continue;
        char *end;
        double x = strtod(p, &end);
        if (end > p && end[-1] == '.') end--;
        add_number(r, x);
        p = end - 1;
    }
    // the words without fillers ("twenty er three" is 23) nor stutters of other words than
    // numbers ("twenty four point point five" is 24.5; "twenty twenty two" is 20 and 22)
    const char *w[REQUEST_MAX_WORDS];
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const char *x = r->w[i];
        bool number_word = request_word_index(ones_words, x) >= 0 || request_word_index(tens_words, x) >= 0;
        if (!request_is_filler(x) && (n == 0 || number_word || strcmp(w[n - 1], x))) w[n++] = x;
    }
    for (int i = 0; i < n; i++) {
        if (!strcmp(w[i], "half") || !strcmp(w[i], "halfway")) { add_number(r, 50); continue; }
        if (!strcmp(w[i], "quarter")) { add_number(r, 25); continue; }
        int j;
        double x = number_words_at(w, n, i, &j);
        if (x < 0) continue;
        if (j < n && x >= 1 && x <= 3 && !strcmp(w[j], "quarters")) { add_number(r, 25 * x); i = j; continue; }
        if (j + 1 < n && !strcmp(w[j], "point") && !strcmp(w[j + 1], "five")) { x += 0.5; j += 2; }
        else if (j + 2 < n && !strcmp(w[j], "and") && !strcmp(w[j + 1], "a") && !strcmp(w[j + 2], "half")) { x += 0.5; j += 3; }
        add_number(r, x);
        i = j - 1;   // "twenty two" is 22, not also 2
    }
}

// r->copy: the words with every run of number words as its digits (an address spoken as
// "twenty eight queen street" is copied as 28_queen_street, as the model writes it).
static void find_copy_words(request_words *r) {
    const char *w[REQUEST_MAX_WORDS];
    for (int i = 0; i < r->n; i++) w[i] = r->w[i];
    r->n_copy = 0;
    for (int i = 0; i < r->n;) {
        int j;
        double x = number_words_at(w, r->n, i, &j);
        if (x >= 0) snprintf(r->copy[r->n_copy++], sizeof r->copy[0], "%ld", (long)x);
        else { memcpy(r->copy[r->n_copy++], w[i], sizeof r->copy[0]); j = i + 1; }
        i = j;
    }
}

// Words that say which way a change goes. A request with words of one way only ("plus five
// volume", "up 2 degrees", "a bit colder") gets a delta of that sign; words of both ways or of
// neither leave the sign to the model. Comparatives and verbs only: "warm" is no direction ("I'm
// too warm" is -2). Every delta of the training corpus agrees (28,390 turns).
static const char *const words_up[] = { "plus", "up", "more", "warmer", "hotter", "louder", "higher", "raise",
    "increase", "boost", "bump", NULL };
static const char *const words_down[] = { "minus", "down", "less", "cooler", "colder", "quieter", "lower",
    "reduce", "decrease", "drop", "cut", "softer", NULL };

// The same for state=on|off: "start defrosting the windscreen" is on, "kill the ac" off. Every
// on/off state of the training corpus agrees (36,547 turns).
static const char *const words_on[] = { "on", "start", "begin", "enable", "activate", "engage", NULL };
static const char *const words_off[] = { "off", "stop", "halt", "disable", "deactivate", "disengage", "kill", NULL };

// Where a slot may be set or changed (the fan's and the volume's level or delta): "to" before a
// number sets it ("fan to four", 2,564 training turns), "by" before one changes it ("louder by
// five", 607), and so do words of a small change ("a bit more air", 545); no training turn
// disagrees.
static const char *const words_small[] = { "bit", "little", "tad", "slightly", "touch", NULL };

// Whether request word i is "to"/"by" (`word`) followed by a number (fillers between).
static bool before_number(const request_words *r, int i, const char *word) {
    if (strcmp(r->w[i], word) != 0) return false;
    int j = i + 1;
    while (j < r->n && request_is_filler(r->w[j])) j++;
    if (j >= r->n) return false;
    const char *x = r->w[j];
    return isdigit((unsigned char)x[0]) || request_word_index(ones_words, x) >= 0 || request_word_index(tens_words, x) >= 0;
}

static int set_or_change(const request_words *r) {
    bool set = false, change = request_says(r, words_small);
    for (int i = 0; i < r->n; i++) {
        set = set || before_number(r, i, "to");
        change = change || before_number(r, i, "by");
    }
    return set == change ? 0 : set ? 1 : -1;
}

// +1 if the request has words of `yes` and none of `no`, -1 the other way round, else 0.
static int one_way(const request_words *r, const char *const *yes, const char *const *no) {
    bool y = request_says(r, yes), n = request_says(r, no);
    return y == n ? 0 : y ? 1 : -1;
}

void request_words_read(const char *text, request_words *out) {
    out->n = 0;
    for (const char *p = text; *p && out->n < REQUEST_MAX_WORDS;) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        if (!*p) break;
        int k = 0;
        while (isalnum((unsigned char)*p)) {
            if (k < 31) out->w[out->n][k++] = (char)tolower((unsigned char)*p);
            p++;
        }
        out->w[out->n][k] = 0;
        out->n++;
    }
    find_numbers(text, out);
    find_copy_words(out);
    out->direction = one_way(out, words_up, words_down);
    out->switch_to = one_way(out, words_on, words_off);
    out->kept_temp = NAN;
    out->set_or_change = set_or_change(out);
}
