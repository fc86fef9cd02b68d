// Time slice extension: selection of the design, the shared timer and policy checks, and the
// "none" stubs. The designs themselves: slice_ext_rfc.cc, slice_ext_rseq2023.cc,
// slice_ext_mainline.cc.
#include "kernel/slice_ext.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/time/hrtimer.h"
#include "kernel/trace_points.h"

namespace kernel {

namespace {
bool none_delay_resched(rq*, task_struct*) { return false; }
bool none_exit_to_user(rq*, task_struct*, bool) { return false; }
void none_schedule_prev(rq*, task_struct*) {}
bool none_syscall_enter(rq*, task_struct*, int) { return false; }
bool none_sched_yield(rq*, task_struct*) { return false; }
void none_timer_fn(rq*) {}
}  // namespace

const slice_ext_ops slice_ext_none_ops = {
    "none", false, 0, 0, 0, nullptr, 0, false, nullptr, 0,
    none_delay_resched, none_exit_to_user, none_schedule_prev,
    none_syscall_enter, none_sched_yield, none_timer_fn,
};

const slice_ext_ops* slice_ext_select(SliceExtAbi abi) {
  // Indexed by SliceExtAbi, which kernel/config.h expands from the same registry.
  static const slice_ext_ops* const kDesigns[] = {
      &slice_ext_none_ops,
#define SLICE_EXT_DESIGN(Enum, name) &slice_ext_##name##_ops,
#include "kernel/slice_ext_designs.h"
#undef SLICE_EXT_DESIGN
  };
  static_assert(std::size(kDesigns) == kNrSliceExtAbi);
  return kDesigns[static_cast<int>(abi)];
}

const slice_ext_ops* slice_ext(const rq* rq) { return rq->k->slice_ops; }
const slice_ext_ops* slice_ext(const KernelImpl* k) { return k->slice_ops; }

std::string slice_ext_check_nsec(const slice_ext_ops* ops, sim::Time nsec) {
  if (nsec == 0 || ops->max_nsec == 0 || (nsec >= ops->min_nsec && nsec <= ops->max_nsec))
    return "";
  return std::string("slice_ext.nsec: ") + ops->name + " bounds the extension to " +
         std::to_string(ops->min_nsec / 1000) + "us.." + std::to_string(ops->max_nsec / 1000) +
         "us (" + ops->nsec_knob + "; got " + std::to_string(nsec) + "ns)";
}

sim::Time slice_ext_nsec(const KernelImpl* k) {
  const sim::Time nsec = k->cfg_.slice_ext.nsec;
  return nsec > 0 ? nsec : k->slice_ops->default_nsec;
}

// The lazy variant (Prakash): while curr holds a grant it will be preempted soon by the
// timer or its own yield, so a remote wakeup sets no NEED_RESCHED and sends no IPI.
bool slice_ext_defer_remote_resched(rq* rq) {
  return rq->k->cfg_.slice_ext.lazy_remote && rq->curr->slice.granted;
}

void slice_ext_arm_timer(rq* rq, sim::Time expires, task_struct* cookie) {
  KernelImpl* k = rq->k;
  const bool at_tick = k->cfg_.slice_ext.tick;
  if (at_tick) {
    // Rostedt 2023: no timer; the grant lasts until the next tick forces the reschedule.
    // The stand-in fires with that tick's interrupt (after it: queued later, same time).
    const sim::Time next = tick_next_expiry(rq, kernel_clock(rq, k->now()));
    const sim::Timer& tick = rq->ex.tick_timer;
    expires = tick.armed && rq->ex.tick_expires == next ? tick.expires : next;
  }
  if (!at_tick) cpu_charge(rq, k->machine_.costs.hrtimer_program_ns);  // no timer to program
  rq->ex.slice_cookie = cookie;
  if (at_tick)
    k->engine()->arm(&rq->ex.slice_timer, expires);  // the tick's interrupt time: no own draw
  else
    hrtimer_start(rq, &rq->ex.slice_timer, std::max(expires, k->now()));
}

void slice_ext_cancel_timer(rq* rq) {
  if (rq->k->cfg_.slice_ext.tick)
    rq->k->engine()->cancel(&rq->ex.slice_timer);
  else
    hrtimer_try_to_cancel(rq, &rq->ex.slice_timer);
}

// The enforcement timer is an interrupt like any other: its handler runs between
// irqentry_enter() and irqentry_exit(), whose exit path then acts on the flags it set.
void slice_ext_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  trace_irq_handler_entry(rq, kIrqLocalTimer, "local_timer");
  trace_hrtimer_expire_entry(rq, TraceHrtimer::slice_ext_timer, static_cast<uint64_t>(rq->cpu));
  slice_ext(rq)->timer_fn(rq);
  trace_hrtimer_expire_exit(rq, TraceHrtimer::slice_ext_timer, static_cast<uint64_t>(rq->cpu));
  if (rq->k->cfg_.slice_ext.tick)
    __hrtimer_run_queues(rq, now);  // a stand-in: the tick's interrupt wrote the device
  else
    hrtimer_interrupt_tail(rq, now);
  trace_irq_handler_exit(rq, kIrqLocalTimer);
  irqentry_exit(rq);
}

bool rseq_user_access(rq* rq, task_struct* p) {
  KernelImpl* k = rq->k;
  cpu_charge(rq, k->machine_.costs.copy_from_user_word_ns);
  const double miss = k->cfg_.slice_ext.rseq_miss;
  if (miss > 0 && k->rng.uniform01() < miss) {
    p->slice.nr_missed++;
    return false;
  }
  return true;
}

// The review's switches, common to all designs (defaults: off, as in the RFC).
bool slice_ext_policy_allows(rq* rq, task_struct* p) {
  const SliceExtConfig& c = rq->k->cfg_.slice_ext;
  // Prateek: only when everything runnable here is fair (rq->nr_running == cfs.h_nr_running).
  if (c.fair_only && (p->sched_class != &fair_sched_class || rq->rt.rt_nr_running > 0)) return false;
  if (c.no_defer_rt && rq->resched_by_rt) return false;
  return true;
}

// taskshrd_delay_resched_fini() / rseq_delay_resched_fini(): IRQs off, returning to user
// from an interrupt, with or without exit work: (re)start the hrtick while the task holds a
// grant. hrtick_start() never programs less than 10 us ("timer DoS").
bool hrtick_delay_resched_fini(rq* rq, task_struct* p, bool /*work*/) {
  if (p->slice.user_irq && p->slice.granted)
    slice_ext_arm_timer(rq, kernel_clock(rq, rq->k->now()) + std::max<sim::Time>(slice_ext_nsec(rq->k), 10000), p);
  return false;
}

// __schedule() clears the grant of the task leaving the CPU. The hrtick is cancelled only by
// hrtick_clear(), which __schedule() calls only with sched_feat(HRTICK) (off by default):
// otherwise it stays armed and later ticks whichever task is current (task_tick(queued=1)).
void hrtick_delay_schedule_prev(rq* rq, task_struct* prev) {
  prev->slice.granted = false;
  if (rq->k->cfg_.feat(__SCHED_FEAT_HRTICK)) slice_ext_cancel_timer(rq);
}

// The RFC and the 2023 prototype clear only TIF_NEED_RESCHED when they grant; a hard request
// stays folded in the per-CPU preempt_count (x86's PREEMPT_NEED_RESCHED). Under full and lazy
// preemption a syscall made inside the grant is preempted at its first preempt_enable() (a
// futex hash-bucket unlock, a runqueue lock), which the model places at its entry: schedule(),
// the handler runs when the task is back. Under none and voluntary the grant survives the
// syscall (cond_resched() and might_fault()'s might_resched() points are not modelled).
// sched_yield() reaches its own schedule() before any preempt_enable().
bool hrtick_delay_syscall_enter(rq* rq, task_struct* p, int nr) {
  const PreemptModel m = rq->k->cfg_.preempt;
  return p->slice.granted && rq->preempt_need_resched && nr != NR_sched_yield &&
         (m == PreemptModel::Full || m == PreemptModel::Lazy);
}

// sched_yield() from a granted task calls schedule() directly, not do_sched_yield().
bool hrtick_delay_sched_yield(rq* rq, task_struct* p) {
  if (p->slice.granted) trace_slice_ext(rq, TraceEvent::slice_ext_yield, p);
  return p->slice.granted;
}

// hrtick(): *_delay_resched_tick() sets NEED_RESCHED on a granted current task, then the
// class's task_tick(queued = 1) runs as for any hrtick.
void hrtick_delay_resched_tick(rq* rq) {
  task_struct* curr = rq->curr;
  if (curr->slice.granted) {
    curr->thread_flags |= TIF_NEED_RESCHED;
    curr->slice.nr_expired++;
    trace_slice_ext(rq, TraceEvent::slice_ext_expire, curr);
  }
  if (!curr->is_idle) {
    update_rq_clock(rq);
    curr->sched_class->task_tick(rq, curr, 1);
  }
}

}  // namespace kernel
