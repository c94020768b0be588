// The engine against ../shared/ref/models: the scalar path against the exact float64 logits,
// the fast path against the reference implementation's logits and greedy continuations.
#include "test.h"
#include "model_util.h"
#include "ref_util.h"
#include "engine/precision.h"
#include "engine/sampler.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <dirent.h>

static double type_tolerance(const model *m) { return ref_tolerance(m->layers[0].wq.type); }

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
            runner_open(&r, m, "auto", 2, KV_F16, n + 4, n, &err) ||
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
        if (runner_open(&r, m, "scalar", 2, KV_F32, n + ng + 4, n, &err)) { CHECK(0, "%s", err.msg); break; }
        if (model_forward(&r.fc, &r.kv, toks, n, false, logits, &err)) { CHECK(0, "%s", err.msg); runner_close(&r); break; }
        double scale, worst = ref_compare_top(cJSON_GetObjectItem(c, "exact_logits_at_top"), logits, &scale);
        CHECK(worst <= 1e-3 * scale, "%s case %d: scalar vs exact: max diff %.5f > %.5f", json_name,
              case_no, worst, 1e-3 * scale);
        runner_close(&r);
        // 2. fast path, F16 KV (what cabin logits runs): against the reference top logits
        if (runner_open(&r, m, "auto", 2, KV_F16, n + ng + 4, n, &err)) { CHECK(0, "%s", err.msg); break; }
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
        CHECK(worst <= tol * scale, "%s case %d: fast vs reference: max diff %.5f > %.5f", json_name,
              case_no, worst, tol * scale);
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
    char mdir[1024];
    snprintf(mdir, sizeof mdir, "%s/models", dir);
    DIR *d = opendir(mdir);
    if (!d) { SKIP("%s: cannot open", mdir); return test_finish(); }
    struct dirent *e;
    char *names[64];
    int n = 0;
    while ((e = readdir(d)) && n < 64)
        if (strstr(e->d_name, ".json")) names[n++] = xstrdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) {
        check_model(dir, names[i]);
        free(names[i]);
    }
    return test_finish();
}
