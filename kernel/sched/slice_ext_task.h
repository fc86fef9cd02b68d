// The time slice extension's per-task state, for every design (RFC task_getshared page,
// the 2023 rseq variant, 7.0's rseq slice extension); each design uses its part.
#pragma once
#include <cstdint>

#include "kernel/uapi.h"
#include "sim/time.h"

namespace kernel {

using u64 = uint64_t;

struct slice_ext_task {
  bool granted = false;       // RFC taskshrd_sched_delay, 2023 rseq_sched_delay, 7.0 state.granted
  bool enabled = false;       // 7.0: prctl / registration flag
  bool user_irq = false;      // last kernel entry was an interrupt from user mode (7.0 event.user_irq)
  bool sched_switch = false;  // rseq work before the next return to user (7.0 event.sched_switch)
  bool ids_changed = false;   // CPU changed since the last return to user (7.0 event.ids_changed)
  bool rseq_v2 = false;       // 7.0 rseq_v2(): the optimized mode, which slice extensions need
  bool yielded = false;       // 7.0: rseq_slice_yield() result
  bool syscall_work = false;  // 7.0: SYSCALL_WORK_SYSCALL_RSEQ_SLICE
  bool fatal_signal = false;  // a fatal signal is pending (task_getshared -> EINTR)
  sim::Time expires = 0;      // 7.0: end of the grant
  UserWord* shared = nullptr; // RFC: this thread's struct task_sharedinfo (sched_delay word)
  int shared_page = -1, shared_slot = -1;
  // Statistics: RFC nr_preempt_delay_granted/denied (schedstats); 7.0 rseq stats.
  u64 nr_granted = 0, nr_denied = 0, nr_expired = 0, nr_revoked = 0, nr_yielded = 0,
      nr_aborted = 0, nr_missed = 0;
};

}  // namespace kernel
