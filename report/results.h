// The results of one run, as a value: what the experiment was, what each task and CPU did,
// and the workload's own metrics and latency distributions. Rendered by report/table.h
// and report/json.h; the JSON form is documented in docs/results-schema.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace report {

inline constexpr int kSchemaVersion = 1;

struct TaskResult {
  int pid = 0;
  int tgid = 0;
  std::string comm;
  std::string policy;          // "normal", "batch", "idle", "fifo", "rr"
  int nice = 0;
  int rt_priority = 0;
  int64_t run_ns = 0;          // time as rq->curr (user + kernel)
  int64_t wait_sum_ns = 0;     // runnable but not running
  int64_t wait_max_ns = 0;
  uint64_t wait_count = 0;
  uint64_t nvcsw = 0;          // voluntary switches (blocked)
  uint64_t nivcsw = 0;         // involuntary switches (preempted, yielded)
  uint64_t nr_migrations = 0;
  uint64_t nr_wakeups = 0;
  uint64_t nr_syscalls = 0;
  uint64_t lock_holder_preemptions = 0;
  int64_t lock_holder_preempted_ns = 0;
  int64_t spin_ns = 0;         // user time spent spinning on a word
  int64_t sum_exec_runtime_ns = 0;
  uint64_t vruntime = 0;
  int64_t vlag = 0;
  uint64_t deadline = 0;
  uint64_t slice_ns = 0;
  // PELT at the end of the run, as last brought up to date (se.avg.*, se.load.weight).
  uint64_t load_weight = 0;
  uint64_t load_avg = 0;
  uint64_t runnable_avg = 0;
  uint64_t util_avg = 0;
  uint64_t util_est = 0;
  int cpu = 0;                 // last CPU
  std::map<std::string, int64_t> extra;  // per-task counters a workload or feature adds

  friend bool operator==(const TaskResult&, const TaskResult&) = default;
};

struct CpuResult {
  int cpu = 0;
  int socket = 0;              // the machine's socket (NUMA node) holding this CPU
  int64_t user_ns = 0;
  int64_t kernel_ns = 0;       // system time of tasks + interrupt time while idle
  int64_t idle_ns = 0;
  uint64_t nr_switches = 0;

  friend bool operator==(const CpuResult&, const CpuResult&) = default;
};

// A task group (cgroup) of the run: what its tasks and its descendants' ran, and the
// settings it had. Only groups that exist (scenario cgroups, autogroups) are listed.
struct GroupResult {
  std::string path;            // "/svc/a", "/autogroup-1"
  int64_t usage_ns = 0;        // cpu.stat usage_usec (x 1000): hierarchical
  double share = 0;            // usage_ns / (duration_ns x CPUs): its share of the machine
  int cpu_weight = 0;          // cpu.weight as read back (sched_weight_to_cgroup(tg->shares))
  int idle = 0;                // cpu.idle
  std::string cpus;            // cpuset.cpus.effective, a CPU list ("0-3,8")

  friend bool operator==(const GroupResult&, const GroupResult&) = default;
};

struct LatencySummary {
  std::string name;
  uint64_t count = 0;
  int64_t min_ns = 0, p50_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
  double mean_ns = 0;

  friend bool operator==(const LatencySummary&, const LatencySummary&) = default;
};

struct Metric {
  std::string name;
  double value = 0;
  std::string unit;
  std::string help;

  friend bool operator==(const Metric&, const Metric&) = default;
};

struct Results {
  // The experiment.
  std::string workload;
  std::string machine;
  int cpus = 0;
  std::string kernel_version;
  int hz = 0;
  std::string preempt;
  int64_t duration_ns = 0;
  uint64_t seed = 0;
  std::map<std::string, std::string> params;  // every workload parameter, defaults included
  std::map<std::string, std::string> kernel_params;  // non-default kernel settings
  std::map<std::string, std::string> machine_costs;  // cost overrides (machine.KEY), name -> value
  // The run.
  uint64_t events = 0;
  std::vector<Metric> metrics;
  std::vector<LatencySummary> latencies;
  std::vector<TaskResult> tasks;
  std::vector<CpuResult> per_cpu;
  std::vector<GroupResult> groups;    // task groups, parents before children; none: all in root
  std::vector<std::string> notices;   // things the user should know (e.g. adjusted params)
  // The lines the workload's original program prints as its result (extend-sched2's
  // "Ran for N times", ...), printed as they are, each at the start of a line.
  std::vector<std::string> output;
  uint64_t warnings = 0;
  std::string first_warning;

  const Metric* metric(const std::string& name) const {
    for (const Metric& m : metrics)
      if (m.name == name) return &m;
    return nullptr;
  }

  // Field-by-field equality (a NaN metric value compares unequal, as doubles do); used by
  // the JSON round-trip tests and by tools comparing a re-read file with a run.
  friend bool operator==(const Results&, const Results&) = default;
};

}  // namespace report
