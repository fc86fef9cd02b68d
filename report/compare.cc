// Rendering a Comparison.
#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

std::string render_comparison(const Comparison& c) {
  std::string out = fmt::format("schedlab compare: {} on {}, {} seed{} x {:.3g} s{}\n", c.workload,
                                c.machine, c.seeds, c.seeds == 1 ? "" : "s",
                                static_cast<double>(c.duration_ns) / 1e9,
                                c.base.empty() ? "" : ", " + c.base);
  size_t w = 8;
  for (const auto& r : c.rows) w = std::max(w, r.setting.size());
  for (size_t m = 0; m < c.metrics.size(); ++m) {
    out += fmt::format("\n{}{}\n", c.metrics[m], c.units[m].empty() ? "" : " (" + c.units[m] + ")");
    out += fmt::format("  {:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}\n", "setting", w, "min", "max",
                       "median", "average", "change");
    double base_mean = 0;
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const Stats s = stats_of(c.rows[i].values[m]);
      std::string change = "";
      if (i == 0) {
        base_mean = s.mean;
      } else if (base_mean != 0) {
        change = fmt::format("{:+.1f}%", (s.mean - base_mean) / std::fabs(base_mean) * 100);
      }
      out += fmt::format("  {:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}\n", c.rows[i].setting, w,
                         num(s.min), num(s.max), num(s.median), num(s.mean), change);
    }
  }
  return out;
}

nlohmann::ordered_json comparison_to_json(const Comparison& c) {
  nlohmann::ordered_json j;
  j["schema"] = "schedlab.comparison";
  j["schema_version"] = 1;
  j["workload"] = c.workload;
  j["machine"] = c.machine;
  j["base"] = c.base;
  j["seeds"] = c.seeds;
  j["duration_ns"] = c.duration_ns;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& r : c.rows) {
    nlohmann::ordered_json row;
    row["setting"] = r.setting;
    for (size_t m = 0; m < c.metrics.size(); ++m) {
      const Stats s = stats_of(r.values[m]);
      row["metrics"][c.metrics[m]] = {{"unit", c.units[m]}, {"values", r.values[m]}, {"min", s.min},
                                      {"max", s.max},       {"median", s.median},   {"average", s.mean}};
    }
    j["rows"].push_back(row);
  }
  return j;
}

}  // namespace report
