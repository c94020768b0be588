// Paired comparisons over prompts: the same prompts run two ways (plan A, plan B) give two
// figures per prompt; is the difference real? A paired t-test on the differences (p from the t
// distribution, via the regularized incomplete beta function) and the exact sign test (p from
// the binomial distribution). Both two-sided.
#ifndef CABIN_PAIRED_H
#define CABIN_PAIRED_H

// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1
// (a continued fraction, accurate to about 1e-12).
double stat_inc_beta(double a, double b, double x);
// Two-sided p of Student's t with df degrees of freedom: P(|T| >= |t|).
double stat_t_p_two_sided(double t, double df);
// Two-sided p of the exact sign test: k of n nonzero differences have the rarer sign.
double stat_sign_p_two_sided(int k, int n);

typedef struct paired_result {
    int n;                 // pairs
    int a_wins, b_wins, ties;   // per pair, by the metric's direction (ties: equal figures)
    double mean_a, mean_b;
    double mean_diff;      // mean of (b - a)
    double sd_diff;        // sample standard deviation of (b - a); 0 with fewer than 2 pairs
    double t;              // mean_diff / (sd_diff / sqrt(n)); 0 when sd_diff is 0
    double p_t;            // paired t-test, two-sided; 1 with fewer than 2 pairs or no spread
    double p_sign;         // exact sign test over the pairs that differ, two-sided
} paired_result;

// Compares a[i] with b[i] over n pairs. higher_better: a larger figure wins (tok/s, top-1);
// else a smaller one (J/token, KL). With every difference 0 (or constant and nonzero with no
// spread: a t-test cannot say) p_t is 1 or 0 as the mean difference is 0 or not.
void paired_compare(const double *a, const double *b, int n, int higher_better, paired_result *out);

#endif
