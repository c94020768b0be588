// One assistant turn, written once: the user's text -> the model's reply (its action line held
// to the reply grammar) -> the action parsed -> applied to the simulated vehicle -> reported.
// The assistant object owns the session, the car and the grammar; every front end (chat, voice,
// scenes, the workbench) drives it and says what happened in its own way through turn_hooks.
#ifndef CABIN_APP_TURN_H
#define CABIN_APP_TURN_H

#include "app/action_grammar.h"
#include "app/assistant.h"
#include "base/str.h"
#include "engine/session.h"

#include <stdbool.h>

typedef struct assistant {
    session *s;
    vehicle *car;
    action_grammar *grammar;  // constrains the action lines; NULL: none (free_actions, or a
                              // model not trained on the reply grammar)
    bool free_actions;        // --free-actions: open without a grammar
    struct gov_run *gov;      // the precision governor (app/govern.h) on s; NULL: off. Owned:
                              // reopening (another model) or closing stops it
    strbuf said;              // the user turns of this conversation, one per line (a newline
                              // inside a turn becomes a space); cleared by assistant_reset
} assistant;

// How a turn is reported. Every hook may be NULL (nothing said); ud is passed to each.
typedef struct turn_hooks {
    void *ud;
    // A piece of the reply as it is generated (bytes, not NUL-terminated); false stops the reply.
    bool (*on_token)(void *ud, const char *piece, int len);
    // The reply began with <act> but its action line does not parse: why.
    void (*on_not_understood)(void *ud, const char *why);
    // The parsed action ("climate.set temp=22 zone=driver" in desc), before it is applied.
    void (*on_action)(void *ud, const action *a, const char *desc);
    // The car took it: what changed ("climate.driver_temp 21 -> 22"; "" when nothing did). A
    // query (status.query, nav.eta) answers here too.
    void (*on_vehicle_change)(void *ud, const action *a, const char *change);
    // The car refused it: its spoken reason; sentence is the reply's own sentence.
    void (*on_refused)(void *ud, const action *a, const char *reason, const char *sentence);
    // The reply's sentence (the whole reply when it has no well-formed action line).
    void (*on_reply_text)(void *ud, const char *text);
} turn_hooks;

// Opens the session, a fresh car and (unless free_actions) the grammar bound to that car.
int assistant_open(assistant *a, const session_opts *o, bool free_actions, errbuf *err);
// A new session with o (another model, backend or system prompt): on success the old one is
// closed and the car reset; on failure the running session is kept.
int assistant_reopen(assistant *a, const session_opts *o, errbuf *err);
void assistant_close(assistant *a);
// An assistant beside first (a server's slot): a session of its own on first's model
// (session_open_sibling), a grammar of its own, first's car. Closed with assistant_close_sibling,
// before first.
int assistant_open_sibling(assistant *a, const assistant *first, errbuf *err);
void assistant_close_sibling(assistant *a);
// Forgets the conversation and resets the car.
void assistant_reset(assistant *a);
// Whether the action is a question the car answers (status.query, nav.eta) rather than a change.
bool action_is_query(const action *a);

// One turn: the reply to text is generated (pieces to on_token) and, when that succeeded, acted
// on (assistant_act). *reply gets the reply text (malloc'd, what came even when generation
// failed part way). 0, or -1 with err.
int assistant_turn(assistant *a, const char *text, const turn_hooks *h, char **reply, errbuf *err);
// Every reply below runs the governor's hooks between its tokens when one is on.
// The reply generated only (no action taken): what a front end that acts as the reply streams
// uses (the voice pipeline finds the action line itself and calls assistant_act_line).
int assistant_generate(assistant *a, const char *text, token_cb cb, void *ud, errbuf *err);
// Parse the reply's action line -> apply it to the car -> report through h.
void assistant_act(assistant *a, const char *reply, const turn_hooks *h);
// The same for an action line's text alone ("climate.set temp=22"), without a sentence.
void assistant_act_line(assistant *a, const char *action_text, const turn_hooks *h);

#endif
