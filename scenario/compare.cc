// The comparison runner.
#include "scenario/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace scenario {

std::string compare(const CompareSpec& spec, report::Comparison* out,
                    const std::function<void(int, int)>& progress) {
  if (spec.seeds < 1 || spec.seeds > kMaxSeeds)
    return fmt::format("--seeds: must be from 1 to {} (got {})", kMaxSeeds, spec.seeds);
  if (spec.jobs < 0 || spec.jobs > kMaxJobs)
    return fmt::format("--jobs: must be from 0 to {} (got {})", kMaxJobs, spec.jobs);
  // One list of rows: --vary values become rows of one setting each.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows = spec.rows;
  for (const std::string& v : spec.vary_values)
    rows.push_back({spec.vary_key + "=" + v, {spec.vary_key + "=" + v}});
  if (rows.empty()) return "--vary or --row: nothing to compare";
  // Build and check each row's experiment first: bad input fails before any run. A run is
  // its row's experiment with the seed moved on (from the row's seed if it sets one).
  std::vector<Experiment> row_exps;
  for (const auto& [label, sets] : rows) {
    Experiment e = spec.base;
    for (const std::string& a : sets)
      if (std::string err = set_assignment(&e, a); !err.empty()) return "row '" + label + "': " + err;
    if (std::string err = validate(e); !err.empty()) return "row '" + label + "': " + err;
    row_exps.push_back(std::move(e));
  }
  const size_t seeds = static_cast<size_t>(spec.seeds);
  const size_t total = row_exps.size() * seeds;

  // Each run's Results is dropped as soon as its metric values are taken: what is kept per
  // run is (metric id, value) pairs, ids into one table of names, so that memory grows with
  // the values the comparison reports and not with whole runs.
  using Values = std::vector<std::pair<uint32_t, double>>;
  std::vector<Values> run_values(total);
  std::mutex mu;  // guards everything below, and progress
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::string> names, units;
  std::vector<size_t> unit_run;  // the run a unit was taken from: the first that has the metric
  // Without --metric the comparison shows the metrics of the first run; once it is done,
  // values of other metrics are not kept.
  std::vector<char> wanted;
  bool first_done = false;
  std::string workload, machine;
  size_t error_run = std::numeric_limits<size_t>::max();
  std::string error;
  std::atomic<bool> stop{false};
  int done = 0;
  auto id_of = [&](const std::string& n) {
    auto [it, added] = ids.try_emplace(n, static_cast<uint32_t>(names.size()));
    if (added) {
      names.push_back(n);
      units.emplace_back();
      unit_run.push_back(std::numeric_limits<size_t>::max());
      wanted.push_back(0);
    }
    return it->second;
  };
  for (const std::string& n : spec.metrics) wanted[id_of(n)] = 1;
  const bool filter_from_start = !spec.metrics.empty();

  std::atomic<size_t> next{0};
  auto worker = [&] {
    report::Results r;
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < total;) {
      Experiment e = row_exps[i / seeds];
      e.seed += static_cast<uint64_t>(i % seeds);
      std::string err = run(e, &r);
      std::lock_guard<std::mutex> g(mu);
      if (!err.empty()) {
        if (i < error_run) error_run = i, error = std::move(err);
        stop = true;
        continue;
      }
      if (i == 0) workload = r.workload, machine = r.machine;
      Values& v = run_values[i];
      for (const report::Metric& m : r.metrics) {
        const uint32_t id = id_of(m.name);
        if (i < unit_run[id]) unit_run[id] = i, units[id] = m.unit;
        if (i == 0 && !filter_from_start) wanted[id] = 1;
        if (!(filter_from_start || first_done) || wanted[id] || i == 0) v.emplace_back(id, m.value);
      }
      v.shrink_to_fit();
      if (i == 0 && !filter_from_start) {
        first_done = true;
        for (Values& other : run_values)
          if (!other.empty())
            std::erase_if(other, [&](const std::pair<uint32_t, double>& x) { return !wanted[x.first]; });
      }
      if (progress) progress(++done, static_cast<int>(total));
    }
  };
  int jobs = spec.jobs > 0 ? spec.jobs : static_cast<int>(std::thread::hardware_concurrency());
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(std::min<size_t>(total, kMaxJobs))));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(jobs));
  for (int j = 1; j < jobs; ++j) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no more threads to be had (ulimit -u, memory): the ones there share the runs
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (!error.empty()) return error;

  report::Comparison& c = *out;
  c = report::Comparison{};
  c.workload = workload;
  c.machine = machine;
  c.seeds = spec.seeds;
  c.duration_ns = spec.base.duration_ns;
  for (const auto& [k, v] : spec.base.params) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  for (const auto& [k, v] : spec.base.kernel_settings) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  std::vector<uint32_t> shown;  // ids in the order of the comparison's metrics
  if (filter_from_start) {
    for (const std::string& n : spec.metrics) shown.push_back(ids.at(n));
  } else {
    for (const auto& [id, value] : run_values[0]) shown.push_back(id);
  }
  for (const uint32_t id : shown) {
    if (unit_run[id] == std::numeric_limits<size_t>::max())
      return "--metric: the workload reports no metric '" + names[id] + "'";
    c.metrics.push_back(names[id]);
    c.units.push_back(units[id]);
  }
  for (size_t row = 0; row < rows.size(); ++row) {
    report::ComparisonRow cr;
    cr.setting = rows[row].first;
    for (size_t s = 0; s < seeds; ++s) cr.seeds.push_back(row_exps[row].seed + s);
    cr.values.assign(c.metrics.size(), std::vector<double>(seeds, 0.0));  // a metric a run lacks counts as 0
    for (size_t s = 0; s < seeds; ++s) {
      Values& v = run_values[row * seeds + s];
      for (size_t m = 0; m < shown.size(); ++m) {
        // The first value of that name, as Results::metric() finds it.
        auto it = std::find_if(v.begin(), v.end(), [&](const auto& x) { return x.first == shown[m]; });
        if (it != v.end()) cr.values[m][s] = it->second;
      }
      Values().swap(v);
    }
    c.rows.push_back(std::move(cr));
  }
  return "";
}

}  // namespace scenario
