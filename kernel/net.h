// What the layers above give and read of the network model (kernel/net/): a NIC receive
// queue to add to a machine (NicRxQueueAttr, Kernel::add_netdev()), and what it counted
// (NetRxStats, in KernelStats::netdevs).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/stats.h"
#include "sim/time.h"

namespace kernel {

// One flow of the arrival process: bursts of `burst` packets back to back, the bursts a
// Poisson process, rate_pps packets per second on average.
struct NetFlowAttr {
  double rate_pps = 0;
  int burst = 1;
};

struct NicRxQueueAttr {
  std::string name = "eth0";
  int irq_cpu = 0;        // smp_affinity of the queue's interrupt (flow director: one CPU)
  int ring_size = 1024;   // RX descriptors (ethtool -G rx)
  std::vector<NetFlowAttr> flows;
  sim::Time start = 0;    // each flow's first burst
  sim::Time end = 0;      // no arrivals from then on (0 = none until the run ends)
  // Interrupt coalescing (ethtool -C rx-usecs): an unmasked queue raises its interrupt no
  // sooner than this after the previous one. 0 = at the first packet.
  sim::Time rx_usecs_ns = 0;
};

// Where NET_RX work ran: a softirq pass at hardirq exit, inside a task's local_bh_enable(),
// in ksoftirqd, at the local_bh_enable() of a forced-threaded interrupt handler (threadirqs,
// PREEMPT_RT), or in a threaded NAPI kthread (not a softirq at all).
enum : int {
  NET_RX_AT_IRQ_EXIT = 0,
  NET_RX_AT_BH_ENABLE,
  NET_RX_IN_KSOFTIRQD,
  NET_RX_IN_IRQ_THREAD,
  NET_RX_IN_NAPI_THREAD,
  NR_NET_RX_CTX
};
extern const char* const net_rx_ctx_name[NR_NET_RX_CTX];

// What one receive queue counted (KernelStats::netdevs, in the order the queues were added).
struct NetRxStats {
  uint64_t packets_arrived = 0;
  uint64_t packets_received = 0;  // polled off the ring (delivered up the stack)
  uint64_t packets_dropped = 0;   // the ring was full (rx_missed_errors)
  uint64_t irqs = 0;              // hardirqs raised
  uint64_t polls = 0;             // driver poll calls
  uint64_t repolls = 0;           // polls that used the whole weight (stayed scheduled)
  std::array<uint64_t, NR_NET_RX_CTX> ns{};       // NET_RX CPU time by where it ran
  std::array<uint64_t, NR_NET_RX_CTX> packets{};  // packets by where they were polled
  sim::Histogram latency;    // arrival to the end of its processing, ns
};

}  // namespace kernel
