// An interrupt that reaches an idle CPU in its idle state runs its handler once the CPU has left
// that state, the profile's idle_exit_ns later (the C-state's exit latency), whatever raised
// it: a timer, a device's completion, a NIC queue. Interrupts that come while the CPU leaves
// idle run at the same end, an IPI too; a CPU that is running something takes them at once.
#include <gtest/gtest.h>

#include <map>

#include "kernel/cpu_exec.h"
#include "kernel/interrupt.h"
#include "kernel/net/nic.h"
#include "kernel/sched/sched.h"
#include "kernel/trace.h"
#include "tests/kernel/harness.h"

namespace {

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

// The first wakeup of each task, by pid.
struct Wakeups : kernel::TraceSink {
  std::map<int, sim::Time> at;
  void record(const kernel::TraceRecord& r) override {
    if (r.type == kernel::TraceEvent::sched_wakeup) at.emplace(r.a.pid, r.ts);
  }
};

hw::Machine with_idle_exit(int cpus, sim::Time exit_ns) {
  hw::Machine m = exact_timers(flat_machine(cpus));
  m.costs.idle_exit_ns = exit_ns;
  return m;
}

kernel::TaskAttr rt_on(int cpu) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  a.policy = SCHED_FIFO;
  a.rt_priority = 50;
  return a;
}

user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(sim::kNsecPerSec);
}

// An RT task's sleep (no timer slack) ends at 1 ms. On an idle CPU its timer's handler, and
// so the wakeup, comes idle_exit_ns late; beside a task that keeps the CPU busy, on time.
TEST(IdleExit, ATimerOnAnIdleCpuRunsItsHandlerOnceTheCpuHasLeftIdle) {
  for (sim::Time exit_ns : {sim::Time{0}, sim::Time{2 * kUs}, sim::Time{25 * kUs}}) {
    for (bool busy : {false, true}) {
      Sim s(with_idle_exit(1, exit_ns));
      Wakeups w;
      s.k->set_trace_sink(&w);
      if (busy) s.spawn({}, hog);
      const int p = s.spawn(rt_on(0), [](user::Thread& t) -> user::Program {
        co_await t.sleep_until(1 * kMs);
      });
      s.run(2 * kMs);
      SCOPED_TRACE(testing::Message() << "exit " << exit_ns << (busy ? " busy" : " idle"));
      ASSERT_TRUE(w.at.count(p));
      EXPECT_EQ(w.at[p], 1 * kMs + (busy ? 0 : exit_ns));
    }
  }
}

// A sleep ending at 1000 us and a read whose data arrives at 1001 us, on one idle CPU with a
// 2 us exit: the read's completion interrupt comes while the CPU leaves idle for the timer's,
// and runs when it is out (1002 us), not 2 us after its own arrival.
TEST(IdleExit, AnInterruptDuringTheExitRunsAtItsEnd) {
  Sim s(with_idle_exit(1, 2 * kUs));
  Wakeups w;
  s.k->set_trace_sink(&w);
  const int sleeper = s.spawn(rt_on(0), [](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1000 * kUs);
  });
  const int reader = s.spawn(rt_on(0), [](user::Thread& t) -> user::Program {
    co_await t.read_after(1001 * kUs - t.now());
  });
  s.run(2 * kMs);
  EXPECT_EQ(w.at[sleeper], 1002 * kUs);
  // The sleeper's wakeup preempts nothing (the CPU was idle): the reader's interrupt then
  // finds the CPU awake, in the sleeper's switch, and runs at once.
  EXPECT_EQ(w.at[reader], 1002 * kUs);
}

// An IPI reaching a CPU that is leaving idle for a timer's interrupt shares that exit: CPU 1's
// sleep timer comes at 1 ms (exit until 1.002 ms); an IPI sent 0.5 us later, which reaches
// the CPU one IPI latency (1 us) later, runs when the exit ends, not an exit after it.
TEST(IdleExit, AnIpiToACpuLeavingIdleComesAtTheEndOfThatExit) {
  Sim s(with_idle_exit(2, 2 * kUs));
  struct CallFunction : kernel::TraceSink {
    sim::Time at = -1;
    void record(const kernel::TraceRecord& r) override {
      if (r.type == kernel::TraceEvent::irq_handler_entry && r.cpu == 1 &&
          r.irq == kernel::kIrqCallFunction && at < 0)
        at = r.ts;
    }
  } ipi;
  s.k->set_trace_sink(&ipi);
  s.spawn(rt_on(1), [](user::Thread& t) -> user::Program { co_await t.sleep_until(1 * kMs); });
  testing_support::Sampler send(s, sim::kNsecPerSec, [&](sim::Time) {
    kernel::smp_send_ipi(s.k.get(), 1, kernel::IPI_NOHZ_KICK);
  }, 1 * kMs + 500);
  s.run(2 * kMs);
  EXPECT_EQ(ipi.at, 1 * kMs + 2 * kUs);
}

// The other way round: an IPI reaches idle CPU 1 at 1.001 ms (sent at 1 ms) and the CPU
// leaves idle until 1.003 ms; a sleep timer due at 1.002 ms arrives during that exit and runs
// at its end, not an exit after its own arrival.
TEST(IdleExit, ATimerArrivingDuringAnIpisExitRunsAtItsEnd) {
  Sim s(with_idle_exit(2, 2 * kUs));
  Wakeups w;
  s.k->set_trace_sink(&w);
  const int p = s.spawn(rt_on(1), [](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1002 * kUs);
  });
  testing_support::Sampler send(s, sim::kNsecPerSec, [&](sim::Time) {
    kernel::smp_send_ipi(s.k.get(), 1, kernel::IPI_RESCHEDULE);
  }, 1 * kMs);
  s.run(2 * kMs);
  ASSERT_TRUE(w.at.count(p));
  EXPECT_EQ(w.at[p], 1003 * kUs);
}

// An IPI takes an exit only if its CPU is idle when it arrives. With an IPI latency (5 us)
// longer than the exit (2 us): CPU 1 is idle until its RT task's sleep timer at 1 ms brings
// it out (at 1.002 ms) and wakes the task, which then computes; an IPI sent at 0.999 ms,
// while CPU 1 was idle, reaches it busy at 1.004 ms and runs at once.
TEST(IdleExit, AnIpiReachingACpuThatLeftIdleRunsAtOnce) {
  hw::Machine m = with_idle_exit(2, 2 * kUs);
  m.costs.ipi_latency_ns = 5 * kUs;
  Sim s(m);
  struct Ipis : kernel::TraceSink {
    std::vector<sim::Time> at;
    void record(const kernel::TraceRecord& r) override {
      if (r.type == kernel::TraceEvent::irq_handler_entry && r.cpu == 1 &&
          r.irq == kernel::kIrqReschedule && r.ts >= 1 * kMs)  // (the task's start sends one)
        at.push_back(r.ts);
    }
  } ipis;
  s.k->set_trace_sink(&ipis);
  s.spawn(rt_on(1), [](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1 * kMs);
    co_await t.compute(1 * kMs);
  });
  testing_support::Sampler send(s, sim::kNsecPerSec, [&](sim::Time) {
    kernel::smp_send_ipi(s.k.get(), 1, kernel::IPI_RESCHEDULE);
  }, 999 * kUs);
  s.run(2 * kMs);
  ASSERT_EQ(ipis.at.size(), 1u);
  EXPECT_EQ(ipis.at[0], 1004 * kUs);
}

// The first NET_RX pass on a CPU.
struct FirstNetRx : kernel::TraceSink {
  sim::Time at = -1;
  void record(const kernel::TraceRecord& r) override {
    constexpr unsigned kNetRx = kernel::NET_RX_SOFTIRQ;
    if (r.type == kernel::TraceEvent::softirq_entry && r.vec == kNetRx && at < 0) at = r.ts;
  }
};

// Two NIC queues whose interrupts are on idle CPU 0 (exit 3 us) receive packets at 1000 and
// 1001 us. Each raises its interrupt then (the coalescing interval counts from there), and
// both handlers run when the CPU is out of idle, at 1003 us, with the NET_RX they raise. The
// first queue's two flows arrive together: the second flow's packets find the queue's
// interrupt raised and waiting, and raise no other.
TEST(IdleExit, ANicInterruptOnAnIdleCpuWaitsForTheExit) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.softirq.ksoftirqd = true;
  Sim s(with_idle_exit(1, 3 * kUs), cfg);
  FirstNetRx rx;
  s.k->set_trace_sink(&rx);
  auto queue = [](sim::Time at, int flows) {
    kernel::NicRxQueueAttr a;
    a.flows.assign(static_cast<size_t>(flows), {1.0, 4});  // 4 packets, the next seconds later
    a.start = at;
    a.end = at + 1;
    return a;
  };
  const int a = kernel::netdev_add(s.k.get(), queue(1000 * kUs, 2));
  const int b = kernel::netdev_add(s.k.get(), queue(1001 * kUs, 1));
  s.run(2 * kMs);
  const kernel::net_device& da = *s.k->net->devs[static_cast<size_t>(a)];
  const kernel::net_device& db = *s.k->net->devs[static_cast<size_t>(b)];
  EXPECT_EQ(da.last_irq, 1000 * kUs);
  EXPECT_EQ(db.last_irq, 1001 * kUs);
  EXPECT_GE(rx.at, 1003 * kUs);
  EXPECT_LT(rx.at, 1003 * kUs + 2 * kUs);
  EXPECT_EQ(da.stats.irqs, 1u);
  EXPECT_EQ(db.stats.irqs, 1u);
  EXPECT_EQ(da.stats.packets_received, 8u);
  EXPECT_EQ(db.stats.packets_received, 4u);
}

}  // namespace
