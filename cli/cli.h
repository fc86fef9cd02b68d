// What the schedlab commands share: exit codes, the one-line error, the run options and the
// experiment they build, the progress line, and each command's entry point (one file each:
// cmd_run.cc, cmd_compare.cc, cmd_list.cc, cmd_bench.cc, cmd_real.cc). commands.cc wires them
// to CLI11 subcommands.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "real/rt_app.h"
#include "real/runner.h"
#include "scenario/experiment.h"

namespace cli {

inline constexpr int kExitBadInput = 2;

// Prints "schedlab: error: <msg>" on stderr (unless errors are quiet); returns kExitBadInput.
int fail(const std::string& msg);
// Quiet errors are not printed: a compare's ranks other than 0 in an MPI job, which exit
// with rank 0's code after rank 0 has printed the error.
void set_quiet_errors(bool quiet);

bool file_exists(const std::string& path);

// A progress line on stderr for runs longer than ~2 s, only on a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(int64_t duration_ns) : duration_ns_(duration_ns), tty_(isatty(2)) {}
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void operator()(double done) {
    if (!tty_) return;
    const double wall = elapsed();
    if (wall < 2.0 && !shown_) return;
    shown_ = true;
    std::fprintf(stderr, "\r[%3.0f%%] simulated %.2f of %.2f s, %.1f s elapsed", done * 100,
                 done * static_cast<double>(duration_ns_) / 1e9,
                 static_cast<double>(duration_ns_) / 1e9, wall);
    std::fflush(stderr);
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  int64_t duration_ns_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct RunOptions {
  std::string target;
  // Text as given ("" = not given; an empty value given is refused by the parser).
  std::string machine, kernel, duration, json, csv, cpus, seed, proc, limit;
  std::vector<std::string> sets;
  std::vector<std::string> also;
  bool per_task = false, per_cpu = false;
  // `run` only: --trace FILE, --trace-window START,END, --trace-format text|dat.
  std::string trace, trace_window, trace_format;
};

// An integer option's value in lo..hi, or an error naming the option and the value given.
std::string parse_int_option(const char* name, const std::string& text, long long lo, long long hi,
                             long long* out);

// --json and --csv: at most one of them may be "-" (stdout). "" or the error.
std::string check_stdout_outputs(const RunOptions& o);

// The experiment a run (or each row of a comparison) starts from: target, then options,
// then --set. Returns "" or the error.
std::string build_experiment(const RunOptions& o, scenario::Experiment* out);

struct CompareOptions {
  RunOptions run;
  std::string vary;
  std::vector<std::string> rows;  // LABEL:k=v,k=v
  std::string seeds = "3";
  std::string jobs = "0";
  std::vector<std::string> metrics;
  bool mpi = false;  // --mpi: share the runs among the ranks of an MPI job
};

// The commands; each returns the exit code.
int do_run(const RunOptions& o);
// `banner` is printed before the table (the default command's introduction).
int do_compare(const CompareOptions& o, const std::string& banner = "");
// `what`: a workload to describe, or "" for everything.
int do_list(const std::string& what, bool markdown = false);
// The command run with no subcommand: the RFC thread's lock-table comparison at a size that
// runs in seconds; *banner introduces it.
CompareOptions default_comparison(std::string* banner);
// `schedlab plot INPUT.json -o OUTPUT.svg|png` (cli/cmd_plot.cc).
int do_plot(const std::string& input, const std::string& output);
// The fixed benchmark scenarios (`--scenario`: spinlock, the default, locktable, oltp, large).
int do_bench(const std::string& json, const std::string& duration,
             const std::vector<std::string>& sets, const std::string& repeat_text,
             const std::string& scenario_name);
// `schedlab real ... --compare-sim`: runs the simulator on the `host` machine profile with
// the parameters of a real run and prints both side by side with the relative difference.
int compare_real_with_sim(const real::Params& p, const real::RunResult& measured);
// `schedlab real --rt-app FILE --compare-sim` (real::RtAppCompareHook): with measured ==
// nullptr, checks that the simulator runs the file; then runs it on the host profile (for the
// file's duration, `duration_s` if > 0, or as long as rt-app ran when the file has none) and
// prints each task's figures beside rt-app's.
int compare_rt_app_with_sim(const std::string& json_path, int64_t duration_s, const real::RtAppRun* measured);
// The simulation compare_real_with_sim() runs for real run `p` (measured `m`): *out, and the
// --set assignments it made (for the printed command); `autogroup_enabled` is the host's
// kernel.sched_autogroup_enabled (host_autogroup_enabled()). "" or an error.
std::string sim_experiment_for(const real::Params& p, const real::RunResult& m, int autogroup_enabled,
                               scenario::Experiment* out, std::vector<std::string>* sets_out = nullptr);
int host_autogroup_enabled();

}  // namespace cli
