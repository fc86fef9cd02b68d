// Sleep timers and their slack (kernel/time/hrtimer.cc): a fair task's sleep may end anywhere
// from the time it asked for to that time plus its timer slack (50 us), at the first timer
// interrupt of its CPU in that window; an RT task's ends at the time asked for.
// __hrtimer_run_queues() walks the CPU's timers in hard-expiry order and stops at the first
// whose window has not begun, the queued tick included. A read (a device's interrupt) has no
// slack. An interrupt on an idle CPU runs once the CPU has left its idle state.
#include <gtest/gtest.h>

#include <map>

#include "kernel/trace.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;
// An interrupt's entry and a wakeup take well under this.
constexpr sim::Time kEntry = 2 * kUs;
// small4's idle_exit_ns: an idle CPU's interrupt runs this much after it comes.
constexpr sim::Time kExit = 2 * kUs;

// When each task's sleep timer ran (the hrtimer_expire_entry of the hrtimer_wakeup whose
// sched_wakeup names it), by pid.
struct Expiries : kernel::TraceSink {
  std::map<int, std::vector<sim::Time>> at;
  sim::Time entry = -1;  // inside a sleep timer's expiry: when it began
  void record(const kernel::TraceRecord& r) override {
    using kernel::TraceEvent;
    if (r.type == TraceEvent::hrtimer_expire_entry)
      entry = r.timer == kernel::TraceHrtimer::hrtimer_wakeup ? r.ts : -1;
    else if (r.type == TraceEvent::hrtimer_expire_exit)
      entry = -1;
    else if (r.type == TraceEvent::sched_wakeup && entry >= 0)
      at[r.a.pid].push_back(entry);
  }
  sim::Time first(int pid) const { return at.count(pid) ? at.at(pid).front() : -1; }
};

kernel::TaskAttr on(int cpu, int policy = SCHED_NORMAL) {
  kernel::TaskAttr a;
  a.comm = "t";
  a.cpus = {cpu};
  a.policy = policy;
  if (policy == SCHED_FIFO) a.rt_priority = 50;
  return a;
}

// clock_nanosleep(TIMER_ABSTIME) to `when`, then exits.
std::function<user::Program(user::Thread&)> sleep_until(sim::Time when) {
  return [when](user::Thread& t) -> user::Program { co_await t.sleep_until(when); };
}

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(sim::kNsecPerSec);
}

void expect_at(const Expiries& e, int pid, sim::Time when) {
  EXPECT_GE(e.first(pid), when) << "pid " << pid;
  EXPECT_LT(e.first(pid), when + kEntry) << "pid " << pid;
}

// On CPUs that nothing else interrupts (idle, their tick stopped) a fair sleep ends at the end
// of its slack, an RT one at the time asked for; with timer_slack_ns = 0 both end on time
// (each once its idle CPU is out of idle).
TEST(Hrtimer, AFairSleepEndsAtTheEndOfItsSlackAndAnRtOneOnTime) {
  for (sim::Time slack : {sim::Time{50 * kUs}, sim::Time{0}}) {
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.timer_slack_ns = slack;
    Sim s(exact_timers(flat_machine(2)), cfg);
    ASSERT_EQ(s.k->machine().costs.idle_exit_ns, kExit);
    Expiries e;
    s.k->set_trace_sink(&e);
    const int fair = s.spawn(on(0), sleep_until(1 * kMs));
    const int rt = s.spawn(on(1, SCHED_FIFO), sleep_until(1 * kMs));
    s.run(3 * kMs);
    SCOPED_TRACE(slack);
    expect_at(e, fair, 1 * kMs + slack + kExit);
    expect_at(e, rt, 1 * kMs + kExit);
  }
}

// A's interrupt, at the end of its slack, also runs B, whose window began 20 us earlier; C's
// window begins after it, so C waits for its own. The idle CPU takes each 2 us late.
TEST(Hrtimer, TimersWhoseWindowHasBegunExpireInTheSameInterrupt) {
  Sim s(exact_timers(flat_machine(1)));
  Expiries e;
  s.k->set_trace_sink(&e);
  const int a = s.spawn(on(0), sleep_until(1000 * kUs));
  const int b = s.spawn(on(0), sleep_until(1030 * kUs));
  const int c = s.spawn(on(0), sleep_until(1060 * kUs));
  s.run(3 * kMs);
  expect_at(e, a, 1050 * kUs + kExit);
  expect_at(e, b, 1050 * kUs + kExit);
  expect_at(e, c, 1110 * kUs + kExit);
}

// On a busy CPU the tick (HZ=250: every 4 ms, on the grid without skew_tick) runs a sleep
// timer whose window it falls in: one asked for 7.980 ms ends at the 8 ms tick.
TEST(Hrtimer, TheTickEndsASleepWhoseWindowItFallsIn) {
  Sim s(exact_timers(flat_machine(1)));
  ASSERT_EQ(s.k->config().tick_nsec(), 4 * kMs);
  Expiries e;
  s.k->set_trace_sink(&e);
  s.spawn(on(0), hog);
  const int p = s.spawn(on(0), sleep_until(7980 * kUs));
  s.run(10 * kMs);
  expect_at(e, p, 8 * kMs);
}

// X's interrupt comes at 7.980 ms. Y's window (7.970 to 8.020 ms) has begun, but in
// hard-expiry order Y comes after the tick queued for 8 ms, which is not due: the walk stops
// there, and the tick runs Y.
TEST(Hrtimer, TheWalkStopsAtTheQueuedTick) {
  Sim s(exact_timers(flat_machine(1)));
  Expiries e;
  s.k->set_trace_sink(&e);
  s.spawn(on(0), hog);
  const int x = s.spawn(on(0), sleep_until(7930 * kUs));
  const int y = s.spawn(on(0), sleep_until(7970 * kUs));
  s.run(10 * kMs);
  expect_at(e, x, 7980 * kUs);
  expect_at(e, y, 8 * kMs);
}

// A read ends when its data arrives: the interrupt that wakes it is the device's, not a
// timer's, so no slack delays it; a sleep due at the same time on the same CPU still ends at
// the end of its slack. A read of 0 returns at once.
TEST(Hrtimer, AReadEndsWhenItsDataArrivesWithoutSlack) {
  Sim s(exact_timers(flat_machine(1)));
  Expiries e;
  s.k->set_trace_sink(&e);
  sim::Time took = -1, zero = -1;
  s.spawn(on(0), [&took, &zero](user::Thread& t) -> user::Program {
    sim::Time before = t.now();
    co_await t.read_after(0);
    zero = t.now() - before;
    before = t.now();
    co_await t.read_after(1 * kMs);
    took = t.now() - before;
  });
  const int sleeper = s.spawn(on(0), sleep_until(1 * kMs));
  s.run(3 * kMs);
  EXPECT_GE(zero, 0);
  EXPECT_LT(zero, kEntry);
  EXPECT_GE(took, 1 * kMs);
  // Then the idle CPU's exit, the interrupt, the switch and the syscall's return.
  EXPECT_LT(took, 1 * kMs + 10 * kUs);
  expect_at(e, sleeper, 1050 * kUs + kExit);
}

}  // namespace
