// Helpers the task-group tests share (group, cgroup and bandwidth tests): a task's attributes
// in a group, a group under cpu.max, an always-running program, the share of the elapsed time a
// task ran, and the kernel versions they cover.
#pragma once
#include <cstdint>
#include <string>

#include "tests/kernel/harness.h"

namespace group_support {

inline kernel::TaskAttr in_group(int group, int cpu = -1, int nice = 0) {
  kernel::TaskAttr a;
  a.comm = "hog";
  a.group = group;
  a.nice = nice;
  if (cpu >= 0) a.cpus = {cpu};
  return a;
}

// A thread that computes forever.
inline user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

inline double run_share(const testing_support::Sim& s, int pid, sim::Time elapsed) {
  return static_cast<double>(s.task(pid).stats.run_ns) / static_cast<double>(elapsed);
}

// cpu.max's period timer with its first expiry at 0 instead of init_cfs_bandwidth()'s random
// offset, so that the group's periods end at multiples of its period: for tests that pin
// what happens at a period's end. Call before the group's cpu.max is written.
inline void periods_from_zero(kernel::KernelImpl& k, int group) {
  k.task_group_by_id(group)->cfs_bandwidth.period_expires = 0;
}

// A group at `path` with cpu.max "quota_us period_us" whose periods end at multiples of its
// period (periods_from_zero()): where most bandwidth tests start.
inline int cpu_max_group(kernel::KernelImpl& k, const std::string& path, int64_t quota_us,
                         int64_t period_us) {
  const int group = k.create_task_group(path);
  periods_from_zero(k, group);
  k.set_task_group_cpu_max(group, quota_us, period_us);
  return group;
}

inline constexpr kernel::KernelVersion kVersions[] = {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                                                      kernel::KernelVersion::V7_0};

}  // namespace group_support
