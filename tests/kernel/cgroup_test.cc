// The cgroup v2 files of a task group beyond cpu.weight, pinned against Linux: cpu.idle
// (sched_group_set_idle(), se_is_idle()), cpu.weight.nice (cpu_weight_nice_write_s64()) and
// cpuset.cpus (kernel/cgroup/cpuset.c's effective CPUs, honoured by select_task_rq() and
// the balancer's can_migrate_task()).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernel/sched/sched.h"
#include "kernel/trace.h"
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

// Runs 1-200 us, sleeps 1-300 us: many wakeups, and balancing between them.
user::Program sleeper(user::Thread& t) {
  for (;;) {
    co_await t.compute(static_cast<int64_t>(t.rng().next_u64() % 200000) + 1000);
    co_await t.nanosleep(static_cast<int64_t>(t.rng().next_u64() % 300000) + 1000);
  }
}

}  // namespace

// cpu.idle = 1: the group's shares become WEIGHT_IDLEPRIO (3), so beside a normal group on
// one CPU its task gets about 3/(3+1024) of it, however many tasks each group has.
TEST(Cgroup, AnIdleGroupYieldsToANormalGroupOnASharedCpu) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int idle = s.k->create_task_group("/idle");
    const int normal = s.k->create_task_group("/normal");
    s.k->set_task_group_idle(idle, 1);
    const int ti1 = s.spawn(in_group(idle), hog);
    const int ti2 = s.spawn(in_group(idle), hog);
    const int tn = s.spawn(in_group(normal), hog);
    s.run(3 * kSec);
    const double idle_share = run_share(s, ti1, 3 * kSec) + run_share(s, ti2, 3 * kSec);
    EXPECT_NEAR(idle_share, 3.0 / (3 + 1024), 0.004) << kernel::version_name(v);
    EXPECT_GT(run_share(s, tn, 3 * kSec), 0.99) << kernel::version_name(v);
    EXPECT_EQ(s.k->task_group_stats()[0].shares, 3u);
    EXPECT_EQ(s.k->task_group_stats()[0].idle, 1);
    testing_support::check_invariants(*s.k, 3 * kSec);
  }
}

// se_is_idle() of a group entity: a task of a normal group waking on a CPU that runs an
// idle group's task preempts it at once (wakeup_preempt_fair(): curr idle, wakee not),
// even within the slice it is protected for; and a CPU running only such tasks counts as sched_idle_cpu() (its tasks are all below an idle group: h_nr_idle).
TEST(Cgroup, ACpuRunningOnlyAnIdleGroupsTasksIsSchedIdle) {
  Sim s(flat_machine(1));
  const int idle = s.k->create_task_group("/idle");
  s.k->set_task_group_idle(idle, 1);
  s.spawn(in_group(idle), hog);
  s.k->start();
  s.engine.run_until(kSec / 10);
  EXPECT_TRUE(kernel::sched_idle_cpu(s.k.get(), 0));
  s.k->finish(kSec / 10);
  testing_support::check_invariants(*s.k, kSec / 10);
}

// Each wakeup of one task that finds another task running on its CPU, and wakes no other task
// in the same instant (one interrupt): whether the running task was asked to reschedule.
struct LoneWakeups : kernel::TraceSink {
  LoneWakeups(const Sim& s, int pid) : s(s), pid(pid) {}
  void record(const kernel::TraceRecord& r) override {
    if (r.type != kernel::TraceEvent::sched_wakeup) return;
    if (r.a.pid != pid) {
      if (r.ts == last_ts) lone = false;  // a second wakeup in that instant: not lone
      other_ts = r.ts;
      return;
    }
    flush();
    if (r.curr.pid == 0 || r.ts == other_ts) return;
    last_ts = r.ts;
    lone = true;
    asked = (s.task(r.curr.pid).thread_flags &
             (kernel::TIF_NEED_RESCHED | kernel::TIF_NEED_RESCHED_LAZY)) != 0;
  }
  void flush() {
    if (last_ts >= 0 && lone) {
      ++n;
      preempted += asked;
    }
    last_ts = -1;
  }
  const Sim& s;
  int pid;
  sim::Time last_ts = -1, other_ts = -1;
  bool lone = false, asked = false;
  int n = 0, preempted = 0;
};

// Sleeps end at the time asked for. Each wakeup of the normal task that finds an idle group's
// task running asks it to reschedule (se_is_idle() of curr and not of the wakee), whatever
// their lags; the pick that follows runs the wakee if it is eligible (EEVDF), so the switch
// itself may wait. Timers that expire in one interrupt (with timer slack, or within an idle
// CPU's exit) wake their tasks together and are left out.
TEST(Cgroup, ANormalWakeeAlwaysPreemptsAnIdleGroupsTask) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), testing_support::exact_sleeps(kernel::default_config(v)));
    const int idle = s.k->create_task_group("/idle");
    const int normal = s.k->create_task_group("/normal");
    s.k->set_task_group_idle(idle, 1);
    // The idle group's task too wakes often, each time eligible and with a slice to run.
    s.spawn(in_group(idle), sleeper);
    s.spawn(in_group(idle), sleeper);
    s.k->start();
    s.engine.run_until(kSec / 10);
    const int w = s.spawn(in_group(normal), sleeper, kSec / 10);
    LoneWakeups wakeups(s, w);
    s.k->set_trace_sink(&wakeups);
    s.engine.run_until(kSec);
    wakeups.flush();
    s.k->finish(kSec);
    ASSERT_GT(wakeups.n, 100) << kernel::version_name(v);
    EXPECT_EQ(wakeups.preempted, wakeups.n) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, kSec);
  }
}

// cpu.idle back to 0: the group is an ordinary one with NICE_0_LOAD shares again; the
// h_nr_idle counts above its queued entities follow at once (sched_group_set_idle()).
TEST(Cgroup, ClearingCpuIdleRestoresTheGroupsWeightAndCounts) {
  Sim s(flat_machine(1));
  const int g = s.k->create_task_group("/g");
  const int other = s.k->create_task_group("/other");
  s.k->set_task_group_idle(g, 1);
  const int tg = s.spawn(in_group(g), hog);
  const int to = s.spawn(in_group(other), hog);
  s.k->start();
  s.engine.run_until(kSec);
  EXPECT_EQ(s.k->cpu_rq(0).cfs.h_nr_idle, 1u);
  s.k->set_task_group_idle(g, 0);
  EXPECT_EQ(s.k->cpu_rq(0).cfs.h_nr_idle, 0u);
  // (run_ns is brought up to date at switches: the normal group's task ran alone until now)
  s.engine.run_until(kSec + kSec / 10);
  const uint64_t g_before = s.task(tg).stats.run_ns, o_before = s.task(to).stats.run_ns;
  s.engine.run_until(3 * kSec);
  s.k->finish(3 * kSec);
  const double g_run = static_cast<double>(s.task(tg).stats.run_ns - g_before);
  const double o_run = static_cast<double>(s.task(to).stats.run_ns - o_before);
  EXPECT_NEAR(g_run / (g_run + o_run), 0.5, 0.02);
  EXPECT_EQ(s.k->task_group_stats()[0].shares, 1024u);
  testing_support::check_invariants(*s.k, 3 * kSec);
}

// cpuset.cpus = 4-7 on a 2-socket machine of 2 x 4 CPUs: eight tasks of the group, waking
// and sleeping, stay on socket 1 although socket 0 is idle (select_task_rq() and the
// balancer keep to p->cpus_ptr); a child group's cpuset is limited to its parent's.
TEST(Cgroup, ACpusetKeepsItsTasksOnItsCpusThroughWakeupsAndBalancing) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("synth:2x4x1", &m).ok());
  Sim s(m);
  const int g = s.k->task_group_at("/pinned");
  s.k->set_task_group_cpus(g, {4, 5, 6, 7});
  const int child = s.k->task_group_at("/pinned/child");
  s.k->set_task_group_cpus(child, {2, 3, 6, 7});  // only 6-7 are within the parent's
  std::vector<int> pids;
  for (int i = 0; i < 8; ++i) pids.push_back(s.spawn(in_group(i < 6 ? g : child), sleeper));
  kernel::TaskAttr own = in_group(g);
  own.cpus = {0, 1};  // no CPU of the cpuset: the task keeps the cpuset's
  pids.push_back(s.spawn(own, sleeper));
  s.run(2 * kSec);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(s.k->cpu_rq(c).ex.user_ns, 0u) << "cpu " << c;
  for (int c = 4; c < 8; ++c) EXPECT_GT(s.k->cpu_rq(c).ex.user_ns, kSec / 2) << "cpu " << c;
  for (size_t i = 0; i < pids.size(); ++i) {
    const kernel::task_struct& t = s.task(pids[i]);
    EXPECT_GE(t.cpu, i < 6 || i == 8 ? 4 : 6) << "pid " << t.pid;
    EXPECT_GT(t.stats.nr_wakeups, 100u);
  }
  const auto stats = s.k->task_group_stats();
  EXPECT_EQ(stats[0].effective_cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(stats[1].effective_cpus, (std::vector<int>{6, 7}));
  testing_support::check_invariants(*s.k, 2 * kSec);
}

// ... and the other way: an idle group's task waking beside a normal group's running task
// never preempts it (7.0 neither makes it the next buddy, set_next_buddy() skipping idle
// entities), so it gets no more than its WEIGHT_IDLEPRIO share of the CPU.
TEST(Cgroup, AnIdleGroupsWakeeNeverPreemptsANormalGroupsTask) {
  for (auto v : kVersions) {
    Sim s(flat_machine(1), kernel::default_config(v));
    const int idle = s.k->create_task_group("/idle");
    const int normal = s.k->create_task_group("/normal");
    s.k->set_task_group_idle(idle, 1);
    const int tn = s.spawn(in_group(normal), hog);
    const int ti = s.spawn(in_group(idle), sleeper);
    s.run(2 * kSec);
    EXPECT_LT(run_share(s, ti, 2 * kSec), 0.01) << kernel::version_name(v);
    EXPECT_GT(run_share(s, tn, 2 * kSec), 0.99) << kernel::version_name(v);
    testing_support::check_invariants(*s.k, 2 * kSec);
  }
}

namespace {
scenario::Experiment one_cpu_hogs(const std::string& cgroup) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_key(&e, "workload", "hog"), "");
  EXPECT_EQ(scenario::set_key(&e, "machine", "small4"), "");
  EXPECT_EQ(scenario::set_key(&e, "cpus", "1"), "");
  EXPECT_EQ(scenario::set_key(&e, "duration", "2s"), "");
  EXPECT_EQ(scenario::set_key(&e, "threads", "1"), "");
  EXPECT_EQ(scenario::set_key(&e, "cgroup", cgroup), "");
  return e;
}
double main_hog_share(const scenario::Experiment& e) {
  report::Results r;
  EXPECT_EQ(scenario::run(e, &r), "");
  const report::Metric* m = r.metric("hog_cpu_seconds_per_second");  // the main workload's
  return m ? m->value : -1;
}
}  // namespace

// cpu.weight.nice = 5 gives the cgroup a nice-5 task's weight, 335 against a default
// cgroup's 1024, as two tasks of nice 5 and 0 would share the CPU.
TEST(Cgroup, CpuWeightNiceMapsLikeATasksNice) {
  scenario::Experiment e = one_cpu_hogs("/a");
  ASSERT_EQ(scenario::set_key(&e, "cpu.weight.nice", "5"), "");
  ASSERT_EQ(scenario::add_also(&e, "hog:threads=1,cgroup=/b"), "");
  EXPECT_NEAR(main_hog_share(e), 335.0 / (335 + 1024), 0.01);
  e.cgroup_files.weight_nice = -3;  // 1991
  EXPECT_NEAR(main_hog_share(e), 1991.0 / (1991 + 1024), 0.01);
}

// A scenario's cpu.idle = 1 cgroup beside a default one: about 3/(3+1024) of the CPU.
TEST(Cgroup, ScenarioIdleCgroupGetsTheIdleWeightsShare) {
  scenario::Experiment e = one_cpu_hogs("/batch");
  ASSERT_EQ(scenario::set_key(&e, "cpu.idle", "1"), "");
  ASSERT_EQ(scenario::add_also(&e, "hog:threads=1,cgroup=/svc"), "");
  EXPECT_NEAR(main_hog_share(e), 3.0 / (3 + 1024), 0.003);
}

// The run results list each group: path, hierarchical usage, share of the machine and its
// settings (cpu.weight as read back, cpu.idle, cpuset.cpus.effective).
TEST(Cgroup, ResultsListEachGroupsUsageShareAndSettings) {
  scenario::Experiment e = one_cpu_hogs("/svc/a");
  ASSERT_EQ(scenario::set_key(&e, "cpus", "2"), "");
  ASSERT_EQ(scenario::set_key(&e, "cpuset.cpus", "1"), "");
  ASSERT_EQ(scenario::add_also(&e, "hog:threads=1,cgroup=/batch,cpu.idle=1,cpuset.cpus=1"), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].path, "/svc");
  EXPECT_EQ(r.groups[1].path, "/svc/a");
  EXPECT_EQ(r.groups[2].path, "/batch");
  EXPECT_EQ(r.groups[0].usage_ns, r.groups[1].usage_ns);  // hierarchical
  EXPECT_NEAR(r.groups[1].share, 0.5 * 1024 / 1027, 0.01);  // one of two CPUs, nearly all of it
  EXPECT_NEAR(r.groups[2].share, 0.5 * 3 / 1027, 0.003);
  EXPECT_EQ(r.groups[1].cpu_weight, 100);
  EXPECT_EQ(r.groups[1].cpus, "1");
  EXPECT_EQ(r.groups[0].cpus, "0-1");
  EXPECT_EQ(r.groups[2].idle, 1);
  EXPECT_EQ(r.groups[2].cpu_weight, 1);  // sched_weight_to_cgroup(3): 0, clamped to 1
}

TEST(Cgroup, BadCgroupFileValuesAreNamed) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_key(&e, "cpu.weight.nice", "20"), "cpu.weight.nice: must be an integer in -20..19 (got '20')");
  EXPECT_EQ(scenario::set_key(&e, "cpu.idle", "yes"), "cpu.idle: must be 0 or 1 (got 'yes')");
  EXPECT_EQ(scenario::set_key(&e, "cpuset.cpus", ""), "cpuset.cpus: must be a list of CPUs like 0-3,8 (got '')");
  EXPECT_EQ(scenario::set_key(&e, "cpuset.cpus", "0-"), "cpuset.cpus: must be a list of CPUs like 0-3,8 (got '0-')");
  EXPECT_EQ(scenario::add_also(&e, "hog:cpu.idle=2"), "also.hog.cpu.idle: must be 0 or 1 (got '2')");

  scenario::Experiment m = one_cpu_hogs("/a");
  ASSERT_EQ(scenario::set_key(&m, "machine", "small4"), "");
  ASSERT_EQ(scenario::set_key(&m, "cpuset.cpus", "0-4"), "");
  EXPECT_EQ(scenario::validate(m), "cpuset.cpus: CPU 1 does not exist (the machine has 1 CPUs; got '0-4')");
  m.cgroup_files.cpuset_cpus.clear();
  ASSERT_EQ(scenario::set_key(&m, "cpu.weight", "50"), "");
  ASSERT_EQ(scenario::set_key(&m, "cpu.weight.nice", "0"), "");
  EXPECT_EQ(scenario::validate(m), "cpu.weight.nice: cannot be given with cpu.weight (both set the weight; give one)");
  m.cgroup_files.has_weight_nice = false;
  ASSERT_EQ(scenario::set_key(&m, "cpu.idle", "1"), "");
  EXPECT_EQ(scenario::validate(m), "cpu.weight: cannot be given with cpu.idle = 1 (an idle cgroup's weight is fixed)");

  scenario::Experiment root;
  ASSERT_EQ(scenario::add_also(&root, "hog:cpuset.cpus=0"), "");
  EXPECT_EQ(scenario::validate(root), "also.hog.cpuset.cpus: needs a cgroup (the root cgroup has no such file)");
}

// Scenario files take the keys as TOML dotted keys, at the top level and in [[also]].
TEST(Cgroup, ScenarioFilesTakeTheCgroupKeysAsDottedKeys) {
  const std::string path = ::testing::TempDir() + "cgroup_keys.toml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("workload = \"hog\"\nmachine = \"small4\"\ncgroup = \"/svc\"\ncpu.weight.nice = -5\n"
               "cpuset.cpus = \"0-1\"\n[[also]]\nworkload = \"hog\"\ncgroup = \"/batch\"\ncpu.idle = 1\n",
               f);
    std::fclose(f);
  }
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  EXPECT_EQ(e.cgroup, "/svc");
  EXPECT_TRUE(e.cgroup_files.has_weight_nice);
  EXPECT_EQ(e.cgroup_files.weight_nice, -5);
  EXPECT_EQ(e.cgroup_files.cpuset_cpus, "0-1");
  ASSERT_EQ(e.also.size(), 1u);
  EXPECT_EQ(e.also[0].cgroup, "/batch");
  EXPECT_EQ(e.also[0].cgroup_files.idle, 1);
  EXPECT_EQ(scenario::validate(e), "");
  std::remove(path.c_str());
}
