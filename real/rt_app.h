// `schedlab real --rt-app FILE.json`: runs an rt-app description with rt-app itself
// (Debian's rt-app 1.0, /usr/bin/rt-app) on this host and reads the per-thread logs it writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace real {

// One line of an rt-app log (one run of a phase), as rt-app 1.0 writes it under its header
// "#idx perf run period start end rel_st slack c_duration c_period wu_lat" (doc/tutorial.txt,
// "Log and gnuplot"). Times in us.
struct RtAppLogRow {
  int64_t idx = 0, perf = 0, run = 0, period = 0, start = 0, end = 0, rel_st = 0, slack = 0,
          c_duration = 0, c_period = 0, wu_lat = 0;
};

// Parses one log file's text: "" and the rows, or an error naming the line. Columns are found
// by the header's names; run, slack and wu_lat must be there.
std::string parse_rt_app_log(const std::string& text, std::vector<RtAppLogRow>* rows);

// A task's lines, over all its threads (the figures the simulator's rt-app workload reports).
struct RtAppTaskSummary {
  std::string task;
  int threads = 0;
  uint64_t loops = 0;  // log lines
  double run_mean_us = 0, run_max_us = 0;
  double slack_mean_us = 0, slack_min_us = 0;
  double wu_lat_mean_us = 0, wu_lat_max_us = 0;
};

// Reads the logs `<basename>-<task>-<n>.log` in `dir` into one summary per task (sorted by
// name). "" or an error.
std::string summarize_rt_app_logs(const std::string& dir, const std::string& basename,
                                  std::vector<RtAppTaskSummary>* out);

struct RtAppRun {
  double elapsed_s = 0;  // wall time of the rt-app process
  std::vector<RtAppTaskSummary> tasks;
};

// Runs `binary` on `json_path` with its logs in a new temporary directory (global.logdir and
// log_basename replaced; global.duration replaced by `duration_s` when > 0), waits for it, and
// reads the logs. The directory is removed afterwards. "" or an error (the binary missing or
// failing, with the end of its output; or not done after `timeout_s` seconds, 0 = the
// duration and 10 s, or 60 s without a duration).
std::string run_rt_app(const std::string& binary, const std::string& json_path, int64_t duration_s,
                       int64_t timeout_s, RtAppRun* out);

// Prints the summaries as a table.
void print_rt_app_run(const RtAppRun& r, std::ostream& out);

// `schedlab real --rt-app FILE --compare-sim`: the simulator's side (cli/cmd_real.cc). Called
// first with measured == nullptr to check that the simulator can run the file (exit code 0,
// else the error is printed and 2 returned), then with the measured run.
using RtAppCompareHook = int (*)(const std::string& json_path, int64_t duration_s, const RtAppRun* measured);
void set_rt_app_compare_hook(RtAppCompareHook hook);
RtAppCompareHook rt_app_compare_hook();

}  // namespace real
