// Tests of the report layer: JSON round trip and byte-identical rendering (report/json.h),
// and the text table and /proc/<pid>/sched dump (report/table.h).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "report/json.h"
#include "report/output_file.h"
#include "report/results.h"
#include "report/table.h"

namespace report {
namespace {

namespace fs = std::filesystem;

// A run of `threads` spinning threads in one process plus a main thread and a hog, on 8 CPUs,
// with every field set to something distinguishable from its default.
Results make_results(int threads = 4) {
  Results r;
  r.workload = "spinlock";
  r.machine = "genoa";
  r.cpus = 8;
  r.kernel_version = "6.12";
  r.hz = 250;
  r.preempt = "full";
  r.duration_ns = 10'000'000'000;
  r.seed = 18'446'744'073'709'551'615ull;  // beyond 2^53: must survive as an integer
  r.params = {{"threads", std::to_string(threads)}, {"locks", "1"}, {"think_ns", "20000"}};
  r.kernel_params = {{"base_slice_ns", "3000000"}};
  r.machine_costs = {{"timer_irq_jitter_ns", "0"}};
  r.events = 123'456'789;
  r.metrics = {{"acquisitions_per_second", 12345.678, "1/s", "lock acquisitions completed"},
               {"lock_holder_preemptions", 42, "", "times a lock holder was preempted"},
               {"spin_cpu_share", 0.123456, "of client CPU", "share of CPU burnt spinning"}};
  LatencySummary l;
  l.name = "acquire";
  l.count = 1000;
  l.min_ns = 1200;
  l.p50_ns = 3400;
  l.p99_ns = 56'700;
  l.p999_ns = 89'000;
  l.max_ns = 123'456;
  l.mean_ns = 5678.9;
  r.latencies = {l};
  for (int cpu = 0; cpu < 8; cpu++) {
    CpuResult c;
    c.cpu = cpu;
    c.socket = cpu / 4;  // two sockets of four CPUs
    c.user_ns = 1'000'000'000LL * (cpu + 1);
    c.kernel_ns = 100'000'000;
    c.idle_ns = 10'000'000'000 - c.user_ns - c.kernel_ns;
    c.nr_switches = 1000 + cpu;
    r.per_cpu.push_back(c);
  }
  auto task = [&](int pid, int tgid, const std::string& comm) {
    TaskResult t;
    t.pid = pid;
    t.tgid = tgid;
    t.comm = comm;
    t.policy = "normal";
    t.run_ns = 1'000'000'000;
    t.wait_sum_ns = 2'000'000;
    t.wait_max_ns = 300'000;
    t.wait_count = 100;
    t.nvcsw = 50;
    t.nivcsw = 7;
    t.nr_migrations = 3;
    t.nr_wakeups = 49;
    t.nr_syscalls = 200;
    t.lock_holder_preemptions = 2;
    t.lock_holder_preempted_ns = 6'000'000;
    t.spin_ns = 250'000'000;
    t.sum_exec_runtime_ns = 1'000'000'000;
    t.vruntime = 987'654'321'000;
    t.vlag = -250'000;
    t.deadline = 987'657'321'000;
    t.slice_ns = 3'000'000;
    t.load_weight = 1024;
    t.load_avg = 1010;
    t.runnable_avg = 1009;
    t.util_avg = 498;
    t.util_est = 497;
    t.cpu = pid % 8;
    return t;
  };
  r.tasks.push_back(task(1000, 1000, "spinlock"));
  for (int i = 1; i <= threads; i++) {
    TaskResult t = task(1000 + i, 1000, "spin-client");
    t.extra = {{"acquisitions", 1000 + i}, {"lock_wait_ns", -1}};
    r.tasks.push_back(t);
  }
  TaskResult hog = task(5000, 5000, "hog");
  hog.policy = "fifo";
  hog.rt_priority = 50;
  r.tasks.push_back(hog);
  r.notices = {"threads raised to 4 (one per CPU)"};
  r.warnings = 3;
  r.first_warning = "rq clock went backwards on cpu 2";
  return r;
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// The line of `text` that starts with `prefix` (after leading blanks), or "".
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, prefix.size(), prefix) == 0) return line;
  }
  return "";
}

// ---- JSON ----

TEST(Json, RoundTripGivesEqualResults) {
  const Results r = make_results();
  std::string error = "stale";
  const Results back = from_json(nlohmann::json::parse(render_json(r)), &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(back.workload, r.workload);
  EXPECT_EQ(back.seed, r.seed);
  EXPECT_EQ(back.kernel_params, r.kernel_params);
  EXPECT_EQ(back.metrics, r.metrics);
  EXPECT_EQ(back.latencies, r.latencies);
  EXPECT_EQ(back.per_cpu, r.per_cpu);
  ASSERT_EQ(back.tasks.size(), r.tasks.size());
  for (size_t i = 0; i < r.tasks.size(); i++) EXPECT_EQ(back.tasks[i], r.tasks[i]) << "task " << i;
  EXPECT_EQ(back.tasks[1].extra.at("lock_wait_ns"), -1);
  EXPECT_EQ(back.notices, r.notices);
  EXPECT_EQ(back.first_warning, r.first_warning);
  EXPECT_TRUE(back == r);
}

TEST(Json, RoundTripFromTheOrderedDocumentNeedsNoText) {
  const Results r = make_results();
  std::string error;
  EXPECT_TRUE(from_json(to_json(r), &error) == r);
  EXPECT_EQ(error, "");
}

TEST(Json, SameResultsGiveByteIdenticalText) {
  const std::string a = render_json(make_results());
  const std::string b = render_json(make_results());
  EXPECT_EQ(a, b);
  // And reading the text back and rendering again changes nothing.
  Results back;
  std::string error;
  ASSERT_TRUE(parse_json(a, &back, &error)) << error;
  EXPECT_EQ(render_json(back), a);
}

TEST(Json, TextIsIndentedByTwoSpacesAndEndsWithANewline) {
  const std::string s = render_json(make_results());
  EXPECT_EQ(s.substr(0, 37), "{\n  \"schema\": \"schedlab.results\",\n  \"");
  EXPECT_EQ(s.back(), '\n');
  EXPECT_NE(s[s.size() - 2], '\n');
}

// The original program's result lines are printed as they are, each at the start of a line
// (after the notices), so that `| egrep -e "^Ran|^Total|^avg"` finds them; JSON keeps them.
TEST(Table, ProgramOutputLinesStartALineWithoutPrefix) {
  Results r = make_results();
  r.output = {"Ran for 176 times", "Total wait time: 5.416947", "avg # grants 43 avg reqs 44"};
  const std::string s = render_table(r);
  EXPECT_NE(s.find("\nRan for 176 times\nTotal wait time: 5.416947\navg # grants 43 avg reqs 44\n"),
            std::string::npos) << s;
  EXPECT_LT(s.find("notice: "), s.find("Ran for"));
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["output"][0], "Ran for 176 times");
  std::string error;
  const Results back = from_json(nlohmann::json::parse(render_json(r)), &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(back, r);
  EXPECT_FALSE(to_json(make_results()).contains("output"));
}

TEST(Json, KeysAreInTheDocumentedOrder) {
  const nlohmann::ordered_json j = to_json(make_results());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "schema_version", "experiment", "run",
                                            "metrics", "latencies", "cpus", "tasks", "notices",
                                            "warnings"}));
  keys.clear();
  for (const auto& [k, v] : j["experiment"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"workload", "machine", "cpus", "machine_costs", "kernel",
                                            "duration_ns", "seed", "params"}));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["tasks"][0].begin().key(), "pid");
  EXPECT_EQ(j["tasks"][0].back(), nlohmann::ordered_json::object());  // "extra" comes last
}

TEST(Json, CpuAggregateIsTheSumOfPerCpu) {
  const nlohmann::ordered_json j = to_json(make_results());
  EXPECT_EQ(j["cpus"]["user_ns"], 36'000'000'000LL);  // 1 + 2 + ... + 8 seconds
  EXPECT_EQ(j["cpus"]["kernel_ns"], 800'000'000LL);
  EXPECT_EQ(j["cpus"]["per_cpu"].size(), 8u);
}

TEST(Json, EmptyResultsHaveEveryKeyWithEmptyArraysNotNulls) {
  const nlohmann::ordered_json j = to_json(Results());
  EXPECT_TRUE(j["metrics"].is_array());
  EXPECT_TRUE(j["tasks"].is_array());
  EXPECT_TRUE(j["notices"].is_array());
  EXPECT_TRUE(j["cpus"]["per_cpu"].is_array());
  EXPECT_TRUE(j["experiment"]["params"].is_object());
}

TEST(Json, NonFiniteValuesBecomeNullAndReadBackAsNan) {
  Results r;
  r.metrics = {{"ratio", std::numeric_limits<double>::infinity(), "", ""}};
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_TRUE(j["metrics"][0]["value"].is_null());
  std::string error;
  const Results back = from_json(nlohmann::json::parse(render_json(r)), &error);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(std::isnan(back.metrics.at(0).value));
}

TEST(Json, MissingOptionalKeysKeepTheirDefaults) {
  std::string error = "stale";
  const Results r =
      from_json(nlohmann::json::parse(R"({"experiment": {"workload": "hog"},
                                          "tasks": [{"pid": 7}]})"),
                &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(r.workload, "hog");
  EXPECT_EQ(r.hz, 0);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].pid, 7);
  EXPECT_EQ(r.tasks[0].comm, "");
  EXPECT_TRUE(r.metrics.empty());
}

TEST(Json, UnknownKeysAreIgnored) {
  std::string error;
  const Results r = from_json(nlohmann::json::parse(R"({"added_later": 1, "run": {"events": 5,
                                                      "wall_ns": 9}})"),
                              &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(r.events, 5u);
}

TEST(Json, AWrongTypeIsAnErrorNamingTheKey) {
  nlohmann::json j = nlohmann::json::parse(render_json(make_results()));
  j["tasks"][2]["nvcsw"] = "many";
  std::string error;
  const Results r = from_json(j, &error);
  EXPECT_NE(error.find("tasks[2].nvcsw"), std::string::npos) << error;
  EXPECT_NE(error.find("string"), std::string::npos) << error;
  EXPECT_TRUE(r.tasks.empty());  // nothing half-read
}

TEST(Json, ANegativeCountIsAnErrorNamingTheKey) {
  nlohmann::json j = nlohmann::json::parse(render_json(make_results()));
  j["latencies"][0]["count"] = -1;
  std::string error;
  from_json(j, &error);
  EXPECT_NE(error.find("latencies[0].count"), std::string::npos) << error;
}

TEST(Json, ABadNestedKeyIsNamedWithItsPath) {
  nlohmann::json j = nlohmann::json::parse(render_json(make_results()));
  j["experiment"]["kernel"]["hz"] = 2.5;
  std::string error;
  from_json(j, &error);
  EXPECT_NE(error.find("experiment.kernel.hz"), std::string::npos) << error;
  j = nlohmann::json::parse(render_json(make_results()));
  j["tasks"][1]["extra"]["acquisitions"] = "x";
  from_json(j, &error);
  EXPECT_NE(error.find("tasks[1].extra.acquisitions"), std::string::npos) << error;
}

TEST(Json, AnotherSchemaOrANewerVersionIsRejected) {
  std::string error;
  from_json(nlohmann::json::parse(R"({"schema": "other"})"), &error);
  EXPECT_NE(error.find("schema"), std::string::npos) << error;
  from_json(nlohmann::json{{"schema_version", kSchemaVersion + 1}}, &error);
  EXPECT_NE(error.find("schema_version"), std::string::npos) << error;
  from_json(nlohmann::json::array(), &error);
  EXPECT_NE(error, "");
}

TEST(Json, ParseJsonReportsASyntaxError) {
  Results r;
  std::string error;
  EXPECT_FALSE(parse_json("{\"schema\": ", &r, &error));
  EXPECT_NE(error, "");
}

TEST(Json, InvalidUtf8InACommIsReplacedNotThrown) {
  Results r;
  r.tasks.resize(1);
  r.tasks[0].comm = "bad\xff";
  std::string s;
  EXPECT_NO_THROW(s = render_json(r));
  EXPECT_NE(s.find("bad\xef\xbf\xbd"), std::string::npos);
}

// ---- Text table ----

TEST(Table, HeaderShowsTheExperiment) {
  const std::string s = render_table(make_results());
  const std::string first = s.substr(0, s.find('\n'));
  EXPECT_NE(first.find("spinlock"), std::string::npos);
  EXPECT_NE(first.find("genoa"), std::string::npos);
  EXPECT_NE(first.find("8 cpus"), std::string::npos);
  EXPECT_NE(s.find("6.12"), std::string::npos);
  EXPECT_NE(s.find("HZ=250"), std::string::npos);
  EXPECT_NE(s.find("preempt=full"), std::string::npos);
  EXPECT_NE(s.find("10 s"), std::string::npos);
  EXPECT_NE(s.find("seed 18446744073709551615"), std::string::npos);
  EXPECT_NE(s.find("base_slice_ns=3000000"), std::string::npos);
  EXPECT_NE(s.find("think_ns=20000"), std::string::npos);
}

TEST(Table, ContainsTheMetricNamesValuesAndUnits) {
  const std::string s = render_table(make_results());
  const std::string acq = line_starting(s, "acquisitions_per_second");
  EXPECT_NE(acq.find("12345.7"), std::string::npos) << acq;
  EXPECT_NE(acq.find("1/s"), std::string::npos) << acq;
  EXPECT_NE(line_starting(s, "lock_holder_preemptions").find(" 42 "), std::string::npos);
  EXPECT_NE(line_starting(s, "spin_cpu_share").find("0.12346"), std::string::npos) << s;
}

TEST(Table, MetricValuesAreRightAlignedInOneColumn) {
  const std::string s = render_table(make_results());
  const std::string a = line_starting(s, "acquisitions_per_second");
  const std::string b = line_starting(s, "lock_holder_preemptions");
  EXPECT_EQ(a.find("12345.7") + 7, b.find("42") + 2) << a << "\n" << b;
}

TEST(Table, LatenciesAreShownInMicroseconds) {
  const std::string s = render_table(make_results());
  EXPECT_NE(s.find("latency (us)"), std::string::npos);
  const std::string line = line_starting(s, "acquire ");
  for (const char* v : {"1000", "1.2", "3.4", "56.7", "89.0", "123.5", "5.7"}) {
    EXPECT_NE(line.find(v), std::string::npos) << v << " in " << line;
  }
}

TEST(Table, CpuSummaryNamesTheBusiestAndLeastBusyCpu) {
  const std::string s = render_table(make_results());
  // 36 s user + 0.8 s kernel of 80 s.
  EXPECT_NE(s.find("user 45.0%  kernel 1.0%  idle 54.0%"), std::string::npos) << s;
  EXPECT_NE(s.find("busiest cpu 7 (81.0% busy)"), std::string::npos) << s;
  EXPECT_NE(s.find("least busy cpu 0 (11.0% busy)"), std::string::npos) << s;
  EXPECT_EQ(line_starting(s, "cpu  "), "");
}

TEST(Table, EquallyBusyCpusAreSummedUpInOnePhrase) {
  Results r = make_results();
  for (CpuResult& c : r.per_cpu) c.user_ns = c.kernel_ns = c.idle_ns = 1;
  const std::string s = render_table(r);
  EXPECT_NE(s.find("every cpu 66.7% busy"), std::string::npos) << s;
  EXPECT_EQ(s.find("busiest"), std::string::npos) << s;
}

TEST(Table, PerCpuOptionAddsARowPerCpu) {
  TableOptions o;
  o.per_cpu = true;
  const std::string s = render_table(make_results(), o);
  EXPECT_EQ(count_lines(s), count_lines(render_table(make_results())) + 9);
  EXPECT_NE(line_starting(s, "7 ").find("81.0"), std::string::npos) << s;
}

TEST(Table, TasksAreGroupedByComm) {
  const std::string s = render_table(make_results(4));
  const std::string clients = line_starting(s, "spin-client");
  // 4 threads, 4 s of run time, 20 us mean wait, 300 us max, 200 nvcsw, 25 % spinning.
  for (const char* v : {" 4 ", "4.000", "20.0", "300.0", " 200 ", " 28 ", "25.0"}) {
    EXPECT_NE(clients.find(v), std::string::npos) << v << " in " << clients;
  }
  EXPECT_NE(line_starting(s, "hog"), "");
  EXPECT_EQ(line_starting(s, "1001"), "");  // no per-task rows by default
}

// Two sockets: the tasks of each comm counted by the socket of the CPU they ran on last (task
// pid % 8 here: "spinlock" 1000 on CPU 0, clients 1001-1004 on CPUs 1-4, the hog on CPU 0).
TEST(Table, TasksAreCountedBySocketOnMultiSocketMachines) {
  const std::string s = render_table(make_results(4));
  const size_t at = s.find("tasks by socket");
  ASSERT_NE(at, std::string::npos) << s;
  std::istringstream in(s.substr(at));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line) && !line.empty();) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 3u) << s;
  EXPECT_EQ(rows[0], (std::vector<std::string>{"tasks", "by", "socket", "spinlock", "spin-client", "hog"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"0", "1", "3", "1"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"1", "0", "1", "0"}));
  // One socket: no such table.
  Results one = make_results(4);
  for (CpuResult& c : one.per_cpu) c.socket = 0;
  EXPECT_EQ(render_table(one).find("tasks by socket"), std::string::npos);
}

TEST(Table, PerTaskOptionListsTasksUpToTheLimit) {
  TableOptions o;
  o.per_task = true;
  o.max_tasks = 3;
  const std::string s = render_table(make_results(10), o);
  EXPECT_NE(line_starting(s, "1000 "), "");
  EXPECT_NE(line_starting(s, "1002 "), "");
  EXPECT_EQ(line_starting(s, "1003 "), "");
  EXPECT_NE(s.find("... 9 more tasks"), std::string::npos) << s;
  o.max_tasks = 100;
  EXPECT_NE(line_starting(render_table(make_results(10), o), "5000").find("rt50"),
            std::string::npos);
}

// --per-task means every task: no cap unless one is asked for (run --limit).
TEST(Table, PerTaskListsEveryTaskWithoutALimit) {
  TableOptions o;
  o.per_task = true;
  const Results r = make_results(300);
  const std::string s = render_table(r, o);
  EXPECT_NE(line_starting(s, "1299 "), "") << s;
  EXPECT_EQ(s.find("more tasks"), std::string::npos);
}

TEST(Table, DefaultOutputForSevenHundredThreadsFitsInFortyLines) {
  const std::string s = render_table(make_results(700));
  EXPECT_LE(count_lines(s), 40) << s;
  EXPECT_NE(line_starting(s, "spin-client").find(" 700 "), std::string::npos);
}

TEST(Table, ManyCommsAreCutAfterTheLimit) {
  Results r = make_results(0);
  for (int i = 0; i < 30; i++) {
    TaskResult t;
    t.pid = 2000 + i;
    t.comm = "worker-" + std::to_string(i);
    r.tasks.push_back(t);
  }
  const std::string s = render_table(r);
  EXPECT_NE(s.find("... 22 more comms"), std::string::npos) << s;  // 32 comms, 10 shown
  EXPECT_LE(count_lines(s), 40);
}

TEST(Table, NoticesAndWarningsComeLast) {
  const std::string s = render_table(make_results());
  EXPECT_NE(s.find("notice: threads raised to 4"), std::string::npos);
  EXPECT_NE(s.find("warnings: 3 (first: rq clock went backwards on cpu 2)\n"), std::string::npos);
  EXPECT_GT(s.find("notice:"), s.find("spin-client"));
}

TEST(Table, NoLineEndsInABlank) {
  TableOptions o;
  o.per_cpu = o.per_task = true;
  const std::string s = render_table(make_results(), o);
  EXPECT_EQ(s.find(" \n"), std::string::npos) << s;
}

TEST(Table, EmptyResultsRenderJustTheHeader) {
  const std::string s = render_table(Results());
  EXPECT_EQ(count_lines(s), 3) << s;
}

// ---- /proc/<pid>/sched ----

TEST(ProcSched, StartsWithCommPidAndThreadsThenARule) {
  const Results r = make_results(4);
  const std::string s = render_proc_sched(r.tasks[1], nr_threads(r, 1000));
  EXPECT_EQ(s.substr(0, s.find('\n')), "spin-client (1001, #threads: 5)");
  EXPECT_EQ(s.substr(s.find('\n') + 1, 68), std::string(67, '-') + "\n");
  EXPECT_EQ(render_proc_sched(r.tasks[1]).substr(0, 31), "spin-client (1001, #threads: 1)");
}

TEST(ProcSched, PrintsTimesInMillisecondsLikeLinux) {
  TaskResult t = make_results().tasks[1];
  t.sum_exec_runtime_ns = 12'345'678;
  const std::string s = render_proc_sched(t);
  // "%-45s:%14Ld.%06ld", as kernel/sched/debug.c prints nanosecond fields.
  EXPECT_NE(s.find("\nse.sum_exec_runtime                          :            12.345678\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\nse.vruntime                                  :        987654.321000\n"),
            std::string::npos)
      << s;
  EXPECT_NE(line_starting(s, "se.deadline").find(":        987657.321000"), std::string::npos);
}

TEST(ProcSched, KeepsTheSignOfANegativeLagBelowAMillisecond) {
  const std::string s = render_proc_sched(make_results().tasks[1]);
  EXPECT_EQ(line_starting(s, "se.vlag"),
            "se.vlag                                      :            -0.250000");
}

TEST(ProcSched, PrintsCountsRightAlignedLikeLinux) {
  const std::string s = render_proc_sched(make_results().tasks[1]);
  // "%-45s:%21Ld".
  EXPECT_EQ(line_starting(s, "nr_switches"),
            "nr_switches                                  :                   57");
  for (const char* key : {"se.nr_migrations", "nr_voluntary_switches", "nr_involuntary_switches",
                          "nr_wakeups", "wait_sum", "wait_max", "wait_count"}) {
    EXPECT_EQ(line_starting(s, key).size(), 67u) << key;
  }
  EXPECT_EQ(line_starting(s, "policy").substr(45), ":                    0");
  EXPECT_EQ(line_starting(s, "prio").substr(45), ":                  120");
  EXPECT_EQ(line_starting(s, "se.slice").substr(45), ":              3000000");
}

TEST(ProcSched, ShowsTheWeightAndPeltAveragesBeforeThePolicyLikeLinux) {
  const std::string s = render_proc_sched(make_results().tasks[1]);
  EXPECT_EQ(line_starting(s, "se.load.weight").substr(45), ":                 1024");
  EXPECT_EQ(line_starting(s, "se.avg.load_avg").substr(45), ":                 1010");
  EXPECT_EQ(line_starting(s, "se.avg.runnable_avg").substr(45), ":                 1009");
  EXPECT_EQ(line_starting(s, "se.avg.util_avg").substr(45), ":                  498");
  EXPECT_EQ(line_starting(s, "se.avg.util_est").substr(45), ":                  497");
  EXPECT_LT(s.find("nr_involuntary_switches"), s.find("se.load.weight"));
  EXPECT_LT(s.find("se.avg.util_est"), s.find("\npolicy"));
}

TEST(ProcSched, ListsEveryExtraEntry) {
  const std::string s = render_proc_sched(make_results().tasks[1]);
  EXPECT_EQ(line_starting(s, "acquisitions").substr(45), ":                 1001");
  EXPECT_EQ(line_starting(s, "lock_wait_ns").substr(45), ":                   -1");
}

TEST(ProcSched, RtTasksShowTheirPolicyAndPrioAndNoSlice) {
  const Results r = make_results();
  const std::string s = render_proc_sched(r.tasks.back());
  EXPECT_EQ(line_starting(s, "policy").substr(45), ":                    1");
  EXPECT_EQ(line_starting(s, "prio").substr(45), ":                   49");
  EXPECT_EQ(line_starting(s, "se.slice"), "");
}

}  // namespace
}  // namespace report

// ---- task groups ----

namespace report {
namespace {
Results with_groups() {
  Results r;
  r.workload = "hog";
  r.groups = {{"/svc", 1500000000, 0.375, 100, 0, "0-3"}, {"/batch", 2000000, 0.0005, 1, 1, "2-3,8"}};
  return r;
}
}  // namespace

TEST(Json, GroupsRoundTripAndAreLeftOutWithoutGroups) {
  const Results r = with_groups();
  std::string error = "stale";
  const Results back = from_json(nlohmann::json::parse(render_json(r)), &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(back.groups, r.groups);
  EXPECT_NE(render_json(r).find("\"groups\": ["), std::string::npos);
  EXPECT_EQ(render_json(Results{}).find("\"groups\""), std::string::npos);
}

TEST(Table, GroupsSectionListsEachGroupsUsageShareAndSettings) {
  const std::string out = render_table(with_groups());
  EXPECT_NE(out.find("group     cpu s  machine %  cpu.weight  cpu.idle  cpus"), std::string::npos) << out;
  EXPECT_NE(out.find("  /batch  0.002       0.05           1         1  2-3,8"), std::string::npos) << out;
  EXPECT_EQ(render_table(Results{}).find("cpu.idle"), std::string::npos);
}
}  // namespace report
