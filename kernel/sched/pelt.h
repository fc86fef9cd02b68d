// PELT, per-entity load tracking (kernel/sched/pelt.c and pelt.h): the geometric sums behind
// load_avg, runnable_avg and util_avg, in the kernel's fixed-point arithmetic, so the numbers
// the load balancer reads are the ones Linux would compute. The fair class's hooks
// (update_load_avg() and friends) are in fair_pelt.cc; Linux has them in fair.c.
#pragma once
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"

namespace kernel {

inline constexpr int LOAD_AVG_PERIOD = 32;         // periods of 1024 us per half-life
inline constexpr uint32_t LOAD_AVG_MAX = 47742;    // the sum of 1024 * y^n over all n
inline constexpr uint32_t PELT_MIN_DIVIDER = LOAD_AVG_MAX - 1024;
inline constexpr int SCHED_CAPACITY_SHIFT = 10;
inline constexpr unsigned long SCHED_CAPACITY_SCALE = 1ul << SCHED_CAPACITY_SHIFT;
inline constexpr unsigned UTIL_AVG_UNCHANGED = 0x80000000u;  // flag bit of sched_avg::util_est

// The largest value a *_sum can have at this point of the current period.
inline uint32_t get_pelt_divider(const sched_avg* avg) { return PELT_MIN_DIVIDER + avg->period_contrib; }

// val * y^n, y^32 = 1/2, by table and shift (decay_load()).
u64 decay_load(u64 val, u64 n);

// x / get_pelt_divider() of an average at this period_contrib, exactly. The divider takes
// only 1024 values, so below 2^32 (almost always) this multiplies by a tabled reciprocal:
// a 64-bit divide costs ~13 ns on the machines this runs on, and PELT divides thrice per
// update.
u64 pelt_div(u64 x, uint32_t period_contrib);

// Bring sums up to `now` and, when a period boundary was crossed, the averages. Return 1 if
// the averages changed ("decayed").
int __update_load_avg_blocked_se(u64 now, sched_entity* se);  // se not queued
int __update_load_avg_se(u64 now, cfs_rq* cfs_rq, sched_entity* se);
int __update_load_avg_cfs_rq(u64 now, cfs_rq* cfs_rq);

// rq_clock_pelt(): the clock PELT runs on. Linux scales running time by CPU capacity and
// frequency and excludes IRQ time (rq_clock_task); schedlab's CPUs all have capacity 1024 at
// a fixed frequency and IRQ time is not split out, so it is rq_clock() (docs/model.md),
// counted from a boot 2^30 ns (about a second) before the run starts: PELT reads a
// last_update_time of 0 as "never attached here", which a clock starting at 0 would break.
inline constexpr u64 kPeltBootNs = u64{1} << 30;
inline u64 pelt_clock_at(u64 clock) { return clock + kPeltBootNs; }  // of an rq_clock() value
inline u64 rq_clock_pelt(const rq* rq) { return pelt_clock_at(rq->clock); }
// cfs_rq_clock_pelt(): a runqueue's PELT clock is its rq's less the time it stood still while
// throttled (CONFIG_CFS_BANDWIDTH; 6.12: throttle_count, 6.18+: pelt_clock_throttled, which
// the model keeps for both), and stands at its value when it stopped while it does.
inline u64 cfs_rq_clock_pelt(const cfs_rq* cfs_rq) {
  if (cfs_rq->pelt_clock_throttled)
    return cfs_rq->throttled_clock_pelt - cfs_rq->throttled_clock_pelt_time;
  return rq_clock_pelt(cfs_rq->rq) - cfs_rq->throttled_clock_pelt_time;
}
// The runqueue's PELT clock stops, or runs again with the time it stood still counted.
inline void cfs_rq_pelt_clock_stop(cfs_rq* cfs_rq) {
  cfs_rq->throttled_clock_pelt = rq_clock_pelt(cfs_rq->rq);
  cfs_rq->pelt_clock_throttled = true;
}
inline void cfs_rq_pelt_clock_start(cfs_rq* cfs_rq) {
  cfs_rq->throttled_clock_pelt_time += rq_clock_pelt(cfs_rq->rq) - cfs_rq->throttled_clock_pelt;
  cfs_rq->pelt_clock_throttled = false;
}

// What the balancer and wake_affine read of a CPU.
// cpu_load(): the CPU's load (cfs_rq_load_avg(): includes blocked load, decaying).
inline unsigned long cpu_load(const rq* rq) { return rq->cfs.avg.load_avg; }
// cpu_runnable(): runnable average of the CPU's fair tasks (cfs_rq_runnable_avg()).
inline unsigned long cpu_runnable(const rq* rq) { return rq->cfs.avg.runnable_avg; }
// cpu_util_cfs(): fair utilisation, max(util_avg, util_est) under UTIL_EST, capped at the
// CPU's capacity (1024 on every CPU here).
inline unsigned long cpu_util_cfs(const rq* rq) {
  unsigned long util = rq->cfs.avg.util_avg;
  if (rq->k->cfg_.feat(__SCHED_FEAT_UTIL_EST)) util = std::max<unsigned long>(util, rq->cfs.avg.util_est);
  return std::min(util, SCHED_CAPACITY_SCALE);
}

}  // namespace kernel
