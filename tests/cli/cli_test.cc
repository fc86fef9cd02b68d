// The command line: bad input gives one line naming the parameter and exit code 2 with no
// output file; the same scenario and seed give byte-identical JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "report/json.h"
#include "scenario/compare.h"
#include "scenario/experiment.h"

namespace {

std::string tmp_path(const std::string& name) {
  return ::testing::TempDir() + "schedlab_cli_" + std::to_string(getpid()) + "_" + name;
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

std::string source_dir() {
  const char* d = std::getenv("SCHEDLAB_SOURCE_DIR");
  return d ? d : ".";
}

int run_cli(std::vector<std::string> args, std::string* err = nullptr) {
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args(args);
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  if (err) *err = e;
  return rc;
}

void expect_bad_input(std::vector<std::string> args, const std::string& names) {
  const std::string json = tmp_path("bad.json");
  args.push_back("--json");
  args.push_back(json);
  std::string err;
  EXPECT_EQ(run_cli(args, &err), 2) << names;
  EXPECT_NE(err.find(names), std::string::npos) << "stderr: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(exists(json));
}

}  // namespace

TEST(Cli, BadInputNamesTheParameterAndExitsTwoWithoutOutput) {
  expect_bad_input({"run", "nosuchworkload"}, "nosuchworkload");
  expect_bad_input({"bench", "--repeat", "0"}, "--repeat");
  expect_bad_input({"run", "hog", "--machine", "nosuchmachine"}, "nosuchmachine");
  expect_bad_input({"run", "hog", "--duration", "0"}, "duration");
  expect_bad_input({"run", "locktable", "--machine", "small4", "--set", "hogs_start=sideways"}, "hogs_start");
  expect_bad_input({"run", "hog", "--duration", "-5ms"}, "duration");
  expect_bad_input({"run", "hog", "--set", "launcher=shell"}, "launcher: expected task or outside");
  expect_bad_input({"run", "hog", "--cpus", "0"}, "cpus");
  expect_bad_input({"run", "hog", "--machine", "small4", "--cpus", "9"}, "cpus");
  expect_bad_input({"run", "hog", "--set", "nice=25"}, "nice");
  expect_bad_input({"run", "wakeup-latency", "--set", "priority=0"}, "priority: expected an integer from 1 to 99");
  expect_bad_input({"run", "wakeup-latency", "--set", "priority=100"}, "priority");
  expect_bad_input({"run", "wakeup-latency", "--machine", "small4", "--set", "cpu=7"}, "cpu: expected an integer from -1 to 3");
  // Values beyond int are refused, not wrapped (4294967297 would read as 1).
  expect_bad_input({"run", "hog", "--set", "threads=4294967297"}, "threads");
  expect_bad_input({"run", "hog", "--set", "nice=4294967296"}, "nice");
  expect_bad_input({"run", "hog", "--set", "cpus=4294967297"}, "cpus");
  expect_bad_input({"run", "hog", "--set", "hz=4294967546"}, "hz");
  expect_bad_input({"run", "hog", "--set", "rr_timeslice_ms=2147483648"}, "rr_timeslice_ms");
  expect_bad_input({"run", "hog", "--set", "slice_ext.nsec=nan"}, "slice_ext.nsec");
  expect_bad_input({"run", "hog", "--set", "slice_ext.rseq_len=16"}, "slice_ext.rseq_len");
  expect_bad_input({"run", "extend-sched2", "--set", "start_gap=4e18"}, "start_gap");
  // A loop that takes no time is refused rather than simulated forever.
  expect_bad_input({"run", "spinlock", "--set", "cs=0", "--set", "think=0"}, "cs, think");
  expect_bad_input({"run", "locktable", "--set", "query=0", "--set", "cs=0"}, "query, cs");
  expect_bad_input({"run", "extend-sched2", "--set", "cs=exp:0"}, "cs");
  // An unknown --proc pid is found before the results file is written.
  expect_bad_input({"run", "hog", "--machine", "small4", "--duration", "1ms", "--proc", "999"}, "--proc");
  // Negative values of the options are errors, not "not given".
  expect_bad_input({"run", "hog", "--seed", "-5"}, "--seed");
  expect_bad_input({"run", "hog", "--cpus", "-1"}, "--cpus");
  // A scenario path that is not a regular file.
  expect_bad_input({"run", "/dev/null"}, "not a regular file");
  expect_bad_input({"run", "hog", "--set", "bogus=1"}, "bogus");
  expect_bad_input({"run", "hog", "--set", "hz=123"}, "hz");
  expect_bad_input({"run", "hog", "--kernel", "6.12", "--set", "preempt=lazy"}, "preempt");
  expect_bad_input({"run", "hog", "--set", "sched_feat.NOPE=true"}, "NOPE");
  expect_bad_input({"run", "spinlock", "--set", "locks=0"}, "locks");
  expect_bad_input({"run", "hog", "--set", "fair_server.runtime_ns=abc"}, "fair_server.runtime_ns");
  expect_bad_input({"run", "hog", "--set", "fair_server.period_ns=10"}, "fair_server.period_ns");
  expect_bad_input({"run", "hog", "--set", "fair_server.runtime_ns=2000000000"},
                   "fair_server.runtime_ns");
  expect_bad_input({"run", "hog", "--set", "machine.timer_irq_jitter_ns=-1"}, "timer_irq_jitter_ns");
  expect_bad_input({"run", "hog", "--set", "machine.timer_irq_jitter_ns=2us"}, "timer_irq_jitter_ns");
  expect_bad_input({"run", "hog", "--set", "machine.no_such_cost=1"}, "no_such_cost");
  expect_bad_input({"run", "hog", "--set", "skew_tick=often"}, "skew_tick");
}

TEST(Cli, MmCidBadSettingsExitTwo) {
  expect_bad_input({"run", "hog", "--set", "mm_cid=eager"}, "mm_cid: unknown implementation 'eager'");
  expect_bad_input({"run", "hog", "--kernel", "7.0", "--set", "mm_cid=lazy"}, "mm_cid: lazy");
  expect_bad_input({"run", "hog", "--kernel", "6.18", "--set", "mm_cid=owner"}, "mm_cid: owner");
  expect_bad_input({"run", "hog", "--kernel", "6.12", "--set", "mm_cid=batched"}, "mm_cid: batched");
  expect_bad_input({"run", "hog", "--kernel", "6.18", "--set", "mm_cid=batched", "--set",
                    "mm_cid.scan_batch=0"}, "mm_cid.scan_batch");
  expect_bad_input({"run", "hog", "--machine", "small4", "--kernel", "6.18", "--set", "mm_cid=batched",
                    "--set", "mm_cid.scan_batch=5"}, "mm_cid.scan_batch: must be in 1..4");
}

TEST(Cli, AMalformedScenarioFileIsRejectedNamingTheFile) {
  const std::string path = tmp_path("broken.toml");
  std::ofstream(path) << "workload = \"hog\"\nduration = [1,\n";
  expect_bad_input({"run", path}, path);
  std::ofstream(path) << "workload = \"hog\"\nbogus_key = 3\n";
  expect_bad_input({"run", path}, "bogus_key");
  std::remove(path.c_str());
}

TEST(Cli, HelpAndListSucceed) {
  EXPECT_EQ(run_cli({"--help"}), 0);
  EXPECT_EQ(run_cli({"run", "--help"}), 0);
  EXPECT_EQ(run_cli({"list"}), 0);
  EXPECT_EQ(run_cli({"list", "spinlock"}), 0);
  EXPECT_EQ(run_cli({"--no-such-flag"}), 2);
}

// `list` gives 7.0's feature defaults and names the versions whose default differs.
TEST(Cli, ListNamesPerVersionFeatureDefaults) {
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(cli::main_with_args({"list"}), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("sched_feat.NI_RANDOM            true (6.12: false)"), std::string::npos) << out;
  EXPECT_NE(out.find("sched_feat.PLACE_LAG            true\n"), std::string::npos) << out;
}

// `list` says which registration lengths get 7.0.10's extension, and that rseq_miss is the
// RFC-era concern, not what 7.0 does with a non-resident page.
TEST(Cli, ListExplainsTheRseqSettings) {
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(cli::main_with_args({"list"}), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("concern raised against the RFC, not 7.0"), std::string::npos) << out;
  EXPECT_NE(out.find("slice_ext.rseq_len"), std::string::npos) << out;
  EXPECT_NE(out.find("slice_ext.require_rseq_v2"), std::string::npos) << out;
}

// `bench --json` writes the documented keys in order (docs/results-schema.md), with figures
// that agree with each other and the processor they were taken on.
TEST(Cli, BenchJsonHasTheDocumentedKeysAndConsistentFigures) {
  const std::string path = tmp_path("bench.json");
  ASSERT_EQ(run_cli({"bench", "--duration", "20ms", "--repeat", "2", "--json", path}), 0);
  std::ifstream in(path);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(in);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "scenario", "machine", "cpus", "simulated_seconds", "events", "repeat",
                      "wall_seconds", "wall_seconds_all", "events_per_second",
                      "simulated_seconds_per_wall_second", "host_cpu"}));
  EXPECT_EQ(j["cpus"], 384);
  EXPECT_EQ(j["repeat"], 2);
  EXPECT_EQ(j["wall_seconds_all"].size(), 2u);
  const double wall = j["wall_seconds"];
  EXPECT_GT(j["events"].get<uint64_t>(), 1000u);
  EXPECT_NEAR(j["events_per_second"].get<double>() * wall, j["events"].get<double>(), 1.0);
  EXPECT_NEAR(j["simulated_seconds_per_wall_second"].get<double>() * wall, 0.02, 1e-9);
  EXPECT_FALSE(j["host_cpu"].get<std::string>().empty());
  std::remove(path.c_str());
}

TEST(Determinism, SameScenarioAndSeedGiveByteIdenticalJson) {
  const std::string a = tmp_path("a.json"), b = tmp_path("b.json"), c = tmp_path("c.json");
  const std::string scen = source_dir() + "/scenarios/locks-2x-genoa.toml";
  ASSERT_EQ(run_cli({"run", scen, "--duration", "200ms", "--json", a}), 0);
  ASSERT_EQ(run_cli({"run", scen, "--duration", "200ms", "--json", b}), 0);
  ASSERT_EQ(run_cli({"run", scen, "--duration", "200ms", "--seed", "2", "--json", c}), 0);
  auto slurp = [](const std::string& p) {
    std::stringstream ss;
    ss << std::ifstream(p).rdbuf();
    return ss.str();
  };
  const std::string ja = slurp(a);
  EXPECT_GT(ja.size(), 1000u);
  EXPECT_EQ(ja, slurp(b));
  EXPECT_NE(ja, slurp(c));
  for (const auto& p : {a, b, c}) std::remove(p.c_str());
}

TEST(Scenario, EveryShippedScenarioRuns) {
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(source_dir() + "/scenarios"))
    if (f.path().extension() == ".toml") names.push_back(f.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 6u);
  for (const std::string& name : names) {
    scenario::Experiment e;
    ASSERT_EQ(scenario::load_scenario_file(source_dir() + "/scenarios/" + name, &e), "") << name;
    e.duration_ns = 50 * 1000 * 1000;
    report::Results r;
    ASSERT_EQ(scenario::run(e, &r), "") << name;
    EXPECT_GT(r.events, 0u);
    EXPECT_EQ(r.warnings, 0u) << r.first_warning;
  }
}

// Spinning clients on an oversubscribed machine: holders get preempted, spinners burn CPU.
TEST(Scenario, OversubscribedSpinLockClientsSufferLockHolderPreemption) {
  scenario::Experiment e;
  for (const char* s : {"workload=spinlock", "machine=small4", "threads=8", "locks=1", "hogs=4",
                        "cs=50us", "think=exp:200us", "duration=500ms"})
    ASSERT_EQ(scenario::set_assignment(&e, s), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  EXPECT_GT(r.metric("lock_holder_preemptions")->value, 0);
  EXPECT_GT(r.metric("spin_cpu_share")->value, 0.05);
}

TEST(Compare, RowsPerSettingWithStatisticsAndChangeAgainstTheFirst) {
  std::string out;
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args({"compare", "spinlock", "--machine", "small4", "--set", "threads=8",
                                      "--set", "hogs=4", "--vary", "ext=none,rfc", "--seeds", "2",
                                      "--duration", "100ms", "--metric", "acquisitions_per_second"});
  out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  for (const char* s : {"acquisitions_per_second", "ext=none", "ext=rfc", "median", "average", "%"})
    EXPECT_NE(out.find(s), std::string::npos) << s << " in\n" << out;
  std::string err;
  EXPECT_EQ(run_cli({"compare", "spinlock", "--vary", "ext=none,bogus", "--duration", "10ms"}, &err), 2);
  EXPECT_NE(err.find("bogus"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"compare", "spinlock", "--vary", "ext", "--duration", "10ms"}, &err), 2);
  EXPECT_EQ(run_cli({"compare", "spinlock", "--vary", "ext=none", "--metric", "nope", "--duration", "10ms",
                     "--machine", "small4"}, &err), 2);
  EXPECT_NE(err.find("nope"), std::string::npos) << err;
}

// A cost override (machine.KEY, or a scenario's [costs]) reaches the run and its results,
// and changes what is simulated: exact timers replay differently from jittered ones.
TEST(Scenario, MachineCostOverridesReachTheRunAndAreRecorded) {
  auto run = [](const std::string& jitter) {
    scenario::Experiment e;
    for (const std::string& s : {std::string("workload=hog"), std::string("machine=small4"),
                                 std::string("threads=6"), std::string("duration=200ms"),
                                 "machine.timer_irq_jitter_ns=" + jitter})
      EXPECT_EQ(scenario::set_assignment(&e, s), "");
    report::Results r;
    EXPECT_EQ(scenario::run(e, &r), "");
    EXPECT_EQ(r.machine_costs.at("timer_irq_jitter_ns"), jitter);
    return report::to_json(r).dump();
  };
  EXPECT_NE(run("0"), run("2000"));
  EXPECT_EQ(run("2000"), run("2000"));

  const std::string path = tmp_path("costs.toml");
  std::ofstream(path) << "workload = \"hog\"\nmachine = \"small4\"\n[costs]\ntimer_irq_jitter_ns = 0\n";
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  ASSERT_EQ(e.machine_costs.size(), 1u);
  EXPECT_EQ(e.machine_costs[0].second, "0");
  std::ofstream(path) << "workload = \"hog\"\n[costs]\ntimer_irq_jitter_ns = -3\n";
  scenario::Experiment bad;
  EXPECT_NE(scenario::load_scenario_file(path, &bad).find("timer_irq_jitter_ns"), std::string::npos);
}

TEST(Scenario, AlsoRunsASecondWorkloadOnTheSameMachine) {
  scenario::Experiment e;
  for (const char* s : {"workload=spinlock", "machine=small4", "threads=8", "duration=100ms"})
    ASSERT_EQ(scenario::set_assignment(&e, s), "");
  ASSERT_EQ(scenario::add_also(&e, "wakeup-latency:hogs=0,priority=90"), "");
  EXPECT_NE(scenario::add_also(&e, "nosuch"), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  ASSERT_NE(r.metric("wakeup_p99_us"), nullptr);
  ASSERT_NE(r.metric("acquisitions_per_second"), nullptr);
  EXPECT_EQ(r.params.at("also.wakeup-latency.priority"), "90");
}

// A row that sets the seed runs that seed (then seed + 1, ... for more seeds): rows for
// seeds 5 and 6 differ, and each equals a plain run with that seed.
TEST(Compare, ARowThatSetsTheSeedRunsThatSeed) {
  scenario::CompareSpec spec;
  for (const char* s : {"workload=spinlock", "machine=small4", "threads=8", "hogs=4", "duration=50ms"})
    ASSERT_EQ(scenario::set_assignment(&spec.base, s), "");
  spec.vary_key = "seed";
  spec.vary_values = {"5", "6"};
  spec.seeds = 1;
  spec.metrics = {"spin_cpu_share"};
  report::Comparison c;
  ASSERT_EQ(scenario::compare(spec, &c), "");
  ASSERT_EQ(c.rows.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    scenario::Experiment e = spec.base;
    e.seed = 5 + static_cast<uint64_t>(i);
    report::Results r;
    ASSERT_EQ(scenario::run(e, &r), "");
    double want = -1;
    for (const auto& m : r.metrics)
      if (m.name == "spin_cpu_share") want = m.value;
    EXPECT_EQ(c.rows[static_cast<size_t>(i)].values[0][0], want) << "seed " << e.seed;
  }
  EXPECT_NE(c.rows[0].values[0][0], c.rows[1].values[0][0]);
}

// Scenario floats keep every digit: 0.1234567 is not rounded to six digits.
TEST(Scenario, FloatValuesKeepTheirPrecision) {
  const std::string path = tmp_path("float.toml");
  std::ofstream(path) << "workload = \"oltp\"\nduration = 1234567.0\n[params]\nio_prob = 0.1234567\n";
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  EXPECT_EQ(e.duration_ns, 1234567);
  EXPECT_EQ(e.params.at("io_prob"), "0.1234567");
}

// Scenario tables take only what belongs in them: kernel settings in [kernel], numbers in
// [costs], plain values in [[also]]; anything else is an error naming it.
TEST(Scenario, TablesRefuseWhatDoesNotBelongInThem) {
  const std::string path = tmp_path("tables.toml");
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    scenario::Experiment e;
    return scenario::load_scenario_file(path, &e);
  };
  EXPECT_EQ(load("workload = \"hog\"\n[kernel]\nhz = 1000\n[params]\nthreads = 2\n"), "");
  EXPECT_NE(load("workload = \"hog\"\n[kernel]\nthreads = 2\n").find("unknown kernel setting 'threads'"),
            std::string::npos);
  EXPECT_NE(load("workload = \"hog\"\n[params.sched_feat]\nHRTICK = true\n").find("unknown table params.sched_feat"),
            std::string::npos);
  EXPECT_NE(load("workload = \"hog\"\n[costs]\ncontext_switch_ns = \"1 # x\"\n").find("costs.context_switch_ns"),
            std::string::npos);
  EXPECT_NE(load("workload = \"hog\"\n[[also]]\nworkload = \"hog\"\nthreads = \"1,nice=5\"\n").find("also.threads"),
            std::string::npos);
  // A distribution keeps its colons.
  EXPECT_EQ(load("workload = \"hog\"\n[[also]]\nworkload = \"spinlock\"\nthink = \"exp:50us\"\n"), "");
}
