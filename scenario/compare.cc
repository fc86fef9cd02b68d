// The comparison runner: its plan, the runs of a share, and the comparison assembled from
// the shares.
#include "scenario/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace scenario {

std::string plan_compare(const CompareSpec& spec, ComparePlan* plan) {
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
  ComparePlan p;
  for (const auto& [label, sets] : rows) {
    Experiment e = spec.base;
    for (const std::string& a : sets)
      if (std::string err = set_assignment(&e, a); !err.empty()) return "row '" + label + "': " + err;
    if (std::string err = validate(e); !err.empty()) return "row '" + label + "': " + err;
    p.labels.push_back(label);
    p.row_exps.push_back(std::move(e));
  }
  p.seeds = static_cast<size_t>(spec.seeds);
  *plan = std::move(p);
  return "";
}

void run_share(const CompareSpec& spec, const ComparePlan& plan, size_t offset, size_t stride,
               RunShare* share, const std::function<void(int, int)>& progress) {
  using Values = RunShare::Values;
  RunShare& s = *share;
  s = RunShare{};
  s.offset = offset;
  s.stride = std::max<size_t>(stride, 1);
  const size_t total = plan.total();
  const size_t n = offset < total ? (total - offset + s.stride - 1) / s.stride : 0;
  s.values.resize(n);
  std::mutex mu;  // guards *share and everything below, and progress
  std::unordered_map<std::string, uint32_t> ids;
  // Without --metric the comparison shows the metrics of the first run; once it is done,
  // values of other metrics are not kept. A share without run 0 keeps every metric.
  std::vector<char> wanted;
  bool first_done = false;
  std::atomic<bool> stop{false};
  int done = 0;
  auto id_of = [&](const std::string& name) {
    auto [it, added] = ids.try_emplace(name, static_cast<uint32_t>(s.names.size()));
    if (added) {
      s.names.push_back(name);
      s.units.emplace_back();
      s.unit_run.push_back(kNoRun);
      wanted.push_back(0);
    }
    return it->second;
  };
  for (const std::string& name : spec.metrics) wanted[id_of(name)] = 1;
  const bool filter_from_start = !spec.metrics.empty();

  std::atomic<size_t> next{0};
  auto worker = [&] {
    report::Results r;
    for (size_t slot; !stop.load() && (slot = next.fetch_add(1)) < n;) {
      const size_t i = offset + slot * s.stride;
      Experiment e = plan.row_exps[i / plan.seeds];
      e.seed += static_cast<uint64_t>(i % plan.seeds);
      std::string err = run(e, &r);
      std::lock_guard<std::mutex> g(mu);
      if (!err.empty()) {
        if (i < s.error_run) s.error_run = i, s.error = std::move(err);
        stop = true;
        continue;
      }
      if (i == 0) s.workload = r.workload, s.machine = r.machine;
      Values& v = s.values[slot];
      for (const report::Metric& m : r.metrics) {
        const uint32_t id = id_of(m.name);
        if (i < s.unit_run[id]) s.unit_run[id] = i, s.units[id] = m.unit;
        if (i == 0 && !filter_from_start) wanted[id] = 1;
        if (!(filter_from_start || first_done) || wanted[id] || i == 0) v.emplace_back(id, m.value);
      }
      v.shrink_to_fit();
      if (i == 0 && !filter_from_start) {
        first_done = true;
        for (Values& other : s.values)
          if (!other.empty())
            std::erase_if(other, [&](const std::pair<uint32_t, double>& x) { return !wanted[x.first]; });
      }
      if (progress) progress(++done, static_cast<int>(n));
    }
  };
  int jobs = spec.jobs > 0 ? spec.jobs : static_cast<int>(std::thread::hardware_concurrency());
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(std::min<size_t>(n, kMaxJobs))));
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
}

namespace {
void put_u64(std::string* b, uint64_t x) { b->append(reinterpret_cast<const char*>(&x), sizeof x); }
void put_str(std::string* b, const std::string& s) {
  put_u64(b, s.size());
  b->append(s);
}

// Reads what encode_share wrote; `ok` turns false at the first read past the end.
struct Reader {
  const std::string& b;
  size_t at = 0;
  bool ok = true;
  template <class T>
  T get() {
    T x{};
    if (!ok || b.size() - at < sizeof x) {
      ok = false;
      return x;
    }
    std::memcpy(&x, b.data() + at, sizeof x);
    at += sizeof x;
    return x;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (!ok || b.size() - at < n) {
      ok = false;
      return {};
    }
    std::string s = b.substr(at, n);
    at += n;
    return s;
  }
  // A count of items of at least `item` bytes each, bounded by what is left.
  uint64_t count(size_t item) {
    const uint64_t n = get<uint64_t>();
    if (ok && n > (b.size() - at) / item) ok = false;
    return ok ? n : 0;
  }
};
}  // namespace

std::string encode_share(const RunShare& s) {
  std::string b;
  put_u64(&b, s.offset);
  put_u64(&b, s.stride);
  put_u64(&b, s.names.size());
  for (size_t id = 0; id < s.names.size(); ++id) {
    put_str(&b, s.names[id]);
    put_str(&b, s.units[id]);
    put_u64(&b, s.unit_run[id]);
  }
  put_u64(&b, s.values.size());
  for (const RunShare::Values& v : s.values) {
    put_u64(&b, v.size());
    for (const auto& [id, value] : v) {
      b.append(reinterpret_cast<const char*>(&id), sizeof id);
      b.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
  }
  put_str(&b, s.workload);
  put_str(&b, s.machine);
  put_u64(&b, s.error_run);
  put_str(&b, s.error);
  return b;
}

std::string decode_share(const std::string& bytes, RunShare* out) {
  Reader r{bytes};
  RunShare s;
  s.offset = r.get<uint64_t>();
  s.stride = r.get<uint64_t>();
  const uint64_t names = r.count(3 * sizeof(uint64_t));
  for (uint64_t id = 0; id < names && r.ok; ++id) {
    s.names.push_back(r.str());
    s.units.push_back(r.str());
    s.unit_run.push_back(r.get<uint64_t>());
  }
  s.values.resize(r.count(sizeof(uint64_t)));
  for (RunShare::Values& v : s.values) {
    v.resize(r.count(sizeof(uint32_t) + sizeof(double)));
    for (auto& [id, value] : v) {
      id = r.get<uint32_t>();
      value = r.get<double>();
      if (id >= names) r.ok = false;
    }
  }
  s.workload = r.str();
  s.machine = r.str();
  s.error_run = r.get<uint64_t>();
  s.error = r.str();
  if (!r.ok || r.at != bytes.size() || s.stride == 0)
    return fmt::format("a share of the runs: {} bytes that do not decode", bytes.size());
  *out = std::move(s);
  return "";
}

std::string assemble_comparison(const CompareSpec& spec, const ComparePlan& plan,
                                std::vector<RunShare>* shares, report::Comparison* out) {
  const size_t n = shares->size();
  const size_t total = plan.total();
  for (size_t k = 0; k < n; ++k) {
    const RunShare& s = (*shares)[k];
    if (s.offset != k || s.stride != n || s.values.size() != (k < total ? (total - k + n - 1) / n : 0))
      return fmt::format("a share of the runs: share {} of {} holds runs {} + {}k ({} of them)", k, n,
                         s.offset, s.stride, s.values.size());
  }
  // The first failed run's error, whichever share ran it.
  size_t error_run = kNoRun;
  std::string error;
  for (const RunShare& s : *shares)
    if (s.error_run < error_run)
      error_run = s.error_run, error = s.error;
  if (!error.empty()) return error;
  if (n == 0 || total == 0) return "--vary or --row: nothing to compare";

  // One table of names: each share's ids mapped to it; a unit from the lowest run that has it.
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::string> names, units;
  std::vector<size_t> unit_run;
  auto id_of = [&](const std::string& name) {
    auto [it, added] = ids.try_emplace(name, static_cast<uint32_t>(names.size()));
    if (added) {
      names.push_back(name);
      units.emplace_back();
      unit_run.push_back(kNoRun);
    }
    return it->second;
  };
  for (const std::string& name : spec.metrics) id_of(name);
  std::vector<std::vector<uint32_t>> global(n);
  for (size_t k = 0; k < n; ++k) {
    const RunShare& s = (*shares)[k];
    for (size_t id = 0; id < s.names.size(); ++id) {
      const uint32_t g = id_of(s.names[id]);
      global[k].push_back(g);
      if (s.unit_run[id] < unit_run[g]) unit_run[g] = s.unit_run[id], units[g] = s.units[id];
    }
  }

  report::Comparison& c = *out;
  c = report::Comparison{};
  c.workload = (*shares)[0].workload;
  c.machine = (*shares)[0].machine;
  c.seeds = spec.seeds;
  c.duration_ns = spec.base.duration_ns;
  for (const auto& [k, v] : spec.base.params) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  for (const auto& [k, v] : spec.base.kernel_settings) c.base += (c.base.empty() ? "" : " ") + k + "=" + v;
  std::vector<uint32_t> shown;  // ids in the order of the comparison's metrics
  if (!spec.metrics.empty()) {
    for (const std::string& name : spec.metrics) shown.push_back(ids.at(name));
  } else {
    for (const auto& [id, value] : (*shares)[0].values[0]) shown.push_back(global[0][id]);
  }
  for (const uint32_t id : shown) {
    if (unit_run[id] == kNoRun) return "--metric: the workload reports no metric '" + names[id] + "'";
    c.metrics.push_back(names[id]);
    c.units.push_back(units[id]);
  }
  const size_t seeds = plan.seeds;
  for (size_t row = 0; row < plan.row_exps.size(); ++row) {
    report::ComparisonRow cr;
    cr.setting = plan.labels[row];
    for (size_t s = 0; s < seeds; ++s) cr.seeds.push_back(plan.row_exps[row].seed + s);
    cr.values.assign(c.metrics.size(), std::vector<double>(seeds, 0.0));  // a metric a run lacks counts as 0
    for (size_t s = 0; s < seeds; ++s) {
      const size_t i = row * seeds + s;
      RunShare::Values& v = (*shares)[i % n].values[i / n];
      const std::vector<uint32_t>& g = global[i % n];
      for (size_t m = 0; m < shown.size(); ++m) {
        // The first value of that name, as Results::metric() finds it.
        auto it = std::find_if(v.begin(), v.end(), [&](const auto& x) { return g[x.first] == shown[m]; });
        if (it != v.end()) cr.values[m][s] = it->second;
      }
      RunShare::Values().swap(v);
    }
    c.rows.push_back(std::move(cr));
  }
  return "";
}

std::string compare(const CompareSpec& spec, report::Comparison* out,
                    const std::function<void(int, int)>& progress) {
  ComparePlan plan;
  if (std::string err = plan_compare(spec, &plan); !err.empty()) return err;
  std::vector<RunShare> shares(1);
  run_share(spec, plan, 0, 1, &shares[0], progress);
  return assemble_comparison(spec, plan, &shares, out);
}

}  // namespace scenario
