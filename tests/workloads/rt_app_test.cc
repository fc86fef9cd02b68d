// The rt-app workload: one test per event and task key of rt-app's grammar, the keys it
// refuses, and rt-app's own example files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "tests/workloads/scenario_run.h"
#include "workloads/rt_app.h"

namespace {

using testing_support::metric;

// Writes `json` to a file of its own and returns its path.
std::string write_json(const std::string& name, const std::string& json) {
  const std::string path = ::testing::TempDir() + "rt_app_" + name + ".json";
  std::ofstream(path) << json;
  return path;
}

// Runs `tasks` (the body of "tasks") on small4 for `duration`.
report::Results run_tasks(const std::string& name, const std::string& tasks, const std::string& duration = "105ms",
                          const std::vector<std::string>& sets = {}) {
  const std::string path = write_json(name, "{\"tasks\": {" + tasks + "}}");
  std::vector<std::string> base = {"workload=rt-app", "file=" + path, "machine=small4", "duration=" + duration};
  base.insert(base.end(), sets.begin(), sets.end());
  return testing_support::run_assignments(base, {});
}

std::string parse_error(const std::string& json) {
  workloads::RtAppDesc d;
  return workloads::parse_rt_app(json, "t.json", &d);
}

TEST(RtAppEvents, RunIsMicrosecondsOfCpu) {
  const report::Results r = run_tasks("run", R"("a": {"loop": 1, "phases": {"p": {"loop": 3, "run": 2000}}})");
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 3);
  EXPECT_NEAR(metric(r, "rt_app_a_run_mean_us"), 2000, 5);  // and the ticks that hit it
}

// "runtime" runs loadwait(32) until its time has passed on the clock: alone, its time and a
// little (to the end of a 32 us round). Beside a hog on one CPU it ends within a slice of
// its time, about half of it done, where "run" 10 ms takes about twice as long there.
TEST(RtAppEvents, RuntimeIsMicrosecondsOfWallTime) {
  const report::Results r = run_tasks("runtime", R"("a": {"loop": 1, "phases": {"p": {"loop": 2, "runtime": 1500}}})");
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 2);
  EXPECT_NEAR(metric(r, "rt_app_a_run_mean_us"), 1500, 40);
  const report::Results runtime = run_tasks("runtime_shared", R"(
      "a": {"cpus": [0], "runtime": 10000, "sleep": 10000},
      "hog": {"cpus": [0], "run": 1000000})", "205ms");
  const report::Results run = run_tasks("run_shared", R"(
      "a": {"cpus": [0], "run": 10000, "sleep": 10000},
      "hog": {"cpus": [0], "run": 1000000})", "205ms");
  EXPECT_GE(metric(runtime, "rt_app_a_run_mean_us"), 10000);
  EXPECT_LT(metric(runtime, "rt_app_a_run_mean_us"), 13000);
  EXPECT_GT(metric(run, "rt_app_a_run_mean_us"), 17000);
}

TEST(RtAppEvents, SleepAddsItsTimeToEachLoop) {
  // 1 ms of run and 9 ms of sleep: a loop every 10 ms (and a little).
  const report::Results r = run_tasks("sleep", R"("a": {"run": 1000, "sleep": 9000})");
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 10);
}

TEST(RtAppEvents, RelativeTimerKeepsThePeriodAndReportsSlack) {
  const report::Results r = run_tasks("timer", R"("a": {"run": 2000, "timer": {"ref": "unique", "period": 10000}})");
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 10);
  // 10 ms less the 2 ms run, less the up to 50 us by which a SCHED_OTHER task's timer wakes
  // it late (its timer slack), which the relative timer carries into the next period.
  EXPECT_NEAR(metric(r, "rt_app_a_slack_mean_us"), 8000 - 50, 20);
  EXPECT_GE(metric(r, "rt_app_a_wu_lat_mean_us"), 0);
  EXPECT_EQ(metric(r, "rt_app_a_timer_overruns"), 0);
}

// A first phase that overruns its 10 ms period by 20 ms: a relative timer starts again from
// the overrun; an absolute one keeps its reference and misses the two periods that passed.
TEST(RtAppEvents, AbsoluteTimerKeepsItsReferenceAfterAnOverrun) {
  auto overruns = [](const std::string& mode) {
    const std::string t = R"({"ref": "tm", "period": 10000, "mode": ")" + mode + "\"}";
    const report::Results r = run_tasks("timer_" + mode, R"("a": {"loop": 1, "phases": {
        "long": {"run": 30000, "timer": )" + t + R"(},
        "short": {"loop": 5, "run": 1000, "timer": )" + t + "}}}");
    return metric(r, "rt_app_a_timer_overruns");
  };
  EXPECT_EQ(overruns("relative"), 1);
  EXPECT_EQ(overruns("absolute"), 3);
}

TEST(RtAppEvents, LockAndUnlockSerialiseTheCriticalSections) {
  // Two tasks on two CPUs, each 10 ms of run per loop: 10 loops each in 100 ms, or 10 in all
  // when the run is inside one mutex.
  const std::string open = R"("a": {"instance": 2, "run": 10000})";
  const std::string locked = R"("a": {"instance": 2, "lock": "m", "run": 10000, "unlock": "m"})";
  EXPECT_EQ(metric(run_tasks("nolock", open), "rt_app_a_loops"), 20);
  EXPECT_NEAR(metric(run_tasks("lock", locked), "rt_app_a_loops"), 10, 1);
}

TEST(RtAppEvents, WaitReturnsOnceForEachSignal) {
  const report::Results r = run_tasks("signal", R"(
      "waiter": {"lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 100},
      "signaller": {"run": 1000, "timer": {"ref": "t", "period": 10000}, "lock": "m", "signal": "c", "unlock": "m"})");
  EXPECT_EQ(metric(r, "rt_app_signaller_loops"), 10);
  EXPECT_NEAR(metric(r, "rt_app_waiter_loops"), 10, 1);
}

TEST(RtAppEvents, BroadWakesEveryWaiter) {
  const report::Results r = run_tasks("broad", R"(
      "waiter": {"instance": 3, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 100},
      "signaller": {"run": 1000, "timer": {"ref": "t", "period": 10000}, "lock": "m", "broad": "c", "unlock": "m"})");
  EXPECT_NEAR(metric(r, "rt_app_waiter_loops"), 30, 3);
}

// rtapp_sig_and_wait is pthread_cond_signal() then pthread_cond_wait(): the file holds the
// mutex around it (rt-app's tutorial and its examples: lock, sync, unlock).
TEST(RtAppEvents, SyncHandsTheTurnBackAndForth) {
  const report::Results r = run_tasks("sync", R"(
      "ping": {"run": 1000, "lock": "m", "sync": {"ref": "c", "mutex": "m"}, "unlock": "m"},
      "pong": {"run": 1000, "lock": "m", "sync": {"ref": "c", "mutex": "m"}, "unlock": "m"})");
  EXPECT_TRUE(r.notices.empty());
  // One runs while the other waits: about 50 loops each of 1 ms in 105 ms, never both at once.
  const double ping = metric(r, "rt_app_ping_loops"), pong = metric(r, "rt_app_pong_loops");
  EXPECT_GT(ping, 40);
  EXPECT_LE(ping + pong, 106);
  EXPECT_NEAR(ping, pong, 1);
}

TEST(RtAppEvents, SuspendWaitsForResume) {
  const report::Results r = run_tasks("suspend", R"(
      "sleeper": {"suspend": "sleeper", "run": 100},
      "waker": {"run": 1000, "timer": {"ref": "t", "period": 10000}, "resume": "sleeper"})");
  EXPECT_NEAR(metric(r, "rt_app_sleeper_loops"), 10, 1);
}

TEST(RtAppEvents, BarrierMakesEveryUserWaitForTheSlowest) {
  const report::Results r = run_tasks("barrier", R"(
      "fast": {"run": 1000, "barrier": "b"}, "slow": {"run": 5000, "barrier": "b"})");
  EXPECT_NEAR(metric(r, "rt_app_slow_loops"), 20, 1);
  EXPECT_NEAR(metric(r, "rt_app_fast_loops"), metric(r, "rt_app_slow_loops"), 1);
}

TEST(RtAppEvents, MemAndIorunAreCpuWorkAtTheirRates) {
  // 90 MB at 10000 bytes/us and 18 MB at 2000 bytes/us: 9 ms each, 11 loops in 105 ms;
  // twice the speed, 23.
  const report::Results r = run_tasks("mem", R"("m": {"mem": 90000000}, "io": {"iorun": 18000000})");
  EXPECT_EQ(metric(r, "rt_app_m_loops"), 11);
  EXPECT_EQ(metric(r, "rt_app_io_loops"), 11);
  const report::Results fast =
      run_tasks("mem_fast", R"("m": {"mem": 90000000})", "105ms", {"mem_bytes_per_us=20000"});
  EXPECT_EQ(metric(fast, "rt_app_m_loops"), 23);
}

TEST(RtAppEvents, YieldLetsAnEqualFifoTaskRun) {
  // Two SCHED_FIFO tasks of one priority on CPU 0, never sleeping: without a yield the first
  // keeps the CPU.
  const std::string base = R"("policy": "SCHED_FIFO", "priority": 20, "cpus": [0], "run": 1000)";
  const report::Results no = run_tasks("noyield", "\"a\": {" + base + "}, \"b\": {" + base + "}");
  EXPECT_EQ(std::min(metric(no, "rt_app_a_loops"), metric(no, "rt_app_b_loops")), 0);
  const std::string y = base + R"(, "yield": "")";
  const report::Results yes = run_tasks("yield", "\"a\": {" + y + "}, \"b\": {" + y + "}");
  EXPECT_GT(metric(yes, "rt_app_a_loops"), 40);
  EXPECT_GT(metric(yes, "rt_app_b_loops"), 40);
}

TEST(RtAppTasks, PolicyAndPriorityDecideWhoRuns) {
  const report::Results r = run_tasks("prio", R"(
      "low": {"policy": "SCHED_FIFO", "priority": 10, "cpus": [0], "run": 1000},
      "high": {"policy": "SCHED_RR", "priority": 50, "cpus": [0], "run": 1000})");
  EXPECT_EQ(metric(r, "rt_app_low_loops"), 0);
  EXPECT_GE(metric(r, "rt_app_high_loops"), 99);
}

TEST(RtAppTasks, NiceAndOtherPriorityAreTheNiceValue) {
  for (const char* key : {"nice", "priority"}) {
    const report::Results r = run_tasks(std::string("nice_") + key, std::string(R"("n0": {"cpus": [0], "run": 1000},
        "n5": {"cpus": [0], "run": 1000, ")") + key + R"(": 5})");
    // Weights 1024 and 335: about 3 to 1.
    EXPECT_NEAR(metric(r, "rt_app_n0_loops") / metric(r, "rt_app_n5_loops"), 3.06, 0.4) << key;
  }
}

TEST(RtAppTasks, CpusPinTheInstances) {
  EXPECT_EQ(metric(run_tasks("spread", R"("a": {"instance": 2, "run": 10000})"), "rt_app_a_loops"), 20);
  EXPECT_NEAR(metric(run_tasks("pinned", R"("a": {"instance": 2, "cpus": [1], "run": 10000})"), "rt_app_a_loops"), 10, 1);
}

TEST(RtAppTasks, DelayPostponesTheFirstLoop) {
  EXPECT_EQ(metric(run_tasks("delay", R"("a": {"delay": 50000, "run": 10000})"), "rt_app_a_loops"), 5);
}

// Every thread's timers count from t_zero, which thread 0 reads before the start barrier:
// four FIFO threads on one CPU with 10 ms timers all wake at once, each period, and run
// their 2 ms in turn, the last one 6 ms late (slack 8, 6, 4 and 2 ms). Timed from each
// thread's own start they would run one after another with no wait.
TEST(RtAppTasks, TimersOfAllThreadsShareThreadZerosTimeBase) {
  const report::Results r = run_tasks("t_zero", R"(
      "a": {"instance": 4, "cpus": [0], "policy": "SCHED_FIFO", "priority": 50, "run": 2000,
            "timer": {"ref": "unique", "period": 10000}})");
  EXPECT_NEAR(metric(r, "rt_app_a_slack_min_us"), 2000, 100);
  EXPECT_NEAR(metric(r, "rt_app_a_slack_mean_us"), 5000, 200);
}

TEST(RtAppTasks, InstancesLoopsAndPhasesAreCounted) {
  const report::Results r = run_tasks("phases", R"("a": {"instance": 2, "loop": 3, "phases": {
      "p1": {"loop": 2, "run": 100}, "p2": {"run": 100, "sleep": 100}}})");
  EXPECT_EQ(metric(r, "rt_app_a_p1_runs"), 2 * 3 * 2);
  EXPECT_EQ(metric(r, "rt_app_a_p2_runs"), 2 * 3);
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 2 * 3 * 3);
}

// rt-app 1.0 reads a task without "phases" as one phase of `loop` runs repeated until the end.
TEST(RtAppTasks, ATaskWithoutPhasesRepeatsUntilTheEnd) {
  const report::Results r = run_tasks("nophases", R"("a": {"loop": 3, "run": 1000, "sleep": 9000})");
  EXPECT_EQ(metric(r, "rt_app_a_loops"), 10);
}

TEST(RtAppTasks, RepeatedEventKeysRunInTheirOrder) {
  // Two "run" keys (what rt-app's workgen numbers run, run1): both run.
  const report::Results r = run_tasks("repeat", R"("a": {"run": 1000, "sleep": 10, "run": 2000})");
  EXPECT_NEAR(metric(r, "rt_app_a_run_mean_us"), 3000, 5);
}

TEST(RtAppTasks, AZeroTimeLoopStillAdvancesTime) {
  // Only unblocked lock/unlock: the run ends, and the loop counts are finite.
  const report::Results r = run_tasks("zero", R"("a": {"lock": "m", "unlock": "m"})", "1ms");
  EXPECT_GT(metric(r, "rt_app_a_loops"), 0);
  EXPECT_LE(metric(r, "rt_app_a_loops"), 1000);
}

TEST(RtAppGrammar, GlobalDurationSetsTheRunAndDurationOverridesIt) {
  const std::string path = write_json("global", R"({"global": {"duration": 2, "calibration": "CPU0",
      "default_policy": "SCHED_OTHER", "pi_enabled": false, "lock_pages": false, "logdir": "./",
      "log_basename": "x", "ftrace": false, "gnuplot": false, "io_device": "/dev/null",
      "mem_buffer_size": 4194304, "cumulative_slack": false, "log_size": "file"},
      "tasks": {"a": {"run": 10, "sleep": 10}}})");
  cli::RunOptions o;
  o.target = path;
  scenario::Experiment e;
  ASSERT_EQ(cli::build_experiment(o, &e), "");
  EXPECT_EQ(e.workload, "rt-app");
  EXPECT_EQ(e.duration_ns, 2000000000);
  o.duration = "50ms";
  ASSERT_EQ(cli::build_experiment(o, &e), "");
  EXPECT_EQ(e.duration_ns, 50000000);
}

TEST(RtAppGrammar, CommentsAndTrailingCommasAreRtAppJson) {
  EXPECT_EQ(parse_error("{ /* c */ \"tasks\": {\"a\": {\"run\": 1, // x\n}, }, }"), "");
}

TEST(RtAppGrammar, UnsupportedKeysAreErrorsNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"tasks": {"a": {"run": 1}}, "extra": 1})", "extra"},
      {R"({"global": {"frag": 1}, "tasks": {"a": {"run": 1}}})", "global.frag"},
      {R"({"global": {"pi_enabled": true}, "tasks": {"a": {"run": 1}}})", "global.pi_enabled"},
      {R"({"tasks": {"a": {"run": 1, "exec": 5}}})", "tasks.a.exec"},
      {R"({"tasks": {"a": {"run": 1, "fork": "b"}}})", "tasks.a.fork"},
      {R"({"tasks": {"a": {"run": 1, "taskgroup": "/g"}}})", "tasks.a.taskgroup"},
      {R"({"tasks": {"a": {"run": 1, "dl-runtime": 100}}})", "tasks.a.dl-runtime"},
      {R"({"tasks": {"a": {"run": 1, "policy": "SCHED_DEADLINE"}}})", "tasks.a.policy"},
      {R"({"tasks": {"a": {"phases": {"p": {"run": 1, "cpus": [0]}}}}})", "tasks.a.phases.p.cpus"},
      {R"({"tasks": {"a": {"run": 1, "timer": {"ref": "t", "period": 1, "jitter": 2}}}})", "tasks.a.timer.jitter"},
      {R"({"tasks": {"a": {"run": -1}}})", "tasks.a.run"},
      {R"({"tasks": {"a": {"loop": 2}}})", "tasks.a"},
      {R"({"tasks": {"a": {"policy": "SCHED_FIFO", "priority": 0, "run": 1}}})", "tasks.a.priority"},
      {R"({"global": {"duration": 0}, "tasks": {"a": {"run": 1}}})", "global.duration"},
      {R"({"global": {"calibration": "GPU"}, "tasks": {"a": {"run": 1}}})", "global.calibration"},
  };
  for (const auto& [json, key] : cases) {
    const std::string err = parse_error(json);
    EXPECT_NE(err.find(std::string(": ") + key + ":"), std::string::npos) << json << " -> " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(RtAppGrammar, BadFileIsOneLineExitTwo) {
  EXPECT_EQ(cli::main_with_args({"run", write_json("bad", R"({"tasks": {"a": {"run": 1, "bogus": 1}}})")}), 2);
  EXPECT_EQ(cli::main_with_args({"run", ::testing::TempDir() + "rt_app_missing.json"}), 2);
  const std::string path = write_json("cpu", R"({"tasks": {"a": {"run": 1, "cpus": [9]}}})");
  EXPECT_EQ(cli::main_with_args({"run", path, "-m", "small4", "-d", "1ms"}), 2);
}

// rt-app's own documented examples (Debian installs them with the package) parse and run.
TEST(RtAppGrammar, RtAppsDocumentedExamplesRun) {
  const std::string dir = "/usr/share/doc/rt-app/examples/";
  if (!std::filesystem::exists(dir + "template.json")) GTEST_SKIP() << "rt-app's examples are not installed";
  for (const char* f : {"template.json", "spreading-tasks.json", "tutorial/example1.json", "tutorial/example2.json",
                        "tutorial/example3.json", "tutorial/example4.json", "tutorial/example6.json",
                        "tutorial/example7.json"}) {
    const report::Results r = testing_support::run_assignments(
        {"workload=rt-app", "file=" + dir + f, "machine=small4", "duration=50ms"}, {});
    EXPECT_FALSE(r.metrics.empty()) << f;
  }
}

TEST(RtAppGrammar, TheShippedExampleRuns) {
  const char* src = std::getenv("SCHEDLAB_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  cli::RunOptions o;
  o.target = std::string(src) + "/scenarios/rt-app-periodic.json";
  o.machine = "small4";
  o.duration = "100ms";
  scenario::Experiment e;
  ASSERT_EQ(cli::build_experiment(o, &e), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  EXPECT_EQ(metric(r, "rt_app_control_loops"), 9);
  EXPECT_GT(metric(r, "rt_app_worker_loops"), 0);
}

}  // namespace
