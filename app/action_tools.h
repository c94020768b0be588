// The car's actions as an HTTP API's tools (OpenAI's function tools): one tool per intent of
// the reply grammar's schema, named with '_' for '.' ("climate.set" -> "climate_set"), its
// slots as a JSON-schema object; an action as a tool call's arguments and back.
#ifndef CABIN_APP_ACTION_TOOLS_H
#define CABIN_APP_ACTION_TOOLS_H

#include "app/assistant.h"
#include "base/err.h"

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

#endif
