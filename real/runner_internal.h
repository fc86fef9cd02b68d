// Pieces the runner's workloads share (clock, busy loop, affinity, hog threads, per-thread
// backend setup). Internal to schedlab_real: not installed, not for callers of runner.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "real/runner.h"

namespace real::internal {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The extend-sched2 critical section: the original's empty `for` loop compiled without
// optimisation. A volatile counter keeps each iteration a store and a load (as at -O0), so
// the compiler can neither remove nor shorten it.
inline void busy_iterations(int64_t n) {
  volatile int64_t i = 0;
  while (i < n) i = i + 1;
}

// ns per busy_iterations() iteration on this CPU: the fastest of a few timed runs (the
// fastest is the one not preempted).
double measure_ns_per_iteration();

// Pins the calling thread to `cpus` (no-op if empty). False if the kernel refused.
bool pin_current_thread(const std::vector<int>& cpus);

// The Request for a validated mode (0, 1, 3).
Request request_for_mode(int mode);

// Per-thread setup: pin, select the mode's backend, zero the counters. Returns the backend.
Backend setup_worker(const Params& p);

// Where the previous critical section on a lock ran; updated with the lock held.
struct LastCsCpu {
  int cpu = -1;
  // Counts this critical section (run by `st` on the CPU it is on now) as a hand-off.
  void record(ThreadStats* st);
};

// Min/max/total of a series of durations.
void record(int64_t ns, uint64_t count_before, int64_t* total, int64_t* max, int64_t* min);

// "S.US" (seconds and microseconds), as the original prints times.
std::string format_sus(int64_t ns);

// CPU hog threads: busy loops until stop(), pinned like the workload.
class Hogs {
 public:
  Hogs() = default;
  Hogs(const Hogs&) = delete;
  Hogs& operator=(const Hogs&) = delete;
  ~Hogs() { stop(); }
  // Throws std::system_error if a thread cannot be created (the caller reports it).
  void start(int n, const std::vector<int>& cpus);
  void stop();

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The two workloads; `backend` is what check_mode() found. REQUIRES validate(p) == "".
std::string run_extend_sched2(const Params& p, Backend backend, RunResult* out);
std::string run_locktable(const Params& p, Backend backend, RunResult* out);
void print_extend_sched2(const RunResult& r, std::ostream& out);
void print_locktable(const RunResult& r, std::ostream& out);

}  // namespace real::internal
