// Load-balance statistics of the fair class: the sched-group statistics and the decision
// what to move and from where (update_sg_lb_stats() .. calculate_imbalance(),
// sched_balance_find_src_group/rq()), fair.c's "Load-balancing" statistics section.
#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

static bool group_has_capacity(unsigned imbalance_pct, const sg_lb_stats& s) {
  if (s.sum_nr_running < s.group_weight) return true;
  if (s.group_capacity * imbalance_pct < s.group_runnable * 100) return false;
  if (s.group_capacity * 100 > s.group_util * imbalance_pct) return true;
  return false;
}

static bool group_is_overloaded(unsigned imbalance_pct, const sg_lb_stats& s) {
  if (s.sum_nr_running <= s.group_weight) return false;
  if (s.group_capacity * 100 < s.group_util * imbalance_pct) return true;
  if (s.group_capacity * imbalance_pct < s.group_runnable * 100) return true;
  return false;
}

group_type group_classify(unsigned imbalance_pct, const sg_lb_stats& s) {
  if (group_is_overloaded(imbalance_pct, s)) return group_overloaded;
  if (s.group_smt_balance) return group_smt_balance;
  if (!group_has_capacity(imbalance_pct, s)) return group_fully_busy;
  return group_has_spare;
}

// The sums over group g of sd. Linux adds them up CPU by CPU on every balance; here
// lb_view_update() keeps them (KernelImpl::lb_sums) for groups that are a whole core, LLC or
// socket, and other groups (one CPU, or parts where the levels do not nest) are added up
// from lb_view.
lb_sum group_lb_sum(KernelImpl* k, const sched_domain& sd, size_t g) {
  lb_sum sum;
  if (const lb_sum* kept = sd.group_sum[g]) {
    sum = *kept;
  } else {
    for (int c : sd.groups[g]) sum.add(k->lb_view[c]);
  }
#ifdef SCHEDLAB_CHECK_VIEWS
  lb_sum want;
  for (int c : sd.groups[g]) want.add(lb_cpu_of(k->rq_of(c)));
  assert(sum == want && "stale sched group sums");
#endif
  return sum;
}

// The statistics update_sg_lb_stats() and update_sg_wakeup_stats() both take, from the
// group's sums; group_type and avg_load are left to each.
sg_lb_stats sg_stats_of(const lb_sum& sum, size_t group_weight) {
  sg_lb_stats s;
  s.sum_nr_running = static_cast<unsigned>(sum.nr_running);
  s.sum_h_nr_running = static_cast<unsigned>(sum.h_nr_running);
  s.group_load = static_cast<unsigned long>(sum.load);
  s.group_util = static_cast<unsigned long>(sum.util);
  s.group_runnable = static_cast<unsigned long>(sum.runnable);
  s.idle_cpus = static_cast<unsigned>(sum.idle_cpus);
  s.group_weight = static_cast<unsigned>(group_weight);
  // sgc->capacity: every CPU at full capacity (no RT, deadline or IRQ pressure modelled).
  s.group_capacity = s.group_weight * SCHED_CAPACITY_SCALE;
  return s;
}

// update_sg_lb_stats(): the group's statistics for balancing into env->dst_cpu.
static sg_lb_stats update_sg_lb_stats(KernelImpl* k, const lb_env& env, size_t g, bool local_group) {
  const sched_domain& sd = *env.sd;
  sg_lb_stats s = sg_stats_of(group_lb_sum(k, sd, g), sd.groups[g].size());
  // smt_balance(): an idle CPU should relieve an SMT core running several tasks.
  s.group_smt_balance = !local_group && env.idle != CPU_NOT_IDLE && sd.groups_share_capacity &&
                        s.group_weight > 1 && s.sum_h_nr_running > 1;
  s.type = group_classify(static_cast<unsigned>(sd.imbalance_pct), s);
  if (s.type == group_overloaded) s.avg_load = s.group_load * SCHED_CAPACITY_SCALE / s.group_capacity;
  return s;
}

// adjust_numa_imbalance(): between NUMA nodes, an imbalance of up to NUMA_IMBALANCE_MIN (2)
// tasks is let be while the destination would run at most imb_numa_nr tasks.
long adjust_numa_imbalance(long imbalance, int dst_running, int imb_numa_nr) {
  if (dst_running > imb_numa_nr) return imbalance;
  if (imbalance <= 2) return 0;
  return imbalance;
}

// update_sd_pick_busiest(): is sg busier than the busiest so far?
static bool update_sd_pick_busiest(const lb_env& env, const sd_lb_stats& sds, const sg_lb_stats& sgs) {
  const sg_lb_stats& busiest = sds.busiest_stat;
  if (!sgs.sum_h_nr_running) return false;  // nothing to pull
  if (sds.busiest < 0 || sgs.type > busiest.type) return true;
  if (sgs.type < busiest.type) return false;
  switch (sgs.type) {
    case group_overloaded:
      return sgs.avg_load > busiest.avg_load;
    case group_smt_balance:
      if (sgs.idle_cpus != 0 || busiest.idle_cpus != 0) goto has_spare;
      [[fallthrough]];
    case group_fully_busy:
      // avg_load is not computed for these (always 0, as Linux's "XXX" says): a busiest made of
      // SMT siblings is kept, otherwise the later group is taken.
      if (sgs.avg_load < busiest.avg_load) return false;
      if (sgs.avg_load == busiest.avg_load && env.sd->groups_share_capacity) return false;
      return true;
    case group_has_spare:
    has_spare:
      // The fewest idle CPUs, then the most tasks.
      if (sgs.idle_cpus > busiest.idle_cpus) return false;
      if (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running)
        return false;
      return true;
    default:
      return false;
  }
}

// update_sd_lb_stats(): the local group's and the busiest group's statistics, the domain's
// totals, and (periodic balance of an LLC domain) the SIS_UTIL scan budget.
static void update_sd_lb_stats(KernelImpl* k, const lb_env& env, sd_lb_stats* sds) {
  const sched_domain& sd = *env.sd;
  unsigned long sum_util = 0;
  sds->prefer_sibling = sd.prefer_sibling;
  for (size_t g = 0; g < sd.groups.size(); ++g) {
    const bool local = g == sd.local;
    const sg_lb_stats sgs = update_sg_lb_stats(k, env, g, local);
    if (local) {
      sds->local = static_cast<int>(g);
      sds->local_stat = sgs;
    } else if (update_sd_pick_busiest(env, *sds, sgs)) {
      sds->busiest = static_cast<int>(g);
      sds->busiest_stat = sgs;
    }
    sds->total_load += sgs.group_load;
    sds->total_capacity += sgs.group_capacity;
    sum_util += sgs.group_util;
  }
  // update_idle_cpu_scan(): y = 1024 - min(1024, x^2 pct^2 / (10000 * 1024)) with x the
  // LLC's utilisation per CPU; select_idle_cpu() then scans y * llc_weight / 1024 CPUs.
  if (k->cfg_.feat(__SCHED_FEAT_SIS_UTIL) && env.idle != CPU_NEWLY_IDLE && sd.share_llc &&
      sd.span_weight == llc_size(k, env.dst_cpu)) {
    const u64 llc_weight = static_cast<u64>(sd.span_weight);
    const u64 x = sum_util / llc_weight;
    const u64 pct = static_cast<u64>(sd.imbalance_pct);
    const u64 tmp = std::min<u64>(x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE), SCHED_CAPACITY_SCALE);
    k->llc_nr_idle_scan[static_cast<size_t>(k->machine_.topo.llc_of[env.dst_cpu])] =
        static_cast<int>((SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE);
  }
}

// sibling_imbalance(): tasks to move so both groups run as many tasks per core (doubled,
// calculate_imbalance() halves it).
static long sibling_imbalance(const lb_env& env, const sd_lb_stats& sds) {
  const sg_lb_stats& busiest = sds.busiest_stat;
  const sg_lb_stats& local = sds.local_stat;
  if (env.idle == CPU_NOT_IDLE || !busiest.sum_nr_running) return 0;
  const long ncores_busiest = env.sd->group_cores[static_cast<size_t>(sds.busiest)];
  const long ncores_local = env.sd->group_cores[static_cast<size_t>(sds.local)];
  if (ncores_busiest == ncores_local)
    return std::max<long>(0, static_cast<long>(busiest.sum_nr_running) - static_cast<long>(local.sum_nr_running));
  long imbalance = std::max<long>(0, ncores_local * busiest.sum_nr_running - ncores_busiest * local.sum_nr_running);
  imbalance = (2 * imbalance + ncores_local + ncores_busiest) / (ncores_local + ncores_busiest);
  if (imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1) imbalance = 2;
  return imbalance;
}

// calculate_imbalance(): what to move (tasks, utilisation or load) and how much.
static void calculate_imbalance(lb_env* env, sd_lb_stats* sds) {
  sg_lb_stats& local = sds->local_stat;
  const sg_lb_stats& busiest = sds->busiest_stat;
  if (busiest.type == group_smt_balance) {  // fewer tasks sharing a core
    env->type = migrate_task;
    env->imbalance = 1;
    return;
  }
  if (local.type == group_has_spare) {
    // Fill the local group's spare capacity from an overloaded group in another LLC.
    if (busiest.type > group_fully_busy && !env->sd->share_llc) {
      env->type = migrate_util;
      env->imbalance = static_cast<long>(std::max(local.group_capacity, local.group_util) - local.group_util);
      if (env->idle != CPU_NOT_IDLE && env->imbalance == 0) {
        env->type = migrate_task;
        env->imbalance = 1;
      }
      return;
    }
    env->type = migrate_task;
    if (busiest.group_weight == 1 || sds->prefer_sibling)  // spread tasks evenly
      env->imbalance = sibling_imbalance(*env, *sds);
    else  // even out idle CPUs
      env->imbalance = std::max<long>(0, static_cast<long>(local.idle_cpus) - static_cast<long>(busiest.idle_cpus));
    if (env->sd->numa)  // consider allowing a small imbalance between NUMA groups
      env->imbalance = adjust_numa_imbalance(env->imbalance, static_cast<int>(local.sum_nr_running) + 1,
                                             env->sd->imb_numa_nr);
    env->imbalance >>= 1;
    return;
  }
  if (local.type < group_overloaded) {
    // Local is about to be overloaded: compare average loads.
    local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
    if (local.avg_load >= busiest.avg_load) {
      env->imbalance = 0;
      return;
    }
    sds->avg_load = sds->total_load * SCHED_CAPACITY_SCALE / sds->total_capacity;
    if (local.avg_load >= sds->avg_load) {
      env->imbalance = 0;
      return;
    }
  }
  // Bring both towards the domain's average load, neither past it.
  // (unsigned long, as Linux: a busiest group below the average wraps to a huge value and
  // the local term wins.)
  env->type = migrate_load;
  const unsigned long a = (busiest.avg_load - sds->avg_load) * busiest.group_capacity;
  const unsigned long b = (sds->avg_load - local.avg_load) * local.group_capacity;
  env->imbalance = static_cast<long>(std::min(a, b) / SCHED_CAPACITY_SCALE);
}


// sched_balance_find_src_group(): the busiest group, if moving something from it helps.
int sched_balance_find_src_group(KernelImpl* k, lb_env* env) {
  sd_lb_stats sds;
  update_sd_lb_stats(k, *env, &sds);
  if (sds.busiest < 0) return -1;
  const sg_lb_stats& busiest = sds.busiest_stat;
  sg_lb_stats& local = sds.local_stat;
  if (local.type > busiest.type) return -1;
  if (local.type == group_overloaded) {
    if (local.avg_load >= busiest.avg_load) return -1;
    sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
    if (local.avg_load >= sds.avg_load) return -1;
    if (100 * busiest.avg_load <= static_cast<unsigned long>(env->sd->imbalance_pct) * local.avg_load) return -1;
  }
  const bool force = sds.prefer_sibling && local.type == group_has_spare && sibling_imbalance(*env, sds) > 1;
  if (!force && busiest.type != group_overloaded) {
    if (env->idle == CPU_NOT_IDLE) return -1;  // let an idle CPU pull instead
    // (smt_vs_nonsmt_groups(): every group of a level here is alike.)
    if (busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1) return -1;
    if (busiest.sum_h_nr_running == 1) return -1;  // nothing waiting to run
  }
  calculate_imbalance(env, &sds);
  return env->imbalance ? sds.busiest : -1;
}

// sched_balance_find_src_rq(): the busiest runqueue of the group for the migration type.
// The per-CPU figures are read from lb_view, the packed copy the group's sums were just
// taken from (the same values as the rqs'), so only the chosen rq is touched.
rq* sched_balance_find_src_rq(KernelImpl* k, const lb_env& env, int group) {
  int busiest = kNoCpu;
  unsigned long busiest_load = 0, busiest_util = 0;
  unsigned busiest_nr = 0;
  for (int c : env.sd->groups[static_cast<size_t>(group)]) {
    const lb_cpu& v = k->lb_view[c];
#ifdef SCHEDLAB_CHECK_VIEWS
    assert(v == lb_cpu_of(k->rq_of(c)) && "stale lb_view");
#endif
    const unsigned nr_running = v.h_nr_running;  // rq->cfs.h_nr_runnable (6.12: h_nr_running)
    if (!nr_running) continue;
    switch (env.type) {
      case migrate_load: {
        const unsigned long load = v.load;  // cpu_load()
        // One task, more than the imbalance: moving it would just move the imbalance
        // (check_cpu_capacity() is false: no capacity pressure here).
        if (nr_running == 1 && load > static_cast<unsigned long>(env.imbalance)) break;
        if (load > busiest_load) {  // max load / capacity; all capacities are equal here
          busiest_load = load;
          busiest = c;
        }
        break;
      }
      case migrate_util: {
        // cpu_util_cfs_boost(): utilisation, at least the runnable average.
        const unsigned long util = std::min(std::max(v.util, v.runnable), SCHED_CAPACITY_SCALE);
        if (nr_running <= 1) continue;
        if (busiest_util < util) {
          busiest_util = util;
          busiest = c;
        }
        break;
      }
      case migrate_task:
        if (busiest_nr < nr_running) {
          busiest_nr = nr_running;
          busiest = c;
        }
        break;
      case migrate_misfit:
        break;
    }
  }
  return busiest == kNoCpu ? nullptr : k->rq_of(busiest);
}

}  // namespace kernel
