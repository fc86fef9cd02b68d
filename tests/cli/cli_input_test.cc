// The command line, bad input: a duration without a unit, empty values, out-of-range values,
// parser and cost errors are one line naming the parameter with exit code 2 and no output
// file; outputs are checked before the run; compare is bounded.
#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "kernel/config.h"
#include "report/json.h"
#include "scenario/compare.h"
#include "scenario/experiment.h"
#include "workloads/workload.h"

#include "tests/cli/cli_support.h"

using cli_test_support::exists;
using cli_test_support::expect_bad_input;
using cli_test_support::run_cli;
using cli_test_support::source_dir;
using cli_test_support::stdout_of;
using cli_test_support::tmp_path;

TEST(Cli, ADurationWithoutAUnitIsAnError) {
  expect_bad_input({"run", "hog", "-d", "10"}, "duration");
  expect_bad_input({"run", "hog", "--set", "duration=10"}, "got '10'");
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "-d", "10"}, "duration");
  expect_bad_input({"run", "wakeup-latency", "--set", "interval=1000"}, "interval");
  expect_bad_input({"run", "spinlock", "--set", "think=500"}, "think");
  expect_bad_input({"run", "hog", "--set", "slice_ext.nsec=5000"}, "slice_ext.nsec");
  expect_bad_input({"bench", "--duration", "10"}, "got '10'");
  std::string err;
  EXPECT_EQ(run_cli({"real", "extend-sched2", "--duration", "1"}, &err), 2);
  EXPECT_NE(err.find("--duration"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"real", "locktable", "--cs", "10", "--duration", "1s"}, &err), 2);
  EXPECT_NE(err.find("--cs"), std::string::npos) << err;
  const std::string path = tmp_path("unitless.toml");
  std::ofstream(path) << "workload = \"hog\"\nduration = 10\n";
  expect_bad_input({"run", path}, "got '10'");
  std::remove(path.c_str());
}

TEST(Cli, AnEmptyOptionValueIsAnErrorNamingTheOption) {
  expect_bad_input({"run", "hog", "-m", ""}, "--machine");
  expect_bad_input({"run", "hog", "-d", ""}, "--duration");
  expect_bad_input({"run", "hog", "-k", ""}, "--kernel");
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "--seeds", ""}, "--seeds");
  std::string err;
  EXPECT_EQ(run_cli({"run", "hog", "--json", ""}, &err), 2);
  EXPECT_NE(err.find("--json"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// A seed beyond 2^63-1 is refused, not capped; 2^63-1 itself is taken.
TEST(Cli, ASeedAboveTheLargestIsAnErrorNotCapped) {
  expect_bad_input({"run", "hog", "--seed", "9223372036854775808"}, "--seed: must be an integer from 0 to 9223372036854775807 (got '9223372036854775808')");
  expect_bad_input({"run", "hog", "--set", "seed=9223372036854775808"}, "got '9223372036854775808'");
  const std::string json = tmp_path("maxseed.json");
  ASSERT_EQ(run_cli({"run", "hog", "-m", "small4", "-d", "1ms", "--seed", "9223372036854775807", "--json", json}), 0);
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["experiment"]["seed"].get<uint64_t>(), 9223372036854775807ULL);
  std::remove(json.c_str());
}

// A scenario file must name its workload: an empty one does not run the default.
TEST(Cli, AScenarioFileWithoutAWorkloadIsAnError) {
  const std::string path = tmp_path("empty.toml");
  { std::ofstream out(path); }
  expect_bad_input({"run", path}, "no workload");
  std::ofstream(path) << "machine = \"small4\"\nduration = \"1ms\"\n";
  expect_bad_input({"run", path}, "no workload");
  std::remove(path.c_str());
}

TEST(Cli, SkewTickTakesOnlyZeroOrOne) {
  expect_bad_input({"run", "hog", "--set", "skew_tick=2"}, "skew_tick: expected 0, 1, true or false (got '2')");
  expect_bad_input({"run", "hog", "--set", "skew_tick=-1"}, "got '-1'");
}

// 0 is not "the default length": mainline refuses it (debugfs rseq/slice_ext_nsec: ERANGE).
TEST(Cli, AZeroSliceExtensionLengthIsAnError) {
  expect_bad_input({"run", "hog", "--set", "slice_ext=mainline", "--set", "slice_ext.nsec=0"}, "slice_ext.nsec");
  expect_bad_input({"run", "hog", "--set", "slice_ext=mainline", "--set", "slice_ext.nsec=0us"}, "got '0us'");
  expect_bad_input({"run", "hog", "--set", "slice_ext=mainline", "--set", "slice_ext.nsec=4us"}, "got 4000ns");
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_EQ(kernel::set_config_key(&cfg, "slice_ext.nsec", "10us"), "");
  EXPECT_EQ(cfg.slice_ext.nsec, 10000);
}

TEST(Cli, NegativeJobsIsAnError) {
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "--jobs", "-1"}, "--jobs: must be an integer from 0 to 1024 (got '-1')");
}

// ---- Messages: one line, naming the option or setting and the value given ----

TEST(Cli, ParserErrorsAreOneLineNamingTheOption) {
  expect_bad_input({"run", "hog", "--nope"}, "'--nope'");
  expect_bad_input({"run", "hog", "--seeds", "3"}, "unexpected arguments '--seeds', '3'");
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "--seeds", "abc"}, "--seeds: must be an integer from 1 to 1000000 (got 'abc')");
  expect_bad_input({"run", "hog", "--cpus", "x"}, "--cpus: must be an integer from 1 to 1000000 (got 'x')");
  expect_bad_input({"bench", "--repeat", "x"}, "--repeat");
  std::string err;
  EXPECT_EQ(run_cli({"run", "hog", "--cpus"}, &err), 2);
  EXPECT_NE(err.find("--cpus"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// A [costs] error names the scenario file and costs.KEY, not --set; --set names machine.KEY.
TEST(Cli, CostErrorsNameWhereTheCostWasGiven) {
  const std::string path = tmp_path("badcost.toml");
  std::ofstream(path) << "workload = \"hog\"\n[costs]\ntimer_irq_jitter_ns = -1\n";
  scenario::Experiment e;
  const std::string err = scenario::load_scenario_file(path, &e);
  EXPECT_NE(err.find("scenario '" + path + "': costs.timer_irq_jitter_ns"), std::string::npos) << err;
  EXPECT_EQ(err.find("--set"), std::string::npos) << err;
  EXPECT_NE(err.find("(got -1)"), std::string::npos) << err;
  std::remove(path.c_str());
  scenario::Experiment s;
  const std::string serr = scenario::set_assignment(&s, "machine.timer_irq_jitter_ns=-1");
  EXPECT_EQ(serr.find("--set"), std::string::npos) << serr;
  EXPECT_NE(serr.find("machine.timer_irq_jitter_ns"), std::string::npos) << serr;
}

TEST(Cli, AScenarioMayTurnIdlePollingOnAsSetDoes) {
  const std::string path = tmp_path("polling.toml");
  std::ofstream(path) << "workload = \"hog\"\n[costs]\nidle_polling = true\n";
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  scenario::Experiment s;
  ASSERT_EQ(scenario::set_assignment(&s, "machine.idle_polling=true"), "");
  EXPECT_EQ(e.machine_costs, s.machine_costs);
  std::remove(path.c_str());
}

TEST(Cli, SetKernelDotNamesAKernelSetting) {
  scenario::Experiment e;
  const std::string err = scenario::set_assignment(&e, "kernel.foo=1");
  EXPECT_NE(err.find("unknown kernel setting 'foo'"), std::string::npos) << err;
  EXPECT_EQ(scenario::set_assignment(&e, "kernel.hz=1000"), "");
  EXPECT_EQ(scenario::set_assignment(&e, "kernel.version=6.18"), "");
  EXPECT_EQ(e.kernel_version, "6.18");
}

TEST(Cli, RangeErrorsShowTheValueGiven) {
  expect_bad_input({"run", "hog", "--cpus", "0"}, "(got '0')");
  expect_bad_input({"bench", "--repeat", "0"}, "(got '0')");
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "--seeds", "0"}, "(got '0')");
  expect_bad_input({"run", "hog", "--proc", "0"}, "(got '0')");
  scenario::CompareSpec spec;
  spec.vary_key = "hz";
  spec.vary_values = {"100"};
  spec.seeds = 0;
  report::Comparison c;
  EXPECT_NE(scenario::compare(spec, &c).find("(got 0)"), std::string::npos);
  spec.seeds = 1;
  spec.jobs = -1;
  EXPECT_NE(scenario::compare(spec, &c).find("(got -1)"), std::string::npos);
}

// ---- Output destinations: checked before the run; every write failure exits 2 ----

// The destination is checked first: with a bad --proc (found only after the run) the error
// is about the destination, so it was found before the run.
TEST(Cli, AnUnwritableJsonDestinationIsFoundBeforeTheRun) {
  const std::string json = "/nonexistent-schedlab-dir/x.json";
  std::string err;
  EXPECT_EQ(run_cli({"run", "hog", "-m", "small4", "-d", "1ms", "--proc", "999", "--json", json}, &err), 2);
  EXPECT_NE(err.find("cannot write " + json + ": No such file or directory"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run_cli({"compare", "hog", "-m", "small4", "-d", "1ms", "--vary", "hz=100,250",
                     "--metric", "nosuch", "--json", json}, &err), 2);
  EXPECT_NE(err.find("cannot write " + json), std::string::npos) << err;
  EXPECT_EQ(run_cli({"bench", "--duration", "1ms", "--json", json}, &err), 2);
  EXPECT_NE(err.find("cannot write " + json), std::string::npos) << err;
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(run_cli({"run", "hog", "-m", "small4", "-d", "1ms", "--json", dir}, &err), 2);
  EXPECT_NE(err.find("Is a directory"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run_cli({"run", "hog", "-m", "small4", "-d", "1ms", "--json", dir + std::string(300, 'n')}, &err), 2);
  EXPECT_NE(err.find("File name too long"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(Cli, AFailedWriteExitsTwoWithOneLine) {
  if (!exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  std::string err;
  EXPECT_EQ(run_cli({"run", "hog", "-m", "small4", "-d", "1ms", "--json", "/dev/full"}, &err), 2);
  EXPECT_NE(err.find("cannot write /dev/full: No space left on device"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// ---- compare: bounded, and memory flat in the number of seeds ----

TEST(Compare, SeedsAndJobsAreBounded) {
  expect_bad_input({"compare", "hog", "--vary", "hz=100,250", "--seeds", "2147483647"},
                   "--seeds: must be an integer from 1 to 1000000 (got '2147483647')");
  expect_bad_input({"compare", "hog", "-m", "small4", "-d", "1ms", "--vary", "hz=100,250", "--jobs", "40000"},
                   "--jobs: must be an integer from 0 to 1024 (got '40000')");
}

// A run's Results (every task, every CPU) is dropped once its metric values are taken:
// the heap a comparison holds grows by the values, not by whole runs. (mallinfo2 counts
// glibc's heap; under a sanitizer's allocator it reads 0, and the test is skipped.)
TEST(Compare, HeapDoesNotGrowWithWholeRunsPerSeed) {
  if (mallinfo2().uordblks == 0) GTEST_SKIP() << "mallinfo2() does not see this allocator";
  auto peak_growth = [](int seeds) {
    scenario::CompareSpec spec;
    for (const char* s : {"workload=hog", "machine=small4", "threads=64", "duration=1ms"})
      EXPECT_EQ(scenario::set_assignment(&spec.base, s), "");
    spec.vary_key = "hz";
    spec.vary_values = {"250"};
    spec.seeds = seeds;
    spec.jobs = 1;
    spec.metrics = {"cpu_user_share"};
    const size_t before = mallinfo2().uordblks;
    size_t peak = before;
    report::Comparison c;
    EXPECT_EQ(scenario::compare(spec, &c, [&](int, int) { peak = std::max(peak, mallinfo2().uordblks); }), "");
    EXPECT_EQ(c.rows.at(0).values.at(0).size(), static_cast<size_t>(seeds));
    return peak - std::min(peak, before);
  };
  const size_t few = peak_growth(10);
  const size_t many = peak_growth(210);
  // 200 more Results of 64 tasks would be megabytes; 200 more values are a few kilobytes.
  EXPECT_LT(many, few + 256 * 1024) << "10 seeds: " << few << " bytes, 210 seeds: " << many;
}

#if !defined(__SANITIZE_ADDRESS__)
// When no more threads can be created, the ones there share the runs (std::thread's
// exception used to end the process with "terminate called without an active exception").
// In a child process whose address space leaves room for a few 8 MiB thread stacks only.
TEST(CompareDeathTest, ThreadsThatCannotBeCreatedAreDoneWithout) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto body = [] {
        scenario::CompareSpec spec;
        for (const char* s : {"workload=hog", "machine=small4", "threads=4", "duration=1ms"})
          if (!scenario::set_assignment(&spec.base, s).empty()) std::_Exit(3);
        spec.vary_key = "hz";
        spec.vary_values = {"250"};
        spec.seeds = 64;
        spec.jobs = 64;
        spec.metrics = {"cpu_user_share"};
        long pages = 0;
        std::ifstream("/proc/self/statm") >> pages;
        const rlim_t room = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (64 << 20);
        const rlimit lim{room, room};
        if (setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(4);
        report::Comparison c;
        const std::string err = scenario::compare(spec, &c);
        std::_Exit(err.empty() && c.rows.at(0).values.at(0).size() == 64 ? 0 : 5);
  };
  EXPECT_EXIT(body(), ::testing::ExitedWithCode(0), "");
}
#endif

// Each design's counters table decides what a run reports: the per-task counters under their
// /proc/<pid>/sched names, and the summed metrics in the design's order, slice_ext_missed
// only when rseq pages can be missing. spinlock adds its request metrics for any design.
TEST(Scenario, EachSliceExtDesignReportsItsOwnCountersInItsOrder) {
  struct Want {
    const char* ext;
    const char* miss;
    std::vector<std::string> extra, metrics;
  };
  const std::vector<Want> wants = {
      {"none", "0", {}, {}},
      {"rfc", "0", {"nr_preempt_delay_denied", "nr_preempt_delay_granted"},
       {"slice_ext_requests", "slice_ext_grants_seen", "slice_ext_granted", "slice_ext_denied",
        "slice_ext_expired"}},
      {"rfc", "0.1", {"nr_preempt_delay_denied", "nr_preempt_delay_granted"},
       {"slice_ext_requests", "slice_ext_grants_seen", "slice_ext_granted", "slice_ext_denied",
        "slice_ext_expired", "slice_ext_missed"}},
      {"rseq2023", "0.1",
       {"slice_ext.aborted", "slice_ext.expired", "slice_ext.granted", "slice_ext.missed",
        "slice_ext.revoked", "slice_ext.yielded"},
       {"slice_ext_requests", "slice_ext_grants_seen", "slice_ext_granted", "slice_ext_expired",
        "slice_ext_missed"}},
      {"mainline", "0",
       {"slice_ext.aborted", "slice_ext.expired", "slice_ext.granted", "slice_ext.missed",
        "slice_ext.revoked", "slice_ext.yielded"},
       {"slice_ext_requests", "slice_ext_grants_seen", "slice_ext_granted", "slice_ext_expired",
        "slice_ext_revoked", "slice_ext_yielded", "slice_ext_aborted"}},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(std::string(w.ext) + " rseq_miss=" + w.miss);
    scenario::Experiment e;
    for (const std::string& s :
         {std::string("workload=spinlock"), std::string("machine=small4"), std::string("threads=4"),
          std::string("hogs=2"), std::string("duration=20ms"), "ext=" + std::string(w.ext),
          "slice_ext.rseq_miss=" + std::string(w.miss)})
      ASSERT_EQ(scenario::set_assignment(&e, s), "");
    report::Results r;
    ASSERT_EQ(scenario::run(e, &r), "");
    std::vector<std::string> metrics;
    for (const report::Metric& m : r.metrics)
      if (m.name.rfind("slice_ext_", 0) == 0) metrics.push_back(m.name);
    EXPECT_EQ(metrics, w.metrics);
    ASSERT_FALSE(r.tasks.empty());
    std::vector<std::string> extra;
    for (const auto& [key, value] : r.tasks.front().extra)
      if (key.rfind("slice_ext", 0) == 0 || key.rfind("nr_preempt_delay", 0) == 0) extra.push_back(key);
    EXPECT_EQ(extra, w.extra);
    EXPECT_EQ(r.kernel_params.count("slice_ext"), std::string(w.ext) == "none" ? 0u : 1u);
  }
}
