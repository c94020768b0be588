// A request as the action grammar reads it (app/action_grammar.c): its words (lowercase runs of
// [a-z0-9], at most REQUEST_MAX_WORDS), the numbers it states in digits or in words as speech
// recognition gives them, the words a name or place is copied from, and which way its words of
// direction ("up", "colder"), of switching ("start", "off") and of setting ("to four", "by two") go.
#ifndef CABIN_REQUEST_WORDS_H
#define CABIN_REQUEST_WORDS_H
#include <stdbool.h>
#include <stddef.h>

#define REQUEST_MAX_WORDS 64
#define REQUEST_MAX_NUMBERS 16
#define REQUEST_MAX_INTENTS 32

typedef struct request_words {
    int n;
    char w[REQUEST_MAX_WORDS][32];  // the words, lowercase
    int n_copy;                // the words a name or place is copied from: w with each run of
    char copy[REQUEST_MAX_WORDS][32];  // number words as digits ("twenty eight" -> "28")
    int n_num;
    double num[REQUEST_MAX_NUMBERS];   // numbers the request states, in digits or words
    bool possible[REQUEST_MAX_INTENTS];   // the action grammar's: which intents it leaves possible
    int direction;             // +1 / -1: the request's words of direction all go one way
    int switch_to;             // +1 / -1: its words of switching all say on / off
    int set_or_change;         // where a slot may be set or changed: +1 set ("fan to four"), -1
                               // change ("louder by five", "a bit more air"), 0 either
    double kept_temp;          // the action grammar's: a temperature this turn keeps (NAN: none)
} request_words;

void request_words_read(const char *text, request_words *out);
// The index of w in a NULL-terminated list, or -1.
int request_word_index(const char *const *list, const char *w);
// Whether the request has a word of the NULL-terminated list.
bool request_says(const request_words *r, const char *const *list);
// Speech-recognition fillers ("uh", "um", "er", "hmm", "like").
bool request_is_filler(const char *w);
#endif
