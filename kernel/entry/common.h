// KernelImpl entry and exit, mirroring kernel/entry/common.c (generic entry, used by x86):
// interrupt entry/exit and the exit-to-user work loop, the only place user code is
// preempted; and the syscall path. Later proposals hook exit_to_user_mode_loop().
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

// An interrupt arrives on rq's CPU at `now` (the simulated hardware runs handlers at once;
// their cost delays what the CPU does next).
void irqentry_enter(rq* rq, sim::Time now);
// Interrupt exit: to the idle loop, or through irqentry_exit_to_user_mode().
void irqentry_exit(rq* rq);
// The work loop run before returning to user mode: while a need-resched bit is set,
// schedule(). `from_irq`: returning from an interrupt (vs. a syscall).
void exit_to_user_mode_loop(rq* rq, bool from_irq);
// Runs a syscall for rq->curr at `now`, then returns to user mode.
void do_syscall_64(rq* rq, const UserAction& a, sim::Time now);
// The handler and exit of a syscall whose entry work already ran (the task was rescheduled
// at entry and is current again).
void syscall_body(rq* rq, task_struct* p, const UserAction& a);

}  // namespace kernel
