// tests/forward64.h, the float64 forward pass, against ../shared/ref: on every record that has
// `exact_*` logits (the reference's own float64 pass over the same dequantized weights) the two
// must agree to 1e-4 of the largest logit; on the records without them (gemma3, phi3 longrope)
// it must come within the README's tolerance of the reference implementation's top logits,
// which checks its Gemma 3 and longrope arithmetic.
#include "test.h"
#include "forward64.h"
#include "ref_util.h"

#include <cjson/cJSON.h>

// The context the reference ran with is larger than a longrope file's original one (256).
#define F64_REF_CTX 512

// max |ours[id] - ref| over [[id, logit], ...]; *scale: the largest |ref logit|.
static double compare_pairs(const cJSON *pairs, const double *logits, int n_vocab, double *scale) {
    double worst = 0, big = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pairs) {
        int id = (int)cJSON_GetArrayItem(p, 0)->valuedouble;
        double v = cJSON_GetArrayItem(p, 1)->valuedouble;
        double d = id >= 0 && id < n_vocab ? fabs(logits[id] - v) : INFINITY;
        if (d > worst) worst = d;
        if (fabs(v) > big) big = fabs(v);
    }
    *scale = big;
    return worst;
}

// The weight type that sets a file's tolerance: its first layer's q projection, as the engine's
// test reads it.
static uint32_t q_type(const f64_model *m) {
    const f64_layer *L = &m->layers[0];
    return L->wq ? L->wq->type : L->wqkv->type;
}

static void check_record(const char *root, const char *json_name) {
    char path[1024];
    errbuf err = {{0}};
    cJSON *doc = ref_load_json(root, json_name, path, sizeof path, &err);
    if (!doc) { CHECK(0, "%s", err.msg); return; }
    f64_model m;
    if (forward64_open(&m, path, &err)) {
        CHECK(0, "%s", err.msg);
        cJSON_Delete(doc);
        return;
    }
    const cJSON *nv = cJSON_GetObjectItem(doc, "n_vocab");
    CHECK(cJSON_IsNumber(nv) && (int)nv->valuedouble == m.n_vocab, "%s: n_vocab %d, record %g", json_name,
          m.n_vocab, cJSON_IsNumber(nv) ? nv->valuedouble : -1.0);
    double *logits = xmalloc((size_t)m.n_vocab * sizeof(double));
    double worst_exact = 0, worst_exact_top = 0, worst_ref = 0;  // as fractions of the largest logit
    int n_exact = 0, n_ref = 0, case_no = 0;
    double tol_ref = ref_tolerance(q_type(&m));
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        case_no++;
        int32_t *toks;
        int n = ref_load_ids(cJSON_GetObjectItem(c, "tokens"), &toks);
        if (forward64_run(&m, toks, n, F64_REF_CTX, logits, &err)) {
            CHECK(0, "%s case %d: %s", json_name, case_no, err.msg);
            free(toks);
            break;
        }
        free(toks);
        const cJSON *exact = cJSON_GetObjectItem(c, "exact_logits_at_top");
        const cJSON *exact_top = cJSON_GetObjectItem(c, "exact_top_logits");
        double scale, worst;
        if (exact) {
            // both float64 over the same weights: only summation order and libm differ
            worst = compare_pairs(exact, logits, m.n_vocab, &scale);
            CHECK(worst <= 1e-4 * scale, "%s case %d: float64 vs exact_logits_at_top: max diff %.3g > %.3g",
                  json_name, case_no, worst, 1e-4 * scale);
            if (worst / scale > worst_exact) worst_exact = worst / scale;
            n_exact++;
            if (exact_top) {
                worst = compare_pairs(exact_top, logits, m.n_vocab, &scale);
                CHECK(worst <= 1e-4 * scale, "%s case %d: float64 vs exact_top_logits: max diff %.3g > %.3g",
                      json_name, case_no, worst, 1e-4 * scale);
                if (worst / scale > worst_exact_top) worst_exact_top = worst / scale;
            }
        }
        // always against the reference implementation's own logits, within its rounding
        worst = compare_pairs(cJSON_GetObjectItem(c, "top_logits"), logits, m.n_vocab, &scale);
        CHECK(worst <= tol_ref * scale, "%s case %d: float64 vs reference top_logits: max diff %.5f > %.5f",
              json_name, case_no, worst, tol_ref * scale);
        if (worst / scale > worst_ref) worst_ref = worst / scale;
        n_ref++;
    }
    if (n_exact)
        printf("note: %s: float64 vs exact over %d cases: worst %.3g (at top), %.3g (exact top-32) of the largest logit; "
               "vs reference top_logits %.3g (tolerance %.3g)\n",
               json_name, n_exact, worst_exact, worst_exact_top, worst_ref, tol_ref);
    else
        printf("note: %s: no exact logits in the record; float64 vs reference top_logits over %d cases: worst %.3g "
               "of the largest logit (tolerance %.3g)\n", json_name, n_ref, worst_ref, tol_ref);
    free(logits);
    forward64_close(&m);
    cJSON_Delete(doc);
}

// The one-call form gives the same logits as open + run, and refuses a vocabulary mismatch.
static void check_one_call(const char *root, const char *json_name) {
    char path[1024];
    errbuf err = {{0}};
    cJSON *doc = ref_load_json(root, json_name, path, sizeof path, &err);
    if (!doc) { CHECK(0, "%s", err.msg); return; }
    f64_model m;
    if (forward64_open(&m, path, &err)) { CHECK(0, "%s", err.msg); cJSON_Delete(doc); return; }
    int32_t *toks;
    int n = ref_load_ids(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "cases"), 0), "tokens"), &toks);
    double *a = xmalloc((size_t)m.n_vocab * sizeof(double)), *b = xmalloc((size_t)m.n_vocab * sizeof(double));
    int rc = forward64_run(&m, toks, n, F64_REF_CTX, a, &err);
    CHECK(rc == 0, "%s", err.msg);
    rc = forward64_last_logits(path, toks, n, F64_REF_CTX, b, m.n_vocab, &err);
    CHECK(rc == 0 && memcmp(a, b, (size_t)m.n_vocab * sizeof(double)) == 0, "%s: one call differs (%s)", json_name, err.msg);
    rc = forward64_last_logits(path, toks, n, F64_REF_CTX, b, m.n_vocab - 1, &err);
    CHECK(rc != 0 && strstr(err.msg, "vocabulary"), "%s: vocabulary mismatch not refused", json_name);
    int32_t bad = m.n_vocab;
    rc = forward64_run(&m, &bad, 1, F64_REF_CTX, a, &err);
    CHECK(rc != 0 && strstr(err.msg, "outside the vocabulary"), "%s: token out of range not refused", json_name);
    free(a);
    free(b);
    free(toks);
    forward64_close(&m);
    cJSON_Delete(doc);
}

int main(void) {
    const char *dir = test_ref_dir();
    if (!dir) {
        SKIP("../shared/ref not present");
        return test_finish();
    }
    static ref_record recs[REF_MAX_RECORDS];
    int n = ref_list_records(dir, recs, REF_MAX_RECORDS);
    CHECK(n > 0, "%s: no reference records", dir);
    for (int i = 0; i < n; i++) check_record(recs[i].root, recs[i].name);
    if (n > 0) check_one_call(recs[0].root, recs[0].name);
    return test_finish();
}
