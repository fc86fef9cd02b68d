// compare's statistics against published values: Student's t quantiles from the tables, and
// Welch's test on R's `sleep` data (t.test(extra ~ group, data = sleep): t = -1.8608,
// df = 17.776, p-value = 0.07939, 95 percent confidence interval -3.3654832 0.2054832).
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

}  // namespace
}  // namespace report
