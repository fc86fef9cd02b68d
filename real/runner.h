// The real-kernel runner: the extend-sched2 and locktable lock workloads run with pthreads on
// this host, with the time slice extension backend their mode selects. Results come back as
// numbers (to compare with the simulator) and as the lines the original program prints.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "real/slice_ext.h"

namespace real {

enum class Workload { kExtendSched2, kLockTable };

// Where the hogs run: threads of this process (the default), or a separate process in a new
// session (setsid(), so a kernel with autogroup gives it a group of its own), optionally also
// in a new cgroup with the cpu controller. The separate process starts, and its hogs spin,
// before the workload's threads are created, as a hog program started beforehand would.
enum class HogsAs { kThreads, kSession, kCgroup };
const char* hogs_as_name(HogsAs h);

const char* workload_name(Workload w);

// Parameters of a run. default_params() fills the per-workload defaults; validate() checks.
struct Params {
  Workload workload = Workload::kExtendSched2;
  int threads = 1;    // extend-sched2 workers (the original: one per configured CPU)
  int clients = 1;    // locktable clients
  int hogs = 0;       // CPU hog threads (busy loops) beside the workload
  HogsAs hogs_as = HogsAs::kThreads;
  int locks = -1;     // lock objects; -1 = default (extend-sched2 max(1, threads/10), locktable 1)
  int64_t duration_ns = 0;            // wall time of the run
  int mode = 0;                       // 0 none, 1 RFC task_getshared, 2 (2023 prototype), 3 mainline
  std::vector<int> cpus;              // affinity of every thread; empty = inherited
  int64_t cs_iterations = 3'000'000;  // extend-sched2 critical section (the original's loop)
  int64_t query_ns = 100'000;         // locktable work outside the lock per execution
  int64_t cs_ns = 10'000;             // locktable critical section
};

// Defaults: threads and clients = the CPUs this process may run on (or --cpus), duration
// 180 s for extend-sched2 (the original's fixed sleep) and 10 s for locktable.
Params default_params(Workload w);

// "" if `p` can run, else one line naming the offending parameter (the CLI exits 2). The
// run's threads (workers or clients, plus hogs) must fit host_thread_limit().
std::string validate(const Params& p);

// How many more threads this process may create on this host, and the limit that decides
// it: the tightest of kernel.threads-max and kernel.pid_max (less the tasks that exist),
// RLIMIT_NPROC (not for root, which the kernel does not hold to it), the cgroup v2 pids.max,
// vm.max_map_count (each thread stack takes two mappings: the stack and its guard page) and
// MemAvailable at kBytesPerThread a thread. A limit that cannot be read is skipped.
struct ThreadLimit {
  int64_t threads = 0;
  std::string reason;  // e.g. "kernel.pid_max 32768 with 120 tasks running"
};
ThreadLimit host_thread_limit();
// Memory a thread costs beyond its stack's address space: the kernel stack (16 KiB on
// x86_64), task_struct and friends, and the touched pages of its user stack and TLS.
inline constexpr int64_t kBytesPerThread = 64 * 1024;

// Asks the kernel whether the mode's backend works on this host: "" if it does, else why not.
// Mode 0 never asks. Mode 1 calls syscall 463 (explicitly requested).
std::string check_mode(const Params& p, Backend* backend);

// The lock objects a run uses: `locks`, or extend-sched2's max(1, threads / 10).
int resolved_locks(const Params& p);

// One worker's (or client's) numbers. Times in ns; min fields are 0 when count is 0.
struct ThreadStats {
  uint64_t count = 0;   // critical sections completed
  int64_t total_ns = 0;  // hold time: lock taken -> lock and request released
  int64_t max_ns = 0;
  int64_t min_ns = 0;
  int64_t wait_total_ns = 0;  // first attempt -> lock taken
  int64_t wait_max_ns = 0;
  int64_t wait_min_ns = 0;
  uint64_t blocks = 0;   // extend-sched2: lost exchanges after seeing the lock free
  uint64_t dlygrnt = 0;  // critical sections whose extension request was granted
  // Critical sections this thread began after another one on the same lock, and how many of
  // them began on the CPU that one ran on (rseq cpu_id, else sched_getcpu(), under the lock).
  uint64_t handoffs = 0;
  uint64_t same_cpu_handoffs = 0;
  // The hold time of every 8th critical section (the 1st, 9th, ...), up to 4096.
  std::vector<int64_t> hold_samples_ns;
  Counters slice;        // the library's counters of this thread
  Backend backend = Backend::kNone;
};

struct RunResult {
  Params params;  // as run
  Backend backend = Backend::kNone;
  int nobj = 0;                       // lock objects used
  // The measured window: from the moment every thread existed and was released at once to
  // the done flag. Thread creation before it and the joins after it are not in it.
  double elapsed_s = 0;
  double setup_s = 0;                 // creating the threads, before the window
  int late_starts = 0;                // threads that began after the window had opened
  double ns_per_iteration = 0;        // the busy loop's speed, measured before the run
  std::vector<ThreadStats> threads;   // workers (extend-sched2) or clients (locktable)
  uint64_t runs = 0;                  // extend-sched2: sum of x; locktable: executions
  int64_t total_wait_ns = 0;
  // sysconf(_SC_NPROCESSORS_CONF) at the run: the original divides its averages by it.
  long cpus_conf = 1;
  std::vector<std::string> notices;   // for stderr (e.g. the nobj adjustment)

  double avg_grants() const;  // dlygrnt per thread
  double avg_reqs() const;    // runs per thread
  double avg_blocks() const;  // blocks per thread
  double executions_per_s() const;
  // Of the critical sections that followed another on the same lock, the share that began
  // on that one's CPU: 1 when the threads of a lock share a CPU, near 0 when each has its own.
  double same_cpu_handoff_share() const;
  // The critical section's length in this run: the mean of the sampled holds (ThreadStats::
  // hold_samples_ns) that were not preempted, i.e. at most twice the median of them all; 0 if
  // none. Its loop iterations take what the machine gives them at the time, which on a shared
  // guest varies by 2x within a run and can be half the speed measured before it
  // (docs/calibration.md). The mean, not the median: throughput follows the total work.
  double section_ns() const;
};

// Runs the workload. "" on success; else an error (bad parameters, backend unavailable, a
// thread could not be created).
std::string run(const Params& p, RunResult* out);

// The lines the original program prints (extend-sched2), or the locktable report.
void print_result(const RunResult& r, std::ostream& out);

// `schedlab real ... --compare-sim`: the lead's function that runs the simulator on the same
// parameters and compares; returns the exit code. Unset: the option fails with exit 2.
using CompareHook = int (*)(const Params& params, const RunResult& real_result);
void set_compare_hook(CompareHook hook);
CompareHook compare_hook();

// `schedlab real <workload> [options]`: `args` are the words after "real". Exit codes: 0 ok,
// 1 internal failure, 2 bad input or a mode this kernel cannot run (message on stderr).
int real_main(const std::vector<std::string>& args);
// `schedlab real mm_cid_compaction_test` (real/mm_cid.cc): the selftest's procedure `runs`
// times in fresh processes on `cpus` (empty = the inherited affinity); prints the pass count
// and the distribution of the leader's time to read mm_cid 0. Exit 2 if the kernel has no
// rseq mm_cid.
int mm_cid_main(int runs, int64_t period_ns, int checks, int64_t busy_ns, const std::vector<int>& cpus);

// "2s", "500ms", "100us", "250ns" -> ns: a number needs its unit (sim::parse_duration). ""
// or an error naming `option` and the text given.
std::string parse_duration(const std::string& option, const std::string& text, int64_t* ns);
// "0-3,6" -> {0,1,2,3,6} (sim::parse_cpu_list). "" or an error naming `option`.
std::string parse_cpu_list(const std::string& option, const std::string& text,
                           std::vector<int>* cpus);

}  // namespace real
