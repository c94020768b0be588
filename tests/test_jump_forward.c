// Jump-forward (engine/session.c): tokens a filter forces are fed with the token before them in
// one forward pass, and the text must be the one plain decoding (a token per pass) gives. Checked
// on a model with the embedded model's vocabulary and random weights, sampled at temperature 1
// (the sampler's random stream must stay in step), with a JSON schema's filter and with a filter
// that forces set runs: runs that reach the reply's token limit, end in an end-of-generation
// token, and a callback that stops in the middle of a run.
#include "test.h"
#include "tests/rng.h"
#include "engine/json_schema.h"
#include "tests/random_vocab_model.h"
#include "engine/session.h"
#include "engine/tokenizer.h"

#include <math.h>
#include <unistd.h>

// A filter that forces `len` tokens after every `every`-th sampled token: ids from `run`, and
// (when eog_after > 0) an end-of-generation token once eog_after tokens were accepted.
typedef struct run_filter {
    int32_t run[4];
    int len, every, eog_after;
    int32_t eog;
    int accepted, sampled, left;   // tokens accepted; sampled ones; of the current run, still to force
    int n_vocab;
} run_filter;

static int32_t run_forced(void *ud) {
    run_filter *f = ud;
    if (f->eog_after > 0 && f->accepted >= f->eog_after) return f->eog;
    return f->left > 0 ? f->run[f->len - f->left] : -1;
}

static void run_mask(void *ud, float *logits, int n_vocab) {
    run_filter *f = ud;
    int32_t only = run_forced(f);
    if (only < 0) return;
    for (int i = 0; i < n_vocab; i++)
        if (i != only) logits[i] = -INFINITY;
}

static void run_accept(void *ud, int32_t token, const char *piece, int len) {
    (void)token, (void)piece, (void)len;
    run_filter *f = ud;
    f->accepted++;
    if (f->left > 0) { f->left--; return; }
    if (++f->sampled % f->every == 0) f->left = f->len;
}

typedef struct stop_at { strbuf *text; int n, stop_after; } stop_at;

static bool collect_and_stop(void *ud, int32_t token, const char *piece, int len) {
    stop_at *s = ud;
    session_collect_text(s->text, token, piece, len);
    return ++s->n < s->stop_after;
}

// One reply of each session with a fresh copy of the filter; their texts must agree.
static void same_reply(session *jump, session *plain, const run_filter *proto, int stop_after, const char *what) {
    strbuf a = { 0 }, b = { 0 };
    errbuf err = { { 0 } };
    session *ss[2] = { jump, plain };
    strbuf *out[2] = { &a, &b };
    session_stats st[2];
    for (int k = 0; k < 2; k++) {
        run_filter f = *proto;
        token_filter tf = { run_mask, run_accept, &f, run_forced };
        session_reset(ss[k]);
        session_set_filter(ss[k], &tf);
        stop_at s = { out[k], 0, stop_after };
        CHECK(session_complete(ss[k], "hello there", 40, collect_and_stop, &s, &err) == 0, "%s: %s", what, err.msg);
        session_set_filter(ss[k], NULL);
        session_get_stats(ss[k], &st[k]);
    }
    CHECK(strcmp(strbuf_str(&a), strbuf_str(&b)) == 0, "%s: '%s' with jump-forward, '%s' without", what,
          strbuf_str(&a), strbuf_str(&b));
    CHECK(st[0].gen_tokens == st[1].gen_tokens && st[0].n_past == st[1].n_past,
          "%s: %d tokens and %d in the cache with jump-forward, %d and %d without", what, st[0].gen_tokens,
          st[0].n_past, st[1].gen_tokens, st[1].n_past);
    CHECK(st[0].forced_tokens > 0 && st[0].decode_passes < st[1].decode_passes,
          "%s: %d forced, %d passes against %d", what, st[0].forced_tokens, st[0].decode_passes, st[1].decode_passes);
    strbuf_free(&a);
    strbuf_free(&b);
}

static void json_replies(session *jump, session *plain) {
    static const char *schema_text =
        "{\"type\": \"object\", \"properties\": {\"temperature\": {\"type\": \"integer\"}, "
        "\"zone\": {\"enum\": [\"driver\", \"passenger\", \"rear\"]}, \"recirculate\": {\"type\": \"boolean\"}}, "
        "\"required\": [\"temperature\", \"zone\", \"recirculate\"], \"additionalProperties\": false}";
    errbuf err = { { 0 } };
    json_schema *schema = json_schema_compile(schema_text, &err);
    CHECK(schema != NULL, "compile: %s", err.msg);
    json_vocab *v[2] = { json_vocab_new(jump), json_vocab_new(plain) };
    session *ss[2] = { jump, plain };
    long forced = 0, passes[2] = { 0, 0 };
    int complete = 0;
    for (int r = 0; r < 12 && schema; r++) {
        strbuf text[2] = { { 0 }, { 0 } };
        for (int k = 0; k < 2; k++) {
            json_filter *jf = json_filter_new(schema, v[k]);
            token_filter tf = json_filter_token_filter(jf);
            session_reset(ss[k]);
            session_set_seed(ss[k], 1000 + (uint64_t)r);
            session_set_filter(ss[k], &tf);
            CHECK(session_complete(ss[k], "the climate as JSON:", 96, session_collect_text, &text[k], &err) == 0,
                  "json: %s", err.msg);
            session_set_filter(ss[k], NULL);
            session_stats st;
            session_get_stats(ss[k], &st);
            passes[k] += st.decode_passes;
            if (k == 0) { forced += st.forced_tokens; complete += json_filter_complete(jf); }
            json_filter_free(jf);
        }
        CHECK(strcmp(strbuf_str(&text[0]), strbuf_str(&text[1])) == 0, "json reply %d: '%s' with jump-forward, '%s' without",
              r, strbuf_str(&text[0]), strbuf_str(&text[1]));
        strbuf_free(&text[0]);
        strbuf_free(&text[1]);
    }
    CHECK(forced > 0 && passes[0] == passes[1] - forced, "json: %ld forced, %ld passes against %ld", forced, passes[0], passes[1]);
    printf("JSON schema: %d of 12 values complete, %ld tokens forced, %ld forward passes against %ld, the same text\n",
           complete, forced, passes[0], passes[1]);
    json_vocab_free(v[0]);
    json_vocab_free(v[1]);
    json_schema_free(schema);
}

int main(void) {
    if (access(RANDOM_VOCAB_FROM, R_OK) != 0) {
        SKIP("%s is not there (its vocabulary is needed)", RANDOM_VOCAB_FROM);
        return test_finish();
    }
    char path[] = "/tmp/cabin-test-jump-XXXXXX";
    uint64_t seed = test_seed();
    errbuf err = { { 0 } };
    session_opts so;
    CHECK(random_vocab_model(path, 2, 256, seed, &so, &err) == 0, "random model: %s", err.msg);
    if (err.msg[0]) return test_finish();
    session *jump = session_open(&so, &err);
    so.no_jump_forward = true;
    session *plain = jump ? session_open(&so, &err) : NULL;
    CHECK(jump && plain, "session_open: %s", err.msg);
    if (jump && plain) {
        const tokenizer *tok = session_model(jump)->tok;
        int32_t eog = -1;
        for (int i = 0; i < session_n_vocab(jump) && eog < 0; i++)
            if (tokenizer_is_eog(tok, i)) eog = i;
        run_filter f = { .run = { 300, 301, 302, 303 }, .len = 4, .every = 3, .eog = eog, .n_vocab = session_n_vocab(jump) };
        same_reply(jump, plain, &f, 1000, "runs of 4 after every 3rd token, up to the 40-token limit");
        f.every = 5;
        f.len = 3;
        same_reply(jump, plain, &f, 1000, "runs of 3 after every 5th token");
        same_reply(jump, plain, &f, 11, "a callback that stops inside a run");
        f.eog_after = 9;
        same_reply(jump, plain, &f, 1000, "an end-of-generation token forced after 9 tokens");
        json_replies(jump, plain);
    }
    session_close(jump);
    session_close(plain);
    unlink(path);
    return test_finish();
}
