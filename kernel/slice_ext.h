// Scheduler time slice extension: a task holding a user-space lock asks to be preempted a
// little later. One operations table per design, selected once from the configuration:
//   rfc       - Prakash Sangappa's RFC, task_getshared() shared page (Nov 2024), on hrtick
//   rseq2023  - Peter Zijlstra's rseq prototype, request bit 3 in rseq->flags (Oct 2023)
//   mainline  - Linux 7.0 rseq slice extension (slice_ctrl, prctl, rseq_slice_yield)
//   none      - stubs that give the no-op answers
// The core calls these at the same seams the patches touch (see each hook's callers).
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

// One statistics counter of a design: where it lives in slice_ext_task, its name in
// /proc/<pid>/sched (nullptr: not per task) and as a summed run metric (nullptr: none).
struct slice_ext_counter {
  const char* proc_name;
  const char* metric_name;
  const char* help;
  u64 slice_ext_task::*member;
  bool only_with_rseq_miss;  // the metric exists only when rseq pages can be missing
};

// Syscalls a design provides (sys_task_getshared() and friends return -ENOSYS otherwise).
enum : unsigned {
  SLICE_EXT_SYS_TASK_GETSHARED = 1u << 0,  // RFC: task_getshared(TASK_SHAREDINFO)
  SLICE_EXT_SYS_PRCTL = 1u << 1,           // 7.0: prctl(PR_RSEQ_SLICE_EXTENSION, SET)
  SLICE_EXT_SYS_RSEQ_SLICE_YIELD = 1u << 2,  // 7.0: rseq_slice_yield()
};

struct slice_ext_ops {
  const char* name;
  // false only for "none" (CONFIG off): nothing to report, no requests to make.
  bool configured;
  // Grant length when slice_ext.nsec is 0, and the bounds the kernel accepts for it
  // (max_nsec 0: unbounded); nsec_knob names where the kernel takes it.
  sim::Time default_nsec, min_nsec, max_nsec;
  const char* nsec_knob;
  unsigned syscalls;  // SLICE_EXT_SYS_*
  // The request lives in struct rseq's slice_ctrl (7.0): sys_rseq() writes it and advertises
  // RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE only for a v2 registration (rseq_reset()).
  bool rseq_slice_ctrl;
  // Statistics counters in the order they are reported; nr_counters entries.
  const slice_ext_counter* counters;
  int nr_counters;
  // exit_to_user_mode_loop(), a need-resched bit set: true = return to user space without
  // schedule() (the caller then clears both bits). Called on every return path; a design
  // checks itself whether the task entered by interrupt (p->slice.user_irq).
  bool (*delay_resched)(rq* rq, task_struct* p);
  // exit_to_user_mode_prepare(), after the loop with IRQs off: arm the enforcement timer.
  // `work`: exit work was pending, so 7.0's exit_to_user_mode_loop() ran (rseq processing and
  // the timer are inside it; a plain interrupt return skips both). Returns true if it set
  // NEED_RESCHED, so the loop must run again (7.0: deadline passed).
  bool (*exit_to_user)(rq* rq, task_struct* p, bool work);
  // __schedule(): prev leaves the CPU.
  void (*schedule_prev)(rq* rq, task_struct* prev);
  // Syscall entry work, before the handler (7.0: a syscall ends a grant). Returns true if it
  // set NEED_RESCHED, which the entry path then acts on before the handler runs.
  bool (*syscall_enter)(rq* rq, task_struct* p, int nr);
  // sys_sched_yield(): true if the design handled it (a granted task calls schedule()).
  bool (*sched_yield)(rq* rq, task_struct* p);
  // The enforcement timer (hrtick or 7.0's per-CPU slice timer) fired on rq's CPU.
  void (*timer_fn)(rq* rq);
};

// One table per design of kernel/slice_ext_designs.h, in kernel/slice_ext_<name>.cc.
#define SLICE_EXT_DESIGN(Enum, name) extern const slice_ext_ops slice_ext_##name##_ops;
#include "kernel/slice_ext_designs.h"
#undef SLICE_EXT_DESIGN
extern const slice_ext_ops slice_ext_none_ops;      // slice_ext.cc

// The design's table (abi < kNrSliceExtAbi); its `name` is abi's name.
const slice_ext_ops* slice_ext_select(SliceExtAbi abi);

// Seams used by core.cc / entry/common.cc / syscalls.cc (one call each).
const slice_ext_ops* slice_ext(const rq* rq);
const slice_ext_ops* slice_ext(const KernelImpl* k);
// "" or the error for slice_ext.nsec outside the design's bounds.
std::string slice_ext_check_nsec(const slice_ext_ops* ops, sim::Time nsec);
bool slice_ext_defer_remote_resched(rq* rq);
void slice_ext_timer_fn(sim::Timer* t, sim::Time now);
// Arms this rq's enforcement timer at absolute `expires` (costs an hrtimer programming).
void slice_ext_arm_timer(rq* rq, sim::Time expires, task_struct* cookie);
// Cancels it (hrtimer_try_to_cancel(): a write when it is the CPU's next timer). With
// slice_ext.tick there is no timer, only the stand-in of the tick's interrupt: no write.
void slice_ext_cancel_timer(rq* rq);
sim::Time slice_ext_nsec(const KernelImpl* k);
// copy_from_user / copy_to_user of the rseq area: charges the cost; false if the page is
// not resident (slice_ext.rseq_miss): the hint is missed, as a _nofault read misses it
// (Prakash's rseq-based series, 2025). The 2023 prototype's copy_from_user() runs with
// interrupts enabled and would fault the page in instead; docs/slice-extension.md says so.
bool rseq_user_access(rq* rq, task_struct* p);

// The hrtick-based skeleton the RFC and the 2023 prototype share (PeterZ's prototype, reused
// by the RFC): *_delay_resched_fini() (re)arms the hrtick at every interrupt return while a
// grant runs, __schedule() ends the grant, a granted sched_yield() calls schedule()
// directly, and hrtick() sets NEED_RESCHED on a granted current task then ticks it.
bool hrtick_delay_resched_fini(rq* rq, task_struct* p, bool work);
void hrtick_delay_schedule_prev(rq* rq, task_struct* prev);
bool hrtick_delay_syscall_enter(rq* rq, task_struct* p, int nr);
bool hrtick_delay_sched_yield(rq* rq, task_struct* p);
void hrtick_delay_resched_tick(rq* rq);
bool slice_ext_policy_allows(rq* rq, task_struct* p);

// context_switch(): t was scheduled in. rseq work (event.sched_switch, TIF_RSEQ) before it
// returns to user: in 7.0's optimized mode only if it had entered the kernel by interrupt or
// its CPU changed; for a legacy registration on 7.0.10+ after every switch.
void rseq_sched_switch_event(task_struct* t);

// glibc registers the thread's rseq area before its code runs (sys_rseq): flags and
// slice_ctrl are reset; 7.0 advertises RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE.
void rseq_register_at_start(rq* rq, task_struct* p);

// task_shared (RFC): frees p's slot (thread exit, exec).
void task_shared_release(task_struct* p);

}  // namespace kernel
