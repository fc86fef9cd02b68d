// `schedlab run --trace`: the ftrace text's grammar line by line, the trace.dat read back by
// trace-cmd event for event, the window, bad options, and a run traced or not giving the
// same results.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
// g++ 12 at -O1 (the sanitizer build) warns inside <regex> itself: a false positive, and CI
// builds with -Werror.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"

namespace {

std::string tmp_path(const std::string& name) {
  return ::testing::TempDir() + "schedlab_trace_" + std::to_string(getpid()) + "_" + name;
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
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

// A small run with most kinds of event: forks, switches, wakeups from I/O waits, migrations,
// ticks and IPIs, hrtimers, user spans, and slice extensions granted and yielded (the OLTP
// mix asks for one around each latch).
// 100 ms holds a few grants: the kernel sees a request only when a reschedule comes inside a
// latch (about once in 11 ms here).
std::vector<std::string> traced_run(const std::string& file) {
  return {"run", "oltp", "-m", "small4", "-d", "100ms", "--set", "ext=mainline", "--trace", file};
}

// One event: comm, pid, cpu, timestamp text, event name, fields (spaces collapsed).
using Event = std::tuple<std::string, int, int, std::string, std::string, std::string>;

// `comm-pid [cpu] flags ts: event: fields`, as the text has it and as `trace-cmd report -N
// -t` prints it (no flags column, "print: tracing_mark_write:" for a trace_marker write).
std::vector<Event> parse_events(const std::string& text) {
  static const std::regex line(R"(^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(?:[.a-zA-Z]{5}\s+)?(\d+\.\d{9}):\s+(\S+):\s+(.*)$)");
  std::vector<Event> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    if (l.empty() || l[0] == '#' || l.rfind("cpus=", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(l, m, line)) {
      ADD_FAILURE() << "not an event line: " << l;
      continue;
    }
    std::string ev = m[5], rest = m[6];
    if (ev == "print:" || ev == "print") {
      const size_t colon = rest.find(": ");
      ev = rest.substr(0, colon);
      rest = rest.substr(colon + 2);
    }
    if (!ev.empty() && ev.back() == ':') ev.pop_back();
    std::istringstream words(rest);
    std::string w, fields;
    while (words >> w) fields += (fields.empty() ? "" : " ") + w;
    out.emplace_back(m[1], std::stoi(m[2]), std::stoi(m[3]), m[4], ev, fields);
  }
  return out;
}

// Merged by time as trace-cmd merges its per-CPU buffers; a CPU's own order kept.
void sort_by_time(std::vector<Event>* v) {
  std::stable_sort(v->begin(), v->end(), [](const Event& a, const Event& b) {
    return std::tie(std::get<3>(a), std::get<2>(a)) < std::tie(std::get<3>(b), std::get<2>(b));
  });
}

}  // namespace

// The text is what `cat trace` prints: the "# tracer: nop" header, then one event per line,
// each event's fields in its TP_printk format, timestamps never going back.
TEST(TraceText, EveryLineFollowsTheFtraceGrammar) {
  const std::string file = tmp_path("grammar.txt");
  ASSERT_EQ(run_cli(traced_run(file)), 0);
  const std::string text = slurp(file);
  ASSERT_EQ(text.rfind("# tracer: nop\n#\n# entries-in-buffer/entries-written: ", 0), 0u);
  static const std::regex line(
      R"(^ {0,16}\S(?:.*\S)?-\d+ *\[\d{3}\] [.d][.][.hs][.][.] +(\d+)\.(\d{9}): ([a-z_]+): (.*)$)");
  const std::string comm = R"(\S(?:.*\S)?)";
  const std::map<std::string, std::regex> fields = {
      {"sched_switch", std::regex("prev_comm=" + comm + R"( prev_pid=\d+ prev_prio=\d+ prev_state=(R\+?|S|X) ==> next_comm=)" + comm + R"( next_pid=\d+ next_prio=\d+)")},
      {"sched_wakeup", std::regex("comm=" + comm + R"( pid=\d+ prio=\d+ target_cpu=\d{3})")},
      {"sched_wakeup_new", std::regex("comm=" + comm + R"( pid=\d+ prio=\d+ target_cpu=\d{3})")},
      {"sched_migrate_task", std::regex("comm=" + comm + R"( pid=\d+ prio=\d+ orig_cpu=\d+ dest_cpu=\d+)")},
      {"sched_process_fork", std::regex("comm=" + comm + R"( pid=\d+ child_comm=)" + comm + R"( child_pid=\d+)")},
      {"sched_process_exit", std::regex("comm=" + comm + R"( pid=\d+ prio=\d+)")},
      {"irq_handler_entry", std::regex(R"(irq=\d+ name=[a-z_]+)")},
      {"irq_handler_exit", std::regex(R"(irq=\d+ ret=handled)")},
      {"softirq_entry", std::regex(R"(vec=\d \[action=[A-Z_]+\])")},
      {"softirq_exit", std::regex(R"(vec=\d \[action=[A-Z_]+\])")},
      {"hrtimer_expire_entry", std::regex(R"(hrtimer=0x[0-9a-f]+ function=[a-z_]+ now=\d+)")},
      {"hrtimer_expire_exit", std::regex(R"(hrtimer=0x[0-9a-f]+)")},
      {"tracing_mark_write", std::regex(R"([BS]\|\d+\|.+|E\|\d+|F\|\d+\|.+)")},
  };
  static const std::regex slice_ext("comm=" + comm + R"( pid=\d+)");
  std::istringstream in(text);
  std::string l;
  int64_t prev_ts = 0;
  std::set<std::string> seen;
  int events = 0;
  while (std::getline(in, l)) {
    if (l[0] == '#') continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    const std::string ev = m[3], rest = m[4];
    seen.insert(ev);
    events++;
    auto f = fields.find(ev);
    if (ev.rfind("slice_ext_", 0) == 0)
      EXPECT_TRUE(std::regex_match(rest, slice_ext)) << l;
    else if (f != fields.end())
      EXPECT_TRUE(std::regex_match(rest, f->second)) << l;
    else
      ADD_FAILURE() << "unknown event: " << l;
    const int64_t ts = std::stoll(m[1]) * 1000000000 + std::stoll(m[2]);
    EXPECT_GE(ts, prev_ts) << l;
    prev_ts = ts;
  }
  EXPECT_GT(events, 100);
  for (const char* ev : {"sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_process_fork",
                         "irq_handler_entry", "irq_handler_exit", "hrtimer_expire_entry",
                         "hrtimer_expire_exit", "tracing_mark_write", "sched_migrate_task",
                         "slice_ext_request", "slice_ext_grant", "slice_ext_yield"})
    EXPECT_TRUE(seen.count(ev)) << ev;
  std::remove(file.c_str());
}

// Runs `args` + --trace to a text file and to a trace.dat, has trace-cmd report read the
// trace.dat back (-N: the events' own print formats, no plugins; -t: timestamps in ns), and
// expects the same events in the same order.
static void expect_trace_cmd_reads_back_the_text(std::vector<std::string> args, const std::string& name) {
  const std::string txt = tmp_path(name + ".txt"), dat = tmp_path(name + ".dat"), rep = tmp_path(name + ".rep");
  std::vector<std::string> a = args, b = args;
  a.insert(a.end(), {"--trace", txt});
  b.insert(b.end(), {"--trace", dat});
  ASSERT_EQ(run_cli(a), 0);
  ASSERT_EQ(run_cli(b), 0);
  ASSERT_EQ(std::system(("trace-cmd report -N -t '" + dat + "' > '" + rep + "' 2>/dev/null").c_str()), 0);
  std::vector<Event> x = parse_events(slurp(txt)), y = parse_events(slurp(rep));
  sort_by_time(&x);
  sort_by_time(&y);
  ASSERT_GT(x.size(), 20u);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "event " << i;
  for (const std::string& f : {txt, dat, rep}) std::remove(f.c_str());
}

static bool have_trace_cmd() { return std::system("command -v trace-cmd >/dev/null 2>&1") == 0; }

// The trace.dat is trace-cmd's file format: `trace-cmd report` reads it back, and what it
// prints is the text trace of the same run, event for event (ring buffer pages filled and
// chained, user spans as the ftrace print event).
TEST(TraceDat, TraceCmdReportReadsBackTheTextEventForEvent) {
  if (!have_trace_cmd()) GTEST_SKIP() << "trace-cmd is not installed (scripts/bootstrap installs it)";
  expect_trace_cmd_reads_back_the_text(
      {"run", "oltp", "-m", "small4", "-d", "100ms", "--set", "ext=mainline"}, "same");
}

// Gaps of 300 ms between a CPU's events (over the 27-bit time delta of an event header)
// go through time-extend entries and read back at the same times.
TEST(TraceDat, LongGapsBetweenEventsKeepTheirTimes) {
  if (!have_trace_cmd()) GTEST_SKIP() << "trace-cmd is not installed (scripts/bootstrap installs it)";
  expect_trace_cmd_reads_back_the_text({"run", "wakeup-latency", "-m", "small4", "-d", "1s", "--set",
                                        "interval=300ms", "--set", "hogs=0", "--set", "nohz_idle=1"},
                                       "gaps");
}

// --trace-window keeps the events of [START, END) only.
TEST(TraceText, WindowKeepsOnlyTheEventsInsideIt) {
  const std::string file = tmp_path("window.txt");
  std::vector<std::string> args = traced_run(file);
  args.insert(args.end(), {"--trace-window", "10ms,12ms"});
  ASSERT_EQ(run_cli(args), 0);
  const std::vector<Event> ev = parse_events(slurp(file));
  ASSERT_FALSE(ev.empty());
  for (const Event& e : ev) {
    const double t = std::stod(std::get<3>(e));
    EXPECT_GE(t, 0.010);
    EXPECT_LT(t, 0.012);
  }
  std::remove(file.c_str());
}

// Tracing only watches: the run's JSON is byte-identical with and without --trace.
TEST(Trace, DoesNotChangeTheRunResults) {
  const std::string plain = tmp_path("plain.json"), traced = tmp_path("traced.json"),
                    file = tmp_path("results.dat");
  std::vector<std::string> args = {"run", "oltp", "-m", "small4", "-d", "40ms",
                                   "--set", "ext=mainline", "--json"};
  std::vector<std::string> a = args, b = args;
  a.push_back(plain);
  b.insert(b.end(), {traced, "--trace", file});
  ASSERT_EQ(run_cli(a), 0);
  ASSERT_EQ(run_cli(b), 0);
  EXPECT_EQ(slurp(plain), slurp(traced));
  EXPECT_TRUE(exists(file));
  for (const std::string& f : {plain, traced, file}) std::remove(f.c_str());
}

// Bad trace options: one line naming the option and the value, exit 2, no file.
TEST(Trace, BadOptionsNameTheOptionAndLeaveNoFile) {
  const std::string file = tmp_path("bad.txt");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--trace", file, "--trace-window", "5ms"}, "--trace-window: must be START,END"},
      {{"--trace", file, "--trace-window", "5ms,2ms"}, "(got '5ms,2ms')"},
      {{"--trace", file, "--trace-window", "5,6ms"}, "(got '5,6ms')"},
      {{"--trace", file, "--trace-format", "json"}, "--trace-format: must be text or dat (got 'json')"},
      {{"--trace-window", "1ms,2ms"}, "--trace-window: needs --trace FILE"},
      {{"--trace", "/nonexistent-dir/t.dat"}, "cannot write /nonexistent-dir/t.dat"},
  };
  for (const auto& [extra, msg] : cases) {
    std::vector<std::string> args = {"run", "locktable", "-m", "small4", "-d", "5ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    EXPECT_EQ(run_cli(args, &err), 2) << msg;
    EXPECT_NE(err.find(msg), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_FALSE(exists(file)) << msg;
  }
}
