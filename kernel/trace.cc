// The tracepoints' out-of-line halves (kernel/trace_points.h): each fills a TraceRecord as
// the kernel's TP_fast_assign() fills its entry, and hands it to the sink.
#include <cstring>

#include "kernel/trace_points.h"

namespace kernel {

namespace {

// The comm, pid and prio the kernel's events copy (memcpy of TASK_COMM_LEN, p->pid,
// p->prio); the idle task is swapper/N, pid 0, reported at prio 120 as Linux's is.
void fill_task(TraceTask* t, const task_struct* p) {
  const size_t n = std::min<size_t>(p->comm.size(), sizeof t->comm - 1);
  std::memcpy(t->comm, p->comm.data(), n);
  t->comm[n] = '\0';
  t->pid = p->pid;
  t->tgid = p->is_idle ? 0 : p->tgid;
  t->prio = p->is_idle ? DEFAULT_PRIO : p->prio;
}

// TRACE_FLAG_* of the common_flags byte (kernel/trace/trace.h).
constexpr uint8_t TRACE_FLAG_IRQS_OFF = 0x01, TRACE_FLAG_HARDIRQ = 0x08, TRACE_FLAG_SOFTIRQ = 0x10;

TraceRecord begin(KernelImpl* k, int cpu, TraceEvent ev, uint8_t flags) {
  TraceRecord r;
  r.type = ev;
  r.cpu = cpu;
  r.ts = k->now();
  r.irq_flags = flags;
  fill_task(&r.curr, k->rq_of(cpu)->curr);
  return r;
}

}  // namespace

// sched_switch: prev_state as __trace_sched_switch_state() makes it: TASK_REPORT_MAX for a
// preemption inside the kernel ("R+"), else the task state index (S sleeping, X a dead
// thread, R a task still running: preempted on its way back to user mode, or yielding).
void __trace_sched_switch(rq* rq, bool preempt, const task_struct* prev, const task_struct* next) {
  TraceRecord r = begin(rq->k, rq->cpu, TraceEvent::sched_switch, TRACE_FLAG_IRQS_OFF);
  fill_task(&r.a, prev);
  fill_task(&r.b, next);
  if (preempt)
    r.state = kTraceStatePreempted;
  else if (prev->__state == TASK_DEAD)
    r.state = kTraceStateDead;
  else if (prev->__state != TASK_RUNNING)
    r.state = kTraceStateSleeping;
  rq->k->trace_sink_->record(r);
}

// An event about one task p, recorded on rq's CPU; target_cpu (sched_wakeup*) is task_cpu(p).
void __trace_task_event(rq* rq, TraceEvent ev, const task_struct* p, int) {
  TraceRecord r = begin(rq->k, rq->cpu, ev, 0);
  fill_task(&r.a, p);
  r.dest_cpu = p->cpu;
  rq->k->trace_sink_->record(r);
}

// sched_migrate_task, from set_task_cpu() before p->cpu changes; recorded on the CPU doing
// the move (the waker's, the balancer's) as the kernel's is.
void __trace_sched_migrate_task(KernelImpl* k, const task_struct* p, int dest_cpu) {
  const int cpu = k->current_cpu() >= 0 ? k->current_cpu() : p->cpu;
  TraceRecord r = begin(k, cpu, TraceEvent::sched_migrate_task, 0);
  fill_task(&r.a, p);
  r.orig_cpu = p->cpu;
  r.dest_cpu = dest_cpu;
  k->trace_sink_->record(r);
}

void __trace_sched_process_fork(rq* rq, const task_struct* parent, const task_struct* child) {
  TraceRecord r = begin(rq->k, rq->cpu, TraceEvent::sched_process_fork, 0);
  fill_task(&r.a, parent);
  fill_task(&r.b, child);
  rq->k->trace_sink_->record(r);
}

void __trace_irq_handler(rq* rq, bool entry, int irq, const char* name) {
  TraceRecord r = begin(rq->k, rq->cpu,
                        entry ? TraceEvent::irq_handler_entry : TraceEvent::irq_handler_exit,
                        TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ);
  r.irq = irq;
  r.name = name;
  rq->k->trace_sink_->record(r);
}

void __trace_softirq(rq* rq, bool entry, unsigned vec) {
  TraceRecord r = begin(rq->k, rq->cpu, entry ? TraceEvent::softirq_entry : TraceEvent::softirq_exit,
                        TRACE_FLAG_SOFTIRQ);
  r.vec = vec;
  rq->k->trace_sink_->record(r);
}

void __trace_hrtimer_expire(rq* rq, bool entry, TraceHrtimer fn, uint64_t id) {
  TraceRecord r = begin(rq->k, rq->cpu,
                        entry ? TraceEvent::hrtimer_expire_entry : TraceEvent::hrtimer_expire_exit,
                        TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ);
  r.timer = fn;
  // A direct-map kernel address, 64-byte aligned, made of the timer's kind and id.
  r.hrtimer = 0xffff888100000000ull + (static_cast<uint64_t>(fn) << 28) + (id << 6);
  rq->k->trace_sink_->record(r);
}

// trace_marker: a write by the current task (tracing_mark_write), the span it opens or
// closes. Called from user code, so the current task is the writer.
void Kernel::trace_user_span_slow(const char* name) {
  KernelImpl* k = static_cast<KernelImpl*>(this);
  if (k->current_cpu() < 0) return;
  TraceRecord r = begin(k, k->current_cpu(), name ? TraceEvent::user_span_begin : TraceEvent::user_span_end, 0);
  if (const task_struct* p = k->current_task()) fill_task(&r.curr, p);
  r.name = name ? name : "";
  trace_sink_->record(r);
}

}  // namespace kernel
