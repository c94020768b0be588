#include "sampler.h"
#include "base/base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sampler {
    sampler_params p;
    int n_vocab;
    uint64_t rng;
    int32_t *history;      // ring of the last repeat_last_n tokens
    int hist_n, hist_pos;
    int32_t *idx;          // scratch: candidate ids
    float *val;            // scratch: candidate values
};

sampler_params sampler_defaults(void) {
    return (sampler_params){ .temp = 0.7f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                             .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 42 };
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rand_unit(sampler *s) { return (double)(splitmix(&s->rng) >> 11) * 0x1.0p-53; }

sampler *sampler_new(const sampler_params *p, int n_vocab) {
    sampler *s = xcalloc(1, sizeof *s);
    s->p = *p;
    s->n_vocab = n_vocab;
    if (s->p.repeat_last_n < 0) s->p.repeat_last_n = 0;
    s->history = try_calloc((size_t)(s->p.repeat_last_n + 1), sizeof(int32_t));
    s->idx = try_malloc((size_t)n_vocab * sizeof(int32_t));
    s->val = try_malloc((size_t)n_vocab * sizeof(float));
    if (!s->history || !s->idx || !s->val) { sampler_free(s); return NULL; }
    sampler_reset(s, p->seed);
    return s;
}

void sampler_free(sampler *s) {
    if (!s) return;
    free(s->history);
    free(s->idx);
    free(s->val);
    free(s);
}

void sampler_reset(sampler *s, uint64_t seed) {
    s->rng = seed;
    s->p.seed = seed;
    s->hist_n = s->hist_pos = 0;
}

void sampler_accept(sampler *s, int32_t token) {
    if (s->p.repeat_last_n == 0) return;
    s->history[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->hist_n < s->p.repeat_last_n) s->hist_n++;
}

int32_t argmax_f32(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

// Min-heap helpers over (val, idx) pairs; the root is the smallest kept candidate.
static void heap_sift(float *val, int32_t *idx, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && val[l] < val[m]) m = l;
        if (r < n && val[r] < val[m]) m = r;
        if (m == i) return;
        float tv = val[i]; val[i] = val[m]; val[m] = tv;
        int32_t ti = idx[i]; idx[i] = idx[m]; idx[m] = ti;
        i = m;
    }
}

// Moves the k largest of val/idx[0..n) to the front, sorted descending. O(n log k).
static void top_k_sort(float *val, int32_t *idx, int n, int k) {
    if (k > n) k = n;
    for (int i = k / 2 - 1; i >= 0; i--) heap_sift(val, idx, k, i);
    for (int i = k; i < n; i++) {
        if (val[i] > val[0]) {
            val[0] = val[i];
            idx[0] = idx[i];
            heap_sift(val, idx, k, 0);
        }
    }
    // Heap sort: repeatedly move the smallest to the end -> descending order.
    for (int end = k - 1; end > 0; end--) {
        float tv = val[0]; val[0] = val[end]; val[end] = tv;
        int32_t ti = idx[0]; idx[0] = idx[end]; idx[end] = ti;
        heap_sift(val, idx, end, 0);
    }
}

void sampler_skip(sampler *s) {
    if (s->p.temp > 0.0f) (void)rand_unit(s);   // sampler_sample's one draw
}

int32_t sampler_sample(sampler *s, float *logits) {
    const sampler_params *p = &s->p;
    if (p->repeat_penalty != 1.0f && p->repeat_penalty > 0.0f) {
        for (int i = 0; i < s->hist_n; i++) {
            int32_t t = s->history[i];
            if (t < 0 || t >= s->n_vocab) continue;
            // Penalise each distinct token once.
            bool seen = false;
            for (int j = 0; j < i && !seen; j++) seen = s->history[j] == t;
            if (seen) continue;
            logits[t] = logits[t] > 0 ? logits[t] / p->repeat_penalty : logits[t] * p->repeat_penalty;
        }
    }
    if (p->temp <= 0.0f) return argmax_f32(logits, s->n_vocab);

    int n = s->n_vocab;
    int k = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    if (k > 1024) k = 1024;    // candidates beyond the top 1024 carry negligible mass
    for (int i = 0; i < n; i++) { s->idx[i] = i; s->val[i] = logits[i]; }
    top_k_sort(s->val, s->idx, n, k);
    n = k;
    // softmax over candidates at temperature
    float mx = s->val[0];
    double sum = 0.0;
    for (int i = 0; i < n; i++) { s->val[i] = expf((s->val[i] - mx) / p->temp); sum += s->val[i]; }
    for (int i = 0; i < n; i++) s->val[i] = (float)(s->val[i] / sum);
    if (p->min_p > 0.0f) {
        float thr = s->val[0] * p->min_p;
        int keep = 1;
        while (keep < n && s->val[keep] >= thr) keep++;
        n = keep;
    }
    if (p->top_p < 1.0f) {
        double c = 0.0;
        int keep = 0;
        while (keep < n) { c += s->val[keep++]; if (c >= p->top_p) break; }
        n = keep;
    }
    double total = 0.0;
    for (int i = 0; i < n; i++) total += s->val[i];
    double r = rand_unit(s) * total, acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += s->val[i];
        if (r < acc) return s->idx[i];
    }
    return s->idx[n - 1];
}
