// The cyclictest workload: rt-tests' cyclictest -S -p 99 -i 100 (the wakeup-latency program
// with cyclictest's defaults), alone and beside other workloads.
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "hw/machine.h"
#include "kernel/kernel_impl.h"
#include "scenario/experiment.h"
#include "tests/workloads/scenario_run.h"
#include "sim/engine.h"
#include "workloads/workload.h"

namespace {

report::Results run(const std::string& workload, std::initializer_list<std::string> sets) {
  return testing_support::run_assignments({"workload=" + workload}, sets);
}

std::string run_error(const std::string& workload, std::initializer_list<std::string> sets) {
  return testing_support::run_assignments_error({"workload=" + workload}, sets);
}

using testing_support::metric;

// The threads `workload` creates with its defaults (and `extra`) on small4, as the kernel has them.
void setup_on_small4(const std::string& workload, std::map<std::string, std::string> extra,
                     std::set<int>* pinned_cpus, int* threads, int* policy, int* prio) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("small4", &m).ok());
  const workloads::WorkloadInfo* info = workloads::find_workload(workload);
  ASSERT_NE(info, nullptr) << workload;
  std::map<std::string, std::string> p;
  for (const auto& spec : info->params) p[spec.name] = spec.default_value;
  for (const auto& [k, v] : extra) p[k] = v;
  sim::Engine engine;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.launcher_task = false;
  kernel::KernelImpl k(&engine, m, cfg);
  std::unique_ptr<workloads::Workload> w = info->make();
  ASSERT_EQ(w->setup(k, workloads::Params(p), 1), "");
  k.start();
  *threads = 0;
  for (const auto& t : k.tasks()) {
    if (t->comm != "cyclictest") continue;
    ++*threads;
    *policy = t->policy;
    *prio = t->rt_priority;
    if (t->nr_cpus_allowed != 1) continue;
    t->cpus_mask.for_each([&](int c) { pinned_cpus->insert(c); });
  }
}

// cyclictest -S: one thread per CPU, thread i pinned to CPU i (-a), SCHED_FIFO priority 99.
TEST(WorkloadCyclictest, DefaultsAreOneFifo99ThreadPinnedToEachCpu) {
  std::set<int> cpus;
  int threads = 0, policy = -1, prio = -1;
  setup_on_small4("cyclictest", {}, &cpus, &threads, &policy, &prio);
  EXPECT_EQ(threads, 4);
  EXPECT_EQ(cpus, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(policy, SCHED_FIFO);
  EXPECT_EQ(prio, 99);
}

// threads=-1 is the same in wakeup-latency (the same program).
TEST(WorkloadCyclictest, WakeupLatencyThreadsMinusOnePinsOnePerCpu) {
  std::set<int> cpus;
  int threads = 0, policy = -1, prio = -1;
  setup_on_small4("wakeup-latency", {{"threads", "-1"}, {"hogs", "0"}}, &cpus, &threads, &policy, &prio);
  EXPECT_EQ(threads, 4);
  EXPECT_EQ(cpus, (std::set<int>{0, 1, 2, 3}));
}

// A 100 us interval on an idle machine: every thread wakes every period; p50 <= p99 <= max.
TEST(WorkloadCyclictest, ReportsWakeupLatencyPercentilesEvery100us) {
  const report::Results r = run("cyclictest", {"machine=small4", "duration=100ms"});
  const report::LatencySummary* l = nullptr;
  for (const auto& x : r.latencies)
    if (x.name == "wakeup") l = &x;
  ASSERT_NE(l, nullptr);
  EXPECT_GE(l->count, 4u * 999);
  EXPECT_LE(l->count, 4u * 1000);
  EXPECT_GT(metric(r, "wakeup_p50_us"), 0);
  EXPECT_LE(metric(r, "wakeup_p50_us"), metric(r, "wakeup_p99_us"));
  EXPECT_LE(metric(r, "wakeup_p99_us"), metric(r, "wakeup_max_us"));
}

// cyclictest writes 0 to /dev/cpu_dma_latency (unless --laptop): on small4 (menu, C1 exit
// 2 us) the idle CPUs poll, and each wakeup is the C1 exit shorter than with latency=-1.
// wakeup-latency asks for nothing unless told.
TEST(WorkloadCyclictest, ItsCpuLatencyRequestKeepsIdleCpusPolling) {
  const double poll =
      metric(run("cyclictest", {"machine=small4", "duration=100ms"}), "wakeup_p50_us");
  const double laptop = metric(
      run("cyclictest", {"machine=small4", "duration=100ms", "latency=-1"}), "wakeup_p50_us");
  EXPECT_NEAR(laptop - poll, 2.0, 0.1);
  const double probe = metric(run("wakeup-latency", {"machine=small4", "duration=100ms",
                                                     "interval=100us", "hogs=0"}),
                              "wakeup_p50_us");
  EXPECT_NEAR(probe, laptop, 0.1);
}

// Beside another workload (--also), and with other workloads beside it.
TEST(WorkloadCyclictest, RunsBesideOtherWorkloads) {
  scenario::Experiment e;
  for (const char* s : {"workload=hog", "machine=small4", "duration=100ms", "threads=8"})
    ASSERT_EQ(scenario::set_assignment(&e, s), "") << s;
  ASSERT_EQ(scenario::add_also(&e, "cyclictest"), "");
  ASSERT_EQ(scenario::add_also(&e, "mm_cid_compaction_test"), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  EXPECT_GT(metric(r, "hog_cpu_seconds_per_second"), 3);
  EXPECT_GE(metric(r, "wakeup_max_us"), metric(r, "wakeup_p50_us"));
  EXPECT_NE(r.metric("pass"), nullptr);
}

TEST(WorkloadCyclictest, BadParametersAreNamed) {
  for (const char* bad :
       {"threads=0", "threads=-2", "cpu=1", "interval=0", "priority=100", "latency=-2"}) {
    const std::string err = run_error("cyclictest", {"machine=small4", bad});
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_EQ(err.rfind(name + ":", 0), 0u) << bad << " -> " << err;
  }
}

}  // namespace
