// `schedlab list`: workloads, machines and settings, or one workload's parameters.
#include "cli/cli.h"

#include <fmt/format.h>
#include <iostream>

#include "hw/machine.h"
#include "kernel/config.h"
#include "workloads/workload.h"

namespace cli {

int do_list(const std::string& what) {
  if (!what.empty()) {
    const workloads::WorkloadInfo* w = workloads::find_workload(what);
    if (!w) return fail("list: unknown workload '" + what + "'");
    std::cout << fmt::format("{} - {}\n\nparameters (name, default, meaning):\n", w->name, w->description);
    for (const auto& p : w->params)
      std::cout << fmt::format("  {:<12} {:<18} {}\n", p.name, p.default_value, p.help);
    return 0;
  }
  std::cout << "workloads:\n";
  for (const auto& w : workloads::registry())
    std::cout << fmt::format("  {:<16} {}\n", w.name, w.description);
  std::cout << "\nmachines:\n";
  for (const std::string& name : hw::builtin_machines()) {
    hw::Machine m;
    const hw::LoadResult lr = hw::load_machine(name, &m);
    std::cout << fmt::format("  {:<8} {}\n", name,
                             lr.ok() ? fmt::format("{} CPUs: {}", m.topo.nr_cpus, m.description)
                                     : lr.error);
  }
  std::cout << "\nkernel settings (--set KEY=VALUE), defaults of 7.0:\n"
               "  kernel           6.12 | 6.18 | 7.0 (default 7.0)\n"
               "  hz               100 | 250 | 300 | 1000 (default 250)\n"
               "  preempt          none | voluntary | full | lazy (default per version)\n"
               "  base_slice_ns    normalized base slice, before the CPU-count factor (debugfs shows it\n"
               "                   scaled; default 750000 in 6.12, else 700000)\n"
               "  nohz_idle        true | false (default true)\n"
               "  skew_tick        0 | 1: offset each CPU's tick (boot parameter; default 0)\n"
               "  launcher         task | outside: who forks the threads: a task that takes CPU\n"
               "                   time where it runs, or a parent off the machine (default task)\n"
               "  migration_cost_ns, rr_timeslice_ms\n"
               "  sched_autogroup_enabled  0 | 1: each session's tasks form a task group\n"
               "                   (autogroup; distributions boot with 1; default 0); a workload\n"
               "                   or an --also starts in a new session with session=own\n"
               "  wakeup_pick_next_entity  true | false: wakeup preemption picks through\n"
               "                   pick_next_entity(), dequeuing a picked delayed entity and\n"
               "                   picking again (ac8e69e69363, 9f6d929ee2c6: 7.0.y, 6.18.y from\n"
               "                   May 2026; default false = the releases; not in 6.12)\n"
               "  fair_server.runtime_ns, fair_server.period_ns\n"
               "                   fair deadline server (default 50000000 per 1000000000; 0 = off)\n"
               "  slice_ext        none | rfc | rseq2023 | mainline (default: the workload's ext)\n"
               "  slice_ext.nsec   grant length with its unit (default 50us rfc/rseq2023, 5us mainline:\n"
               "                   5us..50us)\n"
               "  slice_ext.tick, slice_ext.fair_only, slice_ext.no_defer_rt, slice_ext.lazy_remote\n"
               "                   true | false: the review's policy switches (default false)\n"
               "  slice_ext.rseq_miss  probability the rseq page is not resident (default 0): the\n"
               "                   kernel's access fails and the hint is dropped. This models the\n"
               "                   concern raised against the RFC, not 7.0, which would fault the\n"
               "                   page in\n"
               "  slice_ext.rseq_len   rseq_len each thread registers: 32 = glibc 2.35-2.40 (legacy),\n"
               "                   more = RSEQ ABI v2, as glibc 2.41+ (e.g. 64; default 32)\n"
               "  slice_ext.require_rseq_v2  true = 7.0.10+: slice extensions only for v2\n"
               "                   registrations (default false = 7.0 as released)\n"
               "  slice_ext.page_limit [task_shared] pages per process (default 0 = no limit)\n"
               "  mm_cid           default | off | lazy | batched | owner: rseq concurrency IDs\n"
               "                   (default: lazy in 6.12/6.18, owner in 7.0; batched needs 6.18)\n"
               "  mm_cid.scan_batch CPUs per scan call of batched (default 8, or the CPU count if\n"
               "                   fewer; 1..CPU count)\n"
               "  softirq.ksoftirqd, softirq.threadirqs, softirq.irq_time_accounting,\n"
               "  softirq.preempt_rt, softirq.latency_sensi_flag\n"
               "                   true | false: ksoftirqd threads exist, boot option threadirqs,\n"
               "                   CONFIG_IRQ_TIME_ACCOUNTING, PREEMPT_RT softirq handling, the\n"
               "                   latency_sensi_flag patch (default false; docs/model.md)\n"
               "  sched_feat.NAME  true | false (defaults of 7.0; other versions noted where they differ):\n";
  // Defaults of 7.0, with the versions whose default differs.
  const kernel::KernelVersion versions[] = {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18};
  const kernel::KernelConfig d = kernel::default_config(kernel::KernelVersion::V7_0);
  for (int i = 0; i < kernel::nr_sched_feats(); ++i) {
    const auto bit = static_cast<kernel::sched_feat_bit>(i);
    std::string other;
    for (kernel::KernelVersion v : versions)
      if (kernel::default_config(v).feat(bit) != d.feat(bit))
        other += fmt::format("{}{}: {}", other.empty() ? " (" : ", ", kernel::version_name(v),
                             d.feat(bit) ? "false" : "true");
    if (!other.empty()) other += ")";
    std::cout << fmt::format("  sched_feat.{:<20} {}{}\n", kernel::sched_feat_name(i),
                             d.feat(bit) ? "true" : "false", other);
  }
  std::cout << "\nmachine costs (--set machine.KEY=VALUE, or a scenario's [costs] table):\n"
               "  any cost key of docs/machines.md, e.g. machine.timer_irq_jitter_ns=0 for exact timers\n";
  std::cout << "\nWorkload parameters: schedlab list WORKLOAD\n";
  return 0;
}

}  // namespace cli
