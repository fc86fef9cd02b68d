// The time slice extension against cpu.max throttling: a lock holder in a group whose quota
// runs out inside its critical section, for each design (rfc, rseq2023, mainline) on each
// version where it exists (mainline is 7.0's: its prctl is unknown before). The quota's end
// is a reschedule like any other, so each design grants it: the grant outlives the quota by
// the extension, and the debt is paid from the next period. What the holder does inside the
// grant decides who waits for the lock:
// - a critical section longer than the grant: the enforcement timer reschedules and the group
//   is throttled with the lock held; the waiters wait for the next period;
// - an unlock inside the grant that must wake a blocked waiter (FUTEX_WAKE): under none and
//   voluntary preemption rfc and rseq2023 run the syscall inside the grant, so the waiter is
//   woken before the holder is throttled. Mainline ends the grant at syscall entry and
//   schedules before the handler runs, and so do rfc and rseq2023 under full and lazy
//   preemption (the quota's hard request stays folded in preempt_count: the syscall's first
//   preempt_enable() preempts); that throttles the group, and on 6.18 and 7.0 the wake still
//   goes out because they throttle a task only on its way back to user mode: the holder is
//   picked again and runs its way out of the kernel. 6.12 dequeues the throttled group at
//   once: the wake waits for the next period.
#include <gtest/gtest.h>

#include "kernel/slice_ext.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"
#include "user/slice_ext.h"
#include "user/sync.h"

using testing_support::Sim;
using testing_support::exact_timers;
using testing_support::flat_machine;

namespace {

using Abi = kernel::SliceExtAbi;
constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr sim::Time kUs = sim::kNsecPerUsec;

const auto kVersions = {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                        kernel::KernelVersion::V7_0};
const auto kDesigns = {Abi::Rfc, Abi::Rseq2023, Abi::Mainline};

// Mainline's prctl(PR_RSEQ_SLICE_EXTENSION) is unknown before 7.0.
bool defined(Abi abi, kernel::KernelVersion v) {
  return abi != Abi::Mainline || v == kernel::KernelVersion::V7_0;
}

kernel::TaskAttr on(int cpu, int group) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  a.group = group;
  return a;
}

// One CPU per task: the holder in /g (cpu.max 10000 100000) on CPU 0, a waiter in the root
// group on CPU 1. Exact timers: the quota runs out at a known tick.
struct LockSetup {
  Sim s;
  int g = 0;
  LockSetup(Abi abi, kernel::KernelVersion v, const kernel::PreemptModel* m = nullptr)
      : s(exact_timers(flat_machine(2)), config(abi, v, m)) {
    g = s.k->create_task_group("/g");
    group_support::periods_from_zero(*s.k, g);
    s.k->set_task_group_cpu_max(g, 10000, 100000);
  }
  static kernel::KernelConfig config(Abi abi, kernel::KernelVersion v,
                                     const kernel::PreemptModel* m) {
    kernel::KernelConfig c = kernel::default_config(v);
    c.slice_ext.abi = abi;
    if (m) c.preempt = *m;
    return c;
  }
};

}  // namespace

// A critical section that outlasts the grant: the quota's reschedule is granted, the holder
// runs the extension past its quota, the timer ends the grant and the group is throttled
// with the lock held; a waiter spinning on another CPU gets the lock only after the period.
TEST(BandwidthSliceExt, AGrantOutlivesTheQuotaByTheExtensionThenTheHolderIsThrottledWithTheLock) {
  for (Abi abi : kDesigns) {
    for (auto v : kVersions) {
      if (!defined(abi, v)) continue;
      SCOPED_TRACE(std::string(kernel::slice_ext_abi_name(abi)) + " on " + kernel::version_name(v));
      sim::Time ran[2] = {0, 0};
      for (int requested = 0; requested < 2; ++requested) {
        LockSetup x(abi, v);
        user::SpinLock lock;
        sim::Time acquired_at = -1;
        const int holder = x.s.spawn(on(0, x.g), [&lock, abi, requested](user::Thread& t) -> user::Program {
          user::SliceExtClient ext(abi);
          co_await ext.init(t);
          co_await lock.lock(t);
          if (requested) ext.request(t);
          co_await t.compute(15 * kMs);  // past the quota: 5 ms are left for the next period
          lock.unlock(t);
          for (;;) co_await t.compute(1000000000);
        });
        x.s.spawn(on(1, 0), [&lock, &acquired_at, &x](user::Thread& t) -> user::Program {
          co_await t.compute(1 * kMs);
          co_await lock.lock(t);
          acquired_at = x.s.engine.now();
          lock.unlock(t);
          for (;;) co_await t.compute(1000000000);
        });
        x.s.k->start();
        x.s.engine.run_until(50 * kMs);
        const kernel::task_struct& p = x.s.task(holder);
        ran[requested] = static_cast<sim::Time>(p.se.sum_exec_runtime);
        EXPECT_EQ(p.slice.nr_granted, static_cast<uint64_t>(requested));
        EXPECT_EQ(p.stats.nr_lock_holder_preemptions, 1u) << "throttled holding the lock";
        x.s.engine.run_until(200 * kMs);
        EXPECT_GE(acquired_at, 100 * kMs) << "the waiter waits for the next period";
        EXPECT_LT(acquired_at, 110 * kMs);
        x.s.k->finish(200 * kMs);
        testing_support::check_invariants(*x.s.k, 200 * kMs);
      }
      LockSetup probe(abi, v);
      const sim::Time ext_ns = kernel::slice_ext_nsec(probe.s.k.get());
      EXPECT_NEAR(static_cast<double>(ran[1] - ran[0]), static_cast<double>(ext_ns), 20.0 * kUs)
          << "the grant outlives the quota by the extension";
    }
  }
}

// An unlock inside the grant that wakes a waiter blocked in FUTEX_WAIT: the waiter is woken at
// the quota's end by every design and preemption model, except where the syscall is preempted
// at entry on 6.12 (rfc and rseq2023 under full preemption): the group is dequeued there and
// the wake waits for the next period (see the top of this file).
TEST(BandwidthSliceExt, AnUnlockInsideTheGrantWakesTheBlockedWaiterAtTheQuotasEnd) {
  using kernel::PreemptModel;
  for (Abi abi : kDesigns) {
    for (auto v : kVersions) {
      if (!defined(abi, v)) continue;
      for (PreemptModel model : {PreemptModel::None, PreemptModel::Voluntary, PreemptModel::Full,
                                 PreemptModel::Lazy}) {
        kernel::KernelConfig probe = kernel::default_config(v);
        probe.preempt = model;
        if (!kernel::validate_config(probe).empty()) continue;  // not offered by this version
        SCOPED_TRACE(std::string(kernel::slice_ext_abi_name(abi)) + " on " +
                     kernel::version_name(v) + " " + kernel::preempt_name(model));
        const bool next_period = abi != Abi::Mainline && v == kernel::KernelVersion::V6_12 &&
                                 model == PreemptModel::Full;
        LockSetup x(abi, v, &model);
        user::Mutex m;
        sim::Time acquired_at = -1;
        const kernel::task_struct* me = nullptr;
        const int holder = x.s.spawn(on(0, x.g), [&m, &me, abi](user::Thread& t) -> user::Program {
          user::SliceExtClient ext(abi);
          co_await ext.init(t);
          co_await m.lock(t);
          ext.request(t);
          while (!me->slice.granted) co_await t.compute(2 * kUs);  // until the quota's end
          co_await m.unlock(t);  // contended: FUTEX_WAKE
          if (ext.release(t)) co_await ext.yield(t);
          for (;;) co_await t.compute(1000000000);
        });
        me = &x.s.task(holder);
        x.s.spawn(on(1, 0), [&m, &acquired_at, &x](user::Thread& t) -> user::Program {
          co_await t.compute(1 * kMs);
          co_await m.lock(t);  // blocks in FUTEX_WAIT
          acquired_at = x.s.engine.now();
          co_await m.unlock(t);
          for (;;) co_await t.compute(1000000000);
        });
        x.s.run(150 * kMs);
        EXPECT_EQ(me->slice.nr_granted, 1u);
        if (next_period) {
          EXPECT_GE(acquired_at, 100 * kMs) << "the wake waits for the next period";
          EXPECT_LT(acquired_at, 110 * kMs);
        } else {
          EXPECT_GE(acquired_at, 10 * kMs);
          EXPECT_LT(acquired_at, 20 * kMs) << "woken at the quota's end, not at the next period";
        }
        testing_support::check_invariants(*x.s.k, 150 * kMs);
      }
    }
  }
}
