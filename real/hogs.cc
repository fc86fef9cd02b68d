// The hogs the runner starts beside a workload: busy threads of its own process (Hogs), or a
// process of their own in a new session and, with --hogs-as cgroup, a cpu cgroup whose weight
// matches the runner's autogroup (HogProcess).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "real/runner_internal.h"

namespace real {
namespace internal {

void Hogs::start(int n, const std::vector<int>& cpus, Window* window) {
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this, cpus, window] {
      pin_current_thread(cpus);
      if (window) window->arrive_and_wait();
      while (!stop_.load(std::memory_order_relaxed)) busy_iterations(10'000);
    });
}

namespace {

// The first cpu-controller cgroup directory this process can make a child in: cgroup v2 at
// /sys/fs/cgroup if its root delegates cpu, else the v1 cpu hierarchy. "" and `why` if none.
std::string cpu_cgroup_parent(std::string* why) {
  std::ifstream v2("/sys/fs/cgroup/cgroup.subtree_control");
  std::string word;
  while (v2 >> word)
    if (word == "cpu") return "/sys/fs/cgroup";
  struct stat st;
  if (stat("/sys/fs/cgroup/cpu/cgroup.procs", &st) == 0) return "/sys/fs/cgroup/cpu";
  *why = "no cgroup hierarchy with the cpu controller (neither cgroup v2 delegating cpu at "
         "/sys/fs/cgroup nor a v1 /sys/fs/cgroup/cpu)";
  return "";
}

// The runner's autogroup nice ("/autogroup-N nice K" in /proc/self/autogroup); 0 without
// the file (no CONFIG_SCHED_AUTOGROUP) or when autogroup is off.
int own_autogroup_nice() {
  std::string group, nice_word;
  int nice = 0;
  std::ifstream("/proc/self/autogroup") >> group >> nice_word >> nice;
  return nice_word == "nice" ? nice : 0;
}

// Give the hogs' cgroup the weight of the runner's autogroup, so the two groups weigh the same,
// as two programs started alike do (a cgroup's task is in no autogroup:
// task_wants_autogroup()). cgroup v2 takes the nice itself (cpu.weight.nice); v1's cpu.shares
// takes the weight, 1024 x 1.25^-nice, within 0.1% of sched_prio_to_weight[] for nice <= 0.
std::string match_runner_weight(const std::string& dir) {
  const int nice = own_autogroup_nice();
  if (nice == 0) return "";
  const bool v2 = dir.rfind("/sys/fs/cgroup/cpu/", 0) != 0;
  const std::string file = dir + (v2 ? "/cpu.weight.nice" : "/cpu.shares");
  const long value = v2 ? nice : std::clamp<long>(std::lround(1024.0 * std::pow(1.25, -nice)), 2, 262144);
  std::ofstream out(file);
  out << value << std::flush;
  if (!out) return "cannot write " + std::to_string(value) + " to " + file + ": " + std::strerror(errno);
  return "";
}

// The child's part: never returns. Reports "ok" or an error on `fd`, then spins.
[[noreturn]] void hog_child(int fd, pid_t parent, int n, const std::vector<int>& cpus,
                            const std::string& cgroup_dir) {
  auto report = [fd](const std::string& m) {
    const std::string line = m + "\n";
    [[maybe_unused]] ssize_t w = write(fd, line.data(), line.size());
  };
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the runner
  if (getppid() != parent) _exit(0);
  // The runner's autogroup nice: the group of the new session gets the same, so the two groups
  // weigh the same, as two sessions started alike do.
  const int group_nice = own_autogroup_nice();
  if (setsid() < 0) {
    report(std::string("setsid() failed: ") + std::strerror(errno));
    _exit(1);
  }
  if (group_nice != 0) std::ofstream("/proc/self/autogroup") << group_nice;
  if (!cgroup_dir.empty()) {
    std::ofstream procs(cgroup_dir + "/cgroup.procs");
    procs << getpid() << std::flush;
    if (!procs) {
      report("cannot move the hog process into " + cgroup_dir + ": " + std::strerror(errno));
      _exit(1);
    }
  }
  std::vector<std::thread> threads;
  try {
    for (int i = 0; i < n; ++i)
      threads.emplace_back([cpus] {
        pin_current_thread(cpus);
        for (;;) busy_iterations(10'000);
      });
  } catch (const std::system_error& e) {
    report(std::string("cannot start a hog thread: ") + e.what());
    _exit(1);
  }
  report("ok");
  close(fd);
  for (;;) pause();
}

}  // namespace

std::string HogProcess::start(int n, const std::vector<int>& cpus, HogsAs as) {
  if (as == HogsAs::kCgroup) {
    std::string why;
    const std::string parent = cpu_cgroup_parent(&why);
    if (parent.empty()) return why;
    const std::string dir = parent + "/schedlab-hogs-" + std::to_string(getpid());
    if (mkdir(dir.c_str(), 0755) != 0)
      return "cannot create " + dir + ": " + std::strerror(errno);
    cgroup_dir_ = dir;
    if (std::string err = match_runner_weight(dir); !err.empty()) {
      stop();
      return err;
    }
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    stop();
    return std::string("pipe2() failed: ") + std::strerror(errno);
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    stop();
    return std::string("fork() failed: ") + std::strerror(errno);
  }
  if (pid == 0) {
    close(fds[0]);
    hog_child(fds[1], parent, n, cpus, cgroup_dir_);
  }
  pid_ = pid;
  close(fds[1]);
  std::string msg;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') msg += c;
  close(fds[0]);
  if (msg != "ok") {
    stop();
    return msg.empty() ? "the hog process ended before its hogs ran" : msg;
  }
  return "";
}

void HogProcess::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (!cgroup_dir_.empty()) {
    // The cgroup empties once the killed process is reaped; removal can lag a little.
    for (int i = 0; i < 100 && rmdir(cgroup_dir_.c_str()) != 0 && errno == EBUSY; ++i) usleep(10'000);
    cgroup_dir_.clear();
  }
}

void Hogs::stop() {
  stop_.store(true);
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace internal
}  // namespace real
