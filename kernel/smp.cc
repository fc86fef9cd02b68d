// Inter-processor interrupts, mirroring kernel/smp.c and the x86 reschedule/call-function
// vectors: a send costs the sender CPU time, arrives one IPI latency later (and runs once an
// idle target has left its idle state), and pending IPIs to one CPU coalesce.
#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/trace_points.h"

namespace kernel {

// smp_send_reschedule() / smp_call_function_single_async() / the NOHZ kick. An idle
// target whose idle loop polls (cpu_idle_polling(): MWAIT outside an interrupt and the deep
// state; haltpoll's window) is sent no interrupt for a reschedule, a queued wakeup, a NOHZ
// kick or cpu.max's unthrottle: set_nr_if_polling() (resched_curr(),
// call_function_single_prep_ipi()) sets its TIF_NEED_RESCHED, which it notices by a
// cache-line transfer, and it handles the queued work in task context (ipi_timer_fn()).
void smp_send_ipi(KernelImpl* k, int cpu, unsigned bits) {
  rq* target = k->rq_of(cpu);
  const hw::Costs& c = k->machine_.costs;
  const int from = k->current_cpu() >= 0 ? k->current_cpu() : cpu;
  constexpr unsigned kPolled = IPI_RESCHEDULE | IPI_CALL_FUNC | IPI_NOHZ_KICK | IPI_CFSB_CSD;
  const bool polled = !(bits & ~kPolled) && cpu_idle_polling(target, k->now());
  sim::Time when = k->now();
  if (polled) {
    cpuidle_cpu& ci = k->cpuidle[static_cast<size_t>(cpu)];
    if (c.idle_polling && ci.time_start > when) ci.enter_refused = true;  // not in it yet
    when += k->line_transfer_ns(from, cpu);
  } else {
    when += c.ipi_latency_ns;
    if (from != cpu) cpu_charge(k->rq_of(from), c.ipi_send_ns);
  }
  // Coalesced with what is pending: an interrupt if any of it needs one.
  target->ex.ipi_polled = (target->ex.ipi_pending == 0 || target->ex.ipi_polled) && polled;
  target->ex.ipi_pending |= bits;
  sim::Timer* t = &target->ex.ipi_timer;
  if (!t->armed || t->expires > when) k->engine()->arm(t, when);
}

namespace {

// flush_smp_call_function_queue(): the work queued for this CPU by smp_send_ipi(), in
// __flush_smp_call_function_queue()'s order: the asynchronous calls and irq_work first
// (cpu.max's unthrottles, the RT push), then the wakeups (sched_ttwu_pending()); the NOHZ
// kick's balance last (nohz_csd_func() leaves it to SCHED_SOFTIRQ, at the interrupt's exit),
// and only if the CPU is still idle: nohz_csd_func() raises the softirq only for an idle CPU
// (a task woken meanwhile keeps it busy). Linux drops that CPU's own kick flags; the model
// keeps one set for every kick, which stays for the next one.
void flush_smp_call_function_queue(rq* rq, unsigned bits) {
  if (bits & IPI_CFSB_CSD) __cfsb_csd_unthrottle(rq);
  if (bits & IPI_RT_PUSH) rto_push_irq_work_func(rq);
  if (!rq->ex.wake_list.empty()) sched_ttwu_pending(rq);
  if ((bits & IPI_NOHZ_KICK) && available_idle_cpu(rq->k, rq->cpu)) nohz_idle_balance(rq);
}

}  // namespace

// The IPI handler: the queued calls (cpu.max's unthrottles, the RT push), wakeups
// (sched_ttwu_pending), the NOHZ balance kick, and the reschedule vector, which only makes
// the interrupt return path look at the flags.
void ipi_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  const bool polled = rq->ex.ipi_polled && rq->curr->is_idle;
  // An interrupt reaching an idle CPU in its idle state runs once the CPU has left it, as a
  // timer's does; IPIs sent meanwhile come with it. A write noticed by polling wakes an
  // MWAIT state (idle_polling) after that state's exit latency too, haltpoll's software
  // poll at once (no state to leave). One set before the state was entered kept the CPU
  // from entering it.
  if (polled && rq->k->machine_.costs.idle_polling) cpuidle_polled_before_entry(rq, now);
  if (cpu_idle_exit_defer(rq, t, now)) return;
  if (polled) {
    // do_idle(), out of its polling loop, since set_nr_if_polling() set need_resched().
    do_idle_schedule(rq, now);
    return;
  }
  const unsigned bits = rq->ex.ipi_pending;
  rq->ex.ipi_pending = 0;
  rq->ex.ipi_polled = false;
  irqentry_enter(rq, now);
  // scheduler_ipi() -> preempt_fold_need_resched(): a hard request set from afar is folded
  // into this CPU's preempt_count.
  if ((bits & IPI_RESCHEDULE) && (rq->curr->thread_flags & TIF_NEED_RESCHED))
    rq->preempt_need_resched = true;
  // The call-function vector when anything was queued on this CPU's call_single_queue
  // (wakeups, the NOHZ kick's csd, the RT push's irq_work, cpu.max's unthrottles), else the
  // reschedule one.
  constexpr unsigned kQueued = IPI_CALL_FUNC | IPI_NOHZ_KICK | IPI_RT_PUSH | IPI_CFSB_CSD;
  const int irq =
      rq->ex.wake_list.empty() && !(bits & kQueued) ? kIrqReschedule : kIrqCallFunction;
  trace_irq_handler_entry(rq, irq, irq == kIrqReschedule ? "reschedule" : "call_function");
  flush_smp_call_function_queue(rq, bits);
  // The stopper thread (stop class, above RT) was woken: it preempts whatever runs here at
  // this interrupt's return, like a higher-class wakeup.
  if ((bits & IPI_CPU_STOP) && rq->active_balance) {
    rq->resched_by_rt = true;
    resched_curr(rq);
  }
  trace_irq_handler_exit(rq, irq);
  irqentry_exit(rq);
}

// do_idle() leaving its loop with polled work queued (set_nr_if_polling() set the flag as it
// queued it), noticed by polling (ipi_timer_fn()) or after an interrupt that woke the CPU:
// flush_smp_call_function_queue() runs that work before schedule_idle(), so a polled wakeup
// whose notice was still due (an MWAIT exit under way) joins this pick, and no interrupt
// comes for it. True if it ran any.
void do_idle_schedule(rq* rq, sim::Time now) {
  rq->k->set_current(rq->curr, rq->cpu);
  cpu_enter_kernel(rq, now);
  flush_polled_ipi(rq);
  schedule(rq, /*preempt=*/false);
  exit_to_user_mode_loop(rq, /*from_irq=*/false);
  cpu_return_to_user(rq);
}

bool flush_polled_ipi(rq* rq) {
  if (!rq->ex.ipi_polled || rq->ex.ipi_pending == 0) return false;
  const unsigned bits = rq->ex.ipi_pending;
  rq->ex.ipi_pending = 0;
  rq->ex.ipi_polled = false;
  rq->k->engine()->cancel(&rq->ex.ipi_timer);
  flush_smp_call_function_queue(rq, bits);
  return true;
}

}  // namespace kernel
