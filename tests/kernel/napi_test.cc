// NET_RX and NAPI pinned against net/core/dev.c: net_rx_action()'s budget and time limit,
// threaded NAPI, the receive ring's drops, where NET_RX runs relative to a task's BH-disabled
// section (mainline and the latency_sensi_flag patch), forced-threaded handlers, settings.
#include <gtest/gtest.h>

#include "kernel/entry/common.h"
#include "kernel/net/dev.h"
#include "kernel/net/nic.h"
#include "kernel/sched/sched.h"
#include "kernel/softirq.h"
#include "tests/kernel/harness.h"
#include "tests/sim/allocation_counter.h"  // for Napi.SteadyStateReceiveMakesNoHeapAllocation

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::KernelConfig net_cfg(bool patch = false) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.softirq.ksoftirqd = true;
  cfg.softirq.latency_sensi_flag = patch;
  return cfg;
}

// One burst of `packets` at `at` on CPU 0 (nothing after), into a ring of `ring` descriptors.
kernel::NicRxQueueAttr one_burst(int packets, sim::Time at, int ring = 4096) {
  kernel::NicRxQueueAttr a;
  a.ring_size = ring;
  a.flows = {{1.0, packets}};  // the next burst would come seconds later
  a.start = at;
  a.end = at + 1;
  return a;
}

uint64_t d_on_ring(const Sim& s, int dev) { return s.k->net->devs[static_cast<size_t>(dev)]->count; }

const kernel::softnet_data& sd(const Sim& s, int cpu) { return s.k->net->sd[static_cast<size_t>(cpu)]; }

}  // namespace

namespace {

// Six receive queues whose interrupts are all on CPU 0, 128 packets on each ring; at 1 ms
// one interrupt schedules all six NAPI instances (as six back-to-back handlers would).
struct SixQueues {
  sim::Timer timer;
  kernel::rq* rq;
  std::vector<kernel::net_device*> devs;
  explicit SixQueues(Sim& s) : rq(s.k->rq_of(0)) {
    for (int i = 0; i < 6; ++i) {
      kernel::NicRxQueueAttr a;
      a.name = "eth" + std::to_string(i);
      const int dev = kernel::netdev_add(s.k.get(), a);
      kernel::net_device* d = s.k->net->devs[static_cast<size_t>(dev)].get();
      d->count = 128;  // arrived at time 0
      devs.push_back(d);
    }
    timer.ctx = this;
    timer.fn = [](sim::Timer* t, sim::Time now) {
      auto* q = static_cast<SixQueues*>(t->ctx);
      kernel::irqentry_enter(q->rq, now);
      for (kernel::net_device* d : q->devs) kernel::napi_schedule(q->rq, &d->napi);
      kernel::irqentry_exit(q->rq);
    };
    s.engine.arm(&timer, 1 * kMs);
  }
};

}  // namespace

// net_rx_action() polls each listed instance once (weight 64) and stops once netdev_budget
// (300) is used up: 5 polls, 320 packets, time_squeeze++; the rest and the repolled go back
// on the list and NET_RX is raised again. Six full queues take passes of 5, 5, 6 and 2 polls
// (the last two complete instances that used their whole weight on an emptied ring).
TEST(Napi, NetdevBudgetEndsANapiPass) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  ASSERT_EQ(s.k->config().softirq.netdev_budget, 300);
  SixQueues q(s);
  s.run(10 * kMs);
  uint64_t received = 0, polls = 0;
  for (int i = 0; i < 6; ++i) {
    received += kernel::netdev_rx_stats(*s.k, i).packets_received;
    polls += kernel::netdev_rx_stats(*s.k, i).polls;
  }
  EXPECT_EQ(received, 768u);
  EXPECT_EQ(polls, 18u);
  EXPECT_EQ(sd(s, 0).time_squeeze, 2u);
  EXPECT_EQ(s.k->cpu_rq(0).softirq.count[kernel::NET_RX_SOFTIRQ], 4u);
}

// With one instance a pass is one poll: the list is empty after it and the repolled instance
// waits for the next pass (handle_softirqs()' restart), 64 packets at a time.
TEST(Napi, OneInstanceIsPolledOncePerPass) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  const int dev = kernel::netdev_add(s.k.get(), one_burst(200, 1 * kMs));
  s.run(10 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_EQ(st.packets_received, 200u);
  EXPECT_EQ(st.irqs, 1u);
  EXPECT_EQ(st.polls, 4u);  // 64, 64, 64, 8
  EXPECT_EQ(s.k->cpu_rq(0).softirq.count[kernel::NET_RX_SOFTIRQ], 4u);
  EXPECT_EQ(sd(s, 0).time_squeeze, 0u);
  EXPECT_EQ(st.packets[kernel::NET_RX_AT_IRQ_EXIT], 200u);
}

// The time limit: netdev_budget_usecs = 0 makes time_limit the current jiffy, so a pass ends
// after its first poll (time_after_eq(jiffies, time_limit)) whatever the budget. The default
// is 2 jiffies at every HZ.
TEST(Napi, NetdevBudgetUsecsEndsAPassAtItsTimeLimit) {
  kernel::KernelConfig cfg = net_cfg();
  EXPECT_EQ(kernel::netdev_budget_jiffies(cfg), 2u);  // HZ 250: 8000 us
  cfg.hz = 1000;
  EXPECT_EQ(kernel::netdev_budget_jiffies(cfg), 2u);
  cfg.hz = 300;
  EXPECT_EQ(kernel::netdev_budget_jiffies(cfg), 2u);  // 6666 us
  cfg.hz = 250;
  cfg.softirq.netdev_budget = 1000000;
  cfg.softirq.netdev_budget_usecs = 0;
  Sim s(exact_timers(flat_machine(1)), cfg);
  SixQueues q(s);
  s.run(10 * kMs);
  uint64_t polls = 0;
  for (int i = 0; i < 6; ++i) polls += kernel::netdev_rx_stats(*s.k, i).polls;
  EXPECT_EQ(polls, 18u);  // 6 x (64, 64, 0)
  EXPECT_EQ(sd(s, 0).time_squeeze, 18u);
}

// Threaded NAPI: ____napi_schedule() wakes napi/<dev>-<id> and raises no softirq; the thread
// polls, as a task of its own (its runtime, not softirq time).
TEST(Napi, ThreadedNapiRaisesNoSoftirq) {
  kernel::KernelConfig cfg = net_cfg();
  cfg.softirq.napi_threaded = true;
  Sim s(exact_timers(flat_machine(1)), cfg);
  kernel::NicRxQueueAttr a;
  a.flows = {{200000.0, 1}};  // 200 kpps
  const int dev = kernel::netdev_add(s.k.get(), a);
  s.run(10 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_GT(st.packets_received, 1500u);
  EXPECT_EQ(st.packets_received, st.packets[kernel::NET_RX_IN_NAPI_THREAD]);
  EXPECT_EQ(s.k->cpu_rq(0).softirq.count[kernel::NET_RX_SOFTIRQ], 0u);
  EXPECT_EQ(s.k->cpu_rq(0).softirq.nr_wakeup_softirqd, 0u);
  const kernel::task_struct& t = s.task(kernel::netdev_napi_thread_pid(*s.k, dev));
  EXPECT_EQ(t.comm, "napi/eth0-8192");
  EXPECT_GE(t.se.sum_exec_runtime, st.ns[kernel::NET_RX_IN_NAPI_THREAD]);
}

// A full ring drops what arrives (rx_missed_errors) and counts it.
TEST(Napi, RingOverflowDropsPacketsAndCountsThem) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  const int dev = kernel::netdev_add(s.k.get(), one_burst(100, 1 * kMs, /*ring=*/16));
  s.run(5 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_EQ(st.packets_arrived, 100u);
  EXPECT_EQ(st.packets_dropped, 84u);
  EXPECT_EQ(st.packets_received, 16u);
}

namespace {

// A task on CPU 0 computes for 1 ms, then one sendto() whose BH-disabled transmit path takes
// 200 us; a burst of 64 packets reaches CPU 0's queue 100 us into that section.
struct BhSectionRun {
  Sim s;
  int pid = 0, dev = 0;
  explicit BhSectionRun(bool patch, bool flag) : s(exact_timers(flat_machine(1)), net_cfg(patch)) {
    kernel::TaskAttr a;
    a.comm = "sender";
    a.cpus = {0};
    a.latency_sensitive = flag;
    pid = s.spawn(a, [](user::Thread& t) -> user::Program {
      co_await t.compute(1 * kMs);
      co_await t.sendto(64, 200 * kUs);
      co_await t.compute(1 * kMs);
    });
    dev = kernel::netdev_add(s.k.get(), one_burst(64, 1100 * kUs));
    s.run(5 * kMs);
  }
};

}  // namespace

// __local_bh_enable_ip(): the hardirq inside the section finds in_interrupt() at its exit;
// the NET_RX it raised runs at the section's local_bh_enable(), on top of the sender.
TEST(Napi, TaskLeavingBhSectionWithNetRxPendingRunsItInline) {
  BhSectionRun r(/*patch=*/false, /*flag=*/false);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*r.s.k, r.dev);
  EXPECT_EQ(st.packets[kernel::NET_RX_AT_BH_ENABLE], 64u);
  EXPECT_EQ(r.s.task(r.pid).stats.softirq_bh_ns, static_cast<uint64_t>(64 * 500));
  EXPECT_EQ(r.s.k->cpu_rq(0).softirq.nr_wakeup_softirqd, 0u);
}

// The patch: the flagged sender's local_bh_enable() wakes ksoftirqd, which does the work.
TEST(Napi, LatencySensitiveSenderLeavesNetRxToKsoftirqd) {
  BhSectionRun r(/*patch=*/true, /*flag=*/true);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*r.s.k, r.dev);
  EXPECT_EQ(st.packets[kernel::NET_RX_IN_KSOFTIRQD], 64u);
  EXPECT_EQ(r.s.task(r.pid).stats.softirq_bh_ns, 0u);
  EXPECT_EQ(r.s.k->cpu_rq(0).softirq.nr_wakeup_softirqd, 1u);
}

// PREEMPT_RT: the handler is force-threaded (irq/<n>-eth0, SCHED_FIFO 50) and the NET_RX it
// raises runs at that thread's local_bh_enable(), never at hardirq exit.
TEST(Napi, PreemptRtRunsNetRxInTheForcedIrqThread) {
  kernel::KernelConfig cfg = net_cfg();
  cfg.softirq.preempt_rt = true;
  Sim s(exact_timers(flat_machine(1)), cfg);
  kernel::NicRxQueueAttr a;
  a.flows = {{100000.0, 4}};
  const int dev = kernel::netdev_add(s.k.get(), a);
  s.run(10 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_GT(st.packets_received, 500u);
  EXPECT_EQ(st.packets_received, st.packets[kernel::NET_RX_IN_IRQ_THREAD]);
  const kernel::task_struct& t = s.task(kernel::netdev_irq_thread_pid(*s.k, dev));
  EXPECT_EQ(t.policy, SCHED_FIFO);
  EXPECT_EQ(t.rt_priority, 50);
}

TEST(Napi, BadValuesAreRejectedNamingTheParameter) {
  kernel::KernelConfig cfg = net_cfg();
  EXPECT_NE(kernel::set_config_key(&cfg, "softirq.netdev_budget", "0").find("softirq.netdev_budget"),
            std::string::npos);
  EXPECT_NE(kernel::set_config_key(&cfg, "softirq.netdev_budget_usecs", "-1")
                .find("softirq.netdev_budget_usecs"),
            std::string::npos);
  EXPECT_NE(kernel::set_config_key(&cfg, "softirq.napi_threaded", "maybe").find("softirq.napi_threaded"),
            std::string::npos);
  EXPECT_EQ(kernel::set_config_key(&cfg, "softirq.netdev_budget", "600"), "");
  EXPECT_EQ(cfg.softirq.netdev_budget, 600);
  Sim s(flat_machine(2), net_cfg());
  kernel::NicRxQueueAttr a;
  a.ring_size = 0;
  EXPECT_NE(kernel::validate_nic_attr(*s.k, a).find("ring_size"), std::string::npos);
  a.ring_size = 64;
  a.flows = {{-5.0, 1}};
  EXPECT_NE(kernel::validate_nic_attr(*s.k, a).find("rate"), std::string::npos);
  a.flows = {{5.0, 1}};
  a.irq_cpu = 2;
  EXPECT_NE(kernel::validate_nic_attr(*s.k, a).find("irq_cpu"), std::string::npos);
  a.irq_cpu = 1;
  EXPECT_EQ(kernel::validate_nic_attr(*s.k, a), "");
}

// Interrupt coalescing (rx-usecs): an unmasked queue waits until rx_usecs after its last
// interrupt, so 100 kpps for 10 ms give at most one interrupt per 50 us.
TEST(Napi, RxUsecsCoalescesInterrupts) {
  Sim s(exact_timers(flat_machine(1)), net_cfg());
  kernel::NicRxQueueAttr a;
  a.flows = {{100000.0, 1}};
  a.rx_usecs_ns = 50 * kUs;
  const int dev = kernel::netdev_add(s.k.get(), a);
  s.run(10 * kMs);
  const kernel::NetRxStats& st = kernel::netdev_rx_stats(*s.k, dev);
  EXPECT_LE(st.irqs, 201u);
  EXPECT_GE(st.irqs, 150u);
  EXPECT_GT(st.packets_received, 900u);
  EXPECT_EQ(st.packets_received + d_on_ring(s, dev), st.packets_arrived);
}

// The receive path allocates nothing per event: after a warm-up, more flood (softirq NAPI with
// the flag and ksoftirqd, threaded NAPI, the forced irq thread, delivery to a UDP socket read
// by a thread on the other CPU) makes no heap allocation.
TEST(Napi, SteadyStateReceiveMakesNoHeapAllocation) {
  for (int variant = 0; variant < 4; ++variant) {
    kernel::KernelConfig cfg = net_cfg(/*patch=*/true);
    cfg.softirq.napi_threaded = variant == 1;
    cfg.softirq.preempt_rt = variant == 2;
    Sim s(flat_machine(2), cfg);
    kernel::TaskAttr a;
    a.comm = "sender";
    a.cpus = {0};
    a.latency_sensitive = variant == 0;
    s.spawn(a, [](user::Thread& t) -> user::Program {
      for (;;) co_await t.sendto(64, 1500);
    });
    kernel::NicRxQueueAttr nic;
    nic.ring_size = 256;
    nic.flows = {{300000.0, 1}, {100000.0, 8}};
    if (variant == 3) {
      const int sock = s.k->add_udp_socket({});
      for (kernel::NetFlowAttr& f : nic.flows) f.sock = sock;
      kernel::TaskAttr srv;
      srv.comm = "server";
      srv.cpus = {1};
      s.spawn(srv, [sock](user::Thread& t) -> user::Program {
        for (;;) co_await t.recvmsg(sock, 1500);
      });
    }
    nic.rx_usecs_ns = 8 * kUs;
    kernel::netdev_add(s.k.get(), nic);
    s.k->start();
    // The warm-up also lets the runqueues' trees reach their largest size once.
    const sim::Time warm = variant == 3 ? 100 * kMs : 50 * kMs;
    s.engine.run_until(warm);
    const uint64_t before = testing_support::allocations.load();
    const uint64_t events = s.engine.events_fired();
    s.engine.run_until(warm + 50 * kMs);
    EXPECT_GT(s.engine.events_fired() - events, 10000u);
    EXPECT_EQ(testing_support::allocations.load() - before, 0u) << "variant " << variant;
  }
}
