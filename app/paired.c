// Paired t-test and sign test (see paired.h).
#include "app/paired.h"

#include <math.h>

// The continued fraction of I_x(a, b) (modified Lentz), valid for x < (a + 1) / (a + b + 2).
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        // even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m))
        double num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        if (fabs(d) < tiny) d = tiny;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        // odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
        num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        if (fabs(d) < tiny) d = tiny;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double step = d * c;
        h *= step;
        if (fabs(step - 1.0) < eps) break;
    }
    return h;
}

double stat_inc_beta(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    // x^a (1-x)^b / (a B(a, b)), in logs
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_cf(a, b, x) / a;
    return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;   // I_x(a, b) = 1 - I_{1-x}(b, a)
}

double stat_t_p_two_sided(double t, double df) {
    if (!(df > 0.0)) return 1.0;
    if (isinf(t)) return 0.0;
    return stat_inc_beta(df / 2.0, 0.5, df / (df + t * t));
}

double stat_sign_p_two_sided(int k, int n) {
    if (n <= 0) return 1.0;
    if (k > n - k) k = n - k;
    // 2 * sum_{i <= k} C(n, i) / 2^n, in logs so large n does not overflow
    double sum = 0.0;
    for (int i = 0; i <= k; i++)
        sum += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    double p = 2.0 * sum;
    return p > 1.0 ? 1.0 : p;
}

void paired_compare(const double *a, const double *b, int n, int higher_better, paired_result *out) {
    *out = (paired_result){ .n = n, .p_t = 1.0, .p_sign = 1.0 };
    if (n <= 0) return;
    double sa = 0, sb = 0, sd = 0;
    for (int i = 0; i < n; i++) {
        sa += a[i];
        sb += b[i];
        sd += b[i] - a[i];
        if (a[i] == b[i]) out->ties++;
        else if ((b[i] > a[i]) == (higher_better != 0)) out->b_wins++;
        else out->a_wins++;
    }
    out->mean_a = sa / n;
    out->mean_b = sb / n;
    out->mean_diff = sd / n;
    if (n >= 2) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            double e = (b[i] - a[i]) - out->mean_diff;
            ss += e * e;
        }
        out->sd_diff = sqrt(ss / (n - 1));
        if (out->sd_diff > 0) {
            out->t = out->mean_diff / (out->sd_diff / sqrt((double)n));
            out->p_t = stat_t_p_two_sided(out->t, n - 1);
        } else {
            out->p_t = out->mean_diff == 0.0 ? 1.0 : 0.0;
        }
    }
    int k = out->a_wins < out->b_wins ? out->a_wins : out->b_wins;
    out->p_sign = stat_sign_p_two_sided(k, out->a_wins + out->b_wins);
}
