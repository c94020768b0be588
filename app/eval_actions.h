// Action exact-match on held-out assistant dialogues: what cabin eval-assistant counts, callable
// on any open session (cabin compare reports it for each plan).
#ifndef CABIN_EVAL_ACTIONS_H
#define CABIN_EVAL_ACTIONS_H

#include "engine/session.h"

#include <stdbool.h>

typedef struct eval_counts {
    int turns, exact, intent_ok, slots_total, slots_ok, malformed;
    int named, named_ok;   // right actions with a contact or place; those whose sentence names it
    double nll; long nll_tokens;
} eval_counts;

// Runs the dialogues of a held-out file (limit > 0: the first limit) through s, each dialogue
// one conversation, the action grammar on unless free_actions, and counts each reply's action
// against the reference. Replies are sampled as the session is set (eval-assistant: greedy, at
// most 96 tokens). Leaves s reset with no filter. 0, or -1 with "FILE:LINE: ..." in err.
int eval_assistant_actions(session *s, const char *heldout, int limit, bool free_actions, eval_counts *out,
                           errbuf *err);

#endif
