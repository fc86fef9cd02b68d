// Rendering a Comparison.
#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/stats.h"

namespace report {

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n);
  return s;
}

namespace {
std::string num(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.3f}", v);
  return fmt::format("{:.4g}", v);
}
}  // namespace

namespace {
// A relative change in percent; small ones keep two significant digits instead of +0.0%.
std::string percent_text(double rel) {
  const double pct = rel * 100;
  return std::fabs(pct) >= 1 || pct == 0 ? fmt::format("{:+.1f}%", pct) : fmt::format("{:+.2g}%", pct);
}
// A change as text: relative to the first setting's mean in percent, or the difference
// itself when that mean is 0.
std::string change_text(double v, double base_mean) {
  if (base_mean == 0) return (v >= 0 ? "+" : "") + num(v);
  return percent_text(v / std::fabs(base_mean));
}
std::string interval(const std::string& lo, const std::string& hi) { return "[" + lo + ", " + hi + "]"; }
}  // namespace

std::string render_comparison(const Comparison& c) {
  std::string out = fmt::format("schedlab compare: {} on {}, {} seed{} x {:.3g} s{}\n", c.workload,
                                c.machine, c.seeds, c.seeds == 1 ? "" : "s",
                                static_cast<double>(c.duration_ns) / 1e9,
                                c.base.empty() ? "" : ", " + c.base);
  size_t w = 8;
  for (const auto& r : c.rows) w = std::max(w, r.setting.size());
  bool any_not_significant = false;
  for (size_t m = 0; m < c.metrics.size(); ++m) {
    std::vector<Summary> sums;
    std::vector<std::string> ci, change, change_ci, mark;
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const Summary s = summarize(c.rows[i].values[m]);
      sums.push_back(s);
      ci.push_back(s.has_ci ? interval(num(s.ci_low), num(s.ci_high)) : "-");
      if (i == 0) {
        change.emplace_back();
        change_ci.emplace_back();
        mark.emplace_back();
        continue;
      }
      const Difference d = welch(s, sums[0]);
      const RelativeChange r = relative_change(s, sums[0], d);
      change.push_back(change_text(d.diff, sums[0].mean));
      if (!r.defined)  // the first setting's mean is 0: the difference and Welch's interval
        change_ci.push_back(d.has_ci ? interval(change_text(d.ci_low, 0), change_text(d.ci_high, 0))
                                     : "-");
      else if (r.has_ci)
        change_ci.push_back(interval(percent_text(r.ci_low), percent_text(r.ci_high)));
      else
        change_ci.push_back(r.unbounded ? "unbounded" : "-");
      mark.push_back(d.has_ci && !d.significant ? "not significant" : "");
      any_not_significant |= !mark.back().empty();
    }
    size_t wci = 18, wch = 18;
    for (size_t i = 0; i < ci.size(); ++i) {
      wci = std::max(wci, ci[i].size());
      wch = std::max(wch, change_ci[i].size());
    }
    out += fmt::format("\n{}{}\n", c.metrics[m], c.units[m].empty() ? "" : " (" + c.units[m] + ")");
    std::string head = fmt::format("  {:<{}}  {:>12}  {:>10}  {:<{}}  {:>8}  {:<{}}", "setting", w,
                                   "average", "sd", "95% CI of average", wci, "change",
                                   "95% CI of change", wch);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    out += head + "\n";
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const Summary& s = sums[i];
      std::string line = fmt::format("  {:<{}}  {:>12}  {:>10}  {:<{}}  {:>8}  {:<{}}  {}",
                                     c.rows[i].setting, w, num(s.mean), s.n < 2 ? "-" : num(s.sd),
                                     ci[i], wci, change[i], change_ci[i], wch, mark[i]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  if (c.rows.size() > 1)
    out += fmt::format(
        "\nchange: of the average against the first setting, with Fieller's {:.0f}% interval{}\n",
        kConfidence * 100,
        any_not_significant ? "; not significant: the interval holds 0" : "");
  return out;
}

nlohmann::ordered_json comparison_to_json(const Comparison& c) {
  using json = nlohmann::ordered_json;
  auto pair_or_null = [](bool has, double lo, double hi) {
    return has ? json::array({lo, hi}) : json(nullptr);
  };
  json j;
  j["schema"] = "schedlab.comparison";
  j["schema_version"] = kComparisonSchemaVersion;
  j["workload"] = c.workload;
  j["machine"] = c.machine;
  j["base"] = c.base;
  j["seeds"] = c.seeds;
  j["duration_ns"] = c.duration_ns;
  j["confidence"] = kConfidence;
  j["metrics"] = json::array();
  for (size_t m = 0; m < c.metrics.size(); ++m)
    j["metrics"].push_back({{"name", c.metrics[m]}, {"unit", c.units[m]}});
  j["rows"] = json::array();
  std::vector<Summary> base(c.metrics.size());
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const ComparisonRow& r = c.rows[i];
    json row;
    row["setting"] = r.setting;
    row["metrics"] = json::object();
    for (size_t m = 0; m < c.metrics.size(); ++m) {
      const Stats st = stats_of(r.values[m]);
      const Summary s = summarize(r.values[m]);
      if (i == 0) base[m] = s;
      json values = json::array();
      for (size_t k = 0; k < r.values[m].size(); ++k)
        values.push_back({{"seed", k < r.seeds.size() ? json(r.seeds[k]) : json(nullptr)},
                          {"value", r.values[m][k]}});
      json x = {{"unit", c.units[m]},     {"values", std::move(values)},
                {"n", s.n},               {"min", st.min},
                {"max", st.max},          {"median", st.median},
                {"average", s.mean},      {"sd", s.n < 2 ? json(nullptr) : json(s.sd)},
                {"ci95", pair_or_null(s.has_ci, s.ci_low, s.ci_high)}};
      if (i > 0) {
        const Difference d = welch(s, base[m]);
        const RelativeChange rc = relative_change(s, base[m], d);
        x["change"] = {
            {"difference", d.diff},
            {"ci95", pair_or_null(d.has_ci, d.ci_low, d.ci_high)},
            {"relative", rc.defined ? json(rc.rel) : json(nullptr)},
            {"relative_ci95", pair_or_null(rc.has_ci, rc.ci_low, rc.ci_high)},
            {"df", d.has_ci ? json(d.df) : json(nullptr)},
            {"p_value", d.has_ci ? json(d.p) : json(nullptr)},
            {"significant", d.significant}};
      }
      row["metrics"][c.metrics[m]] = std::move(x);
    }
    j["rows"].push_back(std::move(row));
  }
  return j;
}

}  // namespace report
