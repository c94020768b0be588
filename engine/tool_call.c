// Tool calls in a model's own form (engine/tool_call.h).
#include "engine/tool_call.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool tool_call_tags_of(const tokenizer *t, tool_call_tags *out) {
    tool_call_tags g = { tokenizer_find(t, "<tool_call>"), tokenizer_find(t, "</tool_call>") };
    if (g.open < 0 || g.close < 0) return false;
    if (out) *out = g;
    return true;
}

char *tool_call_system(const char *system, const char *tools_json) {
    strbuf b = { 0 };
    if (system && *system) strbuf_printf(&b, "%s\n\n", system);
    strbuf_puts(&b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
    cJSON *tools = cJSON_Parse(tools_json ? tools_json : "[]");
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        char *line = cJSON_PrintUnformatted(t);
        if (line) strbuf_printf(&b, "\n%s", line);
        cJSON_free(line);
    }
    cJSON_Delete(tools);
    strbuf_puts(&b, "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
                    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                    "<args-json-object>}\n</tool_call>");
    return b.s;
}

void tool_call_json(strbuf *b, const char *name, const char *arguments_json) {
    cJSON *call = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "name", name);
    cJSON *args = cJSON_Parse(arguments_json ? arguments_json : "{}");
    cJSON_AddItemToObject(call, "arguments", args ? args : cJSON_CreateObject());
    char *s = cJSON_PrintUnformatted(call);
    cJSON_Delete(call);
    strbuf_puts(b, s ? s : "{}");
    cJSON_free(s);
}

void tool_call_render(strbuf *b, const char *name, const char *arguments_json) {
    strbuf_puts(b, "<tool_call>\n");
    tool_call_json(b, name, arguments_json);
    strbuf_puts(b, "\n</tool_call>");
}

void tool_call_render_result(strbuf *b, const char *content) {
    strbuf_printf(b, "<tool_response>\n%s\n</tool_response>", content ? content : "");
}

// Where the reply is: text (or the tag first), inside the call, at its closing tag, after it.
typedef enum call_phase { P_TEXT, P_MUST_OPEN, P_CALL, P_AFTER } call_phase;

struct tool_call_filter {
    tool_call_tags tags;
    const json_schema *calls;
    const json_vocab *v;
    call_phase phase;
    json_filter *call;             // P_CALL: the call's own filter
    bool called;
    int mask_calls;                // the cost of calls ended so far (the current one's is call's)
    double mask_secs;
};

tool_call_filter *tool_call_filter_new(tool_call_tags tags, const json_schema *calls, const json_vocab *v, bool required) {
    tool_call_filter *f = xcalloc(1, sizeof *f);
    f->tags = tags;
    f->calls = calls;
    f->v = v;
    f->phase = required ? P_MUST_OPEN : P_TEXT;
    return f;
}

static void end_call(tool_call_filter *f) {
    if (!f->call) return;
    int n;
    double s;
    json_filter_cost(f->call, &n, &s);
    f->mask_calls += n;
    f->mask_secs += s;
    json_filter_free(f->call);
    f->call = NULL;
}

void tool_call_filter_free(tool_call_filter *f) {
    if (!f) return;
    json_filter_free(f->call);
    free(f);
}

// Every token but `only` (and, with eog, the end-of-generation tokens) masked.
static void mask_all_but(const tool_call_filter *f, float *logits, int n_vocab, int32_t only, bool eog) {
    for (int i = 0; i < n_vocab; i++)
        if (i != only && !(eog && json_vocab_eog(f->v, i))) logits[i] = -INFINITY;
}

static void call_mask(void *ud, float *logits, int n_vocab) {
    tool_call_filter *f = ud;
    switch (f->phase) {
    case P_TEXT: return;
    case P_MUST_OPEN: mask_all_but(f, logits, n_vocab, f->tags.open, false); return;
    case P_AFTER: mask_all_but(f, logits, n_vocab, -1, true); return;
    case P_CALL:
        if (json_filter_complete(f->call)) {
            mask_all_but(f, logits, n_vocab, f->tags.close, false);
        } else {   // the call's JSON, which neither tag is part of (a user-defined token's text may look plain)
            json_filter_token_filter(f->call).mask(f->call, logits, n_vocab);
            if (f->tags.open < n_vocab) logits[f->tags.open] = -INFINITY;
            if (f->tags.close < n_vocab) logits[f->tags.close] = -INFINITY;
        }
        return;
    }
}

static void call_accept(void *ud, int32_t token, const char *piece, int len) {
    tool_call_filter *f = ud;
    switch (f->phase) {
    case P_TEXT:
    case P_MUST_OPEN:
        if (token == f->tags.open) {
            f->phase = P_CALL;
            f->call = json_filter_new(f->calls, f->v);
        }
        return;
    case P_CALL:
        if (json_filter_complete(f->call) && token == f->tags.close) {
            end_call(f);
            f->called = true;
            f->phase = P_AFTER;
        } else {
            json_filter_token_filter(f->call).accept(f->call, token, piece, len);
        }
        return;
    case P_AFTER: return;
    }
}

// The one token that must come next: the opening tag (required), the call's own forced
// tokens, its closing tag once the call is whole; none in free text or after the call (the end
// of the reply may be any of the end-of-generation tokens).
static int32_t call_forced(void *ud) {
    tool_call_filter *f = ud;
    switch (f->phase) {
    case P_MUST_OPEN: return f->tags.open;
    case P_CALL: return json_filter_complete(f->call) ? f->tags.close : json_filter_token_filter(f->call).forced(f->call);
    default: return -1;
    }
}

token_filter tool_call_filter_token_filter(tool_call_filter *f) { return (token_filter){ call_mask, call_accept, f, call_forced }; }

void tool_call_filter_cost(const tool_call_filter *f, int *calls, double *secs) {
    *calls = f->mask_calls;
    *secs = f->mask_secs;
    if (f->call) {
        int n;
        double s;
        json_filter_cost(f->call, &n, &s);
        *calls += n;
        *secs += s;
    }
}

bool tool_call_filter_called(const tool_call_filter *f) { return f->called; }
