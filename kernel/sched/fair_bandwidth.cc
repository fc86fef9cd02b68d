// CONFIG_CFS_BANDWIDTH: cgroup v2 cpu.max for the fair class, mirroring kernel/sched/fair.c
// of v6.12, v6.18 and v7.0 (the "CFS bandwidth control machinery" section) and
// tg_set_cfs_bandwidth() of kernel/sched/core.c.
//
// A group with a quota has a pool (struct cfs_bandwidth) refilled to `quota` every `period`
// by its period hrtimer. Each of its per-CPU runqueues draws runtime from the pool in
// sched_cfs_bandwidth_slice_us pieces (assign_cfs_rq_runtime()) and spends it as its entity
// runs (account_cfs_rq_runtime() from update_curr()). A runqueue that cannot draw more asks
// for a reschedule and is throttled at the next pick (check_cfs_rq_runtime()) or when it
// becomes non-empty (check_enqueue_throttle()). The period timer hands the new period's
// runtime to the throttled runqueues in throttle order (distribute_cfs_runtime()), which
// unthrottles them: its own CPU's at once, another CPU's by a call-function IPI to it.
//
// Where the versions differ is what throttling does:
// - 6.12: throttle_cfs_rq() dequeues the group's entity on that CPU at once, with every task
//   below it, wherever they are in their programs; a task woken below a throttled runqueue
//   is queued there but not above it, and waits for the unthrottle.
// - 6.18 and 7.0 (the task based throttle model, "sched/fair: Switch to task based throttle
//   model", merged for v6.18): throttle_cfs_rq() only marks the hierarchy throttled. A task
//   picked from a throttled hierarchy gets throttle_cfs_rq_work() queued as task work, which
//   dequeues it into its runqueue's throttled_limbo_list when it returns to user mode; until
//   then it runs, so a task in the kernel (woken in a syscall, or rescheduled before its
//   syscall's handler ran) finishes its kernel part first. The unthrottle enqueues the limbo.
// A runqueue whose last entity leaves gives all but 1 ms of its runtime back to the pool
// (return_cfs_rq_runtime()); if runqueues are throttled, the slack timer hands it out 5 ms
// later (do_sched_cfs_slack_timer()) unless the period ends first. cpu.max.burst lets the
// refill carry unused runtime over, up to quota + burst in the pool
// (__refill_cfs_bandwidth_runtime()).
// A throttled runqueue's PELT clock stands still (cfs_rq_clock_pelt(), pelt.h): in 6.12 from
// the throttle to the unthrottle; in 6.18+ only while nothing is queued on it (it stops when
// the last entity leaves and runs again when one is enqueued; fair.cc), so a runqueue whose
// tasks still run in the kernel keeps ageing until they are throttled.
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/deadline.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"
#include "kernel/time/hrtimer.h"

namespace kernel {

namespace {

bool task_based_throttle(const KernelImpl* k) { return !v612(k); }

// fair.c's bandwidth constants: a runqueue keeps min_cfs_rq_runtime when it gives runtime
// back; slack is not handed out within min_bandwidth_expiration of the period's refill; the
// slack timer waits cfs_bandwidth_slack_period to gather more.
constexpr s64 min_cfs_rq_runtime = 1000000;
constexpr sim::Time min_bandwidth_expiration = 2000000;
constexpr sim::Time cfs_bandwidth_slack_period = 5000000;

cfs_bandwidth* tg_cfs_bandwidth(cfs_rq* cfs) { return &cfs->tg->cfs_bandwidth; }

// sched_cfs_bandwidth_slice(): what a runqueue draws from the pool at a time.
u64 sched_cfs_bandwidth_slice(const KernelImpl* k) {
  return static_cast<u64>(k->cfg_.sched_cfs_bandwidth_slice_us) * 1000;
}

// walk_tg_tree_from(): `tg` and its descendants, parents first (task_groups holds parents
// before children).
template <typename Fn>
void walk_tg_tree_from(KernelImpl* k, task_group* tg, Fn&& fn) {
  for (const auto& t : k->task_groups)
    for (const task_group* a = t.get(); a; a = a->parent)
      if (a == tg) {
        fn(t.get());
        break;
      }
}

void start_cfs_bandwidth(KernelImpl* k, cfs_bandwidth* cfs_b, int cpu);

// __assign_cfs_rq_runtime(): draw up to target_runtime - runtime_remaining from the pool
// (all of it without a quota); any draw marks the period busy.
bool __assign_cfs_rq_runtime(KernelImpl* k, cfs_bandwidth* cfs_b, cfs_rq* cfs, u64 target_runtime) {
  const u64 min_amount = static_cast<u64>(static_cast<s64>(target_runtime) - cfs->runtime_remaining);
  u64 amount = 0;
  if (cfs_b->quota == RUNTIME_INF) {
    amount = min_amount;
  } else {
    start_cfs_bandwidth(k, cfs_b, rq_of(cfs)->cpu);
    if (cfs_b->runtime > 0) {
      amount = std::min(static_cast<u64>(cfs_b->runtime), min_amount);
      cfs_b->runtime -= static_cast<s64>(amount);
      cfs_b->idle = false;
    }
  }
  cfs->runtime_remaining += static_cast<s64>(amount);
  return cfs->runtime_remaining > 0;
}

bool assign_cfs_rq_runtime(cfs_rq* cfs) {
  KernelImpl* k = rq_of(cfs)->k;
  return __assign_cfs_rq_runtime(k, tg_cfs_bandwidth(cfs), cfs, sched_cfs_bandwidth_slice(k));
}

void se_update_runnable(sched_entity* se) {
  if (!entity_is_task(se)) se->runnable_weight = group_cfs_rq(se)->h_nr_runnable;
}

// 6.12's throttle_cfs_rq() body: the group's entity on this CPU leaves its parent, and each
// ancestor entity its runqueue leaves empty; the runqueue's tasks leave the counts above it.
void dequeue_throttled_hierarchy(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  sched_entity* se = cfs->tg->se[static_cast<size_t>(rq->cpu)];
  const unsigned queued_delta = cfs->h_nr_queued, runnable_delta = cfs->h_nr_runnable,
                 idle_delta = cfs->h_nr_idle;
  for_each_sched_entity(se) {
    cfs_rq* qcfs = cfs_rq_of(se);
    if (!se->on_rq) return;  // throttled at enqueue, or below a throttled runqueue
    int flags = DEQUEUE_SLEEP | DEQUEUE_SPECIAL;
    if (se->sched_delayed) flags |= DEQUEUE_DELAYED;
    dequeue_entity(qcfs, se, flags);
    qcfs->h_nr_queued -= queued_delta;
    qcfs->h_nr_runnable -= runnable_delta;
    qcfs->h_nr_idle -= idle_delta;
    if (qcfs->load) {  // the parent has other entities: it stays queued
      se = parent_entity(se);
      break;
    }
  }
  for_each_sched_entity(se) {
    cfs_rq* qcfs = cfs_rq_of(se);
    if (!se->on_rq) return;
    update_load_avg(qcfs, se, 0);
    se_update_runnable(se);
    qcfs->h_nr_queued -= queued_delta;
    qcfs->h_nr_runnable -= runnable_delta;
    qcfs->h_nr_idle -= idle_delta;
  }
  sub_nr_running(rq, queued_delta);  // delayed tasks included
  // Stop the fair server if throttling left no queued fair task (h_nr_running).
  if (!rq->cfs.h_nr_queued) dl_server_stop(rq);
}

// 6.12's unthrottle_cfs_rq() body: the group's entity and the ancestors it left empty are
// queued again, up to the root or a throttled ancestor.
void enqueue_unthrottled_hierarchy(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  if (!cfs->load) return;  // nothing to run
  sched_entity* se = cfs->tg->se[static_cast<size_t>(rq->cpu)];
  const unsigned queued_delta = cfs->h_nr_queued, runnable_delta = cfs->h_nr_runnable,
                 idle_delta = cfs->h_nr_idle;
  const unsigned rq_h_nr_queued = rq->cfs.h_nr_queued;
  for_each_sched_entity(se) {
    cfs_rq* qcfs = cfs_rq_of(se);
    if (se->sched_delayed)  // unfinished DELAY_DEQUEUE business first
      dequeue_entity(qcfs, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
    else if (se->on_rq)
      break;
    enqueue_entity(qcfs, se, ENQUEUE_WAKEUP);
    qcfs->h_nr_queued += queued_delta;
    qcfs->h_nr_runnable += runnable_delta;
    qcfs->h_nr_idle += idle_delta;
    if (qcfs->throttled) return;
  }
  for_each_sched_entity(se) {
    cfs_rq* qcfs = cfs_rq_of(se);
    update_load_avg(qcfs, se, UPDATE_TG);
    se_update_runnable(se);
    qcfs->h_nr_queued += queued_delta;
    qcfs->h_nr_runnable += runnable_delta;
    qcfs->h_nr_idle += idle_delta;
    if (qcfs->throttled) return;
  }
  add_nr_running(rq, queued_delta);
  // Start the fair server if the unthrottle queued fair tasks again.
  if (!rq_h_nr_queued && rq->cfs.h_nr_queued) dl_server_start(rq);
}

// throttle_cfs_rq(): one last try at 1 ns from the pool, else onto the group's throttled list
// and throttled, with every runqueue below (tg_throttle_down()). Returns whether it is.
bool throttle_cfs_rq(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  KernelImpl* k = rq->k;
  cfs_bandwidth* cfs_b = tg_cfs_bandwidth(cfs);
  if (__assign_cfs_rq_runtime(k, cfs_b, cfs, 1)) return false;
  cfs_b->throttled_cfs_rq.push_back(cfs);
  const size_t cpu = static_cast<size_t>(rq->cpu);
  const bool task_based = task_based_throttle(k);
  // tg_throttle_down(): a runqueue entering the throttled state stops its PELT clock (6.12),
  // or (6.18+) does if nothing is queued on it; a queued one stops it when its last entity
  // leaves (dequeue_entity()).
  walk_tg_tree_from(k, cfs->tg, [cpu, task_based](task_group* tg) {
    cfs_rq* c = tg->cfs_rq[cpu];
    if (!c->throttle_count++ && (!task_based || !c->nr_queued)) cfs_rq_pelt_clock_stop(c);
  });
  if (!task_based) dequeue_throttled_hierarchy(cfs);
  cfs->throttled = true;
  // 6.12 counts throttled time from here if anything is queued; the task based model from
  // the first task it throttles (throttle_cfs_rq_work()).
  if (!task_based_throttle(k) && cfs->nr_queued) cfs->throttled_clock = rq->clock;
  return true;
}

// unthrottle_cfs_rq(): off the throttled list, its throttled time counted, the hierarchy's
// throttle counts dropped (tg_unthrottle_up(), which in the task based model enqueues each
// level's limbo tasks), and (6.12) the group's entities queued again. An idle CPU is kicked.
void unthrottle_cfs_rq(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  KernelImpl* k = rq->k;
  cfs_bandwidth* cfs_b = tg_cfs_bandwidth(cfs);
  update_rq_clock(rq);
  cfs->throttled = false;
  if (cfs->throttled_clock) {
    cfs_b->throttled_time += rq->clock - cfs->throttled_clock;
    cfs->throttled_clock = 0;
  }
  auto& list = cfs_b->throttled_cfs_rq;
  list.erase(std::find(list.begin(), list.end(), cfs));
  const size_t cpu = static_cast<size_t>(rq->cpu);
  const bool task_based = task_based_throttle(k);
  walk_tg_tree_from(k, cfs->tg, [rq, cpu, task_based](task_group* tg) {
    cfs_rq* c = tg->cfs_rq[cpu];
    if (--c->throttle_count) return;
    if (c->pelt_clock_throttled) cfs_rq_pelt_clock_start(c);  // the time it stood still counted
    if (!task_based) return;
    // Re-enqueue the tasks throttled at this level (the list is reused: no allocation), from
    // the list's head: Linux adds each task at the head (list_add()), so the last one
    // throttled is enqueued first.
    auto& limbo = c->throttled_limbo_list;
    for (auto it = limbo.rbegin(); it != limbo.rend(); ++it) {
      (*it)->throttled = false;
      fair_sched_class.enqueue_task(rq, *it, ENQUEUE_WAKEUP);
    }
    c->throttled_limbo_list.clear();
  });
  if (!task_based) enqueue_unthrottled_hierarchy(cfs);
  if (rq->curr == rq->idle && rq->cfs.nr_queued) resched_curr(rq);
}

// unthrottle_cfs_rq_async(): a runqueue of another CPU is unthrottled there, by the
// call-function IPI's handler; the first runqueue queued on that CPU sends the IPI.
void unthrottle_cfs_rq_async(cfs_rq* cfs) {
  rq* rq = rq_of(cfs);
  if (cfs->csd_queued) return;
  const bool first = rq->cfsb_csd_list.empty();
  cfs->csd_queued = true;
  rq->cfsb_csd_list.push_back(cfs);  // reserved by tg_set_cfs_bandwidth(): no allocation
  if (first) smp_send_ipi(rq->k, rq->cpu, IPI_CFSB_CSD);  // smp_call_function_single_async()
}

// distribute_cfs_runtime(): the pool pays each throttled runqueue's debt plus 1 ns, in
// throttle order, while it has runtime. A runqueue back in credit is unthrottled on its own
// CPU (unthrottle_cfs_rq_async()), or here after the walk if it is this CPU's; one already
// queued for that is passed over ("Async unthrottling for cfs bandwidth", v6.2).
void distribute_cfs_runtime(cfs_bandwidth* cfs_b) {
  cfs_rq* local_unthrottle = nullptr;
  for (cfs_rq* cfs : cfs_b->throttled_cfs_rq) {
    if (cfs_b->runtime <= 0) break;
    if (cfs->csd_queued) continue;
    const s64 runtime = std::min<s64>(-cfs->runtime_remaining + 1, cfs_b->runtime);
    cfs_b->runtime -= runtime;
    cfs->runtime_remaining += runtime;
    if (cfs->runtime_remaining <= 0) continue;
    rq* rq = rq_of(cfs);
    if (rq->cpu != rq->k->current_cpu())
      unthrottle_cfs_rq_async(cfs);
    else
      local_unthrottle = cfs;
  }
  if (local_unthrottle && local_unthrottle->throttled) unthrottle_cfs_rq(local_unthrottle);
}

// __refill_cfs_bandwidth_runtime(): a period's quota into the pool, which may hold up to
// quota + burst; a period that used more than its quota counts as a burst.
void __refill_cfs_bandwidth_runtime(cfs_bandwidth* cfs_b) {
  if (cfs_b->quota == RUNTIME_INF) return;
  cfs_b->runtime += static_cast<s64>(cfs_b->quota);
  const s64 used_beyond = cfs_b->runtime_snap - cfs_b->runtime;
  if (used_beyond > 0) {
    cfs_b->burst_time += static_cast<u64>(used_beyond);
    cfs_b->nr_burst++;
  }
  cfs_b->runtime = std::min(cfs_b->runtime, static_cast<s64>(cfs_b->quota + cfs_b->burst));
  cfs_b->runtime_snap = cfs_b->runtime;
}

// do_sched_cfs_period_timer(): a new period. Returns true when the timer goes inactive (no
// quota, or a period passed without a draw and nothing is throttled).
bool do_sched_cfs_period_timer(cfs_bandwidth* cfs_b, u64 overrun) {
  if (cfs_b->quota == RUNTIME_INF) return true;
  const bool throttled = !cfs_b->throttled_cfs_rq.empty();
  cfs_b->nr_periods += overrun;
  __refill_cfs_bandwidth_runtime(cfs_b);  // even when idle: the burst carries over
  if (cfs_b->idle && !throttled) return true;
  if (!throttled) {
    cfs_b->idle = true;  // if nothing draws before the next period, the timer stops
    return false;
  }
  cfs_b->nr_throttled += overrun;
  distribute_cfs_runtime(cfs_b);
  cfs_b->idle = false;
  return false;
}

// sched_cfs_period_timer(): the period hrtimer's interrupt, on the CPU that started it.
void sched_cfs_period_timer(sim::Timer* t, sim::Time now) {
  task_group* tg = static_cast<task_group*>(t->ctx);
  cfs_bandwidth* cfs_b = &tg->cfs_bandwidth;
  rq* rq = tg->cfs_rq[static_cast<size_t>(cfs_b->timer_cpu)]->rq;
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  update_rq_clock(rq);
  // hrtimer_forward_now(): the periods that passed since the last expiry.
  u64 overrun = 0;
  while (cfs_b->period_expires <= now) {
    cfs_b->period_expires += static_cast<sim::Time>(cfs_b->period);
    ++overrun;
  }
  cfs_b->period_running = true;
  const bool idle = do_sched_cfs_period_timer(cfs_b, overrun);
  cfs_b->period_running = false;
  if (idle)
    cfs_b->period_active = false;
  else
    hrtimer_start(rq, &cfs_b->period_timer, cfs_b->period_expires);
  hrtimer_interrupt_tail(rq, now);
  irqentry_exit(rq);
}

// start_cfs_bandwidth(): arm the period timer if it is not, hrtimer_forward_now() from its
// last expiry (at first the random offset init_cfs_bandwidth() gave it) by whole periods.
void start_cfs_bandwidth(KernelImpl* k, cfs_bandwidth* cfs_b, int cpu) {
  if (cfs_b->period_active) return;
  cfs_b->period_active = true;
  cfs_b->timer_cpu = cpu;
  const sim::Time now = k->now();
  const sim::Time period = static_cast<sim::Time>(cfs_b->period);
  if (cfs_b->period_expires <= now)
    cfs_b->period_expires += ((now - cfs_b->period_expires) / period + 1) * period;
  hrtimer_start(k->rq_of(cpu), &cfs_b->period_timer, cfs_b->period_expires);
}

// runtime_refresh_within(): the period's refill is running or due within min_expire.
bool runtime_refresh_within(KernelImpl* k, const cfs_bandwidth* cfs_b, sim::Time min_expire) {
  if (cfs_b->period_running) return true;
  return cfs_b->period_expires - k->now() < min_expire;  // hrtimer_expires_remaining()
}

// start_cfs_slack_bandwidth(): arm the slack timer on the CPU running this (HRTIMER_MODE_REL,
// started from a busy CPU; the runqueue's own when none is), unless the refill comes first
// or it is armed already.
void start_cfs_slack_bandwidth(rq* rq, cfs_bandwidth* cfs_b) {
  KernelImpl* k = rq->k;
  if (k->current_cpu() >= 0) rq = k->rq_of(k->current_cpu());
  if (runtime_refresh_within(k, cfs_b, cfs_bandwidth_slack_period + min_bandwidth_expiration))
    return;
  if (cfs_b->slack_started) return;  // do not push back a pending hand-out
  cfs_b->slack_started = true;
  cfs_b->slack_cpu = rq->cpu;
  hrtimer_start(rq, &cfs_b->slack_timer, k->now() + cfs_bandwidth_slack_period);
}

// do_sched_cfs_slack_timer(): hand the pool to the throttled runqueues, if the refill is not
// near and the pool holds more than a slice.
void do_sched_cfs_slack_timer(KernelImpl* k, cfs_bandwidth* cfs_b) {
  cfs_b->slack_started = false;
  if (runtime_refresh_within(k, cfs_b, min_bandwidth_expiration)) return;
  const s64 slice = static_cast<s64>(sched_cfs_bandwidth_slice(k));
  if (cfs_b->quota == RUNTIME_INF || cfs_b->runtime <= slice) return;
  distribute_cfs_runtime(cfs_b);
}

// sched_cfs_slack_timer(): the slack hrtimer's interrupt, on the CPU that started it.
void sched_cfs_slack_timer(sim::Timer* t, sim::Time now) {
  task_group* tg = static_cast<task_group*>(t->ctx);
  cfs_bandwidth* cfs_b = &tg->cfs_bandwidth;
  rq* rq = tg->cfs_rq[static_cast<size_t>(cfs_b->slack_cpu)]->rq;
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  do_sched_cfs_slack_timer(rq->k, cfs_b);
  hrtimer_interrupt_tail(rq, now);
  irqentry_exit(rq);
}

}  // namespace

// return_cfs_rq_runtime() -> __return_cfs_rq_runtime(): the runtime above
// min_cfs_rq_runtime goes back to the pool (update_curr() has just settled it); with
// runqueues throttled and more than a slice in the pool, the slack timer will hand it out.
// The runqueue drops it even when there is no quota, so that it does not try again.
void return_cfs_rq_runtime(cfs_rq* cfs) {
  if (cfs->nr_queued) return;
  const s64 slack_runtime = cfs->runtime_remaining - min_cfs_rq_runtime;
  if (slack_runtime <= 0) return;
  rq* rq = rq_of(cfs);
  cfs_bandwidth* cfs_b = tg_cfs_bandwidth(cfs);
  if (cfs_b->quota != RUNTIME_INF) {
    cfs_b->runtime += slack_runtime;
    if (cfs_b->runtime > static_cast<s64>(sched_cfs_bandwidth_slice(rq->k)) &&
        !cfs_b->throttled_cfs_rq.empty())
      start_cfs_slack_bandwidth(rq, cfs_b);
  }
  cfs->runtime_remaining -= slack_runtime;
}

// __account_cfs_rq_runtime(): spend; when the local runtime is gone, draw more, and if the
// pool is dry too, have the running entity rescheduled (it is throttled at the next pick).
void account_cfs_rq_runtime(cfs_rq* cfs, u64 delta_exec) {
  cfs->runtime_remaining -= static_cast<s64>(delta_exec);
  if (cfs->runtime_remaining > 0) return;
  if (cfs->throttled) return;
  if (!assign_cfs_rq_runtime(cfs) && cfs->curr) resched_curr(rq_of(cfs));
}

// check_cfs_rq_runtime(): out of runtime: throttle (if not already). Returns whether cfs is
// throttled.
bool check_cfs_rq_runtime(cfs_rq* cfs) {
  if (!cfs->runtime_enabled || cfs->runtime_remaining > 0) return false;
  if (cfs->throttled) return true;
  return throttle_cfs_rq(cfs);
}

// check_enqueue_throttle(): a runqueue becoming non-empty while not running settles its
// runtime first, and is throttled if it has none.
void check_enqueue_throttle(cfs_rq* cfs) {
  if (!cfs->runtime_enabled || cfs->curr || cfs->throttled) return;
  account_cfs_rq_runtime(cfs, 0);
  if (cfs->runtime_remaining <= 0) throttle_cfs_rq(cfs);
}

// task_throttle_setup_work(): 6.18+: the task picked from a throttled hierarchy throttles
// itself on its way back to user mode. Kernel threads never go there.
void task_throttle_setup_work(task_struct* p) {
  if (!p->user) return;  // PF_KTHREAD
  p->sched_throttle_work = true;
}

// dequeue_throttled_task(): the task leaves the limbo list; one migrating takes its load off
// the runqueue it leaves (detach_task_cfs_rq()). (Linux also takes a throttled task that
// blocks, DEQUEUE_SLEEP; one here does not run until its unthrottle.)
void dequeue_throttled_task(task_struct* p, int flags) {
  auto& limbo = cfs_rq_of(&p->se)->throttled_limbo_list;
  limbo.erase(std::find(limbo.begin(), limbo.end(), p));
  if (flags & DEQUEUE_SLEEP) {
    p->throttled = false;
    return;
  }
  if (p->on_rq_migrating) detach_entity_cfs_rq(&p->se);
}

// enqueue_throttled_task(): back onto the limbo list when its runqueue (perhaps on another
// CPU now) is in a throttled hierarchy and it is not the CPU's current task; otherwise no
// longer throttled and enqueued as any task.
bool enqueue_throttled_task(task_struct* p) {
  cfs_rq* cfs = cfs_rq_of(&p->se);
  if (throttled_hierarchy(cfs) && rq_of(cfs)->curr != p) {
    cfs->throttled_limbo_list.push_back(p);  // list_add(): the head is the vector's back
    return true;
  }
  p->throttled = false;
  return false;
}

void throttle_cfs_rq_work(rq* rq, task_struct* p) {
  p->sched_throttle_work = false;
  if (p->sched_class != &fair_sched_class || p->exec == ExecKind::Dead) return;
  cfs_rq* cfs = cfs_rq_of(&p->se);
  if (!cfs->throttle_count) return;  // replenished meanwhile, or moved off the hierarchy
  update_rq_clock(rq);
  fair_sched_class.dequeue_task(rq, p, DEQUEUE_SLEEP | DEQUEUE_SPECIAL);
  cfs->throttled_limbo_list.push_back(p);  // list_add(): the head is the vector's back
  p->throttled = true;
  // The throttled time runs from the first task throttled below the throttled runqueue.
  cfs_rq* top = cfs;
  while (!top->throttled) top = cfs_rq_of(top->tg->se[static_cast<size_t>(rq->cpu)]);
  if (!top->throttled_clock) top->throttled_clock = rq->clock;
  resched_curr(rq);
}

// __cfsb_csd_unthrottle(): the call-function IPI on this CPU unthrottles the runqueues other
// CPUs gave runtime to, those still throttled.
void __cfsb_csd_unthrottle(rq* rq) {
  update_rq_clock(rq);
  for (size_t i = 0; i < rq->cfsb_csd_list.size(); ++i) {
    cfs_rq* cfs = rq->cfsb_csd_list[i];
    cfs->csd_queued = false;
    if (cfs->throttled) unthrottle_cfs_rq(cfs);
  }
  rq->cfsb_csd_list.clear();
}

// tg_set_cfs_bandwidth(): cpu.max or cpu.max.burst written. The pool is refilled once
// (__refill_cfs_bandwidth_runtime(): a new group's holds the quota, one written again up to
// quota + burst); every runqueue of the group starts with no local runtime (and is
// unthrottled if it was throttled).
void tg_set_cfs_bandwidth(KernelImpl* k, task_group* tg, u64 period, u64 quota, u64 burst) {
  cfs_bandwidth* cfs_b = &tg->cfs_bandwidth;
  const bool runtime_enabled = quota != RUNTIME_INF;
  cfs_b->period = period;
  cfs_b->quota = quota;
  cfs_b->burst = burst;
  __refill_cfs_bandwidth_runtime(cfs_b);
  cfs_b->period_timer.fn = sched_cfs_period_timer;
  cfs_b->period_timer.ctx = tg;
  cfs_b->slack_timer.fn = sched_cfs_slack_timer;
  cfs_b->slack_timer.ctx = tg;
  if (runtime_enabled) start_cfs_bandwidth(k, cfs_b, 0);
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    cfs_rq* cfs = tg->cfs_rq[static_cast<size_t>(cpu)];
    update_rq_clock(cfs->rq);
    cfs->runtime_enabled = runtime_enabled;
    cfs->runtime_remaining = 0;
    if (cfs->throttled) unthrottle_cfs_rq(cfs);
    // Room for a queued unthrottle of every group on each CPU.
    std::vector<cfs_rq*>& csd = cfs->rq->cfsb_csd_list;
    if (csd.capacity() < k->task_groups.size()) csd.reserve(k->task_groups.size());
  }
}

}  // namespace kernel

namespace kernel {

// cpu_max_write() keeps the group's burst; cpu_cfs_burst_write_u64() its period and quota.
void KernelImpl::set_task_group_cpu_max(int id, int64_t quota_us, int64_t period_us) {
  task_group* tg = task_groups[static_cast<size_t>(id - 1)].get();
  tg_set_cfs_bandwidth(this, tg, static_cast<u64>(period_us) * 1000,
                       quota_us < 0 ? RUNTIME_INF : static_cast<u64>(quota_us) * 1000,
                       tg->cfs_bandwidth.burst);
}

void KernelImpl::set_task_group_cpu_max_burst(int id, int64_t burst_us) {
  task_group* tg = task_groups[static_cast<size_t>(id - 1)].get();
  const cfs_bandwidth& b = tg->cfs_bandwidth;
  tg_set_cfs_bandwidth(this, tg, b.period, b.quota, static_cast<u64>(burst_us) * 1000);
}

}  // namespace kernel
