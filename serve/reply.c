// The API's answers as JSON text: a whole completion, the chunks of a streamed one, and the
// error object. serve/http.c sends them.
#include "serve/reply.h"
#include "base/mem.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FINISH[] = { "stop", "length", "tool_calls" };

// cJSON prints a string with bytes as they are; text cut inside a UTF-8 character is never
// handed to it (utf8_complete), so every string sent is whole characters.
size_t utf8_complete(const char *s, size_t n) {
    size_t i = n, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--, back++;
    if (i == 0) return n;   // continuation bytes only: not ours to judge
    size_t need = (size_t)utf8_len_from_first((unsigned char)s[i - 1]);
    return back + 1 >= need ? n : i - 1;
}

char *utf8_clean(const char *s, size_t n) {
    strbuf b = { 0 };
    for (size_t i = 0; i < n;) {
        size_t k = utf8_valid_len(s + i, n - i);
        if (k) strbuf_append(&b, s + i, k), i += k;
        else strbuf_puts(&b, "\xEF\xBF\xBD"), i++;   // U+FFFD for a byte that is no character
    }
    return b.s ? b.s : xstrdup("");
}

static char *print_and_free(cJSON *root) {
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) return xstrdup("{}");
    char *out = xstrdup(s);
    cJSON_free(s);
    return out;
}

static cJSON *usage_object(const serve_result *res) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", res->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_tokens + res->completion_tokens);
    cJSON *details = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(details, "cached_tokens", res->cached_tokens);
    return u;
}

static cJSON *envelope(const reply_meta *m, const char *object) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", m->id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)m->created);
    cJSON_AddStringToObject(root, "model", m->model);
    cJSON_AddStringToObject(root, "system_fingerprint", m->fingerprint);
    return root;
}

static cJSON *tool_calls_array(const reply_meta *m, const reply_tool *t, bool with_index) {
    cJSON *calls = cJSON_CreateArray();
    cJSON *c = cJSON_CreateObject();
    if (with_index) cJSON_AddNumberToObject(c, "index", 0);
    cJSON_AddStringToObject(c, "id", m->call_id);
    cJSON_AddStringToObject(c, "type", "function");
    cJSON *fn = cJSON_AddObjectToObject(c, "function");
    cJSON_AddStringToObject(fn, "name", t->name);
    cJSON_AddStringToObject(fn, "arguments", t->arguments);
    cJSON_AddItemToArray(calls, c);
    return calls;
}

// cabin's own field beside the message: what the tool did on the server (the car's change)
static void add_cabin_result(cJSON *msg, const reply_tool *t) {
    if (!t || !t->result) return;
    cJSON *r = cJSON_Parse(t->result);
    if (r) cJSON_AddItemToObject(msg, "cabin", r);
}

char *reply_whole(const reply_meta *m, serve_kind kind, const char *content, const reply_tool *tool, const serve_result *res) {
    cJSON *root = envelope(m, kind == SERVE_CHAT ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    if (kind == SERVE_CHAT) {
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        char *text = utf8_clean(content, strlen(content));
        if (tool && !content[0]) cJSON_AddNullToObject(msg, "content");
        else cJSON_AddStringToObject(msg, "content", text);
        free(text);
        if (tool) cJSON_AddItemToObject(msg, "tool_calls", tool_calls_array(m, tool, false));
        add_cabin_result(msg, tool);
    } else {
        char *text = utf8_clean(content, strlen(content));
        cJSON_AddStringToObject(ch, "text", text);
        free(text);
    }
    cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddStringToObject(ch, "finish_reason", FINISH[res->finish]);
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(root, "usage", usage_object(res));
    if (res->grammar_ms_per_token > 0) {   // cabin's own: what the structured output's mask cost
        cJSON *c = cJSON_AddObjectToObject(root, "cabin");
        cJSON_AddNumberToObject(c, "grammar_ms_per_token", res->grammar_ms_per_token);
    }
    return print_and_free(root);
}

// "data: {...}\n\n" around one chunk
static void sse(strbuf *out, cJSON *chunk) {
    char *s = print_and_free(chunk);
    strbuf_printf(out, "data: %s\n\n", s);
    free(s);
}

static cJSON *chunk_with(const reply_meta *m, serve_kind kind, cJSON **choice) {
    cJSON *root = envelope(m, kind == SERVE_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    *choice = cJSON_CreateObject();
    cJSON_AddNumberToObject(*choice, "index", 0);
    cJSON_AddItemToArray(choices, *choice);
    return root;
}

void reply_chunk_role(const reply_meta *m, strbuf *out) {
    cJSON *ch, *root = chunk_with(m, SERVE_CHAT, &ch);
    cJSON *d = cJSON_AddObjectToObject(ch, "delta");
    cJSON_AddStringToObject(d, "role", "assistant");
    cJSON_AddStringToObject(d, "content", "");
    cJSON_AddNullToObject(ch, "finish_reason");
    sse(out, root);
}

void reply_chunk_content(const reply_meta *m, serve_kind kind, const char *text, size_t n, strbuf *out) {
    char *t = utf8_clean(text, n);
    cJSON *ch, *root = chunk_with(m, kind, &ch);
    if (kind == SERVE_CHAT) cJSON_AddStringToObject(cJSON_AddObjectToObject(ch, "delta"), "content", t);
    else cJSON_AddStringToObject(ch, "text", t);
    cJSON_AddNullToObject(ch, "finish_reason");
    free(t);
    sse(out, root);
}

void reply_chunk_tool(const reply_meta *m, const reply_tool *tool, strbuf *out) {
    cJSON *ch, *root = chunk_with(m, SERVE_CHAT, &ch);
    cJSON *d = cJSON_AddObjectToObject(ch, "delta");
    cJSON_AddItemToObject(d, "tool_calls", tool_calls_array(m, tool, true));
    add_cabin_result(d, tool);
    cJSON_AddNullToObject(ch, "finish_reason");
    sse(out, root);
}

void reply_chunk_end(const reply_meta *m, serve_kind kind, const serve_result *res, bool include_usage, strbuf *out) {
    cJSON *ch, *root = chunk_with(m, kind, &ch);
    if (kind == SERVE_CHAT) cJSON_AddObjectToObject(ch, "delta");
    else cJSON_AddStringToObject(ch, "text", "");
    cJSON_AddStringToObject(ch, "finish_reason", FINISH[res->finish]);
    sse(out, root);
    if (include_usage) {   // the API's last chunk: no choices, the counts
        cJSON *u = envelope(m, kind == SERVE_CHAT ? "chat.completion.chunk" : "text_completion");
        cJSON_AddArrayToObject(u, "choices");
        cJSON_AddItemToObject(u, "usage", usage_object(res));
        sse(out, u);
    }
    strbuf_puts(out, "data: [DONE]\n\n");
}

char *reply_error(int status, const char *message) {
    const char *type = status == 401 ? "authentication_error" : status == 404 ? "not_found_error"
                     : status == 429 || status == 503 ? "server_busy" : status >= 500 ? "server_error"
                     : "invalid_request_error";
    cJSON *root = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddNullToObject(e, "param");
    cJSON_AddNumberToObject(e, "code", status);
    return print_and_free(root);
}

void reply_chunk_error(int status, const char *message, strbuf *out) {
    char *e = reply_error(status, message);
    strbuf_printf(out, "data: %s\n\ndata: [DONE]\n\n", e);
    free(e);
}
