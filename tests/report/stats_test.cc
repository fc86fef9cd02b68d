// compare's statistics against published values: Student's t quantiles from the tables, and
// Welch's test on R's `sleep` data (t.test(extra ~ group, data = sleep): t = -1.8608,
// df = 17.776, p-value = 0.07939, 95 percent confidence interval -3.3654832 0.2054832), and
// Fieller's interval of a ratio against the inequality that defines it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "report/stats.h"

namespace report {
namespace {

TEST(Stats, StudentTQuantilesMatchTheTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3026527, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764451, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 9), 2.2621572, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 1e9), 1.9599640, 1e-6);
}

TEST(Stats, MeanStandardDeviationAndIntervalOfTheMean) {
  const Summary s = summarize({1, 2, 3, 4, 5});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.sd, std::sqrt(2.5), 1e-12);
  // 3 +- t(0.975, 4) * sqrt(2.5) / sqrt(5) = 3 +- 1.9632
  EXPECT_NEAR(s.ci_low, 3 - 2.7764451 * std::sqrt(0.5), 1e-6);
  EXPECT_NEAR(s.ci_high, 3 + 2.7764451 * std::sqrt(0.5), 1e-6);
  EXPECT_TRUE(s.has_ci);
}

TEST(Stats, OneValueHasNoDeviationAndNoInterval) {
  const Summary s = summarize({7});
  EXPECT_DOUBLE_EQ(s.mean, 7);
  EXPECT_EQ(s.sd, 0);
  EXPECT_FALSE(s.has_ci);
  const Difference d = welch(s, summarize({1, 2, 3}));
  EXPECT_DOUBLE_EQ(d.diff, 5);
  EXPECT_FALSE(d.has_ci);
  EXPECT_FALSE(d.significant);
}

TEST(Stats, WelchMatchesRsSleepExample) {
  const std::vector<double> g1{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
  const std::vector<double> g2{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
  const Difference d = welch(summarize(g1), summarize(g2));
  EXPECT_NEAR(d.diff, -1.58, 1e-12);
  EXPECT_NEAR(d.df, 17.776, 5e-4);
  EXPECT_NEAR(d.p, 0.07939, 5e-6);
  EXPECT_NEAR(d.ci_low, -3.3654832, 1e-6);
  EXPECT_NEAR(d.ci_high, 0.2054832, 1e-6);
  EXPECT_FALSE(d.significant);  // the interval holds 0
  // Group 2 against group 1 shifted by 3: the interval moves off 0.
  std::vector<double> g3 = g2;
  for (double& x : g3) x += 3;
  const Difference far = welch(summarize(g3), summarize(g1));
  EXPECT_TRUE(far.significant);
  EXPECT_LT(far.p, 0.05);
}

TEST(Stats, IdenticalSeedsGiveAnExactDifference) {
  const Difference same = welch(summarize({2, 2, 2}), summarize({2, 2, 2}));
  EXPECT_FALSE(same.significant);
  EXPECT_EQ(same.p, 1);
  const Difference other = welch(summarize({3, 3, 3}), summarize({2, 2, 2}));
  EXPECT_TRUE(other.significant);
  EXPECT_DOUBLE_EQ(other.ci_low, 1);
  EXPECT_DOUBLE_EQ(other.ci_high, 1);
}

// Fieller's set {r : (ma - r mb)^2 <= t^2 (va + r^2 vb)}, checked ratio by ratio on a fine grid
// against the closed form's ends, for bases of either sign.
TEST(Stats, FiellerIntervalIsTheSetOfRatiosTheInequalityAccepts) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{101100, 101700, 101100}, {60500, 59000, 61900}},
      {{3, 9, 4, 7}, {10, 14, 12}},
      {{-5, -7, -6}, {-10, -12, -9, -11}},
      {{0.5, -0.4, 0.2}, {2, 3, 2.5}},  // a numerator that cannot be told from 0
  };
  for (const auto& [xa, xb] : cases) {
    const Summary a = summarize(xa), b = summarize(xb);
    const Difference d = welch(a, b);
    const RelativeChange r = relative_change(a, b, d);
    ASSERT_TRUE(r.defined && r.has_ci) << xa[0];
    EXPECT_DOUBLE_EQ(r.rel, (a.mean - b.mean) / std::fabs(b.mean));
    EXPECT_LE(r.ci_low, r.rel);
    EXPECT_GE(r.ci_high, r.rel);
    const double t = student_t_quantile(0.975, d.df);
    const double va = a.sd * a.sd / static_cast<double>(a.n);
    const double vb = b.sd * b.sd / static_cast<double>(b.n);
    const double lo = b.mean > 0 ? r.ci_low + 1 : 1 - r.ci_high;  // the ratio's ends
    const double hi = b.mean > 0 ? r.ci_high + 1 : 1 - r.ci_low;
    const double span = hi - lo;
    for (int i = -200; i <= 1200; ++i) {
      const double ratio = lo + span * i / 1000.0;
      const double gap = (a.mean - ratio * b.mean) * (a.mean - ratio * b.mean) -
                         t * t * (va + ratio * ratio * vb);
      const bool inside = ratio >= lo && ratio <= hi;
      if (std::fabs(gap) > 1e-9 * (a.mean * a.mean + 1)) {
        EXPECT_EQ(gap < 0, inside) << ratio;
      }
    }
    // It holds 0 (a ratio of 1) exactly when Welch's interval holds 0.
    EXPECT_EQ(r.ci_low > 0 || r.ci_high < 0, d.significant) << xa[0];
  }
}

TEST(Stats, AChangeToZeroOnEverySeedIsMinusOneHundredPercentExactly) {
  const Summary base = summarize({84, 86, 89}), gone = summarize({0, 0, 0});
  const RelativeChange r = relative_change(gone, base, welch(gone, base));
  ASSERT_TRUE(r.has_ci);
  EXPECT_EQ(r.rel, -1);
  EXPECT_EQ(r.ci_low, -1);  // Welch's interval divided by the base would reach below -100%
  EXPECT_EQ(r.ci_high, -1);
  const Difference d = welch(gone, base);
  EXPECT_LT(d.ci_low / base.mean, -1);
}

TEST(Stats, ABaseThatCannotBeToldFromZeroGivesNoInterval) {
  const Summary base = summarize({-1, 2, 0.5}), a = summarize({3, 4, 5});
  const RelativeChange r = relative_change(a, base, welch(a, base));
  EXPECT_TRUE(r.defined);
  EXPECT_FALSE(r.has_ci);
  EXPECT_TRUE(r.unbounded);
  const Summary zero = summarize({0, 0, 0});
  const RelativeChange none = relative_change(a, zero, welch(a, zero));
  EXPECT_FALSE(none.defined);
  EXPECT_FALSE(none.has_ci);
  const Summary one = summarize({4});
  const RelativeChange single = relative_change(one, a, welch(one, a));
  EXPECT_TRUE(single.defined);
  EXPECT_FALSE(single.has_ci);
  EXPECT_FALSE(single.unbounded);
}

}  // namespace
}  // namespace report
