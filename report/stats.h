// The statistics of a comparison: per setting the mean of the seeds' values with its sample
// standard deviation and confidence interval (Student's t), and per setting the change of the
// mean against the first setting with Welch's t interval and test (unequal variances). The
// quantiles come from Boost.Math (students_t_distribution).
#pragma once
#include <cstddef>
#include <vector>

namespace report {

inline constexpr double kConfidence = 0.95;

struct Summary {
  size_t n = 0;
  double mean = 0;
  double sd = 0;       // sample standard deviation (n - 1); 0 when n < 2
  // mean +- t(1 - (1 - level) / 2, n - 1) * sd / sqrt(n); both equal to the mean when n < 2
  // (no interval can be given: has_ci is false).
  double ci_low = 0, ci_high = 0;
  bool has_ci = false;
};
Summary summarize(const std::vector<double>& v, double level = kConfidence);

// a.mean - base.mean with Welch's interval: se = sqrt(sa^2/na + sb^2/nb), df by
// Welch-Satterthwaite, diff +- t(1 - (1 - level) / 2, df) * se; p the two-sided p-value of
// Welch's t test. With both standard deviations 0 the interval is the difference itself and
// p is 0 (a difference) or 1 (none). has_ci is false when either side has fewer than 2 values;
// significant is then false too.
struct Difference {
  double diff = 0;
  double ci_low = 0, ci_high = 0;
  double df = 0;
  double p = 1;
  bool has_ci = false;
  bool significant = false;  // the interval excludes 0 (p < 1 - level)
};
Difference welch(const Summary& a, const Summary& base, double level = kConfidence);

// The p-quantile of Student's t distribution with df degrees of freedom (df > 0).
double student_t_quantile(double p, double df);

}  // namespace report
