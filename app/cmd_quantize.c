// cabin quantize: write a GGUF at another precision (a plan), optionally importance-aware.
#include "app/commands.h"
#include "engine/calibrate.h"
#include "engine/convert.h"
#include "engine/precision.h"
#include "engine/wtype.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// GGUF general.file_type for a uniform type (the llama_ftype numbering other tools use).
static uint32_t file_type_of(uint32_t t) {
    switch (t) {
    case WT_F32: return 0;
    case WT_F16: return 1;
    case WT_Q4_0: return 2;
    case WT_Q8_0: return 7;
    case WT_BF16: return 32;
    default: return 0;
    }
}

typedef struct quant_job {
    model *m;
    const precision_plan *plan;
    const act_stats *stats;     // NULL: plain quantization
    gguf_writer *w;
    void **bufs;
    int n_bufs;
    int n_weighted;
    errbuf *err;
} quant_job;

// Converts a tensor's file weights to `type`: importance-weighted Q4_0 where statistics exist,
// else the shared (parallel, bit-exact) conversion a live precision switch uses.
static void *convert(quant_job *j, const tensor *t, int layer, int kind, uint32_t type) {
    size_t row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)t->ne0);
    uint8_t *dst = xmalloc_large(row_bytes * (size_t)t->ne1);
    const double *imp = type == WT_Q4_0 && j->stats && kind < TK_LAYER_KINDS ? act_stats_for(j->stats, layer, kind) : NULL;
    if (!imp) {
        convert_rows(t->src_data, t->src_type, t->src_row_bytes, dst, type, row_bytes, t->ne0, t->ne1, 0);
        return dst;
    }
    j->n_weighted++;
    const wtype_info *from = wtype_get(t->src_type);
    float *row = xmalloc((size_t)t->ne0 * sizeof(float));
    for (int64_t r = 0; r < t->ne1; r++) {
        from->to_f32((const uint8_t *)t->src_data + (size_t)r * t->src_row_bytes, row, t->ne0);
        quantize_row_q4_0_weighted(row, imp, dst + (size_t)r * row_bytes, t->ne0);
    }
    free(row);
    return dst;
}

typedef struct quantize_opts { const char *in, *out, *type_name, *plan_spec, *calib; int threads, calib_ctx; } quantize_opts;

#define QO(field) offsetof(quantize_opts, field)
static const opt_def QUANTIZE_OPTS[] = {
    { "IN.gguf", NULL, OPT_POS, QO(in), NULL, "the model to convert", NULL, NULL, NULL },
    { "OUT.gguf", NULL, OPT_POS, QO(out), NULL, "the file to write", NULL, NULL, NULL },
    { "TYPE", NULL, OPT_POS, QO(type_name), NULL, "f32 | f16 | bf16 | q8_0 | q4_0", NULL, NULL, NULL },
    { "--plan", NULL, OPT_STR, QO(plan_spec), "PLAN", "precision plan (JSON file, JSON text or shorthand) applied on\n"
      "top of TYPE: \"q8_0:layers=0-3,ffn_down\"", NULL, NULL, NULL },
    { "--calib", NULL, OPT_STR, QO(calib), "TEXT", "importance-aware Q4_0: run TEXT through the model, and pick each\n"
      "Q4_0 block's scale to minimise the activation-weighted error\n(the file is still plain Q4_0)", NULL, NULL, NULL },
    { "--calib-ctx", NULL, OPT_INT, QO(calib_ctx), "N", "window for the calibration run", NULL, NULL, NULL },
    { "--threads", "-t", OPT_INT, QO(threads), "N", "threads for the calibration run", "all cores", NULL, NULL },
};

static const cmd_spec QUANTIZE_SPEC = {
    "cabin quantize", "cabin quantize IN.gguf OUT.gguf TYPE [--plan PLAN] [--calib TEXT]",
    "Writes IN at another precision. TYPE (f32, f16, bf16, q8_0, q4_0) is the type of\n"
    "every layer matrix; the token embedding and output stay at a higher type (q8_0\n"
    "when TYPE is q4_0, else TYPE) unless the plan says otherwise. Norms stay F32.\n"
    "Sources F32, F16, BF16, Q8_0 (and Q4_0). The output uses standard types and keys.\n",
};

int cmd_quantize(int argc, char **argv) {
    quantize_opts o = { .calib_ctx = 256 };
    opt_table own = OPT_TABLE(QUANTIZE_OPTS, &o);
    int prc = opts_parse(&QUANTIZE_SPEC, &own, 1, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const char *in = o.in, *out = o.out, *type_name = o.type_name, *plan_spec = o.plan_spec, *calib = o.calib;
    int threads = o.threads, calib_ctx = o.calib_ctx;
    if (!in || !out || !type_name) { fprintf(stderr, "cabin quantize: need IN.gguf OUT.gguf TYPE (see --help)\n"); return 2; }
    int type = wtype_from_name(type_name);
    if (type < 0 || !wtype_get((uint32_t)type)->from_f32) {
        fprintf(stderr, "cabin quantize: type '%s' is not one of f32, f16, bf16, q8_0, q4_0\n", type_name);
        return 2;
    }
    errbuf err = {{0}};
    model *m;
    if (model_load(&m, in, &err)) { fprintf(stderr, "cabin quantize: %s\n", err.msg); return 1; }
    precision_plan plan;
    plan_init(&plan);
    if (plan_spec && plan_parse_any(&plan, plan_spec, m->hp.n_layer, &err)) {
        fprintf(stderr, "cabin quantize: %s\n", err.msg);
        model_free(m);
        return 2;
    }
    // What the plan does not name gets TYPE, and the token embedding and output a higher type;
    // what it names, "keep" included, is as the plan says.
    if (!(plan.named & PLAN_SET_DEFAULT)) plan.default_type = (uint32_t)type;
    uint32_t high = type == WT_Q4_0 ? WT_Q8_0 : (uint32_t)type;
    if (!(plan.named & PLAN_SET_EMBD)) plan.token_embd_type = high;
    if (!(plan.named & PLAN_SET_OUTPUT)) plan.output_type = high;

    act_stats stats = {0};
    bool have_stats = false;
    if (calib) {
        char *text = read_file_all(calib, NULL, &err);
        backend *b = text ? backend_create(&(backend_opts){ .name = "cpu", .n_threads = threads }, &err) : NULL;
        int rc = -1;
        if (b) {
            int32_t *ids = xmalloc((strlen(text) + 16) * sizeof(int32_t));
            int n = tokenizer_encode(m->tok, text, strlen(text), false, true, ids, (int32_t)strlen(text) + 16);
            volatile float progress = 0;
            double t0 = now_sec();
            rc = n > 0 ? act_stats_collect(&stats, m, b, ids, n, calib_ctx, &progress, &err) : err_set(&err, "%s: no tokens", calib);
            if (!rc) fprintf(stderr, "calibration: %ld tokens of %s in %.1f s\n", stats.tokens, calib, now_sec() - t0);
            free(ids);
            backend_destroy(b);
        }
        free(text);
        if (rc) { fprintf(stderr, "cabin quantize: %s\n", err.msg); act_stats_free(&stats); model_free(m); return 1; }
        have_stats = true;
    }

    gguf_writer *w = gguf_writer_new();
    gguf_set_u32(w, "general.file_type", file_type_of((uint32_t)type));
    gguf_set_u32(w, "general.quantization_version", 2);
    gguf_copy_kvs(w, &m->file);
    quant_job j = { m, &plan, have_stats ? &stats : NULL, w, xcalloc(m->file.n_tensors, sizeof(void *)), 0, 0, &err };
    int rc = 0;
    uint64_t in_bytes = 0, out_bytes = 0;
    double t0 = now_sec();
    for (uint64_t i = 0; i < m->file.n_tensors && !rc; i++) {
        const gguf_tensor *gt = &m->file.tensors[i];
        in_bytes += gt->n_bytes;
        // the model tensor bound to this file tensor, if it is one a plan governs
        tensor *t = NULL;
        bool fused = false;   // bound in parts (phi3's attn_qkv, ffn_up): its first part starts here
        int layer = -1, kind = -1;
        for (int l = -1; l < m->hp.n_layer && !t; l++)
            for (int k = 0; k < TK_COUNT && !t; k++) {
                if ((l < 0) != (k >= TK_LAYER_KINDS)) continue;
                tensor *c = model_tensor_by_kind(m, l, k);
                if (c && c->src_data == gt->data) {
                    if ((uint64_t)(c->ne0 * c->ne1) != gt->n_elements) fused = true;
                    else { t = c; layer = l; kind = k; }
                }
            }
        uint32_t want = gt->type;
        if (fused)
            fprintf(stderr, "note: %s: a fused tensor (its parts are planned one by one in memory); kept as %s\n",
                    gt->name, wtype_name(gt->type));
        if (t) {
            want = plan_type_for(&plan, layer, kind);
            if (kind == TK_TOKEN_EMBD && m->hp.tied_output && plan.output_type != PLAN_KEEP &&
                wtype_bpw(plan.output_type) > wtype_bpw(want))
                want = plan.output_type;   // a tied embedding is also the output: the higher wins
            if (want == PLAN_KEEP) want = gt->type;
            const wtype_info *ti = wtype_get(want);
            if (t->ne0 % ti->block_size) {
                fprintf(stderr, "note: %s: row length %lld is not a multiple of %u; kept as %s\n", gt->name,
                        (long long)t->ne0, ti->block_size, wtype_name(gt->type));
                want = gt->type;
            }
        }
        const void *data = gt->data;
        if (t && want != gt->type) data = j.bufs[j.n_bufs++] = convert(&j, t, layer, kind, want);
        uint64_t ne[4] = { gt->ne[0], gt->ne[1], gt->ne[2], gt->ne[3] };
        rc = gguf_add_tensor(w, gt->name, want, gt->n_dims, ne, data, &err);
        out_bytes += wtype_row_bytes(want, gt->ne[0]) * (gt->n_elements / gt->ne[0]);
    }
    if (!rc) rc = gguf_write_file(w, out, &err);
    if (rc) fprintf(stderr, "cabin quantize: %s\n", err.msg);
    else
        printf("%s: %.2f MiB -> %s: %.2f MiB (%s%s) in %.1f s\n", in, (double)in_bytes / (1 << 20), out,
               (double)out_bytes / (1 << 20), wtype_name((uint32_t)type),
               j.n_weighted ? ", importance-aware Q4_0 scales" : "", now_sec() - t0);
    for (int i = 0; i < j.n_bufs; i++) free(j.bufs[i]);
    free(j.bufs);
    gguf_writer_free(w);
    act_stats_free(&stats);
    model_free(m);
    return rc ? 1 : 0;
}
