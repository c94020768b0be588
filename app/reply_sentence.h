// The spoken sentence after an action line says only what the action holds (app/reply_sentence.c).
#ifndef CABIN_REPLY_SENTENCE_H
#define CABIN_REPLY_SENTENCE_H

#include "app/reply_words.h"

#include <stdbool.h>
#include <stddef.h>

#define REPLY_SENTENCE_MAX_NUMBERS 8
#define REPLY_SENTENCE_MAX_VALUE_WORDS 16

typedef struct reply_sentence_rule {
    const reply_vocab *vocab;   // the intent's sentence shape; NULL: an intent the table lacks, words unchecked
    char num[REPLY_SENTENCE_MAX_NUMBERS][24];          // the action's numbers: "24.5", "80"
    int n_num;
    char word[REPLY_SENTENCE_MAX_VALUE_WORDS][32];     // its values' words, lower case: "aunt", "maria"
    bool word_last[REPLY_SENTENCE_MAX_VALUE_WORDS];    // no word must follow (maria; every word of an enumerated value)
    bool word_copied[REPLY_SENTENCE_MAX_VALUE_WORDS];  // a word of a copied value (dest=, contact=)
    bool word_inner[REPLY_SENTENCE_MAX_VALUE_WORDS];   // a copied value's word after its first (maria of aunt_maria)
    char word_num[REPLY_SENTENCE_MAX_VALUE_WORDS][24]; // the number said just before it ("24" for copper of 24_copper_row)
    int n_word;
    bool values_only;           // the sentence's last word must be a value's (set by the token filter)
} reply_sentence_rule;

// The rule for the action line `action` (its first n bytes, without "<act>": "phone.call
// contact=aunt_maria").
void reply_sentence_rule_init(reply_sentence_rule *r, const char *action, size_t n);

// Where a scan of the sentence stands after its complete items (the token filter scans the
// sentence once per token up to its last word, then each candidate piece from there).
typedef struct reply_sentence_state {
    char prev[64];     // the item before: "^", "@", "#" or a word
    int expect;        // the copied value's word that must come next (after "aunt": maria); -1 none
    bool run_open;     // the item before is a value's words that more words of the car's own values may join
    char before;       // the character before the text to scan (0 at the start)
    bool broken;       // what was seen broke the rule: nothing goes on from here
} reply_sentence_state;

void reply_sentence_start(reply_sentence_state *st);

// Scans s[0..n), the sentence's text after what st has seen (which must end where no word or
// number goes on: at the start, a space or punctuation): 0 if it keeps the rule (st then stands
// after it), -1 otherwise (st is then undefined).
int reply_sentence_scan(reply_sentence_state *st, const char *s, size_t n, bool ended, const reply_sentence_rule *r);

// 0 if the sentence s[0..n) keeps the rule (its last word or number may be the beginning of an
// allowed one unless `ended`), -1 otherwise.
int reply_sentence_check(const char *s, size_t n, bool ended, const reply_sentence_rule *r);

#endif
