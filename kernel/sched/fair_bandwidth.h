// CONFIG_CFS_BANDWIDTH (kernel/sched/sched.h of v6.12 .. v7.0): a task group's cpu.max quota
// and period, the pool its per-CPU runqueues draw runtime from, and the cpu.stat counters.
// The per-runqueue part (runtime_remaining, throttled, ...) is in struct cfs_rq (sched.h);
// the code is kernel/sched/fair_bandwidth.cc.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/engine.h"

namespace kernel {

class KernelImpl;
struct cfs_rq;
struct rq;
struct task_group;
struct task_struct;

inline constexpr uint64_t RUNTIME_INF = ~0ull;  // cpu.max "max": no limit

struct cfs_bandwidth {
  uint64_t period = 100000000;  // ns (cpu.max's second field; default 100 ms)
  uint64_t quota = RUNTIME_INF; // ns per period
  uint64_t burst = 0;           // ns (cpu.max.burst): unused runtime a period may carry over
  int64_t runtime = 0;          // left in this period's pool (refilled each period)
  int64_t runtime_snap = 0;     // the pool after the last refill: what a period used is the
                                // difference (a use beyond the quota is a burst)
  bool idle = false;            // no runtime was drawn in the last period: the timer may stop
  bool period_active = false;   // the period timer is armed
  bool period_running = false;  // its handler is running (hrtimer_callback_running())
  bool slack_started = false;   // the slack timer is armed (do not push it back)
  int timer_cpu = 0;            // the CPU the timer was started on (HRTIMER_MODE_ABS_PINNED)
  sim::Time period_expires = 0; // the timer's expiry on its period grid (jitter excluded);
                                // before its first start, a random offset below 100 ms
                                // ("Add a random offset so that timers interleave")
  sim::Timer period_timer;
  sim::Timer slack_timer;       // runs distribute_cfs_runtime() on runtime given back
  int slack_cpu = 0;            // the CPU the slack timer was started on
  std::vector<cfs_rq*> throttled_cfs_rq;  // throttled runqueues, in throttle order
  // cpu.stat: periods elapsed while active, periods with a throttled runqueue, the
  // runqueues' throttled time summed over CPUs (ns), and the periods that used burst
  // runtime with the burst runtime they used (ns).
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_time = 0;
  uint64_t nr_burst = 0, burst_time = 0;
};

// tg_set_cfs_bandwidth(): cpu.max and cpu.max.burst of `tg`, in ns (quota RUNTIME_INF =
// "max"). REQUIRES: burst <= quota unless the quota is RUNTIME_INF.
void tg_set_cfs_bandwidth(KernelImpl* k, task_group* tg, uint64_t period, uint64_t quota,
                          uint64_t burst);
// __cfsb_csd_unthrottle(): the call-function IPI's part for cpu.max (IPI_CFSB_CSD).
void __cfsb_csd_unthrottle(rq* rq);
// throttle_cfs_rq_work(): 6.18+'s task work, run by p (rq->curr) on its way to user mode.
void throttle_cfs_rq_work(rq* rq, task_struct* p);

}  // namespace kernel
