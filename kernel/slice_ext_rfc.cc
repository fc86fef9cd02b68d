// The RFC design (Prakash Sangappa, "[RFC PATCH 0/4] Scheduler time slice extension",
// Nov 2024): the sched_delay word of the thread's struct task_sharedinfo in a pinned page.
// taskshrd_delay_resched(), taskshrd_delay_resched_fini() (hrtick 50 us) and
// taskshrd_delay_resched_tick() as in patches 2-4; the kernel reads the word with a plain
// load (no copy_from_user, no fault).
#include <algorithm>

#include "kernel/kernel.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"

namespace kernel {

bool slice_ext_policy_allows(rq* rq, task_struct* p);

namespace {

// taskshrd_delay_resched(): on interrupt return with NEED_RESCHED. A second request while
// a grant runs is DENIED (and not deferred); otherwise REQ becomes GRANTED.
bool rfc_delay_resched(rq* rq, task_struct* p) {
  if (!p->slice.user_irq) return false;  // only on return from an interrupt
  UserWord* w = p->slice.shared;
  if (!w) return false;                  // no shared structure
  if (p->slice.granted) {
    if (w->value == TASK_PREEMPT_DELAY_REQ) {
      w->value = TASK_PREEMPT_DELAY_DENIED;
      p->slice.nr_denied++;
    }
    return false;
  }
  if (w->value != TASK_PREEMPT_DELAY_REQ) return false;
  if (!slice_ext_policy_allows(rq, p)) return false;
  w->value = TASK_PREEMPT_DELAY_GRANTED;
  p->slice.granted = true;
  p->slice.nr_granted++;
  return true;
}

// taskshrd_delay_resched_fini(): IRQs off, returning to user from an interrupt: (re)start
// the hrtick for 50 us while the task holds a grant.
bool rfc_exit_to_user(rq* rq, task_struct* p) {
  if (p->slice.user_irq && p->slice.granted)
    // hrtick_start() never programs less than 10 us ("timer DoS").
    slice_ext_arm_timer(rq, kernel_clock(rq, rq->k->now()) + std::max<sim::Time>(slice_ext_nsec(rq->k), 10000), p);
  return false;
}

// __schedule() clears the grant of the task leaving the CPU. The hrtick is cancelled only
// by hrtick_clear(), which __schedule() calls only with sched_feat(HRTICK) (off by default):
// otherwise it stays armed and later ticks whichever task is current (task_tick(queued=1)).
void rfc_schedule_prev(rq* rq, task_struct* prev) {
  prev->slice.granted = false;
  if (rq->k->cfg_.feat(__SCHED_FEAT_HRTICK)) rq->k->engine()->cancel(&rq->ex.slice_timer);
}

void rfc_syscall_enter(rq*, task_struct*, int) {}

// sched_yield() from a granted task calls schedule() directly, not do_sched_yield().
bool rfc_sched_yield(rq* rq, task_struct* p) { return p->slice.granted; }

// hrtick(): taskshrd_delay_resched_tick() sets NEED_RESCHED on a granted current task,
// then the class's task_tick(queued = 1).
void rfc_timer_fn(rq* rq) {
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

const slice_ext_ops slice_ext_rfc_ops = {
    "rfc", rfc_delay_resched, rfc_exit_to_user, rfc_schedule_prev,
    rfc_syscall_enter, rfc_sched_yield, rfc_timer_fn,
};

}  // namespace kernel
