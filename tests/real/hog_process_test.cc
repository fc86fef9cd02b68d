// --hogs-as session|cgroup: the runner's hogs as a separate process in a new session (so an
// autogroup of its own where the kernel has autogroup), and in a cpu cgroup of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "real/runner.h"
#include "real/runner_internal.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(HogProcess, SessionRunsTheHogsInANewSessionUntilStopped) {
  real::internal::HogProcess h;
  ASSERT_EQ(h.start(2, {}, real::HogsAs::kSession), "");
  const pid_t pid = h.pid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(getsid(pid), pid);  // the session leader of a new session
  EXPECT_NE(getsid(pid), getsid(0));
  // Its hogs are threads of that process: 1 + 2 tasks.
  int tasks = 0;
  for (int i = 0; i < 200 && tasks < 3; ++i) {
    tasks = 0;
    std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Threads:", 0) == 0) tasks = std::stoi(line.substr(8));
    if (tasks < 3) usleep(1000);
  }
  EXPECT_EQ(tasks, 3);
  const std::string ag = read_file("/proc/" + std::to_string(pid) + "/autogroup");
  if (!ag.empty()) {  // CONFIG_SCHED_AUTOGROUP
    EXPECT_NE(ag, read_file("/proc/self/autogroup"));
  }
  h.stop();
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(HogProcess, CgroupPutsTheProcessInACgroupOfItsOwnAndRemovesIt) {
  real::internal::HogProcess h;
  const std::string err = h.start(1, {}, real::HogsAs::kCgroup);
  if (!err.empty()) GTEST_SKIP() << "this host allows no cpu cgroup here: " << err;
  const std::string dir = h.cgroup_dir();
  ASSERT_NE(dir.find("/schedlab-hogs-"), std::string::npos);
  EXPECT_TRUE(exists(dir));
  const std::string procs = read_file(dir + "/cgroup.procs");
  EXPECT_EQ(procs, std::to_string(h.pid()) + "\n");
  EXPECT_EQ(getsid(h.pid()), h.pid());
  h.stop();
  EXPECT_FALSE(exists(dir));
}

// A runner whose autogroup has a nice value (the calibration's shield runs at -20) gives the
// hogs' cgroup the same weight, so the two groups weigh the same. Checked in a child of its
// own session, whose autogroup nice can be set without touching the test's session: +5 is
// cpu.weight.nice 5 on cgroup v2, cpu.shares 336 (1024 x 1.25^-5; the kernel's table has 335)
// on v1.
TEST(HogProcess, TheHogsCgroupWeighsAsTheRunnersAutogroup) {
  if (read_file("/proc/self/autogroup").empty()) GTEST_SKIP() << "no CONFIG_SCHED_AUTOGROUP";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    std::string out = "skip";
    if (setsid() >= 0) {
      std::ofstream("/proc/self/autogroup") << 5 << std::flush;
      real::internal::HogProcess h;
      if (h.start(1, {}, real::HogsAs::kCgroup).empty()) {
        const std::string dir = h.cgroup_dir();
        const bool v1 = dir.rfind("/sys/fs/cgroup/cpu/", 0) == 0;
        out = (v1 ? "shares " : "nice ") + read_file(dir + (v1 ? "/cpu.shares" : "/cpu.weight.nice"));
        h.stop();
      }
    }
    [[maybe_unused]] ssize_t w = write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[64];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (got == "skip") GTEST_SKIP() << "this host allows no cpu cgroup here";
  EXPECT_TRUE(got == "shares 336\n" || got == "nice 5\n") << got;
}

// The clients run beside the hogs' process. A loaded host (a CI container throttled by its
// cpu.max, tests running beside this one) can starve them for a whole short window, so the
// window grows until they execute: only clients idle in all of 50, 200 and 800 ms fail.
TEST(HogProcess, TheRunSaysWhereItsHogsRanAndNeedsHogs) {
  real::Params p = real::default_params(real::Workload::kLockTable);
  p.clients = 2;
  p.hogs = 1;
  p.hogs_as = real::HogsAs::kSession;
  real::RunResult r;
  for (int64_t ns = 50'000'000; r.runs == 0 && ns <= 800'000'000; ns *= 4) {
    p.duration_ns = ns;
    r = real::RunResult{};
    ASSERT_EQ(real::run(p, &r), "");
    EXPECT_NE(std::find(r.notices.begin(), r.notices.end(),
                        "1 hogs run in a process of their own, in a new session"),
              r.notices.end());
  }
  EXPECT_GT(r.runs, 0u);
  p.hogs = 0;
  EXPECT_EQ(real::validate(p), "--hogs-as session needs --hogs >= 1 (got 0)");
}

}  // namespace

namespace {

// The autogroup nice of `pid`, or 99 without CONFIG_SCHED_AUTOGROUP.
int autogroup_nice(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/autogroup");
  std::string group, word;
  int nice = 99;
  if (!(f >> group >> word >> nice) || word != "nice") return 99;
  return nice;
}

// The hogs' new session gets the runner's autogroup nice: the two groups weigh the same.
TEST(HogProcess, SessionGroupTakesTheRunnersAutogroupNice) {
  if (autogroup_nice(getpid()) == 99) GTEST_SKIP() << "no autogroup on this kernel";
  // A session (and autogroup) of this test's own, so the nice below weighs nothing else.
  if (getsid(0) != getpid() && setsid() < 0) GTEST_SKIP() << "cannot start a session";
  {
    std::ofstream f("/proc/self/autogroup");
    f << 5 << std::flush;
    if (!f || autogroup_nice(getpid()) != 5) GTEST_SKIP() << "cannot set this process's autogroup nice";
  }
  real::internal::HogProcess h;
  ASSERT_EQ(h.start(1, {}, real::HogsAs::kSession), "");
  EXPECT_EQ(autogroup_nice(h.pid()), 5);
  h.stop();
}

}  // namespace
