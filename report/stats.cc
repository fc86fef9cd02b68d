// Means, intervals, Welch's test and Fieller's ratio interval (report/stats.h) over Boost.Math's
// Student's t.
#include "report/stats.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace report {

double student_t_quantile(double p, double df) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

Summary summarize(const std::vector<double>& v, double level) {
  Summary s;
  s.n = v.size();
  if (s.n == 0) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  s.ci_low = s.ci_high = s.mean;
  if (s.n < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
  const double half = student_t_quantile(1 - (1 - level) / 2, static_cast<double>(s.n - 1)) * s.sd /
                      std::sqrt(static_cast<double>(s.n));
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  s.has_ci = true;
  return s;
}

Difference welch(const Summary& a, const Summary& base, double level) {
  Difference d;
  d.diff = a.mean - base.mean;
  d.ci_low = d.ci_high = d.diff;
  if (a.n < 2 || base.n < 2) return d;
  d.has_ci = true;
  const double va = a.sd * a.sd / static_cast<double>(a.n);
  const double vb = base.sd * base.sd / static_cast<double>(base.n);
  const double se = std::sqrt(va + vb);
  if (se == 0) {  // every seed gave the same value on both sides
    d.df = static_cast<double>(a.n + base.n - 2);
    d.p = d.diff == 0 ? 1 : 0;
    d.significant = d.diff != 0;
    return d;
  }
  d.df = (va + vb) * (va + vb) /
         (va * va / static_cast<double>(a.n - 1) + vb * vb / static_cast<double>(base.n - 1));
  const boost::math::students_t_distribution<double> t(d.df);
  const double half = boost::math::quantile(t, 1 - (1 - level) / 2) * se;
  d.ci_low = d.diff - half;
  d.ci_high = d.diff + half;
  d.p = 2 * boost::math::cdf(boost::math::complement(t, std::fabs(d.diff) / se));
  d.significant = d.ci_low > 0 || d.ci_high < 0;
  return d;
}

RelativeChange relative_change(const Summary& a, const Summary& base, const Difference& d,
                               double level) {
  RelativeChange r;
  if (base.mean == 0) return r;
  r.defined = true;
  r.rel = d.diff / std::fabs(base.mean);
  if (!d.has_ci) return r;
  const double t = student_t_quantile(1 - (1 - level) / 2, d.df);
  const double va = a.sd * a.sd / static_cast<double>(a.n);
  const double vb = base.sd * base.sd / static_cast<double>(base.n);
  // (base.mean^2 - t^2 vb) r^2 - 2 a.mean base.mean r + (a.mean^2 - t^2 va) <= 0
  const double q = base.mean * base.mean - t * t * vb;
  if (!(q > 0)) {
    r.unbounded = true;
    return r;
  }
  const double mid = a.mean * base.mean;
  const double half = std::sqrt(t * t * (a.mean * a.mean * vb + va * q));
  const double lo = (mid - half) / q, hi = (mid + half) / q;
  // relative = r - 1 for a positive base, 1 - r for a negative one
  r.ci_low = base.mean > 0 ? lo - 1 : 1 - hi;
  r.ci_high = base.mean > 0 ? hi - 1 : 1 - lo;
  r.has_ci = true;
  return r;
}

}  // namespace report
