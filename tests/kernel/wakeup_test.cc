// Wakeup placement pinned against kernel/sched/core.c and fair.c: the bookkeeping that
// select_idle_sibling() reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernel/cpu_exec.h"
#include "kernel/sched/sched.h"
#include "kernel/trace.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

// p->recent_used_cpu is written in two places only: wake_up_new_task() (the parent's CPU)
// and select_idle_sibling() (prev, as the candidate for the next wakeup). Switching a task
// in does not touch it (Linux stopped that in 5.11, 89aafd67f28c), so at a wakeup it names
// the CPU before prev: a third idle candidate after target and prev. Here: a thread
// started from outside forks on CPU 0 (its first allowed CPU), is placed on another, and
// still names CPU 0 while it runs there.
TEST(Wakeup, RecentUsedCpuIsTheForkingCpuNotTheOneSwitchedTo) {
  Sim s(flat_machine(4));
  kernel::TaskAttr hog;
  hog.comm = "hog";
  hog.cpus = {0};
  s.spawn(hog, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  const int p = s.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  }, 10 * sim::kNsecPerUsec);
  s.run(sim::kNsecPerMsec);
  ASSERT_NE(s.task(p).cpu, 0);  // forked away from the busy CPU 0
  EXPECT_EQ(s.task(p).recent_used_cpu, 0);
  testing_support::check_invariants(*s.k, sim::kNsecPerMsec);
}

// sched_idle_cpu(): a CPU that runs only SCHED_IDLE tasks counts as idle for placement, since
// any other task preempts them at once. A sleeper on CPU 1, beside a SCHED_IDLE hog, stays
// there; were CPU 1 taken as busy, select_idle_sibling() would move it to an idle CPU (2..7)
// at a wakeup (one from a full sleep; a delayed sleeper is woken in place).
TEST(Wakeup, ACpuRunningOnlySchedIdleTasksCountsAsIdle) {
  Sim s(flat_machine(8));
  auto hog = [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  };
  kernel::TaskAttr on0;
  on0.cpus = {0};
  s.spawn(on0, hog);
  const int p = s.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(100 * sim::kNsecPerUsec);
      co_await t.nanosleep(sim::kNsecPerMsec);
    }
  }, sim::kNsecPerUsec);
  kernel::TaskAttr idle_on1;
  idle_on1.cpus = {1};
  idle_on1.policy = SCHED_IDLE;
  s.spawn(idle_on1, hog, 2 * sim::kNsecPerUsec);
  const sim::Time end = 20 * sim::kNsecPerMsec;
  s.run(end);
  EXPECT_EQ(s.task(p).cpu, 1);
  EXPECT_GT(s.task(p).stats.nr_wakeups, 10u);
  EXPECT_EQ(s.task(p).stats.nr_migrations, 0u);
  testing_support::check_invariants(*s.k, end);
}

namespace {

struct HandOff {
  bool delayed_at_wake = false;     // the blocker was still delayed when the wakee woke
  bool queued_after_wake = false;   // ... and still queued 50 us later
  int64_t woken_at = 0;
  int64_t ran_at = 0;               // when the wakee ran after its wakeup
};

// CPU 0: a blocker that runs a 4 ms tick, lets a hog run the next, and blocks 1 ms into its
// second turn (t = 9 ms): 5 ms of vruntime against the hog's 4, ineligible, so delayed. The
// hog resumes with a deadline (and protected window) at 5.4 ms of vruntime (slice 1.4 ms: two
// CPUs). From t = 10 ms the hog has passed the blocker's vruntime, which leaves the blocker
// eligible (it is below the average) with the earliest deadline (5.4 ms) and the hog
// ineligible, but still inside its request, so nothing reschedules until the tick at 12 ms.
// A sleeper woken from CPU 1 at t = 10.2 ms, placed at zero lag (deadline V + 1.4 ms), is what
// EEVDF picks once the blocker is gone.
HandOff wake_beside_an_eligible_delayed_task(kernel::KernelVersion v, bool pick_next_entity) {
  kernel::KernelConfig cfg = kernel::default_config(v);
  cfg.preempt = kernel::PreemptModel::Full;
  cfg.wakeup_pick_next_entity = pick_next_entity;
  Sim s(testing_support::exact_timers(flat_machine(2)), cfg);
  kernel::TaskAttr on0;
  on0.cpus = {0};
  HandOff h;
  kernel::UserWord sleep_word, block_word;
  // The wakee runs first and blocks at once, eligible, so it is fully dequeued.
  s.spawn(on0, [&](user::Thread& t) -> user::Program {
    co_await t.futex_wait(&sleep_word, 0);
    h.ran_at = t.now();
  });
  const int blocker = s.spawn(on0, [&](user::Thread& t) -> user::Program {
    co_await t.compute(5 * sim::kNsecPerMsec);
    co_await t.futex_wait(&block_word, 0);
  });
  s.spawn(on0, [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  kernel::TaskAttr on1;
  on1.cpus = {1};
  s.spawn(on1, [&](user::Thread& t) -> user::Program {
    const kernel::task_struct& b = s.task(blocker);
    co_await t.nanosleep(10200 * sim::kNsecPerUsec - t.now());
    h.delayed_at_wake = b.se.sched_delayed;
    h.woken_at = t.now();
    sleep_word.value = 1;
    co_await t.futex_wake(&sleep_word, 1);
    co_await t.nanosleep(50 * sim::kNsecPerUsec);
    h.queued_after_wake = b.se.on_rq;
  });
  s.run(20 * sim::kNsecPerMsec);
  testing_support::check_invariants(*s.k, 20 * sim::kNsecPerMsec);
  return h;
}

}  // namespace

// Wakeup preemption against a delayed task that became eligible with the earliest deadline:
// 6.18 and 7.0 as released ask a bare __pick_eevdf(), which picks the delayed task, so the
// wakee waits for the hog's tick; with wakeup_pick_next_entity (ac8e69e69363, 9f6d929ee2c6:
// 7.0.y, 6.18.y) the pick dequeues the delayed task, picks again, finds the wakee and
// preempts the hog at once.
TEST(Wakeup, WakeupPickNextEntityDequeuesAnEligibleDelayedTaskAndPreempts) {
  for (auto v : {kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    const HandOff off = wake_beside_an_eligible_delayed_task(v, false);
    EXPECT_TRUE(off.delayed_at_wake);
    EXPECT_TRUE(off.queued_after_wake);
    EXPECT_GE(off.ran_at, 12 * sim::kNsecPerMsec);  // at the hog's tick
    const HandOff on = wake_beside_an_eligible_delayed_task(v, true);
    EXPECT_TRUE(on.delayed_at_wake);
    EXPECT_FALSE(on.queued_after_wake);
    EXPECT_GT(on.ran_at, on.woken_at);
    EXPECT_LT(on.ran_at, on.woken_at + 50 * sim::kNsecPerUsec);
  }
}

// The setting reads true or false, names itself in an error, and is refused on 6.12, which
// no stable backport of ac8e69e69363 reached.
TEST(Wakeup, WakeupPickNextEntityIsABoolSettingRefusedOn612) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_FALSE(cfg.wakeup_pick_next_entity);
  EXPECT_EQ(kernel::set_config_key(&cfg, "wakeup_pick_next_entity", "true"), "");
  EXPECT_TRUE(cfg.wakeup_pick_next_entity);
  EXPECT_EQ(kernel::validate_config(cfg), "");
  EXPECT_EQ(kernel::set_config_key(&cfg, "wakeup_pick_next_entity", "maybe"),
            "wakeup_pick_next_entity: expected true or false (got 'maybe')");
  cfg.version = kernel::KernelVersion::V6_18;
  EXPECT_EQ(kernel::validate_config(cfg), "");
  kernel::KernelConfig old = kernel::default_config(kernel::KernelVersion::V6_12);
  EXPECT_EQ(kernel::validate_config(old), "");
  old.wakeup_pick_next_entity = true;
  EXPECT_NE(kernel::validate_config(old).find("wakeup_pick_next_entity"), std::string::npos);
}

// ttwu_queue_wakelist() -> __smp_call_single_queue(): llist_add() reports whether the
// target's call_single_queue was empty, and only then is the IPI sent; later wakeups to the
// same CPU ride on it. A waker that wakes eight sleepers pinned to one idle CPU with one
// futex_wake() pays eight ttwu bodies and one IPI send, not eight.
TEST(Wakeup, QueuedWakeupsToOneCpuShareOneIpi) {
  Sim s(flat_machine(4), kernel::default_config(kernel::KernelVersion::V6_18));
  kernel::UserWord w;
  kernel::TaskAttr on1;
  on1.cpus = {1};
  for (int i = 0; i < 8; ++i)
    s.spawn(on1, [&w](user::Thread& t) -> user::Program { co_await t.futex_wait(&w, 0); });
  kernel::TaskAttr on0;
  on0.cpus = {0};
  sim::Time before = 0, after = 0;
  int64_t woken = 0;
  s.spawn(on0, [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(sim::kNsecPerMsec);  // the sleepers are waiting by then
    before = t.now();
    woken = co_await t.futex_wake(&w, 100);
    after = t.now();
  });
  s.run(5 * sim::kNsecPerMsec);
  ASSERT_EQ(woken, 8);
  const hw::Costs& c = s.k->machine().costs;
  const sim::Time want = c.syscall_entry_ns + 8 * c.ttwu_ns + c.ipi_send_ns + c.syscall_exit_ns;
  EXPECT_EQ(after - before, want);
}

// The vector an IPI comes on: what was queued on the target's call_single_queue (a NOHZ
// kick's csd, the RT push's irq_work, cpu.max's unthrottle) comes on the call-function
// vector, like a queued wakeup; a bare resched_curr() on the reschedule vector.
TEST(Wakeup, QueuedCallsComeOnTheCallFunctionVectorAReschedOnTheRescheduleOne) {
  struct Names : kernel::TraceSink {
    std::vector<int> irqs;
    void record(const kernel::TraceRecord& r) override {
      if (r.type == kernel::TraceEvent::irq_handler_entry && r.cpu == 1) irqs.push_back(r.irq);
    }
  };
  for (unsigned bits : {kernel::IPI_NOHZ_KICK, kernel::IPI_RT_PUSH, kernel::IPI_CFSB_CSD,
                        kernel::IPI_RESCHEDULE}) {
    SCOPED_TRACE(bits);
    Sim s(testing_support::exact_timers(flat_machine(2)));
    Names names;
    s.k->set_trace_sink(&names);
    testing_support::Sampler send(s, sim::kNsecPerSec,
                                  [&](sim::Time) { kernel::smp_send_ipi(s.k.get(), 1, bits); },
                                  sim::kNsecPerMsec);
    s.run(2 * sim::kNsecPerMsec);
    ASSERT_EQ(names.irqs.size(), 1u);
    EXPECT_EQ(names.irqs[0], bits == kernel::IPI_RESCHEDULE ? kernel::kIrqReschedule
                                                            : kernel::kIrqCallFunction);
  }
}

using testing_support::IdleWakeup;
IdleWakeup wake_an_idle_cpu(bool polling, sim::Time idle_exit_ns) {
  hw::Machine m = flat_machine(4);
  m.costs.idle_polling = polling;
  m.costs.idle_exit_ns = idle_exit_ns;
  return testing_support::wake_an_idle_cpu(m, kernel::default_config(kernel::KernelVersion::V6_18));
}

// call_function_single_prep_ipi(): a wakeup queued for an idle CPU whose idle loop polls
// (MWAIT, machine.idle_polling) sends no IPI. set_nr_if_polling() sets the idle task's
// TIF_NEED_RESCHED, the CPU notices it one cache-line transfer later, and do_idle() runs the
// queued wakeup in task context (flush_smp_call_function_queue()) before schedule_idle().
// The waker pays no IPI send, the target takes no interrupt, and the wakee runs sooner than
// when the same target idles with HLT and needs the IPI.
TEST(Wakeup, AQueuedWakeupToAPollingIdleCpuSendsNoIpi) {
  const hw::Costs& c = flat_machine(4).costs;
  const IdleWakeup poll = wake_an_idle_cpu(true, c.idle_exit_ns);
  const IdleWakeup ipi = wake_an_idle_cpu(false, c.idle_exit_ns);
  EXPECT_EQ(poll.waker_cost, c.syscall_entry_ns + c.ttwu_ns + c.syscall_exit_ns);
  EXPECT_EQ(ipi.waker_cost, poll.waker_cost + c.ipi_send_ns);
  EXPECT_EQ(poll.target_irqs, 0);
  EXPECT_GT(ipi.target_irqs, 0);
  EXPECT_LT(poll.wake_to_run, ipi.wake_to_run);
}

// The monitored write wakes an MWAIT state no sooner than an interrupt would: the polled
// wakeup waits for the state's exit latency as the IPI's does.
TEST(Wakeup, APolledWakeupWaitsForTheMwaitStatesExit) {
  const IdleWakeup fast = wake_an_idle_cpu(true, sim::kNsecPerUsec);
  const IdleWakeup slow = wake_an_idle_cpu(true, 20 * sim::kNsecPerUsec);
  EXPECT_EQ(slow.target_irqs, 0);
  EXPECT_EQ(slow.wake_to_run - fast.wake_to_run, 19 * sim::kNsecPerUsec);
}

// A wakeup queued for a polling idle CPU while that CPU is already leaving its MWAIT state
// for a timer interrupt: do_idle() flushes the queue before schedule_idle(), so the wakee
// joins the pick the timer's wakeup asked for, and no interrupt comes for it.
TEST(Wakeup, APolledWakeupDueWhileAnInterruptWakesTheCpuJoinsItsPick) {
  constexpr sim::Time kUs = sim::kNsecPerUsec, kExit = 100 * kUs;
  hw::Machine m = flat_machine(2);
  m.costs.idle_polling = true;
  m.costs.idle_exit_ns = kExit;
  Sim s(testing_support::exact_timers(m), testing_support::exact_sleeps());
  testing_support::IrqCounter irqs;
  irqs.cpu = 1;
  irqs.timers = false;  // the sleeper's timer interrupt is expected
  irqs.from = 0;
  s.k->set_trace_sink(&irqs);
  kernel::UserWord w;
  sim::Time expiry = 0, waked = 0, woke = 0;
  kernel::TaskAttr on0, on1;
  on0.cpus = {0};
  on1.cpus = {1};
  s.spawn(on1, [&](user::Thread& t) -> user::Program {
    co_await t.futex_wait(&w, 0);
    woke = t.now();
  });
  s.spawn(on1, [&](user::Thread& t) -> user::Program {
    expiry = t.now() + sim::kNsecPerMsec;
    co_await t.nanosleep(sim::kNsecPerMsec);  // its timer interrupts idle CPU 1
  });
  s.spawn(on0, [&](user::Thread& t) -> user::Program {
    while (expiry == 0 || t.now() < expiry + kExit / 2) co_await t.compute(kUs);
    waked = t.now();  // CPU 1 is leaving its state for the timer
    co_await t.futex_wake(&w, 1);
  });
  s.run(2 * sim::kNsecPerMsec);
  ASSERT_GT(expiry, 0);
  EXPECT_LT(waked, expiry + kExit);
  EXPECT_EQ(irqs.irqs, 0);  // no call-function or reschedule interrupt on CPU 1
  EXPECT_GT(woke, expiry + kExit);
  EXPECT_LT(woke, expiry + kExit + 30 * kUs);
}

// record_wakee() counts on `current`, which for a wakeup from an idle CPU's interrupt (a
// sleeper's hrtimer firing where it slept) is that CPU's idle task: its wakee_flips grow
// as it wakes one task after another, as wake_wide() then reads them.
TEST(Wakeup, AnIdleCpusInterruptRecordsItsWakeesOnTheIdleTask) {
  Sim s(flat_machine(2));
  for (int i = 0; i < 4; ++i) {
    s.spawn(kernel::TaskAttr{}, [i](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.nanosleep((700 + 130 * i) * sim::kNsecPerUsec);
        co_await t.compute(10 * sim::kNsecPerUsec);
      }
    });
  }
  s.run(200 * sim::kNsecPerMsec);
  unsigned idle_flips = 0;
  for (int c = 0; c < 2; ++c) idle_flips += s.k->cpu_rq(c).idle->wakee_flips;
  EXPECT_GT(idle_flips, 10u);
}

// futex_wake() wakes from the head of the hash bucket's plist, ordered by
// min(prio, MAX_RT_PRIO) (__futex_queue()): RT waiters by priority, highest first, then the
// fair ones in arrival order. Five waiters queue in the order FIFO 10, fair A, FIFO 30,
// FIFO 20, fair B; a waker wakes one every 100 us.
TEST(Wakeup, FutexWakesRtWaitersByPriorityThenFairOnesInArrivalOrder) {
  Sim s(flat_machine(4));
  kernel::UserWord w;
  std::vector<int> order;
  auto waiter = [&](int id) {
    return [&, id](user::Thread& t) -> user::Program {
      co_await t.futex_wait(&w, 0);
      order.push_back(id);
    };
  };
  const int ids[] = {10, 0, 30, 20, 1};  // RT priorities; 0 and 1 are the fair A and B
  for (int i = 0; i < 5; ++i) {
    kernel::TaskAttr a;
    a.cpus = {i % 3};
    if (ids[i] >= 10) {
      a.policy = SCHED_FIFO;
      a.rt_priority = ids[i];
    }
    s.spawn(a, waiter(ids[i]), (i + 1) * 10 * sim::kNsecPerUsec);
  }
  kernel::TaskAttr on3;
  on3.cpus = {3};
  s.spawn(on3, [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(sim::kNsecPerMsec);
    for (int i = 0; i < 5; ++i) {
      co_await t.futex_wake(&w, 1);
      co_await t.nanosleep(100 * sim::kNsecPerUsec);
    }
  });
  s.run(3 * sim::kNsecPerMsec);
  EXPECT_EQ(order, (std::vector<int>{30, 20, 10, 0, 1}));
}

// sd_llc_shared->has_idle_cores is a hint: set when a CPU goes idle with its SMT sibling
// idle (__update_idle_core()), cleared only by a wakeup's LLC scan that finds no idle core.
// On synth:1x2x2 (one LLC, cores {0,2} and {1,3}) hogs on CPUs 0, 1 (until 5 ms) and 2 leave
// no idle core, yet the hint stays set until W's wakeup at 2 ms, on CPU 3 busy with another
// task, scans and clears it; when the hog on CPU 1 exits at 5 ms, CPU 1 goes idle beside an
// idle CPU 3 and sets it again.
TEST(Wakeup, TheIdleCoresHintIsClearedByAFailedScanAndSetWhenACoreGoesIdle) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("synth:1x2x2", &m).ok());
  Sim s(testing_support::exact_timers(m), testing_support::exact_sleeps());
  ASSERT_EQ(s.k->rq_of(0)->smt_sibling, 2);
  auto on = [](std::vector<int> cpus) {
    kernel::TaskAttr a;
    a.cpus = std::move(cpus);
    return a;
  };
  auto until = [](sim::Time end) {
    return [end](user::Thread& t) -> user::Program { co_await t.compute(end - t.now()); };
  };
  s.spawn(on({0}), until(sim::kNsecPerSec));
  s.spawn(on({1}), until(5 * sim::kNsecPerMsec));
  s.spawn(on({2}), until(sim::kNsecPerSec));
  s.spawn(on({2, 3}), [](user::Thread& t) -> user::Program {  // W: forked onto idle CPU 3
    co_await t.sleep_until(2 * sim::kNsecPerMsec);
    co_await t.compute(100 * sim::kNsecPerUsec);
  });
  s.spawn(on({3}), until(2500 * sim::kNsecPerUsec), 1500 * sim::kNsecPerUsec);
  std::vector<int> hint;
  std::vector<bool> any_idle_core;
  testing_support::Sampler sample(s, sim::kNsecPerMsec, [&](sim::Time) {
    hint.push_back(s.k->llc_has_idle_cores[0]);
    bool idle = false;
    for (int c = 0; c < 2; ++c)
      idle |= kernel::available_idle_cpu(s.k.get(), c) &&
              kernel::available_idle_cpu(s.k.get(), c + 2);
    any_idle_core.push_back(idle);
  }, sim::kNsecPerMsec);
  s.run(7 * sim::kNsecPerMsec + 1);
  ASSERT_EQ(hint.size(), 7u);                            // at 1, 2, ..., 7 ms
  EXPECT_EQ(hint[0], 1);                                 // 1 ms: stale
  EXPECT_FALSE(any_idle_core[0]);
  EXPECT_EQ(hint[2], 0);                                 // 3 ms: W's scan cleared it
  EXPECT_EQ(hint[3], 0);                                 // 4 ms: CPU 3's core is not idle
  EXPECT_EQ(hint[5], 1);                                 // 6 ms: core {1,3} went idle
  EXPECT_TRUE(any_idle_core[5]);
  testing_support::check_invariants(*s.k, 7 * sim::kNsecPerMsec);
}
