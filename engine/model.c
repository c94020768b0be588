#include "model.h"
#include "convert.h"
#include "wtype.h"
#include "quantize.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *model_arch_name(enum model_arch a) {
    return a == ARCH_QWEN2 ? "qwen2" : a == ARCH_QWEN3 ? "qwen3" : a == ARCH_PHI3 ? "phi3" : "llama";
}

// Reads <arch>.<suffix> as a positive int; required keys must be present.
static int hp_int(const gguf_file *g, const char *arch, const char *suffix, bool required,
                  int def, int lo, int hi, int *out, errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    int r = gguf_get_u32(g, key, &v, err);
    if (r < 0) return -1;
    if (r == 0) {
        if (required) return err_set(err, "%s: missing required key %s", g->path, key);
        *out = def;
        return 0;
    }
    if ((int64_t)v < lo || (int64_t)v > hi)
        return err_set(err, "%s: %s = %u is out of range [%d, %d]", g->path, key, v, lo, hi);
    *out = (int)v;
    return 0;
}

static int hp_float(const gguf_file *g, const char *arch, const char *suffix, float def, float *out,
                    errbuf *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_get_f32(g, key, out, err);
    if (r < 0) return -1;
    if (r == 0) *out = def;
    if (!(*out > 0.0f) || *out > 1e12f)
        return err_set(err, "%s: %s = %g is out of range", g->path, key, (double)*out);
    return 0;
}

static int load_hparams(model *m, errbuf *err) {
    const gguf_file *g = &m->file;
    model_hparams *hp = &m->hp;
    char *arch = NULL;
    int r = gguf_get_strdup(g, "general.architecture", &arch, err);
    if (r < 0) return -1;
    if (r == 0) return err_set(err, "%s: missing general.architecture", g->path);
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", arch);
    if (strcmp(arch, "llama") == 0) hp->arch = ARCH_LLAMA;
    else if (strcmp(arch, "qwen2") == 0) hp->arch = ARCH_QWEN2;
    else if (strcmp(arch, "qwen3") == 0) hp->arch = ARCH_QWEN3;
    else if (strcmp(arch, "phi3") == 0) hp->arch = ARCH_PHI3;
    else {
        err_set(err, "%s: unsupported architecture '%s' (supported: llama, qwen2, qwen3, phi3)", g->path, arch);
        free(arch);
        return -1;
    }
    free(arch);
    const char *a = hp->arch_name;
    if (hp_int(g, a, "embedding_length", true, 0, 1, 1 << 16, &hp->dim, err) ||
        hp_int(g, a, "block_count", true, 0, 1, 1024, &hp->n_layer, err) ||
        hp_int(g, a, "feed_forward_length", true, 0, 1, 1 << 18, &hp->ffn_dim, err) ||
        hp_int(g, a, "attention.head_count", true, 0, 1, 1024, &hp->n_head, err) ||
        hp_int(g, a, "context_length", false, 4096, 1, 1 << 24, &hp->n_ctx_train, err))
        return -1;
    if (hp_int(g, a, "attention.head_count_kv", false, hp->n_head, 1, hp->n_head, &hp->n_kv_head, err))
        return -1;
    if (hp->n_head % hp->n_kv_head)
        return err_set(err, "%s: head count %d is not a multiple of kv head count %d", g->path,
                       hp->n_head, hp->n_kv_head);
    if (hp_int(g, a, "attention.key_length", false, hp->dim / hp->n_head, 1, 4096, &hp->head_dim, err))
        return -1;
    if (hp->head_dim % 2) return err_set(err, "%s: head size %d is odd", g->path, hp->head_dim);
    if (hp_int(g, a, "rope.dimension_count", false, hp->head_dim, 2, hp->head_dim, &hp->rope_dim, err))
        return -1;
    if (hp->rope_dim % 2 || hp->rope_dim > 1024)
        return err_set(err, "%s: rope dimension count %d is odd or too large", g->path, hp->rope_dim);
    if (hp_float(g, a, "rope.freq_base", 10000.0f, &hp->rope_base, err) ||
        hp_float(g, a, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps, err))
        return -1;
    hp->rope_neox = hp->arch == ARCH_QWEN2 || hp->arch == ARCH_QWEN3 || hp->arch == ARCH_PHI3;
    // phi3's long-context rope (per-frequency factors, an attention factor) changes every
    // rotation: refused until the rope takes factors, rather than run wrongly.
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", a);
    if (gguf_find_tensor(g, "rope_factors_long.weight") || gguf_find_tensor(g, "rope_factors_short.weight") ||
        gguf_find_kv(g, key))
        return err_set(err, "%s: rope scaling (rope_factors_long/short, %s) is not supported yet", g->path, key);
    return 0;
}

// Binds a tensor by name, checking its shape (ne0 = in, ne1 = out; ne1 = 1 for vectors).
static int bind(model *m, tensor *t, const char *name, int64_t ne0, int64_t ne1, bool required,
                bool matrix, errbuf *err) {
    const gguf_tensor *gt = gguf_find_tensor(&m->file, name);
    memset(t, 0, sizeof *t);
    if (!gt) return required ? err_set(err, "%s: missing tensor %s", m->file.path, name) : 0;
    int64_t got1 = gt->n_dims >= 2 ? (int64_t)gt->ne[1] : 1;
    if ((int64_t)gt->ne[0] != ne0 || got1 != ne1 || gt->ne[2] != 1 || gt->ne[3] != 1)
        return err_set(err, "%s: tensor %s has shape [%" PRIu64 ", %" PRIu64 "], expected [%" PRId64
                       ", %" PRId64 "]", m->file.path, name, gt->ne[0], gt->ne[1], ne0, ne1);
    const wtype_info *ti = wtype_get(gt->type);
    if (!ti || !ti->to_f32)
        return err_set(err, "%s: tensor %s has type %s, which cabin does not support yet "
                       "(supported: %s)", m->file.path, name, wtype_name(gt->type),
                       wtype_supported_list());
    t->name = gt->name;
    t->type = gt->type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->data = gt->data;
    t->row_bytes = wtype_row_bytes(gt->type, (uint64_t)ne0);
    t->n_bytes = (size_t)gt->n_bytes;
    t->src_data = gt->data;
    t->src_type = gt->type;
    t->src_row_bytes = t->row_bytes;
    if (!matrix && t->type != WT_F32) {
        // Norm weights and biases are used as float32 vectors.
        float *f = xmalloc((size_t)ne0 * ne1 * sizeof(float));
        ti->to_f32(gt->data, f, ne0 * ne1);
        t->owned = f;
        t->data = f;
        t->type = WT_F32;
        t->row_bytes = (size_t)ne0 * 4;
        t->n_bytes = (size_t)(ne0 * ne1) * 4;
    }
    m->weight_bytes += gt->n_bytes;
    return 0;
}

// Binds rows [row0, row0 + rows) of the fused matrix `name` (total_rows rows of ne0) as a tensor
// of its own: it points into the fused tensor's bytes and carries its name; the weights are
// counted once, by the first part.
static int bind_rows(model *m, tensor *t, const char *name, int64_t ne0, int64_t total_rows, int64_t row0,
                     int64_t rows, errbuf *err) {
    uint64_t counted = m->weight_bytes;
    if (bind(m, t, name, ne0, total_rows, true, true, err)) return -1;
    if (row0 > 0) m->weight_bytes = counted;
    t->data = t->src_data = (const uint8_t *)t->data + (size_t)row0 * t->row_bytes;
    t->ne1 = rows;
    t->n_bytes = (size_t)rows * t->row_bytes;
    return 0;
}

// phi3: q, k, v from attn_qkv and gate, up from ffn_up.
static int bind_phi3_fused(model *m, layer_weights *L, int l, int64_t q_dim, int64_t kv_dim, errbuf *err) {
    const int64_t dim = m->hp.dim, ffn = m->hp.ffn_dim;
    char qkv[96], up[96];
    snprintf(qkv, sizeof qkv, "blk.%d.attn_qkv.weight", l);
    snprintf(up, sizeof up, "blk.%d.ffn_up.weight", l);
    if (bind_rows(m, &L->wq, qkv, dim, q_dim + 2 * kv_dim, 0, q_dim, err) ||
        bind_rows(m, &L->wk, qkv, dim, q_dim + 2 * kv_dim, q_dim, kv_dim, err) ||
        bind_rows(m, &L->wv, qkv, dim, q_dim + 2 * kv_dim, q_dim + kv_dim, kv_dim, err) ||
        bind_rows(m, &L->w_gate, up, dim, 2 * ffn, 0, ffn, err) ||
        bind_rows(m, &L->w_up, up, dim, 2 * ffn, ffn, ffn, err))
        return -1;
    return 0;
}

static int load_tensors(model *m, errbuf *err) {
    const model_hparams *hp = &m->hp;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_kv_head * hp->head_dim;
    if (bind(m, &m->tok_embd, "token_embd.weight", hp->dim, hp->n_vocab, true, true, err) ||
        bind(m, &m->output_norm, "output_norm.weight", hp->dim, 1, true, false, err) ||
        bind(m, &m->output, "output.weight", hp->dim, hp->n_vocab, false, true, err))
        return -1;
    if (!m->output.data) {
        m->hp.tied_output = true;
        m->output = m->tok_embd;
        m->output.owned = NULL;
    }
    m->layers = try_calloc((size_t)hp->n_layer, sizeof(layer_weights));
    if (!m->layers) return err_set(err, "%s: out of memory for %d layers", m->file.path, hp->n_layer);
    for (int l = 0; l < hp->n_layer; l++) {
        layer_weights *L = &m->layers[l];
        char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        bool bias = hp->arch == ARCH_QWEN2, qk_norm = hp->arch == ARCH_QWEN3, fused = hp->arch == ARCH_PHI3;
        if (fused ? bind_phi3_fused(m, L, l, q_dim, kv_dim, err)
                  : bind(m, &L->wq, NAME("attn_q.weight"), hp->dim, q_dim, true, true, err) ||
                        bind(m, &L->wk, NAME("attn_k.weight"), hp->dim, kv_dim, true, true, err) ||
                        bind(m, &L->wv, NAME("attn_v.weight"), hp->dim, kv_dim, true, true, err) ||
                        bind(m, &L->w_gate, NAME("ffn_gate.weight"), hp->dim, hp->ffn_dim, true, true, err) ||
                        bind(m, &L->w_up, NAME("ffn_up.weight"), hp->dim, hp->ffn_dim, true, true, err))
            return -1;
        if (bind(m, &L->attn_norm, NAME("attn_norm.weight"), hp->dim, 1, true, false, err) ||
            bind(m, &L->wo, NAME("attn_output.weight"), q_dim, hp->dim, true, true, err) ||
            bind(m, &L->bq, NAME("attn_q.bias"), q_dim, 1, bias, false, err) ||
            bind(m, &L->bk, NAME("attn_k.bias"), kv_dim, 1, bias, false, err) ||
            bind(m, &L->bv, NAME("attn_v.bias"), kv_dim, 1, bias, false, err) ||
            bind(m, &L->q_norm, NAME("attn_q_norm.weight"), hp->head_dim, 1, qk_norm, false, err) ||
            bind(m, &L->k_norm, NAME("attn_k_norm.weight"), hp->head_dim, 1, qk_norm, false, err) ||
            bind(m, &L->ffn_norm, NAME("ffn_norm.weight"), hp->dim, 1, true, false, err) ||
            bind(m, &L->w_down, NAME("ffn_down.weight"), hp->ffn_dim, hp->dim, true, true, err))
            return -1;
#undef NAME
    }
    return 0;
}

// Everything after the file is open: hyperparameters, tokenizer, tensors, names. path names
// the model when the file has no general.name. On failure m is freed.
static int model_load_opened(model **out, model *m, const char *path, errbuf *err) {
    if (load_hparams(m, err)) goto fail;
    m->tok = tokenizer_load(&m->file, err);
    if (!m->tok) goto fail;
    m->hp.n_vocab = tokenizer_n_vocab(m->tok);
    if (load_tensors(m, err)) goto fail;
    if (gguf_get_strdup(&m->file, "tokenizer.chat_template", &m->chat_template, err) < 0) goto fail;
    if (gguf_get_strdup(&m->file, "general.name", &m->name, err) <= 0) {
        const char *base = strrchr(path, '/');
        m->name = xstrdup(base ? base + 1 : path);
    }
    *out = m;
    return 0;
fail:
    model_free(m);
    return -1;
}

int model_load(model **out, const char *path, errbuf *err) {
    *out = NULL;
    model *m = xcalloc(1, sizeof *m);
    if (gguf_open(&m->file, path, err)) { free(m); return -1; }
    return model_load_opened(out, m, path, err);
}

int model_load_memory(model **out, const void *data, uint64_t size, const char *name, errbuf *err) {
    *out = NULL;
    model *m = xcalloc(1, sizeof *m);
    if (gguf_open_memory(&m->file, data, size, name, err)) { free(m); return -1; }
    return model_load_opened(out, m, name, err);
}

static void free_owned(tensor *t, void *ud) {
    (void)ud;
    free(t->owned);
    t->owned = NULL;
}

// One weight to copy out of the file's mapping.
typedef struct copy_item { tensor *t; const uint8_t *src; uint8_t *dst; size_t n; } copy_item;
typedef struct copy_list { copy_item *items; int n, cap; uint64_t total; backend *b; } copy_list;
typedef struct copy_job { const copy_list *l; int ith, nth; bool drop; } copy_job;

#define COPY_ALIGN 64   // bytes: each tensor starts on a cache line
#define COPY_HEADROOM ((uint64_t)512 << 20)   // bytes left to everything else after the copy

static void collect_copy(tensor *t, void *ud) {
    copy_list *l = ud;
    if (!t->data || t->data != t->src_data) return;   // converted (or absent): not read from the file
    if (l->b && l->b->weight_keeps_own && l->b->weight_keeps_own(l->b, t)) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = xrealloc(l->items, (size_t)l->cap * sizeof *l->items);
    }
    l->items[l->n++] = (copy_item){ t, t->src_data, NULL, t->n_bytes };
    l->total += (t->n_bytes + COPY_ALIGN - 1) / COPY_ALIGN * COPY_ALIGN;
}

// The whole pages of [p, p+n) in the file's mapping are no longer read: drop them from this
// process right away, so the resident set never holds a tensor twice (the page cache keeps the
// file while memory allows; a later read would fault the pages back).
static void drop_pages(const void *p, size_t n) {
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + pg - 1) / pg * pg, b = ((uintptr_t)p + n) / pg * pg;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

// Thread ith of nth copies the ith slice of every weight: the kernel's zeroing of the new pages
// and the page-cache reads, most of the time here, are shared out evenly.
static void *copy_worker(void *arg) {
    const copy_job *j = arg;
    for (int i = 0; i < j->l->n; i++) {
        const copy_item *it = &j->l->items[i];
        size_t per = (it->n + (size_t)j->nth - 1) / (size_t)j->nth;
        size_t a = per * (size_t)j->ith, b = a + per < it->n ? a + per : it->n;
        if (a >= b) continue;
        memcpy(it->dst + a, it->src + a, b - a);
        if (j->drop) drop_pages(it->src + a, b - a);
    }
    return NULL;
}

uint64_t model_copy_weights(model *m, int n_threads, backend *b) {
    if (m->weights_copy) return 0;
    copy_list l = { .b = b };
    model_for_each_tensor(m, collect_copy, &l);
    // Not when the copy would not fit beside everything else (the mapping pages from the file on
    // demand; a copy larger than the free memory would swap or be killed): keep the mapping.
    uint64_t avail = mem_available_bytes();
    uint8_t *dst = l.n && (avail == 0 || l.total + COPY_HEADROOM < avail) ? malloc_large(l.total) : NULL;
    if (!dst) { free(l.items); return 0; }
    uint64_t off = 0;
    for (int i = 0; i < l.n; i++) {
        l.items[i].dst = dst + off;
        off += (l.items[i].n + COPY_ALIGN - 1) / COPY_ALIGN * COPY_ALIGN;
    }
    n_threads = work_threads(n_threads);
    copy_job jobs[MAX_WORK_THREADS];
    for (int i = 0; i < n_threads; i++) jobs[i] = (copy_job){ &l, i, n_threads, m->file.mapped };
    run_on_threads(copy_worker, jobs, sizeof jobs[0], n_threads);
    for (int i = 0; i < l.n; i++) l.items[i].t->data = l.items[i].t->src_data = l.items[i].dst;
    if (m->hp.tied_output) m->output = m->tok_embd;
    m->weights_copy = dst;
    m->weights_copy_bytes = l.total;
    free(l.items);
    return l.total;
}

void model_free(model *m) {
    if (!m) return;
    if (m->layers) model_for_each_tensor(m, free_owned, NULL);
    free(m->weights_copy);
    free(m->layers);
    tokenizer_free(m->tok);
    free(m->chat_template);
    free(m->name);
    gguf_close(&m->file);
    free(m);
}

void model_for_each_tensor(model *m, void (*fn)(tensor *t, void *ud), void *ud) {
    fn(&m->tok_embd, ud);
    fn(&m->output_norm, ud);
    if (!m->hp.tied_output) fn(&m->output, ud);
    for (int l = 0; l < m->hp.n_layer; l++) {
        layer_weights *L = &m->layers[l];
        tensor *ts[] = { &L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv,
                         &L->q_norm, &L->k_norm, &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down };
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i]->data) fn(ts[i], ud);
    }
}

// Converts a tensor's source weights to `type` into a new buffer (rows in parallel); NULL when
// there is no memory for it.
static void *convert_from_source(const tensor *t, uint32_t type, size_t *row_bytes_out) {
    size_t row_bytes = (size_t)wtype_row_bytes(type, (uint64_t)t->ne0);
    uint8_t *dst = malloc_large(row_bytes * (size_t)t->ne1);
    if (!dst) return NULL;
    convert_rows(t->src_data, t->src_type, t->src_row_bytes, dst, type, row_bytes, t->ne0, t->ne1, 0);
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
                } else if (!(c->data = convert_from_source(t, type, &c->row_bytes))) {
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
        if (b) b->weight_prepare(b, t, NULL);
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

typedef struct prep_ctx { const model *m; backend *b; errbuf *err; int rc; } prep_ctx;

// Whether [p, p+n) lies in the model file's mapping.
static bool in_file_mapping(const model *m, const void *p, size_t n) {
    const uint8_t *a = p, *base = m->file.base;
    return m->file.mapped && a >= base && a + n <= base + m->file.size;
}

static void prep_one(tensor *t, void *ud) {
    prep_ctx *pc = ud;
    if (pc->rc) return;
    if (t->ne1 > 1 && !pc->b->supports_type(pc->b, t->type)) {
        pc->rc = err_set(pc->err, "backend %s: tensor %s has type %s, which it cannot multiply",
                         pc->b->name, t->name, wtype_name(t->type));
        return;
    }
    pc->rc = pc->b->weight_prepare(pc->b, t, pc->err);
    // A backend that multiplies from a copy of its own (the CPU's packed layout) has just read
    // the file's pages under the tensor: drop them, so the resident set does not hold the
    // weight twice (an embedding row read later faults its page back from the page cache).
    if (!pc->rc && pc->b->weight_keeps_own && pc->b->weight_keeps_own(pc->b, t) &&
        in_file_mapping(pc->m, t->data, t->n_bytes))
        drop_pages(t->data, t->n_bytes);
}

static void release_one(tensor *t, void *ud) {
    backend *b = ud;
    b->weight_release(b, t);
}

void model_release_backend(model *m, backend *b) {
    model_for_each_tensor(m, release_one, b);
    if (m->hp.tied_output) m->output.bk = NULL;
}

int model_prepare_backend(model *m, backend *b, errbuf *err) {
    prep_ctx pc = { m, b, err, 0 };
    model_for_each_tensor(m, prep_one, &pc);
    if (!pc.rc && m->hp.tied_output) m->output.bk = m->tok_embd.bk;
    return pc.rc;
}

int forward_ctx_init(forward_ctx *fc, backend *b, const model *m, int n_batch, int logits_rows,
                     errbuf *err) {
    memset(fc, 0, sizeof *fc);
    const model_hparams *hp = &m->hp;
    if (n_batch < 1) n_batch = 1;
    if (logits_rows < 1) logits_rows = 1;
    fc->b = b;
    fc->m = m;
    fc->n_batch = n_batch;
    fc->logits_rows = logits_rows;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_kv_head * hp->head_dim;
    fc->x = b->act_new(b, n_batch, hp->dim);
    fc->h = b->act_new(b, n_batch, hp->dim);
    fc->q = b->act_new(b, n_batch, q_dim);
    fc->k = b->act_new(b, n_batch, kv_dim);
    fc->v = b->act_new(b, n_batch, kv_dim);
    fc->att = b->act_new(b, n_batch, q_dim);
    fc->gate = b->act_new(b, n_batch, hp->ffn_dim);
    fc->up = b->act_new(b, n_batch, hp->ffn_dim);
    fc->logits = b->act_new(b, logits_rows, hp->n_vocab);
    if (!fc->x || !fc->h || !fc->q || !fc->k || !fc->v || !fc->att || !fc->gate || !fc->up || !fc->logits) {
        forward_ctx_free(fc);
        return err_set(err, "backend %s: out of memory for the activations of a batch of %d", b->name, n_batch);
    }
    return 0;
}

void forward_ctx_free(forward_ctx *fc) {
    if (!fc->b) return;
    free(fc->observe_buf);
    bk_act *all[] = { fc->x, fc->h, fc->q, fc->k, fc->v, fc->att, fc->gate, fc->up, fc->logits };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) fc->b->act_free(fc->b, all[i]);
    memset(fc, 0, sizeof *fc);
}

int model_forward(forward_ctx *fc, kv_cache *kv, const int32_t *tokens, int n, bool all_logits,
                  float *logits, errbuf *err) {
    const model *m = fc->m;
    const model_hparams *hp = &m->hp;
    backend *b = fc->b;
    if (n < 1 || n > fc->n_batch) return err_set(err, "forward: batch of %d tokens (1..%d allowed)", n, fc->n_batch);
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= hp->n_vocab)
            return err_set(err, "forward: token id %d out of range (vocabulary %d)", tokens[t], hp->n_vocab);
    int n_out = logits ? (all_logits ? n : 1) : 0;
    if (n_out > fc->logits_rows)
        return err_set(err, "forward: %d logit rows requested, buffer holds %d", n_out, fc->logits_rows);

    // Keys are cached un-rotated and rotated by their slot inside attention (docs/KV.md), so the
    // cache knows the rope parameters; q is rotated here by its slot n_past + t.
    kv_shape ks = { hp->n_head, hp->n_kv_head, hp->head_dim, hp->rope_dim, hp->rope_base, hp->rope_neox };
    if (kv_cache_set_shape(kv, &ks, err)) return -1;
    // With an eviction policy this compacts the cache; with none it fails when n does not fit.
    if (kv_cache_make_room(kv, n, err)) return -1;

    int32_t pos_stack[256];
    int32_t *pos = n <= 256 ? pos_stack : xmalloc((size_t)n * sizeof(int32_t));
    int n_past = kv->n_used;
    for (int t = 0; t < n; t++) pos[t] = n_past + t;

    rope_params rq = { hp->n_head, hp->head_dim, hp->rope_dim, hp->rope_base, hp->rope_neox };
    attn_params ap = { hp->n_head, hp->n_kv_head, hp->head_dim, 1.0f / sqrtf((float)hp->head_dim) };

    if (fc->observe && !fc->observe_buf) {
        int cols = hp->dim > hp->ffn_dim ? hp->dim : hp->ffn_dim;
        if (hp->n_head * hp->head_dim > cols) cols = hp->n_head * hp->head_dim;
        fc->observe_buf = xmalloc((size_t)fc->n_batch * (size_t)cols * sizeof(float));
    }
#define OBSERVE(act, layer, kind, cols) do { if (fc->observe) {                           \
        if (b->end_batch(b, err)) goto fail;                                                \
        b->act_read(b, act, 0, n, fc->observe_buf);                                         \
        fc->observe(fc->observe_ud, layer, kind, fc->observe_buf, n, (int)(cols));          \
        b->begin_batch(b); } } while (0)
    b->begin_batch(b);
    b->embed(b, &m->tok_embd, tokens, n, fc->x);
    for (int l = 0; l < hp->n_layer; l++) {
        const layer_weights *L = &m->layers[l];
        b->rmsnorm(b, fc->x, &L->attn_norm, hp->rms_eps, n, fc->h);
        OBSERVE(fc->h, l, TK_ATTN_Q, hp->dim);
        b->matmul(b, &L->wq, fc->h, 0, n, fc->q);
        b->matmul(b, &L->wk, fc->h, 0, n, fc->k);
        b->matmul(b, &L->wv, fc->h, 0, n, fc->v);
        if (L->bq.data) b->add_bias(b, fc->q, &L->bq, n);
        if (L->bk.data) b->add_bias(b, fc->k, &L->bk, n);
        if (L->bv.data) b->add_bias(b, fc->v, &L->bv, n);
        if (L->q_norm.data) b->rmsnorm(b, fc->q, &L->q_norm, hp->rms_eps, n, fc->q);   // each head
        if (L->k_norm.data) b->rmsnorm(b, fc->k, &L->k_norm, hp->rms_eps, n, fc->k);
        b->rope(b, fc->q, n, pos, &rq);   // k stays un-rotated: attention rotates it by slot
        b->kv_store(b, kv, l, fc->k, fc->v, n, pos);
        b->attention(b, fc->q, kv, l, n, n_past, &ap, fc->att);
        OBSERVE(fc->att, l, TK_ATTN_OUTPUT, hp->n_head * hp->head_dim);
        b->matmul(b, &L->wo, fc->att, 0, n, fc->h);
        b->add(b, fc->x, fc->h, n);
        b->rmsnorm(b, fc->x, &L->ffn_norm, hp->rms_eps, n, fc->h);
        OBSERVE(fc->h, l, TK_FFN_GATE, hp->dim);
        b->matmul(b, &L->w_gate, fc->h, 0, n, fc->gate);
        b->matmul(b, &L->w_up, fc->h, 0, n, fc->up);
        b->swiglu(b, fc->gate, fc->up, n);
        OBSERVE(fc->gate, l, TK_FFN_DOWN, hp->ffn_dim);
        b->matmul(b, &L->w_down, fc->gate, 0, n, fc->h);
        b->add(b, fc->x, fc->h, n);
    }
    if (n_out > 0) {
        // Final norm only over the rows whose logits are wanted (the last one when decoding).
        b->rmsnorm(b, fc->x, &m->output_norm, hp->rms_eps, n, fc->h);
        b->matmul(b, &m->output, fc->h, n - n_out, n_out, fc->logits);
    }
#undef OBSERVE
    int rc = b->end_batch(b, err);
    if (pos != pos_stack) free(pos);
    if (rc) return rc;
    kv->n_used += n;
    if (n_out > 0) b->act_read(b, fc->logits, 0, n_out, logits);
    return 0;
fail:
    if (pos != pos_stack) free(pos);
    return -1;
}

typedef struct file_reads { const uint8_t *lo, *hi; bool any; } file_reads;

static void note_file_read(tensor *t, void *ud) {
    file_reads *r = ud;
    const uint8_t *d = t->data, *src = t->src_data;   // src: what a plan's conversion reads
    if ((d && d >= r->lo && d < r->hi) || (src && src >= r->lo && src < r->hi)) r->any = true;
}

int model_check_file(const model *m, errbuf *err) {
    if (!m->file.mapped || m->file.fd < 0) return 0;
    file_reads r = { m->file.base, m->file.base + m->file.size, false };
    model_for_each_tensor((model *)m, note_file_read, &r);
    return r.any ? gguf_check_size(&m->file, err) : 0;
}
