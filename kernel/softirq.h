// Softirqs, mirroring kernel/softirq.c and include/linux/bottom_half.h (6.12 .. 7.0): raising,
// processing at hardirq exit, in local_bh_enable() and in the per-CPU ksoftirqd/N thread,
// with handle_softirqs()' MAX_SOFTIRQ_TIME / MAX_SOFTIRQ_RESTART / need_resched bounds. The
// variants (mainline or the latency_sensi_flag patch; !PREEMPT_RT or PREEMPT_RT) are one ops
// table, chosen once from KernelConfig::softirq. Per-CPU state: rq->softirq (sched.h).
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

extern const char* const softirq_to_name[NR_SOFTIRQS];
inline constexpr int MAX_SOFTIRQ_RESTART = 10;
// MAX_SOFTIRQ_TIME = msecs_to_jiffies(2): 1 jiffy at HZ 100, 250, 300; 2 at HZ 1000.
u64 max_softirq_time_jiffies(int hz);

// The variant points of the kernel: what hardirq exit and local_bh_enable() do with pending
// softirqs. Selected by softirq_select(); read through rq->k->softirq_ops.
struct softirq_ops {
  const char* name;
  // invoke_softirq(): hardirq exit, something pending, not nested in another interrupt.
  void (*invoke_softirq)(rq* rq);
  // __local_bh_enable_ip() of the outermost local_bh_enable() of task p (rq->curr).
  void (*local_bh_enable)(rq* rq, task_struct* p);
};
const softirq_ops* softirq_select(const SoftirqConfig& cfg);

// in_interrupt() on rq's CPU now: in a hardirq, serving softirqs, or BHs disabled.
bool in_interrupt(const rq* rq);
// raise_softirq_irqoff(): queue `work_ns` of handler work on vector nr and mark it pending;
// outside interrupt context wake ksoftirqd (should_wake_ksoftirqd()).
void raise_softirq_irqoff(rq* rq, int nr, sim::Time work_ns);
// The most handler work vector nr does per pass (0 = all it has); the rest is raised again.
void softirq_set_budget(rq* rq, int nr, sim::Time budget_ns);
// wakeup_softirqd(): wake this CPU's ksoftirqd if it exists.
void wakeup_softirqd(rq* rq);
// __irq_exit_rcu(): leave hardirq context and run or hand off pending softirqs (the rest,
// out of line, only when something is pending).
void irq_exit_softirq_pending(rq* rq);
inline void irq_exit_softirq(rq* rq) {
  rq->softirq.hardirq--;
  if (rq->softirq.pending) irq_exit_softirq_pending(rq);
}
// local_bh_disable() / local_bh_enable() around a kernel path of rq->curr.
void local_bh_disable(rq* rq);
void local_bh_enable(rq* rq);
// A device interrupt on rq's CPU at `now` whose handler (handler_ns) raises vector nr with
// work_ns of work (for NIC models and tests).
void softirq_device_irq(rq* rq, sim::Time now, int nr, sim::Time work_ns, sim::Time handler_ns);
// Creates the per-CPU ksoftirqd/N threads (spawn_ksoftirqd()): SCHED_NORMAL, nice 0, bound.
void spawn_ksoftirqd(KernelImpl* k);
void register_softirq_syscalls();  // sendto

}  // namespace kernel
