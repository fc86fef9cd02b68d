// The fair deadline server, mirroring the dl_server parts of kernel/sched/deadline.c
// (v6.12 .. v7.0): rq->fair_server, a deferred SCHED_DEADLINE entity that runs fair tasks.
//
// Linux keeps the server's budget (50 ms per 1000 ms by default) charged by every fair
// task's execution (dl_server_update() from update_curr()), whether or not it ran on the
// server's behalf. The server's states follow the diagram above dl_server_start() in 7.0's
// deadline.c (the flags are the same in 6.12):
//   B zero-laxity wait (dl_throttled, dl_defer_armed): fair tasks get the CPU on their own
//     and use the budget in the background; using it all up starts a new period at once
//     (update_curr_dl_se()). When RT keeps them off the CPU, the timer fires at the
//     zero-laxity instant (deadline - runtime left): the server is replenished as a new
//     period (the budget left overflows the bandwidth then) and enqueued: D.
//   D running (dl_defer_running, queued as a deadline entity, which outranks RT): fair tasks
//     run until the budget is used up: E.
//   E replenish wait (dl_throttled, dl_defer_running): at the deadline the budget comes back
//     and the server runs again at once, without waiting for zero laxity, until fair tasks
//     use a whole budget in the background (back to B).
// dl_server_stop() dequeues it and cancels its timer but keeps dl_defer_running, so a
// restart of a server that was running is enqueued at once (update_dl_entity()).
// Idle time counts as the server's too (6.12, 6.18: dl_server_update_idle_time(); 7.0:
// dl_server_update_idle(), which leaves a server whose budget idle used up waiting idle,
// dl_defer_idle, for its timer to stop it). Start and stop follow the kernel version: 6.12
// starts and stops with the count of queued fair tasks; since 6.17 the server stops only
// when its pick finds no fair task (dl_server_pick_none()).
//
// Simplified: the zero-laxity timer is armed only while RT is current with the server
// started (the only time its firing changes what runs); Linux arms it whenever the server
// waits for zero laxity and pushes it forward as fair tasks use the budget, so there a
// started server on an idle CPU stops at its zero-laxity instant (docs/model.md).
#include "kernel/sched/deadline.h"

#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/time/hrtimer.h"

namespace kernel {

namespace {

bool server_enabled(const rq* rq) { return rq->k->cfg_.fair_server_runtime_ns > 0; }

u64 dl_period(const rq* rq) { return static_cast<u64>(rq->k->cfg_.fair_server_period_ns); }
s64 dl_runtime(const rq* rq) { return rq->k->cfg_.fair_server_runtime_ns; }

// dl_defer_armed: waiting for the zero-laxity instant (state B); throttled with
// dl_defer_running set it waits for the replenishment instead (state E).
bool dl_defer_armed(const dl_server& s) { return s.dl_throttled && !s.defer_running; }

// replenish_dl_new_period(): a full budget for a period starting now; a deferred server
// that is not handling starvation (!dl_defer_running) waits for zero laxity again.
void replenish_dl_new_period(rq* rq, u64 now) {
  dl_server& s = rq->fair_server;
  s.deadline = now + dl_period(rq);
  s.runtime = dl_runtime(rq);
  if (!s.defer_running) s.dl_throttled = true;
}

// dl_entity_overflow(): the budget left would run at more than the reserved bandwidth
// (runtime / (deadline - t) > dl_runtime / dl_deadline), checked in microsecond units
// (DL_SCALE) and in u64 arithmetic as deadline.c does (a negative runtime wraps the left
// side below the right one: no overflow, the old deadline and budget are kept).
bool dl_entity_overflow(const rq* rq, u64 t) {
  const dl_server& s = rq->fair_server;
  constexpr int kDlScale = 10;
  const u64 left = (dl_period(rq) >> kDlScale) * static_cast<u64>(s.runtime >> kDlScale);
  const u64 right = ((s.deadline - t) >> kDlScale) * (static_cast<u64>(dl_runtime(rq)) >> kDlScale);
  return static_cast<s64>(right - left) < 0;  // dl_time_before(right, left)
}

// replenish_dl_entity() from the timer (enqueue_dl_entity(ENQUEUE_REPLENISH)). At zero
// laxity (`armed`) the budget left always overflows the bandwidth in the time left, so a
// new period starts: a full budget and a deadline one period on. A replenishment after
// the budget ran out moves the deadline on by periods until the budget is positive.
void replenish_dl_entity(rq* rq, u64 now, bool armed) {
  dl_server& s = rq->fair_server;
  if (armed && dl_entity_overflow(rq, now)) {
    s.deadline = now + dl_period(rq);
    s.runtime = dl_runtime(rq);
  }
  while (s.runtime <= 0) {
    s.deadline += dl_period(rq);
    s.runtime += dl_runtime(rq);
  }
  if (static_cast<s64>(s.deadline - now) < 0) {  // lagged too much
    s.deadline = now + dl_period(rq);
    s.runtime = dl_runtime(rq);
  }
  s.dl_throttled = false;
  if (armed) return;
  // Not running already and the zero-laxity instant ahead: defer again.
  if (!s.defer_running && static_cast<s64>(now - (s.deadline - static_cast<u64>(s.runtime))) < 0)
    s.dl_throttled = true;
}

// The zero-laxity instant (start_dl_timer() of an armed server): deadline - runtime.
u64 zero_laxity(const dl_server& s) { return s.deadline - static_cast<u64>(s.runtime); }

// Fair tasks are runnable but RT is current: they are starved.
bool fair_starved(const rq* rq) {
  return rq->fair_server.active && rq->curr->sched_class == &rt_sched_class;
}

}  // namespace

// dl_server_start(): from enqueue_task_fair() when the first fair task is queued (a started
// server stays so: since 6.17 nothing but its own pick stops it).
// enqueue_dl_entity(ENQUEUE_WAKEUP) -> update_dl_entity(): the CBS wakeup rule keeps the
// old deadline and budget only if the deadline is ahead and the budget left fits the
// bandwidth in the time left; else a new period starts now. A server that was not
// running (!dl_defer_running) then waits for zero laxity; one that was is enqueued at once
// and keeps running fair tasks above RT. 7.0 ("When [4] D->A is followed by [1] A->B")
// clears dl_defer_running when a new period starts here.
void dl_server_start(rq* rq) {
  dl_server& s = rq->fair_server;
  s.dl_defer_idle = false;
  if (!server_enabled(rq) || s.active) return;
  const u64 now = static_cast<u64>(rq->k->now());
  s.active = true;
  if (!s.deadline) {
    replenish_dl_new_period(rq, now);  // the first start: setup_new_dl_entity()
  } else if (static_cast<s64>(s.deadline - now) < 0 || dl_entity_overflow(rq, now)) {
    if (v70(rq->k)) s.defer_running = false;
    replenish_dl_new_period(rq, now);
  } else if (!s.defer_running) {
    s.dl_throttled = true;
  }
  // enqueue_dl_entity(): throttled, it waits for its timer if the instant is ahead; else
  // it is enqueued now (start_dl_timer() fails, the defer flags are cleared).
  if (s.dl_throttled && static_cast<s64>(zero_laxity(s) - now) <= 0) s.dl_throttled = false;
  // `if (!dl_task(rq->curr) || dl_entity_preempt(dl_se, &rq->curr->dl)) resched_curr()`,
  // whatever the server's state: with no deadline tasks here, always. An RT task current
  // there is rescheduled (by IPI from another CPU) and picked again while the server waits.
  resched_curr(rq);
  dl_server_update_defer(rq);
}

// dl_server_stop(): dequeue_dl_entity(), hrtimer_try_to_cancel(), dl_defer_armed and
// dl_throttled cleared; dl_defer_running is kept.
void dl_server_stop(rq* rq) {
  dl_server& s = rq->fair_server;
  if (!s.active) return;
  s.active = false;
  s.dl_throttled = false;
  s.dl_defer_idle = false;
  rq->k->engine()->cancel(&s.timer);
}

// __pick_task_dl(): the queued server's server_pick_task() found no fair task. 6.12 yields
// the rest of the period (dl_yielded: throttled until the deadline, no budget left); since
// 6.17 ("Less agressive dl_server handling", "Fix dl_server behaviour") the server stops.
void dl_server_pick_none(rq* rq) {
  dl_server& s = rq->fair_server;
  if (!s.active) return;  // (stopped by the pick's dequeue of a delayed task)
  if (!v612(rq->k)) return dl_server_stop(rq);
  s.runtime = std::min<s64>(s.runtime, 0);
  s.dl_throttled = true;
  dl_server_update_defer(rq);
}

namespace {
// update_curr_dl_se() for the server: `idle` for 7.0's charges of idle time
// (dl_server_update_idle()). Used up in the background while waiting, the budget starts a
// new period at once and the server waits for zero laxity again ([2]); by idle time, once,
// after which the server waits idle (dl_defer_idle, [7]) and its timer stops it ([8]).
void update_curr_dl_se(rq* rq, s64 delta_exec, bool idle) {
  dl_server& s = rq->fair_server;
  const u64 now = static_cast<u64>(rq->k->now());
  if (!idle) s.dl_defer_idle = false;
  s.runtime -= delta_exec;
  if (s.runtime > 0) return;
  if (s.dl_throttled) {
    if (idle && s.dl_defer_idle) return;
    s.defer_running = false;
    replenish_dl_new_period(rq, now);
    if (idle) s.dl_defer_idle = true;
    dl_server_update_defer(rq);
    return;
  }
  // Running (queued) and out of budget: throttled until the replenishment at the
  // deadline (start_dl_timer()); if that is already past, replenished at once.
  if (static_cast<s64>(s.deadline - now) <= 0)
    replenish_dl_entity(rq, now, false);  // (a server not running defers again)
  else
    s.dl_throttled = true;
  if (s.dl_throttled && rq->rt.rt_nr_running) resched_curr(rq);
  dl_server_update_defer(rq);
}
}  // namespace

// dl_server_update(): fair execution uses the budget.
void dl_server_update(rq* rq, s64 delta_exec) { update_curr_dl_se(rq, delta_exec, false); }

// 7.0's dl_server_update_idle(), from update_curr_idle() (idle switched out, idle ticks):
// idle time uses a started server's budget too.
void dl_server_update_idle(rq* rq, s64 delta_exec) {
  if (rq->fair_server.active && server_enabled(rq)) update_curr_dl_se(rq, delta_exec, true);
}

// 6.12 and 6.18's dl_server_update_idle_time(), from put_prev_task_idle() and from
// enqueue_task_fair() before it starts the server on an empty runqueue: the idle time
// since `p` (the idle task) last ran counts as the server's time, started or not, so RT
// is not penalised for time it did not use. The budget stops at 0 and a running server
// leaves its running state (dl_defer_running).
void dl_server_update_idle_time(rq* rq, task_struct* p) {
  dl_server& s = rq->fair_server;
  if (!server_enabled(rq) || s.runtime < 0) return;  // no need to discount more
  const s64 delta_exec = static_cast<s64>(rq->clock_task - p->se.exec_start);
  if (delta_exec < 0) return;
  s.runtime -= delta_exec;
  if (s.runtime < 0) {
    s.defer_running = false;
    s.runtime = 0;
  }
  p->se.exec_start = rq->clock_task;
}

// The server's timer: the zero-laxity instant while it waits for it (armed only while RT
// starves fair tasks), its replenishment at the deadline after it ran out.
void dl_server_update_defer(rq* rq) {
  dl_server& s = rq->fair_server;
  if (!s.active || !s.dl_throttled) {
    if (s.timer.armed) rq->k->engine()->cancel(&s.timer);
    return;
  }
  const sim::Time now = rq->k->now();
  if (s.defer_running) {  // replenish wait: armed whatever runs
    const sim::Time at = std::max(now, static_cast<sim::Time>(s.deadline));
    if (!s.timer.armed) hrtimer_start(rq, &s.timer, at);
    return;
  }
  if (!fair_starved(rq)) {
    if (s.timer.armed) rq->k->engine()->cancel(&s.timer);
    return;
  }
  hrtimer_start(rq, &s.timer, std::max(now, static_cast<sim::Time>(zero_laxity(s))));
}

// dl_server_timer(): an hrtimer interrupt on the server's CPU. At zero laxity with fair tasks
// still starved the server starts running (dl_defer_running) and, replenished, is enqueued
// as a deadline entity: RT is preempted at once. At its replenishment it is enqueued again.
void dl_server_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  update_rq_clock(rq);
  dl_server& s = rq->fair_server;
  // 7.0: the current task's time up to now first (idle time may push the period forward).
  if (v70(rq->k) && s.active) rq->curr->sched_class->update_curr(rq);
  if (s.active && s.dl_defer_idle) {
    dl_server_stop(rq);  // 7.0: idle for a whole period's worth ([8])
  } else if (s.active && s.dl_throttled) {
    const bool armed = dl_defer_armed(s);
    if (armed && (!fair_starved(rq) || static_cast<u64>(now) < zero_laxity(s))) {
      dl_server_update_defer(rq);
    } else {
      if (armed) s.defer_running = true;
      replenish_dl_entity(rq, static_cast<u64>(now), armed);
      if (rq->curr->sched_class != &fair_sched_class) resched_curr(rq);
      dl_server_update_defer(rq);
    }
  }
  hrtimer_interrupt_tail(rq, now);
  irqentry_exit(rq);
}

}  // namespace kernel
