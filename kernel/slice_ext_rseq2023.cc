// Peter Zijlstra's rseq prototype ("Re: [POC][RFC][PATCH v2] sched: Extended Scheduler Time
// Slice", Oct 2023): request bit 3 (RSEQ_CS_FLAG_DELAY_RESCHED) in rseq->flags, read and
// cleared by the kernel with copy_from_user/copy_to_user; rseq_delay_resched(),
// rseq_delay_resched_fini() (hrtick 50 us) and rseq_delay_resched_tick().
#include <algorithm>
#include <iterator>

#include "kernel/kernel_impl.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"
#include "kernel/trace_points.h"

namespace kernel {

namespace {

// rseq_delay_resched(): not twice before the next __schedule(); the bit must be set; the
// kernel grants by clearing it. A page not resident (slice_ext.rseq_miss) means no extension
// here, as with a _nofault read; the prototype's copy_from_user() would fault it in.
bool proto_delay_resched(rq* rq, task_struct* p) {
  if (!p->slice.user_irq) return false;
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  if (!rs) return false;
  if (p->slice.granted) return false;
  if (!rseq_user_access(rq, p)) return false;  // copy_from_user(&flags)
  if (!(rs->flags & RSEQ_CS_FLAG_DELAY_RESCHED)) return false;
  trace_slice_ext(rq, TraceEvent::slice_ext_request, p);
  if (!slice_ext_policy_allows(rq, p)) return false;
  if (!rseq_user_access(rq, p)) return false;  // copy_to_user(&flags)
  rs->flags &= ~RSEQ_CS_FLAG_DELAY_RESCHED;
  p->slice.granted = true;
  p->slice.nr_granted++;
  trace_slice_ext(rq, TraceEvent::slice_ext_grant, p);
  return true;
}

// Counted as 7.0 counts them (debugfs rseq/stats); the prototype has no syscall to end a
// grant, so the last three stay 0 and are not summed.
const slice_ext_counter proto_counters[] = {
    {"slice_ext.granted", "slice_ext_granted", "extensions granted (kernel)", &slice_ext_task::nr_granted, false},
    {"slice_ext.expired", "slice_ext_expired", "grants ended by the timer", &slice_ext_task::nr_expired, false},
    {"slice_ext.revoked", nullptr, nullptr, &slice_ext_task::nr_revoked, false},
    {"slice_ext.yielded", nullptr, nullptr, &slice_ext_task::nr_yielded, false},
    {"slice_ext.aborted", nullptr, nullptr, &slice_ext_task::nr_aborted, false},
    {"slice_ext.missed", "slice_ext_missed", "hints missed: rseq page not resident", &slice_ext_task::nr_missed, true},
};

}  // namespace

// hrtick 50 us; no new syscalls (the request is a bit in the registered rseq area).
const slice_ext_ops slice_ext_rseq2023_ops = {
    "rseq2023", true, 50000, 0, 0, nullptr, 0, false,
    proto_counters, static_cast<int>(std::size(proto_counters)),
    proto_delay_resched, hrtick_delay_resched_fini, hrtick_delay_schedule_prev,
    hrtick_delay_syscall_enter, hrtick_delay_sched_yield, hrtick_delay_resched_tick,
};

}  // namespace kernel
