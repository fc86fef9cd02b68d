// The fair class (SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE): its sched_class operations over
// EEVDF, mirroring kernel/sched/fair.c of v6.12, v6.18, v7.0 ("queueing methods" onwards):
// enqueue/dequeue with delayed dequeue, pick/put/set_next, yield, wakeup preemption, nice
// changes and the tick. EEVDF itself is in fair_eevdf.cc, PELT's hooks in fair_pelt.cc,
// wakeup CPU selection and wakeup preemption in fair_wakeup.cc, load balancing in fair_lb_stats.cc,
// fair_balance.cc and fair_idle_balance.cc.
#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/deadline.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"
#include "kernel/time/hrtimer.h"

namespace kernel {

static void update_curr_fair(rq* rq) { update_curr(cfs_rq_of(&rq->curr->se)); }

// se_update_runnable(): a group entity's runnable weight is its runqueue's runnable tasks.
static inline void se_update_runnable(sched_entity* se) {
  if (!entity_is_task(se)) se->runnable_weight = group_cfs_rq(se)->h_nr_runnable;
}

void enqueue_entity(cfs_rq* cfs, sched_entity* se, int flags) {
  const bool curr = cfs->curr == se;
  if (flags & ENQUEUE_MIGRATED) se->exec_start = 0;  // migrated: no longer cache hot
  if (curr) place_entity(cfs, se, flags);
  update_curr(cfs);
  update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
  se_update_runnable(se);
  update_cfs_group(se);  // a group entity's weight follows its runqueue's new load
  if (!curr) place_entity(cfs, se, flags);
  cfs->load += se->load.weight;
  if (entity_is_task(se)) se->cfs_tasks_seq = ++rq_of(cfs)->k->cfs_tasks_clock;  // list_add()
  cfs->nr_queued++;
  se->on_rq = true;
  if (!curr) __enqueue_entity(cfs, se);
  if (cfs->nr_queued == 1) {
    if (cfs->runtime_enabled) check_enqueue_throttle(cfs);
    // 6.18+: the first entity queued on a throttled runqueue starts its PELT clock again.
    if (cfs->pelt_clock_throttled && !v612(rq_of(cfs)->k)) cfs_rq_pelt_clock_start(cfs);
  }
}

// set_delayed() / clear_delayed(): a delayed task stays queued (and in rq->nr_running) but
// is not runnable, at every level of the hierarchy (6.12: up to a throttled runqueue, whose
// tasks the levels above stopped counting when it was throttled).
static void set_delayed(sched_entity* se) {
  se->sched_delayed = true;
  if (!entity_is_task(se)) return;
  rq* rq = rq_of(cfs_rq_of(se));
  for_each_sched_entity(se) {
    cfs_rq_of(se)->h_nr_runnable--;
    if (v612(rq->k) && cfs_rq_of(se)->throttled) break;
  }
  lb_view_update(rq);
}

static void clear_delayed(sched_entity* se) {
  se->sched_delayed = false;
  if (!entity_is_task(se)) return;
  rq* rq = rq_of(cfs_rq_of(se));
  for_each_sched_entity(se) {
    cfs_rq_of(se)->h_nr_runnable++;
    if (v612(rq->k) && cfs_rq_of(se)->throttled) break;
  }
  lb_view_update(rq);
}

// requeue_delayed_entity(): a delayed (still queued) entity is woken in place: a task, or
// the entity of a group a task is enqueued into. DELAY_ZERO: positive lag it earned while
// delayed is dropped and it is placed again.
static void requeue_delayed_entity(sched_entity* se) {
  cfs_rq* cfs = cfs_rq_of(se);
  rq* rq = rq_of(cfs);
  if (feat(rq, __SCHED_FEAT_DELAY_ZERO)) {
    update_entity_lag(cfs, se);
    if (se->vlag > 0) {
      cfs->nr_queued--;
      if (se != cfs->curr) __dequeue_entity(cfs, se);
      se->vlag = 0;
      place_entity(cfs, se, 0);
      if (se != cfs->curr) __enqueue_entity(cfs, se);
      cfs->nr_queued++;
    }
  }
  update_load_avg(cfs, se, 0);
  clear_delayed(se);
}

// hrtick_start_fair(): with sched_feat(HRTICK), time the end of curr's slice exactly instead
// of waiting for a tick: remaining = slice - (runtime since it was picked); already over ->
// reschedule now; else an hrtimer, never shorter than 10 us (hrtick_start()).
static void hrtick_start_fair(rq* rq, task_struct* p) {
  if (!feat(rq, __SCHED_FEAT_HRTICK) || rq->cfs.h_nr_runnable <= 1) return;
  const s64 ran = static_cast<s64>(p->se.sum_exec_runtime - p->se.prev_sum_exec_runtime);
  const s64 delta = static_cast<s64>(p->se.slice) - ran;
  if (delta < 0) {
    if (p == rq->curr) resched_curr(rq);
    return;
  }
  hrtimer_start(rq, &rq->ex.hrtick_timer, rq->k->now() + std::max<s64>(delta, 10000));
}

// hrtick_update(): the number of runnable tasks changed; re-time the running fair task.
static void hrtick_update(rq* rq) {
  if (rq->curr->sched_class == &fair_sched_class && !rq->curr->is_idle) hrtick_start_fair(rq, rq->curr);
}

// enqueue_task_fair(): queue the task's entity, then each group entity above it that is not
// queued yet (a group becomes runnable with its first task), and count the task as
// runnable at every level.
// A group entity serves its runqueue's shortest request: it takes the smallest slice queued
// below it (6.12+, "Propagate min_slice up the cgroup hierarchy").
static void enqueue_task_fair(rq* rq, task_struct* p, int flags) {
  if (p->throttled && enqueue_throttled_task(p)) return;
  sched_entity* se = &p->se;
  const unsigned rq_h_nr_queued = rq->cfs.h_nr_queued;
  // The task's estimate joins the CPU's; a delayed task's left when it was delayed and
  // comes back when it is woken (ENQUEUE_DELAYED).
  if (!se->sched_delayed || (flags & ENQUEUE_DELAYED)) util_est_enqueue(&rq->cfs, p);
  if (flags & ENQUEUE_DELAYED) {
    // Still queued: rq->nr_running and the fair server's count of queued tasks counted it
    // all along.
    requeue_delayed_entity(se);
    return;
  }
  // task_has_idle_policy(); every level above an idle group's runqueue counts the task idle.
  unsigned h_nr_idle = p->policy == SCHED_IDLE;
  // A delayed task put back after a change (ENQUEUE_RESTORE, e.g. set_user_nice()) stays
  // delayed: queued again but not runnable (task_new && se->sched_delayed).
  const unsigned h_nr_runnable = !(flags & ENQUEUE_WAKEUP) && se->sched_delayed ? 0 : 1;
  u64 slice = 0;
  for_each_sched_entity(se) {
    if (se->on_rq) {
      if (se->sched_delayed) requeue_delayed_entity(se);  // a delayed group entity
      break;
    }
    cfs_rq* cfs = cfs_rq_of(se);
    if (slice) {
      se->slice = slice;
      se->custom_slice = true;
    }
    enqueue_entity(cfs, se, flags);
    slice = cfs_rq_min_slice(cfs);
    cfs->h_nr_runnable += h_nr_runnable;
    cfs->h_nr_queued++;
    cfs->h_nr_idle += h_nr_idle;
    if (cfs_rq_is_idle(cfs)) h_nr_idle = 1;
    // 6.12: a throttled runqueue's entity is not queued above it (goto enqueue_throttle).
    if (cfs->throttled && v612(rq->k)) return hrtick_update(rq);
    flags = ENQUEUE_WAKEUP;
  }
  for_each_sched_entity(se) {
    cfs_rq* cfs = cfs_rq_of(se);
    update_load_avg(cfs, se, UPDATE_TG);
    se_update_runnable(se);
    update_cfs_group(se);
    se->slice = slice;
    slice = cfs_rq_min_slice(cfs);
    cfs->h_nr_runnable += h_nr_runnable;
    cfs->h_nr_queued++;
    cfs->h_nr_idle += h_nr_idle;
    if (cfs_rq_is_idle(cfs)) h_nr_idle = 1;
    if (cfs->throttled && v612(rq->k)) return hrtick_update(rq);
  }
  // The fair server starts with the first queued fair task (`!rq_h_nr_queued &&
  // rq->cfs.h_nr_queued`; 6.12's h_nr_running counts delayed tasks as queued too).
  if (!rq_h_nr_queued && rq->cfs.h_nr_queued) {
    // Account for idle runtime (6.12, 6.18; 7.0 charges it when idle is switched out).
    if (!rq->nr_running && !v70(rq->k)) dl_server_update_idle_time(rq, rq->curr);
    dl_server_start(rq);
  }
  add_nr_running(rq, 1);  // a queued task counts whether runnable or delayed
  hrtick_update(rq);
}

// dequeue_entity(): returns false when DELAY_DEQUEUE keeps an ineligible sleeper queued to
// burn off its negative lag.
bool dequeue_entity(cfs_rq* cfs, sched_entity* se, int flags) {
  rq* rq = rq_of(cfs);
  const bool sleep = flags & DEQUEUE_SLEEP;
  update_curr(cfs);
  clear_buddies(cfs, se);  // before a delay: ->next is never a delayed entity
  if (!(flags & DEQUEUE_DELAYED)) {
    // A group entity whose runqueue emptied is delayed as a task is (it stays queued,
    // with nothing below it, until picked or until a task is enqueued below it again).
    const bool delay = sleep && !(flags & DEQUEUE_SPECIAL);
    if (feat(rq, __SCHED_FEAT_DELAY_DEQUEUE) && delay && !entity_eligible(cfs, se)) {
      update_load_avg(cfs, se, 0);
      set_delayed(se);  // (still counted in rq->nr_running until its final dequeue)
      return false;
    }
  }
  // A task leaving by migration takes its load with it.
  update_load_avg(cfs, se, UPDATE_TG | (entity_is_task(se) && (flags & DEQUEUE_MIGRATING) ? DO_DETACH : 0));
  se_update_runnable(se);
  update_entity_lag(cfs, se);
  if (feat(rq, __SCHED_FEAT_PLACE_REL_DEADLINE) && !sleep) {
    se->deadline -= se->vruntime;
    se->rel_deadline = true;
  }
  if (se != cfs->curr) __dequeue_entity(cfs, se);
  se->on_rq = false;
  cfs->load -= se->load.weight;
  cfs->nr_queued--;
  if (cfs->runtime_enabled) return_cfs_rq_runtime(cfs);  // the last entity gone: runtime back
  update_cfs_group(se);
  if (flags & DEQUEUE_DELAYED) {
    se->sched_delayed = false;
    if (feat(rq, __SCHED_FEAT_DELAY_ZERO) && se->vlag > 0) se->vlag = 0;
  }
  // 6.18+: the last entity leaving a runqueue of a throttled hierarchy (throttled, or
  // blocking, or migrating) stops its PELT clock.
  if (!cfs->nr_queued && throttled_hierarchy(cfs) && !v612(rq->k)) cfs_rq_pelt_clock_stop(cfs);
  return true;
}

// dequeue_entities(): dequeue a task's entity and each group entity above it whose runqueue
// it leaves empty. Returns -1 if DELAY_DEQUEUE keeps the task queued, 1 when dequeued. A
// task already delayed was counted out of the runnable tasks when it was delayed; its final
// dequeue (DEQUEUE_DELAYED, from the pick) also does what block_task() skipped.
// A group entity's own dequeue (picked while delayed) counts no task. A task sleeping
// within a group that stays queued makes that group the next buddy, so the next pick
// likely stays in the group (cheaper put/set of the hierarchy).
// 6.12's dequeue_entities() ends at a throttled runqueue ("end evaluation on encountering a
// throttled cfs_rq") and returns 0: the task is dequeued, and nothing above the runqueue, the
// rq's count included, changes. (Linux then also skips the fix-up of a delayed task's final
// dequeue; the model does it, so the task does not stay on_rq.)
static int dequeue_throttled(task_struct* p, bool task_delayed) {
  if (p && task_delayed) p->on_rq = false;  // __block_task()
  return 0;
}

int dequeue_entities(rq* rq, sched_entity* se, int flags) {
  task_struct* p = entity_is_task(se) ? task_of(se) : nullptr;
  const bool was_sched_idle = sched_idle_rq(rq);
  const bool task_sleep = flags & DEQUEUE_SLEEP;
  const bool task_delayed = flags & DEQUEUE_DELAYED;
  const unsigned rq_h_nr_queued = rq->cfs.h_nr_queued;
  const unsigned h_nr_runnable = p && !se->sched_delayed ? 1 : 0;
  const unsigned h_nr_queued = p ? 1 : 0;
  unsigned h_nr_idle = p && p->policy == SCHED_IDLE;
  u64 slice = 0;
  for_each_sched_entity(se) {
    cfs_rq* cfs = cfs_rq_of(se);
    if (!dequeue_entity(cfs, se, flags)) {
      if (p && &p->se == se) return -1;
      slice = cfs_rq_min_slice(cfs);  // a group entity stays queued, delayed
      break;
    }
    cfs->h_nr_runnable -= h_nr_runnable;
    cfs->h_nr_queued -= h_nr_queued;
    cfs->h_nr_idle -= h_nr_idle;
    if (cfs_rq_is_idle(cfs)) h_nr_idle = h_nr_queued;
    // 6.12: the levels above a throttled runqueue (and rq->nr_running) stopped counting its
    // tasks when it was throttled.
    if (v612(rq->k) && cfs->throttled) return dequeue_throttled(p, task_delayed);
    if (cfs->load) {  // the parent has other entities besides us: it stays queued
      slice = cfs_rq_min_slice(cfs);
      se = parent_entity(se);
      if (task_sleep && se) set_next_buddy(se);
      break;
    }
    flags |= DEQUEUE_SLEEP;
    flags &= ~(DEQUEUE_DELAYED | DEQUEUE_SPECIAL);
  }
  for_each_sched_entity(se) {
    cfs_rq* cfs = cfs_rq_of(se);
    update_load_avg(cfs, se, UPDATE_TG);
    se_update_runnable(se);
    update_cfs_group(se);
    se->slice = slice;
    slice = cfs_rq_min_slice(cfs);
    cfs->h_nr_runnable -= h_nr_runnable;
    cfs->h_nr_queued -= h_nr_queued;
    cfs->h_nr_idle -= h_nr_idle;
    if (cfs_rq_is_idle(cfs)) h_nr_idle = h_nr_queued;
    if (v612(rq->k) && cfs->throttled) return dequeue_throttled(p, task_delayed);
  }
  sub_nr_running(rq, h_nr_queued);
  // 6.12 stops the fair server when the last queued fair task leaves (a delayed one counts
  // until its final dequeue). 6.17 (cccb45d7c429) dropped this stop: the server stops when
  // it is picked and finds no fair task (dl_server_pick_none()).
  if (v612(rq->k) && rq_h_nr_queued && !rq->cfs.h_nr_queued) dl_server_stop(rq);
  // Balance early to pull higher-priority work onto a CPU left with only SCHED_IDLE tasks.
  if (!was_sched_idle && sched_idle_rq(rq)) rq->next_balance = rq->k->jiffies();
  if (p && task_delayed) p->on_rq = false;         // __block_task()
  return 1;
}

static bool dequeue_task_fair(rq* rq, task_struct* p, int flags) {
  if (p->throttled) {  // 6.18+: already off its runqueue
    dequeue_throttled_task(p, flags);
    return true;
  }
  if (!p->se.sched_delayed) util_est_dequeue(&rq->cfs, p);
  util_est_update(&rq->cfs, p, flags & DEQUEUE_SLEEP);
  if (dequeue_entities(rq, &p->se, flags) < 0) return false;
  hrtick_update(rq);
  return true;
}

// set_next_entity(): se becomes its runqueue's curr, and stops being its buddy.
static void set_next_entity(cfs_rq* cfs, sched_entity* se, bool first) {
  clear_buddies(cfs, se);
  if (se->on_rq) {
    __dequeue_entity(cfs, se);
    update_load_avg(cfs, se, UPDATE_TG);  // sums up to now before se counts as running
  }
  // 6.12 stashes the deadline at every set_next_entity() of a queued entity (also a running
  // task's put/set around a nice change); 6.18+ at picks only.
  if (first || (se->on_rq && v612(rq_of(cfs)->k))) set_protect_slice(cfs, se);
  cfs->curr = se;
  se->exec_start = rq_of(cfs)->clock_task;
  se->prev_sum_exec_runtime = se->sum_exec_runtime;
}

static void put_prev_entity(cfs_rq* cfs, sched_entity* prev) {
  if (prev->on_rq) update_curr(cfs);
  if (cfs->runtime_enabled) check_cfs_rq_runtime(cfs);  // throttle cfs_rqs exceeding runtime
  if (prev->on_rq) {
    __enqueue_entity(cfs, prev);
    update_load_avg(cfs, prev, 0);  // (a dequeued prev was brought up to date then)
  }
  cfs->curr = nullptr;
}

// pick_next_entity(): 6.12 (under NEXT_BUDDY) and 6.18 (under PICK_BUDDY) take the next
// buddy while it is eligible before asking EEVDF; 7.0 does so inside __pick_eevdf().
static sched_entity* pick_next_entity(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  if (cfs->next && !v70(rq->k) &&
      feat(rq, v612(rq->k) ? __SCHED_FEAT_NEXT_BUDDY : __SCHED_FEAT_PICK_BUDDY) &&
      entity_eligible(cfs, cfs->next))
    return cfs->next;
  return pick_eevdf(cfs, true);
}

// pick_task_fair(): pick top-down, an entity per level, until a task. A picked delayed task
// is finally dequeued (pick_next_entity()) and the pick restarts. A runqueue out of runtime
// is throttled on the way down: 6.12 dequeues it and picks again; 6.18+ picks in it and
// has the task throttle itself on its way back to user mode (task_throttle_setup_work()).
static task_struct* pick_task_fair(rq* rq) {
  sched_entity* se;
  bool throttled;
again:
  cfs_rq* cfs = &rq->cfs;
  if (!cfs->nr_queued) return nullptr;
  throttled = false;
  do {
    if (cfs->curr && cfs->curr->on_rq) update_curr(cfs);
    if (cfs->runtime_enabled && check_cfs_rq_runtime(cfs)) {
      if (v612(rq->k)) goto again;
      throttled = true;
    }
    se = pick_next_entity(cfs);
    if (!se) return nullptr;
    if (se->sched_delayed) {
      dequeue_entities(rq, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
      goto again;
    }
    cfs = group_cfs_rq(se);
  } while (cfs);
  if (throttled) task_throttle_setup_work(task_of(se));
  return task_of(se);
}

// pick_next_task_fair()'s hand-over between two fair tasks: only the levels where prev's and
// next's entities differ are put back and set (is_same_group()); the common ancestors
// keep running. With every task in the root group that is one put and one set.
void put_prev_set_next_fair(rq* rq, task_struct* prev, task_struct* p) {
  sched_entity* se = &p->se;
  sched_entity* pse = &prev->se;
  while (cfs_rq_of(se) != cfs_rq_of(pse)) {
    const int se_depth = se->depth, pse_depth = pse->depth;
    if (se_depth <= pse_depth) {
      put_prev_entity(cfs_rq_of(pse), pse);
      pse = parent_entity(pse);
    }
    if (se_depth >= pse_depth) {
      set_next_entity(cfs_rq_of(se), se, true);
      se = parent_entity(se);
    }
  }
  put_prev_entity(cfs_rq_of(se), pse);
  set_next_entity(cfs_rq_of(se), se, true);
  if (p->on_rq) p->se.cfs_tasks_seq = ++rq->k->cfs_tasks_clock;  // __set_next_task_fair()
  hrtick_start_fair(rq, p);
}

static void put_prev_task_fair(rq* /*rq*/, task_struct* p) {
  sched_entity* se = &p->se;
  for_each_sched_entity(se) put_prev_entity(cfs_rq_of(se), se);
}

static void set_next_task_fair(rq* rq, task_struct* p, bool first) {
  sched_entity* se = &p->se;
  if (p->on_rq) se->cfs_tasks_seq = ++rq->k->cfs_tasks_clock;  // MRU: list_move() to the head
  for_each_sched_entity(se) set_next_entity(cfs_rq_of(se), se, first);
  if (first) hrtick_start_fair(rq, p);
}

// yield_task_fair(): 6.12 pushes the deadline one slice out; 6.18+ forfeits the rest of
// the request (vruntime = deadline) when eligible, then asks for a new one.
static void yield_task_fair(rq* rq) {
  // (rq->nr_running counts delayed entities too.)
  if (rq->nr_running == 1) return;
  sched_entity* se = &rq->curr->se;
  cfs_rq* cfs = cfs_rq_of(se);
  clear_buddies(cfs, se);
  update_curr(cfs);
  if (v612(rq->k)) {
    se->deadline += calc_delta_fair(se->slice, se);
    return;
  }
  if (entity_eligible(cfs, se)) {
    se->vruntime = se->deadline;
    se->deadline += calc_delta_fair(se->slice, se);
  }
}

// reweight_task_fair(): set_load_weight(p, true) for a fair task.
static void reweight_task_fair(rq* rq, task_struct* p, const load_weight* lw) {
  (void)rq;
  sched_entity* se = &p->se;
  reweight_entity(cfs_rq_of(se), se, lw->weight);
  se->load.inv_weight = lw->inv_weight;
}

// prio_changed_fair(): after a nice change, a running task that lost weight gives the CPU
// up (hard resched); a queued one is checked as a wakee would be.
static void prio_changed_fair(rq* rq, task_struct* p, int oldprio) {
  if (!p->on_rq) return;  // task_on_rq_queued()
  if (rq->cfs.nr_queued == 1) return;
  if (rq->curr == p) {
    if (p->prio > oldprio) resched_curr(rq);
  } else {
    wakeup_preempt(rq, p, 0);
  }
}

// task_tick_fair(): the tick charges curr; an hrtick expiry (queued) always reschedules.
static void entity_tick(cfs_rq* cfs, sched_entity* curr, int queued) {
  assert(cfs->curr == curr && "the tick charges the running entity");
  update_curr(cfs);
  update_load_avg(cfs, curr, UPDATE_TG);
  update_cfs_group(curr);
  if (queued) resched_curr_lazy(rq_of(cfs));
}

static void task_tick_fair(rq* rq, task_struct* curr, int queued) {
  (void)rq;
  sched_entity* se = &curr->se;
  for_each_sched_entity(se) entity_tick(cfs_rq_of(se), se, queued);
}

// migrate_task_rq_fair(): a waking task moves to new_cpu; a queued one moving with the
// balancer (on_rq_migrating) was detached at its dequeue. Either way it attaches at its
// enqueue there (last_update_time = 0).
static void migrate_task_rq_fair(task_struct* p, int new_cpu) {
  (void)new_cpu;
  sched_entity* se = &p->se;
  if (!p->on_rq_migrating) {
    remove_entity_load_avg(se);
    migrate_se_pelt_lag(se);
  }
  se->avg.last_update_time = 0;
}

// task_dead_fair(): a task still queued as delayed when it is gone would stay in the tree
// for good; its delayed dequeue is completed first. (The final schedule() of an exiting
// task dequeues it with DEQUEUE_SPECIAL, which never delays, and a delayed task does not
// run, so this finds one only if a path dequeues a dying task otherwise.)
static void task_dead_fair(task_struct* p) {
  sched_entity* se = &p->se;
  if (se->sched_delayed) {
    rq* rq = rq_of(cfs_rq_of(se));
    update_rq_clock(rq);
    dequeue_entities(rq, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
  }
  remove_entity_load_avg(se);
}

const sched_class fair_sched_class = {
    "fair",
    enqueue_task_fair,
    dequeue_task_fair,
    yield_task_fair,
    wakeup_preempt_fair,
    pick_task_fair,
    put_prev_task_fair,
    set_next_task_fair,
    select_task_rq_fair,
    task_tick_fair,
    update_curr_fair,
    nullptr,  // task_woken
    nullptr,  // balance
    migrate_task_rq_fair,
    task_dead_fair,
    reweight_task_fair,
    prio_changed_fair,
};

}  // namespace kernel
