// Whether an idle CPU keeps its tick, pinned against kernel/sched/idle.c
// (do_idle(), cpuidle_idle_call(), the got_tick rule of f4c31b07b136) and the
// menu governor (drivers/cpuidle/governors/menu.c: get_typical_interval(),
// menu_select(), menu_update()).
#include "kernel/cpuidle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"
#include "kernel/trace.h"
#include "sim/rng.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::exact_timers;
using testing_support::flat_machine;
using testing_support::Sim;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::menu_device with_intervals(std::initializer_list<uint32_t> us) {
  kernel::menu_device d;
  for (uint32_t v : us) d.update_intervals(v);
  return d;
}

// Agreeing samples give their average; a far sample above them is dropped by
// every version. One far below them: 6.15 on drop it too (8de7606f0fe2),
// where 6.12 drops the largest samples until only that one is left, and
// predicts it.
TEST(Menu, TypicalIntervalDropsTheOutlierOnEitherEndFromSixFifteen) {
  for (bool v612 : {true, false}) {
    EXPECT_EQ(kernel::menu_typical_interval(
                  with_intervals({100, 100, 100, 100, 100, 100, 100, 100}), v612),
              100u);
    EXPECT_EQ(kernel::menu_typical_interval(
                  with_intervals({100, 100, 100, 100, 10000, 100, 100, 100}), v612),
              100u);
    EXPECT_EQ(kernel::menu_typical_interval(kernel::menu_device{}, v612),
              UINT32_MAX);  // no history
  }
  const auto low = with_intervals({1000, 1000, 1000, 1, 1000, 1000, 1000, 1000});
  EXPECT_EQ(kernel::menu_typical_interval(low, false), 1000u);
  EXPECT_EQ(kernel::menu_typical_interval(low, true), 1u);
}

// Samples that never agree: every version gives up (UINT_MAX: the next timer alone
// predicts). 85975daeaa4d (6.15) predicted the largest of the six or more left;
// 10fad4012234 reverted that in 6.18-rc2.
TEST(Menu, TypicalIntervalOfScatteredSamplesIsNoPrediction) {
  const auto scattered = with_intervals({10, 200, 3000, 40, 500, 6000, 70, 800});
  for (bool v612 : {true, false})
    EXPECT_EQ(kernel::menu_typical_interval(scattered, v612), UINT32_MAX) << v612;
}

// get_typical_interval() as Linux writes it: a pass over all eight samples per threshold,
// 6.12's variance in a second pass from the truncated average.
uint32_t typical_interval_direct(const kernel::menu_device& d, bool v612) {
  int64_t min_thresh = -1, max_thresh = v612 ? INT32_MAX + 1ll : UINT32_MAX;
  for (;;) {
    uint64_t max = 0, min = UINT32_MAX, sum = 0, sum_sq = 0;
    unsigned divisor = 0;
    for (uint32_t value : d.intervals) {
      if (value <= min_thresh || value >= max_thresh) continue;
      divisor++;
      sum += value;
      sum_sq += uint64_t{value} * value;
      max = std::max<uint64_t>(max, value);
      min = std::min<uint64_t>(min, value);
    }
    if (max == 0) return UINT32_MAX;
    const uint64_t avg = sum / divisor;
    uint64_t variance = 0;
    if (v612) {
      for (uint32_t value : d.intervals) {
        if (value >= max_thresh) continue;
        const int64_t diff = static_cast<int64_t>(value) - static_cast<int64_t>(avg);
        variance += static_cast<uint64_t>(diff * diff);
      }
      variance /= divisor;
    } else {
      variance = sum_sq / divisor - avg * avg;
    }
    if (variance <= UINT64_MAX / 36 &&
        ((avg * avg > variance * 36 && divisor * 4 >= 24) || variance <= 400))
      return static_cast<uint32_t>(avg);
    if (divisor * 4 <= 24) return UINT32_MAX;
    if (!v612 && avg - min > max - avg)
      min_thresh = static_cast<int64_t>(min);
    else
      max_thresh = static_cast<int64_t>(max);
  }
}

// The model's sorted-range version gives the direct loop's result on random histories: idles
// from a few us to seconds, with ties, zeros and samples past INT_MAX.
TEST(Menu, TypicalIntervalEqualsTheDirectLoopOnRandomHistories) {
  sim::Rng rng(7, 0);
  kernel::menu_device d;  // one history, rolled on by 1 to 8 samples a round
  for (int round = 0; round < 200000; ++round) {
    const int kind = round / 8 % 4;
    for (int i = 0; i <= round % 8; ++i) {
      const uint64_t u = rng.next_u64();
      const uint32_t us = kind == 0   ? static_cast<uint32_t>(u % 8)                 // ties, zeros
                          : kind == 1 ? static_cast<uint32_t>(u % 5000)              // us to ms
                          : kind == 2 ? static_cast<uint32_t>(u >> (32 + (u & 31)))  // any scale
                                      : static_cast<uint32_t>(u);  // past INT_MAX
      d.update_intervals(us);
    }
    for (bool v612 : {true, false})
      ASSERT_EQ(kernel::menu_typical_interval(d, v612), typical_interval_direct(d, v612))
          << "round " << round << " v612 " << v612;
  }
}

// Eight idles of `residency` each, then the ninth round's answer: stop the tick
// or not.
bool stops_after(sim::Time residency, sim::Time next_timer) {
  kernel::cpuidle_cpu c;
  for (int i = 0; i < 8; ++i) {
    kernel::menu_select_stop_tick(&c, 4 * kMs, next_timer, 2 * kUs, false);
    c.last_residency_ns = static_cast<uint64_t>(residency);
    kernel::menu_reflect(&c);
  }
  return kernel::menu_select_stop_tick(&c, 4 * kMs, next_timer, 2 * kUs, false);
}

// menu_select(): the tick stays through an idle predicted shorter than a tick
// (HZ=250: 4 ms), from the recent idles or from the next timer; once stopped it
// stays stopped.
TEST(Menu, KeepsTheTickOnlyThroughIdlesItPredictsShorterThanATick) {
  EXPECT_FALSE(stops_after(500 * kUs, -1));      // short idles, no timer
  EXPECT_TRUE(stops_after(20 * kMs, -1));        // long idles, no timer
  EXPECT_FALSE(stops_after(20 * kMs, 1 * kMs));  // long idles, but a timer in 1 ms
  kernel::cpuidle_cpu stopped;
  stopped.tick_stopped = true;
  EXPECT_TRUE(kernel::menu_select_stop_tick(&stopped, 4 * kMs, 100 * kUs, 2 * kUs, false));
}

// With the tick stopped and a short typical interval, 6.18 on look up the next timer all the
// same (its bucket is the one menu_update() corrects after the idle); 6.12 does not.
TEST(Menu, WithTheTickStoppedSixEighteenLooksUpTheNextTimerWhateverTheHistory) {
  for (bool v612 : {true, false}) {
    kernel::cpuidle_cpu c;
    for (int i = 0; i < 8; ++i) c.menu.update_intervals(5);  // idles of 5 us
    c.tick_stopped = true;
    EXPECT_TRUE(kernel::menu_select_stop_tick(&c, 4 * kMs, 2 * kMs, 2 * kUs, v612));
    EXPECT_EQ(c.menu.next_timer_ns, v612 ? static_cast<uint64_t>(INT64_MAX) : 2 * kMs) << v612;
    EXPECT_EQ(c.menu.bucket, v612 ? 5 : 3) << v612;
  }
}

// A driver's shallow and deep states as acpi_idle's C1 and an I/O-port C2 (residency twice
// the exit latency).
constexpr kernel::idle_states kC1C2{{1 * kUs, 100 * kUs}, {2 * kUs, 200 * kUs}};

// menu_select() after eight idles of `residency` each (no timer): the state of the ninth.
uint8_t state_after(sim::Time residency, sim::Time next_timer, sim::Time delta_tick) {
  kernel::cpuidle_cpu c;
  for (int i = 0; i < 8; ++i) {
    kernel::menu_select(&c, kC1C2, 4 * kMs, next_timer, delta_tick, false);
    c.last_residency_ns = static_cast<uint64_t>(residency);
    kernel::menu_reflect(&c);
  }
  kernel::menu_select(&c, kC1C2, 4 * kMs, next_timer, delta_tick, false);
  return c.state;
}

// menu_select()'s state: the deep one for idles predicted at least its target residency
// long, the shallow one for shorter idles or a timer due before the deep residency; and,
// with the tick kept, the shallow one when the next clock event (the tick) comes before the
// deep state's residency.
TEST(Menu, PicksTheDeepStateForIdlesPredictedAtLeastItsResidency) {
  EXPECT_EQ(state_after(1 * kMs, -1, 3 * kMs), kernel::kIdleDeep);
  EXPECT_EQ(state_after(50 * kUs, -1, 3 * kMs), kernel::kIdleShallow);
  EXPECT_EQ(state_after(1 * kMs, 150 * kUs, 150 * kUs), kernel::kIdleShallow);  // a timer first
  EXPECT_EQ(state_after(1 * kMs, -1, 100 * kUs), kernel::kIdleShallow);  // the tick first
  EXPECT_EQ(state_after(20 * kMs, -1, 100 * kUs), kernel::kIdleDeep);    // the tick stops
}

// The CPU latency limit (cpuidle_governor_latency_req()): below the shallow state's exit
// latency menu_select() returns state 0, poll_idle(), and keeps the tick, whatever the
// history; below the deep state's exit latency it never goes deep.
TEST(Menu, ACpuLatencyLimitPollsBelowTheShallowExitAndStaysShallowBelowTheDeepOne) {
  kernel::cpuidle_cpu c;
  for (int i = 0; i < 8; ++i) c.menu.update_intervals(20000);  // idles of 20 ms
  c.tick_stopped = true;
  kernel::idle_states s = kC1C2;
  EXPECT_TRUE(kernel::menu_select(&c, s, 4 * kMs, -1, 20 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdleDeep);
  s.latency_req_ns = 50 * kUs;  // between the two exit latencies
  EXPECT_TRUE(kernel::menu_select(&c, s, 4 * kMs, -1, 20 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdleShallow);
  s.latency_req_ns = 0;
  EXPECT_FALSE(kernel::menu_select(&c, s, 4 * kMs, -1, 20 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdlePoll);
}

// A deep state whose residency lies beyond a prediction of a tick or more: with the tick
// running menu keeps it and stays shallow (the next round asks again); with it stopped it
// goes deep when the deep state fits before the next clock event.
TEST(Menu, ADeepStateBeyondAPredictionOfATickKeepsTheTickInTheShallowState) {
  const kernel::idle_states far{{1 * kUs, 5 * kMs}, {2 * kUs, 10 * kMs}};
  kernel::cpuidle_cpu c;
  for (int i = 0; i < 8; ++i) c.menu.update_intervals(6000);  // idles of 6 ms
  EXPECT_FALSE(kernel::menu_select(&c, far, 4 * kMs, -1, 4 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdleShallow);
  c.tick_stopped = true;
  EXPECT_TRUE(kernel::menu_select(&c, far, 4 * kMs, -1, 20 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdleDeep);
  EXPECT_TRUE(kernel::menu_select(&c, far, 4 * kMs, 8 * kMs, 8 * kMs, false));
  EXPECT_EQ(c.state, kernel::kIdleShallow);
}

// Whatever state it picks, menu_select() with a deep state of less than a tick answers the
// tick question as the tick-only menu_select_stop_tick() does, from the same history, and
// leaves the same prediction state behind (next timer, bucket).
TEST(Menu, ADeepStateLeavesTheTickDecisionAsItWas) {
  sim::Rng rng(11, 0);
  // Both states exit in 1 us, so menu_update() corrects each idle alike whichever was taken.
  const kernel::idle_states st{{1 * kUs, 1 * kUs}, {2 * kUs, 3 * kMs}};
  auto timer = [&rng]() -> sim::Time {
    return rng.next_u64() % 3 == 0 ? -1 : static_cast<sim::Time>(rng.next_u64() % (8 * kMs));
  };
  for (int run = 0; run < 20000; ++run) {
    kernel::cpuidle_cpu a, b;
    const bool v612 = rng.next_u64() % 2 == 0;
    const int n = static_cast<int>(rng.next_u64() % 12);
    for (int i = 0; i < n; ++i) {
      const sim::Time next = timer();
      kernel::menu_select_stop_tick(&a, 4 * kMs, next, 1 * kUs, v612);
      kernel::menu_select(&b, st, 4 * kMs, next, next, v612);
      a.last_residency_ns = b.last_residency_ns = rng.next_u64() % (10 * kMs);
      a.got_idle_tick = b.got_idle_tick = rng.next_u64() % 4 == 0;
      kernel::menu_reflect(&a);
      kernel::menu_reflect(&b);
      a.tick_stopped = b.tick_stopped = rng.next_u64() % 3 == 0;
    }
    const sim::Time next = timer();
    const bool stop_a = kernel::menu_select_stop_tick(&a, 4 * kMs, next, 1 * kUs, v612);
    const bool stop_b = kernel::menu_select(&b, st, 4 * kMs, next, next, v612);
    ASSERT_EQ(stop_a || a.tick_stopped, stop_b || b.tick_stopped) << run;
    ASSERT_EQ(a.menu.next_timer_ns, b.menu.next_timer_ns) << run;
    ASSERT_EQ(a.menu.bucket, b.menu.bucket) << run;
  }
}

// Tick interrupts on CPU 0 from 20 ms to 120 ms of a task that computes 20 us
// and then waits `idle` for a read (its wakeup a device interrupt, so no timer
// of its own bounds the idle).
int ticks_while_idling(hw::Machine m, kernel::KernelConfig cfg, sim::Time idle,
                       int latency_us = -1) {
  Sim s(exact_timers(std::move(m)), cfg);
  if (latency_us >= 0) s.k->cpu_latency_qos_add_request(latency_us);
  EXPECT_EQ(s.k->config().tick_nsec(), 4 * kMs);
  struct Ticks : kernel::TraceSink {
    int n = 0;
    void record(const kernel::TraceRecord& r) override {
      n += r.type == kernel::TraceEvent::hrtimer_expire_entry &&
           r.timer == kernel::TraceHrtimer::tick_nohz_handler && r.ts >= 20 * kMs;
    }
  } ticks;
  s.k->set_trace_sink(&ticks);
  kernel::TaskAttr a;
  a.cpus = {0};
  s.spawn(a, [idle](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(20 * kUs);
      co_await t.read_after(idle);
    }
  });
  s.run(120 * kMs);
  return ticks.n;
}

hw::Machine with_menu(bool menu) {
  hw::Machine m = flat_machine(1);
  m.costs.cpuidle_menu = menu;
  return m;
}

kernel::KernelConfig got_tick(bool on) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.idle_got_tick = on;
  return cfg;
}

// Bare metal: menu keeps the tick of a CPU whose idles last 1 ms (every tick of
// the 100 ms comes, each in an idle) and stops it for idles of 20 ms.
TEST(IdleLoop, MenuKeepsTheTickThroughShortIdlesAndStopsItForLongOnes) {
  EXPECT_GE(ticks_while_idling(with_menu(true), got_tick(true), 1 * kMs), 24);
  EXPECT_LE(ticks_while_idling(with_menu(true), got_tick(true), 20 * kMs), 1);
}

// No cpuidle driver (a KVM guest): 7.0's idle loop keeps the tick in an idle's
// first round and stops it in the round after the tick woke the CPU, so each 20
// ms idle takes one tick (five idles, five ticks); before f4c31b07b136 every
// round stops it, and none comes.
TEST(IdleLoop, WithoutADriverTheTickStopsOnlyAfterItWokeTheIdleCpu) {
  const int with_rule = ticks_while_idling(with_menu(false), got_tick(true), 20 * kMs);
  EXPECT_GE(with_rule, 4);
  EXPECT_LE(with_rule, 6);
  EXPECT_EQ(ticks_while_idling(with_menu(false), got_tick(false), 20 * kMs), 0);
  // Idles of 1 ms keep it as the governor does: each begins with the tick
  // running.
  EXPECT_GE(ticks_while_idling(with_menu(false), got_tick(true), 1 * kMs), 20);
}

// A wakeup noticed by polling sets need_resched() (set_nr_if_polling()), so do_idle() ends
// even when nothing comes to run: tick_nohz_idle_exit() restarts a stopped tick, and the next
// do_idle() starts with got_tick false, so without a cpuidle driver 7.0's idle loop keeps
// the tick until it has woken the CPU once more.
TEST(IdleLoop, APolledWakeupThatFindsNothingRestartsAStoppedTick) {
  hw::Machine m = with_menu(false);
  m.costs.idle_polling = true;
  m.topo = flat_machine(2).topo;
  Sim s(exact_timers(m), got_tick(true));
  s.k->start();
  s.engine.run_until(20 * kMs);
  kernel::rq* rq = s.k->rq_of(1);
  ASSERT_TRUE(rq->curr->is_idle);
  const kernel::cpuidle_cpu& c = s.k->cpuidle[1];
  ASSERT_TRUE(c.tick_stopped);
  ASSERT_FALSE(rq->ex.tick_timer.armed);
  s.k->set_current(nullptr, -1);  // from outside the machine
  kernel::resched_curr(rq);       // nothing queued: set_nr_if_polling(), no IPI
  ASSERT_TRUE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);
  s.engine.run_until(20 * kMs + 10 * kUs);
  EXPECT_FALSE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);
  EXPECT_TRUE(rq->curr->is_idle);
  EXPECT_FALSE(c.tick_stopped);
  EXPECT_TRUE(rq->ex.tick_timer.armed);
  s.engine.run_until(30 * kMs);  // the tick came, and the round after it stopped the tick
  EXPECT_TRUE(c.tick_stopped);
}

// A CPU with a polling shallow state (MWAIT C1) and a deep one that does not poll: its first
// idle, with no history and no timer, is predicted long and taken deep, so a futex wakeup
// 1 ms later sends the IPI the shallow state would not need and waits for the deep state's
// exit; without the deep state the same wakeup is noticed by polling.
TEST(IdleLoop, ADeepStateNeedsAnIpiAndItsExitWhereThePollingShallowOneNeedsNeither) {
  auto run = [](sim::Time deep_exit) {
    hw::Machine m = flat_machine(2);
    m.costs.cpuidle_menu = true;
    m.costs.idle_polling = true;
    m.costs.idle_exit_ns = 1 * kUs;
    m.costs.idle_deep_exit_ns = deep_exit;
    return testing_support::wake_an_idle_cpu(
        exact_timers(m), kernel::default_config(kernel::KernelVersion::V7_0));
  };
  const testing_support::IdleWakeup deep = run(100 * kUs), shallow = run(0);
  EXPECT_EQ(shallow.target_irqs, 0);
  EXPECT_GT(deep.target_irqs, 0);
  EXPECT_GE(deep.wake_to_run, 100 * kUs);
  EXPECT_LT(shallow.wake_to_run, 10 * kUs);
}

// cyclictest's /dev/cpu_dma_latency request of 0: an idle CPU polls in poll_idle(), so a
// wakeup needs no IPI and no exit (where the deep state needs both), and the tick runs
// through idles that would have stopped it.
TEST(IdleLoop, ACpuLatencyRequestOfZeroPollsWithTheTickKept) {
  hw::Machine m = flat_machine(2);
  m.costs.cpuidle_menu = true;
  m.costs.idle_polling = false;  // even with a C1 that does not poll
  m.costs.idle_exit_ns = 1 * kUs;
  m.costs.idle_deep_exit_ns = 100 * kUs;
  const kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  using testing_support::wake_an_idle_cpu;
  const testing_support::IdleWakeup deep = wake_an_idle_cpu(exact_timers(m), cfg);
  const testing_support::IdleWakeup poll = wake_an_idle_cpu(exact_timers(m), cfg, 0);
  EXPECT_GT(deep.target_ipis, 0);
  EXPECT_GE(deep.wake_to_run, 100 * kUs);
  EXPECT_EQ(poll.target_ipis, 0);
  EXPECT_LT(poll.wake_to_run, 10 * kUs);
  EXPECT_LE(ticks_while_idling(with_menu(true), got_tick(true), 20 * kMs), 1);
  EXPECT_GE(ticks_while_idling(with_menu(true), got_tick(true), 20 * kMs, 0), 24);
}

// A machine idle at the start of a run has its CPUs in the deep state: a task forked onto
// one at 1 ms starts once that CPU has left it (the IPI's latency, then the deep exit).
TEST(IdleLoop, ACpuIdleSinceTheStartIsInTheDeepState) {
  auto start_delay = [](sim::Time deep_exit) {
    hw::Machine m = flat_machine(2);
    m.costs.cpuidle_menu = true;
    m.costs.idle_polling = true;
    m.costs.idle_deep_exit_ns = deep_exit;
    Sim s(exact_timers(m), kernel::default_config(kernel::KernelVersion::V7_0));
    sim::Time began = 0;
    kernel::TaskAttr on1;
    on1.cpus = {1};
    s.spawn(on1, [&](user::Thread& t) -> user::Program {
      began = t.now();
      co_await t.compute(kUs);
    }, kMs);
    s.run(2 * kMs);
    return began - kMs;
  };
  EXPECT_GE(start_delay(100 * kUs), 100 * kUs);
  EXPECT_LT(start_delay(0), 10 * kUs);
}

// set_nr_if_polling() finds TIF_POLLING_NRFLAG clear while an idle CPU handles an interrupt
// (the MWAIT state's driver clears it on the way out; the loop's next round sets it again):
// a reschedule request then takes an IPI, where in the state it is noticed by polling.
TEST(IdleLoop, AnIdleCpuHandlingAnInterruptDoesNotPoll) {
  hw::Machine m = flat_machine(2);
  m.costs.idle_polling = true;
  m.costs.idle_exit_ns = 1 * kUs;
  m.costs.tick_handler_ns = 50 * kUs;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.nohz_idle = false;  // the idle CPU keeps its tick
  Sim s(exact_timers(m), cfg);
  testing_support::IrqCounter irqs;
  irqs.cpu = 1;
  irqs.timers = false;
  s.k->set_trace_sink(&irqs);
  s.k->start();
  s.engine.run_until(10 * kMs);
  kernel::rq* rq = s.k->rq_of(1);
  ASSERT_TRUE(rq->curr->is_idle);
  EXPECT_TRUE(kernel::cpu_idle_polling(rq, s.engine.now()));
  const sim::Time tick = rq->ex.tick_timer.expires;
  s.engine.run_until(tick + 11 * kUs);  // the tick's handler began at tick + 1 us
  const sim::Time now = s.engine.now();
  ASSERT_TRUE(rq->curr->is_idle);
  ASSERT_GT(rq->ex.kwork_until, now + 30 * kUs);
  EXPECT_FALSE(kernel::cpu_idle_polling(rq, now));
  irqs.from = now;
  s.k->set_current(nullptr, -1);  // from outside the machine
  kernel::resched_curr(rq);
  EXPECT_NE(rq->ex.ipi_pending & kernel::IPI_RESCHEDULE, 0u);
  EXPECT_FALSE(rq->ex.ipi_polled);
  s.engine.run_until(tick + 200 * kUs);  // the IPI came, and the loop went round again
  EXPECT_EQ(irqs.irqs, 1);
  EXPECT_TRUE(rq->curr->is_idle);
  EXPECT_FALSE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);
  EXPECT_TRUE(kernel::cpu_idle_polling(rq, s.engine.now()));
}

// A task pinned to CPU 1 computes 1 ms and blocks on *w: runs s until it has blocked (the
// engine stops within 1 us of that), which *blocked then says (0: it never did).
static void block_a_task_on_cpu1(Sim& s, kernel::UserWord* w, sim::Time* blocked) {
  kernel::TaskAttr on1;
  on1.cpus = {1};
  s.spawn(on1, [w, blocked](user::Thread& t) -> user::Program {
    co_await t.compute(kMs);
    *blocked = t.now();
    co_await t.futex_wait(w, 0);
  });
  s.k->start();
  while (*blocked == 0 && s.engine.now() < 5 * kMs) s.engine.run_until(s.engine.now() + kUs);
}

// do_idle() runs once the switch to the idle task is done (finish_task_switch()): the idle
// state and TIF_POLLING_NRFLAG start when the switch's cost is paid, so a reschedule
// request during the switch takes an IPI, and the state's residency leaves the switch out.
TEST(IdleLoop, TheIdleRoundStartsOnceTheSwitchToIdleIsDone) {
  hw::Machine m = flat_machine(2);
  m.costs.idle_polling = true;
  m.costs.context_switch_ns = 200 * kUs;
  Sim s(exact_timers(m));
  kernel::UserWord w;
  sim::Time blocked = 0;
  block_a_task_on_cpu1(s, &w, &blocked);
  ASSERT_GT(blocked, 0);
  s.engine.run_until(blocked + 100 * kUs);
  kernel::rq* rq = s.k->rq_of(1);
  const sim::Time now = s.engine.now();
  ASSERT_TRUE(rq->curr->is_idle);
  ASSERT_GT(rq->ex.kwork_until, now);  // still switching
  const kernel::cpuidle_cpu& c = s.k->cpuidle[1];
  EXPECT_EQ(c.time_start, rq->ex.kwork_until);
  EXPECT_FALSE(kernel::cpu_idle_polling(rq, now));
  EXPECT_TRUE(kernel::cpu_idle_polling(rq, rq->ex.kwork_until));
  s.k->set_current(nullptr, -1);
  kernel::resched_curr(rq);
  EXPECT_FALSE(rq->ex.ipi_polled);
}

// A reschedule request noticed by polling, set while the CPU does its round's own work
// before the state (here the tick's stop, a clock event write) and seen after the state's
// start: call_cpuidle() found need_resched() set and entered no state, so the CPU does not
// wait for the state's exit.
TEST(IdleLoop, APolledWakeupSetBeforeTheStateIsEnteredWaitsForNoExit) {
  constexpr sim::Time kWrite = 20 * kUs, kTransfer = 30 * kUs, kExit = 50 * kUs;
  hw::Machine m = flat_machine(2);
  m.costs.idle_polling = true;
  m.costs.idle_exit_ns = kExit;
  m.costs.hrtimer_program_ns = kWrite;
  m.costs.line_llc_ns = kTransfer;
  Sim s(exact_timers(m));
  kernel::UserWord w;
  sim::Time blocked = 0;
  block_a_task_on_cpu1(s, &w, &blocked);
  ASSERT_GT(blocked, 0);
  kernel::rq* rq = s.k->rq_of(1);
  const kernel::cpuidle_cpu& c = s.k->cpuidle[1];
  ASSERT_TRUE(rq->curr->is_idle);
  ASSERT_TRUE(c.tick_stopped);
  const sim::Time round = c.polling_from;
  ASSERT_EQ(c.time_start, round + kWrite);  // the state starts after the tick's stop
  ASSERT_LT(s.engine.now(), round + 5 * kUs);
  s.engine.run_until(round + 5 * kUs);
  s.k->set_current(s.k->rq_of(0)->curr, 0);  // from idle CPU 0, one LLC line away
  kernel::resched_curr(rq);  // polled; noticed at round + 35 us, in the state's time
  ASSERT_TRUE(rq->ex.ipi_polled);
  s.engine.run_until(round + 5 * kUs + kTransfer + kUs);
  EXPECT_FALSE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);  // schedule_idle() ran
  EXPECT_EQ(c.last_residency_ns, 0u);  // no state: no residency
}

// Without NO_HZ_IDLE the governor's sleep length is a tick (the tick_nohz_get_sleep_length()
// stub), so a deep state whose target residency is longer than a tick is never picked; with
// it, a CPU idle since the start (no history, no timer) takes that state.
TEST(IdleLoop, WithoutNohzIdleNoStateLongerThanATickIsPicked) {
  auto state_of_idle_cpu = [](bool nohz_idle) {
    hw::Machine m = flat_machine(2);
    m.costs.cpuidle_menu = true;
    m.costs.idle_deep_exit_ns = 100 * kUs;
    m.costs.idle_deep_residency_ns = 6 * kMs;
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.nohz_idle = nohz_idle;
    Sim s(exact_timers(m), cfg);
    EXPECT_EQ(s.k->config().tick_nsec(), 4 * kMs);
    s.k->start();
    s.engine.run_until(2 * kMs);
    const int at_start = s.k->cpuidle[1].state;
    s.engine.run_until(6 * kMs);  // a round after the tick
    EXPECT_TRUE(s.k->rq_of(1)->curr->is_idle);
    EXPECT_EQ(s.k->cpuidle[1].state, at_start);
    return s.k->cpuidle[1].state;
  };
  EXPECT_EQ(state_of_idle_cpu(true), kernel::kIdleDeep);
  EXPECT_EQ(state_of_idle_cpu(false), kernel::kIdleShallow);
}

// The haltpoll governor (governors/haltpoll.c): no window, halt; a halt shorter than
// guest_halt_poll_ns (200 us) grows the window (to at least 50 us, doubling, at most 200 us)
// and the next idle polls, keeping the tick; a poll that times out is followed by a halt; a
// halt past 200 us halves the window, and closes it once below 50 us.
TEST(Haltpoll, TheWindowGrowsAfterShortHaltsAndShrinksAfterLongOnes) {
  kernel::cpuidle_cpu c;
  auto idle = [&c](uint64_t residency, bool timed_out) {
    const bool stop = kernel::haltpoll_select(&c);
    c.poll_time_limit = timed_out;
    c.last_residency_ns = residency;
    kernel::haltpoll_reflect(&c);
    return stop;
  };
  EXPECT_TRUE(idle(30 * kUs, false));  // no window yet: halt
  EXPECT_EQ(c.state, kernel::kHaltpollHalt);
  EXPECT_EQ(c.poll_limit_ns, 50000u);
  EXPECT_FALSE(idle(20 * kUs, false));  // polls; a wakeup ends it
  EXPECT_EQ(c.state, kernel::kHaltpollPoll);
  EXPECT_FALSE(idle(50 * kUs, true));  // polls again, and times out
  EXPECT_TRUE(idle(80 * kUs, false));  // so halts: 80 us grows the window
  EXPECT_EQ(c.poll_limit_ns, 100000u);
  idle(100 * kUs, true);
  idle(150 * kUs, false);
  EXPECT_EQ(c.poll_limit_ns, 200000u);
  idle(200 * kUs, true);
  idle(5 * kMs, false);  // a long halt
  EXPECT_EQ(c.poll_limit_ns, 100000u);
  idle(100 * kUs, true);
  idle(5 * kMs, false);
  EXPECT_EQ(c.poll_limit_ns, 50000u);
  idle(50 * kUs, true);
  idle(5 * kMs, false);  // halved below guest_halt_poll_grow_start: closed (496d0a648509)
  EXPECT_EQ(c.poll_limit_ns, 0u);
  EXPECT_TRUE(idle(5 * kMs, false));  // so the next idle halts at once
}

// A guest with cpuidle-haltpoll: a thread woken every 20 us by a futex from a busy vCPU.
// Its first short halt opens the window (50 us) and from then its vCPU polls through each
// gap, so the wakeups send no IPI (no halted vCPU to kick) and run without the halt's exit
// (however long it is); without the driver every wakeup kicks a halted vCPU. Gaps of 80 us
// would not do: the poll times out, the halt that follows (30 us) is shorter than the window,
// and it never grows.
TEST(IdleLoop, HaltpollPollsAfterAShortHaltSoWakeupsNeedNoIpi) {
  struct Out {
    int target_irqs = 0;
    sim::Time last_wake_to_run = 0;
  };
  auto run = [](bool haltpoll, sim::Time halt_exit = 0) {
    hw::Machine m;
    EXPECT_TRUE(hw::load_machine("vm50", &m).ok());
    m.costs.cpuidle_haltpoll = haltpoll;
    if (halt_exit > 0) m.costs.idle_exit_ns = halt_exit;
    Sim s(exact_timers(m), kernel::default_config(kernel::KernelVersion::V7_0));
    testing_support::IrqCounter irqs;
    irqs.cpu = 1;
    irqs.from = kMs;
    irqs.timers = false;
    s.k->set_trace_sink(&irqs);
    kernel::UserWord w;
    sim::Time sent = 0, woke = 0;
    kernel::TaskAttr on1;
    on1.cpus = {1};
    s.spawn(on1, [&](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.futex_wait(&w, 0);
        woke = t.now();
      }
    });
    kernel::TaskAttr on0;
    on0.cpus = {0};
    s.spawn(on0, [&](user::Thread& t) -> user::Program {
      co_await t.nanosleep(kMs);
      for (int i = 0; i < 20; ++i) {
        co_await t.compute(20 * kUs);
        sent = t.now();
        co_await t.futex_wake(&w, 1);
      }
    });
    s.run(3 * kMs);
    return Out{irqs.irqs, woke - sent};
  };
  const Out poll = run(true), halt = run(false);
  EXPECT_GE(halt.target_irqs, 20);
  EXPECT_LE(poll.target_irqs, 2);
  EXPECT_LT(poll.last_wake_to_run, halt.last_wake_to_run);
  // The poll state is software polling: no state to leave, whatever the halt's exit costs.
  EXPECT_EQ(run(true, 50 * kUs).last_wake_to_run, poll.last_wake_to_run);
}

// poll_idle() runs with interrupts enabled: an interrupt that wakes nothing is handled inside
// its loop, which polls on to the end of the window it started with (time_start +
// poll_limit_ns). The idle loop does not go round, so the window does not restart; at its
// end the governor halts.
TEST(IdleLoop, HaltpollKeepsItsPollWindowThroughAnInterruptThatWakesNothing) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("vm50", &m).ok());
  m.costs.cpuidle_haltpoll = true;
  Sim s(exact_timers(m), kernel::default_config(kernel::KernelVersion::V7_0));
  s.k->start();
  s.engine.run_until(kMs);
  kernel::rq* rq = s.k->rq_of(1);
  ASSERT_TRUE(rq->curr->is_idle);
  kernel::cpuidle_cpu& c = s.k->cpuidle[1];
  c.poll_limit_ns = 100 * kUs;
  s.k->set_current(rq->curr, 1);
  kernel::do_idle_loop(rq);  // a new round: after a halt, haltpoll polls
  ASSERT_EQ(c.state, kernel::kHaltpollPoll);
  ASSERT_GT(c.poll_limit_ns, 30 * kUs);
  const sim::Time start = c.time_start;
  const sim::Timer& window = s.k->haltpoll_timers[1];
  ASSERT_TRUE(window.armed);
  const sim::Time end = window.expires;
  EXPECT_EQ(end, start + static_cast<sim::Time>(c.poll_limit_ns));
  s.engine.run_until(kMs + 30 * kUs);
  s.k->set_current(rq->curr, 1);
  kernel::do_idle_loop(rq);  // irqentry_exit() of an interrupt that woke nothing
  EXPECT_EQ(c.state, kernel::kHaltpollPoll);
  EXPECT_EQ(c.time_start, start);
  EXPECT_TRUE(window.armed);
  EXPECT_EQ(window.expires, end);
  s.engine.run_until(end + kUs);
  EXPECT_EQ(c.state, kernel::kHaltpollHalt);
}

}  // namespace
