// Tool calls in a model's own tags (engine/tool_call.h) and logit biases (engine/token_bias.h),
// on a file made by others: the Qwen reference model, whose vocabulary has <tool_call> and
// </tool_call>. The tags are found (and not in a vocabulary without them); a call and a result
// render as the model reads them; the filter leaves free text alone, holds what follows the
// opening tag to the call's schema, closes it and ends the reply; and replies generated under it
// at temperature 1 (a call asked for, or made likely by a bias) are each one call that parses
// and validates.
#include "test.h"
#include "engine/json_schema.h"
#include "engine/model.h"
#include "engine/session.h"
#include "engine/token_bias.h"
#include "engine/tool_call.h"

#include <cjson/cJSON.h>
#include <math.h>

static const char *TOOLS =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"city\": {\"type\": \"string\", \"maxLength\": 16}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, "
    "\"required\": [\"city\", \"unit\"]}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"play\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"song\": {\"type\": \"string\", \"maxLength\": 16}}, \"required\": [\"song\"]}}}]";

// {"name": ..., "arguments": {...}} naming one of TOOLS with arguments that hold to its schema
// (checked without the matcher).
static bool valid_call(const char *text) {
    cJSON *j = cJSON_Parse(text);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name"), *args = cJSON_GetObjectItemCaseSensitive(j, "arguments");
    bool ok = cJSON_IsString(name) && cJSON_IsObject(args);
    if (ok && strcmp(name->valuestring, "get_weather") == 0) {
        const cJSON *city = cJSON_GetObjectItemCaseSensitive(args, "city"), *unit = cJSON_GetObjectItemCaseSensitive(args, "unit");
        ok = cJSON_GetArraySize(args) == 2 && cJSON_IsString(city) && cJSON_IsString(unit) &&
             (strcmp(unit->valuestring, "c") == 0 || strcmp(unit->valuestring, "f") == 0);
    } else if (ok) {
        ok = strcmp(name->valuestring, "play") == 0 && cJSON_GetArraySize(args) == 1 &&
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "song"));
    }
    cJSON_Delete(j);
    return ok;
}

typedef struct reply {
    tool_call_tags tags;
    strbuf text, call;             // outside the tags, and between them
    int opens, closes, tokens;
    bool in_call;
} reply;

static bool on_token(void *ud, int32_t token, const char *piece, int len) {
    reply *r = ud;
    r->tokens++;
    if (token == r->tags.open) r->opens++, r->in_call = true;
    else if (token == r->tags.close) r->closes++, r->in_call = false;
    else strbuf_append(r->in_call ? &r->call : &r->text, piece, (size_t)len);
    return true;
}

static void render_case(const tokenizer *tok, tool_call_tags tags) {
    strbuf b = { 0 };
    tool_call_render(&b, "get_weather", "{\"city\": \"Paris\", \"unit\": \"c\"}");
    CHECK(strcmp(strbuf_str(&b), "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"unit\":\"c\"}}\n</tool_call>") == 0,
          "render: %s", strbuf_str(&b));
    int32_t ids[256];
    int n = tokenizer_encode(tok, b.s, b.len, false, false, ids, 256);
    CHECK(n > 2 && ids[0] == tags.open && ids[n - 1] == tags.close, "the rendered call's tags are single tokens (%d tokens)", n);
    strbuf_clear(&b);
    tool_call_render_result(&b, "18 C");
    CHECK(strcmp(strbuf_str(&b), "<tool_response>\n18 C\n</tool_response>") == 0, "result: %s", strbuf_str(&b));
    strbuf_free(&b);
    char *sys = tool_call_system("Be brief.", TOOLS);
    CHECK(strncmp(sys, "Be brief.\n\n# Tools", 18) == 0 && strstr(sys, "\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"") &&
          strstr(sys, "\n{\"type\":\"function\",\"function\":{\"name\":\"play\"") && strstr(sys, "<tool_call>\n{\"name\": <function-name>"),
          "system: %s", sys);
    free(sys);
}

// The filter's phases on logits of the model's own size.
static void phase_case(const json_schema *calls, const json_vocab *v, tool_call_tags tags, int nv) {
    float *lg = malloc((size_t)nv * sizeof *lg);
    for (int i = 0; i < nv; i++) lg[i] = (float)(i % 97) * 0.01f;
    tool_call_filter *f = tool_call_filter_new(tags, calls, v, false);
    token_filter tf = tool_call_filter_token_filter(f);
    tf.mask(tf.ud, lg, nv);
    int finite = 0;
    for (int i = 0; i < nv; i++) finite += isfinite(lg[i]);
    CHECK(finite == nv && tf.forced(tf.ud) == -1, "auto: free text leaves every token (%d of %d)", finite, nv);
    tf.accept(tf.ud, 11, "x", 1);   // text, then the tag
    tf.accept(tf.ud, tags.open, "<tool_call>", 11);
    tf.mask(tf.ud, lg, nv);
    CHECK(lg[tags.open] == -INFINITY && lg[tags.close] == -INFINITY, "inside the call: neither tag");
    const char *body = "{\"name\": \"play\", \"arguments\": {\"song\": \"x\"}}";
    tf.accept(tf.ud, 0, body, (int)strlen(body));
    CHECK(tf.forced(tf.ud) == tags.close, "the call whole: its closing tag is forced");
    for (int i = 0; i < nv; i++) lg[i] = 0;
    tf.mask(tf.ud, lg, nv);
    finite = 0;
    for (int i = 0; i < nv; i++) finite += isfinite(lg[i]);
    CHECK(finite == 1 && isfinite(lg[tags.close]), "the call whole: only the closing tag (%d)", finite);
    CHECK(!tool_call_filter_called(f), "not called before the closing tag");
    tf.accept(tf.ud, tags.close, "</tool_call>", 12);
    CHECK(tool_call_filter_called(f), "called");
    for (int i = 0; i < nv; i++) lg[i] = 0;
    tf.mask(tf.ud, lg, nv);
    bool only_eog = true;
    for (int i = 0; i < nv; i++) only_eog &= isfinite(lg[i]) == json_vocab_eog(v, i);
    CHECK(only_eog, "after the call: only the end of the reply");
    tool_call_filter_free(f);
    f = tool_call_filter_new(tags, calls, v, true);
    tf = tool_call_filter_token_filter(f);
    CHECK(tf.forced(tf.ud) == tags.open, "required: the opening tag first");
    tool_call_filter_free(f);
    free(lg);
}

// Biases: added before the inner filter's mask, which a bias cannot undo.
static void bias_case(const json_schema *calls, const json_vocab *v, tool_call_tags tags, int nv) {
    errbuf err = { { 0 } };
    int32_t bad = nv;
    CHECK(token_bias_check(&bad, 1, nv, &err) == -1 && strstr(err.msg, "not in the vocabulary"), "an id past the vocabulary: %s", err.msg);
    float *lg = calloc((size_t)nv, sizeof *lg);
    int32_t ids[2] = { 5, tags.close };
    float bias[2] = { 7.5f, 100 };
    tool_call_filter *f = tool_call_filter_new(tags, calls, v, false);
    token_bias tb = { ids, bias, 2, tool_call_filter_token_filter(f) };
    token_filter tf = token_bias_filter(&tb);
    tf.mask(tf.ud, lg, nv);
    CHECK(lg[5] == 7.5f && lg[tags.close] == 100 && lg[6] == 0, "free text: the biases added (%g %g)", lg[5], lg[tags.close]);
    tf.accept(tf.ud, tags.open, "<tool_call>", 11);
    memset(lg, 0, (size_t)nv * sizeof *lg);
    tf.mask(tf.ud, lg, nv);
    CHECK(lg[tags.close] == -INFINITY, "in the call: a bias does not bring back a tag the filter rules out");
    tool_call_filter_free(f);
    free(lg);
}

// Replies at temperature 1: asked for a call (required), or free to call with the opening tag
// biased up (auto); each is one call that validates, then the end.
static void generate_case(session *s, const json_schema *calls, const json_vocab *v, tool_call_tags tags) {
    char *sys = tool_call_system(NULL, TOOLS);
    session_set_system(s, sys);
    free(sys);
    sampler_params p = sampler_defaults();
    p.temp = 1.0f;
    errbuf err = { { 0 } };
    for (int k = 0; k < 6; k++) {
        const bool required = k < 3;
        session_reset(s);
        session_set_sampling(s, &p, 80, &err);
        session_set_seed(s, 100 + (uint64_t)k);
        tool_call_filter *f = tool_call_filter_new(tags, calls, v, required);
        int32_t open_id = tags.open;
        float up = 100;
        token_bias tb = { &open_id, &up, required ? 0 : 1, tool_call_filter_token_filter(f) };
        token_filter tf = token_bias_filter(&tb);
        session_set_filter(s, &tf);
        reply r = { .tags = tags };
        int rc = session_chat(s, "weather in Paris?", on_token, &r, &err);
        session_set_filter(s, NULL);
        CHECK(rc == 0, "chat: %s", err.msg);
        CHECK(r.opens == 1 && r.closes == 1 && tool_call_filter_called(f) && valid_call(strbuf_str(&r.call)) && r.text.len == 0,
              "%s, seed %d: one call that validates (%d opened, %d closed): '%s' text '%s'", required ? "required" : "auto + bias",
              100 + k, r.opens, r.closes, strbuf_str(&r.call), strbuf_str(&r.text));
        tool_call_filter_free(f);
        strbuf_free(&r.text);
        strbuf_free(&r.call);
    }
    // auto, no bias: the random model's text is its own (free: no token masked, so it equals an
    // unfiltered reply token for token)
    reply plain = { .tags = tags }, filtered = { .tags = tags };
    p.temp = 0;
    session_set_sampling(s, &p, 12, &err);
    session_reset(s);
    session_chat(s, "hello", on_token, &plain, &err);
    tool_call_filter *f = tool_call_filter_new(tags, calls, v, false);
    token_filter tf = tool_call_filter_token_filter(f);
    session_set_filter(s, &tf);
    session_reset(s);
    session_chat(s, "hello", on_token, &filtered, &err);
    session_set_filter(s, NULL);
    CHECK(plain.tokens == filtered.tokens && strcmp(strbuf_str(&plain.text), strbuf_str(&filtered.text)) == 0,
          "auto leaves text as it is: '%s' / '%s'", strbuf_str(&plain.text), strbuf_str(&filtered.text));
    tool_call_filter_free(f);
    strbuf_free(&plain.text);
    strbuf_free(&filtered.text);
    strbuf_free(&plain.call);
    strbuf_free(&filtered.call);
}

int main(void) {
    const char *ref = test_ref_dir();
    if (!ref) {
        SKIP("../shared/ref is not present");
        return test_finish();
    }
    char qwen[512], llama[512];
    snprintf(qwen, sizeof qwen, "%s/models/qwen2-d64-F16.gguf", ref);
    snprintf(llama, sizeof llama, "%s/models/llama-bpe-d64-F16.gguf", ref);
    session_opts o = session_opts_default();
    o.model_path = llama;
    o.backend.n_threads = 1;
    errbuf err = { { 0 } };
    session *s = session_open(&o, &err);
    CHECK(s != NULL, "open %s: %s", llama, err.msg);
    if (s) CHECK(!tool_call_tags_of(session_model(s)->tok, NULL), "a vocabulary without the tags has none");
    session_close(s);
    o.model_path = qwen;
    o.template_name = "chatml";
    s = session_open(&o, &err);
    CHECK(s != NULL, "open %s: %s", qwen, err.msg);
    if (!s) return test_finish();
    tool_call_tags tags;
    bool found = tool_call_tags_of(session_model(s)->tok, &tags);
    CHECK(found && tags.open == 151657 && tags.close == 151658, "the tags of %s (%d %d)", qwen, tags.open, tags.close);
    if (found) {
        json_schema *calls = json_schema_compile_tools(TOOLS, NULL, &err);
        json_vocab *v = json_vocab_new(s);
        render_case(session_model(s)->tok, tags);
        phase_case(calls, v, tags, session_n_vocab(s));
        bias_case(calls, v, tags, session_n_vocab(s));
        generate_case(s, calls, v, tags);
        json_vocab_free(v);
        json_schema_free(calls);
    }
    session_close(s);
    return test_finish();
}
