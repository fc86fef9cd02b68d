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

#include "kernel/net.h"
#include "kernel/net/dev.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "sim/stats.h"

namespace kernel {

// One receive descriptor's packet: its arrival, and the socket it is for (-1: none).
struct nic_rx_desc {
  sim::Time arrival = 0;
  int sock = -1;
  int len = 0;
};

struct net_flow {
  net_device* dev = nullptr;
  double mean_gap_ns = 0;  // mean time between bursts
  int burst = 1;
  int sock = -1;
  int len = 0;
  sim::Timer timer;
  sim::Rng rng;
};

struct net_device {
  KernelImpl* k = nullptr;
  std::string name;
  int irq_cpu = 0;
  sim::Time end = 0;
  sim::Time coalesce_ns = 0;
  sim::Time last_irq = -1;             // when the queue last raised its interrupt
  sim::Timer coalesce_timer;          // the held-back interrupt
  sim::Timer irq_timer;               // the raised interrupt, while its idle CPU wakes up
  napi_struct napi;
  std::vector<nic_rx_desc> ring;
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
// processed from `at` at the machine's per-packet cost, each delivered to its flow's socket
// at the end of it; napi_complete_done() if fewer than budget. Accounts them to where they ran (ctx). Returns the packets; *cost their time.
int nic_poll(rq* rq, napi_struct* n, int budget, sim::Time at, int ctx, sim::Time* cost);

}  // namespace kernel
