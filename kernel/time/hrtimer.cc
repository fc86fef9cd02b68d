// hrtimer_start() and the nanosleep timer's handler (kernel/time/hrtimer.c).
#include "kernel/time/hrtimer.h"

#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"

namespace kernel {

void hrtimer_start(rq* rq, sim::Timer* t, sim::Time expires) {
  KernelImpl* k = rq->k;
  // No draw without jitter: a profile without it replays exactly as before the key existed.
  const sim::Time late =
      k->machine_.costs.timer_irq_jitter_ns > 0 ? k->timer_irq_jitter(rq->ex.irq_rng) : 0;
  k->engine()->arm(t, expires + late);
}

void hrtimer_sleep_fn(sim::Timer* t, sim::Time now) {
  task_struct* p = static_cast<task_struct*>(t->ctx);
  rq* rq = p->kern->rq_of(static_cast<int>(t->arg));
  irqentry_enter(rq, now);
  try_to_wake_up(p->kern, p, 0);
  irqentry_exit(rq);
}

}  // namespace kernel
