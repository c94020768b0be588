// The paired significance tests against closed forms and table values of the t distribution
// and the binomial sign test.
#include "app/paired.h"
#include "tests/test.h"

#include <math.h>

static int near(double x, double want, double tol) { return fabs(x - want) <= tol; }

int main(void) {
    // I_x(1, 1) = x; I_x(a, 1) = x^a; I_1/2(a, a) = 1/2; I_x(1, b) = 1 - (1 - x)^b
    CHECK(near(stat_inc_beta(1, 1, 0.3), 0.3, 1e-12), "I_0.3(1,1) = %.15f", stat_inc_beta(1, 1, 0.3));
    CHECK(near(stat_inc_beta(3, 1, 0.7), 0.343, 1e-12), "I_0.7(3,1) = %.15f", stat_inc_beta(3, 1, 0.7));
    CHECK(near(stat_inc_beta(7.5, 7.5, 0.5), 0.5, 1e-12), "I_0.5(7.5,7.5) = %.15f", stat_inc_beta(7.5, 7.5, 0.5));
    CHECK(near(stat_inc_beta(1, 4, 0.2), 1 - pow(0.8, 4), 1e-12), "I_0.2(1,4) = %.15f", stat_inc_beta(1, 4, 0.2));
    CHECK(stat_inc_beta(2, 3, 0) == 0 && stat_inc_beta(2, 3, 1) == 1, "ends");

    // t distribution: df 1 is Cauchy (P(|T| >= 1) = 1/2); df 2: p = 1 - t / sqrt(2 + t^2);
    // table values t(0.975, 10) = 2.228139, t(0.975, 9) = 2.262157, t(0.995, 4) = 4.604095
    CHECK(near(stat_t_p_two_sided(1.0, 1), 0.5, 1e-12), "df 1: %.15f", stat_t_p_two_sided(1.0, 1));
    CHECK(near(stat_t_p_two_sided(1.0, 2), 1 - 1 / sqrt(3.0), 1e-12), "df 2: %.15f", stat_t_p_two_sided(1.0, 2));
    CHECK(near(stat_t_p_two_sided(-1.0, 2), 1 - 1 / sqrt(3.0), 1e-12), "symmetric: %.15f", stat_t_p_two_sided(-1.0, 2));
    CHECK(near(stat_t_p_two_sided(2.228139, 10), 0.05, 1e-6), "df 10: %.9f", stat_t_p_two_sided(2.228139, 10));
    CHECK(near(stat_t_p_two_sided(2.262157, 9), 0.05, 1e-6), "df 9: %.9f", stat_t_p_two_sided(2.262157, 9));
    CHECK(near(stat_t_p_two_sided(4.604095, 4), 0.01, 1e-6), "df 4: %.9f", stat_t_p_two_sided(4.604095, 4));
    CHECK(stat_t_p_two_sided(0.0, 5) == 1.0, "t 0: %.15f", stat_t_p_two_sided(0.0, 5));

    // sign test: 1 of 10 -> 2 * 11 / 1024; 0 of 5 -> 2 / 32; 5 of 10 -> 1
    CHECK(near(stat_sign_p_two_sided(1, 10), 22.0 / 1024.0, 1e-12), "1/10: %.15f", stat_sign_p_two_sided(1, 10));
    CHECK(near(stat_sign_p_two_sided(0, 5), 0.0625, 1e-12), "0/5: %.15f", stat_sign_p_two_sided(0, 5));
    CHECK(stat_sign_p_two_sided(5, 10) == 1.0, "5/10: %.15f", stat_sign_p_two_sided(5, 10));
    CHECK(near(stat_sign_p_two_sided(9, 10), 22.0 / 1024.0, 1e-12), "9/10 is 1/10: %.15f", stat_sign_p_two_sided(9, 10));

    // differences 1, 2, 2, 0.5: mean 1.375, sd 0.75, t = 11/3 on 3 df; df 3 in closed form:
    // p = 1 - (2/pi)(th + sin th cos th), th = atan(t / sqrt 3)
    double a[] = { 1, 2, 3, 4 }, b[] = { 2, 4, 5, 4.5 };
    paired_result r;
    paired_compare(a, b, 4, 1, &r);
    double th = atan((11.0 / 3.0) / sqrt(3.0)), p3 = 1 - (2 / M_PI) * (th + sin(th) * cos(th));
    CHECK(near(r.mean_diff, 1.375, 1e-12) && near(r.sd_diff, 0.75, 1e-12), "mean %.6f sd %.6f", r.mean_diff, r.sd_diff);
    CHECK(near(r.t, 11.0 / 3.0, 1e-12), "t %.12f", r.t);
    CHECK(near(r.p_t, p3, 1e-10), "p %.12f want %.12f", r.p_t, p3);
    CHECK(r.b_wins == 4 && r.a_wins == 0 && r.ties == 0, "wins %d %d %d", r.a_wins, r.b_wins, r.ties);
    CHECK(near(r.p_sign, 0.125, 1e-12), "sign p %.12f", r.p_sign);
    paired_compare(a, b, 4, 0, &r);   // lower is better: A wins every pair
    CHECK(r.a_wins == 4 && r.b_wins == 0, "lower better: wins %d %d", r.a_wins, r.b_wins);

    // identical figures: all ties, nothing significant
    paired_compare(a, a, 4, 1, &r);
    CHECK(r.ties == 4 && r.p_t == 1.0 && r.p_sign == 1.0 && r.mean_diff == 0.0, "self: ties %d p %.3f %.3f", r.ties, r.p_t, r.p_sign);
    // one pair: no t-test
    paired_compare(a, b, 1, 1, &r);
    CHECK(r.p_t == 1.0 && r.b_wins == 1, "one pair: p %.3f", r.p_t);
    return test_finish();
}
