// Inter-processor interrupts, mirroring kernel/smp.c and the x86 reschedule/call-function
// vectors: a send costs the sender CPU time, arrives one IPI latency later (plus the idle
// exit latency on an idle target), and pending IPIs to one CPU coalesce.
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"

namespace kernel {

// smp_send_reschedule() / smp_call_function_single_async() / the NOHZ kick. An idle
// target whose idle loop polls (MWAIT) notices the flag by a cache-line transfer instead.
void smp_send_ipi(KernelImpl* k, int cpu, unsigned bits) {
  rq* target = k->rq_of(cpu);
  const hw::Costs& c = k->machine_.costs;
  const int from = k->current_cpu() >= 0 ? k->current_cpu() : cpu;
  const bool idle = target->curr->is_idle;
  sim::Time latency;
  if (idle && c.idle_polling && bits == IPI_RESCHEDULE) {
    latency = k->line_transfer_ns(from, cpu) + c.idle_exit_ns;
  } else {
    latency = c.ipi_latency_ns + (idle ? c.idle_exit_ns : 0);
    if (from != cpu) cpu_charge(k->rq_of(from), c.ipi_send_ns);
  }
  target->ex.ipi_pending |= bits;
  const sim::Time when = k->now() + latency;
  sim::Timer* t = &target->ex.ipi_timer;
  if (!t->armed || t->expires > when) k->engine()->arm(t, when);
}

// The IPI handler: queued wakeups (sched_ttwu_pending), the NOHZ balance kick, and the
// reschedule vector, which only makes the interrupt return path look at the flags.
void ipi_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  const unsigned bits = rq->ex.ipi_pending;
  rq->ex.ipi_pending = 0;
  irqentry_enter(rq, now);
  if (!rq->ex.wake_list.empty()) sched_ttwu_pending(rq);
  if (bits & IPI_NOHZ_KICK) nohz_idle_balance(rq);
  if (bits & IPI_RT_PUSH) rto_push_irq_work_func(rq);
  // The stopper thread (stop class, above RT) was woken: it preempts whatever runs here at
  // this interrupt's return, like a higher-class wakeup.
  if ((bits & IPI_CPU_STOP) && rq->active_balance) {
    rq->resched_by_rt = true;
    resched_curr(rq);
  }
  irqentry_exit(rq);
}

}  // namespace kernel
