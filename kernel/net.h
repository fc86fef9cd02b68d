// What the layers above give and read of the network model (kernel/net/): a NIC receive
// queue to add to a machine (NicRxQueueAttr, Kernel::add_netdev()) and what it counted
// (NetRxStats, in KernelStats::netdevs); a UDP socket its flows deliver to (UdpSockAttr,
// Kernel::add_udp_socket(), read with the recvmsg() verb) and what it counted (UdpSockStats,
// in KernelStats::sockets).
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
// `sock`: the UDP socket (an index from Kernel::add_udp_socket()) its packets are delivered
// to at the end of their NET_RX work; -1: none (the packet's path ends there).
struct NetFlowAttr {
  double rate_pps = 0;
  int burst = 1;
  int sock = -1;
  int len = 64;  // UDP payload bytes of each datagram
};

// A bound UDP socket (udp_init_sock()). sk_rcvbuf is net.core.rmem_default unless SO_RCVBUF
// set it (which stores twice the value asked for). `truesize`: the memory one received
// datagram's skb charges to sk_rmem_alloc (skb->truesize: the driver's receive buffer plus
// struct sk_buff); it depends on the driver, 768 for a small packet copied out of the ring
// (napi_alloc_skb() of a 256-byte head) up to 2304 for a 2 KiB page fragment.
struct UdpSockAttr {
  int rcvbuf = 212992;  // SK_RMEM_MAX: 256 packets of SKB_TRUESIZE(256)
  int truesize = 768;
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

// What one UDP socket counted (KernelStats::sockets, in the order the sockets were added).
struct UdpSockStats {
  uint64_t enqueued = 0;        // datagrams put on sk_receive_queue
  uint64_t rcvbuf_errors = 0;   // dropped: sk_rmem_alloc above sk_rcvbuf (UDP RcvbufErrors, sk_drops)
  uint64_t received = 0;        // datagrams recvmsg() returned (UDP InDatagrams)
  uint64_t recvmsg_blocked = 0; // recvmsg() calls that found no datagram and slept
  uint64_t queue_max = 0;       // the most datagrams queued at once
  sim::Histogram queue_wait;    // socket enqueue to the dequeue by recvmsg(), ns
};

}  // namespace kernel
