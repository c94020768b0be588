// Decoding an API request body into a serve_request: every field is checked for its type and
// range, and a field cabin does not honour is refused by name rather than ignored, when
// ignoring it would change the answer. Fields that change nothing cabin makes (user, metadata,
// ...) are accepted.
#include "serve/serve.h"
#include "base/mem.h"
#include "base/str.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGES 1024
#define MAX_TOOLS 64
#define MAX_BIAS 1024     // logit_bias entries a request may give

// The fields each kind of request may have. "changes nothing" fields: accepted, not used.
static const char *const CHAT_FIELDS[] = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed", "stop",
    "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "n", "user", "metadata", "store",
    "presence_penalty", "frequency_penalty", "logprobs", "response_format", "logit_bias", NULL
};
static const char *const COMPLETION_FIELDS[] = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream", "stream_options",
    "n", "user", "presence_penalty", "frequency_penalty", "echo", "logprobs", "suffix", "best_of", "logit_bias", NULL
};

static bool listed(const char *const *list, const char *name) {
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0) return true;
    return false;
}

static char *dup_string(const cJSON *j) { return xstrdup(j->valuestring); }

// A number field within [lo, hi]: 0, or -1 with the reason.
static int get_number(const cJSON *o, const char *name, double lo, double hi, bool *has, double *out, errbuf *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!j || cJSON_IsNull(j)) return 0;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble)) return err_set(err, "%s: must be a number", name);
    if (j->valuedouble < lo || j->valuedouble > hi) return err_set(err, "%s: %g is out of range (%g to %g)", name, j->valuedouble, lo, hi);
    *has = true;
    *out = j->valuedouble;
    return 0;
}

static int get_int(const cJSON *o, const char *name, double lo, double hi, bool *has, double *out, errbuf *err) {
    if (get_number(o, name, lo, hi, has, out, err)) return -1;
    if (*has && *out != floor(*out)) return err_set(err, "%s: must be a whole number", name);
    return 0;
}

static int get_bool(const cJSON *o, const char *name, bool *out, errbuf *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!j || cJSON_IsNull(j)) return 0;
    if (!cJSON_IsBool(j)) return err_set(err, "%s: must be true or false", name);
    *out = cJSON_IsTrue(j);
    return 0;
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
static int get_content(const cJSON *j, int i, char **out, errbuf *err) {
    if (!j || cJSON_IsNull(j)) return 0;
    if (cJSON_IsString(j)) {
        *out = dup_string(j);
        return 0;
    }
    if (!cJSON_IsArray(j)) return err_set(err, "messages[%d].content: must be a string or an array of text parts", i);
    size_t n = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, j) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0)
            return err_set(err, "messages[%d].content: only text parts are supported (not %s)", i,
                           cJSON_IsString(type) ? type->valuestring : "a part without a type");
        if (!cJSON_IsString(text)) return err_set(err, "messages[%d].content: a text part without its text", i);
        n += strlen(text->valuestring);
    }
    char *s = xmalloc(n + 1), *p = s;
    cJSON_ArrayForEach(part, j) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t k = strlen(t);
        memcpy(p, t, k);
        p += k;
    }
    *p = 0;
    *out = s;
    return 0;
}

static int parse_message(const cJSON *m, int i, serve_message *out, errbuf *err) {
    if (!cJSON_IsObject(m)) return err_set(err, "messages[%d]: must be an object", i);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role)) return err_set(err, "messages[%d].role: must be a string", i);
    const char *r = role->valuestring;
    if (strcmp(r, "developer") == 0) r = "system";
    if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
        return err_set(err, "messages[%d].role: '%.40s' is not one of system, developer, user, assistant, tool", i, r);
    out->role = xstrdup(r);
    if (get_content(cJSON_GetObjectItemCaseSensitive(m, "content"), i, &out->content, err)) return -1;
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (calls && !cJSON_IsNull(calls)) {
        if (strcmp(r, "assistant") != 0) return err_set(err, "messages[%d]: only an assistant message has tool_calls", i);
        if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) > 1)
            return err_set(err, "messages[%d].tool_calls: must be an array of at most one call", i);
        const cJSON *c = cJSON_GetArrayItem(calls, 0);
        const cJSON *fn = c ? cJSON_GetObjectItemCaseSensitive(c, "function") : NULL;
        const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
        if (c && (!cJSON_IsString(name) || !cJSON_IsString(args)))
            return err_set(err, "messages[%d].tool_calls[0].function: needs a name and arguments (strings)", i);
        if (c) {
            out->tool_name = dup_string(name);
            out->tool_args = dup_string(args);
        }
    }
    if (!out->content && !out->tool_name && strcmp(r, "assistant") != 0)
        return err_set(err, "messages[%d].content: missing", i);
    return 0;
}

static int parse_messages(const cJSON *root, serve_request *r, errbuf *err) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs)) return err_set(err, "messages: must be an array");
    int n = cJSON_GetArraySize(msgs);
    if (n == 0) return err_set(err, "messages: empty");
    if (n > MAX_MESSAGES) return err_set(err, "messages: %d, more than the %d a request may have", n, MAX_MESSAGES);
    r->msgs = xcalloc((size_t)n, sizeof *r->msgs);
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (parse_message(m, r->n_msgs, &r->msgs[r->n_msgs], err)) {
            r->n_msgs++;
            return -1;
        }
        r->n_msgs++;
    }
    for (int i = 1; i < r->n_msgs; i++)
        if (strcmp(r->msgs[i].role, "system") == 0)
            return err_set(err, "messages[%d]: a system message only comes first", i);
    const serve_message *last = &r->msgs[r->n_msgs - 1];
    if (strcmp(last->role, "user") != 0 && strcmp(last->role, "tool") != 0)
        return err_set(err, "messages: the last message must be the user's (it is %s)", last->role);
    return 0;
}

static int parse_stop(const cJSON *root, serve_request *r, errbuf *err) {
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (!stop || cJSON_IsNull(stop)) return 0;
    const cJSON *one = stop, *item;
    if (cJSON_IsArray(stop)) {
        if (cJSON_GetArraySize(stop) > SERVE_MAX_STOP)
            return err_set(err, "stop: at most %d sequences", SERVE_MAX_STOP);
        one = NULL;
    } else if (!cJSON_IsString(stop)) {
        return err_set(err, "stop: must be a string or an array of strings");
    }
    for (item = one ? one : stop->child; item; item = one ? NULL : item->next) {
        if (!cJSON_IsString(item)) return err_set(err, "stop: must be a string or an array of strings");
        size_t len = strlen(item->valuestring);
        if (len == 0 || len > SERVE_MAX_STOP_BYTES)
            return err_set(err, "stop: each sequence is 1 to %d bytes", SERVE_MAX_STOP_BYTES);
        r->stop[r->n_stop++] = dup_string(item);
    }
    return 0;
}

static int parse_tools(const cJSON *root, serve_request *r, errbuf *err) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools)) return err_set(err, "tools: must be an array");
        int n = cJSON_GetArraySize(tools);
        if (n > MAX_TOOLS) return err_set(err, "tools: %d, more than %d", n, MAX_TOOLS);
        r->tools = xcalloc((size_t)n + 1, sizeof *r->tools);
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
            const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
            if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
                return err_set(err, "tools[%d]: must be {\"type\": \"function\", \"function\": {\"name\": ...}}", r->n_tools);
            r->tools[r->n_tools++] = dup_string(name);
        }
        char *text = cJSON_PrintUnformatted(tools);
        r->tools_json = xstrdup(text ? text : "[]");
        cJSON_free(text);
    }
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    if (!tc || cJSON_IsNull(tc)) return 0;
    if (cJSON_IsString(tc)) {
        const char *v = tc->valuestring;
        if (strcmp(v, "auto") == 0) r->tool_choice = SERVE_TOOLS_AUTO;
        else if (strcmp(v, "none") == 0) r->tool_choice = SERVE_TOOLS_NONE;
        else if (strcmp(v, "required") == 0) r->tool_choice = SERVE_TOOLS_REQUIRED;
        else return err_set(err, "tool_choice: '%.40s' is not one of none, auto, required", v);
        return 0;
    }
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
    const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    if (!cJSON_IsString(name)) return err_set(err, "tool_choice: none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    r->tool_choice = SERVE_TOOLS_REQUIRED;
    r->tool_choice_name = dup_string(name);
    return 0;
}

// logit_bias: {"TOKEN_ID": BIAS, ...}, BIAS from -100 to 100 (added to the token's logit before
// sampling). Whether each id is in the model's vocabulary the engine checks.
static int parse_logit_bias(const cJSON *root, serve_request *r, errbuf *err) {
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(root, "logit_bias");
    if (!lb || cJSON_IsNull(lb)) return 0;
    if (!cJSON_IsObject(lb)) return err_set(err, "logit_bias: must be an object of token ids and biases");
    int n = cJSON_GetArraySize(lb);
    if (n > MAX_BIAS) return err_set(err, "logit_bias: %d tokens, more than %d", n, MAX_BIAS);
    r->bias_ids = xcalloc((size_t)n + 1, sizeof *r->bias_ids);
    r->bias = xcalloc((size_t)n + 1, sizeof *r->bias);
    for (const cJSON *e = lb->child; e; e = e->next) {
        const char *k = e->string;
        char *end = NULL;
        long id = k && *k >= '0' && *k <= '9' ? strtol(k, &end, 10) : -1;
        if (id < 0 || id > INT32_MAX || !end || *end) return err_set(err, "logit_bias: '%.40s' is not a token id", k ? k : "");
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < -100 || e->valuedouble > 100)
            return err_set(err, "logit_bias[%.40s]: must be a number from -100 to 100", k);
        r->bias_ids[r->n_bias] = (int32_t)id;
        r->bias[r->n_bias++] = (float)e->valuedouble;
    }
    return 0;
}

// Fields that are accepted only at the value that changes nothing (n 1, penalties 0, ...).
static int check_neutral(const cJSON *root, errbuf *err) {
    const cJSON *j;
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "n")) && !cJSON_IsNull(j) && !(cJSON_IsNumber(j) && j->valuedouble == 1))
        return err_set(err, "n: only 1 is supported (one choice per request)");
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "best_of")) && !cJSON_IsNull(j) && !(cJSON_IsNumber(j) && j->valuedouble == 1))
        return err_set(err, "best_of: only 1 is supported");
    static const char *const zero[] = { "presence_penalty", "frequency_penalty", NULL };
    for (int i = 0; zero[i]; i++)
        if ((j = cJSON_GetObjectItemCaseSensitive(root, zero[i])) && !cJSON_IsNull(j) && !(cJSON_IsNumber(j) && j->valuedouble == 0))
            return err_set(err, "%s: not supported (only 0)", zero[i]);
    static const char *const off[] = { "logprobs", "echo", NULL };
    for (int i = 0; off[i]; i++)
        if ((j = cJSON_GetObjectItemCaseSensitive(root, off[i])) && !cJSON_IsNull(j) && !cJSON_IsFalse(j))
            return err_set(err, "%s: not supported (only false)", off[i]);
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "suffix")) && !cJSON_IsNull(j))
        return err_set(err, "suffix: not supported");
    return 0;
}

// response_format: {"type": "text"}, {"type": "json_object"}, or {"type": "json_schema",
// "json_schema": {"name", "schema", "strict", "description"}}.
static int parse_format(const cJSON *root, serve_request *r, errbuf *err) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    if (!j || cJSON_IsNull(j)) return 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    if (strcmp(t, "text") == 0) return 0;
    if (strcmp(t, "json_object") == 0) {
        r->format = SERVE_FORMAT_JSON_OBJECT;
        return 0;
    }
    if (strcmp(t, "json_schema") != 0) return err_set(err, "response_format.type: one of text, json_object, json_schema");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(j, "json_schema");
    const cJSON *schema = js ? cJSON_GetObjectItemCaseSensitive(js, "schema") : NULL;
    if (!cJSON_IsObject(schema)) return err_set(err, "response_format.json_schema.schema: must be an object");
    char *text = cJSON_PrintUnformatted(schema);
    r->json_schema = xstrdup(text ? text : "{}");
    cJSON_free(text);
    r->format = SERVE_FORMAT_SCHEMA;
    return 0;
}

static int parse_root(const cJSON *root, serve_kind kind, serve_request *r, errbuf *err) {
    if (!cJSON_IsObject(root)) return err_set(err, "the body must be a JSON object");
    const char *const *allowed = kind == SERVE_CHAT ? CHAT_FIELDS : COMPLETION_FIELDS;
    strbuf unknown = { 0 };
    for (const cJSON *f = root->child; f; f = f->next)
        if (!listed(allowed, f->string)) strbuf_printf(&unknown, "%s%.40s", unknown.len ? ", " : "", f->string);
    if (unknown.len) {
        err_set(err, "not supported: %s", strbuf_str(&unknown));
        strbuf_free(&unknown);
        return -1;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model)) return err_set(err, "model: must be a string");
        r->model = dup_string(model);
    }
    if (check_neutral(root, err)) return -1;
    bool has = false;
    double v = 0;
    if (get_int(root, "max_tokens", 1, 1 << 20, &has, &v, err)) return -1;
    if (has) r->max_tokens = (int)v;
    has = false;
    if (get_int(root, "max_completion_tokens", 1, 1 << 20, &has, &v, err)) return -1;
    if (has) r->max_tokens = (int)v;
    if (get_number(root, "temperature", 0, 2, &r->has_temperature, &r->temperature, err)) return -1;
    if (get_number(root, "top_p", 0, 1, &r->has_top_p, &r->top_p, err)) return -1;
    if (get_int(root, "top_k", 0, 1 << 20, &r->has_top_k, &v, err)) return -1;
    if (r->has_top_k) r->top_k = (int)v;
    if (get_int(root, "seed", -9007199254740991.0, 9007199254740991.0, &r->has_seed, &v, err)) return -1;
    if (r->has_seed) r->seed = (uint64_t)(int64_t)v;
    if (get_bool(root, "stream", &r->stream, err)) return -1;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) return err_set(err, "stream_options: must be an object");
        if (get_bool(so, "include_usage", &r->include_usage, err)) return err_prefix(err, "stream_options");
    }
    if (get_bool(root, "parallel_tool_calls", &(bool){ false }, err)) return -1;
    if (parse_stop(root, r, err) || parse_logit_bias(root, r, err)) return -1;
    if (kind == SERVE_COMPLETION) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
        if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
            p = cJSON_GetArrayItem(p, 0);
        if (!cJSON_IsString(p)) return err_set(err, "prompt: must be a string (or an array of one)");
        r->prompt = dup_string(p);
        return 0;
    }
    if (parse_tools(root, r, err) || parse_format(root, r, err)) return -1;
    if (r->format != SERVE_FORMAT_TEXT && (r->n_tools || r->tool_choice_name))
        return err_set(err, "response_format: a JSON reply and tools cannot be asked for together");
    return parse_messages(root, r, err);
}

int serve_request_parse(const char *body, size_t len, serve_kind kind, serve_request *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    if (len == 0) return err_set(err, "the body is empty (a JSON object was expected)");
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= body && at <= body + len ? (size_t)(at - body) : 0;
        return err_set(err, "the body is not valid JSON (near byte %zu)", off);
    }
    int rc = parse_root(root, kind, out, err);
    cJSON_Delete(root);
    return rc;
}

void serve_request_free(serve_request *r) {
    for (int i = 0; i < r->n_msgs; i++) {
        free(r->msgs[i].role);
        free(r->msgs[i].content);
        free(r->msgs[i].tool_name);
        free(r->msgs[i].tool_args);
    }
    free(r->msgs);
    free(r->model);
    free(r->prompt);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    for (int i = 0; i < r->n_tools; i++) free(r->tools[i]);
    free(r->tools);
    free(r->tool_choice_name);
    free(r->json_schema);
    free(r->tools_json);
    free(r->bias_ids);
    free(r->bias);
    memset(r, 0, sizeof *r);
}
