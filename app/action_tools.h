// The car's actions as an HTTP API's tools (OpenAI's function tools): one tool per intent of
// the reply grammar's schema, named with '_' for '.' ("climate.set" -> "climate_set"), its
// slots as a JSON-schema object; an action as a tool call's arguments and back.
#ifndef CABIN_APP_ACTION_TOOLS_H
#define CABIN_APP_ACTION_TOOLS_H

#include "app/assistant.h"
#include "base/err.h"
#include "base/str.h"

#include <stdbool.h>
#include <stddef.h>

// The "tools" array (malloc'd JSON text): every intent but "none".
char *action_tools_json(void);
// Whether name is one of those tools.
bool action_tool_known(const char *name);
// "climate.set" -> "climate_set"
void action_tool_name(const char *intent, char *buf, size_t n);
// The action's slots as a JSON object (malloc'd): numbers as numbers ("+2" -> 2, "22.5" -> 22.5),
// the rest as strings.
char *action_tool_arguments(const action *a);
// A tool call back into an action (a conversation a client sends back): 0, or -1 with err.
int action_from_tool_call(const char *name, const char *arguments, action *out, errbuf *err);

// A turn's action as a tool call, collected through its turn hooks (app/turn.h: on_action,
// on_vehicle_change, on_refused, each with ud this record): the tool and its arguments for an
// action other than none, and what the car did with it.
typedef struct action_call {
    char name[64];                 // the tool ("climate_set")
    char *args;                    // its arguments (malloc'd JSON); NULL: no action, or none
    char desc[256];                // the action as the command language writes it
    char change[512], reason[512];
    bool refused;
} action_call;
void action_call_on_action(void *ud, const action *a, const char *desc);
void action_call_on_change(void *ud, const action *a, const char *change);
void action_call_on_refused(void *ud, const action *a, const char *reason, const char *sentence);
// What the car did, as cabin's own JSON (malloc'd): {"action": desc, "vehicle": change} or
// {"action": desc, "refused": reason}.
char *action_call_result(const action_call *c);
void action_call_free(action_call *c);

// The assistant's reply as it streams, "<act>LINE</act> sentence": the action line is held back
// until it closes and handed over whole, then the sentence is passed on as it comes (the spaces
// after the line are not the sentence's). A reply that does not begin with <act> is all sentence.
typedef struct reply_split {
    strbuf text;                   // the reply so far
    size_t sent;                   // bytes of it handed over
    bool decided, is_action, sentence_started;
} reply_split;
// Feeds a piece: on_line(ud, line, n) once when the action line closes (its text between the
// tags), on_text(ud, s, n) with the sentence text that may go out now. Returns on_text's false
// (stop), else true.
bool reply_split_feed(reply_split *r, const char *piece, size_t len, void (*on_line)(void *ud, const char *line, size_t n),
                      bool (*on_text)(void *ud, const char *s, size_t n), void *ud);
// The reply ended: an action line that never closed is handed over as text, as it is.
void reply_split_finish(reply_split *r, bool (*on_text)(void *ud, const char *s, size_t n), void *ud);
void reply_split_free(reply_split *r);

#endif
