// Wakeup and fork CPU selection of the fair class: select_task_rq_fair(), wake_affine(),
// select_idle_sibling() and the fork slow path sched_balance_find_dst_cpu(); fair.c's part
// between "select_task_rq_fair" and the load balancer. Loads and utilisation are PELT's.
// Then wakeup preemption: whether the wakee preempts the task running where it is queued.
#include <algorithm>
#include <cassert>
#include <climits>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

namespace {

// Idle, or running only SCHED_IDLE tasks: what wakeup placement takes as free
// (available_idle_cpu(cpu) || sched_idle_cpu(cpu) in select_idle_sibling() and its scans).
bool idle_or_sched_idle(KernelImpl* k, int cpu) { return available_idle_cpu(k, cpu) || sched_idle_cpu(k, cpu); }

bool idle_cpu_for(KernelImpl* k, task_struct* p, int cpu) {
  return task_allowed_on(p, cpu) && idle_or_sched_idle(k, cpu);
}

// wake_wide(): a waker that flips between many wakees (1:N) should not pull them all.
bool wake_wide(KernelImpl* k, task_struct* p, task_struct* waker, int waker_cpu) {
  unsigned master = waker->wakee_flips, slave = p->wakee_flips;
  const unsigned factor = static_cast<unsigned>(llc_size(k, waker_cpu));
  if (master < slave) std::swap(master, slave);
  if (slave < factor || master < slave * factor) return false;
  return true;
}


// wake_affine_weight(): pull the wakee to the waker's CPU if that CPU, with the wakee, is
// less loaded than prev without it (PELT loads; prev favoured by half the imbalance margin
// under WA_BIAS). All CPUs have the same capacity, so the capacity factors cancel.
int wake_affine_weight(KernelImpl* k, const sched_domain& sd, task_struct* p, int this_cpu,
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

int wake_affine(KernelImpl* k, const sched_domain& sd, task_struct* p, int this_cpu, int prev_cpu,
                bool sync) {
  int target = kNoCpu;
  if (k->cfg_.feat(__SCHED_FEAT_WA_IDLE)) target = wake_affine_idle(k, this_cpu, prev_cpu, sync);
  if (target == kNoCpu && k->cfg_.feat(__SCHED_FEAT_WA_WEIGHT))
    target = wake_affine_weight(k, sd, p, this_cpu, prev_cpu, sync);
  return target == this_cpu ? this_cpu : prev_cpu;
}

// sd_llc_shared->has_idle_cores of the LLC of `cpu`: whether an idle core is believed to
// exist there (a hint: set when a core goes idle, cleared by a scan that finds none).
static bool test_idle_cores(const KernelImpl* k, int cpu) {
  return k->llc_has_idle_cores[static_cast<size_t>(k->machine_.topo.llc_of[cpu])];
}
static void set_idle_cores(KernelImpl* k, int cpu, bool val) {
  k->llc_has_idle_cores[static_cast<size_t>(k->machine_.topo.llc_of[cpu])] = val;
}

// select_idle_cpu(): scan the LLC from target+1, for an idle core if one is believed to
// exist (the hint is cleared when the scan finds none), else for any idle CPU within the
// SIS_UTIL budget (sd_llc_shared->nr_idle_scan, set by periodic balancing from the LLC's
// utilisation; none at all when it is 0).
int select_idle_cpu(KernelImpl* k, task_struct* p, const sched_domain& llc, bool has_idle_core, int target) {
  int nr = INT_MAX;
  if (k->cfg_.feat(__SCHED_FEAT_SIS_UTIL)) {
    nr = k->llc_nr_idle_scan[static_cast<size_t>(k->machine_.topo.llc_of[target])] + 1;
    if (nr == 1) return kNoCpu;  // an overloaded LLC is unlikely to have an idle CPU
  }
  const int n = llc.span_weight;
  const int start = static_cast<int>(std::upper_bound(llc.span.begin(), llc.span.end(), target) - llc.span.begin());
  int idle_cpu = kNoCpu;
  // for_each_cpu_wrap(cpu, cpus, target + 1): span[(start + i) % n], wrapped without a divide
  for (int i = 0, j = start == n ? 0 : start; i < n; ++i, j = j + 1 == n ? 0 : j + 1) {
    const int cpu = llc.span[j];
    if (!task_allowed_on(p, cpu)) continue;  // the scan covers span & p->cpus_ptr
    if (has_idle_core) {
      if (core_is_idle(k, cpu)) return cpu;
      if (idle_cpu == kNoCpu && idle_or_sched_idle(k, cpu)) idle_cpu = cpu;
    } else {
      if (--nr <= 0) return kNoCpu;
      if (idle_or_sched_idle(k, cpu)) return cpu;  // __select_idle_cpu()
    }
  }
  if (has_idle_core) set_idle_cores(k, target, false);
  return idle_cpu;
}

// select_idle_sibling(): target, prev or a recently used CPU if idle, then the LLC scan.
int select_idle_sibling(KernelImpl* k, task_struct* p, int prev, int target) {
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
    has_idle_core = test_idle_cores(k, target);
    if (!has_idle_core && cpus_share_cache(k, prev, target)) {
      const int sib = k->rq_of(prev)->smt_sibling;
      if (sib >= 0 && idle_cpu_for(k, p, sib)) return sib;  // select_idle_smt()
    }
  }
  const int i = select_idle_cpu(k, p, *llc, has_idle_core, target);
  return i != kNoCpu ? i : target;
}

// ---- Fork balancing: the slow path of select_task_rq_fair() ----

// update_sg_wakeup_stats(): group g's statistics for placing p. 7.0 sums over the CPUs of
// the group p may use (the weight and capacity stay the whole group's: 82d6e01a0699, "Only
// update stats for allowed CPUs when looking for dst group", 6.19); 6.12 and 6.18 over the
// whole group, so idle CPUs p may not use make a group look idler and draw p's forks to its
// allowed part. Only fork takes the slow path here (exec is not modelled), and a task being
// forked has no PELT contribution anywhere yet (last_update_time 0), so the cpu_*_without(p)
// sums Linux takes are the plain ones, and task_running_on_cpu() is 0.
sg_lb_stats update_sg_wakeup_stats(KernelImpl* k, const sched_domain& sd, size_t g, const task_struct* p) {
  assert(p->se.avg.last_update_time == 0 && "the slow path is modelled for new tasks only");
  lb_sum sum;
  if (p->nr_cpus_allowed == k->nr_cpus() || !v70(k)) {
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

bool group_allows(std::span<const int> group, const task_struct* p) {
  for (int c : group)
    if (task_allowed_on(p, c)) return true;
  return false;
}

// sched_balance_find_dst_group(): the idlest group of sd other than this_cpu's, if p should
// go there rather than stay in the local group; -1 to stay. Between NUMA nodes a task stays
// near its parent while the local node is lightly used (adjust_numa_imbalance()), and a busy
// local group keeps the task unless the idlest is lighter by imbalance_pct.
int sched_balance_find_dst_group(KernelImpl* k, const sched_domain& sd, const task_struct* p, int this_cpu) {
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
// On a machine with one idle state every idle CPU is in the same one, so that is the first
// idle CPU, or a later one that went idle later (rq->idle_stamp). With a deep state, a CPU in
// a state (idle_get_state()) counts by that state's exit latency, one between states
// (none set) as the shallowest; the first idle CPU stands in for Linux's idle_stamp, never 0
// there, against one idle since the start of the run.
int sched_balance_find_dst_group_cpu(KernelImpl* k, std::span<const int> group, const task_struct* p, int this_cpu) {
  if (group.size() == 1) return group.front();
  unsigned long min_load = ULONG_MAX;
  u64 latest_idle_timestamp = 0;
  int least_loaded_cpu = this_cpu, shallowest_idle_cpu = kNoCpu;
  const bool states = k->machine_.costs.has_deep_idle();
  sim::Time min_exit_latency = INT64_MAX;
  for (int i : group) {
    if (!task_allowed_on(p, i)) continue;
    const rq* rq = k->rq_of(i);
    if (sched_idle_rq(rq)) return i;  // SCHED_IDLE tasks only: the new task preempts them
    if (available_idle_cpu(k, i)) {
      // One idle state: every idle CPU is "not in a state" here, and only the stamp decides.
      const cpuidle_cpu& c = k->cpuidle[static_cast<size_t>(i)];
      const bool in_state = states && c.time_start >= 0 && c.time_start <= k->now();
      const sim::Time exit = in_state ? idle_exit_latency(rq) : -1;
      if (in_state && exit < min_exit_latency) {
        min_exit_latency = exit;
        latest_idle_timestamp = rq->idle_stamp;
        shallowest_idle_cpu = i;
      } else if ((!in_state || exit == min_exit_latency) &&
                 (shallowest_idle_cpu == kNoCpu || rq->idle_stamp > latest_idle_timestamp)) {
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
int sched_balance_find_dst_cpu(KernelImpl* k, task_struct* p, int cpu, int prev_cpu) {
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

}  // namespace

// __update_idle_core() (set_next_task_idle() -> update_idle_core()): a CPU going idle whose
// SMT siblings are idle too makes its whole core idle.
void update_idle_core(rq* rq) {
  KernelImpl* k = rq->k;
  const int sib = rq->smt_sibling;
  if (sib < 0 || test_idle_cores(k, rq->cpu)) return;  // sched_smt_active(); already set
  if (available_idle_cpu(k, sib)) set_idle_cores(k, rq->cpu, true);
}

// wake_affine_idle(): the waker's CPU if it is idle and shares a cache with prev (prev if
// prev is idle too), or runs only the waker of a sync wakeup; else prev if idle.
int wake_affine_idle(KernelImpl* k, int this_cpu, int prev_cpu, bool sync) {
  if (available_idle_cpu(k, this_cpu) && cpus_share_cache(k, this_cpu, prev_cpu))
    return available_idle_cpu(k, prev_cpu) ? prev_cpu : this_cpu;
  if (sync) {
    // The waker is the only task there. 6.18+ leave delayed tasks out ("Fixup
    // wake_up_sync() vs DELAYED_DEQUEUE", aa3ee4f0b754); 6.12.0 counts them.
    const rq* rq = k->rq_of(this_cpu);
    unsigned nr = rq->nr_running;
    if (!v612(k)) nr -= rq->cfs.h_nr_queued - rq->cfs.h_nr_runnable;
    if (nr == 1) return this_cpu;
  }
  if (available_idle_cpu(k, prev_cpu)) return prev_cpu;
  return kNoCpu;
}

// record_wakee(): the waker's count of switches between wakees, for wake_wide(); halved
// once a second.
static void record_wakee(KernelImpl* k, task_struct* waker, const task_struct* p) {
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
int select_task_rq_fair(KernelImpl* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu) {
  // Fork: the slow path from the highest domain with SD_BALANCE_FORK, which every level
  // here has (see docs/model.md), from the parent's CPU: the launcher's, or under
  // launcher=outside p's first allowed CPU (prev_cpu; there is no waker CPU then).
  if (wake_flags & (WF_FORK | WF_EXEC))
    return sched_balance_find_dst_cpu(k, p, waker_cpu >= 0 ? waker_cpu : prev_cpu, prev_cpu);
  const bool sync = wake_flags & WF_SYNC;
  task_struct* waker = k->rq_of(waker_cpu)->curr;
  record_wakee(k, waker, p);  // current: the idle task too, for a wakeup from its interrupt
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

// ---- Wakeup preemption (fair.c's check_preempt_wakeup_fair() / wakeup_preempt_fair()) ----

// find_matching_se(): walk the waker's and the wakee's entities up to the level where they
// are queued on the same cfs_rq, where EEVDF can compare them.
static void find_matching_se(sched_entity** se, sched_entity** pse) {
  int se_depth = (*se)->depth, pse_depth = (*pse)->depth;
  for (; se_depth > pse_depth; --se_depth) *se = parent_entity(*se);
  for (; pse_depth > se_depth; --pse_depth) *pse = parent_entity(*pse);
  while (cfs_rq_of(*se) != cfs_rq_of(*pse)) {
    *se = parent_entity(*se);
    *pse = parent_entity(*pse);
  }
}

// set_next_buddy(): the wakee, and its group entities up to the root, become their
// runqueues' next buddy; never a SCHED_IDLE entity.
void set_next_buddy(sched_entity* se) {
  for_each_sched_entity(se) {
    if (!se->on_rq || se_is_idle(se)) return;  // (not above a throttled runqueue)
    cfs_rq_of(se)->next = se;
  }
}

// 7.0 preempt_sync(): a WF_SYNC wakee that becomes the buddy preempts only if its deadline
// is earlier and curr has run at least the migration cost since it was last charged; a
// quarter of it when the wakee's CPU was selected (WF_RQ_SELECTED: tasks stacking on a CPU
// when they could run elsewhere).
static bool preempt_sync(rq* rq, int wake_flags, sched_entity* pse, sched_entity* se) {
  const s64 delta = std::max<s64>(0, static_cast<s64>(rq->clock_task - se->exec_start));
  s64 threshold = rq->k->cfg_.migration_cost_ns;
  if (wake_flags & WF_RQ_SELECTED) threshold >>= 2;
  return entity_before(pse, se) && delta >= threshold;
}

// wakeup_preempt_fair() (7.0; check_preempt_wakeup_fair() before 6.19): preempt only if the
// wakee is the eligible entity with the earliest deadline once curr's protection is honoured.
void wakeup_preempt_fair(rq* rq, task_struct* p, int wake_flags) {
  task_struct* curr = rq->curr;
  sched_entity* se = &curr->se;
  sched_entity* pse = &p->se;
  cfs_rq* cfs = nullptr;
  KernelImpl* k = rq->k;
  bool protect = true;  // preempt_action != PREEMPT_WAKEUP_SHORT
  if (se == pse) return;
  // 6.12: a wakee below a throttled runqueue cannot run (no buddy, no update_curr()). 6.18+
  // throttles a task only on its way back to user mode, so a wakee there runs until then.
  if (v612(k) && throttled_hierarchy(cfs_rq_of(pse))) return;
  // 6.12, 6.18: any non-fork wakeup of a task that is not delayed becomes the next buddy.
  if (!v70(k) && feat(rq, __SCHED_FEAT_NEXT_BUDDY) && !(wake_flags & WF_FORK) &&
      !pse->sched_delayed)
    set_next_buddy(pse);
  if (test_tsk_need_resched(curr)) return;
  if (!feat(rq, __SCHED_FEAT_WAKEUP_PREEMPTION)) return;
  find_matching_se(&se, &pse);
  const bool curr_idle = se_is_idle(se), p_idle = se_is_idle(pse);
  if (curr_idle && !p_idle) {
    cancel_protect_slice(se, k);
    goto preempt;
  }
  if (curr_idle != p_idle) return;
  if (p->policy != SCHED_NORMAL) return;  // BATCH and IDLE wakees do not preempt
  cfs = cfs_rq_of(se);
  update_curr(cfs);
  if (v612(k)) {
    // do_preempt_short(): a shorter-slice wakee cancels RUN_TO_PARITY.
    if (feat(rq, __SCHED_FEAT_PREEMPT_SHORT) && pse->slice < se->slice &&
        entity_eligible(cfs, pse) && (entity_before(pse, se) || !entity_eligible(cfs, se)))
      cancel_protect_slice(se, k);
    if (pick_eevdf(cfs, true) == pse) goto preempt;
    return;
  }
  // A shorter-slice wakee (PREEMPT_WAKEUP_SHORT): the pick ignores curr's protection, and
  // comes before the fork and delayed checks (7.0 goes straight to its `pick:` label).
  if (feat(rq, __SCHED_FEAT_PREEMPT_SHORT) && pse->slice < se->slice) {
    protect = false;
    goto pick;
  }
  if (v70(k) && ((wake_flags & WF_FORK) || pse->sched_delayed)) return;
  // 7.0 set_preempt_buddy(): the wakee becomes the buddy unless the present one has an
  // earlier deadline; a new buddy woken WF_SYNC preempts or not by preempt_sync() alone.
  if (v70(k) && feat(rq, __SCHED_FEAT_NEXT_BUDDY) &&
      !(cfs->next && entity_before(cfs->next, pse))) {
    set_next_buddy(pse);
    if (wake_flags & WF_SYNC) {
      if (preempt_sync(rq, wake_flags, pse, se)) goto preempt;
      return;
    }
  }
pick:
  // The releases ask a bare __pick_eevdf(), which a delayed entity (eligible, earliest
  // deadline) can win. With wakeup_pick_next_entity the pick is pick_next_entity()'s, as in
  // 7.0.y and 6.18.y (ac8e69e69363): a picked delayed entity has its dequeue finished and
  // the pick is made again, while the cfs_rq still has entities (9f6d929ee2c6: the wakee
  // itself may have been the delayed one, when attach_task() moved it). Each round dequeues
  // one entity, so the loop ends.
  for (;;) {
    sched_entity* nse = pick_eevdf(cfs, protect);
    if (k->cfg_.wakeup_pick_next_entity && nse && nse->sched_delayed) {
      dequeue_entities(rq, nse, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
      if (cfs->nr_queued) continue;
      break;
    }
    if (nse == pse) {
      if (!protect) cancel_protect_slice(se, k);
      goto preempt;
    }
    break;
  }
  // RUN_TO_PARITY: curr's protection shrinks to the shortest queued slice; 6.18 does this
  // after a shorter-slice wakee's pick only.
  if (feat(rq, __SCHED_FEAT_RUN_TO_PARITY) && (v70(k) || !protect)) update_protect_slice(cfs, se);
  return;
preempt:
  if (v612(k))
    resched_curr(rq);
  else
    resched_curr_lazy(rq);
}

}  // namespace kernel
