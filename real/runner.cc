// The runner's shared part: defaults, validation, the mode probe, parsing of durations and
// CPU lists, the helpers both workloads use, and dispatch to extend_sched2.cc / locktable.cc.
#include "real/runner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <thread>

#include "real/runner_internal.h"
#include "sim/parse.h"

namespace real {

namespace {

CompareHook g_compare_hook = nullptr;

// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The first number in `path` (a /proc or /sys file), or -1 if it cannot be read.
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// Tasks (threads) on the host now: the fourth field of /proc/loadavg, "running/total".
int64_t tasks_on_host() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c, tasks;
  if (!(in >> a >> b >> c >> tasks)) return -1;
  const size_t slash = tasks.find('/');
  return slash == std::string::npos ? -1 : std::atoll(tasks.c_str() + slash + 1);
}

// Lines of a file (the mappings of /proc/self/maps), or -1.
int64_t count_lines(const char* path) {
  std::ifstream in(path);
  if (!in) return -1;
  int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// Threads of this process ("Threads:" in /proc/self/status), at least 1.
int64_t threads_of_this_process() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::max<int64_t>(1, std::atoll(line.c_str() + 8));
  return 1;
}

// This process's cgroup v2 directory ("0::/path" in /proc/self/cgroup), or "".
std::string cgroup2_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

std::string got(int64_t v, const char* unit = "") {
  return " (got " + std::to_string(v) + unit + ")";
}

}  // namespace

const char* workload_name(Workload w) {
  return w == Workload::kLockTable ? "locktable" : "extend-sched2";
}

Params default_params(Workload w) {
  Params p;
  p.workload = w;
  const int cpus = std::max<int>(1, static_cast<int>(allowed_cpus().size()));
  p.threads = cpus;
  p.clients = cpus;
  // The original sleeps 180 s before setting `done`; locktable has no original duration.
  p.duration_ns = (w == Workload::kExtendSched2 ? 180 : 10) * int64_t{1'000'000'000};
  return p;
}

int resolved_locks(const Params& p) {
  if (p.locks != -1) return p.locks;
  // The original's nobj = cpus / 10, which is 0 (a division by zero later) below 10 CPUs.
  return p.workload == Workload::kExtendSched2 ? std::max(1, p.threads / 10) : 1;
}

ThreadLimit host_thread_limit() {
  ThreadLimit best{std::numeric_limits<int64_t>::max(), "no limit found"};
  auto consider = [&best](int64_t more, std::string why) {
    if (more < best.threads) best = {std::max<int64_t>(more, 0), std::move(why)};
  };
  const int64_t tasks = tasks_on_host();
  const std::string running = " with " + std::to_string(tasks) + " tasks running";
  if (tasks >= 0) {
    // copy_process() refuses a task beyond threads-max (nr_threads >= max_threads), and
    // alloc_pid() needs a free PID below pid_max for every thread.
    if (const int64_t v = read_number("/proc/sys/kernel/threads-max"); v > 0)
      consider(v - tasks, "kernel.threads-max " + std::to_string(v) + running);
    if (const int64_t v = read_number("/proc/sys/kernel/pid_max"); v > 0)
      consider(v - tasks, "kernel.pid_max " + std::to_string(v) + running);
  }
  // RLIMIT_NPROC counts every task of the user; only this process's are known here, so this
  // bound is an upper one. copy_process() does not apply it to root.
  struct rlimit rl;
  if (getuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const int64_t mine = threads_of_this_process();
    consider(static_cast<int64_t>(rl.rlim_cur) - mine,
             "RLIMIT_NPROC " + std::to_string(rl.rlim_cur) + " (ulimit -u)");
  }
  if (const std::string dir = cgroup2_dir(); !dir.empty()) {
    const int64_t max = read_number(dir + "/pids.max");  // "max" reads as -1: no limit
    const int64_t cur = read_number(dir + "/pids.current");
    if (max > 0 && cur >= 0)
      consider(max - cur, "cgroup pids.max " + std::to_string(max) + " with " +
                              std::to_string(cur) + " in use");
  }
  if (const int64_t v = read_number("/proc/sys/vm/max_map_count"); v > 0) {
    const int64_t maps = count_lines("/proc/self/maps");
    if (maps >= 0)
      consider((v - maps) / 2, "vm.max_map_count " + std::to_string(v) + " (2 mappings a thread, " +
                                   std::to_string(maps) + " in use)");
  }
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    int64_t kib;
    std::string unit;
    while (in >> key >> kib) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        consider(kib * 1024 / kBytesPerThread,
                 "MemAvailable " + std::to_string(kib / 1024) + " MiB at " +
                     std::to_string(kBytesPerThread / 1024) + " KiB a thread");
        break;
      }
    }
  }
  return best;
}

std::string validate(const Params& p) {
  const bool es2 = p.workload == Workload::kExtendSched2;
  const char* workers = es2 ? "--threads" : "--clients";
  const int n = es2 ? p.threads : p.clients;
  if (n < 1) return std::string(workers) + " must be >= 1" + got(n);
  if (p.duration_ns <= 0) return "--duration must be > 0" + got(p.duration_ns, " ns");
  if (p.hogs < 0) return "--hogs must be >= 0" + got(p.hogs);
  if (p.hogs == 0 && p.hogs_as != HogsAs::kThreads)
    return std::string("--hogs-as ") + hogs_as_name(p.hogs_as) + " needs --hogs >= 1 (got 0)";
  if (const ThreadLimit lim = host_thread_limit();
      static_cast<int64_t>(n) + p.hogs > lim.threads)
    return std::string(workers) + " " + std::to_string(n) +
           (p.hogs ? " plus --hogs " + std::to_string(p.hogs) : std::string()) +
           " exceeds the threads this host allows: at most " + std::to_string(lim.threads) +
           " (" + lim.reason + ")";
  if (p.locks != -1) {
    if (p.locks < 1) return "--locks must be >= 1" + got(p.locks);
    if (p.locks > n)
      return "--locks (" + std::to_string(p.locks) + ") must not exceed " + workers + " (" +
             std::to_string(n) + "): a lock object without a thread is never taken";
  }
  if (p.mode == 2)
    return "--mode 2 needs a kernel with the 2023 prototype (Peter Zijlstra's rseq "
           "delay-resched patch, never merged); use 0, 1 or 3";
  if (p.mode != 0 && p.mode != 1 && p.mode != 3) return "--mode must be 0, 1 or 3" + got(p.mode);
  // The duration cannot stop a critical section in progress: keep one to seconds.
  if (p.cs_iterations < 0 || p.cs_iterations > 10000000000LL)
    return "--cs-iterations must be in 0..10000000000" + got(p.cs_iterations);
  if (p.query_ns < 0) return "--query must be >= 0" + got(p.query_ns, " ns");
  if (p.cs_ns < 0) return "--cs must be >= 0" + got(p.cs_ns, " ns");
  if (!p.cpus.empty()) {
    const std::vector<int> allowed = allowed_cpus();
    for (int c : p.cpus)
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        return "--cpus: CPU " + std::to_string(c) + " is not available to this process";
  }
  return "";
}

std::string check_mode(const Params& p, Backend* backend) {
  *backend = Backend::kNone;
  if (p.mode == 0) return "";
  const Backend want = p.mode == 1 ? Backend::kRfc : Backend::kMainline;
  const Selection sel = init_thread(internal::request_for_mode(p.mode));
  init_thread(Request::kNone);  // the probing thread itself takes no locks
  if (sel.backend != want)
    return "--mode " + std::to_string(p.mode) + ": the " +
           (p.mode == 1 ? "RFC task_getshared" : "mainline") +
           " time slice extension is not available on this host: " + sel.reason(want);
  *backend = want;
  return "";
}

double RunResult::avg_grants() const {
  uint64_t g = 0;
  for (const ThreadStats& t : threads) g += t.dlygrnt;
  return threads.empty() ? 0 : static_cast<double>(g) / static_cast<double>(threads.size());
}

double RunResult::avg_reqs() const {
  return threads.empty() ? 0 : static_cast<double>(runs) / static_cast<double>(threads.size());
}

double RunResult::avg_blocks() const {
  uint64_t b = 0;
  for (const ThreadStats& t : threads) b += t.blocks;
  return threads.empty() ? 0 : static_cast<double>(b) / static_cast<double>(threads.size());
}

double RunResult::same_cpu_handoff_share() const {
  uint64_t h = 0, same = 0;
  for (const ThreadStats& t : threads) {
    h += t.handoffs;
    same += t.same_cpu_handoffs;
  }
  return h ? static_cast<double>(same) / static_cast<double>(h) : 0;
}

double RunResult::section_ns() const {
  std::vector<int64_t> all;
  for (const ThreadStats& t : threads) all.insert(all.end(), t.hold_samples_ns.begin(), t.hold_samples_ns.end());
  if (all.empty()) return 0;
  const auto mid = all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2);
  std::nth_element(all.begin(), mid, all.end());
  const int64_t limit = 2 * *mid;  // a preempted holder is off the CPU for a slice or more
  double sum = 0;
  size_t n = 0;
  for (int64_t ns : all)
    if (ns <= limit) {
      sum += static_cast<double>(ns);
      ++n;
    }
  return sum / static_cast<double>(n);
}

double RunResult::executions_per_s() const {
  return elapsed_s > 0 ? static_cast<double>(runs) / elapsed_s : 0;
}

const char* hogs_as_name(HogsAs h) {
  switch (h) {
    case HogsAs::kThreads: return "threads";
    case HogsAs::kSession: return "session";
    case HogsAs::kCgroup: return "cgroup";
  }
  return "?";
}

std::string run(const Params& p, RunResult* out) {
  if (std::string err = validate(p); !err.empty()) return err;
  Backend backend;
  if (std::string err = check_mode(p, &backend); !err.empty()) return err;
  *out = RunResult{};
  out->params = p;
  out->backend = backend;
  out->nobj = resolved_locks(p);
  // Hogs of their own: forked first, while this process has a single thread.
  internal::HogProcess hog_process;
  if (p.hogs > 0 && p.hogs_as != HogsAs::kThreads) {
    if (std::string err = hog_process.start(p.hogs, p.cpus, p.hogs_as); !err.empty())
      return "--hogs-as " + std::string(hogs_as_name(p.hogs_as)) + ": " + err;
    out->notices.push_back(std::to_string(p.hogs) + " hogs run in a process of their own, in a new session" +
                           (hog_process.cgroup_dir().empty() ? "" : " and cgroup " + hog_process.cgroup_dir()));
  }
  std::string err;
  try {
    err = p.workload == Workload::kExtendSched2 ? internal::run_extend_sched2(p, backend, out)
                                                : internal::run_locktable(p, backend, out);
  } catch (const std::system_error& e) {
    return std::string("cannot start the run's threads: ") + e.what();
  }
  if (err.empty()) {
    char line[160];
    std::snprintf(line, sizeof(line),
                  "%d threads started in %.3f s, then measured for %.6f s (requested %.6f s)",
                  (p.workload == Workload::kExtendSched2 ? p.threads : p.clients) + p.hogs,
                  out->setup_s, out->elapsed_s, static_cast<double>(p.duration_ns) / 1e9);
    out->notices.push_back(line);
    if (out->late_starts > 0)
      out->notices.push_back(std::to_string(out->late_starts) +
                             " threads began after the window had opened (a loaded host)");
  }
  return err;
}

void print_result(const RunResult& r, std::ostream& out) {
  if (r.params.workload == Workload::kExtendSched2)
    internal::print_extend_sched2(r, out);
  else
    internal::print_locktable(r, out);
}

void set_compare_hook(CompareHook hook) { g_compare_hook = hook; }
CompareHook compare_hook() { return g_compare_hook; }

std::string parse_duration(const std::string& option, const std::string& text, int64_t* ns) {
  int64_t v = 0;
  if (!sim::parse_duration(text, &v) || v < 0)
    return option + ": expected a duration with its unit, e.g. 2s, 500ms, 100us (got '" + text + "')";
  *ns = v;
  return "";
}

std::string parse_cpu_list(const std::string& option, const std::string& text,
                           std::vector<int>* cpus) {
  // CPU_SETSIZE: the ids a cpu_set_t for sched_setaffinity() can hold.
  if (!sim::parse_cpu_list(text, CPU_SETSIZE, cpus))
    return option + ": bad CPU list '" + text + "' (expected e.g. 0-3,6)";
  return "";
}

namespace internal {

double measure_ns_per_iteration() {
  constexpr int64_t kIterations = 200'000;  // ~0.6 ms at 7 cycles per iteration and 2.5 GHz
  double best = 1e300;
  for (int i = 0; i < 5; ++i) {
    const int64_t t0 = now_ns();
    busy_iterations(kIterations);
    best = std::min(best, static_cast<double>(now_ns() - t0) / kIterations);
  }
  return std::max(best, 1e-3);
}

bool pin_current_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

Request request_for_mode(int mode) {
  if (mode == 1) return Request::kRfc;
  if (mode == 3) return Request::kMainline;
  return Request::kNone;
}

namespace {

// The calling thread's rseq cpu_id (glibc's area or the library's own), or null. Read under
// the lock instead of sched_getcpu(): without glibc's registration that is the getcpu system
// call where there is no vDSO for it (arm64), and a system call in the critical section ends
// a granted extension as an abort.
thread_local const volatile int32_t* tls_rseq_cpu_id = nullptr;

int current_cpu() {
  if (tls_rseq_cpu_id != nullptr) {
    const int32_t cpu = *tls_rseq_cpu_id;
    if (cpu >= 0) return cpu;
  }
  return sched_getcpu();
}

}  // namespace

Backend setup_worker(const Params& p) {
  pin_current_thread(p.cpus);  // validated against the allowed CPUs already
  const Backend b = init_thread(request_for_mode(p.mode)).backend;
  reset_thread_counters();
  if (void* area = thread_rseq_area())
    tls_rseq_cpu_id = reinterpret_cast<const volatile int32_t*>(
        static_cast<char*>(area) + SCHEDLAB_RSEQ_CPU_ID_OFFSET);
  return b;
}

void LastCsCpu::record(ThreadStats* st) {
  const int now = current_cpu();
  if (cpu >= 0) {
    ++st->handoffs;
    st->same_cpu_handoffs += now == cpu;
  }
  cpu = now;
}

void record(int64_t ns, uint64_t count_before, int64_t* total, int64_t* max, int64_t* min) {
  *total += ns;
  if (count_before == 0 || ns > *max) *max = ns;
  if (count_before == 0 || ns < *min) *min = ns;
}

std::string format_sus(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%" PRId64 ".%06" PRId64, ns / 1'000'000'000,
                (ns % 1'000'000'000) / 1000);
  return buf;
}

void sleep_until_ns(int64_t t_ns) {
  const struct timespec ts{static_cast<time_t>(t_ns / 1'000'000'000),
                           static_cast<long>(t_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void Window::arrive_and_wait() {
  if (ready_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) ready_.notify_all();
  while (open_.load(std::memory_order_acquire) == 0) open_.wait(0, std::memory_order_acquire);
  const int64_t start = start_ns_.load(std::memory_order_relaxed);
  if (now_ns() > start)
    late_.fetch_add(1, std::memory_order_relaxed);
  else
    sleep_until_ns(start);
}

void Window::wait_ready() {
  for (int r = ready_.load(std::memory_order_acquire); r < parties_;
       r = ready_.load(std::memory_order_acquire))
    ready_.wait(r, std::memory_order_acquire);
}

void Window::open(int64_t start_ns) {
  if (open_.load(std::memory_order_relaxed) != 0) return;
  start_ns_.store(start_ns, std::memory_order_relaxed);
  end_ns_.store(start_ns + duration_ns_, std::memory_order_relaxed);
  open_.store(1, std::memory_order_release);
  open_.notify_all();
}

}  // namespace internal
}  // namespace real
