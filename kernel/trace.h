// The kernel's tracepoints, as the layers above see them: a TraceSink receives one
// TraceRecord per event, with the fields of the kernel's own tracepoints
// (include/trace/events/sched.h, irq.h, timer.h) already filled in, so a trace writer
// never reads task_struct. Kernel::set_trace_sink() installs one; with none installed
// every tracepoint is a single not-taken branch on a null pointer (kernel/trace_points.h).
#pragma once
#include <cstdint>

namespace kernel {

// What the kernel's trace events carry of a task (TASK_COMM_LEN = 16).
struct TraceTask {
  char comm[16] = {};
  int pid = 0;
  int tgid = 0;
  int prio = 120;  // p->prio as the tracepoints print it (0..139)
};

enum class TraceEvent : uint8_t {
  // sched
  sched_switch,        // a = prev, b = next, state = prev_state (__trace_sched_switch_state)
  sched_wakeup,        // a = p, target_cpu
  sched_wakeup_new,    // a = p, target_cpu
  sched_migrate_task,  // a = p, orig_cpu, dest_cpu
  sched_process_fork,  // a = parent, b = child
  sched_process_exit,  // a = p
  // irq
  irq_handler_entry,  // irq, name
  irq_handler_exit,   // irq, ret = 1 (handled)
  softirq_entry,      // vec
  softirq_exit,       // vec
  // timer
  hrtimer_expire_entry,  // hrtimer, function, now
  hrtimer_expire_exit,   // hrtimer
  // The time-slice extension (no tracepoints in 7.0; the "schedlab" system), a = the task.
  slice_ext_request,  // the kernel read a set request at interrupt return
  slice_ext_grant,    // granted: the reschedule is deferred until `expires`
  slice_ext_yield,    // the granted task gave the CPU back (rseq_slice_yield / sched_yield)
  slice_ext_revoke,   // the grant was revoked (rescheduled, or aborted by a syscall)
  slice_ext_expire,   // the grant's timer fired with the task still granted
  // User space (trace_marker): a span of the current task begins (name) or ends.
  user_span_begin,
  user_span_end,
  nr_events
};

// Task states as sched_switch reports them (TASK_REPORT bits; TASK_REPORT_MAX = preempted).
inline constexpr long kTraceStateSleeping = 0x1;   // S
inline constexpr long kTraceStateDead = 0x10;      // X (EXIT_DEAD)
inline constexpr long kTraceStatePreempted = 0x100;  // TASK_REPORT_MAX: "R+"

// The trace's vectors: a simulated x86 APIC (arch/x86/include/asm/irq_vectors.h).
inline constexpr int kIrqLocalTimer = 236;    // LOCAL_TIMER_VECTOR: the tick, hrtimers
inline constexpr int kIrqReschedule = 253;    // RESCHEDULE_VECTOR
inline constexpr int kIrqCallFunction = 251;  // CALL_FUNCTION_SINGLE_VECTOR
inline constexpr int kIrqDevice = 33;         // a device's MSI vector: a read's data arriving

// The hrtimers whose expiry is traced, identified as `function` (hrtimer_expire_entry).
enum class TraceHrtimer : uint8_t { tick_nohz_handler, hrtick, hrtimer_wakeup, slice_ext_timer };

struct TraceRecord {
  TraceEvent type = TraceEvent::nr_events;
  int cpu = 0;
  int64_t ts = 0;        // ns of simulated time
  TraceTask curr;        // current on `cpu` (common_pid and the line's comm-pid)
  uint8_t irq_flags = 0;  // TRACE_FLAG_*: 0x1 irqs off, 0x8 in hardirq, 0x10 in softirq
  TraceTask a, b;
  long state = 0;
  int orig_cpu = 0, dest_cpu = 0;  // target_cpu is dest_cpu
  int irq = 0;
  unsigned vec = 0;
  TraceHrtimer timer = TraceHrtimer::tick_nohz_handler;
  uint64_t hrtimer = 0;  // the struct hrtimer's (simulated) address
  int64_t expires = 0;   // slice_ext_grant: the grant's end
  const char* name = "";  // irq_handler_entry, user_span_begin (a string with static storage)
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void record(const TraceRecord& r) = 0;
};

}  // namespace kernel
