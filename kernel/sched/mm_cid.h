// rseq concurrency IDs (mm_cid): every thread of a process gets a small ID, unique among its
// threads running at once, which user space reads from its rseq area (struct rseq, offset 24)
// to index per-CPU-like data densely. One operations table per implementation, selected once
// from the configuration (KernelConfig::mm_cid):
//   lazy     - 6.4 .. 6.18: per-(mm, CPU) IDs handed out at context switch, a lazy put,
//              cid stealing on migration, and the 100 ms compaction task_mm_cid_work()
//              scanning every possible CPU on the way back to user space
//              (kernel/sched/core.c, sched.h; 6.12 without and 6.18 with 6.13/6.14's
//              recent_cid and max_nr_cid)
//   batched  - Gabriele Monaco's "sched: Run task_mm_cid_work in batches to lower latency"
//              (v2, July 2025) on 6.18: the scan from rseq_handle_notify_resume(), a batch
//              of CONFIG_RSEQ_CID_SCAN_BATCH CPUs per call, a tick path for tasks that run
//              unpreempted
//   owner    - 6.19's rewrite: per-task or per-CPU ownership, no scan
//   off      - CONFIG_SCHED_MM_CID=n: no IDs; rseq's mm_cid is the CPU number
// The core calls these at the seams Linux has (see each hook's callers); it never asks which
// implementation is on.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernel/sched/cpumask.h"
#include "kernel/stats.h"
#include "sim/engine.h"
#include "sim/stats.h"
#include "sim/time.h"

namespace kernel {

struct rq;
struct task_struct;
struct mm_struct;
class KernelImpl;

// Per-CPU slot encoding of 6.4 .. 6.18 (enum mm_cid_state, include/linux/mm_types.h).
inline constexpr uint32_t MM_CID_UNSET = ~0u;
inline constexpr uint32_t MM_CID_LAZY_PUT = 1u << 31;
// 6.19 (include/linux/rseq_types.h): ownership bits of a cid value.
inline constexpr uint32_t MM_CID_ONCPU = 1u << 30;
inline constexpr uint32_t MM_CID_TRANSIT = 1u << 29;
inline constexpr uint32_t MM_CID_UNSET_619 = 1u << 31;

// Per-task state (task_struct::mm_cid, mm_cid_active, last_mm_cid, migrate_from_cpu,
// cid_work; 6.19: task_struct::mm_cid.{cid,active}).
enum : uint8_t {
  MM_CID_WORK_QUEUED = 1u << 0,  // cid_work queued by task_work_add(TWA_RESUME)
  MM_CID_NOTIFY_RESUME = 1u << 1,  // rseq_preempt()/rseq_migrate(): TIF_NOTIFY_RESUME (batched)
};
struct mm_cid_task {
  int cid = -1;               // t->mm_cid: -1 when none (6.19: the raw value with its bits)
  int last_cid = -1;          // t->last_mm_cid
  int migrate_from_cpu = -1;  // t->migrate_from_cpu
  bool active = false;        // t->mm_cid_active
  uint8_t pending = 0;        // MM_CID_* work for the next return to user space
  uint64_t last_cid_reset = 0;  // batched: jiffies of the last mm_cid_get()
};

// Per-(mm, CPU) slot (struct mm_cid; 6.19 struct mm_cid_pcpu).
struct mm_cid_pcpu {
  uint64_t time = 0;                   // rq clock of the last use (6.4 .. 6.18)
  uint32_t cid = MM_CID_UNSET;
  uint32_t recent_cid = MM_CID_UNSET;  // 6.13+
};

// What the model records per process (simulator-only).
struct mm_cid_stats {
  uint64_t nr_scan_calls = 0;     // task_mm_cid_work() calls that scanned (a batch or a pass)
  uint64_t scan_ns_sum = 0, scan_ns_max = 0;  // CPU time of one call
  uint64_t cpus_visited = 0;      // possible CPUs visited, all calls
  uint64_t nr_passes = 0;         // full passes over every possible CPU completed
  sim::Time pass_ns_sum = 0, pass_ns_max = 0;  // from a pass's first batch to its last
  int max_cid = -1;               // highest cid any thread of the process was given
};

// What user space of one process showed, sampled every mm_cid.sample_ms (simulator-only):
// the highest mm_cid in its live threads' rseq areas, as a series of at most kSeries points
// (when full, neighbouring points merge by max and each point covers twice the samples).
struct mm_cid_sampled {
  static constexpr int kSeries = 128;
  std::array<int16_t, kSeries> series{};  // -1: no live thread then
  int n = 0;                  // points stored
  int stride = 1;             // samples per point
  int acc = 0;                // samples folded into the point being built
  int16_t acc_max = -1;
  int cur_max = -1;           // this sample's highest value
  int prev_threads = 0;
  int threads = 0;            // live threads at the last sample
  int threads_max = 0;
  int max_cid = -1;           // highest value sampled
  sim::Time burst_end = -1;   // threads exited and IDs not yet below the thread count since
};

// Per-mm state (mm_struct: cidmask, pcpu_cid, mm_cid_next_scan, ...; 6.19 mm->mm_cid).
struct mm_mm_cid {
  std::vector<uint64_t> cidmask;   // mm_cidmask(): bit c = cid c allocated
  std::vector<mm_cid_pcpu> pcpu;   // per possible CPU; empty until the first thread forks
  cpumask cpus_allowed;            // 6.13+ mm_cpus_allowed: union of the threads' masks
  int nr_cpus_allowed = 0;         // its weight
  int users = 0;                   // mm_users: live threads (6.19: mm_cid.users)
  int max_nr_cid = 0;              // 6.13+
  uint64_t next_scan = 0;          // mm_cid_next_scan (jiffies; 0 = not yet set)
  unsigned scan_batch = 0;         // batched: mm_cid_scan_batch, the next batch's index
  sim::Time pass_start = 0;        // batched/lazy: the pass in progress's earliest batch start
  sim::Time last_batch_end = 0;    // batched: the latest end of its batches' work so far
  // 6.19.
  unsigned max_cids = 0;
  unsigned pcpu_thrs = 0;
  bool percpu = false;             // mm_cid.mode has MM_CID_ONCPU: CPUs own the cids
  mm_cid_stats stats;
  mm_cid_sampled sampled;
};

// Machine-wide measurements of the scan and of what user space sees, kept only with
// mm_cid.sample_ms > 0 (KernelImpl::mm_cid_metrics_; allocated at start, nothing per event).
// Simulator-only: Linux has no such counters.
struct mm_cid_metrics {
  KernelImpl* k = nullptr;
  sim::Time sample_ns = 0;
  sim::Histogram scan_call_ns;     // CPU time of each scan call (lazy: a pass; batched: a batch)
  sim::Histogram rt_wait_added_ns; // per RT task switched in: its wait that overlapped a scan on its CPU
  sim::Histogram pass_ns;          // a full pass: its batches' earliest start to latest end
  sim::Histogram pass_gap_ns;      // batched: from a batch's end to the next batch of the pass
  sim::Histogram user_cid;         // sampled: the mm_cid each running thread's rseq area shows
  sim::Histogram converge_ns;      // after threads exit: until every live thread shows an ID below the thread count
  uint64_t samples = 0;
  std::vector<sim::Time> scan_start, scan_end;  // per CPU: the last scan's window
  sim::Timer sample_timer;
};

mm_cid_report mm_cid_snapshot(const KernelImpl& k);
// KernelImpl::start(): allocates the metrics and arms the sampler if mm_cid.sample_ms > 0.
void mm_cid_metrics_start(KernelImpl* k);

struct mm_cid_ops {
  const char* name;
  // copy_mm() -> sched_mm_cid_fork(): t joins its mm (wake_up_new_task(), or a task already
  // there when the run starts).
  void (*fork)(rq* rq, task_struct* t);
  // exit_signals() -> sched_mm_cid_exit_signals(), on t's CPU, before it schedules away.
  void (*exit)(rq* rq, task_struct* t);
  // context_switch() -> switch_mm_cid() (6.19 mm_cid_switch_to()), rq->curr == next.
  void (*switch_mm_cid)(rq* rq, task_struct* prev, task_struct* next);
  // set_task_cpu() -> sched_mm_cid_migrate_from(), before the CPU changes.
  void (*migrate_from)(task_struct* t);
  // activate_task(ENQUEUE_MIGRATED) -> sched_mm_cid_migrate_to().
  void (*migrate_to)(rq* dst_rq, task_struct* t);
  // sched_tick() -> task_tick_mm_cid() (batched: its unpreempted-task path).
  void (*tick)(rq* rq, task_struct* curr);
  // resume_user_mode_work(): task_work_run() (the queued task_mm_cid_work) and
  // rseq_handle_notify_resume(). Called only when t->mm_cid.pending is non-zero.
  void (*resume_user)(rq* rq, task_struct* t);
  // task_mm_cid(): what the rseq area's mm_cid shows for t (running on rq).
  uint32_t (*task_mm_cid)(const rq* rq, const task_struct* t);
};

extern const mm_cid_ops mm_cid_off_ops;      // mm_cid.cc
// One table per implementation of kernel/sched/mm_cid_impls.h, in mm_cid_<name>.cc.
#define MM_CID_IMPL(Enum, name) extern const mm_cid_ops mm_cid_##name##_ops;
#include "kernel/sched/mm_cid_impls.h"
#undef MM_CID_IMPL

const mm_cid_ops* mm_cid_select(const struct KernelConfig& cfg);

// ---- Shared by the implementations (mm_cid.cc). ----
// Sizes the mm's state for the machine on its first thread (not per event).
// Returns true if it did (the first time).
bool mm_cid_init(KernelImpl* k, mm_struct* mm);
// mm_set_cpus_allowed() (6.13+): the mm's CPUs become the union of its own and t's mask.
void mm_set_cpus_allowed(mm_struct* mm, const task_struct* t);
bool cidmask_test_and_set(mm_struct* mm, unsigned cid);
void cidmask_clear(mm_struct* mm, unsigned cid);
// find_first_zero_bit() below `limit`; `limit` if none.
unsigned cidmask_first_zero(const mm_struct* mm, unsigned limit);
int cidmask_weight(const mm_struct* mm);
// msecs_to_jiffies(MM_CID_SCAN_DELAY = 100).
uint64_t mm_cid_scan_delay_jiffies(const KernelImpl* k);
// task_mm_cid_work()'s rate limit: false if the mm's next scan is not due yet; otherwise
// moves mm_cid_next_scan 100 ms ahead and returns true (the first call only sets the date).
bool mm_cid_scan_due(const KernelImpl* k, mm_mm_cid* c);
// The scan's CPU time: `cpus` possible CPUs visited (costs.mm_cid_scan_cpu_ns each), charged
// as kernel time of the task it runs in; recorded in the mm's statistics.
void mm_cid_charge_scan(rq* rq, mm_struct* mm, int cpus);
// A full pass ended: `pass` from its first batch's start to its last batch's end.
void mm_cid_note_pass(KernelImpl* k, mm_struct* mm, sim::Time pass);
// switch_mm_cid(): an RT task switched in; what of its wait its CPU spent scanning.
void mm_cid_note_rt_switch_in(rq* rq, const task_struct* next);
// An interrupt at `now` preempted the scan running on rq's CPU (cpu_preempt_section()): the
// CPU stopped scanning then. REQUIRES: metrics on.
void mm_cid_note_scan_preempted(rq* rq, sim::Time now);
// Records that a thread of mm was given `cid`.
inline void mm_cid_note(mm_mm_cid* c, int cid) {
  if (cid > c->stats.max_cid) c->stats.max_cid = cid;
}

// ---- The 6.4 .. 6.18 machinery (mm_cid_lazy.cc), which batched reuses. ----
void lazy_mm_cid_fork(rq* rq, task_struct* t);
void lazy_mm_cid_exit(rq* rq, task_struct* t);
void lazy_switch_mm_cid(rq* rq, task_struct* prev, task_struct* next);
void lazy_migrate_from(task_struct* t);
void lazy_migrate_to(rq* dst_rq, task_struct* t);
uint32_t lazy_task_mm_cid(const rq* rq, const task_struct* t);
int mm_cid_get(rq* rq, task_struct* t, mm_struct* mm);
void sched_mm_cid_remote_clear_old(KernelImpl* k, mm_struct* mm, int cpu);
void sched_mm_cid_remote_clear_weight(KernelImpl* k, mm_struct* mm, int cpu, int weight);

}  // namespace kernel
