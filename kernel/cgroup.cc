// The cgroup v2 files of a task group beyond cpu.weight (kernel/sched/core.c's cpu
// controller, kernel/cgroup/cpuset.c): cpu.weight.nice, cpu.idle, and cpuset.cpus with the
// effective CPUs its tasks may run on. Groups are configured before their tasks are created:
// a task takes its group's effective CPUs when it is created (cpuset_fork()/cpuset_attach()),
// and a later change of cpuset.cpus does not move tasks already created
// (update_tasks_cpumask() is not modelled). Partitions (cpuset.cpus.partition), which rebuild
// the sched domains, are not modelled: every group is a member of the root partition.
// docs/model.md, "Task groups".
#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"

namespace kernel {

task_group* KernelImpl::task_group_by_id(int id) {
  assert(id >= 1 && id <= static_cast<int>(task_groups.size()));
  return task_groups[static_cast<size_t>(id - 1)].get();
}

// cpu_weight_nice_write_s64(): sched_prio_to_weight[] at that nice, as a task's weight.
void KernelImpl::set_task_group_weight_nice(int id, int nice) {
  assert(nice >= -20 && nice <= 19);
  set_task_group_shares(id, nice_to_weight(nice));
}

// cpu_idle_write_s64() -> sched_group_set_idle().
void KernelImpl::set_task_group_idle(int id, int idle) {
  assert(idle == 0 || idle == 1);
  sched_group_set_idle(this, task_group_by_id(id), idle);
}

// compute_effective_cpumask() + update_cpumasks_hier() in cgroup v2 mode: a group's
// effective CPUs are its cpuset.cpus within its parent's effective CPUs; with no cpuset.cpus,
// or none of them left in the parent's, the parent's effective CPUs. Parents come before
// their children in task_groups, so one pass in order brings every descendant up to date.
void KernelImpl::update_effective_cpus() {
  const std::vector<uint8_t> all(static_cast<size_t>(nr_cpus()), 1);
  for (const auto& tg : task_groups) {
    const std::vector<uint8_t>& parent = tg->parent ? tg->parent->effective_cpus : all;
    tg->effective_cpus = parent;
    if (tg->cpus_allowed.empty()) continue;
    std::vector<uint8_t> both(parent.size(), 0);
    bool any = false;
    for (size_t c = 0; c < both.size(); ++c) any |= (both[c] = parent[c] && tg->cpus_allowed[c]) != 0;
    if (any) tg->effective_cpus = std::move(both);
  }
}

// cpuset_write_resmask() for cpuset.cpus (REQUIRES: every CPU exists, at least one).
void KernelImpl::set_task_group_cpus(int id, const std::vector<int>& cpus) {
  task_group* tg = task_group_by_id(id);
  assert(!cpus.empty());
  tg->cpus_allowed.assign(static_cast<size_t>(nr_cpus()), 0);
  for (int c : cpus) tg->cpus_allowed[static_cast<size_t>(c)] = 1;
  update_effective_cpus();
}

// The task's affinity in its group: its own mask within the cpuset's effective CPUs. A mask
// sharing no CPU with them is refused (sched_setaffinity() fails with EINVAL when the
// cpuset leaves no CPU of the new mask) and the task keeps the cpuset's CPUs.
void KernelImpl::restrict_to_cpuset(task_struct* p) const {
  const task_group* tg = p->sched_task_group;
  if (!tg) return;  // the root cpuset: every CPU
  const std::vector<uint8_t>& eff = tg->effective_cpus;
  // A cpuset of every CPU (an autogroup's, the default) leaves a non-empty mask as it is; the
  // test is a vectorised byte scan where the loop below visits every CPU.
  if (p->nr_cpus_allowed > 0 && !std::memchr(eff.data(), 0, eff.size())) return;
  bool any = false;
  p->cpus_mask.for_each([&](int c) { any |= eff[static_cast<size_t>(c)] != 0; });
  for (size_t c = 0; c < eff.size(); ++c) {
    const int cpu = static_cast<int>(c);
    if (eff[c] && (!any || p->cpus_mask.test(cpu)))
      p->cpus_mask.set(cpu);
    else
      p->cpus_mask.clear(cpu);
  }
  p->nr_cpus_allowed = p->cpus_mask.weight();
}

}  // namespace kernel
