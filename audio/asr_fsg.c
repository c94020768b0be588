// State merging for pocketsphinx grammar networks (see asr_fsg.h).
#include "audio/asr_fsg.h"

#include "base/mem.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// An arc: word wid (-1: a null transition) from one state to another, log-probability logp in
// the network's log base (language weight applied).
typedef struct arc { int32_t from, to, logp, wid; } arc;

typedef struct graph {
    int n;              // states
    int start, final;
    arc *a;
    size_t na;
} graph;

// ---- signatures: int sequences interned to dense class numbers ----
typedef struct interner {
    int32_t *pool;      // every signature, one after another
    size_t pool_n, pool_cap;
    struct slot { size_t off; int32_t len; int32_t cls; uint64_t h; } *slot;
    size_t cap;         // power of two
    int n_cls;
} interner;

static uint64_t sig_hash(const int32_t *s, int32_t len) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t i = 0; i < len; i++) h = (h ^ (uint32_t)s[i]) * 1099511628211ull;
    return h;
}

static int intern(interner *in, const int32_t *s, int32_t len) {
    uint64_t h = sig_hash(s, len);
    size_t i = h & (in->cap - 1);
    for (; in->slot[i].len >= 0; i = (i + 1) & (in->cap - 1))
        if (in->slot[i].h == h && in->slot[i].len == len && memcmp(in->pool + in->slot[i].off, s, (size_t)len * sizeof *s) == 0)
            return in->slot[i].cls;
    if (in->pool_n + (size_t)len > in->pool_cap) {
        in->pool_cap = (in->pool_n + (size_t)len) * 2;
        in->pool = xrealloc(in->pool, in->pool_cap * sizeof *in->pool);
    }
    memcpy(in->pool + in->pool_n, s, (size_t)len * sizeof *s);
    in->slot[i] = (struct slot){ .off = in->pool_n, .len = len, .cls = in->n_cls, .h = h };
    in->pool_n += (size_t)len;
    return in->n_cls++;
}

static void interner_init(interner *in, int n_keys) {
    memset(in, 0, sizeof *in);
    in->cap = 16;
    while (in->cap < (size_t)n_keys * 2) in->cap *= 2;
    in->slot = xmalloc(in->cap * sizeof *in->slot);
    for (size_t i = 0; i < in->cap; i++) in->slot[i].len = -1;
}

static void interner_free(interner *in) { free(in->pool); free(in->slot); }

// ---- graph helpers ----
// arcs sorted by (key state, wid, other state): by source for outgoing, by target for incoming
static int by_from(const void *x, const void *y) {
    const arc *a = x, *b = y;
    if (a->from != b->from) return a->from < b->from ? -1 : 1;
    if (a->wid != b->wid) return a->wid < b->wid ? -1 : 1;
    if (a->to != b->to) return a->to < b->to ? -1 : 1;
    return a->logp > b->logp ? -1 : a->logp < b->logp;   // best first
}

// Arcs of the same (from, wid, to) kept once, with the best log-probability (the search keeps
// only the best path into a state anyway).
static void dedupe(graph *g) {
    qsort(g->a, g->na, sizeof *g->a, by_from);
    size_t k = 0;
    for (size_t i = 0; i < g->na; i++)
        if (!k || g->a[k - 1].from != g->a[i].from || g->a[k - 1].wid != g->a[i].wid || g->a[k - 1].to != g->a[i].to)
            g->a[k++] = g->a[i];
    g->na = k;
}

// first[s]..first[s + 1]: s's arcs in g->a (sorted by from) — CSR offsets, n + 1 of them.
static size_t *offsets_by_from(const graph *g) {
    size_t *first = xcalloc((size_t)g->n + 1, sizeof *first);
    for (size_t i = 0; i < g->na; i++) first[g->a[i].from + 1]++;
    for (int s = 0; s < g->n; s++) first[s + 1] += first[s];
    return first;
}

// States in an order where every arc goes forward; false on a cycle.
static bool topo_order(const graph *g, const size_t *first, int *order) {
    int *indeg = xcalloc((size_t)g->n, sizeof *indeg);
    for (size_t i = 0; i < g->na; i++) indeg[g->a[i].to]++;
    int head = 0, tail = 0;
    for (int s = 0; s < g->n; s++)
        if (!indeg[s]) order[tail++] = s;
    while (head < tail) {
        int s = order[head++];
        for (size_t i = first[s]; i < first[s + 1]; i++)
            if (--indeg[g->a[i].to] == 0) order[tail++] = g->a[i].to;
    }
    free(indeg);
    return tail == g->n;
}

// g with its states renumbered by cls (n_cls of them), arcs deduplicated.
static void quotient(graph *g, const int *cls, int n_cls) {
    for (size_t i = 0; i < g->na; i++) {
        g->a[i].from = cls[g->a[i].from];
        g->a[i].to = cls[g->a[i].to];
    }
    g->start = cls[g->start];
    g->final = cls[g->final];
    g->n = n_cls;
    dedupe(g);
}

// Keeps only states on some path from start to final.
static void prune_dead(graph *g) {
    size_t *first = offsets_by_from(g);
    bool *fwd = xcalloc((size_t)g->n, 1), *bwd = xcalloc((size_t)g->n, 1);
    int *stack = xmalloc((size_t)g->n * sizeof *stack), sp = 0;
    fwd[g->start] = true;
    stack[sp++] = g->start;
    while (sp) {
        int s = stack[--sp];
        for (size_t i = first[s]; i < first[s + 1]; i++)
            if (!fwd[g->a[i].to]) { fwd[g->a[i].to] = true; stack[sp++] = g->a[i].to; }
    }
    // backward reachability by sweeping until nothing changes (the graphs here are shallow)
    bwd[g->final] = true;
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < g->na; i++)
            if (bwd[g->a[i].to] && !bwd[g->a[i].from]) { bwd[g->a[i].from] = true; changed = true; }
    }
    int *cls = xmalloc((size_t)g->n * sizeof *cls), n = 0;
    for (int s = 0; s < g->n; s++) cls[s] = fwd[s] && bwd[s] ? n++ : -1;
    size_t k = 0;
    for (size_t i = 0; i < g->na; i++)
        if (cls[g->a[i].from] >= 0 && cls[g->a[i].to] >= 0) g->a[k++] = g->a[i];
    g->na = k;
    quotient(g, cls, n);
    free(cls); free(stack); free(fwd); free(bwd); free(first);
}

// Every arc turned around (start and final keep their names: the caller knows which it reads).
static void reverse(graph *g) {
    for (size_t i = 0; i < g->na; i++) { int32_t t = g->a[i].from; g->a[i].from = g->a[i].to; g->a[i].to = t; }
}

// One merging pass. forward = false: states with the same finality and the same outgoing arcs
// (word, log-probability, class of the target), classes settled from the final state back;
// forward = true: the same on the reversed graph (start-ness, incoming arcs). Returns the
// number of classes, or -1 on a cycle.
static int merge_pass(graph *g, bool forward) {
    if (forward) reverse(g);
    int mark = forward ? g->start : g->final;
    dedupe(g);
    size_t *first = offsets_by_from(g);
    int *order = xmalloc((size_t)g->n * sizeof *order);
    int n_cls = -1;
    if (topo_order(g, first, order)) {
        int *cls = xmalloc((size_t)g->n * sizeof *cls);
        interner in;
        interner_init(&in, g->n);
        size_t max_out = 0;
        for (int s = 0; s < g->n; s++)
            if (first[s + 1] - first[s] > max_out) max_out = first[s + 1] - first[s];
        int32_t *sig = xmalloc((3 * max_out + 1) * sizeof *sig);
        arc *tmp = xmalloc((max_out + 1) * sizeof *tmp);
        for (int k = g->n - 1; k >= 0; k--) {   // targets before sources
            int s = order[k];
            size_t m = first[s + 1] - first[s];
            memcpy(tmp, g->a + first[s], m * sizeof *tmp);
            for (size_t i = 0; i < m; i++) tmp[i].to = cls[tmp[i].to];
            qsort(tmp, m, sizeof *tmp, by_from);   // (same from) by wid, class, best first
            int32_t len = 0;
            sig[len++] = s == mark;
            for (size_t i = 0; i < m; i++) {
                if (i && tmp[i].wid == tmp[i - 1].wid && tmp[i].to == tmp[i - 1].to) continue;
                sig[len++] = tmp[i].wid;
                sig[len++] = tmp[i].to;
                sig[len++] = tmp[i].logp;
            }
            cls[s] = intern(&in, sig, len);
        }
        n_cls = in.n_cls;
        free(sig); free(tmp);
        interner_free(&in);
        quotient(g, cls, n_cls);
        free(cls);
    }
    if (forward) reverse(g);
    free(order); free(first);
    return n_cls;
}

fsg_model_t *fsg_compact(fsg_model_t *f) {
    graph g = { .n = fsg_model_n_state(f), .start = fsg_model_start_state(f), .final = fsg_model_final_state(f) };
    size_t cap = 1024;
    g.a = xmalloc(cap * sizeof *g.a);
    for (int s = 0; s < g.n; s++)
        for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it)) {
            fsg_link_t *l = fsg_arciter_get(it);
            if (g.na == cap) g.a = xrealloc(g.a, (cap *= 2) * sizeof *g.a);
            g.a[g.na++] = (arc){ l->from_state, l->to_state, l->logs2prob, l->wid < 0 ? -1 : l->wid };
        }
    // a null arc from a state to itself adds nothing
    size_t k = 0;
    for (size_t i = 0; i < g.na; i++)
        if (g.a[i].wid >= 0 || g.a[i].from != g.a[i].to) g.a[k++] = g.a[i];
    g.na = k;
    prune_dead(&g);
    for (int before = -1; g.n != before;) {
        before = g.n;
        if (merge_pass(&g, false) < 0 || merge_pass(&g, true) < 0) { free(g.a); return NULL; }
    }
    fsg_model_t *c = fsg_model_init(fsg_model_name(f), f->lmath, fsg_model_lw(f), g.n);
    for (int w = 0; w < fsg_model_n_word(f); w++) fsg_model_word_add(c, fsg_model_word_str(f, w));
    for (size_t i = 0; i < g.na; i++) {
        if (g.a[i].wid < 0) fsg_model_null_trans_add(c, g.a[i].from, g.a[i].to, g.a[i].logp);
        else fsg_model_trans_add(c, g.a[i].from, g.a[i].to, g.a[i].logp, g.a[i].wid);
    }
    c->start_state = g.start;
    c->final_state = g.final;
    glist_free(fsg_model_null_trans_closure(c, NULL));
    free(g.a);
    return c;
}

// A word arc the reading may take: not silence or a filler, and not a pronunciation alternate
// (its base word's arc stands beside it).
static bool word_arc(fsg_model_t *f, const fsg_link_t *l) {
    return l->wid >= 0 && !fsg_model_is_filler(f, l->wid) && !fsg_model_is_alt(f, l->wid);
}

// Each arc's natural-log probability given its state: the network's weights (JSGF weights need
// not sum to one; here scaled by `scale`) made a distribution over each state's arcs.
static double *arc_logp(fsg_model_t *f, double scale, int *n_arcs) {
    int n = fsg_model_n_state(f), k = 0;
    for (int s = 0; s < n; s++)
        for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it)) k++;
    double *lp = xmalloc((size_t)(k ? k : 1) * sizeof *lp);
    k = 0;
    for (int s = 0; s < n; s++) {
        int first = k;
        double mx = -INFINITY, z = 0;
        for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it), k++) {
            fsg_link_t *l = fsg_arciter_get(it);
            lp[k] = l->wid < 0 || word_arc(f, l) ? logmath_log_to_ln(f->lmath, (int)(l->logs2prob / scale)) : -INFINITY;
            if (lp[k] > mx) mx = lp[k];
        }
        for (int i = first; i < k; i++) z += exp(lp[i] - mx);
        for (int i = first; i < k && z > 0; i++) lp[i] -= mx + log(z);
    }
    *n_arcs = k;
    return lp;
}

// Best path log-probabilities carried along null arcs (in place).
static void null_closure(fsg_model_t *f, const double *lp, double *score) {
    for (bool grew = true; grew;) {
        grew = false;
        int k = 0;
        for (int s = 0; s < fsg_model_n_state(f); s++)
            for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it), k++) {
                fsg_link_t *l = fsg_arciter_get(it);
                if (l->wid < 0 && score[s] + lp[k] > score[l->to_state] + 1e-12)
                    score[l->to_state] = score[s] + lp[k], grew = true;
            }
    }
}

// FSG_ENDS: the reading ending now at least four times as likely as its likeliest way on. (Whole
// commands the grammar lets a suffix follow are 8-9 times as likely to end; "less", which
// "volume" follows as often, about as likely.)
#define ENDS_MARGIN 1.3863   // ln 4

int fsg_reading(fsg_model_t *f, const char *words, double scale) {
    int n = fsg_model_n_state(f), n_arcs;
    double *lp = arc_logp(f, scale, &n_arcs);
    double *at = xmalloc((size_t)n * sizeof *at), *next = xmalloc((size_t)n * sizeof *next);
    for (int s = 0; s < n; s++) at[s] = -INFINITY;
    at[fsg_model_start_state(f)] = 0;
    null_closure(f, lp, at);
    bool on = true;
    char w[128];
    for (const char *p = words; on && *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        if (!len) break;
        snprintf(w, sizeof w, "%.*s", (int)(len < sizeof w ? len : sizeof w - 1), p);
        p += len;
        int wid = fsg_model_word_id(f, w);
        if (wid < 0 || fsg_model_is_filler(f, wid)) continue;   // a hesitation the search put between words
        on = false;
        for (int s = 0; s < n; s++) next[s] = -INFINITY;
        int k = 0;
        for (int s = 0; s < n; s++)
            for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it), k++) {
                fsg_link_t *l = fsg_arciter_get(it);
                if (l->wid == wid && at[s] > -INFINITY && at[s] + lp[k] > next[l->to_state])
                    next[l->to_state] = at[s] + lp[k], on = true;
            }
        null_closure(f, lp, next);
        double *t = at;
        at = next;
        next = t;
    }
    int r = 0;
    if (on) {
        // the best way from each state to the end (into next), then: the reading ending now
        // against its best way to a longer command (a word, then whatever the end needs)
        double *to_end = next;
        for (int s = 0; s < n; s++) to_end[s] = -INFINITY;
        to_end[fsg_model_final_state(f)] = 0;
        for (bool grew = true; grew;) {
            grew = false;
            int k = 0;
            for (int s = 0; s < n; s++)
                for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it), k++) {
                    fsg_link_t *l = fsg_arciter_get(it);
                    if (lp[k] > -INFINITY && to_end[l->to_state] + lp[k] > to_end[s] + 1e-12)
                        to_end[s] = to_end[l->to_state] + lp[k], grew = true;
                }
        }
        double end = at[fsg_model_final_state(f)], more = -INFINITY;
        int k = 0;
        for (int s = 0; s < n; s++)
            for (fsg_arciter_t *it = fsg_model_arcs(f, s); it; it = fsg_arciter_next(it), k++) {
                fsg_link_t *l = fsg_arciter_get(it);
                if (!word_arc(f, l) || at[s] == -INFINITY) continue;
                r |= FSG_MORE;
                if (at[s] + lp[k] + to_end[l->to_state] > more) more = at[s] + lp[k] + to_end[l->to_state];
            }
        if (end > -INFINITY) r |= FSG_WHOLE;
        if (end > -INFINITY && end >= more + ENDS_MARGIN) r |= FSG_ENDS;
    }
    free(lp);
    free(at);
    free(next);
    return r;
}
