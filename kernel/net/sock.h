// UDP sockets, mirroring net/ipv4/udp.c and net/core/sock.c (6.12 .. 7.0): the receive side of
// a bound socket. NET_RX delivers a datagram with __udp_enqueue_schedule_skb() (charged to
// sk_rmem_alloc, dropped above sk_rcvbuf, then sk_data_ready() = sock_def_readable(), which
// wakes one exclusive waiter); recvmsg() dequeues through udp's reader queue
// (__skb_recv_udp()) and sleeps in __skb_wait_for_more_packets() when both queues are empty.
#pragma once
#include <vector>

#include "kernel/net.h"
#include "kernel/sched/sched.h"
#include "sim/engine.h"

namespace kernel {

class KernelImpl;

// One datagram on the socket: its arrival at the NIC (the hardware receive timestamp), its
// enqueue on sk_receive_queue, and its payload length.
struct udp_skb {
  sim::Time arrival = 0;
  sim::Time enqueued = 0;
  int len = 0;
};

struct udp_sock {
  int rcvbuf = 0;            // sk->sk_rcvbuf
  int truesize = 0;          // skb->truesize of each datagram
  long long rmem_alloc = 0;  // sk->sk_rmem_alloc
  int forward_deficit = 0;   // udp_sock::forward_deficit: dequeued memory not yet released
  int forward_threshold = 0; // udp_sock::forward_threshold = sk_rcvbuf >> 2
  // The datagrams in order: the first `reader` of them form udp's reader_queue, the rest
  // sk_receive_queue (a splice moves the boundary). Room for every datagram rcvbuf admits.
  std::vector<udp_skb> ring;
  size_t head = 0, count = 0, reader = 0;
  std::vector<task_struct*> wait;  // sk_wq's exclusive waiters, oldest first (reserved)
  // A NET_RX pass is charged at once from its start, but each datagram joins the queue at the
  // end of its own work: it is visible to recvmsg() from then, and sock_def_readable() wakes
  // a waiter then, on the CPU that queued it (wake_cpu).
  sim::Timer wake_timer;
  KernelImpl* k = nullptr;
  int wake_cpu = 0;
  UdpSockStats stats;
};

// "" if attr is a socket this model can hold, else one line naming the bad field and value.
std::string validate_udp_sock_attr(const UdpSockAttr& attr);
// udp_init_sock() of a bound socket (REQUIRES: validated); returns its index.
int udp_sock_add(KernelImpl* k, const UdpSockAttr& attr);
int udp_sock_count(const KernelImpl& k);
const UdpSockStats& udp_sock_stats(const KernelImpl& k, int sock);
// __udp_queue_rcv_skb(): a datagram of `len` bytes that reached the NIC at `arrival` ends
// its NET_RX work at `at` on socket `sock`, on rq's CPU (softirq context or a NAPI thread).
void udp_queue_rcv_skb(rq* rq, int sock, sim::Time arrival, sim::Time at, int len);
void register_net_syscalls();  // recvmsg

}  // namespace kernel
