// Task groups of the fair class (CONFIG_FAIR_GROUP_SCHED; kernel/sched/fair.c and core.c of
// v6.12 .. v7.0): creating a group's per-CPU runqueue and entity, and the weight of a group's
// entities (calc_group_shares(), update_cfs_group(), sched_group_set_shares()). Enqueue,
// dequeue and pick are in fair.cc, group PELT and
// task_h_load() in fair_pelt.cc. docs/model.md, "Task groups".
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// init_cfs_rq() + init_tg_cfs_entry(): the group's runqueue on `cpu`, and its entity queued
// (when runnable) on the parent group's runqueue there, one level deeper. A new group
// entity has weight NICE_0_LOAD and no load (init_entity_runnable_average()); it joins its
// parent's averages when the group comes online (online_fair_sched_group()), not at its
// first enqueue.
static void init_tg_cfs_entry(KernelImpl* k, task_group* tg, task_group* parent, int cpu) {
  const size_t c = static_cast<size_t>(cpu);
  rq* rq = k->rq_of(cpu);
  cfs_rq* cfs = &tg->cfs_rq_store[c];
  sched_entity* se = &tg->se_store[c];
  cfs->rq = rq;
  cfs->tg = tg;
  tg->cfs_rq[c] = cfs;
  tg->se[c] = se;
  se->my_q = cfs;
  if (parent) {
    se->cfs_rq = parent->cfs_rq[c];
    se->parent = parent->se[c];
    se->depth = se->parent->depth + 1;
  } else {
    se->cfs_rq = &rq->cfs;
    se->parent = nullptr;
    se->depth = 0;
  }
  se->load = load_weight{};  // update_load_set(&se->load, NICE_0_LOAD)
  se->slice = sysctl_sched_base_slice(k);
  init_entity_runnable_average(se);
  // kzalloc()'s 0 is "long ago" against sched_clock_cpu(), the time since boot; the
  // simulated clock starts at 0, so the runqueue's first update_tg_load_avg() must not be
  // held back by the once-per-ms limit as if one had just happened.
  cfs->last_update_tg_load_avg = static_cast<u64>(-1000000);  // -NSEC_PER_MSEC;
}

void alloc_fair_sched_group(KernelImpl* k, task_group* tg, task_group* parent) {
  const size_t n = static_cast<size_t>(k->nr_cpus());
  tg->parent = parent;
  tg->shares = NICE_0_LOAD;
  tg->cfs_rq_store.resize(n);  // sized once: the pointers below stay valid
  tg->se_store.resize(n);
  tg->cfs_rq.assign(n, nullptr);
  tg->se.assign(n, nullptr);
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) init_tg_cfs_entry(k, tg, parent, cpu);
}

// online_fair_sched_group(): the group's entity on each CPU attaches to its parent's
// runqueue (attach_entity_cfs_rq()), so its PELT clock runs from now and its first enqueue
// does not attach it a second time on top of what propagation brings up.
void online_fair_sched_group(KernelImpl* k, task_group* tg) {
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    update_rq_clock(k->rq_of(cpu));
    attach_entity_cfs_rq(tg->se[static_cast<size_t>(cpu)]);
  }
}

// calc_group_shares(): the weight of a group's entity on one CPU, the group's shares split
// by this CPU's part of the group's load:
//   shares * load / (tg->load_avg - this runqueue's last contribution + load),
//   load = max(the runqueue's weight, its load_avg),
// clamped to MIN_SHARES .. shares. Weights here are scale_load_down()'d (1024 = nice 0), so
// the entity's weight has Linux's resolution divided by 1024 and MIN_SHARES (2, unscaled in
// Linux) is 2 here: the floor __update_inv_weight() gives any weight anyway.
static unsigned long calc_group_shares(cfs_rq* cfs) {
  const task_group* tg = cfs->tg;
  const long tg_shares = static_cast<long>(tg->shares);
  const long load = static_cast<long>(std::max<unsigned long>(cfs->load, cfs->avg.load_avg));
  long tg_weight = tg->load_avg;
  tg_weight -= cfs->tg_load_avg_contrib;
  tg_weight += load;
  long shares = tg_shares * load;
  if (tg_weight) shares /= tg_weight;
  return static_cast<unsigned long>(std::clamp<long>(shares, MIN_SHARES, tg_shares));
}

// update_cfs_group(): a group entity takes the weight its runqueue's load gives it now.
// An empty group keeps its weight (66951e4860d3, 6.14 and 6.12.y): a group entity left
// delayed, or dequeued, by its last task's sleep goes on at the weight it competed with, and
// reweighting it to its decayed share would inflate its lag. 6.12 also leaves a throttled
// hierarchy's entity alone; 7.0 has no such test, and 6.18 (task-based throttling) follows it.
void update_cfs_group(sched_entity* se) {
  cfs_rq* gcfs = group_cfs_rq(se);
  if (!gcfs || !gcfs->load) return;
  if (v612(rq_of(gcfs)->k) && throttled_hierarchy(gcfs)) return;
  const unsigned long shares = calc_group_shares(gcfs);
  if (se->load.weight != shares) reweight_entity(cfs_rq_of(se), se, shares);
}

void sched_group_set_shares(KernelImpl* k, task_group* tg, unsigned long shares) {
  tg->shares = shares;
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    rq* rq = k->rq_of(cpu);
    update_rq_clock(rq);
    // __sched_group_set_shares(): every level above the group's entity on each CPU.
    for (sched_entity* se = tg->se[static_cast<size_t>(cpu)]; se; se = parent_entity(se)) {
      update_load_avg(cfs_rq_of(se), se, UPDATE_TG);
      update_cfs_group(se);
    }
  }
}

// sched_group_set_idle() (cpu.idle, kernel/sched/fair.c): each CPU's group runqueue takes
// the flag, and the runqueues above its queued entity count its non-idle tasks as idle (or
// no longer), up to the first that is itself an idle group's; then the group's shares
// become WEIGHT_IDLEPRIO ("idle groups have minimum weight") or NICE_0_LOAD.
void sched_group_set_idle(KernelImpl* k, task_group* tg, int idle) {
  if (tg->idle == idle) return;
  tg->idle = idle;
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    sched_entity* se = tg->se[static_cast<size_t>(cpu)];
    cfs_rq* grp = tg->cfs_rq[static_cast<size_t>(cpu)];
    grp->idle = idle;
    long delta = static_cast<long>(grp->h_nr_queued) - static_cast<long>(grp->h_nr_idle);
    if (!cfs_rq_is_idle(grp)) delta = -delta;
    for_each_sched_entity(se) {
      cfs_rq* cfs = cfs_rq_of(se);
      if (!se->on_rq) break;
      cfs->h_nr_idle = static_cast<unsigned>(static_cast<long>(cfs->h_nr_idle) + delta);
      if (cfs_rq_is_idle(cfs)) break;  // already counted at this level and above
    }
  }
  sched_group_set_shares(k, tg, idle ? WEIGHT_IDLEPRIO : NICE_0_LOAD);
}

}  // namespace kernel
