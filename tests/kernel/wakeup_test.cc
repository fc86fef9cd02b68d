// Wakeup placement pinned against kernel/sched/core.c and fair.c: the bookkeeping that
// select_idle_sibling() reads.
#include <gtest/gtest.h>

#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

// p->recent_used_cpu is written in two places only: wake_up_new_task() (the parent's CPU)
// and select_idle_sibling() (prev, as the candidate for the next wakeup). Switching a task
// in does not touch it (Linux stopped that in 5.11, 89aafd67f28c), so at a wakeup it names
// the CPU before prev: a third idle candidate after target and prev. Here: a thread
// started from outside forks on CPU 0 (its first allowed CPU), is placed on another, and
// still names CPU 0 while it runs there.
TEST(Wakeup, RecentUsedCpuIsTheForkingCpuNotTheOneSwitchedTo) {
  Sim s(flat_machine(4));
  kernel::TaskAttr hog;
  hog.comm = "hog";
  hog.cpus = {0};
  s.spawn(hog, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  const int p = s.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  }, 10 * sim::kNsecPerUsec);
  s.run(sim::kNsecPerMsec);
  ASSERT_NE(s.task(p).cpu, 0);  // forked away from the busy CPU 0
  EXPECT_EQ(s.task(p).recent_used_cpu, 0);
  testing_support::check_invariants(*s.k, sim::kNsecPerMsec);
}

// sched_idle_cpu(): a CPU that runs only SCHED_IDLE tasks counts as idle for placement, since
// any other task preempts them at once. A sleeper on CPU 1, beside a SCHED_IDLE hog, stays
// there; were CPU 1 taken as busy, select_idle_sibling() would move it to an idle CPU (2..7)
// at a wakeup (one from a full sleep; a delayed sleeper is woken in place).
TEST(Wakeup, ACpuRunningOnlySchedIdleTasksCountsAsIdle) {
  Sim s(flat_machine(8));
  auto hog = [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  };
  kernel::TaskAttr on0;
  on0.cpus = {0};
  s.spawn(on0, hog);
  const int p = s.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(100 * sim::kNsecPerUsec);
      co_await t.nanosleep(sim::kNsecPerMsec);
    }
  }, sim::kNsecPerUsec);
  kernel::TaskAttr idle_on1;
  idle_on1.cpus = {1};
  idle_on1.policy = SCHED_IDLE;
  s.spawn(idle_on1, hog, 2 * sim::kNsecPerUsec);
  const sim::Time end = 20 * sim::kNsecPerMsec;
  s.run(end);
  EXPECT_EQ(s.task(p).cpu, 1);
  EXPECT_GT(s.task(p).stats.nr_wakeups, 10u);
  EXPECT_EQ(s.task(p).stats.nr_migrations, 0u);
  testing_support::check_invariants(*s.k, end);
}
