// The rope's frequencies for each scaling a file may ask for (engine/rope.h): one place, so the
// rope op, attention's key rotation and the Vulkan tables all turn by the same angles.
#include "engine/rope.h"

#include <stdio.h>
#include <string.h>

void rope_freqs_plain(rope_freqs *f, int rope_dim, float base) {
    memset(f, 0, sizeof *f);
    f->rope_dim = rope_dim;
    f->mscale = 1.0f;
    for (int i = 0; i < rope_dim / 2; i++) f->freq[i] = pow((double)base, -2.0 * i / rope_dim);
}

// YaRN: the pair index at which a pair makes n_rot turns over the original context, from
// n_rot = n_ctx_orig * freq_i / 2pi with freq_i = base^(-2i/rope_dim).
static double yarn_pair_at(int rope_dim, int n_ctx_orig, double n_rot, double base) {
    return rope_dim * log(n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * log(base));
}

// Pairs that turn fast over the original context (below low) keep their frequency; slow ones
// (above high) are interpolated by 1/factor; between, a linear ramp mixes the two.
static void yarn(rope_freqs *f, double base, const rope_scaling *s) {
    const int half = f->rope_dim / 2;
    double low = floor(yarn_pair_at(f->rope_dim, s->n_ctx_orig, s->beta_fast, base));
    double high = ceil(yarn_pair_at(f->rope_dim, s->n_ctx_orig, s->beta_slow, base));
    if (low < 0) low = 0;
    if (high > f->rope_dim - 1) high = f->rope_dim - 1;
    const double scale = 1.0 / s->factor;
    for (int i = 0; i < half; i++) {
        double y = (i - low) / fmax(0.001, high - low);
        double keep = (1.0 - fmin(1.0, fmax(0.0, y))) * s->ext_factor;   // 1: as it is, 0: interpolated
        f->freq[i] *= scale * (1.0 - keep) + keep;
    }
    if (s->ext_factor != 0.0f) f->mscale = (float)((1.0 + 0.1 * log(s->factor)) * s->attn_factor);
    else f->mscale = s->attn_factor;
}

void rope_freqs_make(rope_freqs *f, int rope_dim, float base, const rope_scaling *s, int n_ctx) {
    rope_freqs_plain(f, rope_dim, base);
    if (!s) return;
    const int half = rope_dim / 2;
    if (s->factors)
        for (int i = 0; i < half; i++) f->freq[i] /= s->factors[i];
    switch (s->kind) {
    case ROPE_NONE: break;
    case ROPE_LINEAR:
        for (int i = 0; i < half; i++) f->freq[i] /= s->factor;
        break;
    case ROPE_YARN: yarn(f, base, s); break;
    case ROPE_LONGROPE: {
        const float *d = n_ctx > s->n_ctx_orig ? s->long_factors : s->short_factors;
        for (int i = 0; i < half; i++) f->freq[i] /= d[i];
        f->mscale = s->attn_factor;
        break;
    }
    }
}

bool rope_freqs_same(const rope_freqs *a, const rope_freqs *b) {
    return a->rope_dim == b->rope_dim && a->mscale == b->mscale &&
           memcmp(a->freq, b->freq, (size_t)(a->rope_dim / 2) * sizeof a->freq[0]) == 0;
}

void rope_scaling_describe(const rope_scaling *s, int rope_dim, char *out, size_t n) {
    size_t o = 0;
    out[0] = 0;
    if (s && s->factors) {   // llama3: 1 on the fast pairs, the full factor on the slow ones
        double lo = s->factors[0], hi = s->factors[0];
        for (int i = 1; i < rope_dim / 2; i++) { lo = fmin(lo, s->factors[i]); hi = fmax(hi, s->factors[i]); }
        o = (size_t)snprintf(out, n, "per-frequency factors %g to %g (rope_freqs, llama3)", lo, hi);
        if (o >= n) return;
    }
    const char *sep = o ? "; " : "";
    switch (s ? s->kind : ROPE_NONE) {
    case ROPE_NONE: if (!o) snprintf(out, n, "plain"); break;
    case ROPE_LINEAR: snprintf(out + o, n - o, "%slinear scaling x%g", sep, (double)s->factor); break;
    case ROPE_YARN:
        snprintf(out + o, n - o, "%sYaRN x%g over %d positions (beta %g/%g, ext %g, attention factor %g)", sep,
                 (double)s->factor, s->n_ctx_orig, (double)s->beta_fast, (double)s->beta_slow, (double)s->ext_factor,
                 (double)s->attn_factor);
        break;
    case ROPE_LONGROPE:
        snprintf(out + o, n - o, "%slongrope: short factors for a context of up to %d, long ones beyond; "
                 "attention factor %g", sep, s->n_ctx_orig, (double)s->attn_factor);
        break;
    }
}
