// Peter Zijlstra's rseq prototype ("Re: [POC][RFC][PATCH v2] sched: Extended Scheduler Time
// Slice", Oct 2023): request bit 3 (RSEQ_CS_FLAG_DELAY_RESCHED) in rseq->flags, read and
// cleared by the kernel with copy_from_user/copy_to_user; rseq_delay_resched(),
// rseq_delay_resched_fini() (hrtick 50 us) and rseq_delay_resched_tick().
#include <algorithm>

#include "kernel/kernel.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"

namespace kernel {

namespace {

// rseq_delay_resched(): not twice before the next __schedule(); the bit must be set; the
// kernel grants by clearing it. A fault (page not resident) means no extension.
bool proto_delay_resched(rq* rq, task_struct* p) {
  if (!p->slice.user_irq) return false;
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  if (!rs) return false;
  if (p->slice.granted) return false;
  if (!rseq_user_access(rq, p)) return false;  // copy_from_user(&flags)
  if (!(rs->flags & RSEQ_CS_FLAG_DELAY_RESCHED)) return false;
  if (!slice_ext_policy_allows(rq, p)) return false;
  if (!rseq_user_access(rq, p)) return false;  // copy_to_user(&flags)
  rs->flags &= ~RSEQ_CS_FLAG_DELAY_RESCHED;
  p->slice.granted = true;
  p->slice.nr_granted++;
  return true;
}

}  // namespace

const slice_ext_ops slice_ext_rseq2023_ops = {
    "rseq2023", proto_delay_resched, hrtick_delay_resched_fini, hrtick_delay_schedule_prev,
    hrtick_delay_syscall_enter, hrtick_delay_sched_yield, hrtick_delay_resched_tick,
};

}  // namespace kernel
