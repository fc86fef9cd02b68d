// The comparison runner.
#include "scenario/compare.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace scenario {

std::string compare(const CompareSpec& spec, report::Comparison* out,
                    const std::function<void(int, int)>& progress) {
  if (spec.seeds < 1) return "--seeds: must be >= 1";
  // One list of rows: --vary values become rows of one setting each.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows = spec.rows;
  for (const std::string& v : spec.vary_values)
    rows.push_back({spec.vary_key + "=" + v, {spec.vary_key + "=" + v}});
  if (rows.empty()) return "--vary or --row: nothing to compare";
  // Build and check every experiment first: bad input fails before any run.
  std::vector<Experiment> exps;
  for (const auto& [label, sets] : rows) {
    for (int s = 0; s < spec.seeds; ++s) {
      Experiment e = spec.base;
      for (const std::string& a : sets)
        if (std::string err = set_assignment(&e, a); !err.empty()) return "row '" + label + "': " + err;
      e.seed += static_cast<uint64_t>(s);  // from the row's seed if it sets one
      if (std::string err = validate(e); !err.empty()) return "row '" + label + "': " + err;
      exps.push_back(std::move(e));
    }
  }
  std::vector<report::Results> results(exps.size());
  std::vector<std::string> errors(exps.size());
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  std::mutex progress_mu;
  int jobs = spec.jobs > 0 ? spec.jobs : static_cast<int>(std::thread::hardware_concurrency());
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(exps.size())));
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < exps.size();) {
      errors[i] = run(exps[i], &results[i]);
      const int d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> g(progress_mu);
        progress(d, static_cast<int>(exps.size()));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < jobs; ++j) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) return e;

  report::Comparison& c = *out;
  c = report::Comparison{};
  c.workload = results[0].workload;
  c.machine = results[0].machine;
  c.seeds = spec.seeds;
  c.duration_ns = spec.base.duration_ns;
  for (const auto& [k, v] : spec.base.params) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  for (const auto& [k, v] : spec.base.kernel_settings) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  std::vector<std::string> names = spec.metrics;
  if (names.empty())
    for (const auto& m : results[0].metrics) names.push_back(m.name);
  for (const std::string& n : names) {
    const report::Metric* m = nullptr;
    for (const auto& r : results)
      if ((m = r.metric(n))) break;
    if (!m) return "--metric: the workload reports no metric '" + n + "'";
    c.metrics.push_back(n);
    c.units.push_back(m->unit);
  }
  size_t i = 0;
  for (const auto& [label, sets] : rows) {
    report::ComparisonRow row;
    row.setting = label;
    row.values.assign(c.metrics.size(), {});
    for (int s = 0; s < spec.seeds; ++s, ++i)
      for (size_t m = 0; m < c.metrics.size(); ++m) {
        const report::Metric* x = results[i].metric(c.metrics[m]);
        row.values[m].push_back(x ? x->value : 0.0);  // a metric a setting lacks counts as 0
      }
    c.rows.push_back(std::move(row));
  }
  return "";
}

}  // namespace scenario
