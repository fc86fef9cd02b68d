// A CPU going idle, pinned against kernel/sched/core.c and fair.c: the idle-time average
// newly-idle balancing is gated on (rq->avg_idle, sampled where each version samples it) and
// the blocked-load refresh a newly idle CPU runs for the tick-stopped ones
// (nohz_newidle_balance(), nohz_run_idle_balance()).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "hw/machine.h"
#include "kernel/sched/sched.h"
#include "kernel/trace.h"
#include "user/sync.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sampler;
using testing_support::Sim;
using testing_support::flat_machine;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::TaskAttr on(int cpu) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  return a;
}

// What a probe saw of CPU 1's idle stamp and average.
struct IdleState {
  uint64_t stamp = 0, avg_idle = 0;
};

// CPU 1: X runs 100 us and sleeps for 300 us (CPU 1 idles from about 0.1 ms); at 0.2 ms a
// forked Y lands there and runs on; at about 0.4 ms X's wakeup is enqueued beside Y. Probes
// at 0.05, 0.3 and 0.6 ms. (Samples below the boot value, 1 ms, which is also the cap.)
struct AvgIdleRun {
  IdleState before, after_fork, after_wakeup;
};

AvgIdleRun avg_idle_run(kernel::KernelVersion v) {
  Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
  s.spawn(on(1), [](user::Thread& t) -> user::Program {
    co_await t.compute(100 * kUs);
    co_await t.nanosleep(300 * kUs);
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  s.spawn(on(1), [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  }, 200 * kUs);
  AvgIdleRun r;
  const kernel::rq* rq1 = s.k->rq_of(1);
  auto probe = [rq1](IdleState* st) { *st = {rq1->idle_stamp, rq1->avg_idle}; };
  Sampler a(s, sim::kNsecPerSec, [&](sim::Time) { probe(&r.before); }, 50 * kUs);
  Sampler b(s, sim::kNsecPerSec, [&](sim::Time) { probe(&r.after_fork); }, 300 * kUs);
  Sampler c(s, sim::kNsecPerSec, [&](sim::Time) { probe(&r.after_wakeup); }, 600 * kUs);
  s.run(4 * kMs);
  testing_support::check_invariants(*s.k, 4 * kMs);
  return r;
}

}  // namespace

// 7.0 samples an idle period as the CPU leaves idle (put_prev_task_idle() ->
// update_rq_avg_idle(), 4b603f1551a7): the fork that ends CPU 1's idle takes a 0.1 ms sample,
// and the later wakeup none.
TEST(AvgIdle, SevenZeroSamplesAsTheCpuLeavesIdle) {
  const AvgIdleRun r = avg_idle_run(kernel::KernelVersion::V7_0);
  EXPECT_EQ(r.after_fork.stamp, 0u);
  EXPECT_LT(r.after_fork.avg_idle, r.before.avg_idle);
  EXPECT_EQ(r.after_wakeup.avg_idle, r.after_fork.avg_idle);
}

// 6.12 and 6.18 sample at the next wakeup enqueued on the CPU (ttwu_do_activate()): a fork
// leaves the stamp, and the wakeup 0.2 ms into Y's run samples idle and busy time together
// (0.3 ms).
TEST(AvgIdle, SixTwelveAndSixEighteenSampleAtTheNextWakeupEnqueue) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18}) {
    SCOPED_TRACE(kernel::version_name(v));
    const AvgIdleRun r = avg_idle_run(v);
    EXPECT_GT(r.after_fork.stamp, 0u);  // the sleep's switch to idle
    EXPECT_LT(r.after_fork.stamp, static_cast<uint64_t>(200 * kUs));
    EXPECT_EQ(r.after_fork.avg_idle, r.before.avg_idle);
    EXPECT_EQ(r.after_wakeup.stamp, 0u);
    EXPECT_LT(r.after_wakeup.avg_idle, r.before.avg_idle);
  }
}

// nohz_newidle_balance(): CPU 0 wakes every 5 ms for 20 us, so its tick almost never finds
// it busy and the busy CPUs' NOHZ_STATS_KICK almost never comes; CPU 1 went idle with a
// hog's utilisation blocked. Each time CPU 0 goes idle expecting to stay so (avg_idle at
// least the migration cost) with the 32 ms refresh due, it decays the tick-stopped CPUs'
// blocked load itself at do_idle(), so CPU 1's utilisation falls as PELT decays it (halving
// every 32 ms); without the refresh it stays at its value at the sleep until a tick of CPU 0
// happens to find it busy (in this run, after a second).
TEST(NohzIdle, ANewlyIdleCpuRefreshesTheBlockedLoadOfTickStoppedCpus) {
  Sim s(flat_machine(2), testing_support::no_autogroup());
  s.spawn(on(1), [](user::Thread& t) -> user::Program {
    co_await t.compute(400 * kMs);
    co_await t.nanosleep(10 * sim::kNsecPerSec);
  });
  s.spawn(on(0), [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(20 * kUs);
      co_await t.nanosleep(5 * kMs);
    }
  }, 1700 * kUs);
  unsigned long util_at_sleep = 0;
  Sampler at_sleep(s, 10 * sim::kNsecPerSec, [&](sim::Time) {
    util_at_sleep = s.k->rq_of(1)->cfs.avg.util_avg;
  }, 401 * kMs);
  s.run(700 * kMs);
  EXPECT_GT(util_at_sleep, 900u);
  EXPECT_LT(s.k->rq_of(1)->cfs.avg.util_avg, 16u);  // without the refresh: 1023 here
  testing_support::check_invariants(*s.k, 700 * kMs);
}

// An RT task sleeping 100 us at a time leaves its CPU idle almost always. menu, seeing the
// sleep timer due within a tick (tick_nohz_get_sleep_length()), keeps the tick: it comes every
// 4 ms (HZ=250). The idle loop without a cpuidle driver (and before the got_tick rule) asks to
// stop it at every idle, and tick_nohz_next_event(), which in high-resolution mode counts no
// hrtimer, lets it stop: it comes only when a wakeup happens to straddle a tick's time. With
// sleeps of 10 ms menu stops it too.
TEST(NohzIdle, MenuKeepsTheTickThroughSleepsShorterThanATickWhereTheDriverlessLoopStopsIt) {
  struct Case {
    bool menu;
    sim::Time sleep;
    bool keeps;
  };
  for (const Case& c : {Case{true, 100 * kUs, true}, Case{true, 10 * kMs, false},
                        Case{false, 100 * kUs, false}}) {
    hw::Machine m = testing_support::exact_timers(flat_machine(1));
    m.costs.cpuidle_menu = c.menu;
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.idle_got_tick = false;
    Sim s(m, cfg);
    ASSERT_EQ(s.k->config().tick_nsec(), 4 * kMs);
    struct Ticks : kernel::TraceSink {
      int n = 0;
      void record(const kernel::TraceRecord& r) override {
        n += r.type == kernel::TraceEvent::hrtimer_expire_entry &&
             r.timer == kernel::TraceHrtimer::tick_nohz_handler && r.ts >= 20 * kMs;
      }
    } ticks;
    s.k->set_trace_sink(&ticks);
    kernel::TaskAttr rt = on(0);
    rt.policy = SCHED_FIFO;
    rt.rt_priority = 50;
    const sim::Time sleep = c.sleep;
    s.spawn(rt, [sleep](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.compute(5 * kUs);
        co_await t.nanosleep(sleep);
      }
    });
    s.run(120 * kMs);
    SCOPED_TRACE(testing::Message() << "menu " << c.menu << " sleep " << c.sleep);
    if (c.keeps)
      EXPECT_GE(ticks.n, 24);  // every tick of the 100 ms
    else
      EXPECT_LE(ticks.n, 3);
  }
}

// sched_balance_newidle() returns at once when a wakeup is already queued for the CPU
// (ttwu_pending): the task comes with the IPI. On two LLCs (synth:2x4x1), CPU 4 wakes W, a
// sleeper pinned to CPU 0, at 5 ms (once out of idle, 2 us later): a remote LLC, so the
// wakeup goes on CPU 0's wake list with an IPI (1 us). CPU 0's task blocks in that
// microsecond, with two hogs on CPU 1 making the machine overloaded: CPU 0's lowest domain
// sees no newly-idle attempt (W then runs on).
TEST(NewidleBalance, ACpuWithAQueuedWakeupDoesNotBalance) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("synth:2x4x1", &m).ok());
  Sim s(testing_support::exact_timers(m),
        testing_support::exact_sleeps(testing_support::no_autogroup()));
  kernel::UserWord w;
  auto hog = [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  };
  s.spawn(on(1), hog);
  s.spawn(on(1), hog);
  s.spawn(on(0), [&w](user::Thread& t) -> user::Program {
    co_await t.futex_wait(&w, 0);
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  s.spawn(on(4), [&w](user::Thread& t) -> user::Program {
    co_await t.nanosleep(5 * kMs - t.now());
    co_await t.futex_wake(&w, 1);
  });
  bool queued_at_block = false;
  const kernel::rq* rq0 = s.k->rq_of(0);
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    // (the last 5 us in steps of 100 ns, so interrupts do not carry the block past the window)
    constexpr sim::Time kBlock = 5 * kMs + 4800;  // CPU 4's idle exit (2 us) makes it late
    while (t.now() < kBlock) {
      const sim::Time left = kBlock - t.now();
      const sim::Time step = left > 5 * kUs ? left - 5 * kUs : std::min<sim::Time>(left, 100);
      co_await t.compute(step);
    }
    queued_at_block = !rq0->ex.wake_list.empty();
    co_await t.nanosleep(sim::kNsecPerSec);
  }, 10 * kUs);
  uint64_t calls_before = 0, calls_after = 0;
  Sampler a(s, sim::kNsecPerSec, [&](sim::Time) { calls_before = rq0->sd[0].newidle_call; },
            4 * kMs);
  Sampler b(s, sim::kNsecPerSec, [&](sim::Time) { calls_after = rq0->sd[0].newidle_call; },
            6 * kMs);
  s.run(7 * kMs);
  EXPECT_TRUE(queued_at_block);  // the set-up: W's wakeup waits on CPU 0's wake list
  EXPECT_EQ(calls_after, calls_before);
  testing_support::check_invariants(*s.k, 7 * kMs);
}

// A delayed task on the balancer's side. 6.12 counts it as queued (update_sg_lb_stats() sums
// h_nr_running) and moves it as any other task (its can_migrate_task() has no delayed test);
// 6.18+ count h_nr_runnable and move a delayed task only when the balance moves load. B
// (nice 19) forks onto CPU 0 while CPU 1 is busy, a hog pinned to CPU 0 follows, and B
// blocks for good 2 ms into its run, ineligible, so DELAY_DEQUEUE keeps it queued; at 20 ms
// CPU 1's task exits and CPU 1 balances newly idle. 6.12 pulls the delayed B (which CPU 1
// then dequeues for good: B ends up on CPU 1); 6.18 and 7.0 see one task on CPU 0 and leave
// B there.
TEST(NewidleBalance, SixTwelveCountsAndMovesADelayedTask) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                 kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    kernel::UserWord w;
    s.spawn(on(1), [](user::Thread& t) -> user::Program { co_await t.compute(20 * kMs); });
    kernel::TaskAttr light;
    light.nice = 19;  // its vruntime runs 68 times as fast: ineligible soon into any turn
    const int b = s.spawn(light, [&w](user::Thread& t) -> user::Program {
      co_await t.compute(2 * kMs);
      co_await t.futex_wait(&w, 0);
    });
    s.spawn(on(0), [](user::Thread& t) -> user::Program {
      for (;;) co_await t.compute(sim::kNsecPerSec);
    });
    bool delayed_on_0 = false;
    unsigned counted = 0;
    Sampler probe(s, sim::kNsecPerSec, [&](sim::Time) {
      const kernel::task_struct& p = s.task(b);
      delayed_on_0 = p.cpu == 0 && p.se.sched_delayed;
      counted = s.k->lb_view[0].h_nr_running;
    }, 19 * kMs);
    s.run(30 * kMs);
    ASSERT_TRUE(delayed_on_0);  // the set-up
    EXPECT_EQ(counted, v == kernel::KernelVersion::V6_12 ? 2u : 1u);
    EXPECT_EQ(s.task(b).cpu, v == kernel::KernelVersion::V6_12 ? 1 : 0);
    testing_support::check_invariants(*s.k, 30 * kMs);
  }
}
