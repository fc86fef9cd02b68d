// The mm_cid scan runs as task work on the way back to user space, with preemption enabled:
// under full and lazy preemption an RT wakeup on its CPU preempts it at the interrupt's
// return (irqentry_exit_cond_resched()), and the scanning thread finishes the scan when it
// runs again; under none and voluntary the RT task waits for the scan's end.
#include <gtest/gtest.h>

#include "kernel/sched/mm_cid.h"
#include "kernel/sched/sched.h"
#include "kernel/task_shared.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr sim::Time kScan = 8 * 50 * kUs;  // one call: 8 CPUs at 50 us

struct Outcome {
  kernel::mm_cid_report report;
  int rt_late = 0;            // the RT thread's returns from a sleep over 100 us past its end
  uint64_t rt_own_scans = 0;  // scans the RT thread ran itself (its process's: a tick found it)
  uint64_t cpu0_sys_ns = 0;   // CPU 0's kernel time
};

// CPU 0 of 8 runs two busy threads of one process (ticks find them and queue its scan) and an
// RT thread of another sleeping 37 us at a time, for 1 s. A tick that finds the RT thread
// running queues its own process's scan on it, which nothing preempts.
Outcome run(kernel::PreemptModel model) {
  hw::Machine m = flat_machine(8);
  m.costs.mm_cid_scan_cpu_ns = 50 * kUs;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V6_18);
  cfg.mm_cid = kernel::MmCid::Lazy;
  cfg.mm_cid_sample_ms = 10;
  cfg.preempt = model;
  Sim s(m, cfg);
  kernel::TaskAttr on0;
  on0.cpus = {0};
  for (int i = 0; i < 2; ++i)
    s.spawn(on0, [](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.compute(3 * kMs);
        co_await t.nanosleep(50 * kUs);
      }
    });
  s.tgid = s.k->create_process("rt");
  kernel::TaskAttr rt = on0;
  rt.policy = SCHED_FIFO;
  rt.rt_priority = 90;
  Outcome o;
  const int rt_pid = s.spawn(rt, [&o](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(5 * kUs);
      const sim::Time end = t.now() + 37 * kUs;
      co_await t.nanosleep(37 * kUs);
      o.rt_late += t.now() - end > 100 * kUs;
    }
  });
  s.run(1000 * kMs);
  testing_support::check_invariants(*s.k, 1000 * kMs);
  o.report = kernel::mm_cid_snapshot(*s.k);
  o.rt_own_scans = s.task(rt_pid).mm->cid.stats.nr_scan_calls;
  o.cpu0_sys_ns = s.k->cpu_rq(0).ex.sys_ns;
  return o;
}

}  // namespace

TEST(MmCidPreempt, AnRtWakeupPreemptsTheScanUnderFullAndLazyPreemption) {
  const Outcome none = run(kernel::PreemptModel::None);
  ASSERT_GT(none.report.scan_calls, 3u);
  EXPECT_GT(none.report.rt_wait_added_ns.summary().count, 0u);
  EXPECT_GT(static_cast<uint64_t>(none.rt_late), none.rt_own_scans) << "it waits for others' scans";
  for (auto model : {kernel::PreemptModel::Full, kernel::PreemptModel::Lazy}) {
    SCOPED_TRACE(kernel::preempt_name(model));
    const Outcome o = run(model);
    ASSERT_GT(o.report.scan_calls, 3u);
    EXPECT_EQ(o.report.rt_wait_added_ns.summary().count, 0u);
    EXPECT_LE(static_cast<uint64_t>(o.rt_late), o.rt_own_scans) << "late only for its own scans";
    // Each call's whole cost is still run (the threads are pinned: on CPU 0) when the thread
    // that made it is back.
    EXPECT_EQ(o.report.scan_call_ns.summary().max, kScan);
    EXPECT_GE(o.cpu0_sys_ns, o.report.scan_calls * static_cast<uint64_t>(kScan));
  }
}
