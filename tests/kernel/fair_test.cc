// EEVDF behaviour pinned against Linux: CPU shares by weight, wakeup preemption rules,
// pick_eevdf's choice, and the accounting invariants.
#include <gtest/gtest.h>

#include <memory>

#include "kernel/sched/fair_internal.h"
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

// Sleeps 10 ms, works 50 us; records how late it ran after each wakeup. Its sleep's timer
// fires at the end of its slack, up to 50 us after the time asked for (earlier when another
// timer interrupt of its CPU falls in that window, as the tick sometimes does).
struct Lateness {
  int64_t max = 0;
  int count = 0;
  int prompt = 0;  // ran within 20 us of the timer's hard expiry
  static constexpr int64_t kSlack = kernel::KernelConfig{}.timer_slack_ns;
  double prompt_share() const { return count ? static_cast<double>(prompt) / count : 0; }
};
std::function<user::Program(user::Thread&)> short_sleeper(Lateness* l) {
  return [l](user::Thread& t) -> user::Program {
    for (;;) {
      const int64_t due = t.now() + 10 * sim::kNsecPerMsec;
      co_await t.nanosleep(10 * sim::kNsecPerMsec);
      l->max = std::max(l->max, t.now() - due);
      l->count++;
      l->prompt += t.now() - due < Lateness::kSlack + 20 * sim::kNsecPerUsec;
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

// wakeup_preempt_fair() (check_preempt_wakeup_fair() before 6.19) returns before any
// deadline comparison when the wakee's policy is not SCHED_NORMAL (!normal_policy(p->policy):
// "BATCH and IDLE tasks do not preempt others"). The check is on the task woken, not on curr
// (a SCHED_IDLE curr is still preempted, by the se_is_idle() test before it). So a
// SCHED_BATCH sleeper woken beside a SCHED_NORMAL hog waits for the hog's tick to end its
// slice (HZ=250: 4 ms ticks, about 2 ms on average from a wakeup at a random phase), where
// the same sleeper under SCHED_NORMAL keeps its lag across the sleep and runs at once
// (Fair.ALightSleeperPreemptsThroughTheLagItKeptAcrossSleep).
TEST(Fair, ABatchWakeeDoesNotPreemptAndWaitsForTheTick) {
  for (int policy : {SCHED_NORMAL, SCHED_BATCH}) {
    SCOPED_TRACE(policy == SCHED_BATCH ? "SCHED_BATCH" : "SCHED_NORMAL");
    Sim s(flat_machine(1));
    s.spawn(pinned(0), hog);
    kernel::TaskAttr b = pinned(0);
    b.policy = policy;
    Lateness late;
    const int sleeper = s.spawn(b, short_sleeper(&late));
    s.run(sim::kNsecPerSec);
    const kernel::task_stats& st = s.task(sleeper).stats;
    ASSERT_GT(late.count, 50);
    ASSERT_GT(st.wait_count, 50u);
    const double mean_wait =
        static_cast<double>(st.wait_sum_ns) / static_cast<double>(st.wait_count);
    const int64_t tick = s.k->config().tick_nsec();
    if (policy == SCHED_NORMAL) {
      EXPECT_GT(late.prompt_share(), 0.95);
      EXPECT_LT(mean_wait, 0.25 * static_cast<double>(tick));
    } else {
      // Preempting at wakeup would make nearly every wakeup prompt and the mean wait tens of
      // microseconds; waiting for the tick gives about half a tick on average.
      EXPECT_LT(late.prompt_share(), 0.1);
      EXPECT_GT(mean_wait, 0.25 * static_cast<double>(tick));
      EXPECT_LE(static_cast<int64_t>(st.wait_max_ns), tick + 200 * sim::kNsecPerUsec)
          << "the hog's next tick ends its slice";
    }
  }
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

// ---- Nice changes at run time (setpriority -> set_user_nice -> reweight_task_fair) ----

namespace {

kernel::task_struct* task_ptr(Sim* s, int pid) {
  for (const auto& t : s->k->tasks())
    if (t->pid == pid) return t.get();
  return nullptr;
}

// Computes `ns`, sleeps 10 ms, over and over: blocks eligible (positive lag kept).
std::function<user::Program(user::Thread&)> worker(int64_t ns, int64_t sleep_ns) {
  return [ns, sleep_ns](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(ns);
      co_await t.nanosleep(sleep_ns);
    }
  };
}

constexpr uint32_t kWmultNice5 = 12820798;  // sched_prio_to_wmult[25]

}  // namespace

// A sleeping task is off its runqueue: reweight_entity() only rescales its vlag by w/w'
// (lag = w * vlag is kept) and recomputes its PELT load_avg from load_sum with the new
// weight. Watched from another CPU while the task sleeps with positive lag.
TEST(Fair, SetpriorityScalesASleepersLagAndPeltLoadByTheWeightRatio) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(2), kernel::default_config(v));
    s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), worker(50 * sim::kNsecPerUsec, 10 * sim::kNsecPerMsec));
    bool checked = false;
    s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
      const kernel::task_struct* p = task_ptr(&s, b);
      co_await t.nanosleep(30 * sim::kNsecPerMsec);
      while (p->on_rq || p->se.vlag <= 0) co_await t.nanosleep(100 * sim::kNsecPerUsec);
      const int64_t vlag = p->se.vlag;
      const uint64_t load_sum = p->se.avg.load_sum;
      const int64_t ret = co_await t.setpriority(PRIO_PROCESS, b, 5);
      EXPECT_EQ(ret, 0);
      EXPECT_FALSE(p->on_rq);  // still asleep: nothing else touched it
      EXPECT_EQ(p->nice, 5);
      EXPECT_EQ(p->prio, 125);
      EXPECT_EQ(p->se.load.weight, 335u);
      EXPECT_EQ(p->se.load.inv_weight, kWmultNice5);
      EXPECT_EQ(p->se.vlag, vlag * 1024 / 335);
      EXPECT_EQ(p->se.avg.load_sum, load_sum);
      EXPECT_EQ(p->se.avg.load_avg,
                335 * load_sum / (kernel::PELT_MIN_DIVIDER + p->se.avg.period_contrib));
      checked = true;
    });
    s.run(200 * sim::kNsecPerMsec);
    EXPECT_TRUE(checked) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 200 * sim::kNsecPerMsec);
  }
}

// A queued task is dequeued (DEQUEUE_SAVE: lag recorded, deadline kept relative), both are
// rescaled by w/w', and it is placed again from the rescaled lag: afterwards its lag at the
// new V is the rescaled vlag (place_entity() inflates it for the shift of V it causes) and
// its deadline is the rescaled request ahead of its vruntime.
TEST(Fair, SetpriorityOnAQueuedTaskRescalesItsLagAndRelativeDeadline) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), hog);
    bool checked = false;
    s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
      kernel::task_struct* p = task_ptr(&s, b);
      kernel::rq* rq0 = s.k->rq_of(0);
      co_await t.nanosleep(20 * sim::kNsecPerMsec);
      while (!p->on_rq || rq0->curr == p) co_await t.nanosleep(100 * sim::kNsecPerUsec);
      const int64_t request = static_cast<int64_t>(p->se.deadline - p->se.vruntime);
      const int64_t ret = co_await t.setpriority(PRIO_PROCESS, b, -3);  // weight 1991
      EXPECT_EQ(ret, 0);
      EXPECT_TRUE(p->on_rq);
      EXPECT_NE(rq0->curr, p);  // nothing ran on CPU 0 since
      EXPECT_EQ(p->se.load.weight, 1991u);
      EXPECT_EQ(static_cast<int64_t>(p->se.deadline - p->se.vruntime), request * 1024 / 1991);
      const int64_t lag_now = static_cast<int64_t>(kernel::avg_vruntime(&rq0->cfs) - p->se.vruntime);
      EXPECT_NEAR(static_cast<double>(lag_now), static_cast<double>(p->se.vlag), 3.0);
      EXPECT_NE(p->se.vlag, 0);
      checked = true;
    });
    s.run(100 * sim::kNsecPerMsec);
    EXPECT_TRUE(checked) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 100 * sim::kNsecPerMsec);
  }
}

// CPU shares follow the new weight: a hog that renices itself to 5 gets 335/(1024+335).
TEST(Fair, AHogThatRenicesItselfGetsTheShareOfItsNewWeight) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int a = s.spawn(pinned(0), hog);
    const int b = s.spawn(pinned(0), [](user::Thread& t) -> user::Program {
      const int64_t ret = co_await t.setpriority(PRIO_PROCESS, 0, 5);
      EXPECT_EQ(ret, 0);
      for (;;) co_await t.compute(1000000000);
    });
    s.run(4 * sim::kNsecPerSec);
    EXPECT_EQ(s.task(b).nice, 5);
    const double expected = 1024.0 / (1024.0 + 335.0);
    EXPECT_NEAR(share(s, a, b), expected, 0.01 * expected) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 4 * sim::kNsecPerSec);
  }
}

// RUN_TO_PARITY's protection around a running task's nice change: 6.12's set_next_entity()
// stashes the deadline in vlag whenever it sets a queued entity current, so the put/set
// around set_user_nice() protects the reniced task up to its new (rescaled) deadline; 6.18+
// arm the protection at picks only (set_next_task(first)), and its end stays where it was.
TEST(Fair, ANiceChangeRearmsTheRunningTasksProtectionOn612Only) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), kernel::default_config(v));
    s.spawn(pinned(0), hog);
    bool checked = false;
    s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
      co_await t.compute(100 * sim::kNsecPerUsec);
      const kernel::sched_entity& se = task_ptr(&s, t.pid())->se;
      const uint64_t deadline = se.deadline;
      const int64_t vprot = v == kernel::KernelVersion::V6_12 ? se.vlag
                                                               : static_cast<int64_t>(se.vprot);
      EXPECT_EQ(co_await t.setpriority(PRIO_PROCESS, 0, 5), 0);
      EXPECT_NE(se.deadline, deadline);  // rescaled to the new weight
      if (v == kernel::KernelVersion::V6_12)
        EXPECT_EQ(se.vlag, static_cast<int64_t>(se.deadline));
      else
        EXPECT_EQ(static_cast<int64_t>(se.vprot), vprot);
      checked = true;
    });
    s.run(10 * sim::kNsecPerMsec);
    EXPECT_TRUE(checked);
  }
}

// And back: a nice-19 hog renicing its nice-0 rival to 19 evens the split from then on.
TEST(Fair, SetpriorityOnARunningRivalEvensTheSplit) {
  Sim s(flat_machine(1));
  kernel::TaskAttr low = pinned(0, 19);
  const int a = s.spawn(low, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(1000000000);
  });
  const int b = s.spawn(pinned(0), hog);
  s.spawn(pinned(0, -5), [b](user::Thread& t) -> user::Program {
    const int64_t ret = co_await t.setpriority(PRIO_PROCESS, b, 19);
    EXPECT_EQ(ret, 0);
  });
  s.run(2 * sim::kNsecPerSec);
  EXPECT_NEAR(share(s, a, b), 0.5, 0.01);
  testing_support::check_invariants(*s.k, 2 * sim::kNsecPerSec);
}

// Bad arguments: an unknown thread is -ESRCH, PRIO_PGRP/PRIO_USER are not modelled (-EINVAL);
// a value out of range is clamped to -20..19 as Linux clamps it.
TEST(Fair, SetpriorityRejectsAnUnknownThreadAndOtherWhichValues) {
  Sim s(flat_machine(1));
  int64_t r_srch = 0, r_inval = 0, r_clamp = 1;
  const int me = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    r_srch = co_await t.setpriority(PRIO_PROCESS, 999, 1);
    r_inval = co_await t.setpriority(PRIO_USER, 0, 1);
    r_clamp = co_await t.setpriority(PRIO_PROCESS, 0, 100);
  });
  s.run(10 * sim::kNsecPerMsec);
  EXPECT_EQ(r_srch, -ESRCH);
  EXPECT_EQ(r_inval, -EINVAL);
  EXPECT_EQ(r_clamp, 0);
  EXPECT_EQ(s.task(me).nice, 19);
}

namespace {
// Spawned before a hog on CPU 0, it runs first, a 4 ms tick (HZ=250), lets the hog run the
// next, and blocks (forever) 1 ms into its second turn: 5 ms against the hog's 4, so
// ineligible, and DELAY_DEQUEUE keeps it queued. Returns its pid (the hog's is pid + 1).
int spawn_delayed_blocker_and_hog(Sim& s, kernel::UserWord* w) {
  const int pid = s.spawn(pinned(0), [w](user::Thread& t) -> user::Program {
    co_await t.compute(5 * sim::kNsecPerMsec);
    co_await t.futex_wait(w, 0);
  });
  s.spawn(pinned(0), hog);
  return pid;
}
}  // namespace

// A delayed task (blocked while ineligible, still queued) dequeued and enqueued around a
// nice change comes back delayed: queued, not runnable, and still counted in rq->nr_running
// (Linux counts a delayed task there until its final dequeue).
TEST(Fair, SetpriorityOnADelayedTaskLeavesItDelayedAndNotRunnable) {
  Sim s(flat_machine(2), testing_support::no_autogroup());
  kernel::UserWord w;
  const int b = spawn_delayed_blocker_and_hog(s, &w);
  bool checked = false;
  s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
    const kernel::task_struct* p = task_ptr(&s, b);
    const kernel::rq* rq0 = s.k->rq_of(0);
    while (!p->se.sched_delayed && t.now() < 100 * sim::kNsecPerMsec)
      co_await t.nanosleep(50 * sim::kNsecPerUsec);
    EXPECT_TRUE(p->se.sched_delayed);
    EXPECT_EQ(rq0->cfs.h_nr_runnable, 1u);
    EXPECT_EQ(rq0->nr_running, 2u);
    EXPECT_GE(s.k->nr_overloaded, 1u);  // the root domain's "overloaded": nr_running >= 2
    const int64_t ret = co_await t.setpriority(PRIO_PROCESS, b, 7);
    EXPECT_EQ(ret, 0);
    EXPECT_TRUE(p->se.sched_delayed);
    EXPECT_TRUE(p->se.on_rq);
    EXPECT_TRUE(p->on_rq);
    EXPECT_EQ(rq0->cfs.h_nr_runnable, 1u);  // the hog only
    EXPECT_EQ(rq0->cfs.nr_queued, 2u);
    EXPECT_EQ(rq0->nr_running, 2u);
    checked = true;
  });
  s.run(200 * sim::kNsecPerMsec);
  EXPECT_TRUE(checked);
  testing_support::check_invariants(*s.k, 200 * sim::kNsecPerMsec);
}

// wake_affine_idle()'s sync test, "the waker is alone on its CPU", with a delayed task
// queued beside the waker: 6.12.0 counts it (rq->nr_running), 6.18+ leave it out ("Fixup
// wake_up_sync() vs DELAYED_DEQUEUE"), so only they pull a sync wakee to the waker's CPU.
// Asked from CPU 1 (busy, as the wakee's prev) while CPU 0 runs the hog beside the delayed
// blocker.
TEST(Fair, ASyncWakeAffineLeavesDelayedTasksOutFrom618) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                 kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    kernel::UserWord w;
    const int b = spawn_delayed_blocker_and_hog(s, &w);
    int picked = 0;
    s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
      const kernel::task_struct* p = task_ptr(&s, b);
      while (!p->se.sched_delayed && t.now() < 100 * sim::kNsecPerMsec)
        co_await t.nanosleep(50 * sim::kNsecPerUsec);
      EXPECT_EQ(s.k->rq_of(0)->nr_running, 2u);
      picked = kernel::wake_affine_idle(s.k.get(), 0, 1, true);
    });
    s.run(200 * sim::kNsecPerMsec);
    EXPECT_EQ(picked, v == kernel::KernelVersion::V6_12 ? -1 : 0);
  }
}

// task_dead_fair() completes a pending delayed dequeue (as Linux's does), so a task gone for
// good can never stay in the tree. Called here on a delayed task directly: the exit path
// itself never leaves one delayed (next test).
TEST(Fair, TaskDeadFairCompletesAPendingDelayedDequeue) {
  Sim s(flat_machine(2));
  kernel::UserWord w;
  const int b = spawn_delayed_blocker_and_hog(s, &w);
  bool checked = false;
  s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
    kernel::task_struct* p = task_ptr(&s, b);
    const kernel::rq* rq0 = s.k->rq_of(0);
    while (!p->se.sched_delayed && t.now() < 100 * sim::kNsecPerMsec)
      co_await t.nanosleep(50 * sim::kNsecPerUsec);
    EXPECT_TRUE(p->se.sched_delayed);
    kernel::fair_sched_class.task_dead(p);
    EXPECT_FALSE(p->se.sched_delayed);
    EXPECT_FALSE(p->se.on_rq);
    EXPECT_FALSE(p->on_rq);
    EXPECT_EQ(rq0->cfs.nr_queued, 1u);
    checked = true;
  });
  s.run(200 * sim::kNsecPerMsec);
  EXPECT_TRUE(checked);
}

// An exiting thread is dequeued for good at its last schedule() (DEQUEUE_SPECIAL never
// delays), even when it exits ineligible (its recorded lag is negative), as it does here after
// running 5 ms against a hog's 4 (the blocker's schedule above, with an exit instead).
TEST(Fair, AThreadExitingIneligibleIsNotLeftDelayed) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int b = s.spawn(pinned(0), [](user::Thread& t) -> user::Program {
      co_await t.compute(5 * sim::kNsecPerMsec);
    });
    s.spawn(pinned(0), hog);
    s.run(100 * sim::kNsecPerMsec);
    SCOPED_TRACE(kernel::version_name(v));
    EXPECT_TRUE(s.task(b).exited);
    EXPECT_LT(s.task(b).se.vlag, 0);
    EXPECT_FALSE(s.task(b).se.on_rq);
    EXPECT_FALSE(s.task(b).se.sched_delayed);
    EXPECT_EQ(s.k->rq_of(0)->cfs.nr_queued, 1u);
    testing_support::check_invariants(*s.k, 100 * sim::kNsecPerMsec);
  }
}
