// Fair-class CPU selection and load balancing: select_task_rq_fair() (wake_affine,
// select_idle_sibling), fork placement, periodic, newly-idle and NOHZ idle balancing.
// Mirrors kernel/sched/fair.c (v6.12 .. v7.0); loads and utilisation are PELT's (pelt.cc).
#include <algorithm>
#include <cassert>
#include <climits>

#include "kernel/cpu_exec.h"
#include "kernel/kernel.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

namespace {

constexpr int kNoCpu = -1;

// Idle, or running only SCHED_IDLE tasks: what wakeup placement takes as free
// (available_idle_cpu(cpu) || sched_idle_cpu(cpu) in select_idle_sibling() and its scans).
bool idle_or_sched_idle(Kernel* k, int cpu) { return available_idle_cpu(k, cpu) || sched_idle_cpu(k, cpu); }

bool idle_cpu_for(Kernel* k, task_struct* p, int cpu) {
  return task_allowed_on(p, cpu) && idle_or_sched_idle(k, cpu);
}

const sched_domain* sd_llc(Kernel* k, int cpu) {
  const rq* rq = k->rq_of(cpu);
  const sched_domain* llc = nullptr;
  for (const sched_domain& sd : rq->sd)
    if (sd.share_llc) llc = &sd;
  return llc;
}

int llc_size(Kernel* k, int cpu) {
  const sched_domain* sd = sd_llc(k, cpu);
  return sd ? sd->span_weight : 1;
}

// wake_wide(): a waker that flips between many wakees (1:N) should not pull them all.
bool wake_wide(Kernel* k, task_struct* p, task_struct* waker, int waker_cpu) {
  unsigned master = waker->wakee_flips, slave = p->wakee_flips;
  const unsigned factor = static_cast<unsigned>(llc_size(k, waker_cpu));
  if (master < slave) std::swap(master, slave);
  if (slave < factor || master < slave * factor) return false;
  return true;
}

int wake_affine_idle(Kernel* k, int this_cpu, int prev_cpu, bool sync) {
  if (available_idle_cpu(k, this_cpu) && cpus_share_cache(k, this_cpu, prev_cpu))
    return available_idle_cpu(k, prev_cpu) ? prev_cpu : this_cpu;
  if (sync && k->rq_of(this_cpu)->nr_running == 1) return this_cpu;
  if (available_idle_cpu(k, prev_cpu)) return prev_cpu;
  return kNoCpu;
}

// wake_affine_weight(): pull the wakee to the waker's CPU if that CPU, with the wakee, is
// less loaded than prev without it (PELT loads; prev favoured by half the imbalance margin
// under WA_BIAS). All CPUs have the same capacity, so the capacity factors cancel.
int wake_affine_weight(Kernel* k, const sched_domain& sd, task_struct* p, int this_cpu,
                       int prev_cpu, bool sync) {
  s64 this_eff = static_cast<s64>(cpu_load(k->rq_of(this_cpu)));
  if (sync) {
    const s64 current_load = static_cast<s64>(task_h_load(k->rq_of(this_cpu)->curr));
    if (current_load > this_eff) return this_cpu;
    this_eff -= current_load;
  }
  const s64 task_load = static_cast<s64>(task_h_load(p));
  this_eff += task_load;
  const bool bias = k->cfg_.feat(__SCHED_FEAT_WA_BIAS);
  if (bias) this_eff *= 100;
  this_eff *= static_cast<s64>(SCHED_CAPACITY_SCALE);
  s64 prev_eff = static_cast<s64>(cpu_load(k->rq_of(prev_cpu))) - task_load;
  if (bias) prev_eff *= 100 + (sd.imbalance_pct - 100) / 2;
  prev_eff *= static_cast<s64>(SCHED_CAPACITY_SCALE);
  if (sync) prev_eff += 1;
  return this_eff < prev_eff ? this_cpu : kNoCpu;
}

int wake_affine(Kernel* k, const sched_domain& sd, task_struct* p, int this_cpu, int prev_cpu,
                bool sync) {
  int target = kNoCpu;
  if (k->cfg_.feat(__SCHED_FEAT_WA_IDLE)) target = wake_affine_idle(k, this_cpu, prev_cpu, sync);
  if (target == kNoCpu && k->cfg_.feat(__SCHED_FEAT_WA_WEIGHT))
    target = wake_affine_weight(k, sd, p, this_cpu, prev_cpu, sync);
  return target == this_cpu ? this_cpu : prev_cpu;
}

bool core_is_idle(Kernel* k, int cpu) {
  const int sib = k->rq_of(cpu)->smt_sibling;
  return available_idle_cpu(k, cpu) && (sib < 0 || available_idle_cpu(k, sib));
}

// select_idle_cpu(): scan the LLC from target+1, for an idle core if one is believed to
// exist, else for any idle CPU within the SIS_UTIL budget (sd_llc_shared->nr_idle_scan,
// set by periodic balancing from the LLC's utilisation; none at all when it is 0).
int select_idle_cpu(Kernel* k, task_struct* p, const sched_domain& llc, bool has_idle_core, int target) {
  int nr = INT_MAX;
  if (k->cfg_.feat(__SCHED_FEAT_SIS_UTIL)) {
    nr = k->llc_nr_idle_scan[static_cast<size_t>(k->machine_.topo.llc_of[target])] + 1;
    if (nr == 1) return kNoCpu;  // an overloaded LLC is unlikely to have an idle CPU
  }
  const int n = llc.span_weight;
  const auto start = std::upper_bound(llc.span.begin(), llc.span.end(), target) - llc.span.begin();
  int idle_cpu = kNoCpu;
  for (int i = 0; i < n; ++i) {
    const int cpu = llc.span[(start + i) % n];
    if (!task_allowed_on(p, cpu)) continue;  // the scan covers span & p->cpus_ptr
    if (has_idle_core) {
      if (core_is_idle(k, cpu)) return cpu;
      if (idle_cpu == kNoCpu && idle_or_sched_idle(k, cpu)) idle_cpu = cpu;
    } else {
      if (--nr <= 0) return kNoCpu;
      if (idle_or_sched_idle(k, cpu)) return cpu;  // __select_idle_cpu()
    }
  }
  return idle_cpu;
}

// select_idle_sibling(): target, prev or a recently used CPU if idle, then the LLC scan.
int select_idle_sibling(Kernel* k, task_struct* p, int prev, int target) {
  if (idle_cpu_for(k, p, target)) return target;
  if (prev != target && cpus_share_cache(k, prev, target) && idle_cpu_for(k, p, prev)) return prev;
  const int recent = p->recent_used_cpu;
  p->recent_used_cpu = prev;
  if (recent >= 0 && recent != prev && recent != target && cpus_share_cache(k, recent, target) &&
      idle_cpu_for(k, p, recent))
    return recent;
  const sched_domain* llc = sd_llc(k, target);
  if (!llc) return target;
  bool has_idle_core = false;
  const bool smt = k->rq_of(target)->smt_sibling >= 0;
  if (smt) {
    for (int c : llc->span)
      if (core_is_idle(k, c)) {
        has_idle_core = true;
        break;
      }
    if (!has_idle_core && cpus_share_cache(k, prev, target)) {
      const int sib = k->rq_of(prev)->smt_sibling;
      if (sib >= 0 && idle_cpu_for(k, p, sib)) return sib;  // select_idle_smt()
    }
  }
  const int i = select_idle_cpu(k, p, *llc, has_idle_core, target);
  return i != kNoCpu ? i : target;
}

// The slow path for fork (defined below, with the balancer's group statistics).
int sched_balance_find_dst_cpu(Kernel* k, task_struct* p, int cpu, int prev_cpu);

}  // namespace

// record_wakee(): the waker's count of switches between wakees, for wake_wide(); halved
// once a second.
static void record_wakee(Kernel* k, task_struct* waker, const task_struct* p) {
  const u64 j = k->jiffies();
  if (j > waker->wakee_flip_decay_ts + static_cast<u64>(k->cfg_.hz)) {
    waker->wakee_flips >>= 1;
    waker->wakee_flip_decay_ts = j;
  }
  if (waker->last_wakee_pid != p->pid) {
    waker->last_wakee_pid = p->pid;
    waker->wakee_flips++;
  }
}

// Called for fair tasks allowed on more than one CPU (select_task_rq()).
int select_task_rq_fair(Kernel* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu) {
  // Fork: the slow path from the highest domain with SD_BALANCE_FORK, which every level
  // here has (see docs/model.md), from the parent's CPU: the launcher's, or under
  // launcher=outside p's first allowed CPU (prev_cpu; there is no waker CPU then).
  if (wake_flags & (WF_FORK | WF_EXEC))
    return sched_balance_find_dst_cpu(k, p, waker_cpu >= 0 ? waker_cpu : prev_cpu, prev_cpu);
  const bool sync = wake_flags & WF_SYNC;
  task_struct* waker = k->rq_of(waker_cpu)->curr;
  if (!waker->is_idle) record_wakee(k, waker, p);
  const bool want_affine = !wake_wide(k, p, waker, waker_cpu) && task_allowed_on(p, waker_cpu);
  int new_cpu = prev_cpu;
  if (want_affine && waker_cpu != prev_cpu) {
    for (const sched_domain& sd : k->rq_of(waker_cpu)->sd) {
      if (std::binary_search(sd.span.begin(), sd.span.end(), prev_cpu)) {
        new_cpu = wake_affine(k, sd, p, waker_cpu, prev_cpu, sync);
        break;
      }
    }
  }
  return select_idle_sibling(k, p, prev_cpu, new_cpu);
}

// ---- Load balancing ----
//
// sched_balance_rq() as in fair.c: classify the local and the other groups of the domain
// from their PELT signals (update_sd_lb_stats), pick the busiest group and decide whether
// and what to move (sched_balance_find_src_group, calculate_imbalance), pick the busiest
// runqueue in it (sched_balance_find_src_rq) and detach tasks from it (detach_tasks). Group
// types that need hardware this model has no use for (misfit and asym packing: asymmetric
// capacities; imbalanced: affinity-pinned groups) are left out, as is active balancing.

namespace {

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

bool group_has_capacity(unsigned imbalance_pct, const sg_lb_stats& s) {
  if (s.sum_nr_running < s.group_weight) return true;
  if (s.group_capacity * imbalance_pct < s.group_runnable * 100) return false;
  if (s.group_capacity * 100 > s.group_util * imbalance_pct) return true;
  return false;
}

bool group_is_overloaded(unsigned imbalance_pct, const sg_lb_stats& s) {
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
// lb_view_update() keeps them (Kernel::lb_sums) for groups that are a whole core, LLC or
// socket, and other groups are added up from lb_view.
lb_sum group_lb_sum(Kernel* k, const sched_domain& sd, size_t g) {
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
  s.sum_h_nr_running = static_cast<unsigned>(sum.h_nr_runnable);
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
sg_lb_stats update_sg_lb_stats(Kernel* k, const lb_env& env, size_t g, bool local_group) {
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
bool update_sd_pick_busiest(const lb_env& env, const sd_lb_stats& sds, const sg_lb_stats& sgs) {
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

// ---- Fork balancing: the slow path of select_task_rq_fair() ----

// update_sg_wakeup_stats(): group g's statistics for placing p, summed over the CPUs of
// the group p may use (the weight and capacity stay the whole group's). Only fork takes the
// slow path here (exec is not modelled), and a task being forked has no PELT contribution
// anywhere yet (last_update_time 0), so the cpu_*_without(p) sums Linux takes are the plain
// ones, and task_running_on_cpu() is 0.
sg_lb_stats update_sg_wakeup_stats(Kernel* k, const sched_domain& sd, size_t g, const task_struct* p) {
  assert(p->se.avg.last_update_time == 0 && "the slow path is modelled for new tasks only");
  lb_sum sum;
  if (p->nr_cpus_allowed == k->nr_cpus()) {
    sum = group_lb_sum(k, sd, g);
  } else {
    for (int c : sd.groups[g])
      if (task_allowed_on(p, c)) sum.add(k->lb_view[c]);
  }
  sg_lb_stats s = sg_stats_of(sum, sd.groups[g].size());
  s.type = group_classify(static_cast<unsigned>(sd.imbalance_pct), s);
  if (s.type == group_fully_busy || s.type == group_overloaded)
    s.avg_load = s.group_load * SCHED_CAPACITY_SCALE / s.group_capacity;
  return s;
}

// update_pick_idlest(): is sgs idler than the idlest group so far? Lower group types first;
// then the lower avg_load (busy groups) or the most idle CPUs, then the lower utilisation.
bool update_pick_idlest(const sg_lb_stats& idlest, const sg_lb_stats& sgs) {
  if (sgs.type < idlest.type) return true;
  if (sgs.type > idlest.type) return false;
  switch (sgs.type) {
    case group_overloaded:
    case group_fully_busy:
      return idlest.avg_load > sgs.avg_load;
    case group_has_spare:
      if (idlest.idle_cpus > sgs.idle_cpus) return false;
      if (idlest.idle_cpus == sgs.idle_cpus && idlest.group_util <= sgs.group_util) return false;
      return true;
    default:  // the other types are not used in the slow path
      return false;
  }
}

bool group_allows(const std::vector<int>& group, const task_struct* p) {
  for (int c : group)
    if (task_allowed_on(p, c)) return true;
  return false;
}

// sched_balance_find_dst_group(): the idlest group of sd other than this_cpu's, if p should
// go there rather than stay in the local group; -1 to stay. Between NUMA nodes a task stays
// near its parent while the local node is lightly used (adjust_numa_imbalance()), and a busy
// local group keeps the task unless the idlest is lighter by imbalance_pct.
int sched_balance_find_dst_group(Kernel* k, const sched_domain& sd, const task_struct* p, int this_cpu) {
  // The local group is this_cpu's: sd is this_cpu's domain, whose group list starts with it.
  assert(std::binary_search(sd.groups[sd.local].begin(), sd.groups[sd.local].end(), this_cpu));
  (void)this_cpu;
  int idlest = -1;
  bool local_allowed = false;
  sg_lb_stats local_sgs, idlest_sgs;
  idlest_sgs.avg_load = UINT_MAX;
  idlest_sgs.type = group_overloaded;
  for (size_t g = 0; g < sd.groups.size(); ++g) {
    if (!group_allows(sd.groups[g], p)) continue;
    const sg_lb_stats sgs = update_sg_wakeup_stats(k, sd, g, p);
    if (g == sd.local) {
      local_allowed = true;
      local_sgs = sgs;
    } else if (update_pick_idlest(idlest_sgs, sgs)) {
      idlest = static_cast<int>(g);
      idlest_sgs = sgs;
    }
  }
  if (idlest < 0) return -1;          // no idlest group to push the task to
  if (!local_allowed) return idlest;  // the local group was skipped for affinity
  if (local_sgs.type < idlest_sgs.type) return -1;
  if (local_sgs.type > idlest_sgs.type) return idlest;
  switch (local_sgs.type) {
    case group_overloaded:
    case group_fully_busy: {
      // The allowed imbalance: imbalance_pct of a nice-0 task's load.
      const unsigned long imbalance =
          NICE_0_LOAD * static_cast<unsigned long>(sd.imbalance_pct - 100) / 100;
      // Across nodes the margin is added to the remote side: stay local unless clearly busier.
      if (sd.numa && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load) return -1;
      if (idlest_sgs.avg_load >= local_sgs.avg_load + imbalance) return -1;
      if (100 * local_sgs.avg_load <= static_cast<unsigned long>(sd.imbalance_pct) * idlest_sgs.avg_load)
        return -1;
      break;
    }
    case group_has_spare:
      if (sd.numa) {
        // Keep the task near its parent while the local node would run no more than
        // imb_numa_nr tasks. Linux narrows imb_numa_nr to the task's allowed CPUs of the
        // local group whenever nr_cpus_allowed != NR_CPUS, which on a distribution kernel
        // (NR_CPUS 8192) is always. NUMA balancing's preferred node is not modelled.
        int allowed = 0;
        for (int c : sd.groups[sd.local]) allowed += task_allowed_on(p, c) ? 1 : 0;
        const int imb_numa_nr = std::min(allowed, sd.imb_numa_nr);
        const long imbalance = std::labs(static_cast<long>(local_sgs.idle_cpus) - static_cast<long>(idlest_sgs.idle_cpus));
        if (!adjust_numa_imbalance(imbalance, static_cast<int>(local_sgs.sum_nr_running) + 1, imb_numa_nr))
          return -1;
      }
      if (local_sgs.idle_cpus >= idlest_sgs.idle_cpus) return -1;
      break;
    default:
      return -1;
  }
  return idlest;
}

// sched_balance_find_dst_group_cpu(): in the chosen group, a CPU running only SCHED_IDLE
// tasks at once; else the idle CPU in the shallowest idle state, the most recently idled
// among equals; with none idle, the least loaded CPU.
// Every idle CPU here is in the same state (the machine's one idle exit cost), so that is
// the first idle CPU, or a later one that went idle later (rq->idle_stamp).
int sched_balance_find_dst_group_cpu(Kernel* k, const std::vector<int>& group, const task_struct* p, int this_cpu) {
  if (group.size() == 1) return group.front();
  unsigned long min_load = ULONG_MAX;
  u64 latest_idle_timestamp = 0;
  int least_loaded_cpu = this_cpu, shallowest_idle_cpu = kNoCpu;
  for (int i : group) {
    if (!task_allowed_on(p, i)) continue;
    const rq* rq = k->rq_of(i);
    if (sched_idle_rq(rq)) return i;  // SCHED_IDLE tasks only: the new task preempts them
    if (available_idle_cpu(k, i)) {
      if (shallowest_idle_cpu == kNoCpu || rq->idle_stamp > latest_idle_timestamp) {
        latest_idle_timestamp = rq->idle_stamp;
        shallowest_idle_cpu = i;
      }
    } else if (shallowest_idle_cpu == kNoCpu) {
      const unsigned long load = cpu_load(rq);
      if (load < min_load) {
        min_load = load;
        least_loaded_cpu = i;
      }
    }
  }
  return shallowest_idle_cpu != kNoCpu ? shallowest_idle_cpu : least_loaded_cpu;
}

// sched_balance_find_dst_cpu(): from the top domain down, move to the idlest group's
// chosen CPU and carry on in that CPU's domains below the level just balanced; a level
// that keeps the task local goes on with this CPU's child domain.
int sched_balance_find_dst_cpu(Kernel* k, task_struct* p, int cpu, int prev_cpu) {
  const std::vector<sched_domain>& top = k->rq_of(cpu)->sd;
  if (top.empty()) return prev_cpu;  // one CPU: no domain has SD_BALANCE_FORK
  if (!group_allows(top.back().span, p)) return prev_cpu;
  int new_cpu = cpu;
  int level = static_cast<int>(top.size()) - 1;
  while (level >= 0) {
    const sched_domain& sd = k->rq_of(cpu)->sd[static_cast<size_t>(level)];
    const int group = sched_balance_find_dst_group(k, sd, p, cpu);
    if (group < 0) {
      --level;
      continue;
    }
    new_cpu = sched_balance_find_dst_group_cpu(k, sd.groups[static_cast<size_t>(group)], p, cpu);
    if (new_cpu == cpu) {
      --level;
      continue;
    }
    // Now try balancing at a lower domain level of new_cpu.
    const int weight = sd.span_weight;
    cpu = new_cpu;
    level = -1;
    const std::vector<sched_domain>& sds = k->rq_of(cpu)->sd;
    for (size_t i = 0; i < sds.size() && sds[i].span_weight < weight; ++i) level = static_cast<int>(i);
  }
  return new_cpu;
}

// update_sd_lb_stats(): the local group's and the busiest group's statistics, the domain's
// totals, and (periodic balance of an LLC domain) the SIS_UTIL scan budget.
void update_sd_lb_stats(Kernel* k, const lb_env& env, sd_lb_stats* sds) {
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
long sibling_imbalance(const lb_env& env, const sd_lb_stats& sds) {
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
void calculate_imbalance(lb_env* env, sd_lb_stats* sds) {
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
int sched_balance_find_src_group(Kernel* k, lb_env* env) {
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
rq* sched_balance_find_src_rq(Kernel* k, const lb_env& env, int group) {
  rq* busiest = nullptr;
  unsigned long busiest_load = 0, busiest_util = 0;
  unsigned busiest_nr = 0;
  for (int c : env.sd->groups[static_cast<size_t>(group)]) {
    rq* r = k->rq_of(c);
    const unsigned nr_running = r->cfs.h_nr_runnable;
    if (!nr_running) continue;
    switch (env.type) {
      case migrate_load: {
        const unsigned long load = cpu_load(r);
        // One task, more than the imbalance: moving it would just move the imbalance
        // (check_cpu_capacity() is false: no capacity pressure here).
        if (nr_running == 1 && load > static_cast<unsigned long>(env.imbalance)) break;
        if (load > busiest_load) {  // max load / capacity; all capacities are equal here
          busiest_load = load;
          busiest = r;
        }
        break;
      }
      case migrate_util: {
        // cpu_util_cfs_boost(): utilisation, at least the runnable average.
        const unsigned long util = std::min(std::max(cpu_util_cfs(r), cpu_runnable(r)), SCHED_CAPACITY_SCALE);
        if (nr_running <= 1) continue;
        if (busiest_util < util) {
          busiest_util = util;
          busiest = r;
        }
        break;
      }
      case migrate_task:
        if (busiest_nr < nr_running) {
          busiest_nr = nr_running;
          busiest = r;
        }
        break;
      case migrate_misfit:
        break;
    }
  }
  return busiest;
}

// can_migrate_task(): allowed on dst, not running, not delayed (delayed tasks move only
// with their load in Linux; not modelled), not cache hot unless balancing keeps failing.
bool can_migrate_task(Kernel* k, task_struct* p, const lb_env& env) {
  if (p->se.sched_delayed || !task_allowed_on(p, env.dst_cpu)) return false;
  // task_is_ineligible_on_dst_cpu(): while balancing has not failed, keep a task that is not
  // eligible where it is from joining a queue (it would be placed with its negative lag).
  // Not in 6.12 (v6.18's can_migrate_task() has it).
  if (k->cfg_.version != KernelVersion::V6_12 && !env.sd->nr_balance_failed &&
      k->cfg_.feat(__SCHED_FEAT_PLACE_LAG) &&
      env.dst_rq->cfs.nr_queued && !entity_eligible(cfs_rq_of(&p->se), &p->se))
    return false;
  if (p->on_cpu) return false;
  if (env.active) return true;
  if (env.sd->nr_balance_failed > static_cast<unsigned>(env.sd->cache_nice_tries)) return true;
  // task_hot(): idle-policy tasks and SMT siblings (shared caches) are never hot.
  if (p->policy == SCHED_IDLE || env.sd->share_cpucapacity) return true;
  const s64 since = static_cast<s64>(env.src_rq->clock_task - p->se.exec_start);
  return since >= k->cfg_.migration_cost_ns;
}

// rq->cfs_tasks from its tail (the task least recently enqueued or picked): with every task
// in the root group the queued ones are the timeline, in that order by their cfs_tasks_seq
// stamps. Fills the kernel's scratch vector (no allocation per balance) and returns it.
std::vector<task_struct*>& cfs_tasks_from_tail(rq* rq) {
  std::vector<task_struct*>& cand = rq->k->balance_scratch;
  cand.clear();
  for (sched_entity* se : rq->cfs.timeline)
    if (entity_is_task(se)) cand.push_back(task_of(se));
  std::sort(cand.begin(), cand.end(), [](task_struct* a, task_struct* b) {
    return a->se.cfs_tasks_seq < b->se.cfs_tasks_seq;
  });
  return cand;
}

// detach_tasks() + attach_tasks(): from the tail of rq->cfs_tasks, up to the imbalance.
int detach_tasks(Kernel* k, lb_env* env) {
  rq* src = env->src_rq;
  if (src->nr_running <= 1 || env->imbalance <= 0) return 0;
  update_rq_clock(src);
  std::vector<task_struct*>& cand = cfs_tasks_from_tail(src);
  // loop_max = min(sysctl_sched_nr_migrate, nr_running); the running task counts too.
  const size_t loop_max = std::min<size_t>(32, src->nr_running);
  const unsigned shift = std::min(env->sd->nr_balance_failed, 63u);
  int detached = 0;
  // A task passed over goes to the head of the list (list_move), behind every other.
  auto skip = [k](task_struct* p) { p->se.cfs_tasks_seq = ++k->cfs_tasks_clock; };
  for (size_t i = 0; i < cand.size() && i < loop_max; ++i) {
    if (env->idle != CPU_NOT_IDLE && src->nr_running <= 1) break;  // do not steal all
    task_struct* p = cand[i];
    if (!can_migrate_task(k, p, *env)) {
      skip(p);
      continue;
    }
    switch (env->type) {
      case migrate_load: {
        const unsigned long load = std::max<unsigned long>(task_h_load(p), 1);
        if ((load >> shift) > static_cast<unsigned long>(env->imbalance)) {
          skip(p);
          continue;
        }
        env->imbalance -= static_cast<long>(load);
        break;
      }
      case migrate_util: {
        const unsigned long util = task_util_est(p);
        if ((util >> shift) > static_cast<unsigned long>(env->imbalance)) {
          skip(p);
          continue;
        }
        env->imbalance -= static_cast<long>(util);
        break;
      }
      case migrate_task:
      case migrate_misfit:
        env->imbalance--;
        break;
    }
    move_queued_task(src, p, env->dst_rq);
    ++detached;
    // CONFIG_PREEMPTION (set in every PREEMPT_DYNAMIC build, whatever the preemption
    // model): a newly idle CPU stops after the first task, to bound the latency.
    if (env->idle == CPU_NEWLY_IDLE) break;
    if (env->imbalance <= 0) break;
  }
  return detached;
}

// need_active_balance(): detaching failed; stop the busiest CPU to push its running task?
// Here (no asymmetric capacities, no misfits) only imbalanced_active_balance() applies:
// tasks were to be spread and balancing failed more than cache_nice_tries + 2 times.
bool need_active_balance(const lb_env& env) {
  return env.type == migrate_task &&
         env.sd->nr_balance_failed > static_cast<unsigned>(env.sd->cache_nice_tries) + 2;
}

// should_we_balance(): one CPU per local group balances at this level: the first idle
// CPU on an idle core (above the SMT level), else the first idle CPU, else the group's first
// CPU. A newly idle CPU may unless work arrived meanwhile.
bool should_we_balance(Kernel* k, const lb_env& env) {
  if (env.idle == CPU_NEWLY_IDLE)
    return env.dst_rq->nr_running == 0 && env.dst_rq->ex.wake_list.empty();
  const std::vector<int>& local = env.sd->groups[env.sd->local];
  int idle_smt = kNoCpu;
  for (int c : local) {
    if (!available_idle_cpu(k, c)) continue;
    if (!env.sd->share_cpucapacity && !core_is_idle(k, c)) {
      if (idle_smt == kNoCpu) idle_smt = c;  // an idle SMT thread of a busy core: later
      continue;
    }
    return c == env.dst_cpu;
  }
  if (idle_smt != kNoCpu) return idle_smt == env.dst_cpu;
  return local.front() == env.dst_cpu;
}

// sched_balance_rq(): one balancing attempt at one level. Returns the tasks moved; clears
// *continue_balancing when another CPU of the local group balances this level.
int sched_balance_rq(rq* this_rq, sched_domain& sd, cpu_idle_type idle, bool* continue_balancing) {
  Kernel* k = this_rq->k;
  lb_env env{&sd, this_rq, this_rq->cpu, idle};
  int moved = 0;
  int group = -1;
  // out_one_pinned: back off (a longer interval) unless newly idle; nothing moved.
  auto out_one_pinned = [&] {
    if (idle != CPU_NEWLY_IDLE && sd.balance_interval < sd.max_interval) sd.balance_interval *= 2;
    return 0;
  };
  if (!should_we_balance(k, env)) {
    *continue_balancing = false;
  } else {
    group = sched_balance_find_src_group(k, &env);
    if (group >= 0) env.src_rq = sched_balance_find_src_rq(k, env, group);
  }
  if (!env.src_rq) {  // out_balanced
    sd.nr_balance_failed = 0;
    return out_one_pinned();
  }
  moved = detach_tasks(k, &env);
  bool active_balance = false;
  if (!moved) {
    if (idle != CPU_NEWLY_IDLE) sd.nr_balance_failed++;
    if (need_active_balance(env)) {
      rq* busiest = env.src_rq;
      // Only if the running task could come here (else the next attempt tries again).
      if (busiest->curr->is_idle || !task_allowed_on(busiest->curr, env.dst_cpu))
        return out_one_pinned();
      if (!busiest->active_balance) {
        busiest->active_balance = true;
        busiest->push_cpu = env.dst_cpu;
        active_balance = true;
        smp_send_ipi(k, busiest->cpu, IPI_CPU_STOP);  // stop_one_cpu_nowait()
      }
    }
  } else {
    sd.nr_balance_failed = 0;
  }
  if (!active_balance || need_active_balance(env)) sd.balance_interval = sd.min_interval;
  return moved;
}

}  // namespace

// active_load_balance_cpu_stop(): on the busiest CPU, with curr put back, move the least
// recently run task that may go to push_cpu (cache-hot or not: LBF_ACTIVE_LB).
void active_load_balance_cpu_stop(rq* busiest) {
  Kernel* k = busiest->k;
  busiest->active_balance = false;
  const int target_cpu = busiest->push_cpu;
  // "Is there any task to move?" (Linux counts the stopper itself in nr_running.)
  if (busiest->nr_running == 0 || target_cpu == busiest->cpu) return;
  sched_domain* sd = nullptr;  // the lowest domain of the target spanning this CPU
  for (sched_domain& d : k->rq_of(target_cpu)->sd)
    if (std::binary_search(d.span.begin(), d.span.end(), busiest->cpu)) {
      sd = &d;
      break;
    }
  if (!sd) return;
  lb_env env{sd, k->rq_of(target_cpu), target_cpu, CPU_IDLE};
  env.src_rq = busiest;
  env.active = true;
  update_rq_clock(busiest);
  // detach_one_task(): from the tail of rq->cfs_tasks too.
  for (task_struct* p : cfs_tasks_from_tail(busiest)) {
    if (!can_migrate_task(k, p, env)) continue;
    move_queued_task(busiest, p, env.dst_rq);
    sd->nr_balance_failed = 0;  // active balancing done: reset the failure counter
    return;
  }
}

namespace {

// msecs_to_jiffies(): rounds up.
u64 ms_to_jiffies(const Kernel* k, s64 ms) {
  return static_cast<u64>((ms * k->cfg_.hz + 999) / 1000);
}

// get_sd_balance_interval(): busy CPUs balance busy_factor times less often, one jiffy
// early (so that levels do not fall due together); within 1 ..
// max_load_balance_interval (HZ * nr_cpus / 10).
u64 get_sd_balance_interval(const Kernel* k, const sched_domain& sd, bool busy) {
  s64 interval = static_cast<s64>(
      ms_to_jiffies(k, static_cast<s64>(sd.balance_interval) * (busy ? sd.busy_factor : 1)));
  if (busy) interval -= 1;
  const s64 max_interval = std::max<s64>(1, static_cast<s64>(k->cfg_.hz) * k->nr_cpus() / 10);
  return static_cast<u64>(std::clamp<s64>(interval, 1, max_interval));
}

// update_newidle_cost(): a newly-idle balance of sd that cost more than any before sets the
// domain's max_newidle_lb_cost; otherwise, once more than a second has passed since it was
// last set or decayed, it decays by 253/256 (~1%) and the function says so. The cost is what
// the model charged this CPU for the pass at that level, as Linux measures t1 - t0 around it.
static bool update_newidle_cost(const Kernel* k, sched_domain& sd, u64 cost) {
  const u64 now = k->jiffies();
  if (cost > sd.max_newidle_lb_cost) {
    sd.max_newidle_lb_cost = cost;
    sd.last_decay_max_lb_cost = now;
  } else if (now > sd.last_decay_max_lb_cost + static_cast<u64>(k->cfg_.hz)) {
    sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
    sd.last_decay_max_lb_cost = now;
    return true;
  }
  return false;
}

// sched_balance_softirq() + sched_balance_domains(): decay the blocked load, then balance
// bottom-up the domains that are due, until another CPU of the local group is the one to
// balance a level. Every visit decays the domains' newidle costs (update_newidle_cost(sd,
// 0)), going on past that point while a decay happened, and after a decay the CPU's
// max_idle_balance_cost becomes their sum, at least the migration cost.
void sched_balance_domains(rq* rq, bool idle) {
  Kernel* k = rq->k;
  const u64 j = k->jiffies();
  u64 next = j + 60 * static_cast<u64>(k->cfg_.hz);
  bool attempted = false, continue_balancing = true, need_decay = false;
  u64 max_cost = 0;
  // A CPU running only SCHED_IDLE tasks balances as a busy one (CPU_NOT_IDLE) but at the
  // idle intervals.
  bool busy = !idle && !sched_idle_cpu(k, rq->cpu);
  for (sched_domain& sd : rq->sd) {
    need_decay = update_newidle_cost(k, sd, 0);  // as Linux: the last domain visited decides
    max_cost += sd.max_newidle_lb_cost;
    if (!continue_balancing) {
      if (need_decay) continue;
      break;
    }
    u64 interval = get_sd_balance_interval(k, sd, busy);
    if (j >= sd.last_balance + interval) {
      attempted = true;
      if (sched_balance_rq(rq, sd, idle ? CPU_IDLE : CPU_NOT_IDLE, &continue_balancing)) {
        idle = available_idle_cpu(k, rq->cpu);
        busy = !idle && !sched_idle_cpu(k, rq->cpu);
      }
      sd.last_balance = j;
      interval = get_sd_balance_interval(k, sd, busy);
    }
    next = std::min(next, sd.last_balance + interval);
  }
  if (need_decay)
    rq->max_idle_balance_cost = std::max(static_cast<u64>(k->cfg_.migration_cost_ns), max_cost);
  rq->next_balance = next;
  if (attempted) cpu_charge(rq, k->machine_.costs.newidle_balance_ns);
}

}  // namespace

// sched_balance_trigger(): from the tick, balance when due (SCHED_SOFTIRQ) and kick the
// NOHZ idle balancer when idle CPUs may need to pull.
void sched_balance_trigger(rq* rq) {
  Kernel* k = rq->k;
  if (k->jiffies() >= rq->next_balance) {
    // sched_balance_softirq(): this CPU's blocked load first.
    sched_balance_update_blocked_averages(rq);
    sched_balance_domains(rq, rq->curr->is_idle);
  }
  nohz_balancer_kick(rq);
}

// update_newidle_stats(): count an attempt at sd (and its weighted success); every 1024
// attempts the ratio becomes the successes and both counts halve.
static void update_newidle_stats(sched_domain& sd, unsigned success) {
  sd.newidle_call++;
  sd.newidle_success += success;
  if (sd.newidle_call >= 1024) {
    sd.newidle_ratio = sd.newidle_success;
    sd.newidle_call /= 2;
    sd.newidle_success /= 2;
  }
}

// sched_balance_newidle(): a CPU about to idle pulls one task from the busiest runqueue,
// lowest domain first, while its expected idle time (avg_idle) covers the cost so far plus
// the domain's max_newidle_lb_cost. Each domain's pass costs this CPU what the model charges
// for it (newidle_balance_ns plus one remote runqueue cache line per CPU of the span, and
// any IPI the pass sends), and that charge is the measured cost update_newidle_cost() keeps,
// as Linux keeps sched_clock_cpu() t1 - t0; so wide domains are skipped by CPUs that idle
// briefly. A domain not yet balanced costs 0, so the first attempt is never held back.
bool sched_balance_newidle(rq* rq) {
  Kernel* k = rq->k;
  if (rq->sd.empty()) return false;
  // The idle CPU's next periodic balance moves forward to the idle intervals (no busy
  // factor), whether or not it balances now (update_next_balance()).
  u64 next_balance = k->jiffies() + static_cast<u64>(k->cfg_.hz);
  auto update_next_balance = [&](const sched_domain& sd) {
    next_balance = std::min(next_balance, sd.last_balance + get_sd_balance_interval(k, sd, false));
  };
  const hw::Costs& c = k->machine_.costs;
  if (!k->nr_overloaded || rq->avg_idle < rq->sd[0].max_newidle_lb_cost) {
    update_next_balance(rq->sd[0]);
  } else {
    sched_balance_update_blocked_averages(rq);
    bool continue_balancing = true;
    const bool ni_random = k->cfg_.feat(__SCHED_FEAT_NI_RANDOM);
    u64 curr_cost = 0;
    for (sched_domain& sd : rq->sd) {
      update_next_balance(sd);
      if (rq->avg_idle < curr_cost + sd.max_newidle_lb_cost) break;
      unsigned weight = 1;
      if (ni_random) {
        // Throw a 1024-sided die; balance this domain only as often as it succeeds, and
        // weigh a success by how rarely the domain is tried.
        const unsigned d1k = static_cast<uint32_t>(rq->sched_rnd_state.next_u64()) % 1024;
        weight = 1 + sd.newidle_ratio;
        if (d1k > weight) {
          update_newidle_stats(sd, 0);
          continue;
        }
        weight = (1024 + weight / 2) / weight;
      }
      // t0 .. t1: this CPU's kernel work queued by the pass, the pass's own cost included.
      const sim::Time t0 = kernel_clock(rq, k->now());
      cpu_charge(rq, c.newidle_balance_ns + c.line_llc_ns * sd.span_weight);
      const int pulled = sched_balance_rq(rq, sd, CPU_NEWLY_IDLE, &continue_balancing);
      const u64 domain_cost = static_cast<u64>(kernel_clock(rq, k->now()) - t0);
      curr_cost += domain_cost;
      update_newidle_stats(sd, weight * (pulled ? 1 : 0));
      update_newidle_cost(k, sd, domain_cost);
      if (pulled || !continue_balancing || rq->nr_running) break;
    }
    rq->max_idle_balance_cost = std::max(rq->max_idle_balance_cost, curr_cost);
  }
  if (rq->next_balance > next_balance) rq->next_balance = next_balance;
  return rq->nr_running > 0;
}

// nohz_balancer_kick(): a busy CPU asks the first idle CPU to balance on behalf of all
// tick-stopped idle CPUs when it has queued work, or when other CPUs of its LLC are busy too
// (sd_llc_shared->nr_busy_cpus > 1: packed SMT cores may need spreading).
// Every LOAD_AVG_PERIOD ms it also asks for the idle CPUs' blocked load to be decayed
// (NOHZ_STATS_KICK), busy or not.
void nohz_balancer_kick(rq* rq) {
  Kernel* k = rq->k;
  if (rq->curr->is_idle || !k->cfg_.nohz_idle || k->nr_idle_cpus == 0) return;
  const u64 j = k->jiffies();
  unsigned flags = 0;
  if (k->nohz_has_blocked && j > k->nohz_next_blocked) flags = NOHZ_STATS_KICK;
  if (j >= k->nohz_next_balance) {
    bool balance = rq->nr_running >= 2;
    if (!balance) {
      const int llc = llc_size(k, rq->cpu);
      const s64 busy = llc - k->lb_sums_of[static_cast<size_t>(rq->cpu)][2]->idle_cpus;
      balance = llc > 1 && busy > 1;
    }
    if (balance) flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
  }
  if (!flags) return;
  if (flags & NOHZ_BALANCE_KICK) k->nohz_next_balance = j + 1;
  for (int c = 0; c < k->nr_cpus(); ++c) {
    if (c != rq->cpu && available_idle_cpu(k, c)) {
      k->nohz_flags |= flags;
      smp_send_ipi(k, c, IPI_NOHZ_KICK);
      return;
    }
  }
}

// nohz_idle_balance(): run on the kicked CPU, over the idle CPUs from the next one round to
// itself: decay their blocked load (at most once a jiffy each), balance those that are due;
// stop if work arrived here meanwhile.
void nohz_idle_balance(struct rq* this_rq) {
  Kernel* k = this_rq->k;
  const unsigned flags = k->nohz_flags;
  k->nohz_flags = 0;
  const u64 j = k->jiffies();
  const int n = k->nr_cpus();
  u64 next_balance = j + 60 * static_cast<u64>(k->cfg_.hz);
  bool has_blocked_load = false, update_next_balance = false;
  if (flags & NOHZ_STATS_KICK) k->nohz_has_blocked = false;
  for (int i = 1; i <= n; ++i) {
    const int c = (this_rq->cpu + i) % n;
    if (!available_idle_cpu(k, c)) continue;
    if (!available_idle_cpu(k, this_rq->cpu) && test_tsk_need_resched(this_rq->curr)) {
      if (flags & NOHZ_STATS_KICK) k->nohz_has_blocked = true;  // abort: a later kick
      return;                                                   // takes it up
    }
    struct rq* rq = k->rq_of(c);
    if (flags & NOHZ_STATS_KICK) {  // update_nohz_stats()
      if (j > rq->last_blocked_load_update_tick) sched_balance_update_blocked_averages(rq);
      has_blocked_load |= rq->cfs.avg.load_avg || rq->cfs.avg.util_avg;  // cfs_rq_has_blocked()
    }
    if ((flags & NOHZ_BALANCE_KICK) && j >= rq->next_balance) sched_balance_domains(rq, true);
    if (next_balance > rq->next_balance) {
      next_balance = rq->next_balance;
      update_next_balance = true;
    }
  }
  // Only if some idle CPU was seen: else nohz.next_balance stays at the kick's j + 1, and
  // the next tick kicks again.
  if (update_next_balance) k->nohz_next_balance = next_balance;
  if (flags & NOHZ_STATS_KICK) k->nohz_next_blocked = j + ms_to_jiffies(k, LOAD_AVG_PERIOD);
  if (has_blocked_load) k->nohz_has_blocked = true;
}

}  // namespace kernel
