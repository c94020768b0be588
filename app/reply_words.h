// Per intent, the shape of the embedded model's spoken sentences (app/reply_words.c, generated
// by tools/corpus/reply_words.py from the training corpus): the sentence words, and the pairs
// of items that follow each other ("calling @": a value after "calling"; "@" a value's words,
// "#" a number, "^" the start, "$" the end). Lists sorted in strcmp order, lower case.
#ifndef CABIN_REPLY_WORDS_H
#define CABIN_REPLY_WORDS_H

typedef struct reply_vocab {
    const char *intent;          // "phone.call"
    const char *const *words;    // "calling", "dialing", "now"
    int n_words;
    const char *const *pairs;    // "@ $", "@ now", "^ calling", "calling @", ...
    int n_pairs;
    const char *punct;           // the punctuation its sentences use, of . , / ! ? (".": "Calling maria.")
} reply_vocab;

extern const reply_vocab reply_vocabs[];
extern const int n_reply_vocabs;

#endif
