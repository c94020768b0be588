// Precision plans on a loaded model: which tensor a (layer, kind) names, the type a plan gives
// it, and the switch staged (converted aside) then committed between two tokens.
#include "engine/model.h"
#include "engine/convert.h"
#include "engine/quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Converts a tensor's source weights to `type` into a new buffer (rows in parallel); NULL when
// there is no memory for it. The file's pages it read are dropped again: the conversion is all
// that is read from now on (the file's pages fault back should another switch read them).
static void *convert_from_source(const model *m, const tensor *t, uint32_t type, size_t *row_bytes_out) {
    size_t row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)t->ne0);
    uint8_t *dst = malloc_large(row_bytes * (size_t)t->ne1);
    if (!dst) return NULL;
    convert_rows(t->src_data, t->src_type, t->src_row_bytes, dst, type, row_bytes, t->ne0, t->ne1, 0);
    model_drop_file_pages(m, t->src_data, t->src_row_bytes * (size_t)t->ne1);
    *row_bytes_out = row_bytes;
    return dst;
}

tensor *model_tensor_by_kind(model *m, int layer, int kind) {
    if (kind == TK_TOKEN_EMBD) return &m->tok_embd;
    if (kind == TK_OUTPUT) return m->hp.tied_output ? &m->tok_embd : &m->output;
    if (layer < 0 || layer >= m->hp.n_layer) return NULL;
    layer_weights *L = &m->layers[layer];
    tensor *ts[TK_LAYER_KINDS] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
    return kind >= 0 && kind < TK_LAYER_KINDS ? ts[kind] : NULL;
}

// Whether (layer, kind) names a distinct tensor a plan governs: layer matrices with layer >= 0,
// token_embd/output with layer -1, and a tied model's output only through its token embedding.
static bool planned_slot(const model *m, int layer, int kind) {
    return (layer < 0) == (kind >= TK_LAYER_KINDS) && !(kind == TK_OUTPUT && m->hp.tied_output);
}

// The type a plan gives a tensor (the shared embedding of a tied model follows token_embd, or
// output when only that is set). A K-quant (or IQ4_XS) on rows that are not a multiple of its
// 256-weight block becomes its fallback, as in files (quant_fit_type: Q4_K -> Q5_0, ...).
static uint32_t planned_type(const model *m, const precision_plan *p, const tensor *t, int layer, int kind) {
    uint32_t want = plan_type_for(p, layer, kind);
    if (kind == TK_TOKEN_EMBD && m->hp.tied_output && want == PLAN_KEEP) want = p->output_type;
    if (want == PLAN_KEEP) return t->src_type;
    const uint32_t fit = quant_fit_type(want, t->ne0);
    return fit == UINT32_MAX ? want : fit;
}

int model_plan_stage(model *m, const precision_plan *p, plan_staging *st, volatile float *progress, errbuf *err) {
    if (model_check_file(m, err)) return -1;   // conversions read the file's weights
    memset(st, 0, sizeof *st);
    double t0 = now_sec();
    int n_kinds_total = m->hp.n_layer * TK_LAYER_KINDS + 2;
    st->changes = xcalloc((size_t)n_kinds_total, sizeof(plan_change));
    uint64_t convert_bytes = 0;   // what the second pass allocates
    // First pass: validate every target and add up the conversions before converting anything.
    for (int pass = 0; pass < 2; pass++) {
        uint64_t avail;
        if (pass == 1 && !mem_fits(convert_bytes, &avail))
            return model_plan_discard(st), err_set(err, "plan: the converted weights need %.1f MiB, more than the "
                                                   "%.1f MiB of memory available", (double)convert_bytes / (1 << 20),
                                                   (double)avail / (1 << 20));
        int done = 0;
        for (int l = -1; l < m->hp.n_layer; l++) {
            for (int k = 0; k < TK_COUNT; k++) {
                if (!planned_slot(m, l, k)) continue;
                tensor *t = model_tensor_by_kind(m, l, k);
                uint32_t type = planned_type(m, p, t, l, k);
                const wtype_info *ti = wtype_get(type);
                if (pass == 0) {
                    // The file's own type needs no producer: its weights are still there.
                    if (type != t->src_type && (!ti || !ti->from_f32))
                        return model_plan_discard(st), err_set(err, "plan: type %s cannot be produced", wtype_name(type));
                    if (t->ne0 % ti->block_size)
                        return model_plan_discard(st), err_set(err, "plan: tensor %s: row length %lld is not a multiple of "
                                       "the %s block size %u", t->name, (long long)t->ne0, ti->name, ti->block_size);
                    if (type != t->type && type != t->src_type)
                        convert_bytes += wtype_row_bytes(type, (uint64_t)t->ne0) * (uint64_t)t->ne1;
                    continue;
                }
                done++;
                if (progress) *progress = (float)done / (float)n_kinds_total;
                if (type == t->type) continue;
                plan_change *c = &st->changes[st->n++];
                c->t = t;
                c->type = type;
                if (type == t->src_type) {
                    c->data = NULL;   // back to the file's weights
                    c->row_bytes = t->src_row_bytes;
                } else if (!(c->data = convert_from_source(m, t, type, &c->row_bytes))) {
                    st->n--;
                    return model_plan_discard(st), err_set(err, "plan: out of memory converting tensor %s to %s",
                                                           t->name, wtype_name(type));
                }
                if (wtype_bpw(type) > wtype_bpw(t->src_type)) st->n_upcast++;
            }
        }
    }
    if (progress) *progress = 1.0f;
    st->secs = now_sec() - t0;
    return 0;
}

static void add_n_bytes(tensor *t, void *ud) { *(uint64_t *)ud += t->n_bytes; }

void model_plan_commit(model *m, plan_staging *st, backend *b) {
    for (int i = 0; i < st->n; i++) {
        plan_change *c = &st->changes[i];
        tensor *t = c->t;
        if (b) b->weight_release(b, t);
        free(t->owned);
        t->owned = c->data;
        t->data = c->data ? c->data : t->src_data;
        t->type = c->type;
        t->row_bytes = c->row_bytes;
        t->n_bytes = c->row_bytes * (size_t)t->ne1;
        c->data = NULL;
        if (b) model_prepare_tensor(m, b, t, NULL);
    }
    if (m->hp.tied_output) m->output = m->tok_embd;
    m->weight_bytes = 0;
    model_for_each_tensor(m, add_n_bytes, &m->weight_bytes);
    model_plan_discard(st);
}

void model_plan_discard(plan_staging *st) {
    for (int i = 0; i < st->n; i++) free(st->changes[i].data);
    free(st->changes);
    memset(st, 0, sizeof *st);
}

int model_apply_plan(model *m, const precision_plan *p, backend *b, errbuf *err) {
    plan_staging st;
    if (model_plan_stage(m, p, &st, NULL, err)) return -1;
    model_plan_commit(m, &st, b);
    return 0;
}

void model_bytes_by_type(const model *m, uint64_t bytes[WT_COUNT]) {
    memset(bytes, 0, sizeof(uint64_t) * WT_COUNT);
    model *mm = (model *)m;
    for (int l = -1; l < m->hp.n_layer; l++)
        for (int k = 0; k < TK_COUNT; k++) {
            if (!planned_slot(m, l, k)) continue;
            const tensor *t = model_tensor_by_kind(mm, l, k);
            bytes[t->type] += t->n_bytes;
        }
}

uint64_t model_decode_bytes(const model *m) {
    uint64_t n = m->output.n_bytes;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const layer_weights *L = &m->layers[l];
        n += L->wq.n_bytes + L->wk.n_bytes + L->wv.n_bytes + L->wo.n_bytes + L->w_gate.n_bytes +
             L->w_up.n_bytes + L->w_down.n_bytes;
    }
    return n;
}

