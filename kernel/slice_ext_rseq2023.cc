// Peter Zijlstra's rseq prototype ("Re: [POC][RFC][PATCH v2] sched: Extended Scheduler Time
// Slice", Oct 2023): request bit 3 (RSEQ_CS_FLAG_DELAY_RESCHED) in rseq->flags, read and
// cleared by the kernel with copy_from_user/copy_to_user; rseq_delay_resched(),
// rseq_delay_resched_fini() (hrtick 50 us) and rseq_delay_resched_tick().
#include <algorithm>

#include "kernel/kernel.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"

namespace kernel {

bool slice_ext_policy_allows(rq* rq, task_struct* p);

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

bool proto_exit_to_user(rq* rq, task_struct* p) {
  if (p->slice.user_irq && p->slice.granted)
    // hrtick_start() never programs less than 10 us ("timer DoS").
    slice_ext_arm_timer(rq, kernel_clock(rq, rq->k->now()) + std::max<sim::Time>(slice_ext_nsec(rq->k), 10000), p);
  return false;
}

// As the RFC: the grant ends at __schedule(); the hrtick stays armed (HRTICK feature off).
void proto_schedule_prev(rq* rq, task_struct* prev) {
  prev->slice.granted = false;
  if (rq->k->cfg_.feat(__SCHED_FEAT_HRTICK)) rq->k->engine()->cancel(&rq->ex.slice_timer);
}
void proto_syscall_enter(rq*, task_struct*, int) {}

bool proto_sched_yield(rq*, task_struct* p) { return p->slice.granted; }

void proto_timer_fn(rq* rq) {
  task_struct* curr = rq->curr;
  if (curr->slice.granted) {
    curr->thread_flags |= TIF_NEED_RESCHED;
    curr->slice.nr_expired++;
  }
  if (!curr->is_idle) {
    update_rq_clock(rq);
    curr->sched_class->task_tick(rq, curr, 1);
  }
}

}  // namespace

const slice_ext_ops slice_ext_rseq2023_ops = {
    "rseq2023", proto_delay_resched, proto_exit_to_user, proto_schedule_prev,
    proto_syscall_enter, proto_sched_yield, proto_timer_fn,
};

}  // namespace kernel
