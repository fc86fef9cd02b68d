// `schedlab real --rt-app`: the reader of rt-app 1.0's logs, and rt-app itself run on a tiny
// file (skipped only where rt-app is not installed; scripts/bootstrap installs it).
#include "real/rt_app.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "real/runner.h"

namespace {

// A log as rt-app 1.0 writes it (doc/tutorial.txt, "Log and gnuplot"), with made-up figures.
constexpr const char* kLog =
    "# Policy : SCHED_OTHER priority : 0\n"
    "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat\n"
    "   0    92164    19935    98965    504549567051    504549666016            2443      78701      20000     100000        266\n"
    "   0    92164    19408    99952    504549666063    504549766015          101455     -80217      20000     100000        265\n";

TEST(RtAppLog, ColumnsAreReadByTheirHeaderNames) {
  std::vector<real::RtAppLogRow> rows;
  ASSERT_EQ(real::parse_rt_app_log(kLog, &rows), "");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].perf, 92164);
  EXPECT_EQ(rows[0].run, 19935);
  EXPECT_EQ(rows[1].slack, -80217);
  EXPECT_EQ(rows[1].wu_lat, 265);
  EXPECT_EQ(rows[1].c_period, 100000);
}

TEST(RtAppLog, AMissingColumnOrARaggedRowIsAnError) {
  std::vector<real::RtAppLogRow> rows;
  EXPECT_NE(real::parse_rt_app_log("#idx perf run period\n 0 1 2 3\n", &rows).find("slack"), std::string::npos);
  const std::string ragged = std::string(kLog) + "   0    1 2\n";
  EXPECT_NE(real::parse_rt_app_log(ragged, &rows).find("line 5"), std::string::npos);
}

TEST(RtAppLog, LogsAreSummarisedPerTaskOverItsThreads) {
  const std::string dir = ::testing::TempDir() + "rt_app_logs";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/x-my-task-0.log") << kLog;
  std::ofstream(dir + "/x-my-task-1.log") << kLog;
  std::ofstream(dir + "/x-other-2.log") << kLog;
  std::vector<real::RtAppTaskSummary> s;
  ASSERT_EQ(real::summarize_rt_app_logs(dir, "x", &s), "");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].task, "my-task");
  EXPECT_EQ(s[0].threads, 2);
  EXPECT_EQ(s[0].loops, 4u);
  EXPECT_DOUBLE_EQ(s[0].run_mean_us, (19935 + 19408) / 2.0);
  EXPECT_EQ(s[0].run_max_us, 19935);
  EXPECT_EQ(s[0].slack_min_us, -80217);
  EXPECT_EQ(s[0].wu_lat_max_us, 266);
}

std::string tiny_file() {
  // No duration and a calibration number: rt-app ends when its tasks have looped (0.2 s).
  // One file per test: ctest runs the tests of this file side by side, and one test's
  // rewrite would truncate the file another is reading.
  const std::string path = ::testing::TempDir() + "rt_app_tiny_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  std::ofstream(path) << R"({ /* two periodic threads and a sleeper */
    "global": {"duration": -1, "calibration": 50, "logdir": "./", "log_basename": "elsewhere"},
    "tasks": {
      "periodic": {"instance": 2, "loop": 1, "phases": {"p": {"loop": 20, "run": 1000,
                   "timer": {"ref": "unique", "period": 10000}}}},
      "sleeper": {"loop": 2, "phases": {"p": {"loop": 5, "run": 500, "sleep": 19000}}},
    }})";
  return path;
}

TEST(RtAppHost, RtAppRunsTheFileAndItsLogsAreRead) {
  if (access("/usr/bin/rt-app", X_OK) != 0) GTEST_SKIP() << "rt-app is not installed (scripts/bootstrap installs it)";
  real::RtAppRun r;
  ASSERT_EQ(real::run_rt_app("/usr/bin/rt-app", tiny_file(), 0, 30, &r), "");
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].task, "periodic");
  EXPECT_EQ(r.tasks[0].threads, 2);
  EXPECT_EQ(r.tasks[0].loops, 40u);
  // The slack column was read (on a busy host it may be negative: an overrun).
  EXPECT_NE(r.tasks[0].slack_mean_us, 0);
  EXPECT_EQ(r.tasks[1].task, "sleeper");
  EXPECT_EQ(r.tasks[1].loops, 10u);
  EXPECT_GT(r.elapsed_s, 0.15);
  EXPECT_FALSE(std::filesystem::exists("elsewhere-periodic-0.log"));  // the logdir was replaced
}

TEST(RtAppHost, AMissingBinaryIsOneLineExitTwo) {
  real::RtAppRun r;
  EXPECT_NE(real::run_rt_app("/nonexistent/rt-app", tiny_file(), 0, 30, &r).find("not found"), std::string::npos);
  EXPECT_EQ(real::real_main({"--rt-app", tiny_file(), "--rt-app-binary", "/nonexistent/rt-app"}), 2);
}

TEST(RtAppHost, DurationIsWholeSeconds) {
  EXPECT_EQ(real::real_main({"--rt-app", tiny_file(), "--duration", "500ms"}), 2);
  EXPECT_EQ(real::real_main({"--rt-app", tiny_file(), "--timeout", "0s"}), 2);
}

}  // namespace
