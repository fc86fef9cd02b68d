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

// Keeps the hold time of every kHoldSampleEvery-th critical section of a thread in
// ThreadStats::hold_samples_ns, whose capacity is reserved before the run (no allocation in
// the measured loop; sampling stops when it is full). The hold is timed with the clock the
// run reads anyway (vDSO, no system call): reading the thread's CPU clock inside the section
// would be a system call that runs update_curr() and so preempts a holder whose slice ended
// since the last tick, a lock-holder preemption the workload itself does not have.
inline constexpr uint64_t kHoldSampleEvery = 8;
inline constexpr size_t kHoldSamples = 4096;
inline void sample_hold(ThreadStats* st, int64_t hold_ns) {
  if (st->count % kHoldSampleEvery == 0 && st->hold_samples_ns.size() < st->hold_samples_ns.capacity())
    st->hold_samples_ns.push_back(hold_ns);
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

// The measured window of a run, which its threads keep themselves.
// * Start: every thread waits here until all of them exist, so creating them (slow when
//   hundreds of busy threads share a few CPUs) stays outside the window. Waiting threads
//   sleep in the kernel, so they take no CPU from the thread still creating the others. The
//   window opens at a time, not at once: the main thread wakes the waiters (a futex through
//   std::atomic::wait) with a start time a little ahead, and each sleeps again until then
//   (clock_nanosleep TIMER_ABSTIME). Threads that began at once would preempt the main thread
//   while it still wakes the others, and the last would start seconds late.
// * End: the threads check the clock where they check the done flag (over()). The main
//   thread, asleep until the end, can wait seconds for a CPU among N busy threads, so a
//   window it closed would be longer than asked by an amount that grows with N.
class Window {
 public:
  Window(int parties, int64_t duration_ns) : parties_(parties), duration_ns_(duration_ns) {}
  // A thread of the run: counts itself ready, then sleeps until the start time.
  void arrive_and_wait();
  // The main thread: sleeps until all `parties` threads have arrived.
  void wait_ready();
  // Lets every waiting (and every later) thread go at `start_ns` (now_ns()'s clock); the
  // window ends `duration_ns` later. The first call sets the times.
  void open(int64_t start_ns);
  // True once `now` (a now_ns() the caller just read) is past the end; the first caller to
  // see it records when the window closed.
  bool over(int64_t now) {
    if (now < end_ns_.load(std::memory_order_relaxed)) return false;
    int64_t open = 0;
    closed_ns_.compare_exchange_strong(open, now, std::memory_order_relaxed);
    return true;
  }
  int64_t start_ns() const { return start_ns_.load(); }
  int64_t closed_ns() const { return closed_ns_.load(); }
  // Threads that left the gate after the start time had passed.
  int late() const { return late_.load(); }

 private:
  const int parties_;
  const int64_t duration_ns_;
  std::atomic<int> ready_{0};
  std::atomic<int> open_{0};
  std::atomic<int64_t> start_ns_{0};
  std::atomic<int64_t> end_ns_{INT64_MAX};
  std::atomic<int64_t> closed_ns_{0};
  std::atomic<int> late_{0};
};

// CPU hog threads: busy loops until stop(), pinned like the workload. They wait for the
// window (if given) to open before their first loop.
class Hogs {
 public:
  Hogs() = default;
  Hogs(const Hogs&) = delete;
  Hogs& operator=(const Hogs&) = delete;
  ~Hogs() { stop(); }
  // Throws std::system_error if a thread cannot be created (the caller reports it).
  void start(int n, const std::vector<int>& cpus, Window* window = nullptr);
  void stop();

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The hogs of --hogs-as session|cgroup: a child process, forked before any thread exists,
// that calls setsid() (and joins a cgroup of its own for kCgroup), starts `n` busy threads
// pinned like the workload, reports that they run, and spins until stop() kills it.
class HogProcess {
 public:
  HogProcess() = default;
  HogProcess(const HogProcess&) = delete;
  HogProcess& operator=(const HogProcess&) = delete;
  ~HogProcess() { stop(); }
  // "" once the hogs run; else why not (nothing is left running).
  std::string start(int n, const std::vector<int>& cpus, HogsAs as);
  void stop();
  const std::string& cgroup_dir() const { return cgroup_dir_; }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  std::string cgroup_dir_;  // created by start(), removed by stop()
};

// The threads of the hogs that run inside the workload's process.
inline int hogs_in_process(const Params& p) { return p.hogs_as == HogsAs::kThreads ? p.hogs : 0; }

// How far ahead of now the gate opens: time for the main thread to wake every waiter.
inline int64_t gate_lead_ns(int parties) { return 2'000'000 + int64_t{50'000} * parties; }

// Sleeps until `t_ns` (now_ns()'s clock, CLOCK_MONOTONIC).
void sleep_until_ns(int64_t t_ns);

// Runs the measured window of a workload whose threads (hogs included) were all created with
// `w`: waits until they are ready, opens the window a little ahead, sleeps until its end,
// closes it if no thread has, and calls stop() (which sets the run's done flag and must not
// wait for the threads). Sets out->elapsed_s (start to close), out->setup_s (from
// `created_from` to the start) and out->late_starts.
template <class Stop>
void measured_window(Window* w, int parties, int64_t created_from, int64_t duration_ns,
                     RunResult* out, Stop stop) {
  w->wait_ready();
  const int64_t start = now_ns() + gate_lead_ns(parties);
  w->open(start);
  sleep_until_ns(start + duration_ns);
  w->over(now_ns());
  stop();
  out->elapsed_s = static_cast<double>(w->closed_ns() - start) / 1e9;
  out->setup_s = static_cast<double>(start - created_from) / 1e9;
  out->late_starts = w->late();
}

// The two workloads; `backend` is what check_mode() found. REQUIRES validate(p) == "".
std::string run_extend_sched2(const Params& p, Backend backend, RunResult* out);
std::string run_locktable(const Params& p, Backend backend, RunResult* out);
void print_extend_sched2(const RunResult& r, std::ostream& out);
void print_locktable(const RunResult& r, std::ostream& out);

}  // namespace real::internal
