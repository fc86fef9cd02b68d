// The kernel's tracepoints at their sites (kernel/trace_points.h): what each reports and in
// which order, seen through a sink that keeps every record.
#include <gtest/gtest.h>

#include <vector>

#include "kernel/trace.h"
#include "kernel/softirq.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

struct Recorder : kernel::TraceSink {
  std::vector<kernel::TraceRecord> records;
  void record(const kernel::TraceRecord& r) override { records.push_back(r); }
  std::vector<kernel::TraceRecord> of(kernel::TraceEvent e) const {
    std::vector<kernel::TraceRecord> out;
    for (const auto& r : records)
      if (r.type == e) out.push_back(r);
    return out;
  }
};

kernel::TaskAttr pinned(int cpu) {
  kernel::TaskAttr a;
  a.comm = "t";
  a.cpus = {cpu};
  return a;
}

}  // namespace

using kernel::TraceEvent;

// sched_switch's prev_state: S for a task going to sleep, X for one that exited (after its
// sched_process_exit); the sleeper is woken from the nanosleep hrtimer's interrupt
// (irq_handler_entry, hrtimer_expire_entry of hrtimer_wakeup, sched_wakeup, then the exits).
TEST(Tracepoints, SleepSwitchesOutAsSExitAsXAndTheTimerIrqWakesTheSleeper) {
  Sim s(exact_timers(flat_machine(1)));
  Recorder rec;
  s.k->set_trace_sink(&rec);
  const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    co_await t.compute(100 * kUs);
    co_await t.nanosleep(1 * kMs);
    co_await t.compute(100 * kUs);
  });
  s.run(5 * kMs);
  std::vector<long> states;
  for (const auto& r : rec.of(TraceEvent::sched_switch))
    if (r.a.pid == pid) states.push_back(r.state);
  EXPECT_EQ(states, (std::vector<long>{kernel::kTraceStateSleeping, kernel::kTraceStateDead}));
  // The order around the wakeup.
  std::vector<TraceEvent> order;
  bool in = false;
  for (const auto& r : rec.records) {
    if (r.type == TraceEvent::hrtimer_expire_entry && r.timer == kernel::TraceHrtimer::hrtimer_wakeup) in = true;
    if (in && r.type == TraceEvent::irq_handler_exit) {
      order.push_back(r.type);
      break;
    }
    if (in) order.push_back(r.type);
  }
  EXPECT_EQ(order, (std::vector<TraceEvent>{TraceEvent::hrtimer_expire_entry, TraceEvent::sched_wakeup,
                                            TraceEvent::hrtimer_expire_exit, TraceEvent::irq_handler_exit}));
  const auto wakeups = rec.of(TraceEvent::sched_wakeup);
  ASSERT_EQ(wakeups.size(), 1u);
  EXPECT_EQ(wakeups[0].a.pid, pid);
  EXPECT_GE(wakeups[0].ts, 100 * kUs + 1 * kMs);  // the sleep began after the compute and its syscall entry
  EXPECT_LT(wakeups[0].ts, 200 * kUs + 1 * kMs);
  const auto exits = rec.of(TraceEvent::sched_process_exit);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].a.pid, pid);
  EXPECT_STREQ(exits[0].a.comm, "t");
}

// A tick preempting one of two CPU hogs in user mode: the switch is made on the return from
// the tick's interrupt by exit_to_user_mode_loop()'s plain schedule() (SM_NONE), so
// prev_state is the task's state, R (running), not R+ (TASK_REPORT_MAX, a preemption inside
// the kernel); the last records before it are that interrupt's, from the tick handler's
// expiry to the irq_handler_exit, at the switch's time. The idle task appears as swapper/N,
// pid 0, prio 120.
TEST(Tracepoints, TickPreemptionOfUserCodeIsReportedAsR) {
  Sim s(exact_timers(flat_machine(1)));
  Recorder rec;
  s.k->set_trace_sink(&rec);
  for (int i = 0; i < 2; ++i)
    s.spawn(pinned(0), [](user::Thread& t) -> user::Program { co_await t.compute(50 * kMs); });
  s.run(20 * kMs);
  int from_idle = 0, r_plus = 0;
  for (const auto& r : rec.of(TraceEvent::sched_switch)) {
    r_plus += r.state == kernel::kTraceStatePreempted;
    if (r.a.pid == 0) {
      from_idle++;
      EXPECT_STREQ(r.a.comm, "swapper/0");
      EXPECT_EQ(r.a.prio, 120);
    }
  }
  EXPECT_EQ(r_plus, 0);
  EXPECT_EQ(from_idle, 1);
  bool in_tick = false;
  sim::Time tick_exit = -1;
  int preempted = 0, after_tick = 0;
  for (const auto& r : rec.records) {
    if (r.type == TraceEvent::irq_handler_entry) in_tick = false, tick_exit = -1;
    if (r.type == TraceEvent::hrtimer_expire_entry)
      in_tick = r.timer == kernel::TraceHrtimer::tick_nohz_handler;
    if (r.type == TraceEvent::irq_handler_exit && in_tick) tick_exit = r.ts;
    if (r.type == TraceEvent::sched_switch && r.a.pid != 0 && r.state == 0) {  // R
      ++preempted;
      EXPECT_EQ(r.ts, tick_exit) << "a switch of a running hog at " << r.ts
                                 << " not at a tick's return";
      after_tick += r.ts == tick_exit;
    }
  }
  EXPECT_GT(preempted, 0);
  EXPECT_EQ(after_tick, preempted);
}

// softirq_entry/softirq_exit bracket each vector handle_softirqs() runs: here NET_TX raised
// by sendto() and run at its local_bh_enable().
TEST(Tracepoints, SoftirqEntryAndExitBracketTheVectorRun) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  Sim s(exact_timers(flat_machine(1)), cfg);
  Recorder rec;
  s.k->set_trace_sink(&rec);
  s.spawn(pinned(0), [&](user::Thread& t) -> user::Program { co_await t.sendto(64, 2 * kUs, 300 * kUs); });
  s.run(5 * kMs);
  std::vector<std::pair<TraceEvent, unsigned>> got;
  for (const auto& r : rec.records)
    if (r.type == TraceEvent::softirq_entry || r.type == TraceEvent::softirq_exit) got.emplace_back(r.type, r.vec);
  EXPECT_EQ(got, (std::vector<std::pair<TraceEvent, unsigned>>{{TraceEvent::softirq_entry, kernel::NET_TX_SOFTIRQ},
                                                                {TraceEvent::softirq_exit, kernel::NET_TX_SOFTIRQ}}));
}

// Tracing only observes: a run with a sink fires the same events and gives its tasks the
// same CPU time and switches as one without, and a sink taken away (set_trace_sink(nullptr),
// every run's default) is given nothing more.
TEST(Tracepoints, ASinkChangesNoResultAndARemovedOneIsGivenNothing) {
  struct Out {
    uint64_t events = 0;
    std::vector<uint64_t> runtime_and_switches;
    size_t records_at_removal = 0, records = 0;
  };
  auto run = [](Recorder* rec) {
    Sim s(exact_timers(flat_machine(1)));
    if (rec) s.k->set_trace_sink(rec);
    std::vector<int> pids;
    for (int i = 0; i < 2; ++i)
      pids.push_back(s.spawn(pinned(0), [](user::Thread& t) -> user::Program {
        co_await t.compute(50 * kMs);
      }));
    s.k->start();
    s.engine.run_until(10 * kMs);
    Out o;
    o.records_at_removal = rec ? rec->records.size() : 0;
    s.k->set_trace_sink(nullptr);
    s.engine.run_until(20 * kMs);
    s.k->finish(20 * kMs);
    o.events = s.engine.events_fired();
    o.records = rec ? rec->records.size() : 0;
    for (int pid : pids) {
      const kernel::task_struct& t = s.task(pid);
      o.runtime_and_switches.push_back(t.se.sum_exec_runtime);
      o.runtime_and_switches.push_back(t.stats.nr_switches_involuntary);
    }
    return o;
  };
  Recorder rec;
  const Out traced = run(&rec);
  const Out plain = run(nullptr);
  EXPECT_GT(traced.records_at_removal, 0u);  // the sink was given the first 10 ms
  EXPECT_EQ(traced.records, traced.records_at_removal);
  EXPECT_EQ(traced.events, plain.events);
  EXPECT_EQ(traced.runtime_and_switches, plain.runtime_and_switches);
  EXPECT_GT(plain.runtime_and_switches[1], 0u);  // the tick preempted: something could change
}

// pull_rt_task() returns when the only overloaded CPU is its own: CPU 0 keeps two migratable
// FIFO tasks queued behind a third that sleeps and wakes, and CPU 1 is held by a more important
// pinned one, so every drop of CPU 0's priority finds CPU 0 the one overloaded CPU. No push IPI
// goes out (nothing but the timer interrupts); without the check each drop sent CPU 0 one.
TEST(Tracepoints, TheOnlyOverloadedCpuSendsNoRtPushIpiWhenItsPriorityDrops) {
  Sim s(exact_timers(flat_machine(2)));
  Recorder rec;
  s.k->set_trace_sink(&rec);
  auto rt = [](std::vector<int> cpus, int prio) {
    kernel::TaskAttr a;
    a.comm = "rt";
    a.policy = SCHED_FIFO;
    a.rt_priority = prio;
    a.cpus = std::move(cpus);
    return a;
  };
  auto spin = [](user::Thread& t) -> user::Program {
    for (;;) co_await t.compute(1000 * kMs);
  };
  s.spawn(rt({1}, 99), spin);
  s.spawn(rt({0}, 50), [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(1 * kMs);
      co_await t.nanosleep(1 * kMs);
    }
  });
  const int a = s.spawn(rt({0, 1}, 20), spin);
  const int b = s.spawn(rt({0, 1}, 10), spin);
  s.run(50 * kMs);
  EXPECT_GT(s.task(a).stats.run_ns, 10 * kMs);  // the setup: the queued ones run on CPU 0
  EXPECT_EQ(s.task(b).stats.run_ns, 0);
  int timer = 0, other = 0;
  for (const auto& r : rec.of(TraceEvent::irq_handler_entry))
    if (r.ts > 1 * kMs) ++(r.irq == kernel::kIrqLocalTimer ? timer : other);  // after the forks
  EXPECT_GT(timer, 20);
  EXPECT_EQ(other, 0);
}

// dl_server_start() reschedules the current task unless it is a deadline task with an earlier
// deadline: a fair task woken from CPU 0 onto CPU 1, where a FIFO hog runs and no fair task is
// queued, starts CPU 1's fair server, and the hog gets a reschedule IPI (and is picked again:
// the server waits for zero laxity). 6.12: the fair task's sleep stopped the server (since
// 6.17 a started server stays so until its own pick finds nothing).
TEST(Tracepoints, AFairWakeupThatStartsTheServerReschedulesTheRtTask) {
  Sim s(exact_timers(flat_machine(2)), kernel::default_config(kernel::KernelVersion::V6_12));
  Recorder rec;
  s.k->set_trace_sink(&rec);
  kernel::TaskAttr rt;
  rt.comm = "rt";
  rt.policy = SCHED_FIFO;
  rt.rt_priority = 50;
  rt.cpus = {1};
  kernel::UserWord word;
  const int fair = s.spawn(pinned(1), [&](user::Thread& t) -> user::Program {
    while (t.load(&word) == 0) co_await t.futex_wait(&word, 0);
  });
  s.spawn(rt, [](user::Thread& t) -> user::Program {
    co_await t.sleep_until(1 * kMs);  // the fair task sleeps on CPU 1 before the hog runs
    for (;;) co_await t.compute(1000 * kMs);
  });
  s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    co_await t.compute(2 * kMs);
    t.store(&word, 1);
    co_await t.futex_wake(&word, 1);
  });
  s.run(10 * kMs);
  ASSERT_EQ(s.task(fair).se.sum_exec_runtime < 1 * kMs, true);  // starved: the hog holds CPU 1
  int ipis = 0;
  for (const auto& r : rec.of(TraceEvent::irq_handler_entry))
    if (r.cpu == 1 && r.ts > 2 * kMs && r.irq != kernel::kIrqLocalTimer) ++ipis;
  EXPECT_EQ(ipis, 1);
  int switches = 0;
  for (const auto& r : rec.of(TraceEvent::sched_switch))
    if (r.cpu == 1 && r.ts > 2 * kMs) ++switches;
  EXPECT_EQ(switches, 0) << "the hog is picked again";
}
