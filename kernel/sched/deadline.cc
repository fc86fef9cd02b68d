// The fair deadline server, mirroring the dl_server parts of kernel/sched/deadline.c
// (v6.12 .. v7.0): rq->fair_server, a deferred SCHED_DEADLINE entity that runs fair tasks.
//
// Linux keeps the server's budget (50 ms per 1000 ms by default) charged by every fair
// task's execution (dl_server_update() from update_curr()), whether or not it ran on the
// server's behalf. While fair tasks get the CPU the server never runs. When RT keeps them
// off it, the server's timer fires at the zero-laxity instant (deadline - runtime left); the
// server is then enqueued as a deadline entity, which outranks RT, and runs fair tasks until
// its runtime is used up; it is throttled until its period ends and replenished then.
//
// Modelled: that budget, its periods, the zero-laxity boost and the throttle. Simplified:
// the timer is armed only while RT is current with fair tasks runnable (the only time its
// firing changes what runs); Linux arms it whenever the deferred server has budget. Periods
// follow each other while the server stays started; after a stop, the next one starts at
// the restart if the old one is over or its budget left overflows the bandwidth
// (update_dl_entity()'s new period). The server stops when the last fair task leaves, as
// in 6.12; 6.17 keeps it started through its period (docs/model.md).
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/time/hrtimer.h"

namespace kernel {

namespace {

bool server_enabled(const rq* rq) { return rq->k->cfg_.fair_server_runtime_ns > 0; }

// replenish_dl_new_period(): a full budget for a period starting now.
void replenish_dl_new_period(rq* rq, u64 now) {
  dl_server& s = rq->fair_server;
  s.deadline = now + static_cast<u64>(rq->k->cfg_.fair_server_period_ns);
  s.runtime = rq->k->cfg_.fair_server_runtime_ns;
}

// replenish_dl_entity(): a full budget for the next period, back to back while started.
void dl_server_replenish(rq* rq, u64 now) {
  dl_server& s = rq->fair_server;
  if (now < s.deadline) return;
  const u64 period = static_cast<u64>(rq->k->cfg_.fair_server_period_ns);
  if (s.active && now < s.deadline + period) {
    s.deadline += period;
    s.runtime = rq->k->cfg_.fair_server_runtime_ns;
  } else {
    replenish_dl_new_period(rq, now);
  }
}

// dl_entity_overflow(): the budget left would run at more than the reserved bandwidth
// (runtime / (deadline - t) > dl_runtime / dl_deadline), checked in microsecond units
// (DL_SCALE) and in u64 arithmetic as deadline.c does (a negative runtime wraps the left
// side below the right one: no overflow, the old deadline and budget are kept).
bool dl_entity_overflow(const rq* rq, u64 t) {
  const dl_server& s = rq->fair_server;
  constexpr int kDlScale = 10;
  const u64 left = (static_cast<u64>(rq->k->cfg_.fair_server_period_ns) >> kDlScale) *
                   static_cast<u64>(s.runtime >> kDlScale);
  const u64 right = ((s.deadline - t) >> kDlScale) *
                    (static_cast<u64>(rq->k->cfg_.fair_server_runtime_ns) >> kDlScale);
  return static_cast<s64>(right - left) < 0;  // dl_time_before(right, left)
}

// The zero-laxity instant: the latest start that still fits the budget before the period
// ends; with no budget left, the replenishment at the period's end.
u64 zero_laxity(const dl_server& s) {
  return s.runtime > 0 ? s.deadline - static_cast<u64>(s.runtime) : s.deadline;
}

// Fair tasks are runnable but RT is current: they are starved.
bool fair_starved(const rq* rq) {
  return rq->fair_server.active && rq->curr->sched_class == &rt_sched_class;
}

}  // namespace

// dl_server_start(): from enqueue_task_fair() when the first fair task becomes runnable.
// enqueue_dl_entity(ENQUEUE_WAKEUP) -> update_dl_entity(): the CBS wakeup rule keeps the
// old deadline and budget only if the deadline is ahead and the budget left fits the
// bandwidth in the time left; else a new period starts now (replenish_dl_new_period()), so
// a server restarted late in a period with most of its budget waits for the next one.
void dl_server_start(rq* rq) {
  if (!server_enabled(rq)) return;
  const u64 now = static_cast<u64>(rq->k->now());
  dl_server& s = rq->fair_server;
  if (now < s.deadline && dl_entity_overflow(rq, now))
    replenish_dl_new_period(rq, now);
  else
    dl_server_replenish(rq, now);
  s.active = true;
  dl_server_update_defer(rq);
}

// dl_server_stop(): no fair task left to run.
void dl_server_stop(rq* rq) {
  dl_server& s = rq->fair_server;
  if (!s.active) return;
  s.active = false;
  s.defer_running = false;
  rq->k->engine()->cancel(&s.timer);
}

// dl_server_update(): fair execution uses the budget. A running server that runs out is
// throttled (dequeued) and RT gets the CPU back.
void dl_server_update(rq* rq, s64 delta_exec) {
  dl_server& s = rq->fair_server;
  const u64 now = static_cast<u64>(rq->k->now());
  s.runtime -= delta_exec;  // charged to the period it (mostly) ran in
  // Out of budget, or past the deadline (a zero-laxity start runs out at the deadline;
  // accounting comes at ticks): throttled until the replenishment.
  if (s.defer_running && (s.runtime <= 0 || now >= s.deadline)) {
    s.defer_running = false;
    if (rq->rt.rt_nr_running) resched_curr(rq);
  }
  dl_server_replenish(rq, now);
}

void dl_server_update_defer(rq* rq) {
  dl_server& s = rq->fair_server;
  if (!fair_starved(rq) || s.defer_running) {
    if (s.timer.armed) rq->k->engine()->cancel(&s.timer);
    return;
  }
  const sim::Time now = rq->k->now();
  dl_server_replenish(rq, static_cast<u64>(now));
  hrtimer_start(rq, &s.timer, std::max(now, static_cast<sim::Time>(zero_laxity(s))));
}

// dl_server_timer(): an hrtimer interrupt on the server's CPU. At zero laxity with fair tasks
// still starved the server is enqueued as a deadline entity: RT is preempted at once.
void dl_server_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  irqentry_enter(rq, now);
  update_rq_clock(rq);
  dl_server& s = rq->fair_server;
  dl_server_replenish(rq, static_cast<u64>(now));
  if (fair_starved(rq) && s.runtime > 0 && static_cast<u64>(now) >= zero_laxity(s)) {
    s.defer_running = true;
    resched_curr(rq);
  } else {
    dl_server_update_defer(rq);
  }
  irqentry_exit(rq);
}

}  // namespace kernel
