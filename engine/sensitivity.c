// Per-tensor quantization sensitivity and the plan derived from it (engine/sensitivity.h).
#include "sensitivity.h"
#include "engine/json_text.h"
#include "wtype.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sensitivity_map_init(sensitivity_map *m, int n_layer, uint32_t type) {
    memset(m, 0, sizeof *m);
    m->n_layer = n_layer;
    m->type = type;
    m->cells = xcalloc((size_t)(n_layer > 0 ? n_layer : 1) * TK_LAYER_KINDS, sizeof(sens_cell));
}

void sensitivity_map_free(sensitivity_map *m) {
    free(m->cells);
    memset(m, 0, sizeof *m);
}

int sensitivity_run(session *s, const int32_t *ids, int n, int ctx, int max_chunks,
                    sens_progress_fn progress, void *ud, sensitivity_map *m, errbuf *err) {
    model *mdl = (model *)session_model(s);
    if (m->n_layer != mdl->hp.n_layer)
        return err_set(err, "sensitivity map has %d layers, the model %d", m->n_layer, mdl->hp.n_layer);
    const wtype_info *ti = wtype_get(m->type);
    if (!ti || !ti->from_f32) return err_set(err, "cabin cannot produce weights of type %s", wtype_name(m->type));
    precision_plan saved, file_plan;
    session_get_plan(s, &saved);
    // Measured against the file's own precision whatever plan is in force: with a base run at
    // another plan (every tensor at q4_0, say) each cell would compare two different models and
    // every KL would come out the same meaningless figure. The plan in force comes back at the end.
    plan_init(&file_plan);
    if (session_set_plan(s, &file_plan, err)) return err_prefix(err, "the file's precision for the base run");
    quality_base base = {0};
    quality_result qr = {0};
    quality_opts qo = { .ctx = ctx, .max_chunks = max_chunks, .save = &base };
    int total = m->n_layer * TK_LAYER_KINDS, done = 0, rc = 0;
    if (quality_eval(s, ids, n, &qo, &qr, err)) { rc = err_prefix(err, "base run"); goto out; }
    m->base_nll = qr.mean_nll;
    m->scored = qr.scored;
    for (int l = 0; l < m->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            sens_cell *c = sens_at(m, l, k);
            tensor *t = model_tensor_by_kind(mdl, l, k);
            c->n_weights = (uint64_t)t->ne0 * (uint64_t)t->ne1;
            c->file_type = t->src_type;
        }
    if (progress && !progress(ud, 0, total, -1, -1, NULL)) goto out;
    for (int l = 0; l < m->n_layer && !rc; l++) {
        for (int k = 0; k < TK_LAYER_KINDS && !rc; k++) {
            sens_cell *c = sens_at(m, l, k);
            if (!c->done) {
                precision_plan p;
                plan_init(&p);
                p.n_rules = 1;
                p.rules[0] = (plan_rule){ .layer_lo = l, .layer_hi = l, .kinds = 1u << k, .type = m->type };
                if (session_set_plan(s, &p, err)) {
                    rc = err_prefix(err, "layer %d %s", l, tensor_kind_name(k));
                    break;
                }
                quality_result r = {0};
                quality_opts q2 = { .ctx = ctx, .max_chunks = max_chunks, .cmp = &base };
                if (quality_eval(s, ids, n, &q2, &r, err)) {
                    rc = err_prefix(err, "layer %d %s", l, tensor_kind_name(k));
                    break;
                }
                c->kl_mean = r.kl_mean;
                c->kl_max = r.kl_max;
                c->top1 = r.top1;
                c->dnll = r.mean_nll - m->base_nll;
                c->done = true;
            }
            done++;
            if (progress && !progress(ud, done, total, l, k, c)) goto out;
        }
    }
out:
    quality_base_free(&base);
    errbuf e2;
    if (session_set_plan(s, &saved, &e2) && !rc) rc = err_set(err, "restoring the plan: %s", e2.msg);
    return rc;
}

// One candidate for an upgrade.
typedef struct cand { int layer, kind; double gain; } cand;

static int cmp_cand(const void *a, const void *b) {
    double x = ((const cand *)a)->gain, y = ((const cand *)b)->gain;
    return x < y ? 1 : x > y ? -1 : 0;
}

int sensitivity_plan(const sensitivity_map *m, uint32_t high_type, double budget_bpw,
                     precision_plan *out, double *bpw, int *kept, errbuf *err) {
    double lo_bits = wtype_bpw(m->type), hi_bits = wtype_bpw(high_type);
    if (!(hi_bits > lo_bits)) return err_set(err, "plan: %s is not above %s", wtype_name(high_type), wtype_name(m->type));
    double n_all = 0;
    int nc = m->n_layer * TK_LAYER_KINDS;
    for (int i = 0; i < nc; i++) {
        if (!m->cells[i].done) return err_set(err, "plan: the sensitivity map is incomplete");
        n_all += (double)m->cells[i].n_weights;
    }
    if (n_all <= 0) return err_set(err, "plan: no weights");
    if (lo_bits > budget_bpw + 1e-9)
        return err_set(err, "plan: budget %.3f bits/weight is below %s alone (%.3f)", budget_bpw,
                       wtype_name(m->type), lo_bits);
    // greedy: most KL removed per extra bit first; skip what does not fit, keep trying smaller
    cand *c = xmalloc((size_t)nc * sizeof *c);
    for (int i = 0; i < nc; i++) {
        double extra = (double)m->cells[i].n_weights * (hi_bits - lo_bits);
        c[i] = (cand){ i / TK_LAYER_KINDS, i % TK_LAYER_KINDS, extra > 0 ? m->cells[i].kl_mean / extra : 0 };
    }
    qsort(c, (size_t)nc, sizeof *c, cmp_cand);
    uint32_t *mask = xcalloc((size_t)m->n_layer, sizeof *mask);
    double bits = lo_bits * n_all;
    int n_kept = 0;
    for (int i = 0; i < nc; i++) {
        double add = (double)sens_at(m, c[i].layer, c[i].kind)->n_weights * (hi_bits - lo_bits);
        if ((bits + add) / n_all > budget_bpw + 1e-9) continue;
        bits += add;
        mask[c[i].layer] |= 1u << c[i].kind;
        n_kept++;
    }
    free(c);
    plan_init(out);
    out->default_type = m->type;
    int rc = plan_add_layer_masks(out, mask, m->n_layer, high_type, err);
    free(mask);
    if (rc) return rc;
    if (bpw) *bpw = bits / n_all;
    if (kept) *kept = n_kept;
    return 0;
}

char *sensitivity_to_json(const sensitivity_map *m) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "type", wtype_name(m->type));
    cJSON_AddNumberToObject(root, "base_nll", m->base_nll);
    cJSON_AddNumberToObject(root, "scored", (double)m->scored);
    cJSON_AddNumberToObject(root, "layers", m->n_layer);
    cJSON *kinds = cJSON_AddArrayToObject(root, "kinds");
    for (int k = 0; k < TK_LAYER_KINDS; k++) cJSON_AddItemToArray(kinds, cJSON_CreateString(tensor_kind_name(k)));
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (int l = 0; l < m->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            if (!c->done) continue;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "layer", l);
            cJSON_AddStringToObject(o, "kind", tensor_kind_name(k));
            cJSON_AddNumberToObject(o, "kl_mean", c->kl_mean);
            cJSON_AddNumberToObject(o, "kl_max", c->kl_max);
            cJSON_AddNumberToObject(o, "dnll", c->dnll);
            cJSON_AddNumberToObject(o, "top1", c->top1);
            cJSON_AddNumberToObject(o, "n_weights", (double)c->n_weights);
            cJSON_AddStringToObject(o, "file_type", wtype_name(c->file_type));
            cJSON_AddItemToArray(cells, o);
        }
    return json_text(root, false);   // callers free() it
}

static double num(const cJSON *o, const char *key, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

// A count or index field: dflt when absent; false when it lies outside [lo, hi] (or is NaN),
// where converting it to the integer it is stored in would be undefined (the bounds: powers of
// two within long and uint64_t, exact in a double).
static bool num_within(const cJSON *o, const char *key, double dflt, double lo, double hi, double *out) {
    *out = num(o, key, dflt);
    return *out >= lo && *out <= hi;
}

int sensitivity_from_json(sensitivity_map *m, const char *json, errbuf *err) {
    const char *at = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &at, true);   // text after the object is an error too
    if (!root) return err_set(err, "sensitivity map: not JSON (near offset %ld)", at ? (long)(at - json) : -1L);
    int rc = 0;
    double v = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
    if (!cJSON_IsString(type) || wtype_from_name(type->valuestring) != (int)m->type)
        rc = err_set(err, "sensitivity map: type is not %s", wtype_name(m->type));
    else if (!num_within(root, "layers", -1, -1, INT_MAX, &v) || (int)v != m->n_layer || !cJSON_IsArray(cells))
        rc = err_set(err, "sensitivity map: not for a model of %d layers", m->n_layer);
    else if (!num_within(root, "scored", 0, 0, 0x1p62, &v))
        rc = err_set(err, "sensitivity map: scored: %g is not a token count", v);
    if (!rc) {
        m->base_nll = num(root, "base_nll", 0);
        m->scored = (long)v;
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, cells) {
            int l = num_within(c, "layer", -1, -1, INT_MAX, &v) ? (int)v : -1;
            const cJSON *kn = cJSON_GetObjectItemCaseSensitive(c, "kind");
            int k = cJSON_IsString(kn) ? tensor_kind_from_name(kn->valuestring) : -1;
            if (l < 0 || l >= m->n_layer || k < 0 || k >= TK_LAYER_KINDS) {
                rc = err_set(err, "sensitivity map: cells[%d]: bad layer or kind", i);
                break;
            }
            if (!num_within(c, "n_weights", 0, 0, 0x1p63, &v)) {
                rc = err_set(err, "sensitivity map: cells[%d]: n_weights: %g is not a weight count", i, v);
                break;
            }
            sens_cell *s = sens_at(m, l, k);
            s->kl_mean = num(c, "kl_mean", 0);
            s->kl_max = num(c, "kl_max", 0);
            s->dnll = num(c, "dnll", 0);
            s->top1 = num(c, "top1", 0);
            s->n_weights = (uint64_t)v;
            const cJSON *ft = cJSON_GetObjectItemCaseSensitive(c, "file_type");
            int t = cJSON_IsString(ft) ? wtype_from_name(ft->valuestring) : -1;
            s->file_type = t >= 0 ? (uint32_t)t : WT_F32;
            s->done = true;
            i++;
        }
    }
    cJSON_Delete(root);
    return rc;
}
