// Softirq handling pinned against kernel/softirq.c: where pending work runs (hardirq exit,
// local_bh_enable(), ksoftirqd), handle_softirqs()' bounds, irq time accounting, and the
// latency_sensi_flag patch with its sched_setattr()/sched_getattr() ABI.
#include <gtest/gtest.h>

#include "kernel/sched/sched.h"
#include "kernel/softirq.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::TaskAttr pinned(int cpu) {
  kernel::TaskAttr a;
  a.comm = "t";
  a.cpus = {cpu};
  return a;
}

kernel::KernelConfig softirq_cfg(bool ksoftirqd, bool patch = false, int hz = 250) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.hz = hz;
  cfg.softirq.ksoftirqd = ksoftirqd;
  cfg.softirq.latency_sensi_flag = patch;
  return cfg;
}

// A device interrupt on `cpu` at `at` whose handler raises NET_RX with `work` ns of work,
// done at most `budget` ns per pass (net_rx_action() re-raising itself at its budget).
struct DeviceIrq {
  sim::Timer timer;
  kernel::rq* rq;
  sim::Time work;
  DeviceIrq(Sim& s, int cpu, sim::Time at, sim::Time w, sim::Time budget)
      : rq(s.k->rq_of(cpu)), work(w) {
    kernel::softirq_set_budget(rq, kernel::NET_RX_SOFTIRQ, budget);
    timer.ctx = this;
    timer.arg = static_cast<uint32_t>(cpu);
    timer.fn = [](sim::Timer* t, sim::Time now) {
      auto* d = static_cast<DeviceIrq*>(t->ctx);
      kernel::softirq_device_irq(d->rq, now, kernel::NET_RX_SOFTIRQ, d->work, 0);
    };
    s.engine.arm(&timer, at);
  }
};

const kernel::task_struct* ksoftirqd(const Sim& s, int cpu) { return s.k->cpu_rq(cpu).softirq.ksoftirqd; }

}  // namespace

// __local_bh_enable_ip(): softirq work raised inside a task's BH-disabled section (here
// NET_TX from sendto()'s transmit path) runs inline at its local_bh_enable(), on top of the
// task, and ksoftirqd is not woken.
TEST(Softirq, LocalBhEnableRunsWorkRaisedInItsSectionInline) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(/*ksoftirqd=*/true));
  int64_t ret = -1;
  const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    ret = co_await t.sendto(64, 2 * kUs, 300 * kUs);
  });
  s.run(10 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(ret, 64);
  EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, static_cast<uint64_t>(300 * kUs));
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_BH_ENABLE], static_cast<uint64_t>(300 * kUs));
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD], 0u);
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 0u);
  EXPECT_EQ(rq.softirq.count[kernel::NET_TX_SOFTIRQ], 1u);
  EXPECT_EQ(ksoftirqd(s, 0)->se.sum_exec_runtime, 0u);
}

// The patch: the same local_bh_enable() of a task with latency_sensi_flag wakes ksoftirqd,
// which runs the work as its own.
TEST(Softirq, LatencySensitiveTaskWakesKsoftirqdInsteadOfRunningTheWork) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(true, /*patch=*/true));
  kernel::TaskAttr a = pinned(0);
  a.latency_sensitive = true;
  const int pid = s.spawn(a, [&](user::Thread& t) -> user::Program {
    co_await t.sendto(64, 2 * kUs, 300 * kUs);
  });
  s.run(10 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, 0u);
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 1u);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD], static_cast<uint64_t>(300 * kUs));
  EXPECT_GE(ksoftirqd(s, 0)->se.sum_exec_runtime, static_cast<uint64_t>(300 * kUs));
  EXPECT_EQ(ksoftirqd(s, 0)->__state, kernel::TASK_INTERRUPTIBLE);  // back asleep, nothing pending
  testing_support::check_invariants(*s.k, 10 * kMs);
}

// A task without the flag on a patched kernel behaves as on mainline.
TEST(Softirq, PatchedKernelLeavesUnflaggedTasksAsMainline) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(true, /*patch=*/true));
  const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    co_await t.sendto(64, 2 * kUs, 300 * kUs);
  });
  s.run(10 * kMs);
  EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, static_cast<uint64_t>(300 * kUs));
  EXPECT_EQ(s.k->cpu_rq(0).softirq.nr_wakeup_softirqd, 0u);
}

// handle_softirqs() at hardirq exit runs at most MAX_SOFTIRQ_RESTART (10) passes; NET_RX
// work left (its action re-raised itself at its budget) goes to ksoftirqd, which runs it.
TEST(Softirq, MaxSoftirqRestartHandsTheRestToKsoftirqd) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(true));
  DeviceIrq irq(s, 0, 1 * kMs, 3 * kMs, 100 * kUs);  // 30 passes of work, 10 fit in 1 ms < 1 jiffy
  s.run(20 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], static_cast<uint64_t>(1 * kMs));
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD], static_cast<uint64_t>(2 * kMs));
  EXPECT_EQ(rq.softirq.count[kernel::NET_RX_SOFTIRQ], 30u);
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 1u);
  EXPECT_EQ(rq.softirq.pending, 0u);
}

// ksoftirqd is a kernel thread: its preemption points (the interrupt's return to kernel mode,
// preempt_enable() and cond_resched() between rounds) test the hard bit only. A fair task
// waking at 2.5 ms while ksoftirqd works through a NET_RX backlog gets the lazy bit under
// lazy preemption and runs only after the 4 ms tick makes it hard; under full preemption the
// hard bit takes it in at ksoftirqd's next preemption point, within the current round.
TEST(Softirq, KsoftirqdLeavesALazyRequestForTheTick) {
  for (const kernel::PreemptModel m : {kernel::PreemptModel::Lazy, kernel::PreemptModel::Full}) {
    SCOPED_TRACE(kernel::preempt_name(m));
    kernel::KernelConfig cfg = softirq_cfg(true);
    cfg.preempt = m;
    Sim s(exact_timers(flat_machine(1)), cfg);
    DeviceIrq irq(s, 0, 1 * kMs, 12 * kMs, 100 * kUs);  // ksoftirqd busy from 2 ms on
    sim::Time ran = -1;
    s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
      co_await t.sleep_until(2500 * kUs);
      ran = t.now();
    });
    s.run(20 * kMs);
    ASSERT_GT(ksoftirqd(s, 0)->se.sum_exec_runtime, static_cast<uint64_t>(2 * kMs));
    if (m == kernel::PreemptModel::Lazy) {
      EXPECT_GE(ran, 4 * kMs) << "the lazy request waited for the tick";
      EXPECT_LT(ran, 4 * kMs + 1100 * kUs);
    } else {
      EXPECT_LT(ran, 3 * kMs + 100 * kUs);
    }
  }
}

// The time bound: passes restart only while time_before(jiffies, end), end = jiffies +
// MAX_SOFTIRQ_TIME (2 jiffies at HZ=1000). From 0.5 ms, 400 us passes end at 0.9, 1.3, 1.7
// and 2.1 ms: the fourth reaches jiffy 2 and the rest goes to ksoftirqd.
TEST(Softirq, MaxSoftirqTimeHandsTheRestToKsoftirqd) {
  ASSERT_EQ(kernel::max_softirq_time_jiffies(1000), 2u);
  ASSERT_EQ(kernel::max_softirq_time_jiffies(250), 1u);
  ASSERT_EQ(kernel::max_softirq_time_jiffies(100), 1u);
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(true, false, /*hz=*/1000));
  DeviceIrq irq(s, 0, 500 * kUs, 5 * kMs, 400 * kUs);
  s.run(20 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], static_cast<uint64_t>(1600 * kUs));
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 1u);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD] + rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT],
            static_cast<uint64_t>(5 * kMs));  // the ticks' exits may take a share of the rest
}

// Without ksoftirqd (wakeup_softirqd() finds none) the work an interrupt's exit left pending
// waits for the next place that runs softirqs: here the running task's next
// local_bh_enable(), which takes 10 passes of it on top of the task.
TEST(Softirq, PendingNetRxRunsInTheNextLocalBhEnable) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(/*ksoftirqd=*/false));
  DeviceIrq irq(s, 0, 1 * kMs, 3 * kMs, 100 * kUs);
  sim::Time sent_at = -1;
  const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    co_await t.compute(1500 * kUs);  // ends at 2.5 ms: the interrupt took 1 ms of it
    sent_at = t.now();
    co_await t.sendto(64, 2 * kUs);
    co_await t.nanosleep(10 * kMs);
  });
  s.run(3900 * kUs);  // before the first tick (4 ms) could run the rest
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_GT(sent_at, 2 * kMs);
  EXPECT_LT(sent_at, 2600 * kUs);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], static_cast<uint64_t>(1 * kMs));
  EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, static_cast<uint64_t>(1 * kMs));
  EXPECT_EQ(s.task(pid).stats.softirq_ns, static_cast<uint64_t>(2 * kMs));  // both stolen from it
  EXPECT_EQ(rq.softirq.work_ns[kernel::NET_RX_SOFTIRQ], 1 * kMs);
  EXPECT_NE(rq.softirq.pending, 0u);
}

// need_resched() ends handle_softirqs() after the current pass: with the interrupted task
// asked to reschedule, one pass runs at hardirq exit and ksoftirqd gets the rest.
TEST(Softirq, NeedReschedHandsTheRestToKsoftirqdAfterOnePass) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(true));
  DeviceIrq irq(s, 0, 1 * kMs, 3 * kMs, 100 * kUs);
  sim::Timer resched;
  resched.ctx = s.k->rq_of(0);
  resched.fn = [](sim::Timer* t, sim::Time) {
    static_cast<kernel::rq*>(t->ctx)->curr->thread_flags |= kernel::TIF_NEED_RESCHED;
  };
  s.engine.arm(&resched, 1 * kMs - 1);  // just before the interrupt
  s.spawn(pinned(0), [&](user::Thread& t) -> user::Program { co_await t.compute(5 * kMs); });
  s.run(20 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], static_cast<uint64_t>(100 * kUs));
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 1u);
}

// CONFIG_IRQ_TIME_ACCOUNTING: softirq time run on top of a task leaves its clock_task, so
// its runtime (sum_exec_runtime, and vruntime) no longer includes it; without it the task
// is charged. Same run, 1 ms of softirq at its hardirq exit.
TEST(Softirq, IrqTimeAccountingTakesSoftirqTimeOutOfTheTasksRuntime) {
  uint64_t runtime[2] = {0, 0};
  for (int on = 0; on < 2; ++on) {
    kernel::KernelConfig cfg = softirq_cfg(false);
    cfg.softirq.irq_time_accounting = on;
    Sim s(exact_timers(flat_machine(1)), cfg);
    DeviceIrq irq(s, 0, 1 * kMs, 1 * kMs, 0);
    const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
      co_await t.compute(5 * kMs);
      co_await t.nanosleep(100 * kMs);  // the switch away updates its runtime
    });
    s.run(20 * kMs);
    runtime[on] = s.task(pid).se.sum_exec_runtime;
    EXPECT_EQ(s.task(pid).stats.softirq_ns, static_cast<uint64_t>(1 * kMs));
  }
  EXPECT_EQ(runtime[0] - runtime[1], static_cast<uint64_t>(1 * kMs));
}

// PREEMPT_RT: hardirq exit never runs softirqs (ksoftirqd does); local_bh_enable() runs them
// in the task; the patch's RT variant wakes ksoftirqd for a flagged task.
TEST(Softirq, PreemptRtRunsNothingAtHardirqExit) {
  kernel::KernelConfig cfg = softirq_cfg(true);
  cfg.softirq.preempt_rt = true;
  Sim s(exact_timers(flat_machine(1)), cfg);
  DeviceIrq irq(s, 0, 1 * kMs, 500 * kUs, 0);
  s.run(10 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], 0u);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD], static_cast<uint64_t>(500 * kUs));
}

TEST(Softirq, PreemptRtLocalBhEnableRunsInTheTaskUnlessFlagged) {
  for (int flagged = 0; flagged < 2; ++flagged) {
    kernel::KernelConfig cfg = softirq_cfg(true, /*patch=*/true);
    cfg.softirq.preempt_rt = true;
    Sim s(exact_timers(flat_machine(1)), cfg);
    kernel::TaskAttr a = pinned(0);
    a.latency_sensitive = flagged;
    const int pid = s.spawn(a, [&](user::Thread& t) -> user::Program {
      co_await t.sendto(64, 2 * kUs, 300 * kUs);
    });
    s.run(10 * kMs);
    EXPECT_EQ(s.task(pid).stats.softirq_bh_ns, flagged ? 0u : static_cast<uint64_t>(300 * kUs));
    EXPECT_EQ(s.k->cpu_rq(0).softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD],
              flagged ? static_cast<uint64_t>(300 * kUs) : 0u);
  }
}

// ---- sched_setattr() / sched_getattr() ----

namespace {

struct SetattrResult {
  int64_t ret = 1;
  int64_t get_ret = 1;
  kernel::sched_attr got;
  bool flag = false;
};

// Runs one sched_setattr(0, attr) then sched_getattr(0) in a task on a kernel with or
// without the patch.
SetattrResult setattr_once(bool patch, kernel::sched_attr attr) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(false, patch));
  SetattrResult r;
  const int pid = s.spawn(pinned(0), [&](user::Thread& t) -> user::Program {
    r.ret = co_await t.sched_setattr(0, &attr);
    r.get_ret = co_await t.sched_getattr(0, &r.got);
  });
  s.run(1 * kMs);
  r.flag = s.task(pid).latency_sensi_flag;
  return r;
}

kernel::sched_attr keep_all(uint64_t flags, uint32_t value) {
  kernel::sched_attr a;
  a.size = sizeof(kernel::sched_attr);
  a.sched_flags = flags | kernel::SCHED_FLAG_KEEP_POLICY | kernel::SCHED_FLAG_KEEP_PARAMS;
  a.sched_latency_sensi_flag = value;
  return a;
}

}  // namespace

TEST(Softirq, SchedSetattrSetsTheFlagAndSchedGetattrReportsIt) {
  const SetattrResult r = setattr_once(true, keep_all(kernel::SCHED_FLAG_LATENCY_SENSITIVE, 1));
  EXPECT_EQ(r.ret, 0);
  EXPECT_TRUE(r.flag);
  EXPECT_EQ(r.get_ret, 0);
  EXPECT_EQ(r.got.size, sizeof(kernel::sched_attr));
  EXPECT_EQ(r.got.sched_latency_sensi_flag, 1u);
  EXPECT_TRUE(r.got.sched_flags & kernel::SCHED_FLAG_LATENCY_SENSITIVE);
  EXPECT_EQ(r.got.sched_policy, static_cast<uint32_t>(SCHED_NORMAL));
}

// Above 1 is -EINVAL, in the early (nothing else changes) path and in the full path (here
// sched_runtime 0 differs from the task's slice, as the 6.12+ check compares them), and
// without the flag bit too: the patch checks the value before either path.
TEST(Softirq, SchedSetattrRejectsFlagValuesAboveOne) {
  const SetattrResult early = setattr_once(true, keep_all(kernel::SCHED_FLAG_LATENCY_SENSITIVE, 2));
  EXPECT_EQ(early.ret, -EINVAL);
  EXPECT_FALSE(early.flag);
  kernel::sched_attr full;
  full.size = sizeof(kernel::sched_attr);
  full.sched_policy = SCHED_NORMAL;
  full.sched_flags = kernel::SCHED_FLAG_LATENCY_SENSITIVE;
  full.sched_latency_sensi_flag = 7;
  const SetattrResult r = setattr_once(true, full);
  EXPECT_EQ(r.ret, -EINVAL);
  EXPECT_FALSE(r.flag);
  full.sched_latency_sensi_flag = 1;  // the full path sets it too
  EXPECT_TRUE(setattr_once(true, full).flag);
  EXPECT_EQ(setattr_once(true, keep_all(0, 2)).ret, -EINVAL);
  const SetattrResult no_bit = setattr_once(true, keep_all(0, 1));  // a value without the bit
  EXPECT_EQ(no_bit.ret, 0);
  EXPECT_FALSE(no_bit.flag);
}

// On a kernel without the patch: 0x80 is outside SCHED_FLAG_ALL (-EINVAL); a non-zero
// trailing field beyond the 56 bytes it knows is -E2BIG with its size written back; a
// 56-byte struct with the flag bit clear is accepted; sched_getattr() writes 56 bytes.
TEST(Softirq, UnpatchedKernelAnswersAsMainline) {
  kernel::sched_attr a = keep_all(kernel::SCHED_FLAG_LATENCY_SENSITIVE, 0);
  EXPECT_EQ(setattr_once(false, a).ret, -EINVAL);
  a = keep_all(0, 1);
  SetattrResult r = setattr_once(false, a);
  EXPECT_EQ(r.ret, -E2BIG);
  a = keep_all(0, 0);
  a.size = kernel::SCHED_ATTR_SIZE_VER1;
  r = setattr_once(false, a);
  EXPECT_EQ(r.ret, 0);
  EXPECT_EQ(r.got.size, kernel::SCHED_ATTR_SIZE_VER1);
  EXPECT_FALSE(r.flag);
}

TEST(Softirq, TheFlagOnAKernelWithoutThePatchIsABadParameter) {
  Sim s(exact_timers(flat_machine(1)), softirq_cfg(false, /*patch=*/false));
  kernel::TaskAttr a = pinned(0);
  a.latency_sensitive = true;
  EXPECT_NE(s.k->validate_attr(a).find("latency_sensitive"), std::string::npos);
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  EXPECT_EQ(kernel::set_config_key(&cfg, "softirq.latency_sensi_flag", "true"), "");
  EXPECT_TRUE(cfg.softirq.latency_sensi_flag);
  EXPECT_NE(kernel::set_config_key(&cfg, "softirq.ksoftirqd", "maybe").find("softirq.ksoftirqd"),
            std::string::npos);
  EXPECT_NE(kernel::set_config_key(&cfg, "softirq.bogus", "1"), "");
  cfg = kernel::default_config(kernel::KernelVersion::V6_12);
  cfg.softirq.preempt_rt = true;
  EXPECT_NE(kernel::validate_config(cfg).find("softirq.preempt_rt"), std::string::npos);
}

// Boot option threadirqs (force_irqthreads()): invoke_softirq() wakes ksoftirqd instead of
// running the work at hardirq exit.
TEST(Softirq, ThreadirqsHandsHardirqExitWorkToKsoftirqd) {
  kernel::KernelConfig cfg = softirq_cfg(true);
  cfg.softirq.threadirqs = true;
  Sim s(exact_timers(flat_machine(1)), cfg);
  DeviceIrq irq(s, 0, 1 * kMs, 500 * kUs, 0);
  s.run(10 * kMs);
  const kernel::rq& rq = s.k->cpu_rq(0);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_AT_IRQ_EXIT], 0u);
  EXPECT_EQ(rq.softirq.ns[kernel::SOFTIRQ_IN_KSOFTIRQD], static_cast<uint64_t>(500 * kUs));
  EXPECT_EQ(rq.softirq.nr_wakeup_softirqd, 1u);
}
