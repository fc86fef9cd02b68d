// UDP sockets pinned against net/ipv4/udp.c and net/core/sock.c: NET_RX's enqueue on
// sk_receive_queue and the sock_def_readable() wake-up of a thread blocked in recvmsg(),
// sk_rcvbuf's drops (RcvbufErrors), udp_rmem_release()'s batches, the receive latency up to
// recvmsg()'s return, the softirqs recvmsg()'s spin_unlock_bh() runs, bad arguments.
#include <gtest/gtest.h>

#include "kernel/net/dev.h"
#include "kernel/net/nic.h"
#include "kernel/net/sock.h"
#include "kernel/sched/sched.h"
#include "kernel/softirq.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::KernelConfig net_cfg() {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.softirq.ksoftirqd = true;
  return cfg;
}

// A burst of `packets` datagrams for socket `sock` at `at` on CPU 0's queue, nothing after.
kernel::NicRxQueueAttr burst_to(int sock, int packets, sim::Time at) {
  kernel::NicRxQueueAttr a;
  a.ring_size = 4096;
  a.flows = {{1.0, packets, sock, 64}};
  a.start = at;
  a.end = at + 1;
  return a;
}

kernel::TaskAttr on_cpu(int cpu, const char* comm) {
  kernel::TaskAttr a;
  a.comm = comm;
  a.cpus = {cpu};
  return a;
}

const kernel::udp_sock& sk(const Sim& s, int sock) { return *s.k->net->socks[static_cast<size_t>(sock)]; }

}  // namespace

// A thread on CPU 1 blocks in recvmsg() on an empty socket; a datagram reaching CPU 0's queue
// at 1 ms is delivered by NET_RX (at that interrupt's exit), and sock_def_readable() wakes the
// thread, whose recvmsg() then returns it with the NIC arrival time as its timestamp.
TEST(Socket, DatagramDeliveredByNetRxWakesABlockedRecvmsg) {
  Sim s(exact_timers(flat_machine(2)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int64_t ret = -1, ts = -1;
  sim::Time returned = 0;
  const int pid = s.spawn(on_cpu(1, "server"), [&](user::Thread& t) -> user::Program {
    ret = co_await t.recvmsg(sock, 1500, &ts);
    returned = t.now();
  });
  const int dev = s.k->add_netdev(burst_to(sock, 1, 1 * kMs));
  s.run(5 * kMs);
  EXPECT_EQ(ret, 64);
  EXPECT_EQ(ts, 1 * kMs);
  EXPECT_GT(returned, 1 * kMs);
  EXPECT_LT(returned, 1 * kMs + 50 * kUs);
  const kernel::UdpSockStats& st = kernel::udp_sock_stats(*s.k, sock);
  EXPECT_EQ(st.recvmsg_blocked, 1u);
  EXPECT_EQ(st.enqueued, 1u);
  EXPECT_EQ(st.received, 1u);
  EXPECT_EQ(kernel::netdev_rx_stats(*s.k, dev).packets[kernel::NET_RX_AT_IRQ_EXIT], 1u);
  EXPECT_EQ(s.task(pid).stats.nr_wakeups, 1u);
  EXPECT_TRUE(sk(s, sock).wait.empty());
}

// The same wake-up when the reader sleeps on the queue's own CPU, idle: NET_RX runs at the
// NIC interrupt's exit there, and do_idle() finds the woken reader to run once that work is
// done, with no other interrupt needed.
TEST(Socket, ARecvmsgBlockedOnTheQueuesIdleCpuRunsOnceNetRxWakesIt) {
  Sim s(exact_timers(flat_machine(2)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int64_t ret = -1;
  sim::Time returned = 0;
  s.spawn(on_cpu(0, "server"), [&](user::Thread& t) -> user::Program {
    ret = co_await t.recvmsg(sock, 1500);
    returned = t.now();
  });
  s.k->add_netdev(burst_to(sock, 1, 1 * kMs));
  s.run(50 * kMs);
  EXPECT_EQ(ret, 64);
  EXPECT_GT(returned, 1 * kMs);
  EXPECT_LT(returned, 1 * kMs + 50 * kUs);
}

// And when a task runs on the queue's CPU: NET_RX runs at the exit of the NIC interrupt that
// hit the hog, the reader (SCHED_FIFO, so its wakeup preempts a fair task) is woken there,
// and the interrupt's return to user mode switches to it once the work is done, with no tick
// or other interrupt needed.
TEST(Socket, ARecvmsgWokenOntoABusyCpuPreemptsAtTheInterruptsReturn) {
  Sim s(exact_timers(flat_machine(2)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int64_t ret = -1;
  sim::Time returned = 0;
  kernel::TaskAttr rt = on_cpu(0, "server");
  rt.policy = SCHED_FIFO;
  rt.rt_priority = 50;
  const int reader = s.spawn(rt, [&](user::Thread& t) -> user::Program {
    ret = co_await t.recvmsg(sock, 1500);
    returned = t.now();
  });
  const int hog = s.spawn(on_cpu(0, "hog"), [](user::Thread& t) -> user::Program {
    co_await t.compute(20 * kMs);
  });
  s.k->add_netdev(burst_to(sock, 1, 1 * kMs));
  s.run(2 * kMs);
  EXPECT_EQ(ret, 64);
  EXPECT_GT(returned, 1 * kMs);
  EXPECT_LT(returned, 1 * kMs + 50 * kUs);
  EXPECT_EQ(s.task(reader).stats.nr_wakeups, 1u);
  EXPECT_GE(s.task(hog).stats.nr_switches_involuntary, 1u);
}

// sock_def_readable() wakes one exclusive waiter per datagram: two threads asleep on the
// socket, two datagrams in one burst, and each thread returns with one of them; a third
// thread stays asleep.
TEST(Socket, EachQueuedDatagramWakesOneSleepingReader) {
  Sim s(exact_timers(flat_machine(4)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int got[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i)
    s.spawn(on_cpu(1 + i, "server"), [&got, i, sock](user::Thread& t) -> user::Program {
      if (co_await t.recvmsg(sock, 64) == 64) got[i]++;
    }, /*start=*/static_cast<sim::Time>(i) * kUs);
  s.k->add_netdev(burst_to(sock, 2, 1 * kMs));
  s.run(5 * kMs);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 1);
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(sk(s, sock).wait.size(), 1u);
  EXPECT_EQ(kernel::udp_sock_stats(*s.k, sock).received, 2u);
}

// __udp_enqueue_schedule_skb() admits a datagram while sk_rmem_alloc <= sk_rcvbuf (so one
// more than fits) and drops the rest, counting them (sk_drops, UDP RcvbufErrors); nothing
// reads the socket here. rcvbuf 3072, truesize 768: 5 of 10 are queued.
TEST(Socket, RcvbufOverflowDropsAndCountsRcvbufErrors) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  kernel::UdpSockAttr a;
  a.rcvbuf = 3072;
  a.truesize = 768;
  const int sock = s.k->add_udp_socket(a);
  const int dev = s.k->add_netdev(burst_to(sock, 10, 1 * kMs));
  s.run(5 * kMs);
  const kernel::UdpSockStats& st = kernel::udp_sock_stats(*s.k, sock);
  EXPECT_EQ(kernel::netdev_rx_stats(*s.k, dev).packets_received, 10u);
  EXPECT_EQ(st.enqueued, 5u);
  EXPECT_EQ(st.rcvbuf_errors, 5u);
  EXPECT_EQ(sk(s, sock).rmem_alloc, 5 * 768);
  EXPECT_EQ(s.k->snapshot().sockets.at(0).rcvbuf_errors, 5u);
}

// udp_rmem_release(): a dequeued datagram's memory goes back in batches of forward_threshold
// (sk_rcvbuf / 4) while the reader queue still holds datagrams, and at once when it is empty;
// the queue then takes datagrams again.
TEST(Socket, RecvmsgReleasesReceiveMemoryInQuarterRcvbufBatches) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  kernel::UdpSockAttr a;
  a.rcvbuf = 8 * 768;  // forward_threshold 1536: two datagrams
  a.truesize = 768;
  const int sock = s.k->add_udp_socket(a);
  std::vector<long long> rmem;
  s.spawn(on_cpu(0, "server"), [&](user::Thread& t) -> user::Program {
    co_await t.compute(2 * kMs);  // the burst has been queued meanwhile
    for (int i = 0; i < 9; ++i) {
      co_await t.recvmsg(sock, 64);
      rmem.push_back(sk(s, sock).rmem_alloc);
    }
  });
  s.k->add_netdev(burst_to(sock, 9, 1 * kMs));
  s.run(5 * kMs);
  const std::vector<long long> want = {9 * 768, 7 * 768, 7 * 768, 5 * 768, 5 * 768,
                                       3 * 768, 3 * 768, 1 * 768, 0};
  EXPECT_EQ(rmem, want);
  EXPECT_EQ(kernel::udp_sock_stats(*s.k, sock).rcvbuf_errors, 0u);
}

// The application's receive latency runs from the NIC to recvmsg()'s return, so it includes
// the time the datagram waited on the socket: here the server is busy until 3 ms, the
// datagram arrives at 1 ms and is queued within microseconds.
TEST(Socket, ReceiveLatencyIncludesTheSocketQueueWait) {
  Sim s(exact_timers(flat_machine(2)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int64_t ts = -1;
  sim::Time returned = 0;
  s.spawn(on_cpu(1, "server"), [&](user::Thread& t) -> user::Program {
    co_await t.compute(3 * kMs);
    co_await t.recvmsg(sock, 1500, &ts);
    returned = t.now();
  });
  const int dev = s.k->add_netdev(burst_to(sock, 1, 1 * kMs));
  s.run(5 * kMs);
  EXPECT_EQ(ts, 1 * kMs);
  EXPECT_GE(returned - ts, 2 * kMs);
  EXPECT_LT(kernel::netdev_rx_stats(*s.k, dev).latency.summary().max, 10 * kUs);
  const kernel::UdpSockStats& st = kernel::udp_sock_stats(*s.k, sock);
  EXPECT_EQ(st.recvmsg_blocked, 0u);
  EXPECT_GE(st.queue_wait.summary().max, 2 * kMs - 10 * kUs);
}

// recvmsg()'s spin_unlock_bh() is a local_bh_enable(): NET_RX pending on the server's CPU
// runs there, on top of the server. 1000 datagrams at 1 ms: the interrupt's exit runs 10
// passes of 64 (MAX_SOFTIRQ_RESTART) and leaves the rest pending (no ksoftirqd here to take
// it); the server's first recvmsg() at 2 ms runs it in its own local_bh_enable().
TEST(Socket, RecvmsgRunsPendingNetRxAtItsBhEnable) {
  kernel::KernelConfig cfg = net_cfg();
  cfg.softirq.ksoftirqd = false;
  Sim s(exact_timers(flat_machine(1)), cfg);
  const int sock = s.k->add_udp_socket({});
  const int dev = s.k->add_netdev(burst_to(sock, 1000, 1 * kMs));
  int got = 0;
  const int pid = s.spawn(on_cpu(0, "server"), [&](user::Thread& t) -> user::Program {
    co_await t.compute(2 * kMs);
    for (int i = 0; i < 1000; ++i)
      if (co_await t.recvmsg(sock, 64) == 64) ++got;
  });
  s.run(10 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_EQ(st.packets[kernel::NET_RX_AT_IRQ_EXIT], 640u);
  EXPECT_EQ(st.packets[kernel::NET_RX_AT_BH_ENABLE], 360u);
  EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, 360u * 500u);
  // 212992 / 768: 278 are admitted, the rest dropped (the server frees no memory until its
  // reader queue runs empty or a quarter of rcvbuf has been dequeued).
  EXPECT_EQ(kernel::udp_sock_stats(*s.k, sock).rcvbuf_errors, 722u);
  EXPECT_EQ(got, 278);
}

TEST(Socket, BadArgumentsAreRejected) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  const int sock = s.k->add_udp_socket({});
  int64_t bad_fd = 0, bad_len = 0;
  s.spawn(on_cpu(0, "server"), [&](user::Thread& t) -> user::Program {
    bad_fd = co_await t.recvmsg(sock + 1, 64);
    bad_len = co_await t.recvmsg(sock, -1);
  });
  s.run(1 * kMs);
  EXPECT_EQ(bad_fd, -EBADF);
  EXPECT_EQ(bad_len, -EINVAL);
  kernel::UdpSockAttr a;
  a.rcvbuf = 0;
  EXPECT_NE(s.k->validate_udp_socket(a).find("rcvbuf"), std::string::npos);
  a.rcvbuf = 4096;
  a.truesize = 100;
  EXPECT_NE(s.k->validate_udp_socket(a).find("truesize"), std::string::npos);
  kernel::NicRxQueueAttr n = burst_to(sock + 5, 1, 0);
  EXPECT_NE(s.k->validate_netdev(n).find("sock"), std::string::npos);
  n = burst_to(sock, 1, 0);
  EXPECT_EQ(s.k->validate_netdev(n), "");
}
