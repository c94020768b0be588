// Tool calls in a model's own form. Models tuned to call functions of the "hermes" family
// (Qwen2.5 and Qwen3, Hermes 2 Pro and others after them) are told the functions in the system
// message and write a call as
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// where both tags are single tokens of their vocabulary; a function's result comes back to them
// inside <tool_response> ... </tool_response> in the next user turn. Such a model decides for
// itself whether to call ("tool_choice": "auto"): it writes text, or the opening tag. The filter
// here lets the text be and holds what follows the tag to the call's schema (json_schema.h), so a
// call always parses and names one of the functions with arguments that validate.
#ifndef CABIN_TOOL_CALL_H
#define CABIN_TOOL_CALL_H

#include "base/str.h"
#include "engine/json_schema.h"
#include "engine/tokenizer.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct tool_call_tags {
    int32_t open, close;           // the token ids of <tool_call> and </tool_call>
} tool_call_tags;

// Whether a vocabulary has the two tags as tokens of their own (*out then says which).
bool tool_call_tags_of(const tokenizer *t, tool_call_tags *out);

// The system text that tells the model the functions: `system` (NULL or "": none), then the
// tools (the API's "tools" array, JSON text, one function a line) and the form of a call.
// malloc'd.
char *tool_call_system(const char *system, const char *tools_json);
// A call as the object {"name": NAME, "arguments": ARGS} (arguments_json unparsable: {}),
// appended to b.
void tool_call_json(strbuf *b, const char *name, const char *arguments_json);
// A call as the model writes it (for an assistant message sent back), appended to b.
void tool_call_render(strbuf *b, const char *name, const char *arguments_json);
// A function's result as the model reads it (a "tool" message), appended to b.
void tool_call_render_result(strbuf *b, const char *content);

// The token filter: free text until the opening tag (with `required`, the tag first); then one
// call held to `calls` (json_schema_compile_tools), then the closing tag, then the end of the
// reply. One call per reply.
typedef struct tool_call_filter tool_call_filter;
tool_call_filter *tool_call_filter_new(tool_call_tags tags, const json_schema *calls, const json_vocab *v, bool required);
void tool_call_filter_free(tool_call_filter *f);
token_filter tool_call_filter_token_filter(tool_call_filter *f);
// The call's mask cost (calls and seconds), as json_filter_cost.
void tool_call_filter_cost(const tool_call_filter *f, int *calls, double *secs);
// Whether a call was written whole (its closing tag taken).
bool tool_call_filter_called(const tool_call_filter *f);

#endif
