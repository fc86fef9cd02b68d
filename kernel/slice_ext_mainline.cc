// Linux 7.0 rseq time slice extension (Thomas Gleixner, merged 2026-02): slice_ctrl
// request/granted bytes in struct rseq, rseq_grant_slice_extension() at interrupt return,
// the per-CPU slice timer armed last on exit (rseq_arm_slice_extension_timer), syscall entry work that
// ends a grant (yield or abort), reset on reschedule. include/linux/rseq_entry.h,
// kernel/rseq.c, kernel/entry/common.c of v7.0; transitions T3..T11 as docs/sources.md
// lists them.
#include <iterator>

#include "kernel/kernel_impl.h"
#include "kernel/cpu_exec.h"
#include "kernel/slice_ext.h"
#include "kernel/trace_points.h"

namespace kernel {

bool slice_ext_policy_allows(rq* rq, task_struct* p);

namespace {

// rseq_slice_clear_grant(): G <- 0, counted as a revocation.
void clear_grant(task_struct* p) {
  if (!p->slice.granted) return;
  p->slice.granted = false;
  p->slice.nr_revoked++;
  trace_slice_ext(p->kern->rq_of(p->cpu), TraceEvent::slice_ext_revoke, p);
}

// rseq_grant_slice_extension(work_pending). Deny bits modelled: a pending rseq event
// (the task was scheduled out: TIF_RSEQ), and under PREEMPT_RT a hard TIF_NEED_RESCHED
// (there TIF_SLICE_EXT_SCHED, the bits an extension may defer, is the lazy bit alone). Order
// of checks as in 7.0: the word is zeroed whenever work is pending or a grant runs, before
// the request byte is read.
bool mainline_delay_resched(rq* rq, task_struct* p) {
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  if (!rs) return false;
  if (!((p->slice.enabled && p->slice.user_irq) || p->slice.granted)) return false;
  const bool work_pending = p->slice.sched_switch || (rq->k->cfg_.softirq.preempt_rt &&
                                                      (p->thread_flags & TIF_NEED_RESCHED));
  if (work_pending || p->slice.granted) {
    // T5 (deny: the request is lost) / T6 (revoke): word <- 0, then schedule().
    if (rseq_user_access(rq, p)) rs->slice_request = rs->slice_granted = 0;
    clear_grant(p);
    return false;
  }
  if (!rseq_user_access(rq, p)) return false;  // read slice_ctrl (one 32-bit access)
  if (!rs->slice_request) return false;         // T4
  trace_slice_ext(rq, TraceEvent::slice_ext_request, p);
  if (!slice_ext_policy_allows(rq, p)) return false;
  // T3: grant. request <- 0, granted <- 1; the deadline runs from now.
  rs->slice_request = 0;
  rs->slice_granted = 1;
  p->slice.granted = true;
  // clear_tsk_need_resched() (by the caller's loop) and clear_preempt_need_resched(): unlike
  // the RFC and the 2023 prototype, no folded request is left to preempt a syscall.
  rq->preempt_need_resched = false;
  // Sampled where the grant is made: after the interrupt's entry and handler work.
  p->slice.expires = kernel_clock(rq, rq->k->now()) + slice_ext_nsec(rq->k);
  p->slice.nr_granted++;
  trace_slice_ext(rq, TraceEvent::slice_ext_grant, p);
  return true;
}

// rseq_exit_to_user_mode_restart(), at the end of each round of exit_to_user_mode_loop():
// T11 (the rseq event: word <- 0, grant revoked), then T7 (arm the per-CPU timer at
// `expires`, or reschedule if it already passed). The loop runs only when exit work is
// pending (the reschedule that was granted, TIF_RSEQ): an interrupt return during a grant
// with nothing to do leaves the timer as armed.
bool mainline_exit_to_user(rq* rq, task_struct* p, bool work) {
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  if (!rs || !work) return false;
  if (p->slice.sched_switch) {
    p->slice.sched_switch = false;
    // rseq_exit_user_update(): the same user access updates the IDs; slice_ctrl is zeroed
    // only for a v2 registration (rseq_slice_clear_user() under rseq_v2(), 7.0.10+).
    if (rseq_user_access(rq, p) && p->slice.rseq_v2) rs->slice_request = rs->slice_granted = 0;
    clear_grant(p);
  }
  if (!p->slice.granted) return false;
  if (p->slice.expires < kernel_clock(rq, rq->k->now())) {
    p->thread_flags |= TIF_NEED_RESCHED;  // the loop runs again and revokes (T6)
    return true;
  }
  slice_ext_arm_timer(rq, p->slice.expires, p);
  p->slice.syscall_work = true;
  return false;
}

// Being scheduled out sets the rseq event (core.cc, on every switch); the slice timer is not
// cancelled: its callback checks the cookie.
void mainline_schedule_prev(rq*, task_struct*) {}

// T9: a syscall while granted ends the grant at entry. NEED_RESCHED is set unless the task
// was already scheduled out, so the CPU is given up right here; rseq_slice_yield counts as
// yielded, any other syscall as aborted (allowed since V5).
bool mainline_syscall_enter(rq* rq, task_struct* p, int nr) {
  if (!p->slice.syscall_work) return false;
  p->slice.syscall_work = false;
  if (!p->slice.granted) return false;  // raced: already revoked
  if (rq->ex.slice_cookie == p) {
    slice_ext_cancel_timer(rq);  // hrtimer_try_to_cancel()
    rq->ex.slice_cookie = nullptr;
  }
  const bool resched = !p->slice.sched_switch;
  if (resched) {
    p->thread_flags |= TIF_NEED_RESCHED;
    if (nr == NR_rseq_slice_yield) {
      p->slice.yielded = true;
      p->slice.nr_yielded++;
      trace_slice_ext(rq, TraceEvent::slice_ext_yield, p);
    } else {
      p->slice.nr_aborted++;
      trace_slice_ext(rq, TraceEvent::slice_ext_revoke, p);
    }
  }
  p->slice.granted = false;
  rseq_area* rs = p->user->rseq;
  if (rseq_user_access(rq, p)) rs->slice_request = rs->slice_granted = 0;
  return resched;
}

bool mainline_sched_yield(rq*, task_struct*) { return false; }

// T8: the timer fires; only for the task it was armed for, still granted.
void mainline_timer_fn(rq* rq) {
  task_struct* curr = rq->curr;
  if (rq->ex.slice_cookie != curr || !curr->slice.granted) return;  // stale (T8')
  curr->slice.nr_expired++;
  trace_slice_ext(rq, TraceEvent::slice_ext_expire, curr);
  curr->thread_flags |= TIF_NEED_RESCHED;
}

// debugfs rseq/stats (per-CPU sums), kept per task here.
const slice_ext_counter mainline_counters[] = {
    {"slice_ext.granted", "slice_ext_granted", "extensions granted (kernel)", &slice_ext_task::nr_granted, false},
    {"slice_ext.expired", "slice_ext_expired", "grants ended by the timer", &slice_ext_task::nr_expired, false},
    {"slice_ext.revoked", "slice_ext_revoked", "grants revoked (further reschedule, reschedule)", &slice_ext_task::nr_revoked, false},
    {"slice_ext.yielded", "slice_ext_yielded", "grants ended by rseq_slice_yield()", &slice_ext_task::nr_yielded, false},
    {"slice_ext.aborted", "slice_ext_aborted", "grants ended by another syscall", &slice_ext_task::nr_aborted, false},
    {"slice_ext.missed", "slice_ext_missed", "hints missed: rseq page not resident", &slice_ext_task::nr_missed, true},
};

}  // namespace

// rseq_slice_ext_nsec: 5 us by default, debugfs accepts 5..50 us (ERANGE outside).
const slice_ext_ops slice_ext_mainline_ops = {
    "mainline", true, 5000, 5000, 50000, "debugfs rseq/slice_ext_nsec",
    SLICE_EXT_SYS_PRCTL | SLICE_EXT_SYS_RSEQ_SLICE_YIELD, true,
    mainline_counters, static_cast<int>(std::size(mainline_counters)),
    mainline_delay_resched, mainline_exit_to_user, mainline_schedule_prev,
    mainline_syscall_enter, mainline_sched_yield, mainline_timer_fn,
};

}  // namespace kernel
