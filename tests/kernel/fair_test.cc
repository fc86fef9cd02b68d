// EEVDF behaviour pinned against Linux: CPU shares by weight, wakeup preemption rules,
// pick_eevdf's choice, and the accounting invariants.
#include <gtest/gtest.h>

#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;
using testing_support::exact_timers;

namespace {

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

kernel::TaskAttr pinned(int cpu, int nice = 0) {
  kernel::TaskAttr a;
  a.comm = "hog";
  a.nice = nice;
  a.cpus = {cpu};
  return a;
}

double share(const Sim& s, int a, int b) {
  const double ra = static_cast<double>(s.task(a).stats.run_ns);
  const double rb = static_cast<double>(s.task(b).stats.run_ns);
  return ra / (ra + rb);
}

}  // namespace

TEST(Fair, TwoNiceZeroHogsOnOneCpuSplitFiftyFifty) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(2), kernel::default_config(v));
    const int a = s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), hog);
    s.run(2 * sim::kNsecPerSec);
    EXPECT_NEAR(share(s, a, b), 0.5, 0.01) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 2 * sim::kNsecPerSec);
  }
}

TEST(Fair, NiceZeroAgainstNiceFiveSplitsByWeight1024To335) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int a = s.spawn(pinned(0, 0), hog);
    const int b = s.spawn(pinned(0, 5), hog);
    s.run(4 * sim::kNsecPerSec);
    const double expected = 1024.0 / (1024.0 + 335.0);
    EXPECT_NEAR(share(s, a, b), expected, 0.01 * expected) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 4 * sim::kNsecPerSec);
  }
}

TEST(Fair, HogsSpreadOverIdleCpus) {
  Sim s(flat_machine(4));
  kernel::TaskAttr a;
  std::vector<int> pids;
  for (int i = 0; i < 4; ++i) pids.push_back(s.spawn(a, hog));
  s.run(sim::kNsecPerSec);
  for (int pid : pids) EXPECT_GT(s.task(pid).stats.run_ns, 900 * sim::kNsecPerMsec) << pid;
  testing_support::check_invariants(*s.k, sim::kNsecPerSec);
}

TEST(Fair, EightHogsOnFourCpusEachGetHalfACpu) {
  Sim s(flat_machine(4));
  kernel::TaskAttr a;
  std::vector<int> pids;
  for (int i = 0; i < 8; ++i) pids.push_back(s.spawn(a, hog));
  s.run(4 * sim::kNsecPerSec);
  for (int pid : pids)
    EXPECT_NEAR(static_cast<double>(s.task(pid).stats.run_ns) / 4e9, 0.5, 0.05) << pid;
  testing_support::check_invariants(*s.k, 4 * sim::kNsecPerSec);
}

// pick_eevdf returns the eligible entity with the earliest deadline, not the earliest
// deadline overall: an ineligible entity (vruntime beyond V) is passed over.
TEST(Fair, PickEevdfSkipsAnIneligibleEarlierDeadline) {
  kernel::cfs_rq cfs;
  kernel::rq rq;
  cfs.rq = &rq;
  kernel::task_struct a, b, c;
  for (auto* t : {&a, &b, &c}) {
    t->se.owner = t;
    t->se.cfs_rq = &cfs;
    t->se.on_rq = true;
  }
  // Equal weights; V = (0 + 100 + 200) / 3 = 100.
  a.se.vruntime = 0;   a.se.deadline = 500;   // eligible, late deadline
  b.se.vruntime = 100; b.se.deadline = 300;   // eligible (v == V), earlier deadline
  c.se.vruntime = 200; c.se.deadline = 250;   // earliest deadline but not eligible
  for (auto* t : {&a, &b, &c}) {
    cfs.sum_w_vruntime += static_cast<int64_t>(t->se.vruntime) * 1024;
    cfs.sum_weight += 1024;
    cfs.timeline.push_back(&t->se);
  }
  cfs.nr_queued = 3;
  EXPECT_TRUE(kernel::entity_eligible(&cfs, &b.se));
  EXPECT_FALSE(kernel::entity_eligible(&cfs, &c.se));
  EXPECT_EQ(kernel::pick_eevdf(&cfs, true), &b.se);
}

// Sleeps 10 ms, works 50 us; records how late it ran after each wakeup.
struct Lateness {
  int64_t max = 0;
  int count = 0;
  int prompt = 0;  // ran within 20 us of the timer
  double prompt_share() const { return count ? static_cast<double>(prompt) / count : 0; }
};
std::function<user::Program(user::Thread&)> short_sleeper(Lateness* l) {
  return [l](user::Thread& t) -> user::Program {
    for (;;) {
      const int64_t due = t.now() + 10 * sim::kNsecPerMsec;
      co_await t.nanosleep(10 * sim::kNsecPerMsec);
      l->max = std::max(l->max, t.now() - due);
      l->count++;
      l->prompt += t.now() - due < 20 * sim::kNsecPerUsec;
      co_await t.compute(50 * sim::kNsecPerUsec);
    }
  };
}

// A wakee preempts only if it is eligible and has the earliest deadline. A waker with a
// short custom slice (PREEMPT_SHORT) wakes at zero lag with a deadline 100 us ahead: earlier
// than the hog's unless the hog's request was just renewed less than 100 us ago, so it runs
// at once on most wakeups (the rest wait for the hog's next tick).
TEST(Fair, AnEligibleWakerWithAnEarlierDeadlinePreemptsAtOnce) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V7_0}) {
    kernel::KernelConfig cfg = kernel::default_config(v);
    cfg.preempt = kernel::PreemptModel::Full;
    Sim s(flat_machine(1), cfg);
    s.spawn(pinned(0), hog);
    kernel::TaskAttr a = pinned(0);
    a.slice_ns = 100 * sim::kNsecPerUsec;
    Lateness late;
    s.spawn(a, short_sleeper(&late));
    s.run(sim::kNsecPerSec);
    ASSERT_GT(late.count, 50);
    EXPECT_GT(late.prompt_share(), 0.7) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, sim::kNsecPerSec);
  }
}

// With the default slice the light sleeper keeps the positive lag it had when it blocked
// (PLACE_LAG), so it is eligible with the earlier deadline and preempts at once.
TEST(Fair, ALightSleeperPreemptsThroughTheLagItKeptAcrossSleep) {
  Sim s(flat_machine(1));
  s.spawn(pinned(0), hog);
  Lateness late;
  s.spawn(pinned(0), short_sleeper(&late));
  s.run(sim::kNsecPerSec);
  ASSERT_GT(late.count, 50);
  EXPECT_GT(late.prompt_share(), 0.95);
}

TEST(Fair, ABatchWakerNeverPreempts) {
  Sim s(flat_machine(1));
  s.spawn(pinned(0), hog);
  kernel::TaskAttr b = pinned(0);
  b.policy = SCHED_BATCH;
  const int sleeper = s.spawn(b, [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.nanosleep(10 * sim::kNsecPerMsec);
      co_await t.compute(100 * sim::kNsecPerUsec);
    }
  });
  s.run(sim::kNsecPerSec);
  // It waits for the hog's tick-driven slice end instead (HZ=250: up to a 4 ms tick).
  EXPECT_GT(s.task(sleeper).stats.wait_max_ns, 500 * sim::kNsecPerUsec);
}

// sched_feat(HRTICK): slices end when they are used up (0.7 ms on one CPU), not at the next
// tick (4 ms at HZ=250). Exact timers, so that without HRTICK the hogs alternate at every
// tick (see the next test for jittered ones).
TEST(Fair, WithHrtickSlicesEndOnTimeInsteadOfAtTheTick) {
  for (bool hrtick : {false, true}) {
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    ASSERT_EQ(kernel::set_config_key(&cfg, "sched_feat.HRTICK", hrtick ? "true" : "false"), "");
    Sim s(exact_timers(flat_machine(1)), cfg);
    const int a = s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), hog);
    s.run(sim::kNsecPerSec);
    const uint64_t switches = s.task(a).stats.nr_switches_involuntary;
    if (hrtick) {
      EXPECT_GT(switches, 600u);  // ~1 s / (2 x 0.7 ms)
      EXPECT_LT(switches, 760u);
    } else {
      EXPECT_NEAR(static_cast<double>(switches), 125.0, 3.0);  // every 4 ms tick, alternating
    }
    EXPECT_NEAR(share(s, a, b), 0.5, 0.01);
    testing_support::check_invariants(*s.k, sim::kNsecPerSec);
  }
}

// Two equal hogs that each overrun their slice at every tick are a tie for EEVDF: the one
// that waited is eligible only if its vruntime is not past the average, i.e. if it ran no
// less than the current one in its own turn. Exact ticks give equal turns, so the hogs
// alternate at every tick; jittered ticks make turns differ by microseconds, so now and
// then one runs two ticks in a row (a wait of 8 ms). The split stays even.
TEST(Fair, TwoHogsAlternateAtTicksUnlessJitterBreaksTheTie) {
  for (sim::Time jitter : {0, 2000}) {
    Sim s(testing_support::with_timer_jitter(flat_machine(1), jitter));
    const int a = s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), hog);
    s.run(sim::kNsecPerSec);
    SCOPED_TRACE(jitter);
    const uint64_t switches = s.task(a).stats.nr_switches_involuntary;
    const int64_t tick = s.k->config().tick_nsec();
    if (jitter == 0) {
      EXPECT_NEAR(static_cast<double>(switches), 125.0, 1.0);
      EXPECT_LE(static_cast<int64_t>(s.task(a).stats.wait_max_ns), tick);
    } else {
      EXPECT_LT(switches, 124u);
      EXPECT_GT(switches, 80u);
      EXPECT_GT(static_cast<int64_t>(s.task(a).stats.wait_max_ns) +
                    static_cast<int64_t>(s.task(b).stats.wait_max_ns), 3 * tick);
      EXPECT_LE(static_cast<int64_t>(s.task(a).stats.wait_max_ns), 2 * tick + jitter);
    }
    EXPECT_NEAR(share(s, a, b), 0.5, 0.01);
    testing_support::check_invariants(*s.k, sim::kNsecPerSec);
  }
}
