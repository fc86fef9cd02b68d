// The real-kernel runner: bad parameters give one error naming the parameter and exit code 2;
// short extend-sched2 and locktable runs print the original's lines and numbers that add up;
// --compare-sim calls the hook or fails cleanly. Runs are short and assert no timing.
#include <sched.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "real/runner.h"

namespace {

int run_cli(const std::vector<std::string>& args, std::string* out = nullptr,
            std::string* err = nullptr) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = real::real_main(args);
  const std::string o = ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  if (out) *out = o;
  if (err) *err = e;
  return rc;
}

void expect_bad_input(const std::vector<std::string>& args, const std::string& names) {
  std::string out, err;
  EXPECT_EQ(run_cli(args, &out, &err), 2) << err;
  EXPECT_NE(err.find(names), std::string::npos) << "stderr: " << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line expected: " << err;
  EXPECT_EQ(out, "");
}

real::Params short_extend_sched2() {
  real::Params p = real::default_params(real::Workload::kExtendSched2);
  p.threads = 2;
  p.duration_ns = 300'000'000;
  p.cs_iterations = 20'000;  // ~0.05 ms
  return p;
}

TEST(RunnerValidate, NamesTheParameterAtFault) {
  real::Params p = short_extend_sched2();
  EXPECT_EQ(real::validate(p), "");
  p.threads = 0;
  EXPECT_NE(real::validate(p).find("--threads"), std::string::npos);
  p = short_extend_sched2();
  p.duration_ns = 0;
  EXPECT_NE(real::validate(p).find("--duration"), std::string::npos);
  p = short_extend_sched2();
  p.locks = 3;  // more lock objects than the 2 threads
  EXPECT_NE(real::validate(p).find("--locks"), std::string::npos);
  p = short_extend_sched2();
  p.mode = 2;
  EXPECT_NE(real::validate(p).find("2023 prototype"), std::string::npos);

  real::Params lt = real::default_params(real::Workload::kLockTable);
  lt.clients = 0;
  EXPECT_NE(real::validate(lt).find("--clients"), std::string::npos);
}

// 10 million threads exceed PID_MAX_LIMIT (4M) on any host: refused before anything starts.
TEST(RunnerValidate, ThreadsBeyondWhatTheHostAllowsAreRefusedNamingTheLimit) {
  real::Params p = short_extend_sched2();
  p.threads = 10'000'000;
  const std::string err = real::validate(p);
  EXPECT_NE(err.find("--threads 10000000 exceeds the threads this host allows"),
            std::string::npos) << err;
  const real::ThreadLimit lim = real::host_thread_limit();
  EXPECT_LT(lim.threads, 10'000'000);
  // The reason names the limiting setting; its figures (tasks running now) move between
  // the two reads while other tests run, so only the name is compared.
  const std::string setting = lim.reason.substr(0, lim.reason.find(' '));
  EXPECT_NE(err.find("(" + setting), std::string::npos) << err << " / " << lim.reason;
  // The hogs count too (1000 clients over the limit: a margin for tasks that end meanwhile).
  real::Params lt = real::default_params(real::Workload::kLockTable);
  lt.clients = 1000;
  lt.hogs = static_cast<int>(lim.threads);
  EXPECT_NE(real::validate(lt).find("--clients 1000 plus --hogs "), std::string::npos);
  lt.hogs = 1;
  EXPECT_EQ(real::validate(lt), "");
}

TEST(RunnerCli, BadInputExitsTwoWithOneLineNamingTheParameter) {
  expect_bad_input({"extend-sched2", "--threads", "10000000"}, "--threads 10000000 exceeds");
  expect_bad_input({"locktable", "--clients", "10000000"}, "--clients 10000000 exceeds");
  expect_bad_input({"extend-sched2", "--threads", "0"}, "--threads");
  expect_bad_input({"extend-sched2", "--duration", "0s"}, "--duration");
  expect_bad_input({"locktable", "--clients", "0"}, "--clients");
  expect_bad_input({"locktable", "--clients", "2", "--locks", "3"}, "--locks");
  expect_bad_input({"extend-sched2", "--threads", "2", "--locks", "5"}, "--locks");
  expect_bad_input({"extend-sched2", "--mode", "2"}, "mode 2 needs a kernel with the 2023 prototype");
  expect_bad_input({"extend-sched2", "--duration", "soon"}, "--duration");
  expect_bad_input({"extend-sched2", "--cpus", "0-"}, "--cpus");
  expect_bad_input({"locktable", "--threads", "2"}, "--threads");
  expect_bad_input({"nosuchworkload"}, "unknown workload");
}

// The mm_cid selftest mode checks its own options before it forks anything.
TEST(RunnerCli, MmCidCompactionTestBadInputExitsTwoNamingTheOption) {
  expect_bad_input({"mm_cid_compaction_test", "--runs", "0"}, "--runs: must be in 1..10000 (got 0)");
  expect_bad_input({"mm_cid_compaction_test", "--checks", "0"}, "--checks");
  expect_bad_input({"mm_cid_compaction_test", "--period", "0ms"}, "--period: must be > 0");
  expect_bad_input({"mm_cid_compaction_test", "--busy", "soon"}, "--busy");
  expect_bad_input({"mm_cid_compaction_test", "--cpus", "0-"}, "--cpus");
  expect_bad_input({"mm_cid_compaction_test", "--threads", "2"}, "--threads");
}

TEST(RunnerCli, DurationsNeedTheirUnit) {
  // A bare number is refused, as everywhere in schedlab: "5" is not read as 5 s.
  expect_bad_input({"extend-sched2", "--duration", "5"},
                   "--duration: expected a duration with its unit, e.g. 2s, 500ms, 100us (got '5')");
  expect_bad_input({"locktable", "--query", "100"}, "--query: expected a duration with its unit");
  expect_bad_input({"locktable", "--cs", "10"}, "--cs: expected a duration with its unit");
  int64_t ns = -1;
  EXPECT_NE(real::parse_duration("--duration", "5", &ns), "");
  EXPECT_EQ(ns, -1);
}

TEST(RunnerCli, HelpExitsZero) {
  std::string out;
  EXPECT_EQ(run_cli({"--help"}, &out), 0);
  EXPECT_NE(out.find("extend-sched2"), std::string::npos);
}

TEST(RunnerCli, UnavailableModeExitsTwo) {
  real::Params p = short_extend_sched2();
  p.mode = 3;
  real::Backend b;
  if (real::check_mode(p, &b).empty()) GTEST_SKIP() << "this kernel has the 7.0 extension";
  expect_bad_input({"extend-sched2", "--mode", "3", "--duration", "10ms"}, "--mode 3");
}

TEST(RunnerParse, DurationsAndCpuLists) {
  int64_t ns = 0;
  EXPECT_EQ(real::parse_duration("--d", "2s", &ns), "");
  EXPECT_EQ(ns, 2'000'000'000);
  EXPECT_EQ(real::parse_duration("--d", "0.3s", &ns), "");
  EXPECT_EQ(ns, 300'000'000);
  EXPECT_EQ(real::parse_duration("--d", "100us", &ns), "");
  EXPECT_EQ(ns, 100'000);
  EXPECT_NE(real::parse_duration("--d", "-1s", &ns), "");
  EXPECT_NE(real::parse_duration("--d", "1h", &ns), "");
  std::vector<int> cpus;
  EXPECT_EQ(real::parse_cpu_list("--cpus", "3,0-1,1", &cpus), "");
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 3}));
  EXPECT_NE(real::parse_cpu_list("--cpus", "2-1", &cpus), "");
  EXPECT_NE(real::parse_cpu_list("--cpus", "0,", &cpus), "");
}

TEST(RunnerExtendSched2, ShortRunPrintsTheOriginalLines) {
  std::string out, err;
  ASSERT_EQ(run_cli({"extend-sched2", "--threads", "3", "--duration", "0.3s",
                     "--cs-iterations", "20000"},
                    &out, &err),
            0)
      << err;
  std::istringstream lines(out);
  std::vector<std::string> l;
  for (std::string s; std::getline(lines, s);) l.push_back(s);
  ASSERT_EQ(l.size(), 9u) << out;
  l.erase(l.begin() + 2);  // the third thread's line
  for (int i = 0; i < 2; ++i) {
    const std::string& s = l[i];
    EXPECT_EQ(s.rfind("thread " + std::to_string(i) + ": count ", 0), 0u) << s;
    for (const char* field : {" total ", " max ", " min ", " total wait ", " max wait ",
                              " min wait ", " #blocks ", " #dlygrnt "})
      EXPECT_NE(s.find(field), std::string::npos) << field << " missing in: " << s;
  }
  EXPECT_EQ(l[2].rfind("Ran for ", 0), 0u);
  EXPECT_NE(l[2].find(" times"), std::string::npos);
  EXPECT_EQ(l[3].rfind("Total wait time: ", 0), 0u);
  EXPECT_EQ(l[4].rfind("avg # grants ", 0), 0u);
  EXPECT_NE(l[4].find(" avg reqs "), std::string::npos);
  // avg reqs = runs / configured CPUs (the original's divisor), not runs / --threads.
  const uint64_t runs = std::stoull(l[2].substr(8));
  const uint64_t reqs = std::stoull(l[4].substr(l[4].find(" avg reqs ") + 10));
  EXPECT_EQ(reqs, runs / static_cast<uint64_t>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)))) << out;
  EXPECT_EQ(l[5].rfind("avg # blocks ", 0), 0u);
  EXPECT_EQ(l[6].rfind("same-CPU hand-offs ", 0), 0u);  // schedlab's lines, after the original's
  EXPECT_EQ(l[7].rfind("measured window ", 0), 0u);
  // 2 CPUs: the original's nobj = 2 / 10 = 0 is replaced by 1, with a notice.
  EXPECT_NE(err.find("divide by zero"), std::string::npos) << err;
}

TEST(RunnerExtendSched2, NumbersAddUp) {
  real::RunResult r;
  ASSERT_EQ(real::run(short_extend_sched2(), &r), "");
  EXPECT_EQ(r.nobj, 1);
  ASSERT_EQ(r.threads.size(), 2u);
  uint64_t counts = 0;
  int64_t wait = 0;
  for (const real::ThreadStats& t : r.threads) {
    counts += t.count;
    wait += t.wait_total_ns;
    EXPECT_LE(t.min_ns, t.max_ns);
    // One request per critical section, plus lost races the kernel had answered.
    EXPECT_GE(t.slice.requests, t.count);
    EXPECT_LE(t.slice.requests - t.count, t.slice.grants + t.slice.denials);
    EXPECT_LE(t.dlygrnt, t.count);
  }
  EXPECT_EQ(counts, r.runs);  // every x++ is one completed critical section
  EXPECT_EQ(wait, r.total_wait_ns);
  // Every 8th section's hold is sampled (the 1st, 9th, ...), within the hold's range.
  size_t samples = 0;
  for (const real::ThreadStats& t : r.threads) {
    EXPECT_EQ(t.hold_samples_ns.size(), std::min<uint64_t>((t.count + 7) / 8, 4096));
    for (int64_t ns : t.hold_samples_ns) {
      EXPECT_GE(ns, t.min_ns);
      EXPECT_LE(ns, t.max_ns);
    }
    samples += t.hold_samples_ns.size();
  }
  EXPECT_EQ(samples > 0, r.section_ns() > 0);
  EXPECT_GT(r.runs, 0u);
  EXPECT_GT(r.elapsed_s, 0.0);
}

// Both workers pinned to one CPU hand the lock over on that CPU every time.
TEST(RunnerExtendSched2, SameCpuHandoffShareIsOneWhenTheWorkersShareACpu) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &set)) ++cpu;
  real::Params p = short_extend_sched2();
  p.cpus = {cpu};
  real::RunResult r;
  ASSERT_EQ(real::run(p, &r), "");
  uint64_t handoffs = 0;
  for (const real::ThreadStats& t : r.threads) handoffs += t.handoffs;
  ASSERT_GT(handoffs, 0u);
  EXPECT_EQ(handoffs, r.runs - 1);  // every critical section but the first follows another
  EXPECT_DOUBLE_EQ(r.same_cpu_handoff_share(), 1.0);
}

TEST(RunnerLockTable, ShortRunCountsExecutions) {
  real::Params p = real::default_params(real::Workload::kLockTable);
  p.clients = 3;
  p.hogs = 1;
  p.duration_ns = 200'000'000;
  p.query_ns = 20'000;
  p.cs_ns = 5'000;
  real::RunResult r;
  ASSERT_EQ(real::run(p, &r), "");
  uint64_t total = 0;
  for (const real::ThreadStats& t : r.threads) {
    total += t.count;
    if (r.backend == real::Backend::kNone) {
      EXPECT_EQ(t.slice.requests, t.count);  // no kernel answers: exactly one per execution
    }
  }
  EXPECT_EQ(total, r.runs);
  EXPECT_GT(r.executions_per_s(), 0.0);
  std::ostringstream out;
  real::print_result(r, out);
  EXPECT_NE(out.str().find("Executions: "), std::string::npos);
  EXPECT_NE(out.str().find(" per second"), std::string::npos);
}

int g_hook_calls = 0;
int fake_compare(const real::Params& p, const real::RunResult& r) {
  ++g_hook_calls;
  EXPECT_EQ(p.threads, 1);
  EXPECT_EQ(r.threads.size(), 1u);
  return 7;
}

TEST(RunnerCli, CompareSimCallsTheHookOrFailsCleanly) {
  real::set_compare_hook(nullptr);
  expect_bad_input({"extend-sched2", "--threads", "1", "--duration", "10ms", "--compare-sim"},
                   "compare-sim not available");
  real::set_compare_hook(fake_compare);
  EXPECT_EQ(run_cli({"extend-sched2", "--threads", "1", "--duration", "10ms",
                     "--cs-iterations", "1000", "--compare-sim"}),
            7);
  EXPECT_EQ(g_hook_calls, 1);
  real::set_compare_hook(nullptr);
}

}  // namespace
