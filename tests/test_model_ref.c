// The engine against ../shared/ref/models: the scalar path against the exact float64 logits,
// the fast path against the reference implementation's logits and greedy continuations.
#include "test.h"
#include "forward64.h"
#include "model_util.h"
#include "ref_util.h"
#include "engine/precision.h"
#include "engine/sampler.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <dirent.h>

static double type_tolerance(const model *m) { return ref_tolerance(m->layers[0].wq.type); }

// The context the runs here open: the reference ran every record with a context larger than the
// original context of its longrope file (256, ../shared/ref/README.md), and such a file chooses
// its factors by the run's context, not by the prompt's length.
#define REF_MIN_CTX 512
static int ref_ctx(int need) { return need > REF_MIN_CTX ? need : REF_MIN_CTX; }

// What cabin does not load yet, as the loader names it (up to the NULL; none at present). A
// reference file refused for one of these is skipped with the loader's line; refused for
// anything else, it is a failure.
static const char *const not_loadable_yet[] = {
    NULL,
};

static bool refused_as_not_yet(const char *msg) {
    for (size_t i = 0; not_loadable_yet[i]; i++)
        if (strstr(msg, not_loadable_yet[i])) return true;
    return false;
}

// Live switching from a file's own types: plans f16 and q8_0 convert every matrix from the
// file's weights (whatever their type) and stay within the reference tolerance of its top
// logits; back to keep, the logits are those of the file's weights again, bit for bit.
static void check_switch(model *m, const char *json_name, const int32_t *toks, int n, const cJSON *top,
                         double tol, const float *before) {
    static const char *const plans[] = { "f16", "q8_0", "keep" };
    int nv = m->hp.n_vocab;
    float *logits = xmalloc((size_t)nv * sizeof(float));
    errbuf err = {{0}};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        precision_plan p;
        plan_init(&p);
        runner r;
        if (plan_parse_any(&p, plans[i], m->hp.n_layer, &err) || model_apply_plan(m, &p, NULL, &err) ||
            runner_open(&r, m, "auto", 2, KV_F16, ref_ctx(n + 4), n, &err) ||
            model_forward(&r.fc, &r.kv, toks, n, false, logits, &err)) {
            CHECK(0, "%s: plan %s: %s", json_name, plans[i], err.msg);
            runner_close(&r);
            break;
        }
        runner_close(&r);
        if (strcmp(plans[i], "keep") == 0) {
            CHECK(memcmp(logits, before, (size_t)nv * sizeof(float)) == 0, "%s: back to the file's weights: logits differ", json_name);
        } else {
            double scale, worst = ref_compare_top(top, logits, &scale);
            CHECK(worst <= tol * scale, "%s: plan %s vs reference: max diff %.5f > %.5f", json_name, plans[i], worst, tol * scale);
        }
    }
    free(logits);
}

static void check_model(const char *dir, const char *json_name) {
    char path[1024];
    errbuf err = {{0}};
    cJSON *root = ref_load_json(dir, json_name, path, sizeof path, &err);
    if (!root) { CHECK(0, "%s", err.msg); return; }
    model *m = NULL;
    if (model_load(&m, path, &err)) {
        // Files in types or architectures cabin does not load yet: the loader must say so in one
        // line that names the file and what it lacks; anything else is a failure.
        bool not_yet = (strstr(err.msg, "not support") || strstr(err.msg, "unsupported")) && refused_as_not_yet(err.msg);
        CHECK(not_yet && strstr(err.msg, path) && !strchr(err.msg, '\n'), "%s", err.msg);
        if (not_yet) SKIP("%s: not loadable yet (%s)", json_name, err.msg);
        cJSON_Delete(root);
        return;
    }
    double tol = type_tolerance(m);
    int nv = m->hp.n_vocab;
    float *logits = xmalloc((size_t)nv * sizeof(float));
    cJSON *c;
    int case_no = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        case_no++;
        int32_t *toks, *greedy;
        int n = ref_load_ids(cJSON_GetObjectItem(c, "tokens"), &toks);
        int ng = ref_load_ids(cJSON_GetObjectItem(c, "greedy"), &greedy);
        cJSON *margins = cJSON_GetObjectItem(c, "greedy_margins");
        // 1. scalar reference path, F32 KV: against the exact float64 forward pass
        runner r;
        if (runner_open(&r, m, "scalar", 2, KV_F32, ref_ctx(n + ng + 4), n, &err)) { CHECK(0, "%s", err.msg); break; }
        if (model_forward(&r.fc, &r.kv, toks, n, false, logits, &err)) { CHECK(0, "%s", err.msg); runner_close(&r); break; }
        const cJSON *exact = cJSON_GetObjectItem(c, "exact_logits_at_top");
        double scale, worst;
        if (exact) {
            worst = ref_compare_top(exact, logits, &scale);
            CHECK(worst <= 1e-3 * scale, "%s case %d: scalar vs exact: max diff %.5f > %.5f", json_name,
                  case_no, worst, 1e-3 * scale);
        } else {
            if (case_no == 1) printf("note: %s: the record has no exact logits (the reference's only)\n", json_name);
            // ---- float64 forward (tests/forward64.h) where the record has no exact logits ----
            // The scalar path against an independent float64 pass over the same dequantized
            // weights, at the reference's top-32 ids, to the tolerance of the exact_* checks; the
            // same context as the runner, so a longrope file takes the same factors.
            double *f64 = xmalloc((size_t)nv * sizeof(double));
            if (forward64_last_logits(path, toks, n, ref_ctx(n + ng + 4), f64, nv, &err)) {
                CHECK(0, "%s case %d: float64 forward: %s", json_name, case_no, err.msg);
            } else {
                const cJSON *p;
                worst = 0, scale = 0;
                cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "top_logits")) {
                    int id = (int)cJSON_GetArrayItem(p, 0)->valuedouble;
                    double d = id >= 0 && id < nv ? fabs((double)logits[id] - f64[id]) : INFINITY;
                    if (d > worst) worst = d;
                    if (id >= 0 && id < nv && fabs(f64[id]) > scale) scale = fabs(f64[id]);
                }
                CHECK(worst <= 1e-3 * scale, "%s case %d: scalar vs float64 forward: max diff %.5f > %.5f",
                      json_name, case_no, worst, 1e-3 * scale);
                printf("note: %s case %d: scalar vs float64 forward: max diff %.2g (%.2g of the largest logit)\n",
                       json_name, case_no, worst, scale > 0 ? worst / scale : 0.0);
            }
            free(f64);
            // ---- end of the float64 forward block ----
        }
        runner_close(&r);
        float *scalar = xmalloc((size_t)nv * sizeof(float));   // kept for the check below
        memcpy(scalar, logits, (size_t)nv * sizeof(float));
        // 2. fast path, F16 KV (what cabin logits runs): against the reference top logits
        if (runner_open(&r, m, "auto", 2, KV_F16, ref_ctx(n + ng + 4), n, &err)) { CHECK(0, "%s", err.msg); break; }
        if (model_forward(&r.fc, &r.kv, toks, n, false, logits, &err)) { CHECK(0, "%s", err.msg); runner_close(&r); break; }
        cJSON *top = cJSON_GetObjectItem(c, "top_logits");
        // once per quantized file (the plans' rounding is within the quantized tolerance only)
        uint32_t st = m->layers[0].wq.src_type;
        if (case_no == 1 && st != WT_F32 && st != WT_F16 && st != WT_BF16) {
            float *before = xmalloc((size_t)nv * sizeof(float));
            memcpy(before, logits, (size_t)nv * sizeof(float));
            check_switch(m, json_name, toks, n, top, tol, before);
            free(before);
        }
        worst = ref_compare_top(top, logits, &scale);
        if (worst > tol * scale && !exact) {
            // A record without exact logits (its tolerance was not measured on it): the reference
            // rounds its activations as the fast path does, each its own way, and may itself lie
            // near the tolerance from the exact result. Then the fast path passes when it is within
            // the tolerance of the scalar path (checked above against a float64 pass) and that is
            // within the tolerance of the reference: both within it of the exact numbers.
            double to_scalar = 0, s2, scalar_to_ref = ref_compare_top(top, scalar, &s2);
            const cJSON *p;
            cJSON_ArrayForEach(p, top) {
                int id = (int)cJSON_GetArrayItem(p, 0)->valuedouble;
                to_scalar = fmax(to_scalar, fabs((double)logits[id] - scalar[id]));
            }
            CHECK(to_scalar <= tol * scale && scalar_to_ref <= tol * scale,
                  "%s case %d: fast vs reference: max diff %.5f > %.5f (fast vs scalar %.5f, scalar vs reference %.5f)",
                  json_name, case_no, worst, tol * scale, to_scalar, scalar_to_ref);
            printf("note: %s case %d: fast path %.5f from the reference (tolerance %.5f), %.5f from the scalar path, "
                   "which is %.5f from the reference\n", json_name, case_no, worst, tol * scale, to_scalar, scalar_to_ref);
        } else {
            CHECK(worst <= tol * scale, "%s case %d: fast vs reference: max diff %.5f > %.5f", json_name,
                  case_no, worst, tol * scale);
        }
        free(scalar);
        int ref_arg = (int)cJSON_GetArrayItem(cJSON_GetArrayItem(top, 0), 0)->valuedouble;
        double ref_margin = cJSON_GetArrayItem(margins, 0)->valuedouble;
        int ours = argmax_f32(logits, nv);
        CHECK(ours == ref_arg || ref_margin < 2 * tol * scale, "%s case %d: argmax %d, reference %d",
              json_name, case_no, ours, ref_arg);
        // 3. greedy continuation, up to the first step whose margin is below twice the tolerance
        int agreed = 0, compared = 0;
        for (int i = 0; i < ng; i++) {
            int tok = argmax_f32(logits, nv);
            double mg = cJSON_GetArrayItem(margins, i)->valuedouble;
            if (mg < 2 * tol * scale) break;
            compared++;
            if (tok != greedy[i]) {
                CHECK(0, "%s case %d: greedy step %d: got %d, reference %d (margin %.4f)", json_name,
                      case_no, i, tok, greedy[i], mg);
                break;
            }
            agreed++;
            if (model_forward(&r.fc, &r.kv, &greedy[i], 1, false, logits, &err)) { CHECK(0, "%s", err.msg); break; }
        }
        CHECK(agreed == compared, "%s case %d: greedy agreed %d of %d", json_name, case_no, agreed, compared);
        printf("note: %s case %d: greedy matches %d/%d steps (stopped at a small margin or the end)\n",
               json_name, case_no, agreed, ng);
        runner_close(&r);
        free(toks);
        free(greedy);
    }
    free(logits);
    model_free(m);
    cJSON_Delete(root);
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
    for (int i = 0; i < n; i++) check_model(recs[i].root, recs[i].name);
    return test_finish();
}
