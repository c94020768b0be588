// The forward pass, written once over the backend op interface, and the model's weights on a
// backend (loading: engine/model_load.c; precision plans: engine/model_plan.c).
#include "engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct prep_ctx { model *m; backend *b; errbuf *err; int rc; } prep_ctx;

// Whether [p, p+n) lies in the model file's mapping.
static bool in_file_mapping(const model *m, const void *p, size_t n) {
    const uint8_t *a = p, *base = m->file.base;
    return m->file.mapped && a >= base && a + n <= base + m->file.size;
}

bool model_drop_file_pages(const model *m, const void *p, size_t n) {
    if (!p || !in_file_mapping(m, p, n)) return false;
    mem_drop_pages(p, n);
    return true;
}

bool model_tensor_rows_only(const model *m, const tensor *t) { return t == &m->tok_embd && !m->hp.tied_output; }

int model_prepare_tensor(model *m, backend *b, tensor *t, errbuf *err) {
    if (t->ne1 > 1 && !b->supports_type(b, t->type))
        return err_set(err, "backend %s: tensor %s has type %s, which it cannot multiply", b->name, t->name,
                       wtype_name(t->type));
    const bool own = b->weight_keeps_own && b->weight_keeps_own(b, t);
    if (own && model_tensor_rows_only(m, t)) return 0;   // its rows stay where they are, read as they are
    if (b->weight_prepare(b, t, err)) return -1;
    if (!own || !b->weight_holds_own || !b->weight_holds_own(b, t)) return 0;
    // b multiplies from its own copy and has just read the rows under it: the resident set is
    // not to hold the weight twice. The file's pages fault back from the page cache should the
    // embedding's rows be read; a conversion's buffer has no such backing and stays for it.
    if (!model_drop_file_pages(m, t->data, t->n_bytes) && t->owned && t->data == t->owned && t != &m->tok_embd) {
        free(t->owned);
        t->owned = NULL;
        t->data = NULL;
    }
    return 0;
}

static void prep_one(tensor *t, void *ud) {
    prep_ctx *pc = ud;
    if (!pc->rc) pc->rc = model_prepare_tensor(pc->m, pc->b, t, pc->err);
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

// The cache's window layout is the model's: its rings on the model's window layers, made for its
// window (a cache without rings suits every model).
static int check_windows(const model *m, const kv_cache *kv, errbuf *err) {
    if (!kv->ring_rows) return 0;
    bool same = m->layer_swa && kv->ring_window == m->hp.swa_window && kv->n_layer == m->hp.n_layer;
    for (int l = 0; same && l < kv->n_layer; l++) same = !kv->ring_layer[l] == !m->layer_swa[l];
    if (same) return 0;
    return err_set(err, "forward: the KV cache keeps window layers of %d slots in rings, and this model's window "
                   "layers differ (window %d)", kv->ring_window, m->hp.swa_window);
}

static int forward_batch(forward_ctx *fc, kv_cache *const *kvs, int n_seq, const int32_t *tokens, int n,
                         bool all_logits, float *logits, errbuf *err);

int model_forward(forward_ctx *fc, kv_cache *kv, const int32_t *tokens, int n, bool all_logits,
                  float *logits, errbuf *err) {
    const model *m = fc->m;
    const model_hparams *hp = &m->hp;
    if (n < 1 || n > fc->n_batch) return err_set(err, "forward: batch of %d tokens (1..%d allowed)", n, fc->n_batch);
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= hp->n_vocab)
            return err_set(err, "forward: token id %d out of range (vocabulary %d)", tokens[t], hp->n_vocab);
    int n_out = logits ? (all_logits ? n : 1) : 0;
    if (n_out > fc->logits_rows)
        return err_set(err, "forward: %d logit rows requested, buffer holds %d", n_out, fc->logits_rows);
    if (check_windows(m, kv, err)) return -1;
    // a batch longer than the window layers' rings hold goes in parts that fit
    int part = kv_cache_max_batch(kv);
    for (int i = 0; i < n; i += part) {
        int c = n - i < part ? n - i : part;
        float *out = !logits ? NULL : all_logits ? logits + (size_t)i * hp->n_vocab : (i + c == n ? logits : NULL);
        if (forward_batch(fc, &kv, 1, tokens + i, c, all_logits, out, err)) return -1;
    }
    return 0;
}

int model_forward_seqs(forward_ctx *fc, kv_cache *const *kvs, const int32_t *tokens, int n_seq, float *logits,
                       errbuf *err) {
    const model_hparams *hp = &fc->m->hp;
    if (!fc->b->act_rows) return err_set(err, "forward: backend %s decodes one conversation a pass", fc->b->name);
    if (n_seq < 1 || n_seq > fc->n_batch || n_seq > fc->logits_rows)
        return err_set(err, "forward: %d conversations in one pass (1..%d allowed)", n_seq,
                       fc->n_batch < fc->logits_rows ? fc->n_batch : fc->logits_rows);
    if (fc->observe) return err_set(err, "forward: observing the rows needs one conversation a pass");
    for (int i = 0; i < n_seq; i++) {
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            return err_set(err, "forward: token id %d out of range (vocabulary %d)", tokens[i], hp->n_vocab);
        if (kvs[i]->n_ctx != kvs[0]->n_ctx) return err_set(err, "forward: conversations of one pass need one context size");
        if (check_windows(fc->m, kvs[i], err)) return -1;
    }
    return forward_batch(fc, kvs, n_seq, tokens, n_seq, false, logits, err);
}

static void free_rows(backend *b, bk_act **rows, int n_seq) {
    for (int i = 0; rows && i < 4 * n_seq; i++) b->act_free(b, rows[i]);
    free(rows);
}

// One pass (the arguments checked by the caller): n_seq == 1, n tokens of one conversation that
// its cache's rings hold; n_seq > 1, one token of each of n_seq conversations (n == n_seq), each
// stored in and attending over its own cache, every row's logits out.
static int forward_batch(forward_ctx *fc, kv_cache *const *kvs, int n_seq, const int32_t *tokens, int n,
                         bool all_logits, float *logits, errbuf *err) {
    const model *m = fc->m;
    const model_hparams *hp = &m->hp;
    backend *b = fc->b;
    kv_cache *kv = kvs[0];
    int n_out = logits ? (all_logits || n_seq > 1 ? n : 1) : 0;

    // Keys are cached un-rotated and rotated by their slot inside attention (docs/KV.md), so the
    // cache knows the rope parameters; q is rotated here by its slot n_past + t.
    if (fc->rope_n_ctx != kv->n_ctx) {   // longrope's factors depend on the run's context
        model_rope_freqs(m, kv->n_ctx, false, &fc->rope);
        model_rope_freqs(m, kv->n_ctx, true, &fc->rope_swa);
        fc->rope_n_ctx = kv->n_ctx;
    }
    const bool swa = m->layer_swa != NULL, swa_rope = swa && hp->rope_swa_own;   // gemma3's window layers' rope
    kv_shape ks = { hp->n_head, hp->n_kv_head, hp->head_dim, &fc->rope, swa_rope ? &fc->rope_swa : NULL,
                    swa_rope ? m->layer_swa : NULL, hp->rope_neox };
    // With an eviction policy this compacts the cache; with none it fails when n does not fit.
    for (int i = 0; i < n_seq; i++)
        if (kv_cache_set_shape(kvs[i], &ks, err) || kv_cache_make_room(kvs[i], n_seq == 1 ? n : 1, err)) return -1;

    int32_t pos_stack[256];
    int32_t *pos = n <= 256 ? pos_stack : xmalloc((size_t)n * sizeof(int32_t));
    int n_past = kv->n_used;
    for (int t = 0; t < n; t++) pos[t] = n_seq == 1 ? n_past + t : kvs[t]->n_used;
    // several conversations: each one's row of q, k, v and the attention output, as views
    bk_act **rows = n_seq > 1 ? xcalloc((size_t)n_seq * 4, sizeof *rows) : NULL;
    for (int i = 0; i < (rows ? n_seq : 0); i++) {
        rows[4 * i] = b->act_rows(b, fc->q, i, 1);
        rows[4 * i + 1] = b->act_rows(b, fc->k, i, 1);
        rows[4 * i + 2] = b->act_rows(b, fc->v, i, 1);
        rows[4 * i + 3] = b->act_rows(b, fc->att, i, 1);
    }

    // a window layer (gemma) sees the last swa_window slots; gemma3's turns by its own base
    rope_params rq = { hp->n_head, hp->head_dim, &fc->rope, hp->rope_neox };
    rope_params rq_swa = { hp->n_head, hp->head_dim, swa_rope ? &fc->rope_swa : &fc->rope, hp->rope_neox };
    attn_params ap = { hp->n_head, hp->n_kv_head, hp->head_dim, hp->attn_scale, 0, hp->attn_softcap };
    attn_params ap_swa = { hp->n_head, hp->n_kv_head, hp->head_dim, hp->attn_scale, hp->swa_window, hp->attn_softcap };

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
    if (hp->embed_scale) b->scale(b, fc->x, sqrtf((float)hp->dim), n);
    for (int l = 0; l < hp->n_layer; l++) {
        const layer_weights *L = &m->layers[l];
        const bool window = swa && m->layer_swa[l];
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
        b->rope(b, fc->q, n, pos, window ? &rq_swa : &rq);   // k stays un-rotated: attention rotates it by slot
        if (n_seq == 1) {
            b->kv_store(b, kv, l, fc->k, fc->v, n, pos);
            b->attention(b, fc->q, kv, l, n, n_past, window ? &ap_swa : &ap, fc->att);
        }
        for (int i = 0; i < (rows ? n_seq : 0); i++) {
            bk_act **r = rows + 4 * i;
            b->kv_store(b, kvs[i], l, r[1], r[2], 1, pos + i);
            b->attention(b, r[0], kvs[i], l, 1, pos[i], window ? &ap_swa : &ap, r[3]);
        }
        OBSERVE(fc->att, l, TK_ATTN_OUTPUT, hp->n_head * hp->head_dim);
        b->matmul(b, &L->wo, fc->att, 0, n, fc->h);
        if (L->post_attn_norm.data) b->rmsnorm(b, fc->h, &L->post_attn_norm, hp->rms_eps, n, fc->h);
        b->add(b, fc->x, fc->h, n);
        b->rmsnorm(b, fc->x, &L->ffn_norm, hp->rms_eps, n, fc->h);
        OBSERVE(fc->h, l, TK_FFN_GATE, hp->dim);
        b->matmul(b, &L->w_gate, fc->h, 0, n, fc->gate);
        b->matmul(b, &L->w_up, fc->h, 0, n, fc->up);
        b->glu(b, fc->gate, fc->up, n, hp->glu_act);
        OBSERVE(fc->gate, l, TK_FFN_DOWN, hp->ffn_dim);
        b->matmul(b, &L->w_down, fc->gate, 0, n, fc->h);
        if (L->post_ffn_norm.data) b->rmsnorm(b, fc->h, &L->post_ffn_norm, hp->rms_eps, n, fc->h);
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
    free_rows(b, rows, n_seq);
    if (rc) return rc;
    if (n_seq == 1) kv->n_used += n;
    for (int i = 0; i < (n_seq > 1 ? n_seq : 0); i++) kvs[i]->n_used++;
    if (n_out > 0) b->act_read(b, fc->logits, 0, n_out, logits);
    if (n_out > 0 && hp->final_softcap > 0.0f) {   // gemma2: cap * tanh(logit / cap), on the host for every backend
        const float cap = hp->final_softcap;
        for (size_t i = 0; i < (size_t)n_out * (size_t)hp->n_vocab; i++) logits[i] = cap * tanhf(logits[i] / cap);
    }
    return 0;
fail:
    if (pos != pos_stack) free(pos);
    free_rows(b, rows, n_seq);
    return -1;
}

