// The command line: bad input gives one line naming the parameter and exit code 2 with no
// output file; the same scenario and seed give byte-identical JSON.
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

TEST(Cli, BadInputNamesTheParameterAndExitsTwoWithoutOutput) {
  expect_bad_input({"run", "nosuchworkload"}, "nosuchworkload");
  expect_bad_input({"bench", "--repeat", "0"}, "--repeat");
  expect_bad_input({"run", "hog", "--machine", "nosuchmachine"}, "nosuchmachine");
  expect_bad_input({"run", "hog", "--duration", "0"}, "duration");
  expect_bad_input({"run", "locktable", "--machine", "small4", "--set", "hogs_start=sideways"}, "hogs_start");
  expect_bad_input({"run", "hog", "--duration", "-5ms"}, "duration");
  expect_bad_input({"run", "hog", "--set", "launcher=shell"}, "launcher: expected task or outside");
  expect_bad_input({"run", "hog", "--cpus", "0"}, "cpus");
  expect_bad_input({"run", "hog", "--set", "cgroup=/a", "--set", "cpu.max=500 100000"}, "cpu.max: quota");
  expect_bad_input({"run", "hog", "--set", "cpu.max=50000 100000"}, "cpu.max: needs a cgroup");
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

TEST(Cli, TheDefaultCommandsOptionsParse) {
  // `schedlab` with no command compares 3 seeds per extension; its options are text, checked
  // like a command line's (running it takes too long for a unit test).
  std::string banner;
  const cli::CompareOptions d = cli::default_comparison(&banner);
  long long seeds = 0;
  EXPECT_EQ(cli::parse_int_option("--seeds", d.seeds, 1, scenario::kMaxSeeds, &seeds), "");
  EXPECT_EQ(seeds, 3);
  long long jobs = -1;
  EXPECT_EQ(cli::parse_int_option("--jobs", d.jobs, 0, scenario::kMaxJobs, &jobs), "");
  scenario::Experiment e;
  EXPECT_EQ(cli::build_experiment(d.run, &e), "");
  EXPECT_NE(banner.find("Default: the lock-table test"), std::string::npos);
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
  expect_bad_input({"run", "hog", "--set", "mm_cid.sample_ms=1001"},
                   "mm_cid.sample_ms: must be an integer in 0..1000 (got '1001')");
}

TEST(Cli, AMalformedScenarioFileIsRejectedNamingTheFile) {
  const std::string path = tmp_path("broken.toml");
  std::ofstream(path) << "workload = \"hog\"\nduration = [1,\n";
  expect_bad_input({"run", path}, path);
  std::ofstream(path) << "workload = \"hog\"\nbogus_key = 3\n";
  expect_bad_input({"run", path}, "bogus_key");
  std::remove(path.c_str());
}

// `schedlab list WORKLOAD`: the defaults and the help texts each start in one column, however
// long a parameter's name (rt-app's iorun_bytes_per_us is 18 characters).
TEST(Cli, ListWorkloadAlignsItsColumns) {
  const std::string out = stdout_of({"list", "rt-app"});
  size_t help_col = std::string::npos;
  for (const char* key : {"mem_bytes_per_us", "iorun_bytes_per_us"}) {
    const size_t line = out.find(std::string("  ") + key);
    ASSERT_NE(line, std::string::npos) << key;
    const size_t col = out.find("speed of", line) - line;
    if (help_col == std::string::npos) help_col = col;
    EXPECT_EQ(col, help_col) << key;
  }
}

TEST(Cli, HelpAndListSucceed) {
  EXPECT_EQ(run_cli({"--help"}), 0);
  EXPECT_EQ(run_cli({"run", "--help"}), 0);
  EXPECT_EQ(run_cli({"list"}), 0);
  EXPECT_EQ(run_cli({"list", "spinlock"}), 0);
  EXPECT_EQ(run_cli({"list", "settings"}), 0);
  EXPECT_EQ(run_cli({"list", "costs"}), 0);
  EXPECT_EQ(run_cli({"--no-such-flag"}), 2);
  EXPECT_EQ(run_cli({"list", "hog", "--markdown"}), 2);  // --markdown is for settings and costs
}


// The help of run and compare shows the default of every experiment option, from the same
// scenario::Experiment a run starts from.
TEST(Cli, HelpShowsEveryDefault) {
  const scenario::Experiment d;
  for (const char* cmd : {"run", "compare"}) {
    const std::string h = stdout_of({cmd, "--help"});
    EXPECT_NE(h.find("(default: " + d.machine + ")"), std::string::npos) << h;
    EXPECT_NE(h.find("(default: 1s)"), std::string::npos) << h;
    EXPECT_NE(h.find("(default: " + std::to_string(d.seed) + ")"), std::string::npos) << h;
    EXPECT_NE(h.find("(default: " + d.kernel_version + ")"), std::string::npos) << h;
    EXPECT_NE(h.find("(default: " + d.workload + ")"), std::string::npos) << h;
  }
  EXPECT_EQ(d.duration_ns, 1'000'000'000);
  const std::string top = stdout_of({"--help"});
  EXPECT_NE(top.find("locktable on genoa, --vary ext=none,rfc,rseq2023,mainline, 3 seeds x 1s."),
            std::string::npos) << top;
}

// --per-task prints every task; --limit N caps the rows, and needs --per-task.
TEST(Cli, PerTaskPrintsEveryTaskAndLimitCaps) {
  const std::vector<std::string> base{"run", "locktable", "-m", "small4", "-d", "5ms", "-s",
                                      "clients=60", "-s", "hogs=0", "--per-task"};
  int rc = 0;
  const std::string all = stdout_of(base, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(all.find("more tasks"), std::string::npos) << all;
  std::vector<std::string> capped = base;
  capped.insert(capped.end(), {"--limit", "5"});
  const std::string some = stdout_of(capped, &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_NE(some.find("... 56 more tasks"), std::string::npos) << some;
  expect_bad_input({"run", "hog", "--limit", "3"}, "--limit");
  expect_bad_input({"run", "hog", "--per-task", "--limit", "-1"}, "got '-1'");
}

// extend-sched2's result lines reach stdout as the original prints them, so the RFC thread's
// `| egrep -e "^Ran|^Total|^avg"` finds exactly them; nothing of the run goes to stderr.
TEST(Cli, ExtendSched2ResultLinesStartALineOnStdout) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(cli::main_with_args({"run", "extend-sched2", "-m", "small4", "-d", "100ms"}), 0);
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::istringstream out(::testing::internal::GetCapturedStdout());
  std::vector<std::string> matched;
  for (std::string line; std::getline(out, line);)
    if (line.rfind("Ran", 0) == 0 || line.rfind("Total", 0) == 0 || line.rfind("avg", 0) == 0)
      matched.push_back(line.substr(0, line.find_first_of("0123456789")));
  EXPECT_EQ(matched, (std::vector<std::string>{"Ran for ", "Total wait time: ", "avg # grants ",
                                               "avg # blocks "}));
  EXPECT_EQ(err, "");
}

// docs/scenarios.md's complete example (its ```toml block) loads, and every table reaches
// the experiment: top-level keys, [kernel] with a quoted dotted key, [kernel.sched_feat],
// [params], [costs] and [[also]].
TEST(ScenarioDoc, TheCompleteExampleLoads) {
  std::ifstream doc(source_dir() + "/docs/scenarios.md");
  ASSERT_TRUE(doc) << "docs/scenarios.md";
  std::string line, toml;
  bool in = false, done = false;
  while (!done && std::getline(doc, line)) {
    if (!in && line == "```toml") {
      in = true;
    } else if (in && line == "```") {
      done = true;
    } else if (in) {
      toml += line + "\n";
    }
  }
  ASSERT_TRUE(done) << "no ```toml block";
  const std::string path = tmp_path("doc-example.toml");
  std::ofstream(path) << toml;
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  std::remove(path.c_str());
  ASSERT_EQ(scenario::validate(e), "");
  EXPECT_EQ(e.workload, "spinlock");
  EXPECT_EQ(e.machine, "small4");
  EXPECT_EQ(e.cpus, 4);
  EXPECT_EQ(e.duration_ns, 200'000'000);
  EXPECT_EQ(e.seed, 7u);
  EXPECT_EQ(e.kernel_version, "6.18");
  auto setting = [&](const std::string& k) {
    for (const auto& [key, v] : e.kernel_settings)
      if (key == k) return v;
    return std::string("(unset)");
  };
  EXPECT_EQ(setting("hz"), "1000");
  EXPECT_EQ(setting("slice_ext.nsec"), "30us");
  EXPECT_EQ(setting("sched_feat.PLACE_LAG"), "false");
  EXPECT_EQ(e.params.at("threads"), "8");
  EXPECT_EQ(e.params.at("think"), "exp:200us");
  EXPECT_EQ(e.machine_costs.size(), 2u);
  ASSERT_EQ(e.also.size(), 1u);
  EXPECT_EQ(e.also[0].workload, "wakeup-latency");
  EXPECT_EQ(e.also[0].params.at("priority"), "99");
}

// --csv FILE for run and compare: the file has the header and a line per metric (run) or per
// setting, metric and seed (compare); both outputs on stdout is an error; an unwritable
// destination fails before the run.
TEST(Cli, CsvForRunAndCompare) {
  const std::string run_csv = tmp_path("run.csv"), cmp_csv = tmp_path("cmp.csv");
  auto slurp = [](const std::string& p) {
    std::stringstream ss;
    ss << std::ifstream(p).rdbuf();
    return ss.str();
  };
  ASSERT_EQ(run_cli({"run", "spinlock", "-m", "small4", "-d", "20ms", "--csv", run_csv}), 0);
  const std::string r = slurp(run_csv);
  EXPECT_EQ(r.rfind("name,value,unit\nacquisitions_per_second,", 0), 0u) << r;
  ASSERT_EQ(run_cli({"compare", "spinlock", "-m", "small4", "-d", "20ms", "--vary", "ext=none,rfc",
                     "--seeds", "2", "--metric", "acquisitions_per_second", "--csv", cmp_csv}),
            0);
  const std::string c = slurp(cmp_csv);
  EXPECT_EQ(c.rfind("setting,metric,unit,seed,value\n", 0), 0u) << c;
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 5) << c;
  EXPECT_NE(c.find("\next=rfc,acquisitions_per_second,1/s,2,"), std::string::npos) << c;
  std::remove(run_csv.c_str());
  std::remove(cmp_csv.c_str());
  std::string err;
  EXPECT_EQ(run_cli({"run", "hog", "--json", "-", "--csv", "-"}, &err), 2);
  EXPECT_NE(err.find("--csv"), std::string::npos) << err;
  expect_bad_input({"run", "hog", "-m", "small4", "-d", "1ms", "--csv", "/nonexistent-dir/x.csv"},
                   "/nonexistent-dir/x.csv");
}

bool gnuplot_on_path() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (access((d + "/gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

// `schedlab plot` draws a compare JSON and a run JSON as SVG and PNG with gnuplot. (Skipped
// without gnuplot; scripts/bootstrap installs it.)
TEST(Plot, DrawsAComparisonAndARunAsSvgAndPng) {
  if (!gnuplot_on_path()) GTEST_SKIP() << "gnuplot is not installed";
  const std::string cmp = tmp_path("plot-cmp.json"), run = tmp_path("plot-run.json");
  ASSERT_EQ(run_cli({"compare", "spinlock", "-m", "small4", "-d", "20ms", "--vary", "ext=none,rfc",
                     "--seeds", "2", "--metric", "acquisitions_per_second", "--metric",
                     "spin_cpu_share", "--json", cmp}), 0);
  ASSERT_EQ(run_cli({"run", "wakeup-latency", "-m", "small4", "-d", "20ms", "--json", run}), 0);
  auto slurp = [](const std::string& p) {
    std::stringstream ss;
    ss << std::ifstream(p, std::ios::binary).rdbuf();
    return ss.str();
  };
  for (const std::string& in : {cmp, run}) {
    const std::string svg = tmp_path("plot.svg"), png = tmp_path("plot.png");
    std::string err;
    ASSERT_EQ(run_cli({"plot", in, "-o", svg}, &err), 0) << err;
    const std::string s = slurp(svg);
    EXPECT_NE(s.find("<svg"), std::string::npos);
    EXPECT_NE(s.find(in == cmp ? "acquisitions_per_second" : "CPU occupancy"), std::string::npos);
    ASSERT_EQ(run_cli({"plot", in, "-o", png}, &err), 0) << err;
    EXPECT_EQ(slurp(png).substr(0, 4), "\x89PNG");
    std::remove(svg.c_str());
    std::remove(png.c_str());
  }
  std::remove(cmp.c_str());
  std::remove(run.c_str());
}

// Without gnuplot, or with bad input, plot says so in one line and exits 2, writing nothing.
TEST(Plot, MissingGnuplotAndBadInputExitTwo) {
  const std::string in = tmp_path("plot-in.json"), out = tmp_path("plot-out.svg");
  std::ofstream(in) << R"({"schema": "schedlab.comparison", "schema_version": 2, "metrics": [{"name": "m", "unit": ""}],
    "rows": [{"setting": "a", "metrics": {"m": {"average": 1, "ci95": [0.5, 1.5]}}}]})";
  auto expect_two = [&](std::vector<std::string> args, const std::string& names) {
    std::string err;
    EXPECT_EQ(run_cli(args, &err), 2) << names;
    EXPECT_NE(err.find(names), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_FALSE(exists(out));
  };
  setenv("SCHEDLAB_GNUPLOT", "/nonexistent/gnuplot", 1);
  expect_two({"plot", in, "-o", out}, "gnuplot not found (install the Debian package gnuplot-nox)");
  unsetenv("SCHEDLAB_GNUPLOT");
  expect_two({"plot", in, "-o", tmp_path("plot-out.pdf")}, "-o: the file name must end in .svg or .png");
  expect_two({"plot", tmp_path("no-such.json"), "-o", out}, "no-such.json");
  expect_two({"plot", in}, "--output");
  std::ofstream(in) << "{\"schema\": \"other\"}";
  expect_two({"plot", in, "-o", out}, "schema 'other'");
  std::ofstream(in) << "not json";
  expect_two({"plot", in, "-o", out}, "is not JSON");
  std::remove(in.c_str());
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
                      "simulated_seconds_per_wall_second", "host_cpu", "peak_memory_mb"}));
  EXPECT_GT(j["peak_memory_mb"].get<double>(), 1.0);
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

// `bench --scenario` runs one of the fixed scenarios, the large one on a generated 2048-CPU
// machine; an unknown name is bad input naming the option and the value.
TEST(Cli, BenchScenarioPicksTheMachineAndWorkload) {
  const std::string path = tmp_path("bench_large.json");
  ASSERT_EQ(run_cli({"bench", "--scenario", "large", "--duration", "1ms", "--json", path}), 0);
  std::ifstream in(path);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(in);
  EXPECT_EQ(j["machine"], "synth:8x128x2");
  EXPECT_EQ(j["cpus"], 2048);
  EXPECT_EQ(j["scenario"], "synth:8x128x2 locktable");
  std::remove(path.c_str());
  expect_bad_input({"bench", "--scenario", "tpcc"}, "--scenario must be one of spinlock, locktable, oltp, oltp-cached, large (got 'tpcc')");
}

// `bench --scenario oltp-cached` is the load of scenarios/oltp-cached-genoa.toml in the root
// group, as every bench scenario runs: the same events as that file run with autogroup off.
TEST(Cli, BenchOltpCachedIsTheCachedScenarioFilesLoad) {
  const std::string bench = tmp_path("bench_oltp_cached.json"), run = tmp_path("run_oltp_cached.json");
  ASSERT_EQ(run_cli({"bench", "--scenario", "oltp-cached", "--duration", "2ms", "--json", bench}), 0);
  ASSERT_EQ(run_cli({"run", source_dir() + "/scenarios/oltp-cached-genoa.toml", "--duration", "2ms",
                     "--set", "sched_autogroup_enabled=0", "--json", run}),
            0);
  std::ifstream bin(bench), rin(run);
  const nlohmann::ordered_json b = nlohmann::ordered_json::parse(bin);
  const nlohmann::ordered_json r = nlohmann::ordered_json::parse(rin);
  EXPECT_EQ(b["machine"], "genoa");
  EXPECT_EQ(b["events"], r["run"]["events"]);
  std::remove(bench.c_str());
  std::remove(run.c_str());
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
  for (const char* s : {"acquisitions_per_second", "ext=none", "ext=rfc", "95% CI of average", "average", "sd", "%"})
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
  std::ofstream(path) << "workload = \"oltp\"\n[params]\nio_prob = 0.1234567\n"
                         "[kernel]\n\"slice_ext.rseq_miss\" = 0.7654321\n";
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(path, &e), "");
  EXPECT_EQ(e.params.at("io_prob"), "0.1234567");
  ASSERT_EQ(e.kernel_settings.size(), 1u);
  EXPECT_EQ(e.kernel_settings[0].second, "0.7654321");
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

// ---- Silent misreadings that are errors (a number without a unit, an empty value, ...) ----

// A duration needs its unit: -d 10 is not 10 ns, in the CLI, in --set and in a scenario file.
// Zero, the same in every unit, may go without one.
