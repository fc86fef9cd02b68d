// Time slice extension, each ABI's state transitions pinned: request, grant, deny, expiry,
// yield, exit, fork, exec; the [task_shared] slot allocator; abuse bounded by the timer; the
// review's policy switches. The mainline ABI's details: slice_ext_mainline_test.cc.
#include <gtest/gtest.h>

#include "kernel/entry/common.h"
#include "kernel/slice_ext.h"
#include "kernel/task_shared.h"
#include "tests/kernel/harness.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "tests/kernel/slice_ext_support.h"

using namespace slice_ext_support;  // config, on, hog, Seen, requester


using testing_support::Sim;
using testing_support::flat_machine;
using testing_support::exact_timers;


// ---- The RFC: task_getshared() ----

TEST(TaskGetshared, ReturnsEveryErrorOfTheRfc) {
  Sim s(flat_machine(1), config(Abi::Rfc));
  int64_t r_opt = 0, r_fault = 0, r_ok = 0, r_again = 0, addr1 = 0, addr2 = 0;
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    r_opt = co_await t.syscall(kernel::NR_task_getshared, 2, 0, reinterpret_cast<int64_t>(&addr1));
    r_fault = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0, 0);
    r_ok = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                              reinterpret_cast<int64_t>(&addr1));
    r_again = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                                 reinterpret_cast<int64_t>(&addr2));
  });
  s.run(sim::kNsecPerMsec);
  EXPECT_EQ(r_opt, -EINVAL);
  EXPECT_EQ(r_fault, -EFAULT);
  EXPECT_EQ(r_ok, 0);
  EXPECT_EQ(r_again, 0);
  EXPECT_NE(addr1, 0);
  EXPECT_EQ(addr1, addr2) << "calling it again returns the same address";
}

TEST(TaskGetshared, ENOMEMAtThePageLimitAndEINTRWithAFatalSignal) {
  kernel::KernelConfig c = config(Abi::Rfc);
  c.slice_ext.page_limit = 1;
  Sim s(flat_machine(1), c);
  std::vector<int64_t> rets(34, 1);
  std::vector<int64_t> addrs(34);
  for (int i = 0; i < 33; ++i)
    s.spawn(on(0), [&, i](user::Thread& t) -> user::Program {
      rets[i] = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                                   reinterpret_cast<int64_t>(&addrs[i]));
      for (;;) co_await t.nanosleep(sim::kNsecPerSec);
    });
  const int victim = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(10 * sim::kNsecPerMsec);
    rets[33] = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                                  reinterpret_cast<int64_t>(&addrs[33]));
  });
  s.k->TEST_set_fatal_signal(victim);
  s.run(50 * sim::kNsecPerMsec);
  int ok = 0, nomem = 0;
  for (int i = 0; i < 33; ++i) (rets[i] == 0 ? ok : nomem) += rets[i] == 0 || rets[i] == -ENOMEM;
  EXPECT_EQ(ok, 32);
  EXPECT_EQ(nomem, 1);
  EXPECT_EQ(rets[33], -EINTR);
}

TEST(TaskGetshared, IsNotASyscallOnOtherKernels) {
  for (Abi abi : {Abi::None, Abi::Mainline}) {
    Sim s(flat_machine(1), config(abi));
    int64_t r = 0, addr = 0;
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      r = co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&addr));
    });
    s.run(sim::kNsecPerMsec);
    EXPECT_EQ(r, -ENOSYS);
  }
}

// 33rd thread opens a second page; a freed slot is reused and its page goes back to the
// head of the free list; a forked child (new mm) inherits nothing; process exit frees all.
TEST(TaskSharedAllocator, ThirtyThirdSlotOpensASecondPageAndFreedSlotsAreReused) {
  kernel::mm_struct mm;
  int page = -1, slot = -1;
  std::vector<std::pair<int, int>> got;
  for (int i = 0; i < 33; ++i) {
    ASSERT_NE(kernel::task_shared_alloc(&mm, 0, &page, &slot), nullptr);
    got.emplace_back(page, slot);
  }
  EXPECT_EQ(mm.pages.size(), 2u);
  EXPECT_EQ(got[31], std::make_pair(0, 31));
  EXPECT_EQ(got[32], std::make_pair(1, 0));
  EXPECT_EQ(mm.free_list.front()->id, 1) << "the new page (with free slots) is at the head";
  EXPECT_EQ(mm.free_list.back()->id, 0) << "the full page moved to the tail";
  kernel::task_shared_free(&mm, 0, 7);
  EXPECT_EQ(mm.free_list.front()->id, 0) << "a page that regains a slot moves to the head";
  ASSERT_NE(kernel::task_shared_alloc(&mm, 0, &page, &slot), nullptr);
  EXPECT_EQ(page, 0);
  EXPECT_EQ(slot, 7);
  EXPECT_EQ(mm.pages.size(), 2u) << "no new page while the head page has room";
}

TEST(TaskSharedAllocator, ThreadExitFreesItsSlotAndAForkedChildHasNone) {
  Sim s(flat_machine(2), config(Abi::Rfc));
  int64_t a1 = 0, a2 = 0, child_addr = 0;
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&a1));
  });  // exits at once, freeing its slot
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(sim::kNsecPerMsec);
    co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&a2));
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  });
  // "fork": a new process; its mm starts with no pages.
  const int child_tgid = s.k->create_process("child");
  auto th = std::make_unique<user::Thread>(s.k.get(), sim::Rng(1, 99));
  std::function<user::Program(user::Thread&)> child = [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(2 * sim::kNsecPerMsec);
    co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&child_addr));
    for (;;) co_await t.nanosleep(sim::kNsecPerSec);
  };
  th->start(child(*th));
  s.k->create_thread(child_tgid, on(1), std::move(th));
  s.run(10 * sim::kNsecPerMsec);
  EXPECT_EQ(a1, a2) << "the slot freed at thread exit is reused";
  EXPECT_EQ(s.k->mm_of(s.tgid)->pages.size(), 1u);
  ASSERT_NE(child_addr, 0);
  EXPECT_NE(child_addr, a2);
  EXPECT_EQ(s.k->mm_of(child_tgid)->pages.size(), 1u);
  s.k->exit_mm(child_tgid);
  EXPECT_EQ(s.k->mm_of(child_tgid)->pages.size(), 0u);
}

// ---- Grants, per ABI ----

// A requester and a hog share one CPU: ticks end slices inside critical sections, where the
// extension is granted, and the requester gives the CPU back with a yield.
TEST(SliceExt, EachAbiGrantsOnTickPreemptionAndTheHolderYields) {
  for (Abi abi : {Abi::Rfc, Abi::Rseq2023, Abi::Mainline}) {
    Sim s(flat_machine(1), config(abi));
    Seen seen;
    // A 53 us cycle, so ticks (every 4 ms) fall at every phase of the critical section.
    const int req = s.spawn(on(0), requester(abi, &seen, 20 * sim::kNsecPerUsec, 33 * sim::kNsecPerUsec));
    s.spawn(on(0), hog);
    s.run(sim::kNsecPerSec);
    const kernel::task_struct& p = s.task(req);
    SCOPED_TRACE(kernel::slice_ext_abi_name(abi));
    EXPECT_EQ(seen.init_ret, 0);
    EXPECT_GT(p.slice.nr_granted, 10u);
    // Every grant is seen at release, except one still running when the run ends (and, in
    // 7.0, grants revoked before release: the kernel zeroes the word then).
    const uint64_t unseen = p.slice.nr_granted - seen.grants;
    EXPECT_LE(unseen, 1u + (abi == Abi::Mainline ? p.slice.nr_revoked : 0));
    EXPECT_EQ(seen.yields, seen.grants);
    if (abi == Abi::Mainline) {
      // 20 us sections do not fit in 7.0's 5 us grants: most grants expire.
      EXPECT_GT(p.slice.nr_expired, p.slice.nr_granted / 2);
      EXPECT_LE(p.slice.nr_granted - (p.slice.nr_yielded + p.slice.nr_expired), 1u);
      EXPECT_EQ(seen.last_yield_ret, 1) << "rseq_slice_yield() reports an active grant";
    } else {
      EXPECT_EQ(p.slice.nr_expired, 0u) << "20 us sections fit in the 50 us hrtick";
    }
    testing_support::check_invariants(*s.k, sim::kNsecPerSec);
  }
}

TEST(SliceExt, WithoutTheExtensionTheSameHolderIsPreempted) {
  Sim s(flat_machine(1), config(Abi::None));
  Seen seen;
  const int req = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    user::SpinLock lock;
    for (;;) {
      co_await lock.lock(t);
      co_await t.compute(20 * sim::kNsecPerUsec);
      lock.unlock(t);
      co_await t.compute(30 * sim::kNsecPerUsec);
    }
  });
  s.spawn(on(0), hog);
  s.run(sim::kNsecPerSec);
  EXPECT_GT(s.task(req).stats.nr_lock_holder_preemptions, 10u);
}

// Grants happen only on return from an interrupt (the RFC's and the 2023 prototype's `irq`
// argument of exit_to_user_mode_prepare(), 7.0's event.user_irq in
// rseq_grant_slice_extension()): a reschedule met at a syscall's exit is not deferred even
// with a request pending. A wakee with a short slice, woken by the requester's own
// futex_wake() while it holds a request, preempts it at that syscall's exit: no grant, the
// wakee runs at once. The same wakee, woken later by its nanosleep timer while the requester
// holds the same kind of request in user code, preempts it at the timer interrupt's return:
// that one is granted, so the requester had a request and a pending reschedule both times.
TEST(SliceExt, NoGrantOnReturnFromASyscall) {
  for (Abi abi : {Abi::Rfc, Abi::Rseq2023, Abi::Mainline}) {
    SCOPED_TRACE(kernel::slice_ext_abi_name(abi));
    Sim s(exact_timers(flat_machine(1)), config(abi));
    kernel::UserWord go;
    const sim::Time wake_at = 3 * sim::kNsecPerMsec;
    sim::Time back = -1, b_woke = -1;
    uint64_t at_syscall_exit = 99, at_irq_exit = 0;
    int a = -1;
    kernel::TaskAttr b = on(0);
    b.slice_ns = 100 * sim::kNsecPerUsec;  // wakes with the earlier deadline: preempts A
    s.spawn(b, [&](user::Thread& t) -> user::Program {
      while (t.load(&go) == 0) co_await t.futex_wait(&go, 0);
      co_await t.compute(50 * sim::kNsecPerUsec);
      co_await t.sleep_until(wake_at);
      b_woke = t.now();  // when B runs again
      co_await t.compute(50 * sim::kNsecPerUsec);
      for (;;) co_await t.nanosleep(sim::kNsecPerSec);
    });
    a = s.spawn(on(0), [&, abi](user::Thread& t) -> user::Program {
      user::SliceExtClient ext(abi);
      co_await ext.init(t);
      co_await t.compute(sim::kNsecPerMsec - t.now());
      // The syscall: a request set, the wakeup's reschedule pending at getting back out.
      ext.request(t);
      t.store(&go, 1);
      co_await t.futex_wake(&go, 1);
      back = t.now();
      at_syscall_exit = s.task(a).slice.nr_granted;
      if (ext.release(t)) co_await ext.yield(t);
      // The interrupt: the same request, in user code when B's timer fires.
      co_await t.compute(wake_at - 100 * sim::kNsecPerUsec - t.now());
      ext.request(t);
      co_await t.compute(300 * sim::kNsecPerUsec);
      at_irq_exit = s.task(a).slice.nr_granted;
      if (ext.release(t)) co_await ext.yield(t);
      for (;;) co_await t.compute(sim::kNsecPerSec);
    }, 10 * sim::kNsecPerUsec);
    s.run(5 * sim::kNsecPerMsec);
    EXPECT_EQ(at_syscall_exit, 0u) << "a reschedule at a syscall's exit was deferred";
    EXPECT_GE(back, sim::kNsecPerMsec + 50 * sim::kNsecPerUsec) << "B ran at A's syscall exit";
    EXPECT_EQ(at_irq_exit - at_syscall_exit, 1u)
        << "the same request at an interrupt return is granted";
    EXPECT_GE(b_woke, wake_at + kernel::slice_ext_nsec(s.k.get())) << "B waited out the extension";
  }
}

// The RFC and the 2023 prototype clear only TIF_NEED_RESCHED when they grant: a hard request
// (here an RT wakeup on the holder's CPU) stays folded in x86's preempt_count, so under full
// and lazy preemption a syscall made inside the grant is preempted at its first
// preempt_enable(): the RT task runs before the syscall returns. Under none the syscall runs
// inside the grant and the RT task waits for the yield.
TEST(SliceExt, AnRfcOr2023GrantEndsAtASyscallUnderFullAndLazyPreemption) {
  using kernel::PreemptModel;
  struct Case {
    kernel::KernelVersion v;
    PreemptModel m;
    bool preempted;
  };
  const Case cases[] = {{kernel::KernelVersion::V7_0, PreemptModel::Full, true},
                        {kernel::KernelVersion::V7_0, PreemptModel::Lazy, true},
                        {kernel::KernelVersion::V6_12, PreemptModel::Full, true},
                        {kernel::KernelVersion::V6_12, PreemptModel::None, false},
                        {kernel::KernelVersion::V6_12, PreemptModel::Voluntary, false}};
  for (Abi abi : {Abi::Rfc, Abi::Rseq2023}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(kernel::slice_ext_abi_name(abi)) + " " + kernel::preempt_name(c.m));
      kernel::KernelConfig cfg = kernel::default_config(c.v);
      cfg.slice_ext.abi = abi;
      cfg.preempt = c.m;
      Sim s(exact_timers(flat_machine(1)), cfg);
      const sim::Time t0 = 2 * sim::kNsecPerMsec, us = sim::kNsecPerUsec;
      sim::Time rt_ran = -1, sys_at = -1, back = -1;
      kernel::TaskAttr rt = on(0);
      rt.policy = SCHED_FIFO;
      rt.rt_priority = 50;
      s.spawn(rt, [&](user::Thread& t) -> user::Program {
        co_await t.sleep_until(t0);
        rt_ran = t.now();
        co_await t.compute(20 * us);
        for (;;) co_await t.nanosleep(sim::kNsecPerSec);
      });
      kernel::UserWord word;
      const int a = s.spawn(on(0), [&, abi](user::Thread& t) -> user::Program {
        user::SliceExtClient ext(abi);
        co_await ext.init(t);
        co_await t.compute(t0 - 20 * us - t.now());
        ext.request(t);
        co_await t.compute(40 * us);  // the RT wakeup at t0 is granted
        sys_at = t.now();
        co_await t.futex_wake(&word, 1);
        back = t.now();
        if (ext.release(t)) co_await ext.yield(t);
        for (;;) co_await t.compute(sim::kNsecPerSec);
      });
      s.run(3 * sim::kNsecPerMsec);
      EXPECT_EQ(s.task(a).slice.nr_granted, 1u);
      EXPECT_GE(rt_ran, t0 + 20 * us) << "the RT wakeup was deferred by the grant";
      if (c.preempted) {
        EXPECT_LT(rt_ran, sys_at + 5 * us) << "preempted at the syscall";
        EXPECT_GE(back, rt_ran + 20 * us) << "the syscall returned after the RT task ran";
      } else {
        EXPECT_GE(rt_ran, back) << "the syscall ran inside the grant";
      }
    }
  }
}

// RFC: a second request while a grant runs is DENIED (word = 3) and not deferred.
TEST(SliceExtRfc, ASecondRequestWhileGrantedIsDenied) {
  Sim s(flat_machine(1), config(Abi::Rfc));
  Seen seen;
  const int req = s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    int64_t addr = 0;
    co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&addr));
    kernel::UserWord* w = reinterpret_cast<kernel::UserWord*>(addr);
    for (;;) {
      w->value = kernel::TASK_PREEMPT_DELAY_REQ;
      co_await t.compute(10 * sim::kNsecPerUsec);
      if (w->value == kernel::TASK_PREEMPT_DELAY_GRANTED) {
        seen.grants++;
        w->value = kernel::TASK_PREEMPT_DELAY_REQ;  // asks again inside the grant
        co_await t.compute(200 * sim::kNsecPerUsec);  // long enough for the hrtick to fire
        if (w->value == kernel::TASK_PREEMPT_DELAY_DENIED) seen.denials++;
        w->value = 0;
      } else {
        w->value = 0;
      }
      co_await t.compute(10 * sim::kNsecPerUsec);
    }
  });
  s.spawn(on(0), hog);
  s.run(sim::kNsecPerSec);
  const kernel::task_struct& p = s.task(req);
  EXPECT_GT(seen.grants, 5u);
  EXPECT_LE(p.slice.nr_denied - seen.denials, 1u) << "all seen but one still in flight at the end";
  EXPECT_GT(p.slice.nr_denied, 0u);
  EXPECT_EQ(p.slice.nr_expired, p.slice.nr_granted) << "each grant ran into the 50 us hrtick";
}

// Abuse: a thread that requests and never releases is granted once and runs at most the
// extension past the reschedule; the other task waits a tick plus 50 us, no more. Exact
// timers: with jittered ticks two equal hogs sometimes run two ticks in a row (a tie in
// EEVDF's pick, see Fair.TwoHogsAlternateAtTicksUnlessJitterBreaksTheTie), which is not
// the bound under test.
TEST(SliceExt, ARequestNeverClearedIsBoundedByTheTimer) {
  for (Abi abi : {Abi::Rfc, Abi::Rseq2023, Abi::Mainline}) {
    Sim s(exact_timers(flat_machine(1)), config(abi));
    const int req = s.spawn(on(0), [abi](user::Thread& t) -> user::Program {
      user::SliceExtClient ext(abi);
      co_await ext.init(t);
      ext.request(t);
      for (;;) co_await t.compute(sim::kNsecPerSec);
    });
    const int h = s.spawn(on(0), hog);
    s.run(sim::kNsecPerSec);
    SCOPED_TRACE(kernel::slice_ext_abi_name(abi));
    const auto& p = s.task(req);
    EXPECT_EQ(p.slice.nr_granted, 1u);
    EXPECT_EQ(p.slice.nr_expired, 1u);
    const int64_t ext_ns = kernel::slice_ext_nsec(s.k.get());
    const int64_t tick = s.k->config().tick_nsec();
    EXPECT_LE(static_cast<int64_t>(s.task(h).stats.wait_max_ns), tick + ext_ns + 20 * sim::kNsecPerUsec);
    EXPECT_GE(static_cast<int64_t>(s.task(h).stats.wait_max_ns), tick + ext_ns - 20 * sim::kNsecPerUsec);
  }
}

// rseq 2023: a non-resident rseq page makes the kernel's copy fail: the hint is missed.
TEST(SliceExtRseq2023, ANonResidentPageMissesEveryHint) {
  kernel::KernelConfig c = config(Abi::Rseq2023);
  c.slice_ext.rseq_miss = 1.0;
  Sim s(flat_machine(1), c);
  Seen seen;
  const int req = s.spawn(on(0), requester(Abi::Rseq2023, &seen, 20 * sim::kNsecPerUsec, 30 * sim::kNsecPerUsec));
  s.spawn(on(0), hog);
  s.run(200 * sim::kNsecPerMsec);
  EXPECT_EQ(s.task(req).slice.nr_granted, 0u);
  EXPECT_GT(s.task(req).slice.nr_missed, 0u);
}

// ---- Policy switches raised in review ----

// Prateek: an RT wakeup on the CPU sets NEED_RESCHED by IPI; the RFC defers it up to 50 us
// when a request is pending; with no_defer_rt the RT task runs at once.
TEST(SliceExtPolicy, NoDeferRtLetsAnRtWakeupPreemptAtOnce) {
  for (bool no_defer : {false, true}) {
    kernel::KernelConfig c = config(Abi::Rfc);
    c.slice_ext.no_defer_rt = no_defer;
    Sim s(flat_machine(2), c);
    Seen seen;
    s.spawn(on(0), requester(Abi::Rfc, &seen, 100 * sim::kNsecPerUsec, 1 * sim::kNsecPerUsec));
    kernel::TaskAttr rt = on(0);
    rt.policy = SCHED_FIFO;
    rt.rt_priority = 50;
    int64_t worst = 0;
    s.spawn(rt, [&](user::Thread& t) -> user::Program {
      int64_t next = t.now() + 1000000;
      for (;;) {
        co_await t.sleep_until(next);
        worst = std::max(worst, t.now() - next);
        next += 1013000;  // not a multiple of the tick
      }
    });
    s.run(sim::kNsecPerSec);
    if (no_defer)
      EXPECT_LT(worst, 15 * sim::kNsecPerUsec);
    else
      EXPECT_GT(worst, 40 * sim::kNsecPerUsec) << "an RT wakeup was deferred by a grant";
  }
}

TEST(SliceExtPolicy, FairOnlyRefusesGrantsToRtRequesters) {
  kernel::KernelConfig c = config(Abi::Rfc);
  c.slice_ext.fair_only = true;
  Sim s(flat_machine(1), c);
  Seen seen;
  kernel::TaskAttr rr = on(0);
  rr.policy = SCHED_RR;
  rr.rt_priority = 10;
  const int req = s.spawn(rr, requester(Abi::Rfc, &seen, 20 * sim::kNsecPerUsec, 30 * sim::kNsecPerUsec));
  s.spawn(rr, hog);
  s.run(sim::kNsecPerSec);
  EXPECT_EQ(s.task(req).slice.nr_granted, 0u);
}

// execve() gives the new image no [task_shared] structure and a fresh rseq registration: the
// slot is freed (and reused by the next caller), 7.0's enable is off again.
TEST(SliceExt, ExecFreesTheSharedSlotAndResetsRseqState) {
  {
    Sim s(flat_machine(1), config(Abi::Rfc));
    int64_t before = 0, after = 0, other = 0;
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&before));
      co_await t.syscall(kernel::NR_execve);
      co_await t.nanosleep(sim::kNsecPerMsec);
      co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&after));
      for (;;) co_await t.nanosleep(sim::kNsecPerSec);
    });
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      co_await t.nanosleep(500 * sim::kNsecPerUsec);  // between the exec and the second call
      co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&other));
      for (;;) co_await t.nanosleep(sim::kNsecPerSec);
    });
    s.run(5 * sim::kNsecPerMsec);
    EXPECT_EQ(other, before) << "the slot freed by exec went to the next thread";
    EXPECT_NE(after, before);
  }
  {
    Sim s(flat_machine(1), config(Abi::Mainline));
    int64_t on_before = -1, on_after = -1;
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 2, 1);
      on_before = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 1, 0);
      co_await t.syscall(kernel::NR_execve);
      on_after = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION, 1, 0);
    });
    s.run(sim::kNsecPerMsec);
    EXPECT_EQ(on_before, 1);
    EXPECT_EQ(on_after, 0);
  }
}

// The last thread's exit frees its process's pages (exit_mm).
TEST(TaskSharedAllocator, ProcessExitFreesItsPages) {
  Sim s(flat_machine(1), config(Abi::Rfc));
  int64_t addr = 0;
  s.spawn(on(0), [&](user::Thread& t) -> user::Program {
    co_await t.syscall(kernel::NR_task_getshared, 1, 0, reinterpret_cast<int64_t>(&addr));
    co_await t.nanosleep(sim::kNsecPerMsec);
  });
  s.run(500 * sim::kNsecPerUsec);
  EXPECT_EQ(s.k->mm_of(s.tgid)->pages.size(), 1u);
  s.engine.run_until(5 * sim::kNsecPerMsec);
  EXPECT_EQ(s.k->mm_of(s.tgid)->pages.size(), 0u);
}

// Prakash's lazy variant: a reschedule requested from another CPU while curr holds a grant
// sets no flag (and sends no IPI); without the switch it does.
TEST(SliceExtPolicy, LazyRemoteLeavesAGrantedCpuAlone) {
  for (bool lazy : {false, true}) {
    kernel::KernelConfig c = config(Abi::Rfc);
    c.slice_ext.lazy_remote = lazy;
    Sim s(flat_machine(2), c);
    const int h = s.spawn(on(0), hog);
    s.run(sim::kNsecPerMsec);
    kernel::rq* rq0 = s.k->rq_of(0);
    ASSERT_EQ(rq0->curr->pid, h);
    rq0->curr->slice.granted = true;
    s.k->set_current(nullptr, 1);  // the request comes from CPU 1
    kernel::resched_curr(rq0);
    EXPECT_EQ(kernel::test_tsk_need_resched(rq0->curr), !lazy);
    EXPECT_EQ(rq0->ex.ipi_timer.armed, !lazy);
  }
}

// slice_ext.nsec is bounded by the design's table: 7.0's debugfs knob accepts 5..50 us
// (ERANGE outside), the hrtick designs take any length; 0 means the design's default.
TEST(SliceExtOps, TheGrantLengthBoundsAndDefaultComeFromTheDesignsTable) {
  kernel::KernelConfig c = config(Abi::Mainline);
  c.slice_ext.nsec = 4999;
  EXPECT_EQ(kernel::validate_config(c),
            "slice_ext.nsec: mainline bounds the extension to 5us..50us (debugfs "
            "rseq/slice_ext_nsec; got 4999ns)");
  c.slice_ext.nsec = 50001;
  EXPECT_NE(kernel::validate_config(c).find("got 50001ns"), std::string::npos);
  for (int64_t ok : {0, 5000, 50000}) {
    c.slice_ext.nsec = ok;
    EXPECT_EQ(kernel::validate_config(c), "") << ok;
  }
  for (Abi abi : {Abi::None, Abi::Rfc, Abi::Rseq2023}) {
    kernel::KernelConfig o = config(abi);
    o.slice_ext.nsec = 1000;
    EXPECT_EQ(kernel::validate_config(o), "") << kernel::slice_ext_abi_name(abi);
  }
  EXPECT_EQ(kernel::slice_ext_select(Abi::Mainline)->default_nsec, 5000);
  EXPECT_EQ(kernel::slice_ext_select(Abi::Rfc)->default_nsec, 50000);
  EXPECT_EQ(kernel::slice_ext_select(Abi::Rseq2023)->default_nsec, 50000);
  EXPECT_FALSE(kernel::slice_ext_select(Abi::None)->configured);
  EXPECT_EQ(kernel::slice_ext_select(Abi::None)->nr_counters, 0);
}

// rseq_slice_yield() exists only where the design lists it (7.0).
TEST(SliceExtOps, RseqSliceYieldIsNotASyscallOnOtherDesigns) {
  for (Abi abi : {Abi::None, Abi::Rfc, Abi::Rseq2023}) {
    Sim s(flat_machine(1), config(abi));
    int64_t r = 0;
    s.spawn(on(0), [&](user::Thread& t) -> user::Program {
      r = co_await t.syscall(kernel::NR_rseq_slice_yield);
    });
    s.run(sim::kNsecPerMsec);
    EXPECT_EQ(r, -ENOSYS) << kernel::slice_ext_abi_name(abi);
  }
}
