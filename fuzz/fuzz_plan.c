// Precision plans: the input as plan JSON (plan_parse_json) and as shorthand
// (plan_parse_shorthand), each with and without a layer count; a plan that parses is written
// as JSON (plan_to_json) and must read back to the same plan.
#include "fuzz/fuzz.h"
#include "engine/precision.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

static void check_round_trip(const precision_plan *p, int n_layer) {
    char *js = plan_to_json(p);
    FUZZ_CHECK(js != NULL, "plan_to_json");
    precision_plan q;
    errbuf err = {{0}};
    FUZZ_CHECK(plan_parse_json(&q, js, "round trip", n_layer, &err) == 0, "%s: %s", js, err.msg);
    FUZZ_CHECK(q.default_type == p->default_type && q.token_embd_type == p->token_embd_type &&
               q.output_type == p->output_type && q.n_rules == p->n_rules, "%s reads back as another plan", js);
    for (int i = 0; i < p->n_rules; i++)
        FUZZ_CHECK(memcmp(&q.rules[i], &p->rules[i], sizeof q.rules[i]) == 0, "%s: rule %d differs", js, i);
    for (int l = 0; l < (n_layer ? n_layer : 4); l++)
        for (int k = 0; k < TK_COUNT; k++)
            FUZZ_CHECK(plan_type_for(&q, l, k) == plan_type_for(p, l, k), "%s: layer %d kind %d", js, l, k);
    free(js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    static const int layer_counts[] = { 0, 16 };
    for (int i = 0; i < 2; i++) {
        precision_plan p;
        errbuf err = {{0}};
        if (plan_parse_json(&p, text, "fuzz.json", layer_counts[i], &err) == 0) check_round_trip(&p, layer_counts[i]);
        else FUZZ_CHECK(err.msg[0] != 0, "a refused plan says why");
        memset(&err, 0, sizeof err);
        if (plan_parse_shorthand(&p, text, layer_counts[i], &err) == 0) check_round_trip(&p, layer_counts[i]);
        else FUZZ_CHECK(err.msg[0] != 0, "a refused shorthand says why");
    }
    free(text);
    return 0;
}
