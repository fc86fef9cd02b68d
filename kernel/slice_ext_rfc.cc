// The RFC design (Prakash Sangappa, "[RFC PATCH 0/4] Scheduler time slice extension",
// Nov 2024): the sched_delay word of the thread's struct task_sharedinfo in a pinned page.
// taskshrd_delay_resched(), taskshrd_delay_resched_fini() (hrtick 50 us) and
// taskshrd_delay_resched_tick() as in patches 2-4; the kernel reads the word with a plain
// load (no copy_from_user, no fault).
#include <algorithm>
#include <iterator>

#include "kernel/kernel_impl.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"

namespace kernel {

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

// The RFC's schedstats, as /proc/<pid>/sched prints them; the timer's count and the missed
// hints are the simulator's.
const slice_ext_counter rfc_counters[] = {
    {"nr_preempt_delay_granted", "slice_ext_granted", "extensions granted (kernel)", &slice_ext_task::nr_granted, false},
    {"nr_preempt_delay_denied", "slice_ext_denied", "requests DENIED while granted", &slice_ext_task::nr_denied, false},
    {nullptr, "slice_ext_expired", "grants ended by the timer", &slice_ext_task::nr_expired, false},
    {nullptr, "slice_ext_missed", "hints missed: rseq page not resident", &slice_ext_task::nr_missed, true},
};

}  // namespace

// hrtick 50 us; only task_getshared() is new.
const slice_ext_ops slice_ext_rfc_ops = {
    "rfc", true, 50000, 0, 0, nullptr, SLICE_EXT_SYS_TASK_GETSHARED, false,
    rfc_counters, static_cast<int>(std::size(rfc_counters)),
    rfc_delay_resched, hrtick_delay_resched_fini, hrtick_delay_schedule_prev,
    hrtick_delay_syscall_enter, hrtick_delay_sched_yield, hrtick_delay_resched_tick,
};

}  // namespace kernel
