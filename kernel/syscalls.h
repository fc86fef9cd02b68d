// The syscall table (arch/x86/entry/syscall_64.c): handlers indexed by number. Later
// proposals register their syscalls here (task_getshared, rseq, prctl, rseq_slice_yield).
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

// A handler runs at the syscall's entry time on rq's CPU for p == rq->curr; it returns the
// value (>= 0) or -errno. It may block p (set __state and leave it to the caller) or
// call schedule() itself (sched_yield).
using syscall_fn = int64_t (*)(rq* rq, task_struct* p, const UserAction& a);

int64_t invoke_syscall(rq* rq, task_struct* p, const UserAction& a);
// Installs `fn` for `nr`; REQUIRES 0 <= nr < NR_syscalls.
void register_syscall(int nr, syscall_fn fn);
// do_exit(): the task leaves for good.
void do_exit(rq* rq, task_struct* p);

}  // namespace kernel
