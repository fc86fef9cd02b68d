// User-space synchronisation over simulated memory: spinning costs CPU while the holder is
// off-CPU, hand-off costs a cache-line transfer, mutual exclusion holds, futex sleeps.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernel/harness.h"
#include "user/sync.h"

using testing_support::Sim;
using testing_support::flat_machine;

namespace {
user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}
kernel::TaskAttr on(int cpu) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  return a;
}
}  // namespace

TEST(SpinLock, SpinnersBurnCpuWhileTheHolderIsPreempted) {
  Sim s(flat_machine(2));
  user::SpinLock lock;
  // The holder takes the lock and holds it for 100 ms of work on a CPU shared with a hog,
  // so it is preempted while holding; the waiter on CPU 1 spins all that time.
  const int holder = s.spawn(on(0), [&lock](user::Thread& t) -> user::Program {
    co_await lock.lock(t);
    co_await t.compute(100 * sim::kNsecPerMsec);
    lock.unlock(t);
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  });
  s.spawn(on(0), hog);
  const int waiter = s.spawn(on(1), [&lock](user::Thread& t) -> user::Program {
    co_await t.compute(1 * sim::kNsecPerMsec);
    co_await lock.lock(t);
    lock.unlock(t);
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  }, 0);
  s.run(sim::kNsecPerSec);
  EXPECT_GT(s.task(holder).stats.nr_lock_holder_preemptions, 0u);
  // The CS needs 100 ms of CPU but gets about half of CPU 0: ~200 ms of wall time spun.
  EXPECT_GT(s.task(waiter).stats.spin_ns, 150 * sim::kNsecPerMsec);
  EXPECT_LT(s.task(waiter).stats.spin_ns, 260 * sim::kNsecPerMsec);
  testing_support::check_invariants(*s.k, sim::kNsecPerSec);
}

// The spinner's reload is served one line transfer after the release, plus up to half of
// another (reloads of several spinners queue in no particular order).
TEST(SpinLock, HandOffToASpinnerTakesOneCacheLineTransfer) {
  Sim s(flat_machine(2));
  user::SpinLock lock;
  int64_t released_at = -1, acquired_at = -1;
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await lock.lock(t);
    co_await t.compute(10 * sim::kNsecPerMsec);
    released_at = t.now();
    lock.unlock(t);
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  });
  s.spawn(on(1), [&](user::Thread& t) -> user::Program {
    co_await t.compute(sim::kNsecPerMsec);
    co_await lock.lock(t);
    acquired_at = t.now();
    lock.unlock(t);
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  });
  s.run(100 * sim::kNsecPerMsec);
  ASSERT_GE(released_at, 0);
  const int64_t lat = s.k->machine().line_transfer_ns(0, 1);
  EXPECT_GE(acquired_at - released_at, lat);
  EXPECT_LE(acquired_at - released_at, lat + lat / 2);
}

TEST(Mutex, ContendedThreadsSleepAndMutualExclusionHolds) {
  Sim s(flat_machine(4));
  user::Mutex m;
  int64_t inside = 0, max_inside = 0, done = 0;
  std::vector<int> pids;
  for (int i = 0; i < 8; ++i) {
    pids.push_back(s.spawn(kernel::TaskAttr{}, [&](user::Thread& t) -> user::Program {
      for (int n = 0; n < 50; ++n) {
        co_await m.lock(t);
        max_inside = std::max(max_inside, ++inside);
        co_await t.compute(50 * sim::kNsecPerUsec);
        --inside;
        co_await m.unlock(t);
        co_await t.compute(20 * sim::kNsecPerUsec);
      }
      ++done;
    }));
  }
  s.run(sim::kNsecPerSec);
  EXPECT_EQ(done, 8);
  EXPECT_EQ(max_inside, 1);
  // Voluntary switches other than each thread's exit: the futex waits of the contended lock.
  uint64_t sleeps = 0;
  for (int pid : pids) sleeps += s.task(pid).stats.nr_switches_voluntary - 1;
  EXPECT_GT(sleeps, 8u);
  testing_support::check_invariants(*s.k, sim::kNsecPerSec);
}

TEST(Barrier, AllPartiesLeaveTogether) {
  Sim s(flat_machine(4));
  user::Barrier b(4);
  std::vector<int64_t> left;
  for (int i = 0; i < 4; ++i) {
    s.spawn(kernel::TaskAttr{}, [&, i](user::Thread& t) -> user::Program {
      co_await t.compute((i + 1) * sim::kNsecPerMsec);
      co_await b.arrive_and_wait(t);
      left.push_back(t.now());
    });
  }
  s.run(100 * sim::kNsecPerMsec);
  ASSERT_EQ(left.size(), 4u);
  for (int64_t t : left) EXPECT_GE(t, 4 * sim::kNsecPerMsec);
}

TEST(Program, AMillionSynchronousAwaitsDoNotOverflowTheStack) {
  Sim s(flat_machine(1));
  int64_t iterations = 0;
  s.spawn(kernel::TaskAttr{}, [&](user::Thread& t) -> user::Program {
    user::SpinLock lock;
    for (int i = 0; i < 1000000; ++i) {
      co_await lock.lock(t);  // completes synchronously: the lock is free
      lock.unlock(t);
      ++iterations;
      if (i % 1000 == 999) co_await t.compute(1);
    }
  });
  s.run(sim::kNsecPerSec);
  EXPECT_EQ(iterations, 1000000);
}
