// KV eviction policies: which slots a layer keeps when the cache reaches its budget.
//   window:N   StreamingLLM: the first `sinks` slots + the newest, N in all.
//   h2o:N      Heavy hitters: sinks + the newest N/4 + the older slots with the most attention
//              weight accumulated over every query so far (sum over heads), N in all.
//   entropy:N  Per-kv-head budgets from the entropy of the last query's attention: a head whose
//              weights are spread (high entropy) gets more slots than a focused one; budgets
//              average N per head. Each head ranks slots by its own accumulated weight; the
//              layer keeps the N slots most heads chose, and a kept slot that a head did not
//              choose is masked out for that head.
// Eviction leaves `slack` free slots under the budget so it runs every few tokens. A window
// layer kept in a ring (engine/kv_cache.h) keeps its newest slots under every policy: it never
// reads an older one again.
#include "kv_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_policy_parse(const char *s, kv_policy *out, errbuf *err) {
    memset(out, 0, sizeof *out);
    out->sinks = KV_SINKS_DEFAULT;
    if (!s || strcmp(s, "none") == 0 || !*s) return 0;
    static const struct { const char *name; enum kv_policy_kind k; } names[] = {
        { "window", KVP_WINDOW }, { "h2o", KVP_H2O }, { "entropy", KVP_ENTROPY } };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i].name);
        if (strncmp(s, names[i].name, n) || s[n] != ':') continue;
        char *end = NULL;
        long b = strtol(s + n + 1, &end, 10);
        if (end == s + n + 1 || *end || b < 16 || b > (1L << 24))
            return err_set(err, "kv policy '%s': the budget must be a number of slots, 16..16777216", s);
        out->kind = names[i].k;
        out->budget = (int)b;
        return 0;
    }
    return err_set(err, "kv policy '%s' is not one of none, window:N, h2o:N, entropy:N", s);
}

void kv_policy_format(const kv_policy *p, char *buf, size_t n) {
    static const char *const names[] = { "none", "window", "h2o", "entropy" };
    if (p->kind == KVP_NONE) snprintf(buf, n, "none");
    else snprintf(buf, n, "%s:%d", names[p->kind], p->budget);
}

static int budget_of(const kv_cache *kv) {
    int b = kv->policy.budget < kv->n_ctx ? kv->policy.budget : kv->n_ctx;
    return b;
}
static int slack_of(int budget) { int s = budget / 8; return s < 1 ? 1 : (s > 64 ? 64 : s); }
static int sinks_of(const kv_cache *kv, int budget) {
    int s = kv->policy.sinks;
    return s > budget / 4 ? budget / 4 : s;
}

int kv_policy_max_batch(const kv_cache *kv) {
    if (kv->policy.kind == KVP_NONE) return kv->n_ctx;
    int b = budget_of(kv);
    int m = (b - sinks_of(kv, b)) / 2;
    return m < 1 ? 1 : m;
}

typedef struct ranked { float score; int32_t slot; } ranked;
static int by_score_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return x->slot > y->slot ? 1 : (x->slot < y->slot ? -1 : 0);   // older first among equals
}
static int by_slot(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

// Accumulated weight of slot s in layer l summed over the q heads [h0, h1).
static float mass_of(const kv_cache *kv, int l, int h0, int h1, int s) {
    float m = 0.0f;
    for (int h = h0; h < h1; h++) m += kv->mass[((size_t)l * kv->shape.n_head + h) * kv->n_ctx + s];
    return m;
}

// Chooses `target` slots of layer l (ascending into keep); sinks and the newest always stay.
static void select_layer(kv_cache *kv, int l, int target, int sinks, int32_t *keep, ranked *tmp) {
    int n = kv->n_used, recent = kv->policy.kind == KVP_WINDOW ? target - sinks : target / 4;
    if (recent < 1) recent = 1;
    if (recent > target - sinks) recent = target - sinks;
    int nk = 0;
    for (int s = 0; s < sinks; s++) keep[nk++] = s;
    int mid0 = sinks, mid1 = n - recent;   // candidates [mid0, mid1)
    int want = target - sinks - recent;
    if (want > 0 && kv->mass) {
        int nh = kv->shape.n_head, nkv = kv->shape.n_kv_head, grp = nh / nkv;
        if (kv->policy.kind == KVP_H2O || !kv->mask) {
            for (int s = mid0; s < mid1; s++) tmp[s - mid0] = (ranked){ mass_of(kv, l, 0, nh, s), s };
        } else {
            // entropy: per-kv-head budgets from the last query's weights, then votes
            float *ent = xcalloc((size_t)nkv, sizeof(float));
            double esum = 0.0;
            for (int g = 0; g < nkv; g++) {
                double e = 0.0;
                for (int h = g * grp; h < (g + 1) * grp; h++) {
                    const float *w = kv->last + ((size_t)l * nh + h) * kv->n_ctx;
                    for (int s = 0; s < kv->last_n && s < n; s++)
                        if (w[s] > 0.0f) e -= (double)w[s] * log((double)w[s]);
                }
                ent[g] = (float)exp(e / grp);   // effective number of attended slots
                esum += ent[g];
            }
            int *bud = xcalloc((size_t)nkv, sizeof(int));
            for (int g = 0; g < nkv; g++) {
                double share = esum > 0 ? ent[g] / esum : 1.0 / nkv;
                int b = (int)(share * (double)want * nkv + 0.5);
                bud[g] = b < want / 4 ? want / 4 : (b > want ? want : b);
            }
            for (int s = mid0; s < mid1; s++) tmp[s - mid0] = (ranked){ 0.0f, s };
            ranked *hr = xmalloc((size_t)(mid1 - mid0) * sizeof(ranked));
            uint8_t *chosen = xcalloc((size_t)nkv * (size_t)(mid1 - mid0 > 0 ? mid1 - mid0 : 1), 1);
            for (int g = 0; g < nkv; g++) {
                for (int s = mid0; s < mid1; s++) hr[s - mid0] = (ranked){ mass_of(kv, l, g * grp, (g + 1) * grp, s), s };
                qsort(hr, (size_t)(mid1 - mid0), sizeof(ranked), by_score_desc);
                for (int i = 0; i < bud[g] && i < mid1 - mid0; i++) {
                    int s = hr[i].slot;
                    chosen[(size_t)g * (mid1 - mid0) + (s - mid0)] = 1;
                    tmp[s - mid0].score += 1.0f + 1e-3f * hr[i].score;   // votes, ties by weight
                }
            }
            // masks: a kept slot is visible to a head only if that head chose it
            for (int g = 0; g < nkv; g++) {
                uint8_t *m = kv->mask + ((size_t)l * nkv + g) * kv->n_ctx;
                for (int s = 0; s < n; s++)
                    m[s] = s >= mid0 && s < mid1 && !chosen[(size_t)g * (mid1 - mid0) + (s - mid0)];
            }
            free(chosen); free(hr); free(bud); free(ent);
        }
        qsort(tmp, (size_t)(mid1 - mid0), sizeof(ranked), by_score_desc);
        for (int i = 0; i < want && i < mid1 - mid0; i++) keep[nk++] = tmp[i].slot;
    } else if (want > 0) {
        for (int s = mid1 - want; s < mid1; s++) keep[nk++] = s;   // no statistics: the newest
    }
    for (int s = mid1; s < n; s++) keep[nk++] = s;
    qsort(keep, (size_t)nk, sizeof(int32_t), by_slot);
}

int kv_cache_make_room(kv_cache *kv, int n_new, errbuf *err) {
    if (kv->n_used + n_new <= kv->n_ctx && (kv->policy.kind == KVP_NONE || kv->n_used + n_new <= budget_of(kv)))
        return 0;
    if (kv->policy.kind == KVP_NONE)
        return err_set(err, "context full: %d + %d tokens exceed the context length %d (an eviction policy, "
                       "e.g. --kv-policy window:%d, keeps going)", kv->n_used, n_new, kv->n_ctx, kv->n_ctx);
    if (kv->bk && !kv->bk_sync)
        return err_set(err, "kv policy: eviction compacts the host copy of the cache, and this backend keeps "
                       "it on the device (use the cpu backend with --kv-policy)");
    int budget = budget_of(kv), sinks = sinks_of(kv, budget);
    if (n_new > kv_policy_max_batch(kv))
        return err_set(err, "kv policy: a batch of %d tokens does not fit the budget of %d slots (at most %d)",
                       n_new, budget, kv_policy_max_batch(kv));
    int target = budget - n_new - slack_of(budget);
    if (target < sinks + 1) target = sinks + 1;
    if (target >= kv->n_used) return 0;
    if ((kv->policy.kind == KVP_H2O || kv->policy.kind == KVP_ENTROPY) && !kv->track) kv_cache_set_tracking(kv, true);
    if (kv->policy.kind == KVP_ENTROPY && !kv->mask && kv->shape.n_kv_head > 0)
        kv->mask = xcalloc((size_t)kv->n_layer * (size_t)kv->shape.n_kv_head * (size_t)kv->n_ctx, 1);
    // a device copy (and its statistics) into the host arrays; compacted here, pushed back below
    if (kv->bk_sync && kv->bk_sync(kv, KV_SYNC_PULL, err)) return -1;
    int32_t *keep = xmalloc((size_t)kv->n_used * sizeof(int32_t));
    ranked *tmp = xmalloc((size_t)kv->n_used * sizeof(ranked));
    for (int l = 0; l < kv->n_layer; l++) {
        if (kv_layer_ring(kv, l))   // a window layer reads its newest slots only: it keeps those
            for (int i = 0; i < target; i++) keep[i] = kv->n_used - target + i;
        else
            select_layer(kv, l, target, sinks, keep, tmp);
        kv_cache_compact_layer(kv, l, keep, target);
    }
    free(keep);
    free(tmp);
    kv->evicted += (uint64_t)(kv->n_used - target);
    kv->evictions++;
    kv->n_used = target;
    if (kv->last_n > target) kv->last_n = target;
    return kv->bk_sync ? kv->bk_sync(kv, KV_SYNC_PUSH, err) : 0;
}
