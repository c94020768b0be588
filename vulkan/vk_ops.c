// The ops of engine/backend.h as dispatches of vulkan/shaders/*.comp (kv_store and attention:
// vk_attn.c). Each checks what the shader cannot (sizes against buffers, uploaded weights),
// records its dispatches, and leaves any error for end_batch to report. Push-constant structs
// mirror the shaders' `PC` blocks.
#include "vulkan/vk.h"
#include "engine/rope.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GROUPS(n, per) ((uint32_t)(((n) + (per) - 1) / (per)))

static vk_bind whole(const vk_buf *b, bool write) { return (vk_bind){ b->buf, 0, VK_WHOLE_SIZE, write }; }

static bool act_ok(vk_backend *v, const bk_act *a, int n, const char *op) {
    if (!a || n > a->rows) {
        vk_fail(v, "vulkan: %s: %d rows do not fit the activation (%lld rows)", op, n, a ? (long long)a->rows : 0LL);
        return false;
    }
    return true;
}

// The device copy of t, checked against the tensor as it is now.
static vk_weight *weight(vk_backend *v, const tensor *t, const char *op) {
    vk_weight *w = vk_weight_of(v, t);
    if (!w || w->src != t->data || w->src_type != t->type || w->ne0 != t->ne0 || w->ne1 != t->ne1) {
        vk_fail(v, "vulkan: %s: tensor %s is not uploaded (or changed since): call model_prepare_backend", op,
                t->name ? t->name : "?");
        return NULL;
    }
    return w;
}

static void op_embed(backend *b, const tensor *emb, const int32_t *ids, int n, bk_act *out) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, out, n, "embed")) return;
    vk_weight *w = weight(v, emb, "embed");
    if (!w) return;
    for (int t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= w->ne1) { vk_fail(v, "vulkan: embed: id %d out of range", ids[t]); return; }
    vk_bind ib;
    if (!vk_upload(v, ids, (size_t)n * sizeof *ids, &ib)) return;
    vk_prof_begin(v);
    for (int i = 0; i < w->n_parts; i++) {
        const vk_part *p = &w->parts[i];
        struct { uint32_t K, row_words, scale_off, out_stride; int32_t lo, hi; } pc = {
            (uint32_t)w->ne0, w->row_words, p->scale_off, (uint32_t)out->cols, (int32_t)p->row0,
            (int32_t)(p->row0 + p->rows) };
        vk_bind bind[3] = { whole(&p->buf, false), ib, whole(&out->buf, true) };
        vk_dispatch(v, &v->embed[w->slot], bind, 3, &pc, sizeof pc, GROUPS(w->ne0, 64), (uint32_t)n, 1);
    }
    vk_prof_end(v, OP_EMBED);
}

static void op_rmsnorm(backend *b, const bk_act *x, const tensor *g, float eps, int n, bk_act *out) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, x, n, "rmsnorm") || !act_ok(v, out, n, "rmsnorm")) return;
    vk_weight *w = weight(v, g, "rmsnorm");
    if (!w) return;
    // Groups of w->ne0 (per-head norm): rows of that length over x and out alike.
    const bool grouped = w->ne0 * w->ne1 < x->cols;
    if (w->slot != VT_F32 || out->cols < x->cols ||
        (grouped && (w->ne1 != 1 || x->cols % w->ne0 || out->cols != x->cols))) {
        vk_fail(v, "vulkan: rmsnorm: weight %s does not fit rows of %lld", g->name, (long long)x->cols);
        return;
    }
    const uint32_t groups = grouped ? (uint32_t)(x->cols / w->ne0) : 1;
    struct { uint32_t d, x_stride, out_stride; float eps; } pc = {
        (uint32_t)(x->cols / groups), (uint32_t)(x->cols / groups), (uint32_t)(grouped ? x->cols / groups : out->cols), eps };
    vk_bind bind[3] = { whole(&x->buf, false), whole(&w->parts[0].buf, false), whole(&out->buf, true) };
    vk_prof_begin(v);
    vk_dispatch(v, &v->rmsnorm, bind, 3, &pc, sizeof pc, (uint32_t)n * groups, 1, 1);
    vk_prof_end(v, OP_RMSNORM);
}

static void op_matmul(backend *b, const tensor *t, const bk_act *x, int64_t x_row0, int n, bk_act *out) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, out, n, "matmul")) return;
    vk_weight *w = weight(v, t, "matmul");
    if (!w) return;
    if (x_row0 < 0 || x_row0 + n > x->rows || x->cols < w->ne0 || out->cols < w->ne1) {
        vk_fail(v, "vulkan: matmul %s: shapes do not fit (x %lldx%lld from row %lld, out %lldx%lld)", t->name,
                (long long)x->rows, (long long)x->cols, (long long)x_row0, (long long)out->rows, (long long)out->cols);
        return;
    }
    int slot = w->slot;
    vk_pipe *pipe = v->rows_matmul ? &v->matmul_rows[slot][n > 1] : &v->matmul[slot][n > 1];
    int64_t per_group = v->rows_matmul ? 64 : 2;   // rows per workgroup
    uint32_t max_x = v->d.props.limits.maxComputeWorkGroupCount[0];
    vk_prof_begin(v);
    for (int i = 0; i < w->n_parts; i++) {
        const vk_part *p = &w->parts[i];
        uint32_t groups = GROUPS(p->rows, per_group), gx = groups < max_x ? groups : max_x;
        struct { uint32_t K, M, n, x_off, x_stride, y_stride, row_words, scale_off, gx, y_row_off; } pc = {
            (uint32_t)w->ne0, (uint32_t)p->rows, (uint32_t)n, (uint32_t)(x_row0 * x->cols), (uint32_t)x->cols,
            (uint32_t)out->cols, w->row_words, p->scale_off, gx, (uint32_t)p->row0 };
        vk_bind bind[3] = { whole(&p->buf, false), whole(&x->buf, false), whole(&out->buf, true) };
        vk_dispatch(v, pipe, bind, 3, &pc, sizeof pc, gx, GROUPS(groups, gx), n > 1 ? GROUPS(n, 8) : 1);
    }
    vk_prof_end(v, OP_MATMUL);
}

static void op_add_bias(backend *b, bk_act *x, const tensor *bias, int n) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, x, n, "bias")) return;
    vk_weight *w = weight(v, bias, "bias");
    if (!w) return;
    if (w->slot != VT_F32 || w->ne0 > x->cols) { vk_fail(v, "vulkan: bias %s does not fit", bias->name); return; }
    struct { uint32_t cols, x_stride; } pc = { (uint32_t)w->ne0, (uint32_t)x->cols };
    vk_bind bind[2] = { whole(&x->buf, true), whole(&w->parts[0].buf, false) };
    vk_prof_begin(v);
    vk_dispatch(v, &v->bias, bind, 2, &pc, sizeof pc, GROUPS(w->ne0, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_BIAS);
}

// (n, half, 2): the (cos, sin) of every token's pairs, from engine/rope.h as the CPU takes them;
// shared by the q rotations of every layer of a batch that turns by the same rotation (a table
// per rotation, so layers that alternate between two do not make them again and again).
static bool rope_table(vk_backend *v, const int32_t *pos, int n, const rope_params *p, vk_bind *out) {
    int half = p->freqs->rope_dim / 2;
    for (int r = 0; r < KV_ROPES; r++) {
        struct vk_rope_table *e = &v->rope_tables[r];
        if (e->valid && e->n == n && rope_freqs_same(&e->freqs, p->freqs) && memcmp(e->pos, pos, (size_t)n * sizeof *pos) == 0) {
            *out = e->bind;
            return true;
        }
    }
    float *cs = xmalloc((size_t)n * (size_t)half * 2 * sizeof(float));
    for (int t = 0; t < n; t++) rope_cos_sin(pos[t], p->freqs, cs + (size_t)t * half * 2);
    bool ok = vk_upload(v, cs, (size_t)n * (size_t)half * 2 * sizeof(float), out);
    free(cs);
    if (!ok) return false;
    struct vk_rope_table *e = &v->rope_tables[v->rope_next];
    v->rope_next = (v->rope_next + 1) % KV_ROPES;
    e->pos = xrealloc(e->pos, (size_t)n * sizeof *pos);
    memcpy(e->pos, pos, (size_t)n * sizeof *pos);
    e->n = n;
    e->freqs = *p->freqs;
    e->bind = *out;
    e->valid = true;
    return true;
}

static void op_rope(backend *b, bk_act *x, int n, const int32_t *positions, const rope_params *p) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, x, n, "rope")) return;
    int rope_dim = p->freqs->rope_dim;
    if (rope_dim < 2 || rope_dim > p->head_dim || (int64_t)p->n_heads * p->head_dim > x->cols) {
        vk_fail(v, "vulkan: rope: %d heads of %d (rope %d) do not fit rows of %lld", p->n_heads, p->head_dim,
                rope_dim, (long long)x->cols);
        return;
    }
    vk_bind tb;
    if (!rope_table(v, positions, n, p, &tb)) return;
    int half = rope_dim / 2;
    struct { uint32_t n_heads, head_dim, half, neox, stride; } pc = {
        (uint32_t)p->n_heads, (uint32_t)p->head_dim, (uint32_t)half, p->neox ? 1u : 0u, (uint32_t)x->cols };
    vk_bind bind[2] = { whole(&x->buf, true), tb };
    vk_prof_begin(v);
    vk_dispatch(v, &v->rope, bind, 2, &pc, sizeof pc, GROUPS((int64_t)p->n_heads * half, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_ROPE);
}

static void op_glu(backend *b, bk_act *gate, const bk_act *up, int n, int act) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, gate, n, "glu") || !act_ok(v, up, n, "glu")) return;
    if (up->cols < gate->cols) { vk_fail(v, "vulkan: glu: up is narrower than gate"); return; }
    struct { uint32_t cols, g_stride, u_stride, act; } pc = { (uint32_t)gate->cols, (uint32_t)gate->cols, (uint32_t)up->cols,
                                                              act == GLU_GELU_TANH ? 1u : 0u };
    vk_bind bind[2] = { whole(&gate->buf, true), whole(&up->buf, false) };
    vk_prof_begin(v);
    vk_dispatch(v, &v->glu, bind, 2, &pc, sizeof pc, GROUPS(gate->cols, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_GLU);
}

static void op_scale(backend *b, bk_act *x, float s, int n) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, x, n, "scale")) return;
    struct { uint32_t cols, x_stride; float s; } pc = { (uint32_t)x->cols, (uint32_t)x->cols, s };
    vk_bind bind[1] = { whole(&x->buf, true) };
    vk_prof_begin(v);
    vk_dispatch(v, &v->scale, bind, 1, &pc, sizeof pc, GROUPS(x->cols, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_SCALE);
}

static void op_add(backend *b, bk_act *x, const bk_act *y, int n) {
    vk_backend *v = VKB(b);
    if (n <= 0 || !act_ok(v, x, n, "add") || !act_ok(v, y, n, "add")) return;
    if (y->cols < x->cols) { vk_fail(v, "vulkan: add: y is narrower than x"); return; }
    struct { uint32_t cols, x_stride, y_stride; } pc = { (uint32_t)x->cols, (uint32_t)x->cols, (uint32_t)y->cols };
    vk_bind bind[2] = { whole(&x->buf, true), whole(&y->buf, false) };
    vk_prof_begin(v);
    vk_dispatch(v, &v->add, bind, 2, &pc, sizeof pc, GROUPS(x->cols, 64), (uint32_t)n, 1);
    vk_prof_end(v, OP_ADD);
}

void vk_ops_install(backend *b) {
    b->embed = op_embed;
    b->rmsnorm = op_rmsnorm;
    b->matmul = op_matmul;
    b->add_bias = op_add_bias;
    b->rope = op_rope;
    b->kv_store = vk_op_kv_store;     // vk_attn.c
    b->attention = vk_op_attention;
    b->glu = op_glu;
    b->add = op_add;
    b->scale = op_scale;
}
