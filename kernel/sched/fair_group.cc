// Task groups of the fair class (CONFIG_FAIR_GROUP_SCHED; kernel/sched/fair.c and core.c of
// v6.12 .. v7.0): creating a group's per-CPU runqueue and entity. Enqueue, dequeue, pick and
// the group entity's weight (calc_group_shares()) are in fair.cc, group PELT and
// task_h_load() in fair_pelt.cc. docs/model.md, "Task groups".
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// init_cfs_rq() + init_tg_cfs_entry(): the group's runqueue on `cpu`, and its entity queued
// (when runnable) on the parent group's runqueue there, one level deeper. A new group
// entity has weight NICE_0_LOAD and no load (init_entity_runnable_average()), and attaches
// to its parent's averages at its first enqueue (last_update_time == 0).
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

}  // namespace kernel
