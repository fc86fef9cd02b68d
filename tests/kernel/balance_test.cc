// Load balancing's packed per-CPU view (Kernel::lb_view) stays equal to the runqueues it
// mirrors while tasks sleep, wake across LLCs (wake lists), migrate and are balanced.
#include <gtest/gtest.h>

#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;

user::Program sleeper(user::Thread& t) {
  for (;;) {
    co_await t.compute(static_cast<int64_t>(t.rng().next_u64() % 200000) + 1000);
    co_await t.nanosleep(static_cast<int64_t>(t.rng().next_u64() % 300000) + 1000);
  }
}

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

TEST(LbView, EqualsTheRunqueuesThroughoutABusyRun) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  ASSERT_TRUE(hw::restrict_cpus(&m, 48).ok());  // 3 LLCs of 16 CPUs
  Sim s(m);
  for (int i = 0; i < 60; ++i) s.spawn(kernel::TaskAttr{}, sleeper);
  for (int i = 0; i < 20; ++i) {
    kernel::TaskAttr a;
    a.nice = i % 7 - 3;  // unequal weights, so cfs.load is not a multiple of one weight
    s.spawn(a, hog);
  }
  s.k->start();
  uint64_t wakeups = 0;
  for (sim::Time t = 50000; t <= 200 * sim::kNsecPerMsec; t += 50000) {
    s.engine.run_until(t);
    testing_support::check_lb_view(*s.k);
    if (HasFailure()) FAIL() << "at t=" << t;
  }
  for (const auto& t : s.k->tasks()) wakeups += t->stats.nr_wakeups;
  EXPECT_GT(wakeups, 10000u);
}

}  // namespace
