// The statistics of a comparison: per setting the mean of the seeds' values with its sample
// standard deviation and confidence interval (Student's t), and per setting the change of the
// mean against the first setting with Welch's t interval and test (unequal variances) and, for
// the change in percent, Fieller's interval of the ratio of the means. The quantiles come from
// Boost.Math (students_t_distribution).
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

// The change relative to the base, (a.mean - base.mean) / |base.mean|, with Fieller's interval
// for the ratio r = a.mean / base.mean at Welch's degrees of freedom d.df (d = welch(a, base)):
// the r with (a.mean - r base.mean)^2 <= t^2 (va + r^2 vb), va = sa^2/na, vb = sb^2/nb, t the
// quantile of welch(). Unlike Welch's interval divided by the base, it accounts for the base's
// own uncertainty (a count that fell to 0 on every seed is -100%, never below), and it holds 0
// exactly when Welch's interval does. With both standard deviations 0 it is the change itself.
// defined is false when base.mean is 0; has_ci is false when d has none or when the set is not
// a finite interval (base.mean^2 <= t^2 vb: the base cannot be told from 0), then unbounded.
struct RelativeChange {
  double rel = 0;
  double ci_low = 0, ci_high = 0;
  bool defined = false;
  bool has_ci = false;
  bool unbounded = false;
};
RelativeChange relative_change(const Summary& a, const Summary& base, const Difference& d,
                               double level = kConfidence);

// The p-quantile of Student's t distribution with df degrees of freedom (df > 0).
double student_t_quantile(double p, double df);

}  // namespace report
