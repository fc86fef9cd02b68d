// Per-task scheduler statistics: what Linux keeps in struct sched_statistics (schedstats) and
// task_struct's switch counters, plus the simulator's lock-holder and softirq accounting.
// Written by the scheduler and entry code, read by kernel/stats.cc.
#pragma once
#include <cstdint>

namespace kernel {

using u64 = uint64_t;

struct task_stats {
  // What every switch updates first (one cache line), then the counters of rarer events.
  u64 wait_start = 0;         // valid while queued and not running
  u64 wait_sum_ns = 0;        // time runnable on a runqueue, not running
  u64 wait_max_ns = 0;
  u64 wait_count = 0;
  u64 run_ns = 0;             // wall time as rq->curr (user + kernel), closed at switch-out
  u64 last_arrival = 0;       // valid while running: when it became rq->curr
  u64 nr_switches_voluntary = 0;    // nvcsw
  u64 nr_switches_involuntary = 0;  // nivcsw
  u64 nr_wakeups = 0;
  u64 nr_migrations = 0;
  u64 nr_lock_holder_preemptions = 0;
  u64 spin_ns = 0;            // user time spent spinning on a word
  u64 nr_syscalls = 0;
  u64 lock_held_preempted_ns = 0;  // time off-CPU after a preemption while holding a lock
  u64 lhp_since = 0;          // valid while preempted holding a lock
  // Softirq work run on top of this task (kernel/softirq.cc): all of it (hardirq exit and
  // local_bh_enable), and the part run inside its own local_bh_enable().
  u64 softirq_ns = 0;
  u64 softirq_bh_ns = 0;
};

}  // namespace kernel
