// Core scheduler: wakeups, resched requests, __schedule(), the tick, yield.
// Mirrors kernel/sched/core.c (v6.12 .. v7.0); version differences noted where they apply.
#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/deadline.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"
#include "kernel/slice_ext.h"
#include "kernel/time/hrtimer.h"
#include "kernel/trace_points.h"

namespace kernel {

// sched_prio_to_weight[] / sched_prio_to_wmult[] (core.c): ~1.25x per nice level.
static const unsigned long sched_prio_to_weight[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
    9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
    1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
    110,   87,    70,    56,    45,    36,    29,    23,    18,    15};
static const uint32_t sched_prio_to_wmult[40] = {
    48388,     59856,     76040,     92818,     118348,    147320,    184698,    229616,
    287308,    360437,    449829,    563644,    704093,    875809,    1099582,   1376151,
    1717300,   2157191,   2708050,   3363326,   4194304,   5237765,   6557202,   8165337,
    10153587,  12820798,  15790321,  19976592,  24970740,  31350126,  39045157,  49367440,
    61356676,  76695844,  95443717,  119304647, 148102320, 186737708, 238609294, 286331153};

unsigned long nice_to_weight(int nice) { return sched_prio_to_weight[nice + 20]; }

void set_load_weight(task_struct* p, bool update_load) {
  load_weight lw;
  if (p->policy == SCHED_IDLE) {  // task_has_idle_policy()
    lw.weight = WEIGHT_IDLEPRIO;
    lw.inv_weight = WMULT_IDLEPRIO;
  } else {
    const int idx = p->nice + 20;
    lw.weight = sched_prio_to_weight[idx];
    lw.inv_weight = sched_prio_to_wmult[idx];
  }
  // A fair task's lag, deadline and PELT load follow its weight (reweight_task_fair()).
  if (update_load && p->sched_class->reweight_task)
    p->sched_class->reweight_task(p->kern->rq_of(p->cpu), p, &lw);
  else
    p->se.load = lw;
}

// set_user_nice() (core.c): RT tasks only record the value. Otherwise the task leaves its
// runqueue for the change (DEQUEUE_SAVE: no sleep, so its lag is recorded and its deadline
// kept relative), takes the new weight, and comes back (ENQUEUE_RESTORE), placed by its
// rescaled lag; then its class decides who runs (prio_changed()).
void set_user_nice(task_struct* p, long nice) {
  if (p->nice == nice || nice < -20 || nice > 19) return;
  rq* rq = p->kern->rq_of(p->cpu);
  update_rq_clock(rq);
  if (rt_policy(p->policy)) {
    p->nice = static_cast<int>(nice);
    return;
  }
  const bool queued = p->on_rq;  // task_on_rq_queued(): a delayed task too
  const bool running = rq->curr == p;
  if (queued) p->sched_class->dequeue_task(rq, p, DEQUEUE_SAVE);
  if (running) p->sched_class->put_prev_task(rq, p);
  p->nice = static_cast<int>(nice);
  set_load_weight(p, true);
  const int old_prio = p->prio;
  p->prio = DEFAULT_PRIO + p->nice;  // effective_prio()
  if (queued) p->sched_class->enqueue_task(rq, p, ENQUEUE_RESTORE);
  if (running) p->sched_class->set_next_task(rq, p, false);
  if (p->sched_class->prio_changed) p->sched_class->prio_changed(rq, p, old_prio);
}

// update_rq_clock() and update_rq_clock_task(): clock_task advances with the clock less the
// irq time accounted since (CONFIG_IRQ_TIME_ACCOUNTING; softirq.irq_time stays 0 without
// it), at most the clock's own advance, the rest carried to the next update as Linux does.
void update_rq_clock(rq* rq) {
  const u64 now = static_cast<u64>(rq->k->now());
  const s64 delta = static_cast<s64>(now - rq->clock);
  rq->clock = now;
  if (delta <= 0) return;
  const u64 irq_delta = std::min<u64>(rq->softirq.irq_time - rq->prev_irq_time, static_cast<u64>(delta));
  rq->prev_irq_time += irq_delta;
  rq->clock_task += static_cast<u64>(delta) - irq_delta;
}

bool cpus_share_cache(KernelImpl* k, int a, int b) {
  return k->machine_.topo.llc_of[a] == k->machine_.topo.llc_of[b];
}

// available_idle_cpu(): idle with nothing queued and no wakeup pending for it.
// (rq->curr == rq->idle && rq->nr_running == 0 && rq->ex.wake_list.empty(), read from
// k->lb_view.)
bool available_idle_cpu(KernelImpl* k, int cpu) {
  const lb_cpu& v = k->lb_view[cpu];
#ifdef SCHEDLAB_CHECK_VIEWS
  assert(v == lb_cpu_of(k->rq_of(cpu)) && "stale lb_view");
#endif
  return v.idle();
}

bool sched_idle_rq(const rq* rq) { return rq->nr_running && rq->nr_running == rq->cfs.h_nr_idle; }

bool sched_idle_cpu(KernelImpl* k, int cpu) { return sched_idle_rq(k->rq_of(cpu)); }

unsigned lb_h_nr_running(const rq* rq) {
  return v612(rq->k) ? rq->cfs.h_nr_queued : rq->cfs.h_nr_runnable;
}

lb_cpu lb_cpu_of(const rq* rq) {
  lb_cpu v;
  v.nr_running = rq->nr_running;
  v.curr_idle = rq->curr == rq->idle;
  v.wake_pending = !rq->ex.wake_list.empty();
  v.load = cpu_load(rq);
  v.util = cpu_util_cfs(rq);
  v.runnable = cpu_runnable(rq);
  v.h_nr_running = lb_h_nr_running(rq);
  return v;
}

// The counts only: the PELT fields change only where the averages do, and every such place
// calls lb_view_update_pelt() (SCHEDLAB_CHECK_VIEWS checks both at every read).
void lb_view_update(rq* rq) {
  KernelImpl* k = rq->k;
  lb_cpu& v = k->lb_view[rq->cpu];
  const bool was_idle = v.idle();
  const s64 dn = static_cast<s64>(rq->nr_running) - static_cast<s64>(v.nr_running);
  const unsigned h_nr_running = lb_h_nr_running(rq);
  const s64 dh = static_cast<s64>(h_nr_running) - static_cast<s64>(v.h_nr_running);
  v.nr_running = rq->nr_running;
  v.h_nr_running = h_nr_running;
  v.curr_idle = rq->curr == rq->idle;
  v.wake_pending = !rq->ex.wake_list.empty();
  const s64 di = static_cast<s64>(v.idle()) - static_cast<s64>(was_idle);
  if ((dn | di | dh) == 0) return;
  for (lb_sum* s : k->lb_sums_of[rq->cpu]) {
    s->nr_running += dn;
    s->idle_cpus += di;
    s->h_nr_running += dh;
  }
}

void lb_view_update_pelt(rq* rq) {
  KernelImpl* k = rq->k;
  lb_cpu& v = k->lb_view[rq->cpu];
  const unsigned long load = cpu_load(rq), util = cpu_util_cfs(rq), runnable = cpu_runnable(rq);
  const s64 dl = static_cast<s64>(load) - static_cast<s64>(v.load);
  const s64 du = static_cast<s64>(util) - static_cast<s64>(v.util);
  const s64 dr = static_cast<s64>(runnable) - static_cast<s64>(v.runnable);
  if ((dl | du | dr) == 0) return;  // a saturated CPU's averages barely move
  v.load = load;
  v.util = util;
  v.runnable = runnable;
  for (lb_sum* s : k->lb_sums_of[rq->cpu]) {
    s->load += dl;
    s->util += du;
    s->runnable += dr;
  }
}

void add_nr_running(rq* rq, unsigned n) {
  const unsigned before = rq->nr_running;
  rq->nr_running += n;
  lb_view_update(rq);
  if (before < 2 && rq->nr_running >= 2) rq->k->nr_overloaded++;
}

void sub_nr_running(rq* rq, unsigned n) {
  assert(rq->nr_running >= n);
  const unsigned before = rq->nr_running;
  rq->nr_running -= n;
  lb_view_update(rq);
  if (before >= 2 && rq->nr_running < 2) rq->k->nr_overloaded--;
}

// __resched_curr(): set the need-resched bit `tif` on rq->curr; a remote CPU learns of a
// hard request by IPI (unless its idle loop polls), of a lazy one only at its next tick or
// kernel exit.
static void __resched_curr(rq* rq, unsigned tif) {
  KernelImpl* k = rq->k;
  task_struct* curr = rq->curr;
  if (curr->is_idle && tif == TIF_NEED_RESCHED_LAZY) tif = TIF_NEED_RESCHED;
  if (curr->thread_flags & (tif | TIF_NEED_RESCHED)) return;
  if (rq->cpu != k->current_cpu() && slice_ext_defer_remote_resched(rq)) return;
  curr->thread_flags |= tif;
  // A hard request on this CPU is also folded into its preempt_count (x86's
  // PREEMPT_NEED_RESCHED, rq->preempt_need_resched; a remote one by scheduler_ipi()), where a
  // kernel preempt_enable() under full and lazy preemption finds it. __schedule() and 7.0's
  // grant clear it; the RFC's and the 2023 prototype's grants leave it (slice_ext.cc).
  if (rq->cpu == k->current_cpu()) {  // acted on at this CPU's exit path
    if (tif == TIF_NEED_RESCHED) rq->preempt_need_resched = true;  // set_preempt_need_resched()
    return;
  }
  if (tif == TIF_NEED_RESCHED) smp_send_ipi(k, rq->cpu, IPI_RESCHEDULE);
}

void resched_curr(rq* rq) { __resched_curr(rq, TIF_NEED_RESCHED); }

// resched_curr_lazy(): the lazy bit only under the lazy model (6.13+), else the hard bit.
void resched_curr_lazy(rq* rq) {
  const bool lazy = rq->k->cfg_.preempt == PreemptModel::Lazy;
  __resched_curr(rq, lazy ? TIF_NEED_RESCHED_LAZY : TIF_NEED_RESCHED);
}

static int sched_class_rank(const sched_class* c) {
  if (c == &rt_sched_class) return 2;
  if (c == &fair_sched_class) return 1;
  return 0;
}

// wakeup_preempt(): same class -> the class decides; a higher class preempts at once.
void wakeup_preempt(rq* rq, task_struct* p, int flags) {
  task_struct* curr = rq->curr;
  if (p->sched_class == curr->sched_class)
    curr->sched_class->wakeup_preempt(rq, p, flags);
  else if (sched_class_rank(p->sched_class) > sched_class_rank(curr->sched_class)) {
    rq->resched_by_rt = true;  // remembered for the "never defer an RT wakeup" policy
    resched_curr(rq);
  }
}

static void sched_info_enqueue(task_struct* p, u64 now) { p->stats.wait_start = now; }

void activate_task(rq* rq, task_struct* p, int flags) {
  if (flags & ENQUEUE_MIGRATED) rq->k->mm_cid_ops->migrate_to(rq, p);  // sched_mm_cid_migrate_to()
  p->sched_class->enqueue_task(rq, p, flags);
  p->on_rq = true;
  // A queued task moved to another CPU goes on waiting: its wait started where it was
  // queued first (update_stats_wait_end_fair() keeps the time waited so far for a task
  // on_rq_migrating, and the enqueue on the new CPU subtracts it from the new start).
  if (!p->on_rq_migrating) sched_info_enqueue(p, rq->clock);
}

void deactivate_task(rq* rq, task_struct* p, int flags) {
  p->on_rq = false;
  p->sched_class->dequeue_task(rq, p, flags);
}

cfs_rq* task_group_cfs_rq(const task_struct* p, int cpu) {
  if (const task_group* tg = p->sched_task_group) return tg->cfs_rq[static_cast<size_t>(cpu)];
  return &p->kern->rq_of(cpu)->cfs;
}

void __set_task_cpu(task_struct* p, int cpu) {
  p->cpu = cpu;
  // set_task_rq(): the task's group's runqueue there, below the group's entity there.
  if (task_group* tg = p->sched_task_group) {
    p->se.cfs_rq = tg->cfs_rq[static_cast<size_t>(cpu)];
    p->se.parent = tg->se[static_cast<size_t>(cpu)];
    p->se.depth = p->se.parent->depth + 1;
  } else {
    p->se.cfs_rq = &p->kern->rq_of(cpu)->cfs;
  }
  p->slice.ids_changed = true;  // rseq_sched_set_ids_changed()
}

void set_task_cpu(task_struct* p, int cpu) {
  if (p->cpu != cpu) {
    trace_sched_migrate_task(p->kern, p, cpu);
    if (p->sched_class->migrate_task_rq) p->sched_class->migrate_task_rq(p, cpu);
    p->kern->mm_cid_ops->migrate_from(p);  // sched_mm_cid_migrate_from()
  }
  __set_task_cpu(p, cpu);
}

// set_task_cpu() + the migration of a queued, not running task (move_queued_task()).
void move_queued_task_locked(rq* src, task_struct* p, rq* dst) {
  assert(p->on_rq && !p->on_cpu);
  update_rq_clock(src);
  update_rq_clock(dst);
  p->on_rq_migrating = true;
  deactivate_task(src, p, DEQUEUE_MIGRATING);
  set_task_cpu(p, dst->cpu);
  p->stats.nr_migrations++;
  activate_task(dst, p, ENQUEUE_MIGRATED);
  p->on_rq_migrating = false;
}

void move_queued_task(rq* src, task_struct* p, rq* dst) {
  move_queued_task_locked(src, p, dst);
  wakeup_preempt(dst, p, 0);
}

// `cls`: the class whose placement to use (p's own unless given).
static int select_task_rq(KernelImpl* k, task_struct* p, int cpu, int wake_flags, int waker_cpu,
                          const sched_class* cls = nullptr) {
  if (!cls) cls = p->sched_class;
  if (p->nr_cpus_allowed > 1) cpu = cls->select_task_rq(k, p, cpu, wake_flags, waker_cpu);
  // is_cpu_allowed(): a task allowed everywhere (the mask's weight is nr_cpu_ids) passes
  // without reading its mask, which on a wide machine is a cache line of its own.
  if (p->nr_cpus_allowed < k->nr_cpus() && !task_allowed_on(p, cpu)) {
    const int c = p->cpus_mask.first();  // select_fallback_rq()
    if (c < p->cpus_mask.size()) return c;
  }
  return cpu;
}

// update_rq_avg_idle(): the EWMA (1/8) of idle durations, capped at twice the dearest
// newly-idle balance (rq->max_idle_balance_cost, at least the migration cost). 7.0 takes a
// sample as the CPU leaves idle (put_prev_task_idle(), 4b603f1551a7); 6.12 and 6.18 at the
// next wakeup enqueued on the CPU (ttwu_do_activate()), from a stamp that a newly-idle pass
// that pulled a task clears: a CPU that left idle by fork, balancing or a wake list keeps
// its stamp, and that sample includes the time it ran since.
void update_rq_avg_idle(rq* rq, sim::Time now) {
  const s64 delta = static_cast<s64>(now - static_cast<sim::Time>(rq->idle_stamp));
  s64 avg = static_cast<s64>(rq->avg_idle);
  avg += (delta - avg) / 8;
  const s64 max = 2 * static_cast<s64>(rq->max_idle_balance_cost);
  rq->avg_idle = static_cast<u64>(std::min<s64>(avg, max));
  rq->idle_stamp = 0;
}

static void ttwu_do_activate(rq* rq, task_struct* p, int wake_flags) {
  int en_flags = ENQUEUE_WAKEUP;
  if (wake_flags & WF_MIGRATED) en_flags |= ENQUEUE_MIGRATED;
  update_rq_clock(rq);
  activate_task(rq, p, en_flags);
  wakeup_preempt(rq, p, wake_flags);
  p->__state = TASK_RUNNING;  // ttwu_do_wakeup()
  trace_sched_wakeup(rq, p);
  if (p->sched_class->task_woken) p->sched_class->task_woken(rq, p);
  if (!v70(rq->k) && rq->idle_stamp) update_rq_avg_idle(rq, static_cast<sim::Time>(rq->clock));
}

// ttwu_queue_cond(): queue the wakeup on the target's wake list (and IPI it) when the waker
// does not share its LLC, or when the target is idle; else enqueue remotely under its lock.
static bool ttwu_queue_cond(KernelImpl* k, int cpu, int this_cpu) {
  if (!cpus_share_cache(k, this_cpu, cpu)) return true;
  if (cpu == this_cpu) return false;
  return k->rq_of(cpu)->nr_running == 0;
}

// sched_ttwu_pending(): the target runs the queued wakeups itself (IPI context).
void sched_ttwu_pending(rq* rq) {
  std::vector<task_struct*>& list = rq->ex.wake_list;
  for (size_t i = 0; i < list.size(); ++i)
    ttwu_do_activate(rq, list[i], WF_TTWU | (list[i]->sched_remote_wakeup ? WF_MIGRATED : 0));
  list.clear();
  lb_view_update(rq);
}

// try_to_wake_up(): runs on the waker's CPU (k->current_cpu()).
bool try_to_wake_up(KernelImpl* k, task_struct* p, int wake_flags) {
  // ttwu_state_match(): only a sleeping task is woken; a running or waking one is left alone.
  if (p->__state != TASK_INTERRUPTIBLE || p->exited) return false;
  const int this_cpu = k->current_cpu();
  rq* waker_rq = k->rq_of(this_cpu);
  cpu_charge(waker_rq, k->machine_.costs.ttwu_ns);
  p->stats.nr_wakeups++;
  if (p->on_rq) {
    // ttwu_runnable(): still queued (delayed dequeue, or not yet switched out).
    rq* rq = k->rq_of(p->cpu);
    update_rq_clock(rq);
    if (p->se.sched_delayed) {
      p->sched_class->enqueue_task(rq, p, ENQUEUE_DELAYED);
      sched_info_enqueue(p, rq->clock);
    }
    if (rq->curr != p) wakeup_preempt(rq, p, wake_flags);
    p->__state = TASK_RUNNING;
    trace_sched_wakeup(rq, p);  // ttwu_do_wakeup()
    return true;
  }
  wake_flags |= WF_TTWU;
  const int cpu = select_task_rq(k, p, p->cpu, wake_flags, this_cpu);
  if (p->nr_cpus_allowed > 1) wake_flags |= WF_RQ_SELECTED;  // (6.13+; read by 7.0 only)
  if (cpu != p->cpu) {
    wake_flags |= WF_MIGRATED;
    p->stats.nr_migrations++;
    set_task_cpu(p, cpu);
  }
  if (k->cfg_.feat(__SCHED_FEAT_TTWU_QUEUE) && ttwu_queue_cond(k, cpu, this_cpu)) {
    rq* target = k->rq_of(cpu);
    p->__state = TASK_WAKING;  // a second wakeup finds it pending
    p->sched_remote_wakeup = wake_flags & WF_MIGRATED;  // ttwu_queue_wakelist()
    // __smp_call_single_queue(): llist_add() is true only for the first entry of an empty
    // call_single_queue, and only then is the IPI sent; later wakeups ride on it.
    const bool first = target->ex.wake_list.empty();
    target->ex.wake_list.push_back(p);
    lb_view_update(target);
    if (first) smp_send_ipi(k, cpu, IPI_CALL_FUNC);
    return true;
  }
  ttwu_do_activate(k->rq_of(cpu), p, wake_flags);
  return true;
}

// wake_up_new_task(): fork balancing, then enqueue with a half-slice initial deadline.
void wake_up_new_task(KernelImpl* k, task_struct* p, bool as_fair_child) {
  k->mm_cid_ops->fork(k->rq_of(p->cpu), p);  // copy_process() -> copy_mm() -> sched_mm_cid_fork()
  p->recent_used_cpu = p->cpu;  // the parent's CPU; select_idle_sibling() keeps it after
  const int cpu = select_task_rq(k, p, p->cpu, WF_FORK, k->current_cpu(),
                                 as_fair_child ? &fair_sched_class : nullptr);
  __set_task_cpu(p, cpu);
  rq* rq = k->rq_of(cpu);
  update_rq_clock(rq);
  post_init_entity_util_avg(p);
  p->__state = TASK_RUNNING;
  activate_task(rq, p, ENQUEUE_INITIAL);
  trace_sched_wakeup_new(rq, p);
  wakeup_preempt(rq, p, WF_FORK);
  if (p->sched_class->task_woken) p->sched_class->task_woken(rq, p);
}

// put_prev_set_next_task(): hand the CPU's class state from prev to next.
static task_struct* put_prev_set_next_task(rq* rq, task_struct* prev, task_struct* next) {
  if (next != prev) {
    if (prev->sched_class == &fair_sched_class && next->sched_class == &fair_sched_class) {
      put_prev_set_next_fair(rq, prev, next);
      return next;
    }
    prev->sched_class->put_prev_task(rq, prev);
    next->sched_class->set_next_task(rq, next, true);
  }
  return next;
}

// pick_next_task(): the classes in priority order; the idle class always has a task.
static task_struct* pick_next_task(rq* rq, task_struct* prev) {
  // put_prev_task_balance(): the classes from prev's down may pull work first (RT: pull when
  // this rq's priority drops; the fair class pulls as the CPU is about to idle, below).
  if (prev->sched_class->balance) prev->sched_class->balance(rq, prev);
  static const sched_class* const classes[] = {&rt_sched_class, &fair_sched_class,
                                               &idle_sched_class};
  // The fair deadline server, when queued (from zero laxity on), picks fair tasks before RT
  // (__pick_task_dl() -> server_pick_task()).
  if (rq->fair_server.active && !rq->fair_server.dl_throttled) {
    if (task_struct* p = fair_sched_class.pick_task(rq)) return put_prev_set_next_task(rq, prev, p);
    dl_server_pick_none(rq);
  }
  for (;;) {
    for (const sched_class* c : classes) {
      // About to go idle: pull work first (pick_next_task_fair's sched_balance_newidle()).
      if (c == &idle_sched_class && sched_balance_newidle(rq)) break;
      if (task_struct* p = c->pick_task(rq)) return put_prev_set_next_task(rq, prev, p);
    }
  }
}

// __schedule(): every way into the scheduler ends here. `preempt` is true for involuntary
// entries (interrupt return with need-resched), false for blocking and yield. `sm_preempt`:
// entered by a preemption inside the kernel (Linux's SM_PREEMPT: preempt_schedule() from
// preempt_enable()), which sched_switch reports as R+; the reschedule on the way back to user
// mode is a plain schedule() (SM_NONE), and the task it preempts shows as R.
void __schedule(rq* rq, bool preempt, bool sm_preempt) {
  KernelImpl* k = rq->k;
  task_struct* prev = rq->curr;
  // hrtick_clear(): the next task's class starts its own hrtick if it wants one.
  if (k->cfg_.feat(__SCHED_FEAT_HRTICK))  // (HRTICK_DL: no deadline tasks here)
    hrtimer_try_to_cancel(rq, &rq->ex.hrtick_timer);
  update_rq_clock(rq);
  slice_ext(rq)->schedule_prev(rq, prev);
  bool blocked = false;
  if (!preempt && prev->__state != TASK_RUNNING && !prev->is_idle) {
    // try_to_block_task(): a delayed fair task stays queued (p->on_rq) but is not runnable.
    // A dying task is dequeued for good: no delayed dequeue (DEQUEUE_SPECIAL).
    const int flags = DEQUEUE_SLEEP | (prev->__state == TASK_DEAD ? DEQUEUE_SPECIAL : 0);
    if (prev->sched_class->dequeue_task(rq, prev, flags)) prev->on_rq = false;
    blocked = true;
  }
  task_struct* pick_prev = prev;
  const bool stopper = rq->active_balance;
  if (stopper) {
    // The CPU stopper runs first (stop class): prev is put back as by any preemption, the
    // stopper's active_load_balance_cpu_stop() may move a task away, and the next pick
    // follows the (stateless) stopper. Two switches: to the stopper and away from it.
    if (!prev->is_idle) prev->sched_class->put_prev_task(rq, prev);
    const bool on_cpu = prev->on_cpu;
    prev->on_cpu = false;
    active_load_balance_cpu_stop(rq);
    if (prev->cpu == rq->cpu) prev->on_cpu = on_cpu;  // (a moved prev runs nowhere)
    pick_prev = rq->idle;
    // (Linux's balance callbacks after the stopper may also pull RT tasks; not modelled.)
  }
  // SM_IDLE (3dcac251b066, 6.12): the idle task's schedule_idle() with nothing queued keeps
  // idle without a pick, so without the newly-idle balance a pick would run.
  task_struct* next = prev->is_idle && !stopper && rq->nr_running == 0
                          ? prev
                          : pick_next_task(rq, pick_prev);
  // picked: clear_tsk_need_resched(prev), after the pick, so a request raised during it (a
  // task pulled by newidle balance preempting prev) is satisfied by this pick.
  prev->thread_flags &= ~(TIF_NEED_RESCHED | TIF_NEED_RESCHED_LAZY);
  rq->preempt_need_resched = false;  // clear_preempt_need_resched()
  rq->resched_by_rt = false;
  // prev -> stopper -> next is two switches; the one to next is charged below.
  if (stopper) cpu_charge(rq, (next == prev ? 2 : 1) * k->machine_.costs.context_switch_ns);
  if (next == prev) {
    // The idle task got here because need_resched() ended do_idle() (a reschedule with
    // nothing queued, or the stopper's round trip): tick_nohz_idle_exit() restarted a stopped
    // tick, and schedule_idle() returns into a new do_idle() (nohz_run_idle_balance(), then
    // rounds that start afresh).
    if (prev->is_idle) {
      do_idle_exit(rq);
      nohz_run_idle_balance(rq);
      do_idle_enter(rq);
    }
    return;
  }
  rq->nr_switches++;
  trace_sched_switch(rq, sm_preempt, prev, next);
  if (!prev->is_idle) {
    if (blocked)
      prev->stats.nr_switches_voluntary++;
    else
      prev->stats.nr_switches_involuntary++;
    if (preempt && prev->user && prev->user->locks_held > 0) {
      prev->stats.nr_lock_holder_preemptions++;
      prev->stats.lhp_since = rq->clock;
    }
  }
  prev->on_cpu = false;
  next->on_cpu = true;
  rq->curr = next;
  k->mm_cid_ops->switch_mm_cid(rq, prev, next);  // context_switch() -> switch_mm_cid()
  rseq_sched_switch_event(next);                 // context_switch(): next was scheduled in
  lb_view_update(rq);
  dl_server_update_defer(rq);
  if (next->is_idle) update_idle_core(rq);  // set_next_task_idle()
  cpu_switch(rq, prev, next, k->now());
  cpu_charge(rq, k->machine_.costs.context_switch_ns);
  if (next->is_idle) {
    // The idle task returns from the switch (finish_task_switch()) into do_idle():
    // nohz_run_idle_balance(), then the loop's first round, whose idle state starts once the
    // switch is done.
    nohz_run_idle_balance(rq);
    do_idle_enter(rq);
    return;
  }
  // A task that blocked in a syscall goes on with the syscall's exit path now it is back.
  if (next->syscall_exit_pending) {
    next->syscall_exit_pending = false;
    cpu_charge(rq, k->machine_.costs.syscall_exit_ns);
  }
  if (next->sched_class == &rt_sched_class) push_rt_tasks(rq);  // balance callback
}

void schedule(rq* rq, bool preempt, bool sm_preempt) {
  do {
    __schedule(rq, preempt, sm_preempt);
  } while (test_tsk_need_resched(rq->curr));
}

// do_sched_yield(): the class moves curr back, then schedule() picks again.
void do_sched_yield(rq* rq) {
  update_rq_clock(rq);
  rq->curr->sched_class->yield_task(rq);
  schedule(rq, false);
}

// sched_tick(): called from the tick interrupt with rq == this CPU.
void sched_tick(rq* rq) {
  task_struct* curr = rq->curr;
  update_rq_clock(rq);
  // Lazy -> hard upgrade (6.13+): a lazy request pending for a whole tick becomes urgent.
  if (rq->k->cfg_.preempt == PreemptModel::Lazy && (curr->thread_flags & TIF_NEED_RESCHED_LAZY))
    resched_curr(rq);
  curr->sched_class->task_tick(rq, curr, 0);
  rq->k->mm_cid_ops->tick(rq, curr);  // task_tick_mm_cid()
  sched_balance_trigger(rq);
}

}  // namespace kernel
