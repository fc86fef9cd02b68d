// The fair class's internals shared by fair.cc (its sched_class operations), fair_eevdf.cc
// (EEVDF on a runqueue) and fair_pelt.cc (its PELT hooks): what fair.c calls across its own
// sections. Not for use outside kernel/sched/fair*.cc.
#pragma once
#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"

namespace kernel {

inline bool feat(const rq* rq, sched_feat_bit b) { return rq->k->cfg_.feat(b); }
inline rq* rq_of(cfs_rq* cfs) { return cfs->rq; }

// Walks from an entity up through its group entities (CONFIG_FAIR_GROUP_SCHED's form).
#define for_each_sched_entity(se) for (; se; se = parent_entity(se))
inline s64 entity_key(cfs_rq* cfs, const sched_entity* se) {
  return static_cast<s64>(se->vruntime - cfs->zero_vruntime);
}
inline bool entity_before(const sched_entity* a, const sched_entity* b) {
  return static_cast<s64>(a->deadline - b->deadline) < 0;
}

// ---- fair_eevdf.cc (calc_delta_fair, avg_vruntime, entity_eligible, pick_eevdf: sched.h) ----
void update_entity_lag(cfs_rq* cfs, sched_entity* se);
// The runqueue's "tree": every queued entity but curr.
void __enqueue_entity(cfs_rq* cfs, sched_entity* se);
void __dequeue_entity(cfs_rq* cfs, sched_entity* se);
// Slice protection (RUN_TO_PARITY): 6.12's vlag == deadline mark, 6.18+'s vprot.
void set_protect_slice(cfs_rq* cfs, sched_entity* se);
bool protect_slice(cfs_rq* cfs, sched_entity* se);
void cancel_protect_slice(sched_entity* se, const KernelImpl* k);
void update_protect_slice(cfs_rq* cfs, sched_entity* se);
void clear_buddies(cfs_rq* cfs, sched_entity* se);
void update_curr(cfs_rq* cfs);
void place_entity(cfs_rq* cfs, sched_entity* se, int flags);
// reweight_entity() (fair_eevdf.cc): se takes weight `weight`, its lag and deadline rescaled.
void reweight_entity(cfs_rq* cfs, sched_entity* se, unsigned long weight);
// update_cfs_group() (fair_group.cc): a group entity takes the weight its runqueue's load
// gives it now; nothing for a task's entity.
void update_cfs_group(sched_entity* se);
// The shortest slice queued on cfs (curr included), ~0 if none.
u64 cfs_rq_min_slice(cfs_rq* cfs);

// ---- fair.cc ----
void enqueue_entity(cfs_rq* cfs, sched_entity* se, int flags);
bool dequeue_entity(cfs_rq* cfs, sched_entity* se, int flags);
// dequeue_entities(): a task's entity, or a group's, and the levels above it left empty.
// Returns -1 if DELAY_DEQUEUE keeps a sleeping task queued.
int dequeue_entities(rq* rq, sched_entity* se, int flags);

// ---- fair_wakeup.cc ----
void set_next_buddy(sched_entity* se);
void wakeup_preempt_fair(rq* rq, task_struct* p, int wake_flags);
int wake_affine_idle(KernelImpl* k, int this_cpu, int prev_cpu, bool sync);  // kNoCpu: no pick

// ---- fair_bandwidth.cc (CONFIG_CFS_BANDWIDTH; callers test cfs->runtime_enabled first) ----
void account_cfs_rq_runtime(cfs_rq* cfs, u64 delta_exec);
bool check_cfs_rq_runtime(cfs_rq* cfs);
void check_enqueue_throttle(cfs_rq* cfs);
// A runqueue left with no entity gives back all but min_cfs_rq_runtime of its runtime.
void return_cfs_rq_runtime(cfs_rq* cfs);
void task_throttle_setup_work(task_struct* p);
// 6.18+: a throttled task (in its runqueue's limbo list, p->throttled) dequeued or enqueued
// again by a nice, policy, affinity or group change.
void dequeue_throttled_task(task_struct* p, int flags);
bool enqueue_throttled_task(task_struct* p);
inline bool throttled_hierarchy(const cfs_rq* cfs) { return cfs->throttle_count; }

// ---- fair_pelt.cc ----
// update_load_avg() flags.
enum { UPDATE_TG = 0x1, SKIP_AGE_LOAD = 0x2, DO_ATTACH = 0x4, DO_DETACH = 0x8 };
void update_load_avg(cfs_rq* cfs, sched_entity* se, int flags);
// The entity's load_avg joins / leaves its runqueue's (around a weight change).
void enqueue_load_avg(cfs_rq* cfs, sched_entity* se);
void dequeue_load_avg(cfs_rq* cfs, sched_entity* se);
// attach_entity_cfs_rq(): se joins its runqueue's sums outside an enqueue (a new group's
// entity, online_fair_sched_group()), the change propagated up the hierarchy.
void attach_entity_cfs_rq(sched_entity* se);
// detach_entity_cfs_rq(): se leaves its runqueue's sums outside a dequeue (a throttled task
// migrating off its runqueue), the change propagated up the hierarchy.
void detach_entity_cfs_rq(sched_entity* se);
void util_est_enqueue(cfs_rq* cfs, task_struct* p);
void util_est_dequeue(cfs_rq* cfs, task_struct* p);
void util_est_update(cfs_rq* cfs, task_struct* p, bool task_sleep);
void remove_entity_load_avg(sched_entity* se);
void migrate_se_pelt_lag(sched_entity* se);

}  // namespace kernel
