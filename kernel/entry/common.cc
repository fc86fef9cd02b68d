// Entry and exit paths: kernel/entry/common.c (irqentry_exit_to_user_mode,
// syscall_exit_to_user_mode, exit_to_user_mode_loop) and arch/x86/entry do_syscall_64.
#include "kernel/entry/common.h"

#include "kernel/cpu_exec.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"

namespace kernel {

void irqentry_enter(rq* rq, sim::Time now) {
  rq->k->set_current(rq->curr, rq->cpu);
  cpu_enter_kernel(rq, now);
  cpu_charge(rq, rq->k->machine_.costs.irq_entry_ns);
}

// exit_to_user_mode_loop(): the work mask holds both TIF_NEED_RESCHED and (6.13+)
// TIF_NEED_RESCHED_LAZY; either one makes the task call schedule() here, whatever the
// preemption model. The flags are re-read after each round.
void exit_to_user_mode_loop(rq* rq, bool from_irq) {
  while (tif_need_resched_any(rq->curr)) {
    schedule(rq, /*preempt=*/true);
  }
}

// irqentry_exit(): an idle CPU goes back to its idle loop, which schedules if asked to
// (do_idle() -> schedule_idle()); a task returns to user mode through the work loop.
// A kernel window still in progress (syscall, switch) also ends in the same loop.
void irqentry_exit(rq* rq) {
  cpu_charge(rq, rq->k->machine_.costs.irq_exit_ns);
  if (rq->curr->is_idle) {
    if (tif_need_resched_any(rq->curr)) schedule(rq, /*preempt=*/false);
  } else {
    exit_to_user_mode_loop(rq, /*from_irq=*/true);
  }
  cpu_return_to_user(rq);
}

// do_syscall_64(): entry, the handler (which may block and schedule), then
// syscall_exit_to_user_mode() -> exit_to_user_mode_loop(from_irq = false).
void do_syscall_64(rq* rq, const UserAction& a, sim::Time now) {
  Kernel* k = rq->k;
  task_struct* p = rq->curr;
  k->set_current(p, rq->cpu);
  cpu_enter_kernel(rq, now);
  cpu_charge(rq, k->machine_.costs.syscall_entry_ns);
  p->stats.nr_syscalls++;
  const int64_t ret = invoke_syscall(rq, p, a);
  p->syscall_ret = ret;
  if (p->exec != ExecKind::Dead) p->exec = ExecKind::SyscallRet;
  cpu_charge(rq, k->machine_.costs.syscall_exit_ns);
  if (rq->curr == p && p->__state != TASK_RUNNING) {
    schedule(rq, /*preempt=*/false);  // the task blocked in the handler
  } else if (rq->curr == p) {
    exit_to_user_mode_loop(rq, /*from_irq=*/false);
  }
  cpu_return_to_user(rq);
}

}  // namespace kernel
