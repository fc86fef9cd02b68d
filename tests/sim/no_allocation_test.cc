// Steady state allocates nothing: after a warm-up (vectors at their working size, frame
// pools filled), simulating more time with the same workload makes no heap allocation.
// Method: this binary replaces the global operator new with a counting one.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "scenario/experiment.h"
#include "tests/kernel/harness.h"
#include "tests/sim/allocation_counter.h"
#include "user/slice_ext.h"
#include "user/sync.h"

namespace {

struct Shared {
  std::vector<user::SpinLock> locks = std::vector<user::SpinLock>(4);
  kernel::SliceExtAbi abi = kernel::SliceExtAbi::None;
};

user::Program client(user::Thread& t, Shared* s, int i) {
  user::SliceExtClient ext(s->abi);
  co_await ext.init(t);
  for (;;) {
    co_await t.compute(static_cast<int64_t>(t.rng().exponential(200000)));
    ext.request(t);
    co_await s->locks[i % 4].lock(t);  // a nested Task: its frame comes from the pool
    co_await t.compute(10000);
    s->locks[i % 4].unlock(t);
    if (ext.release(t)) co_await ext.yield(t);
    if (i % 3 == 0) co_await t.nanosleep(50000);
  }
}

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

}  // namespace

// The counter sees allocations at all (else every "no allocation" check would pass).
std::unique_ptr<std::vector<int>> g_kept;  // escapes, so the allocation cannot be elided
TEST(NoAllocation, TheCounterCountsAnAllocation) {
  const uint64_t before = testing_support::allocations.load();
  g_kept = std::make_unique<std::vector<int>>(100);
  EXPECT_GE(testing_support::allocations.load() - before, 2u);  // the vector and its array
  g_kept.reset();
}

TEST(NoAllocation, SteadyStateSimulationMakesNoHeapAllocation) {
  for (auto abi : {kernel::SliceExtAbi::None, kernel::SliceExtAbi::Rfc, kernel::SliceExtAbi::Mainline}) {
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.slice_ext.abi = abi;
    hw::Machine m;
    ASSERT_TRUE(hw::load_machine("vm50", &m).ok());
    ASSERT_TRUE(hw::restrict_cpus(&m, 8).ok());
    testing_support::Sim s(m, cfg);
    Shared sh;
    sh.abi = abi;
    for (int i = 0; i < 16; ++i)
      s.spawn(kernel::TaskAttr{}, [&sh, i](user::Thread& t) { return client(t, &sh, i); });
    for (int i = 0; i < 8; ++i) s.spawn(kernel::TaskAttr{}, hog);
    s.k->start();
    s.engine.run_until(500 * sim::kNsecPerMsec);  // warm-up
    const uint64_t before = testing_support::allocations.load();
    const uint64_t events_before = s.engine.events_fired();
    s.engine.run_until(1000 * sim::kNsecPerMsec);
    EXPECT_GT(s.engine.events_fired() - events_before, 10000u);
    EXPECT_EQ(testing_support::allocations.load() - before, 0u) << kernel::slice_ext_abi_name(abi);
  }
}
