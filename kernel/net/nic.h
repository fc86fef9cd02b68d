// A NIC receive queue as an interrupt source (simulator-side hardware plus its driver's
// kernel half): packets arrive from flows (Poisson bursts at a rate), fill a descriptor ring
// of fixed size (the rest are dropped, rx_missed_errors), and raise the queue's interrupt on
// the CPU it is bound to while the NAPI instance is not scheduled. The handler calls
// napi_schedule(); the poll (kernel/net/dev.cc) takes packets off the ring at the machine's
// per-packet cost. Under threadirqs or PREEMPT_RT the handler is force-threaded: the hardirq
// wakes irq/<n>-<dev> (SCHED_FIFO 50), whose local_bh_enable() runs the NET_RX it raised.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "kernel/net/dev.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "sim/stats.h"

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

// What the layers above read of one receive queue (a snapshot, by reference; valid while
// the kernel lives).
struct NetRxStats {
  u64 packets_arrived = 0;
  u64 packets_received = 0;  // polled off the ring (delivered up the stack)
  u64 packets_dropped = 0;   // the ring was full (rx_missed_errors)
  u64 irqs = 0;              // hardirqs raised
  u64 polls = 0;             // driver poll calls
  u64 repolls = 0;           // polls that used the whole weight (stayed scheduled)
  std::array<u64, NR_NET_RX_CTX> ns{};       // NET_RX CPU time by where it ran
  std::array<u64, NR_NET_RX_CTX> packets{};  // packets by where they were polled
  sim::Histogram latency;    // arrival to the end of its processing, ns
};

struct net_flow {
  net_device* dev = nullptr;
  double mean_gap_ns = 0;  // mean time between bursts
  int burst = 1;
  sim::Timer timer;
  sim::Rng rng;
};

struct net_device {
  KernelImpl* k = nullptr;
  std::string name;
  int irq_cpu = 0;
  sim::Time end = 0;
  sim::Time coalesce_ns = 0;
  sim::Time last_irq = -1;
  sim::Timer coalesce_timer;          // the held-back interrupt
  napi_struct napi;
  std::vector<sim::Time> ring;  // arrival time of each packet on the ring
  size_t head = 0, count = 0;
  std::vector<std::unique_ptr<net_flow>> flows;
  task_struct* irq_thread = nullptr;  // irq/<n>-<dev> (threadirqs, PREEMPT_RT)
  bool irq_thread_pending = false;    // IRQTF_RUNTHREAD: the line stays masked (IRQF_ONESHOT)
  NetRxStats stats;
};

// "" if attr fits this kernel and machine, else one line naming the bad field and value.
std::string validate_nic_attr(const KernelImpl& k, const NicRxQueueAttr& attr);
// Registers a device with one receive queue (REQUIRES: validated); returns its index.
int netdev_add(KernelImpl* k, const NicRxQueueAttr& attr);
int netdev_count(const KernelImpl& k);
const NetRxStats& netdev_rx_stats(const KernelImpl& k, int dev);
// The thread of the device's NAPI instance (threaded NAPI) or of its interrupt (forced
// threading), or 0.
int netdev_napi_thread_pid(const KernelImpl& k, int dev);
int netdev_irq_thread_pid(const KernelImpl& k, int dev);

// The driver's poll (mlx5e_napi_poll() and the like): up to `budget` packets off the ring,
// processed from `at` at the machine's per-packet cost; napi_complete_done() if fewer than
// budget. Accounts them to where they ran (ctx). Returns the packets; *cost their time.
int nic_poll(napi_struct* n, int budget, sim::Time at, int ctx, sim::Time* cost);

}  // namespace kernel
