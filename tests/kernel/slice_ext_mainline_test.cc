// The mainline (7.0) time slice extension's ABI details: prctl and its errors, the rseq
// registration it needs, requests across syscalls and interrupts, syscall abort, grant length.
#include <gtest/gtest.h>

#include "kernel/entry/common.h"
#include "kernel/slice_ext.h"
#include "kernel/task_shared.h"
#include "kernel/trace.h"
#include "tests/kernel/harness.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "tests/kernel/slice_ext_support.h"

using namespace slice_ext_support;  // config, on, hog, Seen, requester


using testing_support::Sim;
using testing_support::flat_machine;
using testing_support::exact_timers;


// ---- Mainline ABI details ----

TEST(SliceExtMainline, PrctlGetSetAndItsErrors) {
  Sim s(flat_machine(1), config(Abi::Mainline));
  std::vector<int64_t> r;
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    const int P = kernel::PR_RSEQ_SLICE_EXTENSION;
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, kernel::PR_RSEQ_SLICE_EXTENSION_GET, 0));
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, kernel::PR_RSEQ_SLICE_EXTENSION_SET, 1));
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, kernel::PR_RSEQ_SLICE_EXTENSION_GET, 0));
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, kernel::PR_RSEQ_SLICE_EXTENSION_SET, 2));
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, 3, 0));
    r.push_back(co_await t.syscall(kernel::NR_prctl, P, kernel::PR_RSEQ_SLICE_EXTENSION_GET, 1));
    r.push_back(t.rseq()->flags);
  });
  s.run(sim::kNsecPerMsec);
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], kernel::PR_RSEQ_SLICE_EXT_ENABLE);
  EXPECT_EQ(r[3], -EINVAL);
  EXPECT_EQ(r[4], -EINVAL);
  EXPECT_EQ(r[5], -EINVAL);
  EXPECT_EQ(r[6], kernel::RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE | kernel::RSEQ_CS_FLAG_SLICE_EXT_ENABLED);
}

// Without the feature (CONFIG_RSEQ_SLICE_EXTENSION=n, another design built in) the prctl
// stub says ENOTSUPP to GET and SET alike, whatever the flags.
TEST(SliceExtMainline, PrctlSaysENOTSUPPWithoutTheFeatureAndENXIOWithoutRseq) {
  for (Abi abi : {Abi::None, Abi::Rfc}) {
    Sim s(flat_machine(1), config(abi));
    int64_t r[3] = {};
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      r[0] = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
      r[1] = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 1, 0);
      r[2] = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 8);
    });
    s.run(sim::kNsecPerMsec);
    for (int64_t ret : r) EXPECT_EQ(ret, -kernel::ENOTSUPP);
  }
  {
    kernel::KernelConfig c = config(Abi::Mainline);
    c.slice_ext.rseq_registered = false;
    Sim s(flat_machine(1), c);
    int64_t r = 0;
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      r = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
    });
    s.run(sim::kNsecPerMsec);
    EXPECT_EQ(r, -ENXIO);
  }
}

// 7.0.10+ (require_rseq_v2): a 32-byte registration (glibc 2.35-2.40) is legacy: the kernel
// does not advertise the extension, prctl SET says ENOTSUPP, and it never writes slice_ctrl,
// whose bytes may hold a legacy user's own data (here: left at 1 across preemptions).
TEST(SliceExtMainline, ALegacyRegistrationGetsNoExtensionWhenV2IsRequired) {
  kernel::KernelConfig c = config(Abi::Mainline);
  c.slice_ext.require_rseq_v2 = true;
  c.slice_ext.rseq_len = 32;
  Sim s(flat_machine(1), c);
  uint32_t flags = 0xffffffff;
  int64_t set = 0, get = -1;
  const int p = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    flags = t.rseq()->flags;
    t.rseq()->slice_request = 1;  // not the ABI's request on a legacy registration
    set = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION,
                             kernel::PR_RSEQ_SLICE_EXTENSION_SET, kernel::PR_RSEQ_SLICE_EXT_ENABLE);
    get = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION,
                             kernel::PR_RSEQ_SLICE_EXTENSION_GET, 0);
    for (;;) co_await t.compute(sim::kNsecPerSec);
  });
  s.spawn(on(0), hog);
  s.run(100 * sim::kNsecPerMsec);
  EXPECT_EQ(flags & kernel::RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE, 0u);
  EXPECT_EQ(set, -kernel::ENOTSUPP);
  EXPECT_EQ(get, 0);
  EXPECT_GT(s.task(p).stats.nr_switches_involuntary, 5u) << "preempted many times";
  EXPECT_EQ(s.task(p).user->rseq->slice_request, 1) << "the kernel left slice_ctrl alone";
  EXPECT_EQ(s.task(p).slice.nr_granted, 0u);
}

// The same kernel with a registration longer than 32 bytes (v2): advertised, enabled, granted.
TEST(SliceExtMainline, AV2RegistrationKeepsTheExtensionWhenV2IsRequired) {
  kernel::KernelConfig c = config(Abi::Mainline);
  c.slice_ext.require_rseq_v2 = true;
  c.slice_ext.rseq_len = 64;
  Sim s(flat_machine(1), c);
  Seen seen;
  const int req = s.spawn(on(0), requester(Abi::Mainline, &seen, 3 * sim::kNsecPerUsec, 20 * sim::kNsecPerUsec));
  s.spawn(on(0), hog);
  s.run(sim::kNsecPerSec);
  EXPECT_EQ(s.task(req).user->rseq->flags,
            kernel::RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE | kernel::RSEQ_CS_FLAG_SLICE_EXT_ENABLED);
  EXPECT_EQ(seen.init_ret, 0);
  EXPECT_GT(s.task(req).slice.nr_granted, 0u);
}

TEST(SliceExtMainline, RseqLenBelowTheOriginalSizeIsRefused) {
  kernel::KernelConfig c = config(Abi::Mainline);
  EXPECT_EQ(c.slice_ext.rseq_len, 32) << "glibc 2.35-2.40's registration";
  EXPECT_EQ(kernel::set_config_key(&c, "slice_ext.rseq_len", "64"), "");
  EXPECT_EQ(c.slice_ext.rseq_len, 64);
  EXPECT_NE(kernel::set_config_key(&c, "slice_ext.rseq_len", "31").find("slice_ext.rseq_len"),
            std::string::npos);
  EXPECT_NE(kernel::set_config_key(&c, "slice_ext.rseq_len", "x"), "");
  EXPECT_EQ(kernel::set_config_key(&c, "slice_ext.require_rseq_v2", "true"), "");
  EXPECT_TRUE(c.slice_ext.require_rseq_v2);
}

// 7.0 raises the rseq "scheduled" event only for a task that entered the kernel by interrupt
// or changed CPU (rseq_sched_switch_event()). A task preempted at the exit of its own syscall
// on the same CPU gets none, so the exit path leaves slice_ctrl alone: a request set before
// the syscall is still there when the task is back in user space.
TEST(SliceExtMainline, ARescheduleAtSyscallExitLeavesAPendingRequest) {
  Sim s(exact_timers(flat_machine(1)), config(Abi::Mainline));
  kernel::UserWord go;
  int64_t request_after = -1;
  sim::Time back = -1;
  kernel::TaskAttr b = on(0);
  b.slice_ns = 100 * sim::kNsecPerUsec;  // wakes with the earlier deadline: preempts A
  s.spawn(b, [&](user::Thread& t) -> user::Program {
    while (t.load(&go) == 0) co_await t.futex_wait(&go, 0);
    co_await t.compute(50 * sim::kNsecPerUsec);
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  });
  const int a = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
    co_await t.compute(sim::kNsecPerMsec - t.now());
    t.rseq()->slice_request = 1;
    t.store(&go, 1);
    co_await t.futex_wake(&go, 1);
    back = t.now();
    request_after = t.rseq()->slice_request;
    for (;;) co_await t.compute(sim::kNsecPerSec);
  }, 10 * sim::kNsecPerUsec);
  s.run(5 * sim::kNsecPerMsec);
  ASSERT_GE(back, sim::kNsecPerMsec + 50 * sim::kNsecPerUsec) << "B ran at A's syscall exit";
  EXPECT_GE(s.task(a).stats.nr_switches_involuntary, 1u);
  EXPECT_EQ(request_after, 1);
}

// 7.0 arms the slice timer in rseq_exit_to_user_mode_restart(), inside the exit work loop,
// which a return from an interrupt with no work pending skips: a device interrupt during a
// grant leaves the timer as it was armed. (Re-arming would draw a new delivery delay.)
namespace {
struct DeviceIrq {
  sim::Timer timer;
  kernel::rq* rq = nullptr;
  int in_grant = 0, rearmed = 0;
};
void device_irq(sim::Timer* t, sim::Time now) {
  auto* d = static_cast<DeviceIrq*>(t->ctx);
  kernel::rq* rq = d->rq;
  const bool granted = rq->curr->slice.granted && rq->ex.slice_timer.armed;
  const sim::Time before = rq->ex.slice_timer.expires;
  kernel::irqentry_enter(rq, now);
  kernel::irqentry_exit(rq);
  if (granted) {
    d->in_grant++;
    d->rearmed += rq->ex.slice_timer.armed && rq->ex.slice_timer.expires != before;
  }
  rq->k->engine()->arm(t, now + 3 * sim::kNsecPerUsec);
}
}  // namespace

TEST(SliceExtMainline, AnInterruptWithoutWorkDuringAGrantLeavesTheTimerAlone) {
  kernel::KernelConfig c = config(Abi::Mainline);
  c.slice_ext.nsec = 50 * sim::kNsecPerUsec;
  Sim s(flat_machine(1), c);  // timer delivery jitter on
  Seen seen;
  s.spawn(on(0), requester(Abi::Mainline, &seen, 40 * sim::kNsecPerUsec, 1 * sim::kNsecPerUsec));
  s.spawn(on(0), hog);
  DeviceIrq d;
  d.rq = s.k->rq_of(0);
  d.timer.fn = device_irq;
  d.timer.ctx = &d;
  s.engine.arm(&d.timer, 1);
  s.run(200 * sim::kNsecPerMsec);
  ASSERT_GT(d.in_grant, 10) << "interrupts arrived during grants";
  EXPECT_EQ(d.rearmed, 0);
}

// Counts the sched_switch records of one task whose prev_state is R+ (TASK_REPORT_MAX).
struct RPlusCounter : kernel::TraceSink {
  int pid = -1, r_plus = 0;
  void record(const kernel::TraceRecord& r) override {
    r_plus += r.type == kernel::TraceEvent::sched_switch && r.a.pid == pid &&
              r.state == kernel::kTraceStatePreempted;
  }
};

// Any other syscall during a grant ends it at entry: counted as aborted, the CPU is given up
// at once, when preemption is enabled again (preempt_schedule(), SM_PREEMPT): sched_switch
// reports those switches as R+.
TEST(SliceExtMainline, AnotherSyscallDuringAGrantAborts) {
  Sim s(flat_machine(1), config(Abi::Mainline));
  RPlusCounter trace;
  s.k->set_trace_sink(&trace);
  int64_t aborted_seen = 0;
  const int req = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
    for (;;) {
      t.rseq()->slice_request = 1;
      co_await t.compute(3 * sim::kNsecPerUsec);
      t.rseq()->slice_request = 0;
      if (t.rseq()->slice_granted) {
        co_await t.syscall(kernel::NR_getpid);  // not rseq_slice_yield
        aborted_seen += t.rseq()->slice_granted == 0;
      }
      co_await t.compute(20 * sim::kNsecPerUsec);
    }
  });
  s.spawn(on(0), hog);
  trace.pid = req;
  s.run(sim::kNsecPerSec);
  const auto& p = s.task(req);
  EXPECT_GT(p.slice.nr_aborted, 0u);
  EXPECT_EQ(p.slice.nr_yielded, 0u);
  EXPECT_EQ(static_cast<uint64_t>(aborted_seen), p.slice.nr_aborted);
  EXPECT_GT(trace.r_plus, 0);
  EXPECT_LE(static_cast<uint64_t>(trace.r_plus), p.slice.nr_aborted);
}

// Defaults and bounds of the grant length: 5 us by default; debugfs range 5..50 us.
TEST(SliceExtMainline, GrantLengthDefaultsToFiveMicrosecondsWithinFiveToFifty) {
  kernel::KernelConfig c = config(Abi::Mainline);
  EXPECT_EQ(kernel::validate_config(c), "");
  c.slice_ext.nsec = 4000;
  EXPECT_NE(kernel::validate_config(c).find("slice_ext.nsec"), std::string::npos);
  c.slice_ext.nsec = 60000;
  EXPECT_NE(kernel::validate_config(c), "");
  sim::Engine e;
  kernel::KernelImpl k(&e, flat_machine(1), config(Abi::Mainline));
  EXPECT_EQ(kernel::slice_ext_nsec(&k), 5000);
  kernel::KernelImpl k2(&e, flat_machine(1), config(Abi::Rfc));
  EXPECT_EQ(kernel::slice_ext_nsec(&k2), 50000);
}

// Under PREEMPT_RT, 7.0 lets an extension defer only the lazy reschedule
// (TIF_SLICE_EXT_SCHED is _TIF_NEED_RESCHED_LAZY there): a hard TIF_NEED_RESCHED is deny
// work, so the request is dropped and the task schedules. A requester beside a hog: with
// preempt=full every request of the fair class is hard, so no grant under PREEMPT_RT
// (and grants without it); with preempt=lazy the tick's lazy requests are still granted.
TEST(SliceExtMainline, PreemptRtDefersOnlyTheLazyReschedule) {
  auto granted = [](kernel::PreemptModel model, bool rt) {
    kernel::KernelConfig c = config(Abi::Mainline);
    c.preempt = model;
    c.softirq.preempt_rt = rt;
    Sim s(flat_machine(1), c);
    const int req = s.spawn(on(0), [](user::Thread& t) -> user::Program {
      co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
      for (;;) {
        t.rseq()->slice_request = 1;
        co_await t.compute(30 * sim::kNsecPerUsec);
        t.rseq()->slice_request = 0;
        if (t.rseq()->slice_granted) co_await t.syscall(kernel::NR_rseq_slice_yield);
        co_await t.compute(20 * sim::kNsecPerUsec);
      }
    });
    s.spawn(on(0), hog);
    s.run(sim::kNsecPerSec);
    return s.task(req).slice.nr_granted;
  };
  EXPECT_GT(granted(kernel::PreemptModel::Full, false), 10u);
  EXPECT_EQ(granted(kernel::PreemptModel::Full, true), 0u);
  EXPECT_GT(granted(kernel::PreemptModel::Lazy, true), 10u);
}

// 7.0's ownership mm_cid raises the rseq event when a task's cid changes as it is scheduled
// in (mm_cid_update_task_cid()), as a migration does: the exit to user mode then zeroes
// slice_ctrl. Eight threads pinned one per CPU (as mm_cid_compaction_test); one with a high
// cid sets its request and sleeps while the others exit, which shrinks the process's cid
// space, so it is handed a lower cid when it comes back on its own CPU: its request is gone.
TEST(SliceExtMainline, ACidChangedAtSwitchInClearsTheRequest) {
  kernel::KernelConfig c = config(Abi::Mainline);
  c.mm_cid = kernel::MmCid::Owner;
  const int cpus = 8;
  Sim s(flat_machine(cpus), c);
  kernel::UserWord leader;
  uint32_t cid_before = 0, cid_after = 0;
  int request_after = -1;
  for (int i = 0; i < cpus; ++i) {
    s.spawn(on(i), [&](user::Thread& t) -> user::Program {
      co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
      for (int r = 0; r < 5; ++r) {
        co_await t.compute(sim::kNsecPerMsec);
        co_await t.nanosleep(10 * sim::kNsecPerMsec);
      }
      const uint32_t cid = t.rseq()->mm_cid;
      if (cid < static_cast<uint32_t>(cpus / 2) || !t.cmpxchg(&leader, 0, t.pid())) co_return;
      cid_before = cid;
      t.rseq()->slice_request = 1;
      co_await t.nanosleep(20 * sim::kNsecPerMsec);  // the others exit
      cid_after = t.rseq()->mm_cid;
      request_after = t.rseq()->slice_request;
      t.rseq()->slice_request = 0;
    });
  }
  s.run(150 * sim::kNsecPerMsec);
  ASSERT_NE(leader.value, 0) << "no thread had a cid >= CPUs / 2";
  EXPECT_LT(cid_after, cid_before);
  EXPECT_EQ(request_after, 0);
}
