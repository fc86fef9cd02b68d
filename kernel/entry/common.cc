// Entry and exit paths: kernel/entry/common.c (irqentry_exit_to_user_mode,
// syscall_exit_to_user_mode, exit_to_user_mode_loop) and arch/x86/entry do_syscall_64.
#include "kernel/entry/common.h"

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/slice_ext.h"
#include "kernel/softirq.h"
#include "kernel/syscalls.h"

namespace kernel {

void irqentry_enter(rq* rq, sim::Time now) {
  rq->k->set_current(rq->curr, rq->cpu);
  // irqentry_enter_from_user_mode(): the interrupt hit user code (rseq event.user_irq).
  if (rq->ex.in_user && now >= rq->ex.user_since) rq->curr->slice.user_irq = true;
  cpu_enter_kernel(rq, now);
  cpu_charge(rq, rq->k->machine_.costs.irq_entry_ns);
  rq->softirq.hardirq++;  // irq_enter_rcu(): HARDIRQ_OFFSET
}

// exit_to_user_mode_loop(): the work mask holds both TIF_NEED_RESCHED and (6.13+)
// TIF_NEED_RESCHED_LAZY; either one makes the task call schedule() here, whatever the
// preemption model. The flags are re-read after each round.
// The time slice extension hooks in here as in 7.0's "entry: Hook up rseq time slice
// extension": schedule() only if the design does not delay it (a grant needs the task to
// have entered by interrupt: p->slice.user_irq); then exit_to_user_mode_prepare() arms the
// enforcement timer, which may ask for one more round.
// A kernel thread (ksoftirqd, a NAPI thread) comes here for its own preemption points, never
// returning to user mode: the interrupt's return to kernel mode (irqentry_exit_cond_resched())
// and preempt_enable() / cond_resched() between its rounds test need_resched(), the hard bit
// alone. Its lazy request waits for the tick to make it hard (sched_tick()).
void exit_to_user_mode_loop(rq* rq, bool /*from_irq*/) {
  const slice_ext_ops* ext = slice_ext(rq);
  for (;;) {
    // exit_to_user_mode_prepare() enters the work loop only with a work bit set: a reschedule
    // request, or TIF_RSEQ (the rseq event of a task scheduled in).
    bool work = false;
    while (tif_need_resched_any(rq->curr) &&
           (!rq->curr->kthread_fn || test_tsk_need_resched(rq->curr))) {
      work = true;
      task_struct* p = rq->curr;
      if (!p->is_idle && ext->delay_resched(rq, p)) {
        p->thread_flags &= ~(TIF_NEED_RESCHED | TIF_NEED_RESCHED_LAZY);
        break;
      }
      schedule(rq, /*preempt=*/true);
    }
    if (rq->curr->is_idle) break;
    // resume_user_mode_work() -> task_work_run(): 6.18+'s throttle_cfs_rq_work() dequeues a
    // task picked from a throttled hierarchy and asks for the reschedule handled above.
    if (rq->curr->sched_throttle_work) {
      throttle_cfs_rq_work(rq, rq->curr);
      if (tif_need_resched_any(rq->curr)) continue;
    }
    work |= rq->curr->slice.sched_switch;
    if (!ext->exit_to_user(rq, rq->curr, work)) break;
  }
  task_struct* p = rq->curr;
  if (p->is_idle) return;
  // rseq event.events = 0: the entry and switch events are consumed on the way out.
  p->slice.user_irq = p->slice.sched_switch = p->slice.ids_changed = false;
  // resume_user_mode_work(): task_work_run() (6.4 .. 6.18: the queued task_mm_cid_work()),
  // then rseq_handle_notify_resume() (the batched series' scan), then the rseq ids.
  if (p->mm_cid.pending) rq->k->mm_cid_ops->resume_user(rq, p);
  if (p->user && p->user->rseq) {
    p->user->rseq->cpu_id = static_cast<uint32_t>(rq->cpu);
    p->user->rseq->mm_cid = rq->k->mm_cid_ops->task_mm_cid(rq, p);  // rseq_update_cpu_node_id()
  }
}

// irqentry_exit(): an idle CPU goes back to its idle loop, which schedules if asked to
// (do_idle() -> schedule_idle()); a task returns to user mode through the work loop.
// A kernel window still in progress (syscall, switch) also ends in the same loop.
// Under full and lazy preemption, an interrupt that ends inside a preemptible kernel section
// with the hard need-resched bit set (irqentry_exit_cond_resched() -> need_resched()) preempts
// it: the rest waits for the task's next turn (cpu_preempt_section()). Elsewhere in the
// kernel, or with only the lazy bit, the switch waits for the section's end as Linux's
// return to user mode does.
void irqentry_exit(rq* rq) {
  cpu_charge(rq, rq->k->machine_.costs.irq_exit_ns);
  irq_exit_softirq(rq);  // irq_exit_rcu(): pending softirqs run (or are handed off) here
  if (rq->k->preemptible_sections) {  // (none in most runs: no task_struct line read)
    const sim::Time now = rq->k->now();
    if (cpu_in_preemptible_section(rq, now) && test_tsk_need_resched(rq->curr)) {
      cpu_preempt_section(rq, now);
      if (rq->k->mm_cid_metrics_) mm_cid_note_scan_preempted(rq, now);
    }
  }
  if (rq->curr->is_idle) {  // back in the idle loop: it schedules, or goes round
    if (flush_polled_ipi(rq) || tif_need_resched_any(rq->curr))
      schedule(rq, /*preempt=*/false);
    else
      do_idle_loop(rq);
  }
  exit_to_user_mode_loop(rq, /*from_irq=*/true);
  cpu_return_to_user(rq);
}

// do_syscall_64(): entry, the handler (which may block and schedule), then
// syscall_exit_to_user_mode() -> exit_to_user_mode_loop(from_irq = false).
void do_syscall_64(rq* rq, const UserAction& a, sim::Time now) {
  KernelImpl* k = rq->k;
  task_struct* p = rq->curr;
  k->set_current(p, rq->cpu);
  cpu_enter_kernel(rq, now);
  cpu_charge(rq, k->machine_.costs.syscall_entry_ns);
  p->stats.nr_syscalls++;
  // Syscall entry work (7.0: a syscall ends a slice extension grant and reschedules at once,
  // when preemption is re-enabled). The handler then runs when the task is back. Nothing
  // else at entry looks at the need-resched bits: one already set (a lazy request, a remote
  // request whose IPI is on its way) is acted on in exit_to_user_mode_loop() after the
  // handler, or by the IPI's interrupt.
  if (slice_ext(rq)->syscall_enter(rq, p, a.nr)) {
    p->exec = ExecKind::SyscallEntry;
    p->pending_syscall = a;
    schedule(rq, /*preempt=*/true, /*sm_preempt=*/true);  // preempt_enable()
    if (rq->curr != p) {
      exit_to_user_mode_loop(rq, false);
      cpu_return_to_user(rq);
      return;
    }
  }
  syscall_body(rq, p, a);
}

// The handler and the syscall exit path, for rq->curr == p.
void syscall_body(rq* rq, task_struct* p, const UserAction& a) {
  KernelImpl* k = rq->k;
  k->set_current(p, rq->cpu);
  if (p->exec == ExecKind::SyscallEntry) p->exec = ExecKind::SyscallRet;  // the handler runs now
  const int64_t ret = invoke_syscall(rq, p, a);
  // A handler that sleeps inside the syscall and goes on when woken (recvmsg() in
  // __skb_wait_for_more_packets()) leaves exec at SyscallEntry: the task has not returned,
  // and the handler runs again when it is back.
  const bool blocked = rq->curr == p && p->__state != TASK_RUNNING;
  if (p->exec != ExecKind::SyscallEntry) {
    p->syscall_ret = ret;
    if (p->exec != ExecKind::Dead) p->exec = ExecKind::SyscallRet;
    // syscall_exit_to_user_mode() runs here, or, for a task that blocked in the handler or
    // gave the CPU up in it (sched_yield()), once it is back on a CPU (__schedule() charges
    // it there). An exit() never returns.
    if (p->exec == ExecKind::SyscallRet) {
      if (blocked || rq->curr != p)
        p->syscall_exit_pending = true;
      else
        cpu_charge(rq, k->machine_.costs.syscall_exit_ns);
    }
  }
  if (blocked) schedule(rq, /*preempt=*/false);  // the task blocked in the handler
  exit_to_user_mode_loop(rq, /*from_irq=*/false);
  cpu_return_to_user(rq);
}

}  // namespace kernel
