// cpu.weight.nice, cpu.idle, cpuset.cpus and cpu.max.burst of a scenario's cgroups, read and
// checked as the kernel's cgroup files check them (kernel/sched/core.c
// cpu_weight_nice_write_s64(), cpu_idle_write_s64(), cpu_cfs_burst_write_u64();
// kernel/cgroup/cpuset.c cpuset_write_resmask()). Whether a burst fits its cgroup's quota
// depends on the order of the writes; scenario/experiment.cc checks that.
#include "scenario/cgroup_files.h"

#include <vector>

#include "kernel/config.h"
#include "sim/parse.h"

namespace scenario {
namespace {

// The longest CPU list a key may name before the machine is known (hw's CPU limit).
constexpr int kCpuListLimit = 8192;

}  // namespace

bool is_cgroup_file_key(const std::string& key) {
  return key == "cpu.weight.nice" || key == "cpu.idle" || key == "cpuset.cpus" ||
         key == "cpu.max.burst";
}

std::string parse_cgroup_file_key(const std::string& key, const std::string& name,
                                  const std::string& value, CgroupFiles* f) {
  long long n = 0;
  if (key == "cpu.weight.nice") {
    // cpu_weight_nice_write_s64(): MIN_NICE..MAX_NICE, else -ERANGE.
    if (!kernel::parse_int(value, &n) || n < -20 || n > 19)
      return name + ": must be an integer in -20..19 (got '" + value + "')";
    f->has_weight_nice = true;
    f->weight_nice = static_cast<int>(n);
  } else if (key == "cpu.idle") {
    // sched_group_set_idle(): 0 or 1, else -EINVAL.
    if (!kernel::parse_int(value, &n) || n < 0 || n > 1) return name + ": must be 0 or 1 (got '" + value + "')";
    f->idle = static_cast<int>(n);
  } else if (key == "cpu.max.burst") {
    // Microseconds, at most max_cfs_runtime (tg_set_cfs_bandwidth()'s bound).
    if (!kernel::parse_int(value, &n) || n < 0 || n > kernel::Kernel::kMaxCfsQuotaUs)
      return name + ": must be an integer from 0 to " +
             std::to_string(kernel::Kernel::kMaxCfsQuotaUs) + " (microseconds; got '" + value +
             "')";
    f->burst_us = n;
  } else {
    std::vector<int> cpus;
    if (!sim::parse_cpu_list(value, kCpuListLimit, &cpus))
      return name + ": must be a list of CPUs like 0-3,8 (got '" + value + "')";
    f->cpuset_cpus = value;
  }
  return "";
}

std::string validate_cgroup_files(const std::string& prefix, const std::string& cgroup, long cpu_weight,
                                  const CgroupFiles& f, int nr_cpus) {
  const char* const none = " needs a cgroup (the root cgroup has no such file)";
  if (f.has_weight_nice && cgroup.empty()) return prefix + "cpu.weight.nice:" + none;
  if (f.idle >= 0 && cgroup.empty()) return prefix + "cpu.idle:" + none;
  if (!f.cpuset_cpus.empty() && cgroup.empty()) return prefix + "cpuset.cpus:" + none;
  if (f.burst_us >= 0 && cgroup.empty()) return prefix + "cpu.max.burst:" + none;
  // Writing one of cpu.weight and cpu.weight.nice sets the other: give one.
  if (f.has_weight_nice && cpu_weight)
    return prefix + "cpu.weight.nice: cannot be given with " + prefix + "cpu.weight (both set the weight; give one)";
  // sched_group_set_shares() refuses an idle group's weight (-EINVAL).
  if (f.idle == 1 && (cpu_weight || f.has_weight_nice))
    return prefix + (cpu_weight ? "cpu.weight" : "cpu.weight.nice") +
           ": cannot be given with cpu.idle = 1 (an idle cgroup's weight is fixed)";
  if (!f.cpuset_cpus.empty()) {
    std::vector<int> cpus;
    sim::parse_cpu_list(f.cpuset_cpus, kCpuListLimit, &cpus);
    for (int c : cpus)
      if (c >= nr_cpus)
        return prefix + "cpuset.cpus: CPU " + std::to_string(c) + " does not exist (the machine has " +
               std::to_string(nr_cpus) + " CPUs; got '" + f.cpuset_cpus + "')";
  }
  return "";
}

void apply_cgroup_files(kernel::Kernel& k, const std::string& cgroup, const CgroupFiles& f) {
  if (cgroup.empty()) return;
  const int id = k.task_group_at(cgroup);
  if (f.idle >= 0) k.set_task_group_idle(id, f.idle);
  if (f.has_weight_nice) k.set_task_group_weight_nice(id, f.weight_nice);
  if (!f.cpuset_cpus.empty()) {
    std::vector<int> cpus;
    sim::parse_cpu_list(f.cpuset_cpus, k.nr_cpus(), &cpus);
    k.set_task_group_cpus(id, cpus);
  }
  if (f.burst_us >= 0) k.set_task_group_cpu_max_burst(id, f.burst_us);
}

}  // namespace scenario
