// cabin serve's parts without the network: the stop filter (whatever the pieces), the request
// decoder's accepts and refusals, whole UTF-8 characters in streamed text, the car's tools
// (schema, arguments and back), and session_add_turn: a conversation read back into the cache
// is the one the model wrote (the same tokens, the same next reply); the prompt cache between
// requests (session_restart).
#include "test.h"
#include "app/action_tools.h"
#include "base/mem.h"
#include "engine/session.h"
#include "engine/session_impl.h"   // the gate, for lineup_case
#include "base/clock.h"
#include "serve/reply.h"
#include "serve/serve.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>

typedef struct sink { char s[512]; size_t n; } sink;

static void collect(void *ud, const char *s, size_t n) {
    sink *k = ud;
    memcpy(k->s + k->n, s, n);
    k->n += n;
    k->s[k->n] = 0;
}

// text through a filter of stops, in pieces of `piece` bytes: what passes, and whether it stopped
static const char *filtered(const char *text, char **stops, int n_stop, size_t piece, bool *stopped) {
    static sink k;
    k.n = 0;
    k.s[0] = 0;
    stop_filter f;
    stop_filter_init(&f, stops, n_stop);
    size_t len = strlen(text), at = 0;
    bool going = true;
    while (at < len && going) {
        size_t p = piece < len - at ? piece : len - at;
        going = stop_filter_feed(&f, text + at, p, collect, &k);
        at += p;
    }
    if (going) stop_filter_flush(&f, collect, &k);
    stop_filter_free(&f);
    *stopped = !going;
    return k.s;
}

static void stop_filter_cases(void) {
    char *one[] = { "</act>" }, *two[] = { "abcd", "c" }, *nl[] = { "\n\n", "User:" };
    bool stopped;
    for (size_t piece = 1; piece <= 8; piece++) {
        CHECK(strcmp(filtered("<act>none</act> Hello", one, 1, piece, &stopped), "<act>none") == 0 && stopped, "piece %zu", piece);
        CHECK(strcmp(filtered("no stop here <act", one, 1, piece, &stopped), "no stop here <act") == 0 && !stopped,
              "a held beginning is sent at the end (piece %zu)", piece);
        // "c" is complete (at 3) before "abcd" (at 4): the text ends before the c, however it is cut
        CHECK(strcmp(filtered("xabcd", two, 2, piece, &stopped), "xab") == 0 && stopped, "the first complete (piece %zu)", piece);
        CHECK(strcmp(filtered("Sure.\nUser: more", nl, 2, piece, &stopped), "Sure.\n") == 0 && stopped, "User: (piece %zu)", piece);
    }
    CHECK(strcmp(filtered("plain", NULL, 0, 2, &stopped), "plain") == 0 && !stopped, "no stops");
}

static int parse(const char *body, serve_kind kind, serve_request *r, errbuf *err) {
    return serve_request_parse(body, strlen(body), kind, r, err);
}

static void request_cases(void) {
    serve_request r;
    errbuf err = { { 0 } };
    CHECK(parse("{\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                "{\"type\":\"text\",\"text\":\"b\"}]}],\"max_completion_tokens\":7,\"stop\":\"x\",\"seed\":-1,\"temperature\":0}",
                SERVE_CHAT, &r, &err) == 0, "%s", err.msg);
    CHECK(r.n_msgs == 2 && strcmp(r.msgs[0].role, "system") == 0 && strcmp(r.msgs[1].content, "ab") == 0, "messages");
    CHECK(r.max_tokens == 7 && r.n_stop == 1 && r.has_seed && r.has_temperature && r.temperature == 0, "fields");
    serve_request_free(&r);
    static const struct { const char *body; const char *names; } bad[] = {
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"prediction\":{},\"foo\":1}", "prediction, foo" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"5x\":1}}", "'5x' is not a token id" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"-5\":1}}", "'-5' is not a token id" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"5\":-100.5}}", "logit_bias[5]: must be a number from -100 to 100" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"5\":\"up\"}}", "logit_bias[5]" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":[1]}", "logit_bias: must be an object" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":1.5}", "top_p" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}", "stream" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"y\"}]}", "system" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "image_url" },
        { "[1,2]", "JSON object" },
        { "{\"messages\":", "not valid JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(bad[i].body, SERVE_CHAT, &r, &err);
        CHECK(rc == -1 && strstr(err.msg, bad[i].names), "%s: %s", bad[i].body, err.msg);
        serve_request_free(&r);
    }
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"7\":-100,\"151657\":2.5}}", SERVE_CHAT, &r, &err) == 0 &&
          r.n_bias == 2 && r.bias_ids[0] == 7 && r.bias[0] == -100 && r.bias_ids[1] == 151657 && r.bias[1] == 2.5f,
          "logit_bias: %s", err.msg);
    serve_request_free(&r);
    CHECK(parse("{\"prompt\":[\"once\"],\"max_tokens\":3}", SERVE_COMPLETION, &r, &err) == 0 && strcmp(r.prompt, "once") == 0, "%s", err.msg);
    serve_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"messages\":[]}", SERVE_COMPLETION, &r, &err) == -1 && strstr(err.msg, "messages"), "%s", err.msg);
    serve_request_free(&r);
}

static void utf8_cases(void) {
    const char *s = "a\xC3\xA9\xE2\x82\xAC";   // a é €
    CHECK(utf8_complete(s, 6) == 6, "whole");
    CHECK(utf8_complete(s, 5) == 3 && utf8_complete(s, 4) == 3, "a cut euro sign waits");
    CHECK(utf8_complete(s, 2) == 1, "a cut e acute waits");
    CHECK(utf8_complete("abc", 3) == 3, "ascii");
    static const struct { const char *in, *out; } clean[] = {
        { "a\xC3\xA9\xE2\x82\xAC", "a\xC3\xA9\xE2\x82\xAC" },        // whole characters kept
        { "x\xA4y", "x\xEF\xBF\xBDy" },                                 // a stray continuation byte
        { "\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD" },                    // an overlong '/'
        { "\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },  // a surrogate
        { "\xF0\x9F\x98", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },  // cut short at the end
        { "\xF0\x9F\x98\x80!", "\xF0\x9F\x98\x80!" },                  // U+1F600
    };
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        char *c = utf8_clean(clean[i].in, strlen(clean[i].in));
        CHECK(strcmp(c, clean[i].out) == 0, "utf8_clean case %zu", i);
        free(c);
    }
}

static void tool_cases(void) {
    char *js = action_tools_json();
    cJSON *tools = cJSON_Parse(js);
    CHECK(cJSON_IsArray(tools) && cJSON_GetArraySize(tools) >= 20, "tools: %.80s", js);
    int with_required = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItem(t, "function");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(fn, "name"));
        CHECK(name && action_tool_known(name) && !strchr(name, '.'), "a tool name: %s", name ? name : "(none)");
        with_required += cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(fn, "parameters"), "required")) > 0;
    }
    CHECK(with_required >= 10 && !action_tool_known("none") && !action_tool_known("climate.set"), "required slots, names");
    cJSON_Delete(tools);
    free(js);
    static const char *const lines[] = { "climate.set zone=all temp=22.5", "media.volume delta=-2", "climate.adjust zone=driver delta=+3",
                                         "nav.go dest=central_station", "media.next", "seat.heat seat=driver level=2" };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char reply[160], sentence[8], why[128], name[64];
        snprintf(reply, sizeof reply, "<act>%s</act> ok", lines[i]);
        action a, b;
        CHECK(action_parse(reply, &a, sentence, sizeof sentence, why, sizeof why) == 0, "%s: %s", lines[i], why);
        char *args = action_tool_arguments(&a);
        action_tool_name(a.intent, name, sizeof name);
        errbuf err = { { 0 } };
        CHECK(action_from_tool_call(name, args, &b, &err) == 0 && action_equal(&a, &b), "%s -> %s %s -> back: %s", lines[i], name, args, err.msg);
        free(args);
    }
    action c;
    errbuf err = { { 0 } };
    CHECK(action_from_tool_call("launch_rocket", "{}", &c, &err) == -1 && strstr(err.msg, "launch_rocket"), "%s", err.msg);
    CHECK(action_from_tool_call("climate_set", "[1]", &c, &err) == -1 && strstr(err.msg, "not a JSON object"), "%s", err.msg);
}

// Two turns chatted, against the first read back with session_add_turn and the second chatted:
// the same tokens in the cache before the second reply, and the same second reply.
// Two greedy sessions on the embedded model: false (skipped or failed, said) when there are not.
static bool open_two(session **a, session **b) {
    const char *path = "assets/models/cabin-tiny.gguf";
    FILE *f = fopen(path, "rb");
    if (!f) {
        SKIP("%s is missing (make model)", path);
        return false;
    }
    fclose(f);
    session_opts o = session_opts_default();
    o.model_path = path;
    o.backend.n_threads = 1;
    o.sampling.temp = 0;
    errbuf err = { { 0 } };
    *a = session_open(&o, &err);
    *b = *a ? session_open(&o, &err) : NULL;
    CHECK(*a && *b, "session_open: %s", err.msg);
    if (*a && *b) return true;
    session_close(*a);
    return false;
}

static void add_turn_case(void) {
    session *a, *b;
    if (!open_two(&a, &b)) return;
    errbuf err = { { 0 } };
    static const char *const firsts[] = { "turn on the ac", "call mom", "it's cold in here" };
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        strbuf r1 = { 0 }, r2 = { 0 }, r2b = { 0 };
        session_reset(a);
        session_reset(b);
        CHECK(session_chat(a, firsts[i], session_collect_text, &r1, &err) == 0, "%s", err.msg);
        CHECK(session_add_turn(b, firsts[i], strbuf_str(&r1), &err) == 0, "%s", err.msg);
        int n_turn = session_turn_tokens(b, "and lock the doors", &err);
        CHECK(session_chat(a, "and lock the doors", session_collect_text, &r2, &err) == 0, "%s", err.msg);
        const int32_t *ha, *hb;
        int na = session_history(a, &ha);
        CHECK(session_chat(b, "and lock the doors", session_collect_text, &r2b, &err) == 0, "%s", err.msg);
        int nb = session_history(b, &hb);
        CHECK(na == nb && memcmp(ha, hb, (size_t)na * sizeof *ha) == 0, "%s: the same tokens (%d, %d)", firsts[i], na, nb);
        CHECK(strcmp(strbuf_str(&r2), strbuf_str(&r2b)) == 0, "%s: the same reply: %s | %s", firsts[i], strbuf_str(&r2), strbuf_str(&r2b));
        CHECK(n_turn > 5, "turn tokens %d", n_turn);
        strbuf_free(&r1);
        strbuf_free(&r2);
        strbuf_free(&r2b);
    }
    session_reset(b);
    CHECK(session_set_system(b, "Answer briefly.") == 0, "a system prompt on an empty conversation");
    CHECK(session_add_turn(b, "hi", "<act>none</act> Hello.", &err) == 0, "%s", err.msg);
    CHECK(session_set_system(b, NULL) == -1, "not once the conversation began");
    strbuf big = { 0 };
    for (int i = 0; i < 600; i++) strbuf_puts(&big, "drive home ");
    session_reset(b);
    CHECK(session_add_turn(b, strbuf_str(&big), "ok", &err) == -1 && strstr(err.msg, "context full"), "too long: %s", err.msg);
    const int32_t *h;
    CHECK(session_history(b, &h) == 0, "a refused turn leaves the cache empty");
    strbuf_free(&big);
    session_close(a);
    session_close(b);
}

// The tokens two histories share from the start.
static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int k = 0;
    while (k < na && k < nb && a[k] == b[k]) k++;
    return k;
}

static float max_abs_diff(const float *x, const float *y, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) m = fabsf(x[i] - y[i]) > m ? fabsf(x[i] - y[i]) : m;
    return m;
}

// The prompt cache between requests (session_restart): a conversation sent again one turn
// longer takes its earlier turns from the cache and gets the reply a fresh session gets, with the
// same tokens in the cache and the same logits; a conversation that differs part-way takes the
// shared start only; a quantized cache, and rows made under another plan, are not reused.
static void prompt_cache_case(void) {
    session *fresh, *kept;
    if (!open_two(&fresh, &kept)) return;
    errbuf err = { { 0 } };
    const int nv = session_n_vocab(fresh);
    session_stats st;
    static const char *const firsts[] = { "turn on the ac", "call mom", "it's cold in here", "play some jazz" };
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        strbuf r1 = { 0 }, r2 = { 0 }, r2k = { 0 };
        session_reset(kept);
        CHECK(session_chat(kept, firsts[i], session_collect_text, &r1, &err) == 0, "%s", err.msg);
        const int32_t *h;
        int n_old = session_history(kept, &h);
        int32_t *old = xmalloc((size_t)n_old * sizeof *old);
        memcpy(old, h, (size_t)n_old * sizeof *old);
        session_restart(kept);   // the client sends the conversation again, one turn longer
        CHECK(session_add_turn(kept, firsts[i], strbuf_str(&r1), &err) == 0, "%s", err.msg);
        CHECK(session_chat(kept, "and lock the doors", session_collect_text, &r2k, &err) == 0, "%s", err.msg);
        session_get_stats(kept, &st);
        session_reset(fresh);
        CHECK(session_add_turn(fresh, firsts[i], strbuf_str(&r1), &err) == 0, "%s", err.msg);
        const int32_t *hf;
        int n_turn1 = session_history(fresh, &hf);
        int shared = common_prefix(old, n_old, hf, n_turn1);
        CHECK(session_chat(fresh, "and lock the doors", session_collect_text, &r2, &err) == 0, "%s", err.msg);
        CHECK(st.cached_tokens >= shared - 1 && st.cached_tokens <= shared && shared > n_turn1 / 2,
              "%s: %d tokens taken from the cache, %d shared of %d", firsts[i], st.cached_tokens, shared, n_turn1);
        const int32_t *ha, *hb;
        int na = session_history(fresh, &ha), nb = session_history(kept, &hb);
        CHECK(na == nb && memcmp(ha, hb, (size_t)na * sizeof *ha) == 0, "%s: the same tokens (%d, %d)", firsts[i], na, nb);
        CHECK(strcmp(strbuf_str(&r2), strbuf_str(&r2k)) == 0, "%s: the same reply: %s | %s", firsts[i], strbuf_str(&r2), strbuf_str(&r2k));
        float d = max_abs_diff(session_last_logits(fresh), session_last_logits(kept), nv);
        CHECK(d < 1e-3f, "%s: the same last logits (max difference %g)", firsts[i], (double)d);
        // another conversation that shares only the template's start
        session_restart(kept);
        CHECK(session_add_turn(kept, "what's the weather", "<act>none</act> Sunny.", &err) == 0, "%s", err.msg);
        session_get_stats(kept, &st);
        int n_new = session_history(kept, &hb);
        int k = common_prefix(old, n_old, hb, n_new);
        CHECK(st.cached_tokens == (k < n_new - 1 ? k : n_new - 1) && k < n_new, "%s: a different turn takes %d of %d shared tokens",
              firsts[i], st.cached_tokens, k);
        free(old);
        strbuf_free(&r1);
        strbuf_free(&r2);
        strbuf_free(&r2k);
    }
    // a quantized cache folds its rows: nothing is taken
    CHECK(session_set_kv(kept, "q8", NULL, &err) == 0, "%s", err.msg);
    session_reset(kept);
    CHECK(session_add_turn(kept, "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
    session_restart(kept);
    CHECK(session_add_turn(kept, "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
    session_get_stats(kept, &st);
    CHECK(st.cached_tokens == 0, "a q8 cache takes %d tokens", st.cached_tokens);
    // rows made under another plan are not offered again
    CHECK(session_set_kv(kept, "f16", NULL, &err) == 0, "%s", err.msg);
    session_reset(kept);
    CHECK(session_add_turn(kept, "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
    precision_plan p;
    session_get_plan(kept, &p);
    CHECK(session_set_plan(kept, &p, &err) == 0, "%s", err.msg);
    session_restart(kept);
    CHECK(session_add_turn(kept, "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
    session_get_stats(kept, &st);
    CHECK(st.cached_tokens == 0, "after a precision switch %d tokens were taken", st.cached_tokens);
    session_restart(kept);   // the rows made since are
    CHECK(session_add_turn(kept, "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
    session_get_stats(kept, &st);
    CHECK(st.cached_tokens > 5, "then %d tokens were taken", st.cached_tokens);
    session_close(fresh);
    session_close(kept);
}

// Slots (session_open_sibling): three sessions on one model, run on three threads at once, each
// a two-turn conversation, write the tokens, replies and logits one session alone writes; the
// weights are the first's; a precision switch on the first keeps the others' rows from being
// taken again.
typedef struct slot_run {
    session *s;
    const char *first, *second;
    strbuf reply;
    int rc;
    errbuf err;
} slot_run;

static void *slot_thread(void *arg) {
    slot_run *r = arg;
    session_reset(r->s);
    r->rc = session_chat(r->s, r->first, session_collect_text, &r->reply, &r->err);
    if (!r->rc) r->rc = session_chat(r->s, r->second, session_collect_text, &r->reply, &r->err);
    return NULL;
}

typedef struct step_run {
    session *s;
    int32_t token;
    float *logits;
    int rc;
    errbuf err;
} step_run;

static void *step_thread(void *arg) {
    step_run *r = arg;
    r->rc = session_eval(r->s, &r->token, 1, r->logits, &r->err);
    return NULL;
}

// Three slots' next tokens queued behind a held gate (white box: engine/session_impl.h) go in one
// pass when it opens: each slot counts one shared pass and gets the logits one session alone has.
static void lineup_case(session *alone, session *const *slot, int nv) {
    errbuf err = { { 0 } };
    static const char *const prompts[] = { "turn on the ac", "call mom and then play some jazz", "louder" };
    float *want[3], *got[3];
    step_run r[3];
    session_stats before[3], after;
    for (int i = 0; i < 3; i++) {
        int32_t *ids = NULL;
        int n = session_tokenize(alone, prompts[i], true, &ids, &err);
        session_reset(alone);
        session_reset(slot[i]);
        want[i] = xmalloc((size_t)nv * sizeof(float));
        got[i] = xmalloc((size_t)nv * sizeof(float));
        int32_t next = (int32_t)(7 + 11 * i);
        CHECK(n > 0 && session_eval(alone, ids, n, NULL, &err) == 0 && session_eval(alone, &next, 1, want[i], &err) == 0 &&
              session_eval(slot[i], ids, n, NULL, &err) == 0, "%s", err.msg);
        free(ids);
        session_get_stats(slot[i], &before[i]);
        r[i] = (step_run){ .s = slot[i], .token = next, .logits = got[i] };
    }
    pthread_t t[3];
    session_gate_enter(slot[0]);
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, step_thread, &r[i]);
    for (int spins = 0; session_gate_waiting(slot[0]) < 3 && spins < 100000; spins++) sleep_ms(0.1);
    CHECK(session_gate_waiting(slot[0]) == 3, "three steps wait at the gate (%d)", session_gate_waiting(slot[0]));
    session_gate_leave(slot[0]);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(r[i].rc == 0, "slot %d: %s", i, r[i].err.msg);
        session_get_stats(slot[i], &after);
        CHECK(after.shared_passes == before[i].shared_passes + 1, "slot %d: one shared pass (%d -> %d)", i,
              before[i].shared_passes, after.shared_passes);
        float d = max_abs_diff(want[i], got[i], nv);
        CHECK(d == 0.0f, "slot %d: the logits of the shared pass are those alone (max difference %g)", i, (double)d);
        free(want[i]);
        free(got[i]);
    }
}

// lineup_case on a file made by others, with a kernel table: the K-quant kernels (and the
// others) give a row the same bits however many rows share the pass.
static void lineup_file_case(const char *path, const char *kernels) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        SKIP("%s is missing (../shared/ref)", path);
        return;
    }
    fclose(f);
    session_opts o = session_opts_default();
    o.model_path = path;
    o.backend.n_threads = 2;
    o.backend.kernels = kernels;
    o.sampling.temp = 0;
    errbuf err = { { 0 } };
    session *alone = session_open(&o, &err);
    if (!alone && strcmp(kernels, "auto") != 0 && strstr(err.msg, kernels)) {
        SKIP("the %s kernel table: %s", kernels, err.msg);
        return;
    }
    session *first = alone ? session_open(&o, &err) : NULL;
    session *s1 = first ? session_open_sibling(first, &err) : NULL;
    session *s2 = s1 ? session_open_sibling(first, &err) : NULL;
    CHECK(s2 != NULL, "%s (%s): %s", path, kernels, err.msg);
    if (s2) {
        session *slot[3] = { first, s1, s2 };
        lineup_case(alone, slot, session_n_vocab(alone));
    }
    session_close(s2);
    session_close(s1);
    session_close(first);
    session_close(alone);
}

static void slots_case(void) {
    session *alone, *first;
    if (!open_two(&alone, &first)) return;
    errbuf err = { { 0 } };
    session *sib[2];
    for (int i = 0; i < 2; i++) {
        sib[i] = session_open_sibling(first, &err);
        CHECK(sib[i] != NULL, "session_open_sibling: %s", err.msg);
        if (!sib[i]) return;
    }
    CHECK(session_model(sib[0]) == session_model(first) && session_model(sib[1]) == session_model(first),
          "the slots read the first's weights");
    CHECK(session_open_sibling(sib[0], &err) == NULL && strstr(err.msg, "first"), "a sibling of a sibling: %s", err.msg);
    static const char *const firsts[] = { "turn on the ac", "call mom", "play some jazz" };
    static const char *const seconds[] = { "and lock the doors", "set the temperature to 22", "louder" };
    session *slot[3] = { first, sib[0], sib[1] };
    const int nv = session_n_vocab(alone);
    for (int round = 0; round < 2; round++) {   // the second with the conversations in other slots
        slot_run r[3];
        pthread_t t[3];
        for (int i = 0; i < 3; i++) {
            int c = (i + round) % 3;
            r[i] = (slot_run){ .s = slot[i], .first = firsts[c], .second = seconds[c] };
            pthread_create(&t[i], NULL, slot_thread, &r[i]);
        }
        for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
        for (int i = 0; i < 3; i++) {
            CHECK(r[i].rc == 0, "slot %d: %s", i, r[i].err.msg);
            strbuf want = { 0 };
            session_reset(alone);
            CHECK(session_chat(alone, r[i].first, session_collect_text, &want, &err) == 0 &&
                  session_chat(alone, r[i].second, session_collect_text, &want, &err) == 0, "%s", err.msg);
            const int32_t *ha, *hs;
            int na = session_history(alone, &ha), ns = session_history(slot[i], &hs);
            CHECK(na == ns && memcmp(ha, hs, (size_t)na * sizeof *ha) == 0, "round %d slot %d (%s): the tokens alone (%d, %d)",
                  round, i, r[i].first, na, ns);
            CHECK(strcmp(strbuf_str(&want), strbuf_str(&r[i].reply)) == 0, "round %d slot %d: the reply alone: %s | %s", round, i,
                  strbuf_str(&want), strbuf_str(&r[i].reply));
            float d = max_abs_diff(session_last_logits(alone), session_last_logits(slot[i]), nv);
            CHECK(d < 1e-5f, "round %d slot %d: the logits alone (max difference %g)", round, i, (double)d);
            strbuf_free(&want);
            strbuf_free(&r[i].reply);
        }
    }
    // decode steps lined up at the gate run in one pass, each with the logits it has alone
    lineup_case(alone, slot, nv);
    // a slot's rows are taken again, until a precision switch on the first
    session_stats st;
    for (int sw = 0; sw < 2; sw++) {
        session_reset(sib[1]);
        CHECK(session_add_turn(sib[1], "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
        if (sw) {
            precision_plan p;
            session_get_plan(first, &p);
            CHECK(session_set_plan(first, &p, &err) == 0, "%s", err.msg);
        }
        session_restart(sib[1]);
        CHECK(session_add_turn(sib[1], "call mom", "<act>none</act> Calling.", &err) == 0, "%s", err.msg);
        session_get_stats(sib[1], &st);
        CHECK(sw ? st.cached_tokens == 0 : st.cached_tokens > 5, "%s: a slot takes %d tokens from its cache",
              sw ? "after a switch on the first" : "without a switch", st.cached_tokens);
    }
    session_close(sib[1]);
    session_close(sib[0]);
    session_close(first);
    session_close(alone);
}

int main(void) {
    stop_filter_cases();
    request_cases();
    utf8_cases();
    tool_cases();
    add_turn_case();
    prompt_cache_case();
    slots_case();
    lineup_file_case("../shared/ref/models/llama-spm-d256-Q4_K_M.gguf", "auto");
    lineup_file_case("../shared/ref/models/llama-spm-d256-Q4_K_M.gguf", "avx2");
    lineup_file_case("../shared/ref/models/llama-spm-d64-Q8_0.gguf", "avx2");
    if (t_skipped) printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
    else printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed ? 1 : 0;
}
