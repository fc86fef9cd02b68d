// Softirq vectors and the per-CPU softirq state (include/linux/interrupt.h, kernel/softirq.c's
// irq_stat and softirq_vec), kept in struct rq. The code that uses them is kernel/softirq.cc.
#pragma once
#include <array>
#include <cstdint>

#include "sim/time.h"

namespace kernel {

struct rq;
struct task_struct;

// Softirq vectors (include/linux/interrupt.h), run in this order by handle_softirqs().
enum : int {
  HI_SOFTIRQ = 0, TIMER_SOFTIRQ, NET_TX_SOFTIRQ, NET_RX_SOFTIRQ, BLOCK_SOFTIRQ, IRQ_POLL_SOFTIRQ,
  TASKLET_SOFTIRQ, SCHED_SOFTIRQ, HRTIMER_SOFTIRQ, RCU_SOFTIRQ, NR_SOFTIRQS
};
// Where softirq work ran (kernel/softirq.cc).
enum : int { SOFTIRQ_AT_IRQ_EXIT = 0, SOFTIRQ_AT_BH_ENABLE, SOFTIRQ_IN_KSOFTIRQD, NR_SOFTIRQ_CTX };

// Per-CPU softirq state: irq_stat.__softirq_pending, the work queued on each vector (the
// vectors are cost sinks: an action runs its queued work, at most `budget_ns` per pass, and
// raises itself again if work is left, as net_rx_action() does at its budget), the open
// handle_softirqs() invocation, and accounting. kernel/softirq.cc.
struct softirq_cpu {
  uint32_t pending = 0;           // local_softirq_pending()
  int hardirq = 0;                // hardirq nesting (preempt_count()'s HARDIRQ bits)
  int bh_disabled = 0;            // local_bh_disable() nesting of the running kernel path
  uint64_t irq_time = 0;          // softirq time for IRQ_TIME_ACCOUNTING (irqtime->total)
  // The BH-disabled section of a syscall (sendto()) charged at once: [bh_from, bh_until) of
  // bh_task. A hardirq arriving inside it leaves its softirqs to that section's end.
  sim::Time bh_from = 0, bh_until = 0;
  task_struct* bh_task = nullptr;
  task_struct* ksoftirqd = nullptr;
  std::array<int64_t, NR_SOFTIRQS> work_ns{};    // queued handler work per vector
  std::array<int64_t, NR_SOFTIRQS> budget_ns{};  // per pass; 0 = all of it
  // open_softirq(): a vector whose action computes its own work when the pass runs it, at
  // the clock point given (net_rx_action()); null = the queued work_ns above.
  std::array<sim::Time (*)(struct rq* rq, sim::Time at), NR_SOFTIRQS> action{};
  // The last handle_softirqs() on this CPU: the CPU serves softirqs until serving_until
  // (in_serving_softirq()); `handed_off` if it ended by waking ksoftirqd.
  sim::Time serving_until = 0;
  uint64_t end_jiffies = 0;
  int max_restart = 0;
  int ctx = 0;
  bool handed_off = false;
  // Accounting: ns by where they ran, actions run per vector (/proc/softirqs), ksoftirqd wakeups.
  std::array<uint64_t, NR_SOFTIRQ_CTX> ns{};
  std::array<uint64_t, NR_SOFTIRQS> count{};
  uint64_t nr_wakeup_softirqd = 0;
};

}  // namespace kernel
