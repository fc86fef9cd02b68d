// The runner's shared part: defaults, validation, the mode probe, parsing of durations and
// CPU lists, the helpers both workloads use, and dispatch to extend_sched2.cc / locktable.cc.
#include "real/runner.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "real/runner_internal.h"

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

std::string validate(const Params& p) {
  const bool es2 = p.workload == Workload::kExtendSched2;
  const char* workers = es2 ? "--threads" : "--clients";
  const int n = es2 ? p.threads : p.clients;
  if (n < 1) return std::string(workers) + " must be >= 1" + got(n);
  if (p.duration_ns <= 0) return "--duration must be > 0" + got(p.duration_ns, " ns");
  if (p.hogs < 0) return "--hogs must be >= 0" + got(p.hogs);
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

double RunResult::executions_per_s() const {
  return elapsed_s > 0 ? static_cast<double>(runs) / elapsed_s : 0;
}

std::string run(const Params& p, RunResult* out) {
  if (std::string err = validate(p); !err.empty()) return err;
  Backend backend;
  if (std::string err = check_mode(p, &backend); !err.empty()) return err;
  *out = RunResult{};
  out->params = p;
  out->backend = backend;
  out->nobj = resolved_locks(p);
  try {
    return p.workload == Workload::kExtendSched2 ? internal::run_extend_sched2(p, backend, out)
                                                 : internal::run_locktable(p, backend, out);
  } catch (const std::system_error& e) {
    return std::string("cannot start the run's threads: ") + e.what();
  }
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
  const std::string bad = option + ": cannot parse '" + text + "' (expected e.g. 2s, 500ms, 100us)";
  if (text.empty() || text[0] == '-' || text[0] == '+') return bad;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return bad;
  const std::string unit(end);
  double scale;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s" || unit.empty()) scale = 1e9;
  else return bad;
  const double total = v * scale;
  if (!(total >= 0) || total > 9e18) return option + ": '" + text + "' is out of range";
  *ns = static_cast<int64_t>(total + 0.5);
  return "";
}

std::string parse_cpu_list(const std::string& option, const std::string& text,
                           std::vector<int>* cpus) {
  const std::string bad = option + ": bad CPU list '" + text + "' (expected e.g. 0-3,6)";
  cpus->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    // "N" or "N-M", decimal; from_chars refuses overflow, which sscanf's %d would wrap.
    int lo = 0, hi = 0;
    const char* const end = item.data() + item.size();
    auto r = std::from_chars(item.data(), end, lo);
    if (r.ec != std::errc() || r.ptr == item.data()) return bad;
    if (r.ptr == end) {
      hi = lo;
    } else {
      if (*r.ptr != '-') return bad;
      const char* const second = r.ptr + 1;
      r = std::from_chars(second, end, hi);
      if (r.ec != std::errc() || r.ptr == second || r.ptr != end) return bad;
    }
    if (lo < 0 || hi < lo || hi >= CPU_SETSIZE) return bad;
    for (int c = lo; c <= hi; ++c) cpus->push_back(c);
    pos = comma + 1;
  }
  std::sort(cpus->begin(), cpus->end());
  cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
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

Backend setup_worker(const Params& p) {
  pin_current_thread(p.cpus);  // validated against the allowed CPUs already
  const Backend b = init_thread(request_for_mode(p.mode)).backend;
  reset_thread_counters();
  return b;
}

void LastCsCpu::record(ThreadStats* st) {
  const int now = sched_getcpu();
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

void Hogs::start(int n, const std::vector<int>& cpus) {
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this, cpus] {
      pin_current_thread(cpus);
      while (!stop_.load(std::memory_order_relaxed)) busy_iterations(10'000);
    });
}

void Hogs::stop() {
  stop_.store(true);
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace internal
}  // namespace real
