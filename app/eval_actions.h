// Action exact-match on held-out assistant dialogues: what cabin eval-assistant counts, callable
// on any open session (cabin compare reports it for each plan), and the reference replies'
// likelihood given the dialogue so far.
#ifndef CABIN_EVAL_ACTIONS_H
#define CABIN_EVAL_ACTIONS_H

#include "base/progress.h"
#include "app/action_grammar.h"
#include "engine/chat_template.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stdio.h>

// Generated tokens, the forward passes that fed them, and those the grammar forced (fed with
// the token before them: session_opts.no_jump_forward makes passes == tokens).
typedef struct decode_counts {
    int replies;
    long tokens, passes, forced;
} decode_counts;

typedef struct eval_counts {
    int turns, exact, intent_ok, slots_total, slots_ok, malformed;
    int named, named_ok;   // right actions with a contact or place; those whose sentence names it
    double nll; long nll_tokens;
    decode_counts decode, first;   // every reply; each dialogue's first reply
} eval_counts;

// One evaluation over a held-out file: the session, what it has counted, and where per-turn
// lines go. The caller fills the first block; eval_dialogues fills the counts.
typedef struct eval_run {
    const char *file;         // the held-out file (for messages)
    int limit;                // > 0: the first limit dialogues only
    session *s;
    action_grammar *grammar;  // NULL: free decoding
    const chat_template *tmpl;
    int32_t header;           // the assistant header token (reply scoring), -1: no scoring
    FILE *errors, *replies;   // NULL, or where each wrong turn / every turn gets a line
    bool progress;            // report "[N dialogues] exact X%" on stderr
    // results
    eval_counts c;
    int dialogues;
    double reply_nll;
    long reply_tokens;
    progress bar;             // the reports' stream (started by eval_dialogues)
} eval_run;

// Every dialogue of the held-out text (one JSON object per line, {"turns": [{"user", "reply"}]}),
// each one conversation: every reply's action counted against the reference and, when
// e->header >= 0, the reference replies scored teacher-forced. text is cut in place. 0, or -1
// with "FILE:LINE: ..." in err on a bad line or a failed turn.
int eval_dialogues(eval_run *e, char *text, errbuf *err);

// The id of the last special token of the template's user suffix (the assistant header, e.g.
// "<|assistant|>"): reply tokens are the ones after it. -1 if the template has none.
int32_t assistant_header_id(const session *s, const chat_template *t);

// Runs the dialogues of a held-out file (limit > 0: the first limit) through s, each dialogue
// one conversation, the action grammar on unless free_actions, and counts each reply's action
// against the reference. Replies are sampled as the session is set (eval-assistant: greedy, at
// most 96 tokens). Leaves s reset with no filter. 0, or -1 with "FILE:LINE: ..." in err.
int eval_assistant_actions(session *s, const char *heldout, int limit, bool free_actions, eval_counts *out,
                           errbuf *err);

#endif
