// The periodic tick and NO_HZ_IDLE, mirroring kernel/time/tick-sched.c (tick_sched_timer,
// tick_nohz_idle_stop_tick / restart) and kernel/time/timer.c (update_process_times):
// ticks of all CPUs sit on one jiffy grid (skew_tick=0).
#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel.h"

namespace kernel {

namespace {
sim::Time next_jiffy(const Kernel* k, sim::Time now) {
  const sim::Time tick = k->cfg_.tick_nsec();
  return (now / tick + 1) * tick;
}
}  // namespace

void tick_nohz_update(rq* rq, bool idle) {
  Kernel* k = rq->k;
  if (!k->cfg_.nohz_idle) return;
  sim::Timer* t = &rq->ex.tick_timer;
  if (idle) {
    k->engine()->cancel(t);
    k->nohz_has_blocked = true;  // nohz_balance_enter_idle(): it may have left blocked load
  } else if (!t->armed) {
    k->engine()->arm(t, next_jiffy(k, k->now()));
  }
}

// tick_sched_timer(): update_process_times() -> sched_tick(), then re-arm one tick later.
void tick_sched_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  Kernel* k = rq->k;
  irqentry_enter(rq, now);
  cpu_charge(rq, k->machine_.costs.tick_handler_ns);
  sched_tick(rq);
  if (!(k->cfg_.nohz_idle && rq->curr->is_idle)) k->engine()->arm(t, now + k->cfg_.tick_nsec());
  irqentry_exit(rq);
}

// hrtick(): the fair slice ended (sched_feat(HRTICK)); task_tick(queued = 1) reschedules.
void hrtick_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  irqentry_enter(rq, now);
  update_rq_clock(rq);
  task_struct* curr = rq->curr;
  if (!curr->is_idle) curr->sched_class->task_tick(rq, curr, 1);
  irqentry_exit(rq);
}

// hrtimer_wakeup(): a nanosleep timer expires on the CPU that armed it (timer.arg) and
// wakes the task from that CPU's interrupt.
void hrtimer_sleep_fn(sim::Timer* t, sim::Time now) {
  task_struct* p = static_cast<task_struct*>(t->ctx);
  rq* rq = p->kern->rq_of(static_cast<int>(t->arg));
  irqentry_enter(rq, now);
  try_to_wake_up(p->kern, p, 0);
  irqentry_exit(rq);
}

}  // namespace kernel
