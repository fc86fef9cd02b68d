// Fork placement pinned against fair.c's slow path: sched_balance_find_dst_cpu() walks the
// domains from the top, sched_balance_find_dst_group() keeps the task near its parent
// unless another group is clearly idler, sched_balance_find_dst_group_cpu() picks the CPU.
// Most tests here fork from outside the machine (launcher=outside: from each thread's first
// allowed CPU, CPU 0); the last ones pin the launcher task that scenarios run (kernel/fork.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;
using testing_support::flat_machine;

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(sim::kNsecPerSec);
}

user::Program runs_for(user::Thread& t, sim::Time ns) { co_await t.compute(ns); }

// Two LLCs of four CPUs (no SMT) in one socket: domains MC (4 CPUs) and PKG (8 CPUs, two
// LLC groups).
hw::Machine two_llcs() {
  hw::Machine m = flat_machine(8);
  m.topo.llc_of = {0, 0, 0, 0, 1, 1, 1, 1};
  return m;
}

// On the two-socket Genoa every domain level balances forks (AMD sets node_reclaim_distance
// to 32, so the NUMA level keeps SD_BALANCE_FORK). Within a node each fork goes to the LLC
// with the most idle CPUs. Across nodes, adjust_numa_imbalance() keeps a fork on its
// parent's node while that node would run at most imb_numa_nr tasks (12 here) and the idle
// counts differ by at most NUMA_IMBALANCE_MIN (2): forks 0-2 stay on node 0 (idle 192:192,
// 191:192, 190:192), fork 3 crosses (189:192), fork 4 stays (189:191), fork 5 crosses.
TEST(Fork, StaysOnTheParentsNodeWhileTheNodesDifferByAtMostTwoIdleCpus) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  Sim s(m);
  std::vector<int> pids;
  for (int i = 0; i < 6; ++i) pids.push_back(s.spawn({}, hog));
  const sim::Time end = 6 * m.costs.clone_ns + sim::kNsecPerUsec;  // forked clone_ns apart
  s.run(end);
  std::vector<int> nodes;
  std::set<int> llcs;
  for (int p : pids) {
    nodes.push_back(m.topo.socket_of[s.task(p).cpu]);
    llcs.insert(m.topo.llc_of[s.task(p).cpu]);
  }
  EXPECT_EQ(nodes, (std::vector<int>{0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(llcs.size(), 6u) << "each in an LLC of its own";
  testing_support::check_invariants(*s.k, end);
}

// The set-up of the next two tests: hogs pinned to CPUs 0-3, CPU 5 idle from 1 ms and CPU 6
// from 2 ms, and a hog forked at 3 ms (its pid returned).
int fork_beside_recent_idles(Sim& s) {
  for (int c = 0; c < 4; ++c) {
    kernel::TaskAttr a;
    a.cpus = {c};
    s.spawn(a, hog);
  }
  kernel::TaskAttr on5, on6;
  on5.cpus = {5};
  on6.cpus = {6};
  s.spawn(on5, [](user::Thread& t) { return runs_for(t, sim::kNsecPerMsec); });
  s.spawn(on6, [](user::Thread& t) { return runs_for(t, 2 * sim::kNsecPerMsec); });
  return s.spawn({}, hog, 3 * sim::kNsecPerMsec);
}

// In the idlest group the fork takes the idle CPU that went idle last (its caches are the
// warmest; all idle CPUs are in the same idle state here), not the first idle one. CPUs 0-3
// run pinned hogs, so the parent's LLC has no idle CPU; in the other LLC, CPU 5 went idle at
// 1 ms and CPU 6 at 2 ms, while CPUs 4 and 7 have been idle since the start.
TEST(Fork, TakesTheMostRecentlyIdledCpuOfTheIdlestGroup) {
  Sim s(two_llcs());
  const int p = fork_beside_recent_idles(s);
  s.run(3 * sim::kNsecPerMsec + sim::kNsecPerUsec);
  EXPECT_EQ(s.task(p).cpu, 6);
  testing_support::check_invariants(*s.k, 3 * sim::kNsecPerMsec + sim::kNsecPerUsec);
}

// With a deep idle state, the fork prefers a CPU in the shallower state over one that went
// idle later but sits in the deep one (idle_get_state()'s exit latency decides first). As
// above, but CPU 6 is in the deep state when the fork comes.
TEST(Fork, PrefersTheShallowestIdleStateOverTheMostRecentlyIdledCpu) {
  hw::Machine m = two_llcs();
  m.costs.cpuidle_menu = true;
  m.costs.idle_deep_exit_ns = 100 * sim::kNsecPerUsec;
  Sim s(m);
  const int p = fork_beside_recent_idles(s);
  s.run(3 * sim::kNsecPerMsec - sim::kNsecPerUsec);
  for (int c = 4; c < 8; ++c)
    s.k->cpuidle[static_cast<size_t>(c)].state = c == 5 ? kernel::kIdleShallow : kernel::kIdleDeep;
  s.run(3 * sim::kNsecPerMsec + sim::kNsecPerUsec);
  EXPECT_EQ(s.task(p).cpu, 5);
  testing_support::check_invariants(*s.k, 3 * sim::kNsecPerMsec + sim::kNsecPerUsec);
}

// Forks whose affinity covers part of a group (Adam Li's case for 82d6e01a0699): five hogs
// allowed on CPUs 0-4 of two_llcs(), forked from CPU 0. 7.0 counts only the allowed CPUs of
// the other LLC (CPU 4: one idle CPU), so the forks fill CPUs 0-3 before going there, one a
// CPU. 6.12 and 6.18 count the whole LLC (four idle CPUs, then three), so it looks idler
// than the parent's whenever the parent's has fewer idle CPUs: the second, fourth and fifth
// forks all go to CPU 4, while two CPUs of the parent's LLC stay idle.
TEST(Fork, CountsOnlyTheAllowedCpusOfAGroupFrom70) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                 kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(two_llcs(), kernel::default_config(v));
    kernel::TaskAttr a;
    a.cpus = {0, 1, 2, 3, 4};
    for (int i = 0; i < 5; ++i) s.spawn(a, hog);
    const sim::Time end = 5 * s.k->machine().costs.clone_ns + sim::kNsecPerUsec;
    s.run(end);
    std::vector<unsigned> queued;
    for (int c = 0; c < 5; ++c) queued.push_back(s.k->cpu_rq(c).nr_running);
    const bool v70 = v == kernel::KernelVersion::V7_0;
    EXPECT_EQ(queued[4], v70 ? 1u : 3u);
    EXPECT_EQ(std::count(queued.begin(), queued.begin() + 4, 0u), v70 ? 0 : 2);
    testing_support::check_invariants(*s.k, end);
  }
}

// With both LLCs overloaded, a fork leaves its parent's LLC only if that LLC's average load
// exceeds the other's by more than imbalance_pct (117%) and by a sixth of a nice-0 task per
// CPU: 7 hogs against 6 (avg_load 1792 against 1536) keep it local, 8 against 6 (2048 against
// 1536) send it over. Returns the LLC the fork went to.
int llc_of_fork_with(int hogs_in_parents_llc) {
  Sim s(two_llcs());
  for (int i = 0; i < hogs_in_parents_llc; ++i) {
    kernel::TaskAttr a;
    a.cpus = {0, 1, 2, 3};
    s.spawn(a, hog);
  }
  for (int i = 0; i < 6; ++i) {
    kernel::TaskAttr a;
    a.cpus = {4, 5, 6, 7};
    s.spawn(a, hog);
  }
  // PELT's load averages of always-runnable hogs converge on their weight within ~300 ms.
  const sim::Time at = 400 * sim::kNsecPerMsec;
  const int p = s.spawn({}, hog, at);
  s.run(at + sim::kNsecPerUsec);
  testing_support::check_invariants(*s.k, at + sim::kNsecPerUsec);
  return s.task(p).cpu / 4;
}

TEST(Fork, LeavesABusyLocalGroupOnlyBeyondTheImbalanceMargin) {
  EXPECT_EQ(llc_of_fork_with(7), 0);
  EXPECT_EQ(llc_of_fork_with(8), 1);
}

// Runs s until t and counts the runnable tasks of every CPU (the forked ones, here).
unsigned runnable_after(Sim& s, sim::Time t) {
  s.engine.run_until(t);
  unsigned n = 0;
  for (int c = 0; c < s.k->nr_cpus(); ++c) n += s.k->cpu_rq(c).nr_running;
  return n;
}

// One parent forks every thread, in the order they were created: each at its start time or
// clone_ns after the previous fork, whichever is later. So threads that share a start are
// forked clone_ns apart, and one created after a later-starting thread waits for it.
TEST(Fork, OneParentForksEveryThreadInCreationOrderCloneNsApart) {
  hw::Machine m = flat_machine(4);
  m.costs.clone_ns = 10 * sim::kNsecPerUsec;
  Sim s(m);
  for (int i = 0; i < 3; ++i) s.spawn({}, hog);
  s.spawn({}, hog, sim::kNsecPerMsec);
  s.spawn({}, hog);  // start 0, but created after the 1 ms one: forked at 1 ms + 10 us
  s.k->start();
  auto forked_by = [&](sim::Time t) { return runnable_after(s, t); };
  EXPECT_EQ(forked_by(5 * sim::kNsecPerUsec), 1u);
  EXPECT_EQ(forked_by(15 * sim::kNsecPerUsec), 2u);
  EXPECT_EQ(forked_by(25 * sim::kNsecPerUsec), 3u);
  EXPECT_EQ(forked_by(sim::kNsecPerMsec - 1), 3u);
  EXPECT_EQ(forked_by(sim::kNsecPerMsec), 4u);
  EXPECT_EQ(forked_by(sim::kNsecPerMsec + 10 * sim::kNsecPerUsec - 1), 4u);
  EXPECT_EQ(forked_by(sim::kNsecPerMsec + 10 * sim::kNsecPerUsec), 5u);
}

// A thread that was there before the scenario (the machine's background activity) sleeps
// until its start time and is not forked by the launching parent: the forks keep their pace.
TEST(Fork, PreexistingThreadsSleepUntilTheirStartAndDoNotDelayTheForks) {
  hw::Machine m = flat_machine(4);
  m.costs.clone_ns = 10 * sim::kNsecPerUsec;
  Sim s(m);
  kernel::TaskAttr pre;
  pre.preexisting = true;
  s.spawn({}, hog);
  s.spawn(pre, hog, 5 * sim::kNsecPerUsec);
  s.spawn(pre, hog, 5 * sim::kNsecPerUsec);
  s.spawn({}, hog);
  s.k->start();
  auto running_at = [&](sim::Time t) { return runnable_after(s, t); };
  EXPECT_EQ(running_at(1), 1u);  // the first fork only
  EXPECT_EQ(running_at(5 * sim::kNsecPerUsec - 1), 1u);
  EXPECT_EQ(running_at(10 * sim::kNsecPerUsec - 1), 3u);  // + the two sleepers, woken at 5 us
  EXPECT_EQ(running_at(10 * sim::kNsecPerUsec), 4u);  // the second fork, clone_ns after the first
}

user::Program blip_then_sleep(user::Thread& t) {
  co_await t.compute(sim::kNsecPerUsec);
  co_await t.nanosleep(10 * sim::kNsecPerSec);
}

// A preexisting thread is a long sleeper, not a new task: when it has woken, run a little and
// slept again, it leaves almost no load, so later forks go where they would without it. (A
// forked thread would start at full load and half the free utilisation.)
TEST(Fork, PreexistingThreadsLeaveNoLoadToMoveTheForks) {
  auto placements = [](bool with_sleepers) {
    hw::Machine m = flat_machine(4);
    m.costs.clone_ns = 10 * sim::kNsecPerUsec;
    Sim s(m);
    kernel::TaskAttr pre;
    pre.preexisting = true;
    if (with_sleepers)
      for (int c = 0; c < 2; ++c) {
        pre.cpus = {c};
        s.spawn(pre, blip_then_sleep);
      }
    std::vector<int> pids;
    for (int i = 0; i < 3; ++i) pids.push_back(s.spawn({}, hog, 100 * sim::kNsecPerUsec));
    s.k->start();
    s.engine.run_until(sim::kNsecPerMsec);
    std::vector<int> cpus;
    for (int pid : pids) cpus.push_back(s.task(pid).cpu);
    return cpus;
  };
  EXPECT_EQ(placements(true), placements(false));
}

// The launcher task (launcher=task, the default outside kernel tests).
kernel::KernelConfig v7() { return kernel::default_config(kernel::KernelVersion::V7_0); }

// The launcher is a task of its own process: it forks each thread from the CPU it runs on,
// a clone() of clone_ns apiece, so while it forks, its CPU is busy and the children go to
// the idle ones; then it sleeps in pthread_join(). tasks() stays in pid order.
TEST(Launcher, ForksFromItsOwnBusyCpuCloneNsApieceThenSleeps) {
  hw::Machine m = flat_machine(4);
  m.costs.clone_ns = 10 * sim::kNsecPerUsec;
  Sim s(m, v7(), /*launcher_task=*/true);
  std::vector<int> pids;
  for (int i = 0; i < 3; ++i) pids.push_back(s.spawn({}, hog));
  const sim::Time end = sim::kNsecPerMsec;
  s.run(end);
  const kernel::task_struct* l = s.k->launcher();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->comm, "launcher");
  EXPECT_NE(l->tgid, s.tgid);
  EXPECT_EQ(l->__state, kernel::TASK_INTERRUPTIBLE);  // in pthread_join() for good
  EXPECT_EQ(l->stats.nr_syscalls, 4u);                // three clone()s and the futex wait
  EXPECT_GE(l->stats.run_ns, 3 * 10 * sim::kNsecPerUsec);
  EXPECT_LT(l->stats.run_ns, 3 * 10 * sim::kNsecPerUsec + 10 * sim::kNsecPerUsec);
  std::set<int> cpus;
  for (int p : pids) {
    EXPECT_NE(s.task(p).cpu, l->cpu) << "pid " << p << " forked onto the launcher's busy CPU";
    cpus.insert(s.task(p).cpu);
  }
  EXPECT_EQ(cpus.size(), 3u);
  for (size_t i = 1; i < s.k->tasks().size(); ++i)
    EXPECT_LT(s.k->tasks()[i - 1]->pid, s.k->tasks()[i]->pid);
  testing_support::check_invariants(*s.k, end);
}

// Asleep, the launcher leaves its load and utilisation on its CPU, decaying (blocked load,
// as any sleeper's), which the balancer and later forks see there; a parent off the machine
// leaves none.
TEST(Launcher, LeavesDecayingLoadOnItsCpuWhenItSleeps) {
  hw::Machine m = flat_machine(4);
  Sim s(m, v7(), /*launcher_task=*/true);
  s.spawn({}, hog);
  s.k->start();
  s.engine.run_until(sim::kNsecPerMsec);
  const kernel::task_struct* l = s.k->launcher();
  ASSERT_NE(l, nullptr);
  const kernel::rq& rq = s.k->cpu_rq(l->cpu);
  EXPECT_EQ(rq.nr_running, 0u);
  const unsigned long util_1ms = rq.cfs.avg.util_avg;
  EXPECT_GT(util_1ms, 100u);  // a new task starts at half the CPU's spare capacity
  EXPECT_GT(rq.cfs.avg.load_avg, 0u);
  s.engine.run_until(100 * sim::kNsecPerMsec);
  // Decays by half every 32 ms once the CPU's averages are brought up to date (NOHZ idle
  // balancing decays blocked load of idle CPUs).
  EXPECT_LT(s.k->cpu_rq(l->cpu).cfs.avg.util_avg, util_1ms / 2);
}

// Runs 5 ms and notes when it first ran.
user::Program runs_5ms(user::Thread& t, sim::Time* first_ran) {
  *first_ran = t.now();
  co_await t.compute(5 * sim::kNsecPerMsec);
}

// The launcher is a fair task like any other: an RT child forked on its CPU preempts it at
// once, and the next fork waits until the child is done (here on one CPU). So a
// higher-priority second child first runs after the first one, not at once, as it would if
// both were forked from outside the machine.
TEST(Launcher, AnRtChildOnItsCpuDelaysTheNextFork) {
  auto second_child_first_runs_at = [](bool launcher_task) {
    hw::Machine m = flat_machine(1);
    m.costs.clone_ns = 10 * sim::kNsecPerUsec;
    Sim s(m, v7(), launcher_task);
    kernel::TaskAttr fifo;
    fifo.policy = SCHED_FIFO;
    fifo.rt_priority = 10;
    sim::Time first = -1, second = -1;
    s.spawn(fifo, [&](user::Thread& t) { return runs_5ms(t, &first); });
    fifo.rt_priority = 20;
    s.spawn(fifo, [&](user::Thread& t) { return runs_5ms(t, &second); });
    s.run(20 * sim::kNsecPerMsec);
    EXPECT_GE(first, 0);
    return second;
  };
  EXPECT_GE(second_child_first_runs_at(true), 5 * sim::kNsecPerMsec);
  EXPECT_LT(second_child_first_runs_at(false), 100 * sim::kNsecPerUsec);
}

// A FIFO child of the fair launcher is placed as the fair task it is at the fork (glibc sets
// an explicit policy after clone()), so it goes to the idle CPU; placed as RT from the start
// it would stay on the launcher's CPU, whose current task is not RT (select_task_rq_rt()).
TEST(Launcher, PlacesAnRtChildAsTheFairTaskItIsAtTheFork) {
  Sim s(flat_machine(2), v7(), /*launcher_task=*/true);
  kernel::TaskAttr fifo;
  fifo.policy = SCHED_FIFO;
  fifo.rt_priority = 10;
  const int child = s.spawn(fifo, hog);
  s.run(sim::kNsecPerMsec);
  ASSERT_NE(s.k->launcher(), nullptr);
  EXPECT_NE(s.task(child).cpu, s.k->launcher()->cpu);
  EXPECT_EQ(s.task(child).stats.nr_migrations, 0u);
}

// A thread created after the launcher went to wait in pthread_join() wakes it, and it forks
// that one too.
TEST(Launcher, ForksAThreadCreatedAfterItWentToWait) {
  Sim s(flat_machine(2), v7(), /*launcher_task=*/true);
  s.spawn({}, hog);
  s.k->start();
  s.engine.run_until(sim::kNsecPerMsec);
  ASSERT_EQ(s.k->launcher()->__state, kernel::TASK_INTERRUPTIBLE);
  sim::Time first_ran = -1;
  s.spawn({}, [&](user::Thread& t) { return runs_5ms(t, &first_ran); });
  s.engine.run_until(2 * sim::kNsecPerMsec);
  EXPECT_GE(first_ran, sim::kNsecPerMsec);
  EXPECT_LT(first_ran, sim::kNsecPerMsec + 100 * sim::kNsecPerUsec);
  EXPECT_EQ(s.k->launcher()->__state, kernel::TASK_INTERRUPTIBLE);  // waiting again
  EXPECT_EQ(s.k->warnings().count, 0u);
}

}  // namespace
