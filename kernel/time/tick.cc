// The periodic tick and NO_HZ_IDLE, mirroring kernel/time/tick-sched.c (tick_sched_timer,
// tick_nohz_idle_stop_tick / restart) and kernel/time/timer.c (update_process_times):
// every CPU's tick sits on the jiffy grid, offset per CPU under skew_tick=1, and its
// interrupt comes a random 0..timer_irq_jitter_ns late (hrtimer_start()).
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/cpuidle.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/time/hrtimer.h"
#include "kernel/trace_points.h"

namespace kernel {

// tick_setup_sched_timer(): with skew_tick, CPU n's tick expires
// n * ((TICK_NSEC >> 1) / num_possible_cpus()) after the jiffy edge, to avert jiffies_lock
// contention; otherwise on the edge.
namespace {
sim::Time tick_skew_offset(const KernelImpl* k, int cpu) {
  if (!k->cfg_.skew_tick) return 0;
  return (k->cfg_.tick_nsec() >> 1) / k->nr_cpus() * cpu;
}
}  // namespace

sim::Time tick_next_expiry(const rq* rq, sim::Time now) {
  const KernelImpl* k = rq->k;
  const sim::Time tick = k->cfg_.tick_nsec();
  const sim::Time off = tick_skew_offset(k, rq->cpu);
  return now < off ? off : ((now - off) / tick + 1) * tick + off;
}

void tick_sched_timer_start(rq* rq, sim::Time expires) {
  rq->ex.tick_expires = expires;
  hrtimer_start(rq, &rq->ex.tick_timer, expires);
}

// tick_nohz_get_sleep_length() -> hrtimer_next_event_without(&ts->sched_timer): the CPU's
// next hrtimer other than the tick. The sleep timers: the idle CPU's other hrtimers, cpu.max's
// and the fair server's, are rare.
sim::Time tick_nohz_get_sleep_length(const rq* rq, sim::Time now) {
  const auto& heap = rq->k->hrtimer_bases[static_cast<size_t>(rq->cpu)].heap;
  return heap.empty() ? -1 : std::max<sim::Time>(heap.front().expires - now, 0);
}

// *delta_next: dev->next_event - now, the device's next event (the tick while it runs, or
// an earlier hrtimer).
sim::Time tick_nohz_next_clock_event(const rq* rq, sim::Time now) {
  const sim::Time timer = tick_nohz_get_sleep_length(rq, now);
  if (!rq->ex.tick_timer.armed) return timer;
  const sim::Time tick = std::max<sim::Time>(rq->ex.tick_expires - now, 0);
  return timer < 0 ? tick : std::min(tick, timer);
}

namespace {

// The tick stopped (tick_nohz_stop_tick()) or restarted (tick_nohz_restart()): the CPU
// joins nohz.idle_cpus_mask (nohz_balance_enter_idle(): it may leave blocked load) or
// leaves it.
void nohz_mask_update(KernelImpl* k, int cpu, bool stopped) {
  k->nohz_idle_mask[static_cast<size_t>(cpu)] = stopped;
  if (stopped) k->nohz_has_blocked = true;
}

}  // namespace

// tick_nohz_idle_stop_tick(), asked by a round of the idle loop (kernel/sched/idle.cc): the
// tick stops, and the CPU joins the idle CPUs the NOHZ balance covers. Linux keeps it when
// tick_nohz_next_event() finds the next event within a tick; in high-resolution mode that
// event is the next timer-wheel timer, or a tick if RCU, irq_work or a pending timer softirq
// needs the CPU, never an hrtimer (those program the device themselves), and the model has
// none of them. Stopping re-arms the tick's hrtimer at that next event, or cancels it when
// there is none, as here: a write of the clock event device when the tick was the CPU's next
// timer. A tick already stopped is left as it is.
void tick_nohz_idle_stop_tick(rq* rq) {
  KernelImpl* k = rq->k;
  cpuidle_cpu& c = k->cpuidle[static_cast<size_t>(rq->cpu)];
  if (c.tick_stopped) return;
  c.tick_stopped = true;
  hrtimer_try_to_cancel(rq, &rq->ex.tick_timer);
  nohz_mask_update(k, rq->cpu, true);
}

// tick_nohz_idle_exit() -> tick_nohz_restart_sched_tick(): the CPU leaves idle with its tick
// stopped; tick_nohz_restart() starts it again on the CPU's grid, a write when it becomes the
// CPU's next timer. (Its hrtimer_cancel() of the stopped tick writes nothing: that timer sits
// at the CPU's next timer's expiry, behind it.)
void tick_nohz_idle_restart_tick(rq* rq) {
  KernelImpl* k = rq->k;
  cpuidle_cpu& c = k->cpuidle[static_cast<size_t>(rq->cpu)];
  if (!c.tick_stopped) return;
  c.tick_stopped = false;
  tick_sched_timer_start(rq, tick_next_expiry(rq, k->now()));
  hrtimer_reprogram_if_next(rq, &rq->ex.tick_timer);
  nohz_mask_update(k, rq->cpu, false);
}

// tick_sched_timer(): update_process_times() -> sched_tick(), then re-arm one tick later.
void tick_sched_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  KernelImpl* k = rq->k;
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  trace_irq_handler_entry(rq, kIrqLocalTimer, "local_timer");
  trace_hrtimer_expire_entry(rq, TraceHrtimer::tick_nohz_handler, static_cast<uint64_t>(rq->cpu));
  cpu_charge(rq, k->machine_.costs.tick_handler_ns);
  // tick_sched_do_timer(): a tick while the CPU is idle (ts->inidle) is what the idle loop's
  // got_tick and menu's tick_wakeup read. An idle CPU that kept its tick asks again after it
  // (the idle loop's next round, from irqentry_exit()).
  if (rq->curr->is_idle) k->cpuidle[static_cast<size_t>(rq->cpu)].got_idle_tick = true;
  sched_tick(rq);
  // hrtimer_forward(): the next expiry stays on the grid, however late this one ran.
  sim::Time next = rq->ex.tick_expires + k->cfg_.tick_nsec();
  if (next <= now) next = tick_next_expiry(rq, now);
  tick_sched_timer_start(rq, next);
  trace_hrtimer_expire_exit(rq, TraceHrtimer::tick_nohz_handler, static_cast<uint64_t>(rq->cpu));
  hrtimer_interrupt_tail(rq, now);
  trace_irq_handler_exit(rq, kIrqLocalTimer);
  irqentry_exit(rq);
}

// hrtick(): the fair slice ended (sched_feat(HRTICK)); task_tick(queued = 1) reschedules.
void hrtick_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  trace_irq_handler_entry(rq, kIrqLocalTimer, "local_timer");
  trace_hrtimer_expire_entry(rq, TraceHrtimer::hrtick, static_cast<uint64_t>(rq->cpu));
  update_rq_clock(rq);
  task_struct* curr = rq->curr;
  if (!curr->is_idle) curr->sched_class->task_tick(rq, curr, 1);
  trace_hrtimer_expire_exit(rq, TraceHrtimer::hrtick, static_cast<uint64_t>(rq->cpu));
  hrtimer_interrupt_tail(rq, now);
  trace_irq_handler_exit(rq, kIrqLocalTimer);
  irqentry_exit(rq);
}

}  // namespace kernel
