// The mm_cid_compaction_test workload and scenario: the selftest's procedure and its
// pass/fail rule on every mm_cid implementation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "scenario/experiment.h"
#include "tests/workloads/scenario_run.h"

namespace {

std::string source_dir() {
  const char* d = std::getenv("SCHEDLAB_SOURCE_DIR");
  return d ? d : ".";
}

// Runs the selftest on small4 with the assignments; fails the test on an error.
report::Results run(std::initializer_list<std::string> sets) {
  return testing_support::run_assignments(
      {"workload=mm_cid_compaction_test", "machine=small4", "duration=1s"}, sets);
}

std::string run_error(std::initializer_list<std::string> sets) {
  return testing_support::run_assignments_error({"workload=mm_cid_compaction_test", "machine=small4"}, sets);
}

using testing_support::metric;

std::string notice(const report::Results& r) {
  for (const std::string& n : r.notices)
    if (n.rfind("mm_cid_compaction_test:", 0) == 0) return n;
  return "";
}

// 6.19's ownership model needs no scan: once the others have exited, mm_users is 1, so
// max_cids is 1 and the leader's next switch-in swaps its cid for 0.
TEST(WorkloadMmCidCompactionTest, PassesOnTheOwnershipModelAtTheFirstCheck) {
  const report::Results r = run({"kernel=7.0", "mm_cid=owner"});
  EXPECT_EQ(metric(r, "pass"), 1);
  EXPECT_GE(metric(r, "leader_mm_cid"), 2);  // >= N/2
  EXPECT_EQ(metric(r, "checks"), 1);
  EXPECT_EQ(metric(r, "time_to_cid0_ms"), 0);
}

// pthread_join() returns once the kernel zeroed and woke the tid word, in do_exit() ->
// exit_mm() -> mm_release(), after exit_signals() dropped the thread's cid: the leader never
// runs past the join while a joined thread still holds an ID. With a slow syscall exit path
// (200 us), a thread that woke the leader itself before exiting would still be a user of the
// mm at the leader's switch-in, and 6.19 would give the leader 0 only a period later.
TEST(WorkloadMmCidCompactionTest, TheJoinReturnsOnlyAfterTheOthersDroppedTheirIds) {
  const report::Results r = run({"kernel=7.0", "mm_cid=owner", "machine.syscall_exit_ns=200000"});
  EXPECT_EQ(metric(r, "pass"), 1);
  EXPECT_EQ(metric(r, "checks"), 1);
  EXPECT_EQ(metric(r, "time_to_cid0_ms"), 0);
}

// The batched series scans from rseq_handle_notify_resume() after every switch: the leader's
// own wake-ups run it. The exiting threads freed their cids (sched_mm_cid_exit_signals), so
// the first pass after they are gone finds weight 1 and clears the leader's cid 3; the
// leader is current then, so the cid is freed at its switch-out and it gets 0 at the next
// switch-in, one period later. A pass starts once jiffies reaches mm_cid_next_scan (100 ms
// after the previous one), which here puts the 0 at the third check, 100 ms after the join.
TEST(WorkloadMmCidCompactionTest, PassesWithTheBatchedScanRunAtReturnToUser) {
  for (const char* batch : {"mm_cid.scan_batch=1", "mm_cid.scan_batch=4"}) {
    const report::Results r = run({"kernel=6.18", "mm_cid=batched", batch});
    EXPECT_EQ(metric(r, "pass"), 1) << batch;
    EXPECT_GE(metric(r, "time_to_cid0_ms"), 100) << batch;
    EXPECT_LE(metric(r, "time_to_cid0_ms"), 250) << batch;
  }
}

// 6.4 .. 6.18 queue task_mm_cid_work() only from the tick (task_tick_mm_cid), on the task
// that is running. The leader runs microseconds every 50 ms and is never current at a tick,
// so without the busy loop (batch v1's 0xffff x 0xffff iterations) no scan runs and the
// selftest fails; with 10 ms of user work before each sleep, a tick queues the scan.
TEST(WorkloadMmCidCompactionTest, LazyCompactionNeedsTheLeaderOnTheCpuAtATick) {
  const report::Results idle = run({"kernel=6.18", "mm_cid=lazy"});
  EXPECT_EQ(metric(idle, "pass"), 0);
  EXPECT_EQ(metric(idle, "checks"), 10);
  EXPECT_EQ(metric(idle, "time_to_cid0_ms"), -1);
  EXPECT_NE(notice(idle).find("never read mm_cid 0 in 10 checks"), std::string::npos) << notice(idle);
  const report::Results busy = run({"kernel=6.18", "mm_cid=lazy", "busy=10ms"});
  EXPECT_EQ(metric(busy, "pass"), 1);
  EXPECT_GT(metric(busy, "time_to_cid0_ms"), 0);
}

// The scenario file runs on every implementation (lazy with the busy loop).
TEST(WorkloadMmCidCompactionTest, ScenarioPassesOnEveryImplementation) {
  for (std::initializer_list<std::string> sets :
       {std::initializer_list<std::string>{},
        std::initializer_list<std::string>{"mm_cid=lazy", "busy=10ms"},
        std::initializer_list<std::string>{"kernel=7.0", "mm_cid=default"}}) {
    scenario::Experiment e;
    ASSERT_EQ(scenario::load_scenario_file(source_dir() + "/scenarios/mm-cid-compaction-test.toml", &e), "");
    for (const std::string& s : sets) ASSERT_EQ(scenario::set_assignment(&e, s), "") << s;
    report::Results r;
    ASSERT_EQ(scenario::run(e, &r), "");
    EXPECT_EQ(metric(r, "pass"), 1) << notice(r);
  }
}

TEST(WorkloadMmCidCompactionTest, OneCpuSkipsAndPasses) {
  const report::Results r = run({"cpus=1"});
  EXPECT_EQ(metric(r, "pass"), 1);
  EXPECT_NE(notice(r).find("skipped"), std::string::npos) << notice(r);
}

TEST(WorkloadMmCidCompactionTest, ARunEndingBeforeTheVerdictFails) {
  const report::Results r = run({"kernel=7.0", "duration=100ms"});
  EXPECT_EQ(metric(r, "pass"), 0);
  EXPECT_NE(notice(r).find("no verdict"), std::string::npos) << notice(r);
}

TEST(WorkloadMmCidCompactionTest, BadParametersAreNamed) {
  for (const char* bad : {"period=0", "period=5", "checks=0", "runs=-2", "busy=soon"}) {
    const std::string err = run_error({bad});
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_EQ(err.rfind(name + ":", 0), 0u) << bad << " -> " << err;
  }
}

}  // namespace

// With mm_cid.sample_ms the results carry the scan's latencies, the sampled IDs and the
// process's highest ID over time (scenario/collect.cc from kernel::mm_cid_snapshot()); without
// it, none of them.
TEST(WorkloadMmCidCompactionTest, SampledRunsReportTheScanAndTheIdsUserSpaceSaw) {
  const report::Results r = run({"kernel=6.18", "mm_cid=batched", "mm_cid.sample_ms=10"});
  std::vector<std::string> names;
  for (const report::LatencySummary& l : r.latencies) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mm_cid.scan_call", "mm_cid.rt_wait_added", "mm_cid.pass",
                                             "mm_cid.pass_gap", "mm_cid.converge"}));
  EXPECT_GT(metric(r, "mm_cid.scan_calls"), 0);
  EXPECT_GE(metric(r, "mm_cid.passes"), 1);
  EXPECT_EQ(metric(r, "mm_cid_compaction_test.mm_cid_max"), 3);  // 4 threads on small4
  bool series = false;
  for (const std::string& n : r.notices)
    series |= n.rfind("mm_cid: mm_cid_compaction_test (tgid ", 0) == 0 &&
              n.find("up to 4 threads): highest mm_cid shown, per 10 ms: 3 3") != std::string::npos;
  EXPECT_TRUE(series);
  const report::Results plain = run({"kernel=6.18", "mm_cid=batched"});
  EXPECT_TRUE(plain.latencies.empty());
  EXPECT_EQ(plain.metric("mm_cid.scan_calls"), nullptr);
}
