// The scheduling-domain types (include/linux/sched/topology.h's concern): struct
// sched_domain as built by build_sched_domains() (kernel/sched/topology.cc), and what load
// balancing reads of each CPU and group (lb_cpu, lb_sum). Included by kernel/sched/sched.h.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace kernel {

struct rq;
using s64 = int64_t;
using u64 = uint64_t;

// What load balancing reads of one CPU (KernelImpl::lb_view), kept up to date by
// lb_view_update() and lb_view_update_pelt(). 32 bytes, aligned: two CPUs a cache line, none
// split over two (the flags share h_nr_running's word).
struct alignas(32) lb_cpu {
  unsigned long load = 0;     // cpu_load(): PELT load_avg of rq->cfs
  unsigned long util = 0;     // cpu_util_cfs()
  unsigned long runnable = 0; // cpu_runnable()
  unsigned nr_running = 0;    // rq->nr_running
  unsigned h_nr_running : 30 = 0;   // lb_h_nr_running(rq): what the balancer counts as queued
  bool curr_idle : 1 = true;        // rq->curr == rq->idle
  bool wake_pending : 1 = false;    // !rq->ex.wake_list.empty()
  // available_idle_cpu(): idle, nothing queued, no wakeup pending.
  bool idle() const { return curr_idle && nr_running == 0 && !wake_pending; }
  friend bool operator==(const lb_cpu&, const lb_cpu&) = default;
};
static_assert(sizeof(lb_cpu) == 32);
// The same read from the runqueue itself: what lb_view[rq->cpu] must equal.
lb_cpu lb_cpu_of(const rq* rq);
// The fair tasks the balancer counts on rq (update_sg_lb_stats()' sum_h_nr_running,
// sched_balance_find_src_rq()): rq->cfs.h_nr_runnable from 6.13 on; 6.12 reads
// h_nr_running, which counts delayed tasks too (h_nr_queued here).
unsigned lb_h_nr_running(const rq* rq);

// One cache line each, aligned: lb_view_update() adds to a CPU's core, LLC and socket sums on
// nearly every event, and a core's sum (touched by its two CPUs only) is cold on a wide
// machine; 48 bytes unaligned would split every other one over two lines.
struct alignas(64) lb_sum {
  s64 nr_running = 0;
  s64 load = 0;       // of cpu_load()
  s64 util = 0;       // of cpu_util_cfs()
  s64 runnable = 0;   // of cpu_runnable()
  s64 idle_cpus = 0;  // available_idle_cpu() CPUs
  s64 h_nr_running = 0;   // of lb_h_nr_running()
  void add(const lb_cpu& v) {
    nr_running += v.nr_running;
    load += static_cast<s64>(v.load);
    util += static_cast<s64>(v.util);
    runnable += static_cast<s64>(v.runnable);
    h_nr_running += v.h_nr_running;
    idle_cpus += v.idle();
  }
  friend bool operator==(const lb_sum&, const lb_sum&) = default;
};

struct alignas(64) sched_domain {
  // The balance timing and newly-idle statistics first, in the domain's first cache line:
  // the newly-idle balance and the periodic walk over the domains (sched_balance_domains())
  // read them of every domain on every pass, and most passes go no further.
  u64 last_balance = 0;                    // jiffies
  // update_newidle_cost(): the dearest newly-idle balance of this domain seen so far (what
  // the model charged for it), decayed by 253/256 at most once a second; 0 until the first.
  u64 max_newidle_lb_cost = 0;
  u64 last_decay_max_lb_cost = 0;          // jiffies
  int balance_interval = 1;                // ms
  int busy_factor = 16;
  int min_interval = 1, max_interval = 2;  // ms
  int span_weight = 0;
  unsigned nr_balance_failed = 0;
  // NI_RANDOM: newidle attempts and successes (weighted), halved every 1024 attempts; the
  // ratio is the successes at the last halving. Start at a 50% success rate (sd_init()).
  unsigned newidle_call = 512, newidle_success = 256, newidle_ratio = 512;
  int level = 0;
  const char* name;            // SMT, MC, PKG, NUMA
  // CPUs, ascending: the span every CPU of it shares (KernelImpl::sd_spans), as Linux's
  // sched_domain_shared spans and sched_group objects are shared by the CPUs of a span.
  std::span<const int> span;
  // The child spans (each ascending, shared likewise), in build_sched_groups()' order for
  // this CPU: its own group first, then onwards from the CPU, wrapping (so `local` is 0).
  // Stored in KernelImpl::sd_group_lists, shared by the CPUs that list the same groups.
  std::span<const std::span<const int>> groups;
  std::span<const lb_sum* const> group_sum;  // per group: KernelImpl::lb_sums of its CPUs, or
                                             // nullptr for one CPU (its lb_view entry is read)
                                             // or if the levels do not nest there
  std::span<const int> group_cores;          // per group: sched_group::cores
  size_t local = 0;                      // index of the group holding this CPU
  int imbalance_pct = 117;
  int cache_nice_tries = 1;
  int imb_numa_nr = 0;                   // tasks a NUMA imbalance may leave (build_sched_domains)
  bool groups_share_capacity = false;    // groups are SMT cores (SD_SHARE_CPUCAPACITY)
  bool share_cpucapacity = false;        // this is the SMT level (SD_SHARE_CPUCAPACITY)
  bool numa = false;                     // SD_NUMA
  bool prefer_sibling = false; // child has SD_PREFER_SIBLING
  bool share_llc = false;
};

}  // namespace kernel
