// Load balancing's packed per-CPU view (KernelImpl::lb_view) and the sched-group sums kept from
// it stay equal to the runqueues while tasks sleep, wake across LLCs (wake lists), migrate
// and are balanced, on every level (SMT, MC, PKG, NUMA).
#include <gtest/gtest.h>

#include "kernel/cpu_exec.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;

user::Program sleeper(user::Thread& t) {
  for (;;) {
    co_await t.compute(static_cast<int64_t>(t.rng().next_u64() % 200000) + 1000);
    co_await t.nanosleep(static_cast<int64_t>(t.rng().next_u64() % 300000) + 1000);
  }
}

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

// Runs sleepers and hogs on `cpus` CPUs of genoa (0 = all 384), checking the view every
// `step` until `end`; returns the number of wakeups.
uint64_t run_checking_view(int cpus, int sleepers, int hogs, sim::Time step, sim::Time end) {
  hw::Machine m;
  EXPECT_TRUE(hw::load_machine("genoa", &m).ok());
  if (cpus) {
    EXPECT_TRUE(hw::restrict_cpus(&m, cpus).ok());
  }
  Sim s(m);
  for (int i = 0; i < sleepers; ++i) s.spawn(kernel::TaskAttr{}, sleeper);
  for (int i = 0; i < hogs; ++i) {
    kernel::TaskAttr a;
    a.nice = i % 7 - 3;  // unequal weights, so cfs.load is not a multiple of one weight
    s.spawn(a, hog);
  }
  s.k->start();
  for (sim::Time t = step; t <= end; t += step) {
    s.engine.run_until(t);
    testing_support::check_lb_view(*s.k);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "at t=" << t;
      return 0;
    }
  }
  uint64_t wakeups = 0;
  for (const auto& t : s.k->tasks()) wakeups += t->stats.nr_wakeups;
  return wakeups;
}

TEST(LbView, EqualsTheRunqueuesThroughoutABusyRun) {
  // 48 CPUs: 3 LLCs of 16; checked every 50 us.
  EXPECT_GT(run_checking_view(48, 60, 20, 50000, 200 * sim::kNsecPerMsec), 10000u);
}

// The rq's copy of update_next_balance() for its lowest domain at idle intervals
// (rq::sd_idle_next_balance, what the newly-idle quick path reads) stays equal to the domain's
// last_balance + get_sd_balance_interval() while periodic balancing moves last_balance on
// and doubles and resets balance_interval, and newly-idle balancing resets it. 48 CPUs of
// genoa with sleepers and hogs, checked every 50 us.
TEST(Domains, TheIdleNextBalanceCopyFollowsTheLowestDomainThroughABusyRun) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  ASSERT_TRUE(hw::restrict_cpus(&m, 48).ok());
  Sim s(m);
  for (int i = 0; i < 60; ++i) s.spawn(kernel::TaskAttr{}, sleeper);
  for (int i = 0; i < 20; ++i) s.spawn(kernel::TaskAttr{}, hog);
  s.k->start();
  unsigned backed_off = 0, balanced = 0;  // times a lowest domain was seen so
  for (sim::Time t = 50000; t <= 200 * sim::kNsecPerMsec; t += 50000) {
    s.engine.run_until(t);
    testing_support::check_sd_idle_next_balance(*s.k);
    if (::testing::Test::HasFailure()) FAIL() << "at t=" << t;
    for (int c = 0; c < s.k->nr_cpus(); ++c) {
      const kernel::sched_domain& sd = s.k->rq_of(c)->sd[0];
      backed_off += sd.balance_interval != sd.min_interval;
      balanced += sd.last_balance != 0;
    }
  }
  EXPECT_GT(backed_off, 0u);
  EXPECT_GT(balanced, 0u);
}

// build_sched_domains()' imb_numa_nr on the 2-socket Genoa: the socket holds 12 LLCs, so
// it and the NUMA level above it (as wide as the first NUMA level) allow 12 tasks.
TEST(Domains, NumaImbalanceAllowanceIsOneTaskPerLlcOfTheNode) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  Sim s(m);
  std::string got;
  for (const auto& sd : s.k->cpu_rq(200).sd)
    got += std::string(sd.name) + (sd.numa ? "(numa)" : "") + "=" + std::to_string(sd.imb_numa_nr) + " ";
  EXPECT_EQ(got, "SMT=0 MC=0 PKG=12 NUMA(numa)=12 ");
}

// build_sched_groups() links a domain's groups as for_each_cpu_wrap(i, span, cpu) meets
// them: the CPU's own group first, then onwards from the CPU, wrapping. Ties in balancing and
// fork placement go to the group met first, so the order is part of the behaviour. On genoa
// (siblings numbered 192 apart) CPU 212 is core 20 of LLC 2 (cores 16-23) on node 0.
TEST(Domains, GroupsStartAtTheCpusOwnGroupAndWrap) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  Sim s(m);
  const auto& sd = s.k->cpu_rq(212).sd;
  ASSERT_EQ(sd.size(), 4u);
  auto firsts = [](const kernel::sched_domain& d, size_t n) {
    std::string f;
    for (size_t g = 0; g < n; ++g) f += std::to_string(d.groups[g].front()) + " ";
    return f;
  };
  EXPECT_EQ(std::vector<int>(sd[0].groups[0].begin(), sd[0].groups[0].end()),
            (std::vector<int>{212}));  // SMT: itself, then its sibling 20
  EXPECT_EQ(std::vector<int>(sd[0].groups[1].begin(), sd[0].groups[1].end()), (std::vector<int>{20}));
  EXPECT_EQ(firsts(sd[1], 8), "20 21 22 23 16 17 18 19 ");  // MC: cores 20..23, then 16..19
  ASSERT_EQ(sd[2].groups.size(), 12u);  // PKG: LLC 2, 3, ..., 11, then 0 and 1
  EXPECT_EQ(firsts(sd[2], 12), "16 24 32 40 48 56 64 72 80 88 0 8 ");
  EXPECT_EQ(firsts(sd[3], 2), "0 96 ");  // NUMA: node 0 (its own), then node 1
  EXPECT_EQ(sd[1].local, 0u);
  EXPECT_EQ(sd[3].local, 0u);
}

TEST(LbView, GroupSumsHoldOnEveryLevelOfTheFullMachine) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  Sim probe(m);
  std::string levels;
  for (const auto& sd : probe.k->cpu_rq(0).sd) levels += std::string(sd.name) + " ";
  ASSERT_EQ(levels, "SMT MC PKG NUMA ");
  EXPECT_GT(run_checking_view(0, 500, 150, sim::kNsecPerMsec, 60 * sim::kNsecPerMsec), 10000u);
}

}  // namespace

namespace {

// A topology whose levels do not nest (each core straddles two LLCs): the MC level's groups
// are then not whole cores, so update_sg_lb_stats() must add up their CPUs instead of using sums.
TEST(LbView, LevelsThatDoNotNestFallBackToAddingUpTheCpus) {
  hw::Machine m = testing_support::flat_machine(8);
  m.topo.core_of = {0, 0, 1, 1, 2, 2, 3, 3};
  m.topo.llc_of = {0, 1, 0, 1, 0, 1, 0, 1};
  Sim s(m);
  bool fallback = false;
  for (const auto& sd : s.k->cpu_rq(0).sd)
    for (const auto* sum : sd.group_sum) fallback |= sum == nullptr;
  ASSERT_TRUE(fallback);
  for (int i = 0; i < 12; ++i) s.spawn(kernel::TaskAttr{}, sleeper);
  for (int i = 0; i < 6; ++i) s.spawn(kernel::TaskAttr{}, hog);
  s.run(200 * sim::kNsecPerMsec);
  testing_support::check_invariants(*s.k, 200 * sim::kNsecPerMsec);
  uint64_t migrations = 0;
  for (const auto& t : s.k->tasks()) migrations += t->stats.nr_migrations;
  EXPECT_GT(migrations, 0u);
}

}  // namespace

namespace {

user::Program hog_forever(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

user::Program hog_for_50ms(user::Thread& t) { co_await t.compute(50 * sim::kNsecPerMsec); }

// Two SMT cores; fork placement puts hogs A and B on core 0, and two short-lived ones on
// core 1. When those exit, core 1 idles while A and B share core 0, each alone on its CPU:
// nothing is queued, so only active balancing (the idle core's CPU stops a core-0 CPU to
// push its running task, after repeated failed attempts) spreads them, as Linux does.
int cores_used_after_the_short_hogs_exit(bool kill_active_balance_threshold) {
  hw::Machine m = testing_support::flat_machine(4);
  m.topo.core_of = {0, 0, 1, 1};
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  Sim s(m, cfg);
  const int a = s.spawn({}, hog_forever);
  s.spawn({}, hog_for_50ms);
  const int b = s.spawn({}, hog_forever);
  s.spawn({}, hog_for_50ms);
  s.k->start();
  s.engine.run_until(20 * sim::kNsecPerMsec);
  EXPECT_EQ(m.topo.core_of[s.task(a).cpu], m.topo.core_of[s.task(b).cpu]) << "set-up: A and B share a core";
  if (kill_active_balance_threshold)
    for (int c = 0; c < 4; ++c)
      for (auto& sd : s.k->rq_of(c)->sd) sd.cache_nice_tries = 1000;  // never "failed enough"
  const sim::Time end = 400 * sim::kNsecPerMsec;
  s.engine.run_until(end);
  s.k->finish(end);
  testing_support::check_invariants(*s.k, end);
  return m.topo.core_of[s.task(a).cpu] == m.topo.core_of[s.task(b).cpu] ? 1 : 2;
}

TEST(ActiveBalance, AnIdleCorePullsARunningHogFromACoreRunningTwo) {
  EXPECT_EQ(cores_used_after_the_short_hogs_exit(false), 2);
  // The same run where failures never reach cache_nice_tries + 2: the hogs stay packed.
  EXPECT_EQ(cores_used_after_the_short_hogs_exit(true), 1);
}

// The CPU stopper woken on a CPU that went idle before it ran (stop_one_cpu_nowait() from a
// balance that saw a task running there): it finds nothing to move, the CPU switches to it
// and back to idle (two switches), and need_resched() ends do_idle(): the new do_idle()
// restarts the stopped tick, which without a cpuidle driver 7.0's idle loop keeps in its
// first round, and starts its idle state once both switches are done.
TEST(ActiveBalance, AStopperWokenOnAnIdleCpuRoundTripsIntoANewIdleLoop) {
  hw::Machine m = testing_support::flat_machine(2);
  m.costs.cpuidle_menu = false;
  Sim s(m);
  s.k->start();
  s.engine.run_until(20 * sim::kNsecPerMsec);
  kernel::rq* rq = s.k->rq_of(1);
  const kernel::cpuidle_cpu& c = s.k->cpuidle[1];
  ASSERT_TRUE(rq->curr->is_idle);
  ASSERT_TRUE(c.tick_stopped);
  const uint64_t irq_idle = rq->ex.irq_idle_ns;
  s.k->set_current(nullptr, -1);  // from outside the machine
  rq->active_balance = true;
  rq->push_cpu = 0;
  kernel::smp_send_ipi(s.k.get(), 1, kernel::IPI_CPU_STOP);
  s.engine.run_until(s.engine.now() + 100 * sim::kNsecPerUsec);
  const hw::Costs& costs = s.k->machine_.costs;
  EXPECT_FALSE(rq->active_balance);
  EXPECT_TRUE(rq->curr->is_idle);
  EXPECT_FALSE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);
  EXPECT_EQ(rq->nr_switches, 0u);  // idle -> stopper -> idle: no task ran
  EXPECT_GE(rq->ex.irq_idle_ns - irq_idle,
            static_cast<uint64_t>(2 * costs.context_switch_ns + costs.irq_entry_ns));
  EXPECT_FALSE(c.tick_stopped);
  EXPECT_TRUE(rq->ex.tick_timer.armed);
  EXPECT_EQ(c.time_start, rq->ex.kwork_until);
}

// NI_RANDOM (7.0): a domain's newly-idle balancing runs only as often as it succeeds. Two
// hogs pinned to CPU 0 keep the machine "overloaded" but can never be pulled, so every
// newidle balance of the sleepers' CPUs fails: their success ratio falls from the initial
// 512/1024, and most attempts are skipped, which saves the kernel time they cost.
struct NewidleRun {
  unsigned ratio = 0;
  uint64_t sys_ns = 0;
};
NewidleRun run_newidle(bool ni_random) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_EQ(kernel::set_config_key(&cfg, "sched_feat.NI_RANDOM", ni_random ? "true" : "false"), "");
  Sim s(testing_support::flat_machine(4), cfg);
  kernel::TaskAttr pinned;
  pinned.cpus = {0};
  s.spawn(pinned, hog_forever);
  s.spawn(pinned, hog_forever);
  for (int c = 1; c < 4; ++c) {
    kernel::TaskAttr a;
    a.cpus = {c};
    s.spawn(a, [](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.compute(20 * sim::kNsecPerUsec);
        co_await t.nanosleep(200 * sim::kNsecPerUsec);
      }
    });
  }
  s.run(sim::kNsecPerSec);
  testing_support::check_invariants(*s.k, sim::kNsecPerSec);
  NewidleRun r;
  r.ratio = s.k->rq_of(1)->sd.back().newidle_ratio;
  for (int c = 1; c < 4; ++c) r.sys_ns += s.k->cpu_rq(c).ex.sys_ns + s.k->cpu_rq(c).ex.irq_idle_ns;
  return r;
}

TEST(NewidleBalance, NiRandomTriesAFailingDomainLessOften) {
  const NewidleRun with = run_newidle(true), without = run_newidle(false);
  EXPECT_LT(with.ratio, 64u);
  EXPECT_LT(without.ratio, 64u);  // the statistics are kept either way, as in Linux
  EXPECT_LT(static_cast<double>(with.sys_ns), 0.8 * static_cast<double>(without.sys_ns))
      << with.sys_ns << " vs " << without.sys_ns;
}

// Newly-idle balancing is gated by each domain's measured cost (max_newidle_lb_cost, what
// the model charged for its last dearest pass) and by avg_idle, capped at twice the CPU's
// dearest pass (max_idle_balance_cost). A machine whose newidle pass costs 2 ms: CPU 1
// sleeps 10 ms at a time while two hogs pinned to CPU 0 keep the machine overloaded. The
// first attempt is not held back (a domain not yet balanced costs 0); it raises the cap on
// avg_idle to 4 ms, so a CPU idle that long goes on balancing, as in Linux. Counted with
// the domain's newidle_call (NI_RANDOM off: every attempt counts once, none is skipped).
struct LongSleeper {
  unsigned attempts = 0;        // newly-idle balances of CPU 1's domain
  uint64_t recorded_cost = 0;   // its max_newidle_lb_cost
  uint64_t max_idle_balance_cost = 0;
};
LongSleeper newidle_of_a_long_sleeper(sim::Time newidle_balance_ns) {
  hw::Machine m = testing_support::flat_machine(2);
  m.costs.newidle_balance_ns = newidle_balance_ns;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_EQ(kernel::set_config_key(&cfg, "sched_feat.NI_RANDOM", "false"), "");
  Sim s(m, cfg);
  kernel::TaskAttr on0, on1;
  on0.cpus = {0};
  on1.cpus = {1};
  s.spawn(on0, hog_forever);
  s.spawn(on0, hog_forever);
  s.spawn(on1, [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(20 * sim::kNsecPerUsec);
      co_await t.nanosleep(10 * sim::kNsecPerMsec);
    }
  });
  s.run(500 * sim::kNsecPerMsec);
  testing_support::check_invariants(*s.k, 500 * sim::kNsecPerMsec);
  const kernel::rq* rq = s.k->rq_of(1);
  return {rq->sd[0].newidle_call - 512, rq->sd[0].max_newidle_lb_cost, rq->max_idle_balance_cost};
}

TEST(NewidleBalance, AnExpensiveDomainIsStillBalancedByACpuIdleLongerThanItsMeasuredCost) {
  const LongSleeper r = newidle_of_a_long_sleeper(2 * sim::kNsecPerMsec);
  // About one attempt per sleep (some 45 sleeps); only the first few, while avg_idle climbs
  // from its boot value (1 ms) past 2 ms, are held back.
  EXPECT_GT(r.attempts, 30u);
  EXPECT_LT(r.attempts, 512u);  // no halving of the counts yet
  // The domain's recorded cost is the pass's charge: 2 ms and a cache line per CPU.
  const hw::Machine m = testing_support::flat_machine(2);
  EXPECT_EQ(r.recorded_cost, static_cast<uint64_t>(2 * sim::kNsecPerMsec + 2 * m.costs.line_llc_ns));
  EXPECT_EQ(r.max_idle_balance_cost, r.recorded_cost);
}

// SM_IDLE (3dcac251b066, 6.12): an idle CPU told to reschedule with nothing queued goes back
// to idle without a pick, so without the newly-idle balance a pick would run, though two
// hogs on CPU 0 keep the machine overloaded.
TEST(NewidleBalance, AnIdleCpuReschedWithNothingQueuedSkipsThePick) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_EQ(kernel::set_config_key(&cfg, "sched_feat.NI_RANDOM", "false"), "");
  Sim s(testing_support::flat_machine(2), cfg);
  kernel::TaskAttr on0;
  on0.cpus = {0};
  s.spawn(on0, hog_forever);
  s.spawn(on0, hog_forever);
  s.run(20 * sim::kNsecPerMsec);
  kernel::rq* rq = s.k->rq_of(1);
  ASSERT_TRUE(rq->curr->is_idle);
  const unsigned before = rq->sd[0].newidle_call;
  s.k->set_current(nullptr, -1);  // from outside the machine
  kernel::resched_curr(rq);       // an IPI; its return to the idle loop calls schedule_idle()
  ASSERT_TRUE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);
  s.engine.run_until(s.k->now() + 50 * sim::kNsecPerUsec);
  EXPECT_FALSE(rq->curr->thread_flags & kernel::TIF_NEED_RESCHED);  // schedule_idle() ran
  EXPECT_TRUE(rq->curr->is_idle);
  EXPECT_EQ(rq->nr_switches, 0u);
  EXPECT_EQ(rq->sd[0].newidle_call, before);
}

// update_newidle_cost() from the periodic balance: a domain's max_newidle_lb_cost decays by
// 253/256 once more than a second has passed since it was set or last decayed, and the
// CPU's max_idle_balance_cost follows the sum (at least the migration cost). CPU 1 runs a
// pinned hog, so it never balances newly idle; its domain starts with a recorded 1 ms.
TEST(NewidleBalance, MeasuredCostDecaysAboutOnePercentASecondAtThePeriodicBalance) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  Sim s(testing_support::flat_machine(2), cfg);
  kernel::TaskAttr on0, on1;
  on0.cpus = {0};
  on1.cpus = {1};
  s.spawn(on0, hog_forever);
  s.spawn(on1, hog_forever);
  kernel::rq* rq = s.k->rq_of(1);
  rq->sd[0].max_newidle_lb_cost = 1000000;
  const sim::Time end = 3500 * sim::kNsecPerMsec;  // decays after ~1, ~2 and ~3 s
  s.run(end);
  testing_support::check_invariants(*s.k, end);
  uint64_t expect = 1000000;
  for (int i = 0; i < 3; ++i) expect = expect * 253 / 256;
  EXPECT_EQ(rq->sd[0].max_newidle_lb_cost, expect);
  EXPECT_EQ(rq->max_idle_balance_cost, expect);
  // CPU 0's domain never recorded a cost: its CPU stays at the migration cost floor.
  EXPECT_EQ(s.k->rq_of(0)->sd[0].max_newidle_lb_cost, 0u);
  EXPECT_EQ(s.k->rq_of(0)->max_idle_balance_cost, 500000u);
}

// The NOHZ idle balance runs the due balance of every idle CPU on the kicked one
// (_nohz_idle_balance() -> sched_balance_domains() on their runqueues): the kicked CPU pays
// for each pass, its own included, and the CPUs balanced for are left in their idle states.
TEST(NohzIdleBalance, TheKickedCpuPaysForThePassesItRunsForIdleCpus) {
  Sim s(testing_support::flat_machine(4));
  s.k->start();
  s.engine.run_until(100 * sim::kNsecPerMsec);
  const sim::Time now = s.engine.now();
  sim::Time kwork[4];
  uint64_t irq_idle[4];
  for (int c = 0; c < 4; ++c) {
    kernel::rq* rq = s.k->rq_of(c);
    ASSERT_TRUE(rq->curr->is_idle);
    ASSERT_LE(rq->ex.kwork_until, now);
    rq->next_balance = 0;  // every domain of every CPU due
    for (kernel::sched_domain& sd : rq->sd) sd.last_balance = 0;
    kwork[c] = rq->ex.kwork_until;
    irq_idle[c] = rq->ex.irq_idle_ns;
  }
  kernel::rq* ilb = s.k->rq_of(0);
  s.k->set_current(ilb->curr, 0);
  s.k->nohz_flags = kernel::NOHZ_BALANCE_KICK;
  kernel::nohz_idle_balance(ilb);
  for (int c = 1; c < 4; ++c) {
    EXPECT_EQ(s.k->rq_of(c)->ex.kwork_until, kwork[c]) << "CPU " << c;
    EXPECT_EQ(s.k->rq_of(c)->ex.irq_idle_ns, irq_idle[c]) << "CPU " << c;
  }
  EXPECT_EQ(ilb->ex.kwork_until, now + 4 * s.k->machine_.costs.newidle_balance_ns);
}

// A NOHZ kick that finds its CPU busy (a task woke there while the IPI was on its way) does
// no balancing: nohz_csd_func() drops the kick's flags and raises SCHED_SOFTIRQ only on an
// idle CPU, so the running task pays the interrupt alone and the idle CPUs stay unbalanced.
TEST(NohzIdleBalance, AKickReachingABusyCpuBalancesNothing) {
  Sim s(testing_support::flat_machine(4));
  kernel::TaskAttr on0;
  on0.cpus = {0};
  s.spawn(on0, hog_forever);
  s.k->start();
  s.engine.run_until(101 * sim::kNsecPerMsec);  // between two ticks (HZ=250)
  for (int c = 0; c < 4; ++c) {
    kernel::rq* rq = s.k->rq_of(c);
    rq->next_balance = 0;
    for (kernel::sched_domain& sd : rq->sd) sd.last_balance = 0;
  }
  kernel::rq* busy = s.k->rq_of(0);
  ASSERT_FALSE(busy->curr->is_idle);
  const uint64_t sys = busy->ex.sys_ns;
  s.k->set_current(nullptr, -1);  // from outside the machine
  s.k->nohz_flags = kernel::NOHZ_BALANCE_KICK;
  kernel::smp_send_ipi(s.k.get(), 0, kernel::IPI_NOHZ_KICK);
  s.engine.run_until(s.engine.now() + 50 * sim::kNsecPerUsec);
  const hw::Costs& costs = s.k->machine_.costs;
  EXPECT_EQ(busy->ex.sys_ns - sys, static_cast<uint64_t>(costs.irq_entry_ns + costs.irq_exit_ns));
  for (int c = 1; c < 4; ++c)
    for (const kernel::sched_domain& sd : s.k->rq_of(c)->sd)
      EXPECT_EQ(sd.last_balance, 0u) << "CPU " << c;
}

// The walk stops once this CPU has work: a sleep timer of the kicked CPU whose interrupt comes
// during the second pass wakes its task there, and need_resched() ends the walk before the
// third (Linux's check at each CPU of the loop). The rest is left to a later kick.
TEST(NohzIdleBalance, ASleepTimerDueOnTheKickedCpuEndsTheWalk) {
  Sim s(testing_support::flat_machine(4), testing_support::exact_sleeps());
  kernel::TaskAttr on0;
  on0.cpus = {0};
  s.spawn(on0, [](user::Thread& t) -> user::Program {
    co_await t.nanosleep(200 * sim::kNsecPerMsec);
  });
  s.k->start();
  s.engine.run_until(100 * sim::kNsecPerMsec);
  ASSERT_EQ(s.k->hrtimer_bases[0].heap.size(), 1u);
  const sim::Time pass = s.k->machine_.costs.newidle_balance_ns;
  const sim::Time expires = s.k->hrtimer_bases[0].heap.front().expires;
  s.engine.run_until(expires - pass * 3 / 2);
  const sim::Time now = s.engine.now();
  for (int c = 0; c < 4; ++c) {
    kernel::rq* rq = s.k->rq_of(c);
    ASSERT_TRUE(rq->curr->is_idle);
    ASSERT_LE(rq->ex.kwork_until, now);
    rq->next_balance = 0;
    for (kernel::sched_domain& sd : rq->sd) sd.last_balance = 0;
  }
  kernel::rq* ilb = s.k->rq_of(0);
  s.k->set_current(ilb->curr, 0);
  s.k->nohz_flags = kernel::NOHZ_BALANCE_KICK;
  kernel::nohz_idle_balance(ilb);
  EXPECT_EQ(ilb->ex.kwork_until, now + 2 * pass);
}

// A queued task that a balance moves goes on waiting: its runqueue wait (schedstat wait_max,
// wait_count) runs from its first enqueue to when it first runs, as update_stats_wait_end_fair()
// keeps it across the move. CPU 0 runs a pinned nice -20 hog and CPU 1 a pinned 3 ms task;
// a nice 19 task is forked onto CPU 0 (both busy), waits there (until the tick at 4 ms at
// the earliest), and is pulled when CPU 1 idles at 3 ms (by its newidle balance, which
// NI_RANDOM would skip now and then).
TEST(Migration, AQueuedTaskKeepsItsRunqueueWaitWhenMoved) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  ASSERT_EQ(kernel::set_config_key(&cfg, "sched_feat.NI_RANDOM", "false"), "");
  Sim s(testing_support::flat_machine(2), cfg);
  kernel::TaskAttr on0, on1, low;
  on0.cpus = {0};
  on0.nice = -20;
  on1.cpus = {1};
  low.nice = 19;
  s.spawn(on0, hog_forever);
  s.spawn(on1, [](user::Thread& t) -> user::Program { co_await t.compute(3 * sim::kNsecPerMsec); });
  const int moved = s.spawn(low, hog_forever, 100 * sim::kNsecPerUsec);
  const sim::Time end = 10 * sim::kNsecPerMsec;
  s.run(end);
  const kernel::task_struct& p = s.task(moved);
  ASSERT_EQ(p.cpu, 1) << "set-up: pulled to CPU 1";
  EXPECT_EQ(p.stats.nr_migrations, 1u);
  EXPECT_EQ(p.stats.wait_count, 1u);
  EXPECT_GT(p.stats.wait_max_ns, 2800 * sim::kNsecPerUsec);
  testing_support::check_invariants(*s.k, end);
}

}  // namespace
