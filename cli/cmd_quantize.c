// cabin quantize: write a GGUF at another precision (a type, a preset's per-tensor mix, a plan),
// optionally importance-aware.
#include "cli/commands.h"
#include "engine/calibrate.h"
#include "engine/convert.h"
#include "engine/precision.h"
#include "engine/quantize.h"
#include "engine/wtype.h"
#include "app/quantize_mix.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct quant_job {
    const act_stats *stats;     // NULL: plain quantization
    void **bufs;
    int n_bufs;
    int n_weighted;
} quant_job;

// Converts a file tensor (rows of ne[0] weights) to `type`: importance-weighted where statistics
// exist for (layer, kind) and the type has an importance-aware quantizer, else the shared
// (parallel, bit-exact) conversion a live precision switch uses.
static void *convert(quant_job *j, const gguf_tensor *gt, int layer, int kind, uint32_t type) {
    const int64_t ne0 = (int64_t)gt->ne[0], rows = (int64_t)(gt->n_elements / gt->ne[0]);
    const size_t src_row_bytes = (size_t)wtype_row_bytes(gt->type, (uint64_t)ne0);
    const size_t row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)ne0);
    uint8_t *dst = xmalloc_large(row_bytes * (size_t)rows);
    quantize_weighted_fn weighted = quantize_weighted_for(type);
    const double *imp = weighted && j->stats && kind >= 0 && kind < TK_LAYER_KINDS ? act_stats_for(j->stats, layer, kind) : NULL;
    if (!imp) {
        convert_rows(gt->data, gt->type, src_row_bytes, dst, type, row_bytes, ne0, rows, 0);
        return dst;
    }
    j->n_weighted++;
    const wtype_info *from = wtype_get(gt->type);
    float *row = xmalloc((size_t)ne0 * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        from->to_f32((const uint8_t *)gt->data + (size_t)r * src_row_bytes, row, ne0);
        weighted(row, imp, dst + (size_t)r * row_bytes, ne0);
    }
    free(row);
    return dst;
}

// Whether the plan names (layer, kind) itself, by a rule or its default / token_embd / output.
static bool plan_names(const precision_plan *p, int layer, int kind) {
    if (kind == TK_TOKEN_EMBD) return p->named & PLAN_SET_EMBD;
    if (kind == TK_OUTPUT) return p->named & PLAN_SET_OUTPUT;
    if (p->named & PLAN_SET_DEFAULT) return true;
    for (int i = 0; i < p->n_rules; i++)
        if (layer >= p->rules[i].layer_lo && layer <= p->rules[i].layer_hi && (p->rules[i].kinds >> kind & 1)) return true;
    return false;
}

// The model tensor bound to file tensor gt, if it is one a plan governs (*layer, *kind set);
// *fused: gt is bound in parts (phi3's attn_qkv, ffn_up).
static tensor *bound_tensor(model *m, const gguf_tensor *gt, int *layer, int *kind, bool *fused) {
    *fused = false;
    for (int l = -1; l < m->hp.n_layer; l++)
        for (int k = 0; k < TK_COUNT; k++) {
            if ((l < 0) != (k >= TK_LAYER_KINDS)) continue;
            tensor *c = model_tensor_by_kind(m, l, k);
            if (!c || c->src_data != gt->data) continue;
            if ((uint64_t)(c->ne0 * c->ne1) != gt->n_elements) { *fused = true; continue; }
            *layer = l;
            *kind = k;
            return c;
        }
    return NULL;
}

// Weights (elements) of every tensor of a file, for bits per weight.
static uint64_t weights_of(const gguf_file *f) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) n += f->tensors[i].n_elements;
    return n ? n : 1;
}

typedef struct quantize_opts {
    const char *in, *out, *type_name, *plan_spec, *calib;
    int threads, calib_ctx;
    bool pure;
} quantize_opts;

#define QO(field) offsetof(quantize_opts, field)
static const opt_def QUANTIZE_OPTS[] = {
    { "IN.gguf", NULL, OPT_POS, QO(in), NULL, "the model to convert", NULL, NULL, NULL },
    { "OUT.gguf", NULL, OPT_POS, QO(out), NULL, "the file to write", NULL, NULL, NULL },
    { "TYPE", NULL, OPT_POS, QO(type_name), NULL, "a weight type (f32, f16, bf16, q8_0, q6_k, q5_k, q5_1, q5_0, q4_k,\n"
      "q4_1, q4_0, iq4_xs, iq4_nl, q3_k, q2_k) or a preset (Q2_K, Q3_K_S,\nQ3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K)", NULL, NULL, NULL },
    { "--plan", NULL, OPT_STR, QO(plan_spec), "PLAN", "precision plan (JSON file, JSON text or shorthand) applied on\n"
      "top of TYPE: \"q8_0:layers=0-3,ffn_down\"", NULL, NULL, NULL },
    { "--pure", NULL, OPT_FLAG, QO(pure), NULL, "every matrix at TYPE (a preset's main type), the token\n"
      "embedding and output included", NULL, NULL, NULL },
    { "--calib", NULL, OPT_STR, QO(calib), "TEXT", "importance-aware Q4_0 and K-quants: run TEXT through the model,\n"
      "and weigh each weight's error by its input column's mean squared\nactivation in the scale searches (the file is still standard)", NULL, NULL, NULL },
    { "--calib-ctx", NULL, OPT_INT, QO(calib_ctx), "N", "window for the calibration run", NULL, NULL, NULL, OPT_RANGE(2, HUGE_VAL) },
    { "--threads", "-t", OPT_INT, QO(threads), "N", "threads for the calibration run", "the physical cores", NULL, NULL, OPT_RANGE(1, 256), .note = note_threads },
};

static const cmd_spec QUANTIZE_SPEC = {
    "cabin quantize", "cabin quantize IN.gguf OUT.gguf TYPE [--plan PLAN] [--pure] [--calib TEXT]",
    "Writes IN at another precision. A weight TYPE is the type of every layer matrix;\n"
    "the token embedding and output stay at a higher type (q8_0 when TYPE is q4_0,\n"
    "q6_k for the other types under 8 bits, else TYPE) unless the plan says otherwise.\n"
    "A preset (Q4_K_M, ...) gives each tensor the type the established GGUF quantizer's\n"
    "preset of that name gives it (docs/PRECISION.md). Rows too short for a K-quant's\n"
    "256-weight block fall back as that quantizer does (Q4_K -> Q5_0, Q5_K -> Q5_1,\n"
    "Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS -> IQ4_NL). Norms stay F32. The output uses standard\n"
    "types and keys.\n",
};

// The calibration run: act_stats over the text of file `calib`. 0, or 1 with a message printed.
static int calibrate(model *m, const char *calib, int threads, int calib_ctx, act_stats *stats, errbuf *err) {
    char *text = read_file_all(calib, NULL, err);
    backend *b = text ? backend_create(&(backend_opts){ .name = "cpu", .n_threads = threads }, err) : NULL;
    int rc = -1;
    if (b) {
        int32_t *ids = xmalloc((strlen(text) + 16) * sizeof(int32_t));
        int n = tokenizer_encode(m->tok, text, strlen(text), false, true, ids, (int32_t)strlen(text) + 16);
        volatile float progress = 0;
        double t0 = now_sec();
        rc = n > 0 ? act_stats_collect(stats, m, b, ids, n, calib_ctx, &progress, err) : err_set(err, "%s: no tokens", calib);
        if (!rc) fprintf(stderr, "calibration: %ld tokens of %s in %.1f s\n", stats->tokens, calib, now_sec() - t0);
        free(ids);
        backend_destroy(b);
    }
    free(text);
    if (rc) fprintf(stderr, "cabin quantize: %s\n", err->msg);
    return rc ? 1 : 0;
}

// The type file tensor gt is written at. TYPE's defaults are in the plan (a plain type) or come
// from the preset; what the plan names itself wins over the preset.
static uint32_t tensor_type(model *m, const precision_plan *plan, const quant_preset *preset, const quant_shape *shape,
                            const gguf_tensor *gt, const tensor *t, int layer, int kind, bool fused) {
    if (!t && !(fused && preset)) {
        if (fused)
            fprintf(stderr, "note: %s: a fused tensor (its parts are planned one by one in memory); kept as %s\n",
                    gt->name, wtype_name(gt->type));
        return gt->type;
    }
    uint32_t want;
    if (preset && (!t || !plan_names(plan, layer, kind))) {
        want = quant_preset_type(preset, gt->name, shape);
    } else {
        want = plan_type_for(plan, layer, kind);
        if (kind == TK_TOKEN_EMBD && m->hp.tied_output && plan->output_type != PLAN_KEEP &&
            wtype_bpw(plan->output_type) > wtype_bpw(want))
            want = plan->output_type;   // a tied embedding is also the output: the higher wins
    }
    if (want == PLAN_KEEP || want == gt->type) return gt->type;
    const int64_t ne0 = (int64_t)gt->ne[0];
    const uint32_t fit = quant_fit_type(want, ne0);
    if (fit == UINT32_MAX) {
        fprintf(stderr, "note: %s: row length %lld is not a multiple of %u; kept as %s\n", gt->name,
                (long long)ne0, wtype_get(want)->block_size, wtype_name(gt->type));
        return gt->type;
    }
    if (fit != want)
        fprintf(stderr, "note: %s: row length %lld is not a multiple of %u; %s instead of %s\n", gt->name,
                (long long)ne0, wtype_get(want)->block_size, wtype_name(fit), wtype_name(want));
    return fit;
}

int cmd_quantize(int argc, char **argv) {
    quantize_opts o = { .calib_ctx = 256 };
    opt_table own = OPT_TABLE(QUANTIZE_OPTS, &o);
    int prc = opts_parse(&QUANTIZE_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    if (!o.in || !o.out || !o.type_name) { fprintf(stderr, "cabin quantize: need IN.gguf OUT.gguf TYPE (see --help)\n"); return 2; }
    const quant_preset *preset = quant_preset_find(o.type_name);
    int type = preset ? (int)preset->base : wtype_from_name(o.type_name);
    if (type < 0 || !wtype_get((uint32_t)type)->from_f32) {
        fprintf(stderr, "cabin quantize: type '%s' is not one of f32, f16, bf16, q8_0, q6_k, q5_k, q5_1, q5_0, q4_k, "
                "q4_1, q4_0, iq4_xs, iq4_nl, q3_k, q2_k, nor a preset (%s)\n", o.type_name, quant_preset_names());
        return 2;
    }
    const uint32_t file_type = preset ? preset->file_type : quant_file_type_of((uint32_t)type);
    if (o.pure) preset = NULL;
    errbuf err = {{0}};
    model *m;
    if (model_load(&m, o.in, &err)) { fprintf(stderr, "cabin quantize: %s\n", err.msg); return 1; }
    precision_plan plan;
    plan_init(&plan);
    if (o.plan_spec && plan_parse_any(&plan, o.plan_spec, m->hp.n_layer, &err)) {
        fprintf(stderr, "cabin quantize: %s\n", err.msg);
        model_free(m);
        return 2;
    }
    // What the plan does not name gets TYPE, and the token embedding and output a higher type
    // (TYPE itself with --pure); what it names, "keep" included, is as the plan says.
    if (!(plan.named & PLAN_SET_DEFAULT)) plan.default_type = (uint32_t)type;
    uint32_t high = type == WT_Q4_0 ? WT_Q8_0 : wtype_bpw((uint32_t)type) < 8 ? WT_Q6_K : (uint32_t)type;
    if (o.pure) high = (uint32_t)type;
    if (!(plan.named & PLAN_SET_EMBD)) plan.token_embd_type = high;
    if (!(plan.named & PLAN_SET_OUTPUT)) plan.output_type = high;
    const quant_shape shape = { m->hp.n_layer, m->hp.n_kv_head > 0 ? m->hp.n_head / m->hp.n_kv_head : 1, !m->hp.tied_output };

    act_stats stats = {0};
    if (o.calib && calibrate(m, o.calib, o.threads, o.calib_ctx, &stats, &err)) {
        act_stats_free(&stats);
        model_free(m);
        return 1;
    }

    gguf_writer *w = gguf_writer_new();
    gguf_set_u32(w, "general.file_type", file_type);
    gguf_set_u32(w, "general.quantization_version", 2);
    gguf_copy_kvs(w, &m->file);
    quant_job j = { o.calib ? &stats : NULL, xcalloc(m->file.n_tensors, sizeof(void *)), 0, 0 };
    int rc = 0;
    uint64_t in_bytes = 0, out_bytes = 0;
    double t0 = now_sec();
    for (uint64_t i = 0; i < m->file.n_tensors && !rc; i++) {
        const gguf_tensor *gt = &m->file.tensors[i];
        in_bytes += gt->n_bytes;
        int layer = -1, kind = -1;
        bool fused;
        tensor *t = bound_tensor(m, gt, &layer, &kind, &fused);
        const uint32_t want = tensor_type(m, &plan, preset, &shape, gt, t, layer, kind, fused);
        const void *data = gt->data;
        if (want != gt->type) data = j.bufs[j.n_bufs++] = convert(&j, gt, layer, kind, want);
        uint64_t ne[4] = { gt->ne[0], gt->ne[1], gt->ne[2], gt->ne[3] };
        rc = gguf_add_tensor(w, gt->name, want, gt->n_dims, ne, data, &err);
        out_bytes += wtype_row_bytes(want, gt->ne[0]) * (gt->n_elements / gt->ne[0]);
    }
    if (!rc) rc = gguf_write_file(w, o.out, &err);
    if (rc) fprintf(stderr, "cabin quantize: %s\n", err.msg);
    else
        printf("%s: %.2f MiB -> %s: %.2f MiB (%s%s, %.2f bits per weight) in %.1f s\n", o.in, (double)in_bytes / (1 << 20),
               o.out, (double)out_bytes / (1 << 20), preset ? preset->name : wtype_name((uint32_t)type),
               j.n_weighted ? ", importance-aware scales" : "", 8.0 * (double)out_bytes / (double)weights_of(&m->file),
               now_sec() - t0);
    for (int i = 0; i < j.n_bufs; i++) free(j.bufs[i]);
    free(j.bufs);
    gguf_writer_free(w);
    act_stats_free(&stats);
    model_free(m);
    return rc ? 1 : 0;
}
