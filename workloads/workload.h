// A workload: the processes and threads a scenario runs, its parameters with defaults, and
// the metrics it reports. Each workload is one file in workloads/, registered in registry.cc.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "report/results.h"

namespace workloads {

struct ParamSpec {
  std::string name;
  std::string default_value;
  std::string help;
};

// The most threads (or lock objects) one workload parameter may ask for: far above any
// machine modelled, low enough that a typo is an error rather than an out-of-memory.
inline constexpr int kMaxThreads = 100000;

// Workload parameters after defaults and overrides; typed getters.
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  const std::map<std::string, std::string>& values() const { return values_; }
  std::string get(const std::string& name) const;
  // Parse errors are recorded (first one kept) and the default returned as 0.
  // An integer in [lo, hi] (else an error naming the parameter and the range).
  int get_int_in(const std::string& name, int lo, int hi) const;
  double get_double(const std::string& name) const;
  // A duration with its unit: ns, us, ms, s (sim::parse_duration).
  int64_t get_ns(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& error() const { return error_; }

 private:
  std::map<std::string, std::string> values_;
  mutable std::string error_;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Creates the workload's processes and threads. Returns "" or an error naming the
  // parameter (the run is then abandoned with exit code 2).
  virtual std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) = 0;
  // Adds the workload's metrics, from its own state and the kernel's counters `ks` (and latency summaries, notices) after the run.
  virtual void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) = 0;
};

struct WorkloadInfo {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Workload>()> make;
};

const std::vector<WorkloadInfo>& registry();
const WorkloadInfo* find_workload(const std::string& name);

}  // namespace workloads
