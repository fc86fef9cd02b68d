// Task groups (CONFIG_FAIR_GROUP_SCHED) pinned against Linux: CPU is shared between groups
// first, by their shares, and between the tasks of a group second; a group's shares are
// split over the CPUs it runs on (calc_group_shares()); the balancer moves group tasks.
#include <gtest/gtest.h>

#include <vector>

#include "kernel/sched/sched.h"
#include "report/results.h"
#include "scenario/experiment.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"

using group_support::hog;
using group_support::in_group;
using group_support::kVersions;
using group_support::run_share;
using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kSec = sim::kNsecPerSec;

}  // namespace

// One task in group A, three in group B, one CPU: A's task gets half the CPU (the groups
// have equal shares), each of B's a sixth. Flat, it would get a quarter.
TEST(Group, TwoGroupsOfUnequalSizeShareACpuByGroupWeightNotTaskCount) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int a = s.k->create_task_group("/a");
    const int b = s.k->create_task_group("/b");
    const int ta = s.spawn(in_group(a), hog);
    std::vector<int> tb;
    for (int i = 0; i < 3; ++i) tb.push_back(s.spawn(in_group(b), hog));
    s.run(3 * kSec);
    EXPECT_NEAR(run_share(s, ta, 3 * kSec), 0.5, 0.02) << kernel::version_name(v);
    for (int pid : tb) EXPECT_NEAR(run_share(s, pid, 3 * kSec), 1.0 / 6, 0.02) << kernel::version_name(v);
    const auto stats = s.k->task_group_stats();
    ASSERT_EQ(stats.size(), 2u);
    EXPECT_NEAR(static_cast<double>(stats[0].usage_ns), static_cast<double>(s.task(ta).stats.run_ns),
                0.01 * static_cast<double>(kSec));
    testing_support::check_invariants(*s.k, 3 * kSec);
  }
}

// tg->shares weigh the groups: 2048 against 1024 gives two thirds to the first.
TEST(Group, GroupSharesSetTheSplitBetweenGroups) {
  Sim s(flat_machine(1));
  const int a = s.k->create_task_group("/a");
  const int b = s.k->create_task_group("/b");
  s.k->set_task_group_shares(a, 2048);
  const int ta = s.spawn(in_group(a), hog);
  const int tb1 = s.spawn(in_group(b), hog);
  const int tb2 = s.spawn(in_group(b), hog);
  s.run(3 * kSec);
  EXPECT_NEAR(run_share(s, ta, 3 * kSec), 2.0 / 3, 0.02);
  EXPECT_NEAR(run_share(s, tb1, 3 * kSec) + run_share(s, tb2, 3 * kSec), 1.0 / 3, 0.02);
  testing_support::check_invariants(*s.k, 3 * kSec);
}

// A task's nice moves its share within its group only: nice 5 against nice 0 in group A
// splits A's half 1024:335; group B's task keeps its half.
TEST(Group, ATasksNiceMovesItsShareWithinItsGroupOnly) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int a = s.k->create_task_group("/a");
    const int b = s.k->create_task_group("/b");
    const int a0 = s.spawn(in_group(a, -1, 0), hog);
    const int a5 = s.spawn(in_group(a, -1, 5), hog);
    const int tb = s.spawn(in_group(b), hog);
    s.run(4 * kSec);
    EXPECT_NEAR(run_share(s, tb, 4 * kSec), 0.5, 0.02) << kernel::version_name(v);
    EXPECT_NEAR(run_share(s, a0, 4 * kSec), 0.5 * 1024 / (1024 + 335), 0.02) << kernel::version_name(v);
    EXPECT_NEAR(run_share(s, a5, 4 * kSec), 0.5 * 335 / (1024 + 335), 0.02) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 4 * kSec);
  }
}

// calc_group_shares(): a group busy on two CPUs has its shares split between its two
// entities (about 512 each), so beside a nice-0 task of the root group on each CPU its
// tasks get about a third of each CPU.
TEST(Group, AGroupsSharesAreSplitOverTheCpusItRunsOn) {
  Sim s(flat_machine(2), testing_support::no_autogroup());
  const int g = s.k->create_task_group("/g");
  const int g0 = s.spawn(in_group(g, 0), hog);
  const int g1 = s.spawn(in_group(g, 1), hog);
  const int r0 = s.spawn(in_group(0, 0), hog);
  const int r1 = s.spawn(in_group(0, 1), hog);
  s.run(4 * kSec);
  EXPECT_NEAR(run_share(s, g0, 4 * kSec), 1.0 / 3, 0.03);
  EXPECT_NEAR(run_share(s, g1, 4 * kSec), 1.0 / 3, 0.03);
  EXPECT_NEAR(run_share(s, r0, 4 * kSec), 2.0 / 3, 0.03);
  EXPECT_NEAR(run_share(s, r1, 4 * kSec), 2.0 / 3, 0.03);
  testing_support::check_invariants(*s.k, 4 * kSec);
}

// The balancer finds tasks below group entities and moves them by their h_load: four
// tasks of a nested group, all woken on CPU 0 of four CPUs that share no cache (so the
// wakeups stay there), end up one per CPU.
TEST(Group, BalancerSpreadsTheTasksOfANestedGroup) {
  hw::Machine m = flat_machine(4);
  for (int c = 0; c < 4; ++c) m.topo.llc_of[static_cast<size_t>(c)] = c;
  Sim s(m);
  const int parent = s.k->create_task_group("/p");
  const int child = s.k->create_task_group("/p/c", parent);
  std::vector<int> pids;
  for (int i = 0; i < 4; ++i) {
    kernel::TaskAttr a = in_group(child);
    a.preexisting = true;  // asleep on CPU 0, woken there at 1 ms
    pids.push_back(s.spawn(a, hog, 1000000));
  }
  s.run(2 * kSec);
  std::vector<int> per_cpu(4, 0);
  for (int pid : pids) per_cpu[static_cast<size_t>(s.task(pid).cpu)]++;
  for (int c = 0; c < 4; ++c) EXPECT_EQ(per_cpu[static_cast<size_t>(c)], 1) << "cpu " << c;
  for (int pid : pids) EXPECT_GT(run_share(s, pid, 2 * kSec), 0.8);
  testing_support::check_invariants(*s.k, 2 * kSec);
}

// task_h_load(): two always-running tasks of a group alone on a CPU carry the group
// entity's load (about 1024, its shares) between them, about 512 each as the root sees
// them, not their own load_avg of about 1024.
TEST(Group, TaskHLoadIsTheTasksPartOfItsGroupEntitysLoad) {
  Sim s(flat_machine(1));
  const int g = s.k->create_task_group("/g");
  const int a = s.spawn(in_group(g, 0), hog);
  const int b = s.spawn(in_group(g, 0), hog);
  s.run(2 * kSec);
  EXPECT_GT(s.task(a).se.avg.load_avg, 950u);
  EXPECT_NEAR(static_cast<double>(kernel::task_h_load(&s.task(a))), 512, 40);
  EXPECT_NEAR(static_cast<double>(kernel::task_h_load(&s.task(b))), 512, 40);
  testing_support::check_invariants(*s.k, 2 * kSec);
}

// A group's entity joins the root's averages when the group comes online
// (online_fair_sched_group()), so its first task brings its load to the root once: the root's
// load_avg is the group entity's, not that plus a second copy attached at the first enqueue.
// And tg->load_avg counts that task at once: the runqueue's first update_tg_load_avg() is not
// held back by the once-per-ms limit at the start of the run.
TEST(Group, AGroupsFirstTaskBringsItsLoadToTheRootOnce) {
  for (auto v : kVersions) {
    Sim s(flat_machine(2), kernel::default_config(v));
    const int g = s.k->create_task_group("/g");
    s.spawn(in_group(g, 0), hog);
    s.run(100000);  // 100 us: the fork is done, little has decayed
    const kernel::task_group* tg = s.k->task_group_by_id(g);
    const kernel::sched_entity* gse = tg->se[0];
    EXPECT_GT(gse->avg.load_avg, 1000u) << kernel::version_name(v);
    EXPECT_NEAR(static_cast<double>(s.k->cpu_rq(0).cfs.avg.load_avg), static_cast<double>(gse->avg.load_avg), 2)
        << kernel::version_name(v);
    EXPECT_NEAR(static_cast<double>(tg->load_avg), 1024, 30) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 100000);
  }
}

namespace {
kernel::KernelConfig autogroup_on(kernel::KernelVersion v = kernel::KernelVersion::V7_0) {
  kernel::KernelConfig cfg = kernel::default_config(v);
  cfg.sched_autogroup_enabled = true;
  return cfg;
}
}  // namespace

// A process started in a new session (setsid) gets an autogroup of its own: its one task
// gets half the CPU against three tasks of the scenario's session; flat, a quarter.
TEST(Group, SetsidStartsANewAutogroup) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), autogroup_on(v));
    std::vector<int> shared;
    for (int i = 0; i < 3; ++i) shared.push_back(s.spawn(in_group(0), hog));
    const int sid = s.k->setsid();
    s.tgid = s.k->create_process("other-shell");
    const int own = s.spawn(in_group(0), hog);
    EXPECT_EQ(s.k->session_of(s.tgid), sid);
    s.run(3 * kSec);
    EXPECT_NE(s.task(own).sched_task_group, s.task(shared[0]).sched_task_group);
    EXPECT_EQ(s.task(own).sched_task_group->path, "/autogroup-" + std::to_string(sid));
    EXPECT_NEAR(run_share(s, own, 3 * kSec), 0.5, 0.02) << kernel::version_name(v);
    for (int pid : shared) EXPECT_NEAR(run_share(s, pid, 3 * kSec), 1.0 / 6, 0.02) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 3 * kSec);
  }
}

// An autogroup's nice weighs the whole session as a task of that nice would be weighed:
// nice 5 against nice 0 splits the CPU 335:1024 between the two sessions, whatever the
// number of tasks in each.
TEST(Group, AnAutogroupsNiceMovesTheGroup) {
  Sim s(flat_machine(1), autogroup_on());
  const int a1 = s.spawn(in_group(0), hog);
  const int a2 = s.spawn(in_group(0), hog);
  const int sid = s.k->setsid();
  s.tgid = s.k->create_process("niced-session");
  const int b = s.spawn(in_group(0), hog);
  s.k->set_autogroup_nice(sid, 5);
  s.run(4 * kSec);
  EXPECT_NEAR(run_share(s, b, 4 * kSec), 335.0 / (1024 + 335), 0.02);
  EXPECT_NEAR(run_share(s, a1, 4 * kSec) + run_share(s, a2, 4 * kSec), 1024.0 / (1024 + 335), 0.02);
  testing_support::check_invariants(*s.k, 4 * kSec);
}

// kernel.sched_autogroup_enabled is 1 by default, as distribution kernels boot
// (autogroup.c's sysctl_sched_autogroup_enabled = 1): a scenario's threads, all in the shell's
// session, run in that session's autogroup, and the kernel threads (init's session) in the
// root group.
TEST(Group, WithAutogroupTheScenariosSessionIsOneGroup) {
  for (auto v : kVersions) {
    kernel::KernelConfig cfg = kernel::default_config(v);
    cfg.sched_autogroup_enabled = true;
    cfg.softirq.ksoftirqd = true;  // kernel threads, which stay in the root group
    Sim s(flat_machine(2), cfg);
    const int a = s.spawn(in_group(0), hog);
    const int b = s.spawn(in_group(0), hog);
    ASSERT_NE(s.task(a).sched_task_group, nullptr);
    EXPECT_EQ(s.task(a).sched_task_group, s.task(b).sched_task_group);
    EXPECT_EQ(s.task(a).sched_task_group->path, "/autogroup-0");
    int kthreads = 0;
    for (const auto& t : s.k->tasks())
      if (t->comm.rfind("ksoftirqd", 0) == 0) {
        ++kthreads;
        EXPECT_EQ(t->sched_task_group, nullptr);
      }
    EXPECT_EQ(kthreads, 2);
  }
}

// With kernel.sched_autogroup_enabled=0 (boot parameter noautogroup) sessions make no groups.
TEST(Group, AutogroupDisabledLeavesSessionsInTheRootGroup) {
  Sim s(flat_machine(1), testing_support::no_autogroup());
  s.k->setsid();
  s.tgid = s.k->create_process("other-shell");
  const int p = s.spawn(in_group(0), hog);
  EXPECT_EQ(s.task(p).sched_task_group, nullptr);
  EXPECT_TRUE(s.k->task_group_stats().empty());
}

// Scenario placement: a workload and an --also in cgroups /svc/a and /svc/b share one CPU
// by the cgroups' cpu.weight (tg->shares = weight x 1024 / 100), not by their thread counts.
TEST(Group, ScenarioCgroupsShareTheCpuByCpuWeight) {
  for (const char* weight_b : {"100", "300"}) {
    scenario::Experiment e;
    ASSERT_EQ(scenario::set_key(&e, "workload", "hog"), "");
    ASSERT_EQ(scenario::set_key(&e, "machine", "small4"), "");
    ASSERT_EQ(scenario::set_key(&e, "cpus", "1"), "");
    ASSERT_EQ(scenario::set_key(&e, "duration", "2s"), "");
    ASSERT_EQ(scenario::set_key(&e, "threads", "3"), "");
    ASSERT_EQ(scenario::set_key(&e, "cgroup", "/svc/a"), "");
    ASSERT_EQ(scenario::add_also(&e, std::string("hog:threads=1,cgroup=/svc/b,cpu.weight=") + weight_b), "");
    report::Results r;
    ASSERT_EQ(scenario::run(e, &r), "");
    const report::Metric* m = r.metric("hog_cpu_seconds_per_second");  // the main workload's
    ASSERT_NE(m, nullptr);
    EXPECT_NEAR(m->value, std::string(weight_b) == "100" ? 0.5 : 0.25, 0.02) << weight_b;
  }
}

TEST(Group, BadCgroupSettingsAreNamed) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_key(&e, "cgroup", "svc"), "cgroup: must be an absolute cgroup path like /batch/a (got 'svc')");
  EXPECT_EQ(scenario::set_key(&e, "cpu.weight", "10001"), "cpu.weight: must be an integer in 1..10000 (got '10001')");
  EXPECT_EQ(scenario::set_key(&e, "session", "new"), "session: expected shared or own (got 'new')");
  EXPECT_EQ(scenario::add_also(&e, "hog:cpu.weight=0"), "also.hog.cpu.weight: must be an integer in 1..10000 (got '0')");
}

// update_cfs_group() leaves an empty group's entity at its weight (66951e4860d3, "When a group
// becomes empty, preserve its weight. This matters for DELAY_DEQUEUE"): group A runs a sleeper
// on CPU 0 and a hog on CPU 1, so its share on CPU 0 follows both CPUs' loads, beside group
// B's hog on CPU 0. When the sleeper sleeps while A's entity is ineligible, the entity stays
// queued, delayed, at the weight it had while the sleeper ran (recomputed from the decaying
// load of an empty runqueue it would shrink, and its lag with it).
TEST(Group, AGroupEntityLeftDelayedKeepsItsWeight) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = s.k->create_task_group("/a");
    const int b = s.k->create_task_group("/b");
    const int sleeper = s.spawn(in_group(a, 0), [](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.compute(3 * sim::kNsecPerMsec);
        co_await t.nanosleep(sim::kNsecPerMsec);
      }
    });
    s.spawn(in_group(a, 1), hog);
    s.spawn(in_group(b, 0), hog);
    // A's entity on CPU 0: the weight it had while its runqueue had a task, and, each time
    // it is found delayed, whether that weight changed.
    const kernel::sched_entity* gse = s.task(sleeper).se.parent;
    ASSERT_NE(gse, nullptr);
    unsigned long running_weight = 0;
    int delays = 0, reweighted = 0;
    bool delayed = false;
    testing_support::Sampler sampler(s, sim::kNsecPerUsec, [&](sim::Time) {
      if (gse->on_rq && gse->sched_delayed) {
        if (!delayed) {
          ++delays;
          reweighted += gse->load.weight != running_weight;
        }
        delayed = true;
      } else {
        delayed = false;
        if (gse->on_rq && kernel::group_cfs_rq(gse)->load) running_weight = gse->load.weight;
      }
    });
    s.run(2 * kSec);
    testing_support::check_invariants(*s.k, 2 * kSec);
    EXPECT_GT(delays, 20);
    EXPECT_EQ(reweighted, 0) << "of " << delays << " delays";
  }
}
