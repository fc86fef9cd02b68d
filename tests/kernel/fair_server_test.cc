// The fair deadline server's states (kernel/sched/deadline.c): zero-laxity wait, running,
// replenish wait, and how fair execution, stops and restarts move between them, per
// kernel version.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;
using testing_support::on;

namespace {
constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr kernel::KernelVersion kVersions[] = {kernel::KernelVersion::V6_12,
                                               kernel::KernelVersion::V6_18,
                                               kernel::KernelVersion::V7_0};

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}


// CPU time a fair task that computes in 1 ms steps got between `from` and `to`. The
// server's budget is checked at ticks (4 ms at HZ=250), so a window may run a few ms over.
struct Progress {
  std::vector<sim::Time> steps;  // when each 1 ms step ended
  int64_t between(sim::Time from, sim::Time to) const {
    int64_t n = 0;
    for (sim::Time at : steps) n += at > from && at <= to;
    return n * kMs;
  }
};

// A fair task on CPU 0 that runs 1 ms steps for ever, recording when each ends.
int spawn_stepper(Sim& s, Progress* fair) {
  return s.spawn(on({0}), [fair](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(kMs);
      fair->steps.push_back(t.now());
    }
  });
}

// A fair task on CPU 0 that runs 1 ms, sleeps until `at`, then notes in `*ran_again` when
// its next microsecond of work ended.
void spawn_napper(Sim& s, sim::Time at, sim::Time* ran_again) {
  s.spawn(on({0}), [at, ran_again](user::Thread& t) -> user::Program {
    co_await t.compute(kMs);
    co_await t.sleep_until(at);
    co_await t.compute(1000);
    *ran_again = t.now();
  });
}

// On every version: a fair stepper alone until a FIFO hog takes CPU 0 at `hog_at`; the
// stepper makes no progress in (`quiet_from`, `relief_at`] and gets the server's 50 ms in
// (`relief_at`, `end`].
void expect_first_relief(sim::Time hog_at, sim::Time quiet_from, sim::Time relief_at,
                         sim::Time end) {
  for (const kernel::KernelVersion v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    Progress fair;
    spawn_stepper(s, &fair);
    s.spawn(on({0}, SCHED_FIFO, 50), hog, hog_at);
    s.run(end);
    EXPECT_EQ(fair.between(quiet_from, relief_at), 0) << static_cast<int>(v);
    EXPECT_NEAR(static_cast<double>(fair.between(relief_at, end)), 50e6, 5e6)
        << static_cast<int>(v);
  }
}
}  // namespace

// dl_server_stop() keeps dl_defer_running: a server that runs because RT starves fair tasks
// and is stopped when its fair task sleeps is enqueued at once when the task wakes
// (update_dl_entity() keeps the deadline and arms no zero-laxity wait), so the task keeps
// getting its 50 ms per period; it does not wait ~950 ms for zero laxity after each wake.
TEST(FairServer, AServerStoppedWhileRunningRunsAtOnceWhenRestarted) {
  for (const kernel::KernelVersion v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    Progress fair;
    // Runs 5 ms, sleeps 1 ms.
    const int pid = s.spawn(on({0}), [&fair](user::Thread& t) -> user::Program {
      for (;;) {
        for (int i = 0; i < 5; ++i) {
          co_await t.compute(kMs);
          fair.steps.push_back(t.now());
        }
        co_await t.nanosleep(kMs);
      }
    });
    s.spawn(on({0}, SCHED_FIFO, 50), hog, 2 * kMs);
    s.run(3 * sim::kNsecPerSec);
    // About 50 ms per period from the first zero-laxity instant (~950 ms) on: ~150 ms.
    EXPECT_GT(static_cast<double>(s.task(pid).stats.run_ns), 120e6) << static_cast<int>(v);
    testing_support::check_invariants(*s.k, 3 * sim::kNsecPerSec);
  }
}

// replenish_dl_entity() at zero laxity: the budget left always overflows the bandwidth in
// the time left, so the server starts a new period with a full budget. A fair task that used
// 30 ms of the first period before a FIFO hog took its CPU gets 50 ms at zero laxity
// (980 ms), not the 20 ms left.
TEST(FairServer, AtZeroLaxityTheServerGetsAFullBudgetForANewPeriod) {
  expect_first_relief(30 * kMs, 100 * kMs, 970 * kMs, 1200 * kMs);
}

// update_curr_dl_se(): fair tasks that use up the whole budget in the background, while
// the server waits for zero laxity, start a new period at once. A fair hog that ran alone
// for 600 ms has a period that began at 600 ms when a FIFO hog takes its CPU: its first
// relief is at that period's zero laxity, 1550 ms, not after the first 1 s period ended.
TEST(FairServer, ABudgetUsedUpInTheBackgroundStartsANewPeriodAtOnce) {
  expect_first_relief(600 * kMs, 610 * kMs, 1540 * kMs, 1700 * kMs);
}

// Once it ran, the server stays running (dl_defer_running) through later periods: out of
// budget it waits for its replenishment at the deadline, then runs again at once, one
// period after it first ran, without waiting for zero laxity.
TEST(FairServer, ARunningServerRunsAgainAtItsReplenishment) {
  Sim s(flat_machine(1));
  Progress fair;
  spawn_stepper(s, &fair);
  s.spawn(on({0}, SCHED_FIFO, 50), hog, 30 * kMs);
  s.run(2100 * kMs);
  // Zero laxity at 980 ms: a new period to 1980 ms; replenished then, it runs at once.
  EXPECT_EQ(fair.between(1040 * kMs, 1975 * kMs), 0);
  EXPECT_NEAR(static_cast<double>(fair.between(1975 * kMs, 2100 * kMs)), 50e6, 5e6);
  EXPECT_TRUE(s.k->rq_of(0)->fair_server.defer_running);
}

// Start and stop. 6.12 stops the server when the last queued fair task leaves
// (dequeue_entities()); since 6.17 (cccb45d7c429) a started server stays started until it
// is picked and finds no fair task (__pick_task_dl() -> dl_server_stop()). A fair task that
// ran 1 ms, then sleeps under a FIFO hog until 700 ms: on 6.12 its wakeup restarts the
// server, whose 49 ms left overflow the bandwidth in the 300 ms left, so a new period starts
// and the task runs at 1650 ms; on 6.18 and 7.0 the server, still started, waits for the
// old period's zero laxity (951 ms), and the woken task runs then.
TEST(FairServer, SinceSixSeventeenAServerStaysStartedWhileItsFairTasksSleep) {
  for (const kernel::KernelVersion v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    sim::Time ran_again = -1;
    bool active_at_500ms = false;
    spawn_napper(s, 700 * kMs, &ran_again);
    s.spawn(on({0}, SCHED_FIFO, 10), hog, 2 * kMs);
    testing_support::Sampler probe(s, 500 * kMs, [&](sim::Time now) {
      if (now == 500 * kMs) active_at_500ms = s.k->rq_of(0)->fair_server.active;
    }, 500 * kMs);
    s.run(2 * sim::kNsecPerSec);
    const bool v612 = v == kernel::KernelVersion::V6_12;
    EXPECT_EQ(active_at_500ms, !v612) << static_cast<int>(v);
    const sim::Time expected = v612 ? 1650 * kMs : 951 * kMs;
    EXPECT_GT(ran_again, expected - 5 * kMs) << static_cast<int>(v);
    EXPECT_LT(ran_again, expected + 10 * kMs) << static_cast<int>(v);
  }
}

// Since 6.17 a server that runs (from zero laxity) with no fair task to pick stops at once:
// a fair task that sleeps for good under a FIFO hog leaves its server started until the
// zero-laxity instant, where the pick finds nothing and stops it.
TEST(FairServer, SinceSixSeventeenAServerStopsWhenItsPickFindsNoFairTask) {
  for (const kernel::KernelVersion v : {kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    Sim s(flat_machine(1), kernel::default_config(v));
    s.spawn(on({0}), [&](user::Thread& t) -> user::Program {
      co_await t.compute(kMs);
      co_await t.nanosleep(10 * sim::kNsecPerSec);
    });
    s.spawn(on({0}, SCHED_FIFO, 10), hog, 2 * kMs);
    bool active_before = false, active_after = true;
    testing_support::Sampler probe(s, 100 * kMs, [&](sim::Time now) {
      if (now == 900 * kMs) active_before = s.k->rq_of(0)->fair_server.active;
      if (now == 1000 * kMs) active_after = s.k->rq_of(0)->fair_server.active;
    }, 100 * kMs);
    s.run(1100 * kMs);
    EXPECT_TRUE(active_before) << static_cast<int>(v);
    EXPECT_FALSE(active_after) << static_cast<int>(v);
    EXPECT_FALSE(s.k->rq_of(0)->fair_server.timer.armed) << static_cast<int>(v);
  }
}

// Idle time counts as the server's time. A fair task ran 1 ms at 0 and sleeps; the CPU is
// idle until a FIFO hog starts at 900 ms; the task wakes at 905 ms. 6.12 and 6.18 charge the
// 899 ms of idle when idle is switched out (dl_server_update_idle_time(): the budget down
// to 0, not below), so the period keeps its deadline (1000 ms) with nothing left: the task
// runs when it is replenished there. 7.0 charges it to the started server
// (dl_server_update_idle()), whose budget, used up, starts a new period at 900 ms: the
// task runs at that period's zero laxity, 1850 ms. Without idle time the server would
// hold 49 ms: a new period at the wakeup on 6.12 (1855 ms), zero laxity at 951 ms on the
// others.
TEST(FairServer, IdleTimeIsChargedToTheServer) {
  for (const kernel::KernelVersion v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    sim::Time ran_again = -1;
    spawn_napper(s, 905 * kMs, &ran_again);
    s.spawn(on({0}, SCHED_FIFO, 10), hog, 900 * kMs);
    s.run(2 * sim::kNsecPerSec);
    const sim::Time expected = v == kernel::KernelVersion::V7_0 ? 1850 * kMs : 1000 * kMs;
    EXPECT_GT(ran_again, expected - 2 * kMs) << static_cast<int>(v);
    EXPECT_LT(ran_again, expected + 5 * kMs) << static_cast<int>(v);
  }
}
