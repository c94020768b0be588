// Precision plans: parsing (JSON and shorthand) with errors that name the JSON path; applying a
// plan; switching precision in the middle of a generation keeps the cache and gives exactly the
// logits of a model loaded at that precision with the same cache contents.
#include "test.h"
#include "model_util.h"
#include "engine/modelgen.h"
#include "engine/precision.h"
#include "engine/session.h"
#include "engine/wtype.h"

#include <unistd.h>

static void test_parse(void) {
    precision_plan p;
    errbuf err = {{0}};
    CHECK(plan_parse_shorthand(&p, "q4_0", 16, &err) == 0 && p.default_type == WT_Q4_0 && p.n_rules == 0, "default: %s", err.msg);
    CHECK(plan_type_for(&p, 3, TK_FFN_UP) == WT_Q4_0, "default applies to layer matrices");
    CHECK(plan_type_for(&p, 3, TK_OUTPUT) == PLAN_KEEP, "output kept unless told");
    CHECK(plan_parse_shorthand(&p, "q4_0;q8_0:layers=0-3,ffn_down,attn_v;output=q8_0", 16, &err) == 0, "%s", err.msg);
    CHECK(plan_type_for(&p, 2, TK_FFN_DOWN) == WT_Q8_0 && plan_type_for(&p, 2, TK_ATTN_V) == WT_Q8_0, "rule applies");
    CHECK(plan_type_for(&p, 4, TK_FFN_DOWN) == WT_Q4_0 && plan_type_for(&p, 2, TK_ATTN_Q) == WT_Q4_0, "rule bounded");
    CHECK(plan_type_for(&p, 0, TK_OUTPUT) == WT_Q8_0, "output set");
    // JSON round trip
    char *json = plan_to_json(&p);
    precision_plan q;
    CHECK(plan_parse_json(&q, json, "round trip", 16, &err) == 0, "%s", err.msg);
    int same = 1;
    for (int l = 0; l < 16; l++)
        for (int k = 0; k < TK_COUNT; k++) same &= plan_type_for(&p, l, k) == plan_type_for(&q, l, k);
    CHECK(same, "JSON round trip keeps every (layer, kind):\n%s", json);
    free(json);
    CHECK(plan_parse_json(&q, "{\"default\": \"f16\", \"rules\": [{\"layers\": 5, \"tensors\": \"all\", \"type\": \"q4_0\"}]}",
                          "p.json", 16, &err) == 0 && plan_type_for(&q, 5, TK_ATTN_Q) == WT_Q4_0 &&
          plan_type_for(&q, 6, TK_ATTN_Q) == WT_F16, "numeric layer and all tensors: %s", err.msg);
    // bad plans: one line naming the JSON path, and the output untouched
    struct { const char *json, *want; } bad[] = {
        { "{\"rules\": [{\"layers\": \"0-3\", \"tensors\": [\"attn_q\", \"ffn_middle\"], \"type\": \"q8_0\"}]}", "rules[0].tensors[1]" },
        { "{\"rules\": [{\"layers\": \"0-3\", \"type\": \"q8_0\"}, {\"layers\": \"3-5\", \"tensors\": [\"ffn_up\"], \"type\": \"q4_0\"}]}", "overlaps rule 0" },
        { "{\"rules\": [{\"layers\": \"0-40\", \"type\": \"q8_0\"}]}", "out of range" },
        { "{\"default\": \"q8_k\"}", "default" },   // Q8_K: a layout cabin knows but never produces
        { "{\"default\": \"q4_0\", \"colour\": 1}", "colour" },
        { "{\"rules\": [{\"layers\": \"5-2\", \"type\": \"q8_0\"}]}", "empty" },
        { "{\"rules\": [{\"layers\": \"all\"}]}", "no \"type\"" },
        { "{\"rules\": [{\"layers\": \"all\", \"tensors\": \"output\", \"type\": \"q8_0\"}]}", "not per layer" },
        { "[1, 2]", "object" },
        { "{\"default\": ", "not valid JSON" },
        { "{\"default\": \"q4_0\"} {\"default\": \"q8_0\"}", "not valid JSON (near offset 20)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        precision_plan keep;
        plan_parse_shorthand(&keep, "q8_0", 16, &err);
        precision_plan before = keep;
        int rc = plan_parse_json(&keep, bad[i].json, "plan.json", 16, &err);
        CHECK(rc == -1 && strstr(err.msg, bad[i].want) && strstr(err.msg, "plan.json") && !strchr(err.msg, '\n'),
              "bad plan %zu: '%s' should mention '%s'", i, err.msg, bad[i].want);
        CHECK(memcmp(&keep, &before, sizeof keep) == 0, "bad plan %zu leaves the plan unchanged", i);
    }
    CHECK(plan_parse_shorthand(&p, "q8_0:layers=0-3,ffn_middle", 16, &err) == -1 && strstr(err.msg, "ffn_middle"), "%s", err.msg);
    CHECK(plan_parse_shorthand(&p, "q4_0;q8_0:layers=0-3;q4_0:layers=2", 16, &err) == -1 && strstr(err.msg, "overlaps"), "%s", err.msg);
    // save / load
    char path[] = "/tmp/cabin-plan-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    plan_parse_shorthand(&p, "bf16;q4_0:layers=1,ffn_gate", 4, &err);
    CHECK(plan_save(&p, path, &err) == 0, "%s", err.msg);
    CHECK(plan_load(&q, path, 4, &err) == 0 && plan_type_for(&q, 1, TK_FFN_GATE) == WT_Q4_0 &&
          plan_type_for(&q, 0, TK_FFN_GATE) == WT_BF16, "save/load: %s", err.msg);
    CHECK(plan_parse_any(&q, path, 4, &err) == 0, "parse_any reads a .json path");
    unlink(path);
}

// Runs one token through a runner and returns its logits.
static int step(runner *r, int32_t tok, float *logits, errbuf *err) {
    return model_forward(&r->fc, &r->kv, &tok, 1, false, logits, err);
}

static void test_switch(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/switch-f16.gguf", dir);
    modelgen_opts o = modelgen_defaults();
    o.type = o.embd_type = WT_F16;
    o.dim = 128; o.n_head = 4; o.n_kv_head = 2; o.ffn_dim = 256; o.n_layer = 3;
    errbuf err = {{0}};
    if (modelgen_write(&o, path, &err)) { CHECK(0, "%s", err.msg); return; }
    model *live, *fresh_q4, *fresh_q8;
    if (model_load(&live, path, &err) || model_load(&fresh_q4, path, &err) || model_load(&fresh_q8, path, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    precision_plan q4, q8;
    plan_parse_shorthand(&q4, "q4_0", 3, &err);
    plan_parse_shorthand(&q8, "q8_0", 3, &err);
    CHECK(model_apply_plan(fresh_q4, &q4, NULL, &err) == 0 && model_apply_plan(fresh_q8, &q8, NULL, &err) == 0, "%s", err.msg);
    uint64_t f16_bytes = live->weight_bytes;
    runner a, b;
    int nv = live->hp.n_vocab;
    float *la = xmalloc((size_t)nv * 4), *lb = xmalloc((size_t)nv * 4);
    if (runner_open(&a, live, "auto", 2, KV_F16, 64, 8, &err)) { CHECK(0, "%s", err.msg); return; }
    int32_t prompt[5] = { 1, 300, 301, 302, 303 };
    model_forward(&a.fc, &a.kv, prompt, 5, false, la, &err);
    int32_t tok = argmax_f32(la, nv);
    // phase 1 -> 2: F16 -> Q4_0, between two tokens
    CHECK(model_apply_plan(live, &q4, a.b, &err) == 0, "switch to q4_0: %s", err.msg);
    CHECK(live->weight_bytes < f16_bytes, "Q4_0 weights are smaller (%llu vs %llu)",
          (unsigned long long)live->weight_bytes, (unsigned long long)f16_bytes);
    CHECK(a.kv.n_used == 5, "the cache is kept across the switch");
    // a converted weight the backend packed is held once: the conversion's rows are let go (the
    // steps below multiply from the packed copy alone); the token embedding's rows stay, read a
    // row per token
    if (a.b->weight_holds_own && a.b->weight_holds_own(a.b, &live->layers[0].wq))
        CHECK(live->layers[0].wq.data == NULL && live->layers[0].wq.owned == NULL &&
              live->tok_embd.data != NULL && !a.b->weight_holds_own(a.b, &live->tok_embd) && a.b->own_weight_bytes > 0,
              "a packed conversion is held once; the untied embedding, never multiplied, is not packed");
    else
        SKIP("test_switch: %s packs no Q4_0 weight: nothing is held twice to let go", a.b->description);
    if (runner_open(&b, fresh_q4, "auto", 2, KV_F16, 64, 8, &err) || kv_cache_copy(&b.kv, &a.kv, &err)) { CHECK(0, "%s", err.msg); return; }
    for (int i = 0; i < 4; i++) {
        step(&a, tok, la, &err);
        step(&b, tok, lb, &err);
        CHECK(memcmp(la, lb, (size_t)nv * 4) == 0, "Q4_0 phase step %d: logits equal a fresh Q4_0 model on the same cache", i);
        tok = argmax_f32(la, nv);
    }
    runner_close(&b);
    // phase 2 -> 3: Q4_0 -> Q8_0
    CHECK(model_apply_plan(live, &q8, a.b, &err) == 0, "switch to q8_0: %s", err.msg);
    if (runner_open(&b, fresh_q8, "auto", 2, KV_F16, 64, 8, &err) || kv_cache_copy(&b.kv, &a.kv, &err)) { CHECK(0, "%s", err.msg); return; }
    for (int i = 0; i < 4; i++) {
        step(&a, tok, la, &err);
        step(&b, tok, lb, &err);
        CHECK(memcmp(la, lb, (size_t)nv * 4) == 0, "Q8_0 phase step %d: logits equal a fresh Q8_0 model on the same cache", i);
        tok = argmax_f32(la, nv);
    }
    CHECK(a.kv.n_used == 13, "the conversation went on (%d tokens cached)", a.kv.n_used);
    // back to the file's own weights: the F16 data is the mapped file again
    precision_plan keep;
    plan_init(&keep);
    CHECK(model_apply_plan(live, &keep, a.b, &err) == 0 && live->weight_bytes == f16_bytes &&
          live->layers[0].wq.data == live->layers[0].wq.src_data, "back to the file's weights");
    runner_close(&a);
    runner_close(&b);
    free(la);
    free(lb);
    model_free(live);
    model_free(fresh_q4);
    model_free(fresh_q8);

    // the session: an asynchronous switch lands between two tokens; a bad plan changes nothing
    session_opts so = session_opts_default();
    so.model_path = path;
    so.backend.n_threads = 2;
    so.n_ctx = 128;
    session *s = session_open(&so, &err);
    if (!s) { CHECK(0, "%s", err.msg); return; }
    CHECK(session_request_plan(s, &q4, &err) == 0, "%s", err.msg);
    CHECK(session_wait_switch(s) == 1, "async switch swapped in");
    session_stats st;
    session_get_stats(s, &st);
    CHECK(st.switches == 1 && st.last_switch_tensors == 3 * 7 && st.bytes_by_type[WT_Q4_0] > 0,
          "stats: %d switches, %d tensors", st.switches, st.last_switch_tensors);
    precision_plan now;
    session_get_plan(s, &now);
    CHECK(now.default_type == WT_Q4_0, "the session reports its plan");
    precision_plan up;
    plan_parse_shorthand(&up, "f32", 3, &err);
    CHECK(session_set_plan(s, &up, &err) == 0, "%s", err.msg);
    session_get_stats(s, &st);
    CHECK(st.last_switch_upcast == 21, "upcast to f32 is reported as dequantized copies (%d)", st.last_switch_upcast);
    session_close(s);
    unlink(path);
}

int main(void) {
    char dir[] = "/tmp/cabin-test-precision-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_parse();
    test_switch(dir);
    rmdir(dir);
    return test_finish();
}
