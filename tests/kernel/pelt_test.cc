// PELT (kernel/sched/pelt.cc and the hooks in fair_pelt.cc): the arithmetic is the kernel's, and
// the signals behave as PELT's do: a task's utilisation is the share of time it runs, its
// runnable average the share it is queued, blocked load halves every 32 ms, and a runqueue's
// averages stay the sum of those of the tasks attached to it, however they move.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;
using sim::kNsecPerMsec;

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

// Runs `run_ms`, sleeps `sleep_ms`, forever.
std::function<user::Program(user::Thread&)> duty(int64_t run_ms, int64_t sleep_ms) {
  return [=](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(run_ms * kNsecPerMsec);
      co_await t.nanosleep(sleep_ms * kNsecPerMsec);
    }
  };
}

TEST(Pelt, DecayTableIsYToTheNWithYToThe32EqualToOneHalf) {
  const double y = std::pow(0.5, 1.0 / 32);
  for (int n = 0; n < 32; ++n)
    EXPECT_EQ(kernel::decay_load(uint64_t{1} << 32, n),
              static_cast<uint64_t>(4294967295.0 * std::pow(y, n)))
        << "n " << n;
  // y^32 = 1/2: 32 more periods halve; past 63 half-lives everything has decayed.
  EXPECT_EQ(kernel::decay_load(1u << 20, 32 + 5), kernel::decay_load(1u << 19, 5));
  EXPECT_EQ(kernel::decay_load(~uint64_t{0}, 32 * 63 + 1), 0u);
  // LOAD_AVG_MAX is where 1024 per period, decayed by the table each period, converges.
  uint64_t max = 0;
  for (int i = 0; i < 3000; ++i) max = kernel::decay_load(max, 1) + 1024;
  EXPECT_EQ(max, kernel::LOAD_AVG_MAX);
}

TEST(Pelt, ReciprocalDivisionEqualsTheDivision) {
  sim::Rng rng(7, 0);
  for (uint32_t pc = 0; pc < 1024; ++pc) {
    const uint64_t d = kernel::PELT_MIN_DIVIDER + pc;
    // Around multiples of d (where a floor is most easily off by one), the ends of the
    // 32-bit range, and random values of every size.
    for (uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{1024}, (uint64_t{1} << 32) / d, (uint64_t{1} << 32) / d - 1})
      for (uint64_t x : {k * d, k * d + 1, k * d + d - 1, k * d - 1})
        if (x < (uint64_t{1} << 33)) {
          ASSERT_EQ(kernel::pelt_div(x, pc), x / d) << x << " / " << d;
        }
    for (uint64_t x : {uint64_t{0xffffffff}, uint64_t{1} << 32, ~uint64_t{0}})
      ASSERT_EQ(kernel::pelt_div(x, pc), x / d) << x << " / " << d;
    for (int i = 0; i < 200; ++i) {
      const uint64_t x = rng.next_u64() >> (rng.next_u64() % 64);
      ASSERT_EQ(kernel::pelt_div(x, pc), x / d) << x << " / " << d;
    }
  }
}

TEST(Pelt, AHogAloneConvergesToFullLoadAndUtilisation) {
  Sim s(testing_support::flat_machine(1));
  const int pid = s.spawn({}, hog);
  s.run(500 * kNsecPerMsec);
  const kernel::sched_avg& a = s.task(pid).se.avg;
  EXPECT_GE(a.util_avg, 1000u);
  EXPECT_LE(a.util_avg, 1024u);
  EXPECT_GE(a.load_avg, 1000u);
  EXPECT_GE(a.runnable_avg, 1000u);
  EXPECT_GE(kernel::cpu_util_cfs(&s.k->cpu_rq(0)), 1000u);
  EXPECT_GE(kernel::cpu_load(&s.k->cpu_rq(0)), 1000u);
}

TEST(Pelt, TwoHogsOnOneCpuRunHalfTheTimeAndAreRunnableAllOfIt) {
  Sim s(testing_support::flat_machine(1), testing_support::no_autogroup());
  const int a = s.spawn({}, hog), b = s.spawn({}, hog);
  s.run(1000 * kNsecPerMsec);
  for (int pid : {a, b}) {
    const kernel::sched_avg& avg = s.task(pid).se.avg;
    EXPECT_NEAR(static_cast<double>(avg.util_avg), 512, 60) << "pid " << pid;
    EXPECT_GE(avg.runnable_avg, 1000u) << "pid " << pid;
    EXPECT_GE(avg.load_avg, 1000u) << "pid " << pid;
  }
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_GE(kernel::cpu_runnable(&rq), 2000u);  // two tasks runnable all the time
  EXPECT_GE(kernel::cpu_load(&rq), 2000u);
  EXPECT_GE(rq.cfs.avg.util_avg, 1000u);        // but one CPU's worth of running
}

TEST(Pelt, UtilisationIsTheShareOfTimeRunning) {
  Sim s(testing_support::flat_machine(1));
  const int pid = s.spawn({}, duty(1, 3));  // runs a quarter of the time
  s.run(700 * kNsecPerMsec);
  EXPECT_NEAR(static_cast<double>(s.task(pid).se.avg.util_avg), 256, 60);
  EXPECT_NEAR(static_cast<double>(s.task(pid).se.avg.load_avg), 256, 60);
}

TEST(Pelt, BlockedUtilisationHalvesEvery32ms) {
  Sim s(testing_support::flat_machine(1));
  s.spawn({}, duty(400, 10000));
  s.k->start();
  s.engine.run_until(400 * kNsecPerMsec + 1);  // the task has just gone to sleep
  kernel::rq* rq = s.k->rq_of(0);
  kernel::sched_balance_update_blocked_averages(rq);
  const double full = static_cast<double>(rq->cfs.avg.util_avg);
  EXPECT_GE(full, 1000);
  for (int k = 1; k <= 3; ++k) {
    s.engine.run_until(400 * kNsecPerMsec + k * 32 * 1024 * 1024 + 1);
    kernel::sched_balance_update_blocked_averages(rq);
    EXPECT_NEAR(static_cast<double>(rq->cfs.avg.util_avg), full / (1 << k), full * 0.02) << k << " half-lives";
  }
}

TEST(Pelt, UtilEstRemembersASleepingTasksSize) {
  Sim s(testing_support::flat_machine(1));
  const int pid = s.spawn({}, duty(40, 40));
  s.run(800 * kNsecPerMsec);
  const kernel::task_struct& p = s.task(pid);
  // util_avg swings through each 80 ms cycle; the estimate keeps its value at the sleeps.
  // The task has slept since 760 ms: its utilization decayed to now (about 320) is well
  // below the estimate (about 720).
  const unsigned est = p.se.avg.util_est & ~kernel::UTIL_AVG_UNCHANGED;
  EXPECT_GT(est, 400u);
  ASSERT_FALSE(p.on_rq);
  const uint64_t now = static_cast<uint64_t>(800 * kNsecPerMsec) + kernel::kPeltBootNs;
  const uint64_t periods = (now - p.se.avg.last_update_time) >> 20;
  const uint64_t util_now = kernel::decay_load(p.se.avg.util_avg, periods);
  EXPECT_LT(util_now * 3 / 2, est);
}

// Every runqueue's averages equal the sum of those of the tasks attached to it (decayed to
// now): attach at enqueue on a new CPU, detach when the balancer moves a queued task, and
// removal when a task wakes elsewhere keep the books. Returns the migrations seen.
uint64_t check_runqueue_sums(Sim& s, sim::Time end) {
  s.k->start();
  s.engine.run_until(end);
  uint64_t migrations = 0;
  for (const auto& t : s.k->tasks()) migrations += t->stats.nr_migrations;
  double rq_util = 0, task_util = 0, rq_load = 0, task_load = 0;
  for (int c = 0; c < s.k->nr_cpus(); ++c) {
    // The running task's averages, and its runqueue's, brought to now as a tick would.
    kernel::rq* rq = s.k->rq_of(c);
    kernel::update_rq_clock(rq);
    if (rq->cfs.curr) kernel::update_load_avg(&rq->cfs, rq->cfs.curr, 0);
    kernel::sched_balance_update_blocked_averages(rq);
    rq_util += static_cast<double>(s.k->cpu_rq(c).cfs.avg.util_avg);
    rq_load += static_cast<double>(s.k->cpu_rq(c).cfs.avg.load_avg);
  }
  for (const auto& t : s.k->tasks()) {
    if (t->is_idle) continue;
    const kernel::sched_avg& a = t->se.avg;
    // Decay to now what was last brought up to date earlier.
    const uint64_t periods = (static_cast<uint64_t>(end) + kernel::kPeltBootNs - a.last_update_time) >> 20;
    task_util += static_cast<double>(kernel::decay_load(a.util_avg, periods));
    task_load += static_cast<double>(kernel::decay_load(a.load_avg, periods));
  }
  EXPECT_NEAR(rq_util, task_util, task_util * 0.03);
  EXPECT_NEAR(rq_load, task_load, task_load * 0.03);
  return migrations;
}

TEST(Pelt, RunqueueSumsHoldWhenTasksWakeOnOtherCpus) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  ASSERT_TRUE(hw::restrict_cpus(&m, 16).ok());
  Sim s(m, testing_support::no_autogroup());
  for (int i = 0; i < 24; ++i) s.spawn({}, duty(1 + i % 3, 2 + i % 5));
  EXPECT_GT(check_runqueue_sums(s, 300 * kNsecPerMsec), 100u);
}

// Exact timers: the check decays the hogs' averages from their last update, which is exact
// when every CPU's last tick came at `end`, not a jittered few microseconds after it.
TEST(Pelt, RunqueueSumsHoldWhenTheBalancerMovesQueuedTasks) {
  Sim s(testing_support::exact_timers(testing_support::flat_machine(4)), testing_support::no_autogroup());
  for (int i = 0; i < 10; ++i) {  // hogs never sleep: every move is the balancer's
    kernel::TaskAttr a;
    a.nice = i % 5 - 2;
    s.spawn(a, hog);
  }
  // Fork placement leaves 4, 2, 2, 2 hogs on the CPUs; the balancer's moves even out and
  // keep the load (5 here; 3 are enough to exercise detach and attach).
  EXPECT_GE(check_runqueue_sums(s, 500 * kNsecPerMsec), 3u);
}

// update_load_avg() brings the sums to the rq clock in whole PELT units (1024 ns): a second
// call within the unit, as the switch after a tick makes for prev and the runqueue, leaves
// every average as it was; a sum stamped later than the clock (a clock gone back) is
// re-stamped at the clock, not left alone.
TEST(Pelt, UpdateLoadAvgWithinAPeltUnitChangesNothingAndAClockGoneBackRestamps) {
  Sim s(testing_support::flat_machine(1), testing_support::no_autogroup());
  const int pid = s.spawn({}, hog);
  s.run(30 * kNsecPerMsec + 123456);
  kernel::rq* rq = s.k->rq_of(0);
  kernel::update_rq_clock(rq);
  auto& se = const_cast<kernel::sched_entity&>(s.task(pid).se);
  ASSERT_EQ(rq->cfs.curr, &se);
  kernel::update_load_avg(&rq->cfs, &se, kernel::UPDATE_TG);
  const kernel::sched_avg se_avg = se.avg, rq_avg = rq->cfs.avg;
  kernel::update_load_avg(&rq->cfs, &se, kernel::UPDATE_TG);
  kernel::update_load_avg(&rq->cfs, &se, 0);
  for (const auto& [now, then] : {std::pair{&se.avg, &se_avg}, std::pair{&rq->cfs.avg, &rq_avg}}) {
    EXPECT_EQ(now->last_update_time, then->last_update_time);
    EXPECT_EQ(now->load_sum, then->load_sum);
    EXPECT_EQ(now->runnable_sum, then->runnable_sum);
    EXPECT_EQ(now->util_sum, then->util_sum);
    EXPECT_EQ(now->period_contrib, then->period_contrib);
    EXPECT_EQ(now->load_avg, then->load_avg);
    EXPECT_EQ(now->util_avg, then->util_avg);
  }
  const uint64_t clock = kernel::cfs_rq_clock_pelt(&rq->cfs);
  se.avg.last_update_time = clock + 5000;
  rq->cfs.avg.last_update_time = clock + 5000;
  kernel::update_load_avg(&rq->cfs, &se, 0);
  EXPECT_EQ(se.avg.last_update_time, clock);
  EXPECT_EQ(rq->cfs.avg.last_update_time, clock);
}

}  // namespace
