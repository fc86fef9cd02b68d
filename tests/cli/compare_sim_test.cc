// `schedlab real ... --compare-sim`: the simulation it runs has the real run's setup — the
// hogs where the real run put them, autogroup as the host has it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "report/results.h"
#include "scenario/experiment.h"

namespace {

real::Params es2_with_hogs(real::HogsAs as) {
  real::Params p = real::default_params(real::Workload::kExtendSched2);
  p.threads = 20;
  p.locks = 2;
  p.hogs = 2;
  p.hogs_as = as;
  p.duration_ns = 1'000'000'000;
  p.cs_iterations = 1'000'000;
  p.cpus.clear();
  return p;
}

double hog_cpus(const scenario::Experiment& e) {
  report::Results r;
  EXPECT_EQ(scenario::run(e, &r), "");
  const report::Metric* m = r.metric("hog_cpu_seconds_per_second");
  EXPECT_NE(m, nullptr);
  return m ? m->value : -1;
}

}  // namespace

// With --hogs-as session the simulated hogs are a process in a session of their own, so with
// autogroup their group and the workers' share the host's two CPUs half and half: about one
// CPU for the 2 hogs, where as threads beside 20 workers they get about 2 of 22 tasks' worth.
TEST(CompareSim, HogsAsSessionRunsTheSimulatedHogsInAnotherAutogroup) {
  real::RunResult m;
  m.ns_per_iteration = 0.271;
  scenario::Experiment own, shared;
  std::vector<std::string> sets;
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kSession), m, 1, &own, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "hogs_as=session"), sets.end());
  EXPECT_NE(std::find(sets.begin(), sets.end(), "sched_autogroup_enabled=1"), sets.end());
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kThreads), m, 1, &shared), "");
  const double own_cpus = hog_cpus(own), shared_cpus = hog_cpus(shared);
  EXPECT_NEAR(own_cpus, 1.0, 0.1) << shared_cpus;
  EXPECT_LT(shared_cpus, 0.35);
}

// --hogs-as cgroup: the hogs' group is the cgroup's, whose cpu.weight 100 weighs as the
// workers' autogroup does; on a host without autogroup the simulation runs without it too.
TEST(CompareSim, HogsAsCgroupAndTheHostsAutogroupSettingArePassedOn) {
  real::RunResult m;
  scenario::Experiment e;
  std::vector<std::string> sets;
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kCgroup), m, 1, &e, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "hogs_as=cgroup"), sets.end());
  EXPECT_NEAR(hog_cpus(e), 1.0, 0.1);
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kSession), m, 0, &e, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "sched_autogroup_enabled=0"), sets.end());
  EXPECT_LT(hog_cpus(e), 0.35);
}

// The simulated critical section is the run's own: the mean of its sampled holds that were
// not preempted (at most twice their median), not the loop speed measured before the run,
// which on a shared guest can be off by 2x. Without a completed section the measured speed
// converts the iteration count. The lock table's query and section, converted alike before
// the run, are scaled alike.
TEST(CompareSim, TheCriticalSectionIsTheRunsMeanUnpreemptedHold) {
  real::RunResult m;
  m.ns_per_iteration = 0.5;  // 1,000,000 iterations planned as 500 us
  real::ThreadStats a, b;
  a.hold_samples_ns = {270000, 310000, 4000000};  // the last one preempted: left out
  b.hold_samples_ns = {280000, 300000};
  m.threads = {a, real::ThreadStats{}, b};  // a thread without samples adds none
  EXPECT_DOUBLE_EQ(m.section_ns(), 290000);
  scenario::Experiment e;
  std::vector<std::string> sets;
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kThreads), m, 1, &e, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "cs=290000ns"), sets.end());
  real::RunResult none;
  none.ns_per_iteration = 0.5;
  ASSERT_EQ(cli::sim_experiment_for(es2_with_hogs(real::HogsAs::kThreads), none, 1, &e, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "cs=500000ns"), sets.end());

  real::Params lt = real::default_params(real::Workload::kLockTable);
  lt.query_ns = 100000;
  lt.cs_ns = 10000;
  lt.cpus.clear();
  real::RunResult half;
  real::ThreadStats t;
  t.hold_samples_ns = {5400, 5300, 5500};  // the section ran at about twice the measured speed
  half.threads = {t};
  ASSERT_EQ(cli::sim_experiment_for(lt, half, 1, &e, &sets), "");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "cs=5400ns"), sets.end());
  EXPECT_NE(std::find(sets.begin(), sets.end(), "query=54000ns"), sets.end());
}
