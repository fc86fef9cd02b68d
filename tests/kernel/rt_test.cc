// The RT class: FIFO wakeups preempt fair tasks at once; RR shares a CPU in 100 ms slices.
#include <gtest/gtest.h>

#include "sim/stats.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

namespace {
user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}
}  // namespace

TEST(Rt, AFifoThreadWakingOnAHogsCpuRunsWithinInterruptAndSwitchCost) {
  Sim s(flat_machine(1));
  kernel::TaskAttr h;
  h.cpus = {0};
  s.spawn(h, hog);
  kernel::TaskAttr f;
  f.policy = SCHED_FIFO;
  f.rt_priority = 50;
  f.cpus = {0};
  sim::Histogram lat;
  s.spawn(f, [&lat](user::Thread& t) -> user::Program {
    int64_t next = t.now() + 1000000;
    for (;;) {
      co_await t.sleep_until(next);
      lat.add(t.now() - next);
      next += 1000000;
    }
  });
  s.run(sim::kNsecPerSec);
  const hw::Costs& c = s.k->machine().costs;
  // Timer interrupt, wakeup, switch; a tick landing on the same instant adds its handler.
  const int64_t bound = c.irq_entry_ns + c.irq_exit_ns + c.ttwu_ns + c.context_switch_ns +
                        c.ipi_latency_ns + c.tick_handler_ns + c.syscall_exit_ns;
  ASSERT_GT(lat.summary().count, 900u);
  EXPECT_LE(lat.summary().max, bound);
  testing_support::check_invariants(*s.k, sim::kNsecPerSec);
}

TEST(Rt, TwoRoundRobinThreadsAlternateAndShareEqually) {
  Sim s(flat_machine(1));
  kernel::TaskAttr r;
  r.policy = SCHED_RR;
  r.rt_priority = 10;
  r.cpus = {0};
  const int a = s.spawn(r, hog);
  const int b = s.spawn(r, hog);
  s.run(2 * sim::kNsecPerSec);
  const double ra = static_cast<double>(s.task(a).stats.run_ns);
  const double rb = static_cast<double>(s.task(b).stats.run_ns);
  EXPECT_NEAR(ra / (ra + rb), 0.5, 0.03);
  // 100 ms slices: about 20 switches in 2 s, not thousands.
  EXPECT_LT(s.task(a).stats.nr_switches_involuntary, 15u);
  EXPECT_GT(s.task(a).stats.nr_switches_involuntary, 5u);
}
