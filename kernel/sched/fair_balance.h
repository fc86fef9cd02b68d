// The fair class's balancer internals shared by fair_wakeup.cc, fair_lb_stats.cc,
// fair_balance.cc and fair_idle_balance.cc: fair.c's lb_env, sched-group statistics and the
// small helpers those parts of fair.c have in common. Not for use outside kernel/sched/fair_*
// (and topology.cc, which sets rq::sd_idle_next_balance when it builds the domains).
#pragma once
#include <algorithm>
#include <cstddef>

#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"

namespace kernel {

inline constexpr int kNoCpu = -1;

// sd_llc: the CPU's highest domain sharing its last-level cache.
inline const sched_domain* sd_llc(KernelImpl* k, int cpu) { return k->rq_of(cpu)->sd_llc; }

inline int llc_size(KernelImpl* k, int cpu) { return k->rq_of(cpu)->sd_llc_size; }

inline bool core_is_idle(KernelImpl* k, int cpu) {
  const int sib = k->rq_of(cpu)->smt_sibling;
  return available_idle_cpu(k, cpu) && (sib < 0 || available_idle_cpu(k, sib));
}

enum group_type {
  group_has_spare = 0,
  group_fully_busy,
  group_misfit_task,
  group_smt_balance,
  group_asym_packing,
  group_imbalanced,
  group_overloaded,
};
enum migration_type { migrate_load = 0, migrate_util, migrate_task, migrate_misfit };
enum cpu_idle_type { CPU_NOT_IDLE = 0, CPU_IDLE, CPU_NEWLY_IDLE };

struct sg_lb_stats {
  unsigned long avg_load = 0;  // only for overloaded groups (and local, when needed)
  unsigned long group_load = 0, group_capacity = 0, group_util = 0, group_runnable = 0;
  unsigned sum_nr_running = 0, sum_h_nr_running = 0, idle_cpus = 0, group_weight = 0;
  group_type type = group_has_spare;
  bool group_smt_balance = false;
};

struct sd_lb_stats {
  int busiest = -1;  // group index
  int local = -1;
  unsigned long total_load = 0, total_capacity = 0, avg_load = 0;
  sg_lb_stats busiest_stat, local_stat;
  bool prefer_sibling = false;
};

struct lb_env {
  sched_domain* sd;
  rq* dst_rq;
  int dst_cpu;
  cpu_idle_type idle;
  long imbalance = 0;
  migration_type type = migrate_load;
  rq* src_rq = nullptr;
  bool active = false;  // LBF_ACTIVE_LB: the stopper moves a task, cache-hot or not
};

// ---- fair_lb_stats.cc (also read by the fork slow path in fair_wakeup.cc) ----
group_type group_classify(unsigned imbalance_pct, const sg_lb_stats& s);
lb_sum group_lb_sum(KernelImpl* k, const sched_domain& sd, size_t g);
sg_lb_stats sg_stats_of(const lb_sum& sum, size_t group_weight);
long adjust_numa_imbalance(long imbalance, int dst_running, int imb_numa_nr);
int sched_balance_find_src_group(KernelImpl* k, lb_env* env);
rq* sched_balance_find_src_rq(KernelImpl* k, const lb_env& env, int group);

// ---- fair_balance.cc (also run by idle balancing in fair_idle_balance.cc) ----
int sched_balance_rq(rq* this_rq, sched_domain& sd, cpu_idle_type idle, bool* continue_balancing);
bool update_newidle_cost(const KernelImpl* k, sched_domain& sd, u64 cost);
// Balances rq's due domains; true if it balanced one. The pass costs the CPU running it,
// rq's own or, from the NOHZ idle balance, the kicked one (newidle_balance_ns).
bool sched_balance_domains(rq* rq, bool idle);

// msecs_to_jiffies(): rounds up.
inline u64 ms_to_jiffies(const KernelImpl* k, s64 ms) {
  return static_cast<u64>((ms * k->cfg_.hz + 999) / 1000);
}

// get_sd_balance_interval(): busy CPUs balance busy_factor times less often, one jiffy
// early (so that levels do not fall due together); within 1 ..
// max_load_balance_interval (HZ * nr_cpus / 10).
inline u64 get_sd_balance_interval(const KernelImpl* k, const sched_domain& sd, bool busy) {
  s64 interval = static_cast<s64>(
      ms_to_jiffies(k, static_cast<s64>(sd.balance_interval) * (busy ? sd.busy_factor : 1)));
  if (busy) interval -= 1;
  const s64 max_interval = std::max<s64>(1, static_cast<s64>(k->cfg_.hz) * k->nr_cpus() / 10);
  return static_cast<u64>(std::clamp<s64>(interval, 1, max_interval));
}

// update_next_balance() of an idle CPU's lowest domain (interval without the busy factor),
// into the rq's copy (rq::sd_idle_next_balance): after a change of sd[0].last_balance or
// sd[0].balance_interval.
inline void sd_idle_next_balance_update(rq* rq) {
  if (!rq->sd.empty())
    rq->sd_idle_next_balance = rq->sd[0].last_balance + get_sd_balance_interval(rq->k, rq->sd[0], false);
}

}  // namespace kernel
