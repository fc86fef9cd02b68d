// The periodic tick's timing (kernel/time/tick.cc, hrtimer.cc): the expiry grid with and
// without skew_tick, and timer interrupts that come a random 0..timer_irq_jitter_ns late.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kernel/cpu_exec.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;
using testing_support::flat_machine;
using testing_support::with_timer_jitter;

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(sim::kNsecPerSec);
}

void spawn_hogs(Sim& s, int n) {
  for (int i = 0; i < n; ++i) s.spawn({}, hog);
}

// One tick of a CPU: its grid expiry and when its interrupt ran.
struct Tick {
  sim::Time grid, fired;
};

// Runs the kernel tick by tick on `cpu` (a hog keeps it busy, so NO_HZ never stops it).
std::vector<Tick> ticks_of(Sim& s, int cpu, int n) {
  kernel::rq* rq = s.k->rq_of(cpu);
  std::vector<Tick> out;
  s.k->start();
  while (static_cast<int>(out.size()) < n) {
    const sim::Timer& t = rq->ex.tick_timer;
    if (!t.armed) {  // not yet started: the CPU has not been busy yet
      s.engine.run_until(s.engine.now() + 1000);
      continue;
    }
    const Tick tick{rq->ex.tick_expires, t.expires};
    s.engine.run_until(t.expires);
    out.push_back(tick);
  }
  return out;
}

TEST(Tick, ExactTimersFireOnTheJiffyGrid) {
  const hw::Machine m = with_timer_jitter(flat_machine(2), 0);
  Sim s(m);
  spawn_hogs(s, 2);
  const sim::Time tick = s.k->config().tick_nsec();
  for (int cpu : {0, 1}) {
    for (const Tick& t : ticks_of(s, cpu, 50)) {
      EXPECT_EQ(t.fired, t.grid);
      EXPECT_EQ(t.grid % tick, 0);
    }
  }
}

// Late interrupts do not move the grid (hrtimer_forward() from the expiry, not from now):
// after hundreds of ticks the expiry is still a multiple of TICK_NSEC, and the lateness
// spreads over the whole 0..jitter range.
TEST(Tick, JitteredInterruptsComeLateButTheGridDoesNotDrift) {
  const hw::Machine m = with_timer_jitter(flat_machine(1), 2000);
  Sim s(m);
  s.spawn({}, hog);
  const sim::Time tick = s.k->config().tick_nsec();
  const std::vector<Tick> ticks = ticks_of(s, 0, 500);
  sim::Time lo = 1 << 30, hi = -1, sum = 0;
  for (size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_EQ(ticks[i].grid % tick, 0);
    if (i > 0) {
      EXPECT_EQ(ticks[i].grid - ticks[i - 1].grid, tick) << "a busy CPU misses no tick";
    }
    const sim::Time late = ticks[i].fired - ticks[i].grid;
    lo = std::min(lo, late);
    hi = std::max(hi, late);
    sum += late;
  }
  EXPECT_GE(lo, 0);
  EXPECT_LE(hi, 2000);
  EXPECT_LT(lo, 100);
  EXPECT_GT(hi, 1900);
  EXPECT_NEAR(static_cast<double>(sum) / static_cast<double>(ticks.size()), 1000.0, 150.0);
}

// Each CPU draws its own lateness: at the same grid point, two CPUs' interrupts differ.
TEST(Tick, CpusDrawTheirOwnLateness) {
  const hw::Machine m = with_timer_jitter(flat_machine(2), 2000);
  Sim s(m);
  spawn_hogs(s, 2);
  s.k->start();
  const sim::Time tick = s.k->config().tick_nsec();
  int same_grid = 0, differ = 0;
  for (int n = 2; n < 22; ++n) {
    s.engine.run_until(n * tick + tick / 2);  // mid-period: both next ticks are pending
    const kernel::cpu_exec& a = s.k->rq_of(0)->ex;
    const kernel::cpu_exec& b = s.k->rq_of(1)->ex;
    same_grid += a.tick_expires == b.tick_expires;
    differ += a.tick_timer.expires - a.tick_expires != b.tick_timer.expires - b.tick_expires;
  }
  EXPECT_EQ(same_grid, 20);
  EXPECT_GE(differ, 19);
}

// skew_tick=1 (tick_setup_sched_timer()): CPU n's tick expires n * (TICK_NSEC / 2 / nr_cpus)
// after each jiffy edge, so the CPUs' ticks spread over the first half of the period.
TEST(Tick, SkewTickOffsetsEachCpusGrid) {
  const hw::Machine m = with_timer_jitter(flat_machine(4), 0);
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  ASSERT_EQ(kernel::set_config_key(&cfg, "skew_tick", "1"), "");
  Sim s(m, cfg);
  spawn_hogs(s, 4);
  const sim::Time tick = s.k->config().tick_nsec();
  for (int cpu = 0; cpu < 4; ++cpu) {
    for (const Tick& t : ticks_of(s, cpu, 20)) {
      EXPECT_EQ(t.grid % tick, cpu * (tick / 2 / 4)) << "cpu " << cpu;
      EXPECT_EQ(t.fired, t.grid);
    }
  }
}

TEST(Tick, SkewTickIsOffByDefaultAndTakesLinuxsValues) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_FALSE(cfg.skew_tick);
  EXPECT_EQ(kernel::set_config_key(&cfg, "skew_tick", "1"), "");
  EXPECT_TRUE(cfg.skew_tick);
  EXPECT_EQ(kernel::set_config_key(&cfg, "skew_tick", "false"), "");
  EXPECT_FALSE(cfg.skew_tick);
  EXPECT_NE(kernel::set_config_key(&cfg, "skew_tick", "often").find("skew_tick"), std::string::npos);
}

// Same seed, same jitter draws; another seed, others.
TEST(Tick, JitterIsDrawnFromTheRunSeed) {
  auto lateness = [](uint64_t seed) {
    const hw::Machine m = with_timer_jitter(flat_machine(1), 2000);
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.seed = seed;
    Sim s(m, cfg);
    s.spawn({}, hog);
    std::vector<sim::Time> late;
    for (const Tick& t : ticks_of(s, 0, 30)) late.push_back(t.fired - t.grid);
    return late;
  };
  EXPECT_EQ(lateness(1), lateness(1));
  EXPECT_NE(lateness(1), lateness(2));
}

}  // namespace
