// Steady state allocates nothing: after a warm-up (vectors at their working size, frame
// pools filled), simulating more time with the same workload makes no heap allocation.
// Method: this binary replaces the global operator new with a counting one.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "scenario/experiment.h"
#include "tests/kernel/harness.h"
#include "user/slice_ext.h"
#include "user/sync.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The replacements pair with the operator new above (malloc), but g++ 12 inlines them into
// callers and then sees free() of memory from `new`: a false -Wmismatched-new-delete.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

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
    const uint64_t before = g_allocations.load();
    const uint64_t events_before = s.engine.events_fired();
    s.engine.run_until(1000 * sim::kNsecPerMsec);
    EXPECT_GT(s.engine.events_fired() - events_before, 10000u);
    EXPECT_EQ(g_allocations.load() - before, 0u) << kernel::slice_ext_abi_name(abi);
  }
}
