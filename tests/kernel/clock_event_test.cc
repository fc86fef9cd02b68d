// Writes of the clock event device (kernel/time/hrtimer.cc, tick_program_event()): every
// hrtimer interrupt ends with one, for the CPU's next timer, before the task it woke runs;
// cancelling the CPU's next timer makes one too (7.0's slice-extension timer, cancelled when
// the granted task yields). Each costs the profile's hrtimer_program_ns.
#include <gtest/gtest.h>

#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"
#include "tests/kernel/slice_ext_support.h"
#include "user/slice_ext.h"

namespace {

using testing_support::Sim;
using testing_support::exact_sleeps;
using testing_support::exact_timers;
using testing_support::flat_machine;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

hw::Machine with_program_ns(hw::Machine m, sim::Time ns) {
  m.costs.hrtimer_program_ns = ns;
  return m;
}

kernel::TaskAttr on(int cpu) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  return a;
}

// How long after the time it asked for a sleeper alone on its CPU is back in user mode.
sim::Time sleep_overshoot(sim::Time program_ns) {
  Sim s(with_program_ns(exact_timers(flat_machine(1)), program_ns), exact_sleeps());
  sim::Time back = -1;
  s.spawn(on(0), [&back](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1 * kMs);
    back = t.now();
  });
  s.run(2 * kMs);
  EXPECT_GT(back, 1 * kMs);
  return back - 1 * kMs;
}

// The sleep timer's interrupt writes the device before the woken task runs: the task is back
// exactly that write's cost later.
TEST(ClockEvent, ATimerInterruptReprogramsTheDeviceBeforeTheTaskItWokeRuns) {
  EXPECT_EQ(sleep_overshoot(3 * kUs) - sleep_overshoot(0), 3 * kUs);
}

// A CPU-bound task alone on its CPU loses each tick's write to it: at HZ=250, the ticks of
// 4 to 40 ms, ten writes, and the restart of the tick that was stopped while its CPU idled
// before the task came.
TEST(ClockEvent, EachTickEndsWithAWrite) {
  const auto user_ns = [](sim::Time program_ns) {
    Sim s(with_program_ns(exact_timers(flat_machine(1)), program_ns));
    EXPECT_EQ(s.k->config().tick_nsec(), 4 * kMs);
    s.spawn(on(0), slice_ext_support::hog);
    s.run(41 * kMs);
    return static_cast<sim::Time>(s.k->rq_of(0)->ex.user_ns);
  };
  EXPECT_EQ(user_ns(0) - user_ns(2 * kUs), 11 * 2 * kUs);
}

// 7.0: a task granted an extension yields (rseq_slice_yield()); the syscall's entry cancels
// the grant's timer, the CPU's next one, which writes the device before the CPU goes to the
// woken task that the reschedule was for (once the requester's slice ends). The wakee is
// back that write's cost later after the yield.
sim::Time yield_to_wakee(sim::Time program_ns) {
  using slice_ext_support::Abi;
  Sim s(with_program_ns(exact_timers(flat_machine(1)), program_ns),
        exact_sleeps(slice_ext_support::config(Abi::Mainline)));
  sim::Time yielded = -1, back = -1;
  s.spawn(on(0), [&yielded](user::Thread& t) -> user::Program {
    user::SliceExtClient ext(Abi::Mainline);
    co_await ext.init(t);
    for (;;) {
      ext.request(t);
      co_await t.compute(3 * kUs);
      if (ext.release(t)) {
        if (yielded < 0) yielded = t.now();
        co_await ext.yield(t);
      }
      co_await t.compute(500);
    }
  });
  s.spawn(on(0), [&back](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1 * kMs);
    back = t.now();
  });
  s.run(10 * kMs);
  EXPECT_GT(yielded, 1 * kMs) << "no grant after the wakeup";
  EXPECT_GT(back, yielded);
  return back - yielded;
}

TEST(ClockEvent, CancellingTheNextTimerReprogramsTheDevice) {
  EXPECT_EQ(yield_to_wakee(3 * kUs) - yield_to_wakee(0), 3 * kUs);
}

// NO_HZ idle: a CPU going idle with no timer within a tick stops its tick, a write (the tick's
// hrtimer cancelled), and leaving idle restarts it, another (the tick started again, the CPU's
// next timer). Without a cpuidle driver and before the got_tick rule, every idle stops it: a
// task that computes 20 us and waits 5 ms for a read comes back from each wait one write
// later (the restart; the stop is written while the CPU idles), as it did from its start.
sim::Time fifth_read_back(sim::Time program_ns) {
  hw::Machine m = with_program_ns(exact_timers(flat_machine(1)), program_ns);
  m.costs.cpuidle_menu = false;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.idle_got_tick = false;
  Sim s(m, cfg);
  sim::Time back = -1;
  s.spawn(on(0), [&back](user::Thread& t) -> user::Program {
    for (int i = 0; i < 5; ++i) {
      co_await t.compute(20 * kUs);
      co_await t.read_after(5 * kMs);
    }
    back = t.now();
  });
  s.run(40 * kMs);
  EXPECT_GT(back, 25 * kMs);
  return back;
}

TEST(ClockEvent, StoppingTheTickAndRestartingItWriteTheDevice) {
  EXPECT_EQ(fifth_read_back(3 * kUs) - fifth_read_back(0), 6 * 3 * kUs);
}

}  // namespace
