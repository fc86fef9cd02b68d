// The entry and exit paths pinned against kernel/entry/common.c: where a pending reschedule
// is acted on around a system call.
#include <gtest/gtest.h>

#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

kernel::TaskAttr pinned(int cpu) {
  kernel::TaskAttr a;
  a.comm = "t";
  a.cpus = {cpu};
  return a;
}

constexpr sim::Time kUs = sim::kNsecPerUsec;

}  // namespace

// Nothing at syscall entry looks at the need-resched bits: a reschedule requested before
// the call (here a lazy one: under the 7.0 default model a wakeup from another CPU asks
// for it without an IPI) is acted on in exit_to_user_mode_loop() after the handler. So the
// futex_wake the caller makes still wakes the waiter at once, and the wakee's preemption of
// the caller follows right after it.
TEST(Entry, ASyscallRunsItsHandlerBeforeAPendingLazyReschedule) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  ASSERT_EQ(cfg.preempt, kernel::PreemptModel::Lazy);
  Sim s(exact_timers(flat_machine(2)), cfg);
  kernel::UserWord w, go;
  sim::Time waiter_woke = -1, b_done = -1;
  s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {  // waits for A's futex_wake
    while (t.load(&w) == 0) co_await t.futex_wait(&w, 0);
    waiter_woke = t.now();
  });
  s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {  // wakes B from CPU 1
    co_await t.sleep_until(900 * kUs);
    t.store(&go, 1);
    co_await t.futex_wake(&go, 1);
  });
  kernel::TaskAttr b = pinned(0);
  b.slice_ns = 100 * kUs;  // wakes with the earlier deadline: preempts A (lazily)
  s.spawn(b, [&](user::Thread& t) -> user::Program {
    while (t.load(&go) == 0) co_await t.futex_wait(&go, 0);
    co_await t.compute(100 * kUs);
    b_done = t.now();
  });
  s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {  // A: starts once B waits
    co_await t.compute(1000 * kUs - t.now());
    t.store(&w, 1);
    co_await t.futex_wake(&w, 1);
    for (;;) co_await t.compute(sim::kNsecPerSec);
  }, 10 * kUs);
  s.run(5 * sim::kNsecPerMsec);
  // The handler ran at A's call (1 ms), not after B's 100 us turn.
  ASSERT_GE(waiter_woke, 1000 * kUs);
  EXPECT_LT(waiter_woke, 1020 * kUs);
  // B got the CPU on the way out of that syscall, not at the next tick (4 ms).
  ASSERT_GE(b_done, 1100 * kUs);
  EXPECT_LT(b_done, 1150 * kUs);
  testing_support::check_invariants(*s.k, 5 * sim::kNsecPerMsec);
}

// A task that blocks in a syscall runs the syscall's exit path when it is back, after its
// wakeup and switch (syscall_exit_to_user_mode() follows the schedule() in the handler), not
// before it sleeps: a sleeper alone on its CPU is back in user mode exactly that much later.
TEST(Entry, ABlockedSyscallsExitPathRunsWhenTheTaskIsBack) {
  const auto overshoot = [](sim::Time exit_ns) {
    hw::Machine m = exact_timers(flat_machine(1));
    m.costs.syscall_exit_ns = exit_ns;
    Sim s(m, testing_support::exact_sleeps());
    sim::Time back = -1;
    s.spawn(pinned(0), [&back](user::Thread& t) -> user::Program {
      co_await t.sleep_until(1 * sim::kNsecPerMsec);
      back = t.now();
    });
    s.run(2 * sim::kNsecPerMsec);
    return back - 1 * sim::kNsecPerMsec;
  };
  EXPECT_EQ(overshoot(5 * kUs) - overshoot(0), 5 * kUs);
}
