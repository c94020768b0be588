// Grammar-constrained decoding of the assistant's action line (docs/ASSISTANT.md, "Reply
// grammar"). While the reply's <act>...</act> part is being generated, every token that would
// make it anything but a prefix of a valid action is masked: a known intent, its slots in the
// trained order, enumerated values from the car's vocabulary, numbers within the car's ranges,
// and free-text values (dest=, contact=) made only of words of the user's request, copied in
// order. After </act> the spoken sentence may say only what the action line holds: its numbers,
// its values' words (a copied name whole), the corpus's sentence words for the intent in the
// corpus's order (app/reply_sentence.c). The model still chooses among what is valid.
#ifndef CABIN_ACTION_GRAMMAR_H
#define CABIN_ACTION_GRAMMAR_H

#include "app/assistant.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct action_grammar action_grammar;

// A grammar for the session's model, or NULL when the model's vocabulary has no "<act>" piece
// (the model was not trained on the reply grammar; its replies are left alone).
action_grammar *action_grammar_new(session *s);
void action_grammar_free(action_grammar *g);

// The car the replies act on (NULL: none). A complete action line the car would refuse (its
// state as it is when the line ends: vehicle_check) gets the car's reason as its sentence ("set
// it to 72" -> "<act>climate.set zone=all temp=72</act> The temperature can be set between 16
// and 30 degrees."): the reply, and the conversation the model sees, never claim what the car
// will not do. g may be NULL.
void action_grammar_set_car(action_grammar *g, const vehicle *car);
// One chat turn with the grammar in force (g may be NULL: a plain session_chat).
int action_grammar_chat(action_grammar *g, session *s, const char *user_text, token_cb cb, void *ud, errbuf *err);

// The checker itself, on text (exposed for tests). `reply` is the reply so far (from its start:
// "<act>..."); `request` the user's text. Returns -1 if no valid reply starts with it, 0 if it
// is a proper prefix of a valid action line, 1 if its action line is complete ("</act>" seen).
int action_grammar_check(const char *reply, size_t len, const char *request);

// The sentence rule (exposed for tests): 0 if `sentence` (its first len bytes) keeps the rule
// of `action_line` (read up to its "</act>", if it has one; "<act>" may lead), its last word or
// number allowed to be the beginning of one unless `ended`; -1 otherwise.
int action_grammar_check_sentence(const char *action_line, const char *sentence, size_t len, bool ended);

// A whole number 0..99 as the grammar reads it spoken ("22" -> "twenty two"; exposed for tests):
// 0, or -1 if n is out of range or buf too small.
int action_grammar_spell_number(long n, char *buf, size_t cap);

// The schema the grammar holds, for what describes it (app/action_tools.c): the intents by
// index ("none" first), and each one's slots: key, value spec ("a|b" an enumeration, "#LO-HI" an
// integer, "%LO-HI" degrees in halves, "+LO-HI" a signed change, "*" words of the request,
// "*home|work" those or the two words) and group (one slot of each group is required).
typedef struct action_schema_slot {
    const char *key, *values;
    int group;
} action_schema_slot;
int action_schema_intents(void);
const char *action_schema_intent(int i);   // NULL out of range
int action_schema_slots(int i, action_schema_slot *out, int cap);

#endif
