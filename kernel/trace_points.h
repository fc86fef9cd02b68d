// The tracepoints at their sites (kernel-private): trace_sched_switch() and the rest, named
// as the kernel's. Each is one predictable branch on KernelImpl's sink pointer (null unless
// a trace was asked for, like a static key left disabled); the record is filled out of line
// in kernel/trace.cc. See kernel/trace.h for the events and their fields.
#pragma once
#include "kernel/kernel_impl.h"
#include "kernel/trace.h"

namespace kernel {

// Out of line: fill a TraceRecord and hand it to the sink (kernel/trace.cc).
void __trace_sched_switch(rq* rq, bool preempt, const task_struct* prev, const task_struct* next);
void __trace_task_event(rq* rq, TraceEvent ev, const task_struct* p, int cpu);
void __trace_sched_migrate_task(KernelImpl* k, const task_struct* p, int dest_cpu);
void __trace_sched_process_fork(rq* rq, const task_struct* parent, const task_struct* child);
void __trace_irq_handler(rq* rq, bool entry, int irq, const char* name);
void __trace_softirq(rq* rq, bool entry, unsigned vec);
void __trace_hrtimer_expire(rq* rq, bool entry, TraceHrtimer fn, uint64_t id);

#define SCHEDLAB_TRACEPOINT(k, call) \
  do {                               \
    if ((k)->trace_sink_) [[unlikely]] call; \
  } while (0)

inline void trace_sched_switch(rq* rq, bool preempt, const task_struct* prev, const task_struct* next) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_sched_switch(rq, preempt, prev, next));
}
// sched_wakeup, at ttwu_do_wakeup(): rq is p's (the CPU it is woken on).
inline void trace_sched_wakeup(rq* rq, const task_struct* p) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_task_event(rq, TraceEvent::sched_wakeup, p, -1));
}
inline void trace_sched_wakeup_new(rq* rq, const task_struct* p) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_task_event(rq, TraceEvent::sched_wakeup_new, p, -1));
}
inline void trace_sched_migrate_task(KernelImpl* k, const task_struct* p, int dest_cpu) {
  SCHEDLAB_TRACEPOINT(k, __trace_sched_migrate_task(k, p, dest_cpu));
}
inline void trace_sched_process_fork(rq* rq, const task_struct* parent, const task_struct* child) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_sched_process_fork(rq, parent, child));
}
inline void trace_sched_process_exit(rq* rq, const task_struct* p) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_task_event(rq, TraceEvent::sched_process_exit, p, -1));
}
inline void trace_irq_handler_entry(rq* rq, int irq, const char* name) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_irq_handler(rq, true, irq, name));
}
inline void trace_irq_handler_exit(rq* rq, int irq) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_irq_handler(rq, false, irq, ""));
}
inline void trace_softirq_entry(rq* rq, unsigned vec) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_softirq(rq, true, vec));
}
inline void trace_softirq_exit(rq* rq, unsigned vec) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_softirq(rq, false, vec));
}
// `id` tells one timer of `fn` from another (the CPU of a per-CPU timer, the pid of a
// sleeper's): the trace's `hrtimer` address is made of both, the same in every run.
inline void trace_hrtimer_expire_entry(rq* rq, TraceHrtimer fn, uint64_t id) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_hrtimer_expire(rq, true, fn, id));
}
inline void trace_hrtimer_expire_exit(rq* rq, TraceHrtimer fn, uint64_t id) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_hrtimer_expire(rq, false, fn, id));
}
// The slice extension's events (schedlab system), for p on rq's CPU.
inline void trace_slice_ext(rq* rq, TraceEvent ev, const task_struct* p) {
  SCHEDLAB_TRACEPOINT(rq->k, __trace_task_event(rq, ev, p, -1));
}

}  // namespace kernel
