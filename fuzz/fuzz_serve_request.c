// cabin serve's request decoder: the input as a chat and as a completion request body
// (serve_request_parse); a response_format's schema compiled (engine/json_schema.h) and the last
// message's text matched against it. What it accepts must hold together (a chat's last message is a user's or
// a tool's, every stop sequence 1..SERVE_MAX_STOP_BYTES bytes, numbers in their ranges), and the
// stop filter, fed the prompt in pieces whose sizes come from the input, must pass on exactly
// the prompt up to the stop sequence that is complete first, whatever the pieces.
#include "fuzz/fuzz.h"
#include "engine/json_schema.h"
#include "serve/serve.h"

#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

typedef struct sink { char *s; size_t n; } sink;

static void collect(void *ud, const char *s, size_t n) {
    sink *k = ud;
    char *p = realloc(k->s, k->n + n + 1);
    if (!p) abort();
    k->s = p;
    memcpy(k->s + k->n, s, n);
    k->n += n;
}

static void check_stop_filter(const serve_request *r, const uint8_t *data, size_t size) {
    const char *text = r->prompt;
    // the stream ends where the stop sequence that is complete first begins
    size_t len = strlen(text), want = len, end = SIZE_MAX;
    for (int i = 0; i < r->n_stop; i++) {
        const char *at = strstr(text, r->stop[i]);
        if (!at) continue;
        size_t s = (size_t)(at - text), e = s + strlen(r->stop[i]);
        if (e < end || (e == end && s < want)) end = e, want = s;
    }
    stop_filter f;
    stop_filter_init(&f, r->stop, r->n_stop);
    sink k = { 0 };
    size_t at = 0, i = 0;
    bool going = true;
    while (at < len && going) {
        size_t piece = size ? 1 + data[i++ % size] % 7 : 1;
        if (piece > len - at) piece = len - at;
        going = stop_filter_feed(&f, text + at, piece, collect, &k);
        at += piece;
    }
    if (going) stop_filter_flush(&f, collect, &k);
    FUZZ_CHECK(k.n == want && (want == 0 || memcmp(k.s, text, want) == 0), "stop filter passed %zu bytes, wanted %zu", k.n, want);
    FUZZ_CHECK(going == (want == len), "the filter %s", going ? "missed a stop sequence" : "stopped without one");
    free(k.s);
    stop_filter_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int kind = SERVE_CHAT; kind <= SERVE_COMPLETION; kind++) {
        serve_request r;
        errbuf err = { { 0 } };
        if (serve_request_parse((const char *)data, size, (serve_kind)kind, &r, &err) == 0) {
            FUZZ_CHECK(r.n_stop >= 0 && r.n_stop <= SERVE_MAX_STOP, "%d stop sequences", r.n_stop);
            for (int i = 0; i < r.n_stop; i++) {
                size_t n = strlen(r.stop[i]);
                FUZZ_CHECK(n >= 1 && n <= SERVE_MAX_STOP_BYTES, "a stop sequence of %zu bytes", n);
            }
            FUZZ_CHECK(r.max_tokens >= 0 && (!r.has_temperature || (r.temperature >= 0 && r.temperature <= 2)), "ranges");
            if (kind == SERVE_CHAT && r.format != SERVE_FORMAT_TEXT) {   // the schema compiles or says why;
                errbuf serr = { { 0 } };                                    // a message is matched against it
                json_schema *js = json_schema_compile(r.format == SERVE_FORMAT_SCHEMA ? r.json_schema : NULL, &serr);
                FUZZ_CHECK(js || serr.msg[0], "a schema refused without a reason");
                if (js) {
                    json_match m;
                    json_match_init(&m, js);
                    const char *t = r.msgs[r.n_msgs - 1].content ? r.msgs[r.n_msgs - 1].content : "";
                    for (size_t i = 0; t[i] && json_match_feed(&m, t + i, 1); i++) {}
                    json_schema_free(js);
                }
            }
            if (kind == SERVE_CHAT && r.tools_json) {   // the client's tools as a tool-call schema
                errbuf terr = { { 0 } };
                json_schema *ts = json_schema_compile_tools(r.tools_json, r.tool_choice_name, &terr);
                FUZZ_CHECK(ts || terr.msg[0], "tools refused without a reason");
                json_schema_free(ts);
            }
            if (kind == SERVE_CHAT) {
                FUZZ_CHECK(r.n_msgs > 0, "a chat without messages");
                const char *last = r.msgs[r.n_msgs - 1].role;
                FUZZ_CHECK(strcmp(last, "user") == 0 || strcmp(last, "tool") == 0, "last message %s", last);
                for (int i = 0; i < r.n_msgs; i++) FUZZ_CHECK(r.msgs[i].role != NULL, "a message without a role");
            } else {
                FUZZ_CHECK(r.prompt != NULL, "a completion without a prompt");
                check_stop_filter(&r, data, size);
            }
        } else {
            FUZZ_CHECK(err.msg[0] != 0, "a refusal without a reason");
        }
        serve_request_free(&r);
    }
    return 0;
}
