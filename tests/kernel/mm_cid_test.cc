// rseq concurrency IDs (kernel/sched/mm_cid*.cc) pinned against the kernel's rules: IDs stay
// below the thread and CPU counts, no two running threads of a process share one, the
// compaction brings a lone survivor's ID down to 0, task_mm_cid_work() scans at most once per
// 100 ms, the batched scan resumes where it stopped and visits every CPU once per pass, and
// 6.19's ownership model needs no scan. Plus the mm_cid settings' checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kernel/sched/mm_cid.h"
#include "kernel/sched/sched.h"
#include "kernel/task_shared.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

kernel::KernelConfig config(kernel::KernelVersion v, kernel::MmCid impl, int batch = 8) {
  kernel::KernelConfig cfg = kernel::default_config(v);
  cfg.mm_cid = impl;
  cfg.mm_cid_scan_batch = batch;
  return cfg;
}

struct Impl {
  const char* name;
  kernel::KernelVersion version;
  kernel::MmCid impl;
};
const Impl kImpls[] = {
    {"lazy 6.12", kernel::KernelVersion::V6_12, kernel::MmCid::Lazy},
    {"lazy 6.18", kernel::KernelVersion::V6_18, kernel::MmCid::Lazy},
    {"batched 6.18", kernel::KernelVersion::V6_18, kernel::MmCid::Batched},
    {"owner 7.0", kernel::KernelVersion::V7_0, kernel::MmCid::Owner},
};

// Threads that run a random 50..500 us and sleep a random 20..300 us, for ever: they switch,
// migrate and wake on other CPUs all the time.
user::Program churn(user::Thread& t) {
  for (;;) {
    const int64_t run = 50 * kUs + static_cast<int64_t>(t.rng().next_u64() % (450 * kUs));
    co_await t.compute(run);
    const int64_t sleep = 20 * kUs + static_cast<int64_t>(t.rng().next_u64() % (280 * kUs));
    co_await t.nanosleep(sleep);
  }
}

// The cids of the process's threads running on a CPU now (user-visible value).
std::vector<uint32_t> running_cids(const Sim& s) {
  std::vector<uint32_t> out;
  for (int c = 0; c < s.k->nr_cpus(); ++c) {
    const kernel::rq& rq = s.k->cpu_rq(c);
    const kernel::task_struct* p = rq.curr;
    if (p->is_idle || p->tgid != s.tgid) continue;
    out.push_back(s.k->mm_cid_ops->task_mm_cid(&rq, p));
  }
  return out;
}

// One thread that ran 1 ms and then sleeps, after `settle` of the run: the task and its rq,
// for tests that call the scan's hooks by hand.
struct Sleeper {
  kernel::task_struct* p;
  kernel::rq* rq;
};
Sleeper spawn_sleeper(Sim& s, sim::Time settle) {
  const int pid = s.spawn({}, [](user::Thread& t) -> user::Program {
    co_await t.compute(1 * kMs);
    co_await t.nanosleep(10 * sim::kNsecPerSec);
  });
  s.run(settle);
  kernel::task_struct* p = const_cast<kernel::task_struct*>(&s.task(pid));
  return {p, s.k->rq_of(p->cpu)};
}

}  // namespace

// No two threads of a process running at once have the same ID, and every ID is below the
// CPU count (6.4 .. 6.12's bound) and, 6.14+ and 6.19, below min(threads, CPUs); what user
// space reads from its rseq area obeys the same bounds.
TEST(MmCid, RunningThreadsHaveDistinctIdsBelowTheThreadAndCpuCounts) {
  for (const Impl& impl : kImpls) {
    for (int threads : {3, 12}) {
      SCOPED_TRACE(std::string(impl.name) + ", threads " + std::to_string(threads));
      const int cpus = 8;
      Sim s(flat_machine(cpus), config(impl.version, impl.impl));
      uint32_t max_seen = 0;
      for (int i = 0; i < threads; ++i)
        s.spawn({}, [&](user::Thread& t) -> user::Program {
          for (;;) {
            const int64_t run = 50 * kUs + static_cast<int64_t>(t.rng().next_u64() % (450 * kUs));
            co_await t.compute(run);
            max_seen = std::max(max_seen, t.rseq()->mm_cid);
            const int64_t sleep = 20 * kUs + static_cast<int64_t>(t.rng().next_u64() % (280 * kUs));
            co_await t.nanosleep(sleep);
          }
        });
      const uint32_t bound = impl.version == kernel::KernelVersion::V6_12
                                 ? static_cast<uint32_t>(cpus)
                                 : static_cast<uint32_t>(std::min(threads, cpus));
      s.k->start();
      int samples_with_two = 0;
      for (sim::Time t = 50 * kUs; t <= 400 * kMs; t += 50 * kUs) {
        s.engine.run_until(t);
        const std::vector<uint32_t> cids = running_cids(s);
        const std::set<uint32_t> distinct(cids.begin(), cids.end());
        ASSERT_EQ(distinct.size(), cids.size()) << "at " << t;
        for (uint32_t c : cids) ASSERT_LT(c, bound) << "at " << t;
        samples_with_two += cids.size() >= 2;
      }
      s.k->finish(400 * kMs);
      EXPECT_GT(samples_with_two, 1000);  // the check had something to check
      EXPECT_LT(max_seen, bound);
      EXPECT_EQ(s.k->warnings().count, 0u) << s.k->warnings().first;
      testing_support::check_invariants(*s.k, 400 * kMs);
    }
  }
}

// 6.14+ (max_nr_cid = min(CPUs allowed, mm_users)) and 6.19: IDs stay below the thread count
// even when the threads keep moving. A second process's threads take the CPUs in random bursts,
// so the three threads mostly wake on a CPU other than their last one (migrate_from/to on every
// such wakeup): a cid left behind must be handed over or freed, not kept beside a new one.
TEST(MmCid, IdsStayBelowTheThreadCountWhileThreadsMigrate) {
  for (const Impl& impl : kImpls) {
    if (impl.version == kernel::KernelVersion::V6_12) continue;  // 6.4 .. 6.13: below CPUs only
    SCOPED_TRACE(impl.name);
    const int cpus = 8, threads = 3;
    Sim s(flat_machine(cpus), config(impl.version, impl.impl));
    uint32_t max_seen = 0;
    int reads = 0;
    for (int i = 0; i < threads; ++i)
      s.spawn({}, [&](user::Thread& t) -> user::Program {
        for (;;) {
          const int64_t run = 20 * kUs + static_cast<int64_t>(t.rng().next_u64() % (200 * kUs));
          co_await t.compute(run);
          max_seen = std::max(max_seen, t.rseq()->mm_cid);
          ++reads;
          const int64_t sleep = 20 * kUs + static_cast<int64_t>(t.rng().next_u64() % (300 * kUs));
          co_await t.nanosleep(sleep);
        }
      });
    const int test_tgid = s.tgid;
    s.tgid = s.k->create_process("noise");
    for (int i = 0; i < cpus; ++i) s.spawn({}, churn);
    s.tgid = test_tgid;
    int migrations_before = 0;
    s.k->start();
    for (sim::Time t = 50 * kUs; t <= 300 * kMs; t += 50 * kUs) {
      s.engine.run_until(t);
      for (uint32_t c : running_cids(s)) ASSERT_LT(c, static_cast<uint32_t>(threads)) << "at " << t;
    }
    for (const auto& p : s.k->tasks())
      if (p->tgid == test_tgid) migrations_before += static_cast<int>(p->stats.nr_migrations);
    s.k->finish(300 * kMs);
    EXPECT_GT(reads, 1000);
    EXPECT_GT(migrations_before, 300);  // the threads did move
    EXPECT_LT(max_seen, static_cast<uint32_t>(threads));
  }
}

// After the other threads exit, a survivor that held a high ID reads 0 from its rseq area
// within about a second (the selftest mm_cid_compaction_test's rule): by the 100 ms scan
// (lazy, batched) or at its next switch-in (owner). The survivor busy-loops 5 ms between
// short sleeps, so that ticks find it running (the scan is tick-triggered).
TEST(MmCid, CompactionBringsALoneSurvivorsIdDownToZero) {
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    const int cpus = 8;
    Sim s(flat_machine(cpus), config(impl.version, impl.impl));
    kernel::UserWord leader;
    uint32_t start_cid = 0, last_cid = 99;
    sim::Time zero_at = -1;
    for (int i = 0; i < cpus; ++i) {
      kernel::TaskAttr a;
      a.cpus = {i};  // one thread pinned per CPU, as the selftest does
      s.spawn(a, [&](user::Thread& t) -> user::Program {
        for (int r = 0; r < 5; ++r) {
          co_await t.compute(1 * kMs);
          co_await t.nanosleep(10 * kMs);
        }
        const uint32_t cid = t.rseq()->mm_cid;
        if (cid < static_cast<uint32_t>(cpus / 2) || !t.cmpxchg(&leader, 0, t.pid())) co_return;
        start_cid = cid;
        co_await t.nanosleep(20 * kMs);  // the others exit
        for (int r = 0; r < 200; ++r) {
          co_await t.compute(5 * kMs);
          co_await t.nanosleep(1 * kMs);
          last_cid = t.rseq()->mm_cid;
          if (last_cid == 0 && zero_at < 0) zero_at = t.now();
        }
      });
    }
    s.run(1500 * kMs);
    ASSERT_NE(leader.value, 0) << "no thread had an ID >= CPUs / 2";
    EXPECT_GE(start_cid, static_cast<uint32_t>(cpus / 2));
    EXPECT_EQ(last_cid, 0u);
    EXPECT_GT(zero_at, 0);
    EXPECT_LT(zero_at, 1000 * kMs);
    const kernel::mm_struct* mm = s.k->mm_of(s.tgid);
    EXPECT_EQ(mm->cid.users, 0);  // the leader too has exited by now
  }
}

// task_mm_cid_work() scans at most once per MM_CID_SCAN_DELAY (100 ms) per process, however
// many ticks queue it: threads running for a second do about ten scans, each over every CPU.
TEST(MmCid, TheScanRunsAtMostOncePer100Ms) {
  const int cpus = 4;
  Sim s(flat_machine(cpus), config(kernel::KernelVersion::V6_18, kernel::MmCid::Lazy));
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1000 * kMs);
  const kernel::mm_cid_stats& st = s.k->mm_of(s.tgid)->cid.stats;
  EXPECT_GE(st.nr_scan_calls, 8u);
  EXPECT_LE(st.nr_scan_calls, 10u);
  EXPECT_EQ(st.cpus_visited, st.nr_scan_calls * cpus);
  EXPECT_EQ(st.nr_passes, st.nr_scan_calls);
  EXPECT_EQ(st.scan_ns_max, static_cast<uint64_t>(cpus * s.k->machine().costs.mm_cid_scan_cpu_ns));
}

// The same rule, call by call: a second call within the 100 ms finds the scan not due.
TEST(MmCid, ASecondScanWithinTheDelayReturnsAtOnce) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V6_18, kernel::MmCid::Lazy));
  const auto [p, rq] = spawn_sleeper(s, 200 * kMs);
  const kernel::mm_cid_stats& st = p->mm->cid.stats;
  const uint64_t before = st.nr_scan_calls;
  for (int i = 0; i < 2; ++i) {
    p->mm_cid.pending |= kernel::MM_CID_WORK_QUEUED;
    s.k->mm_cid_ops->resume_user(rq, p);
  }
  EXPECT_EQ(st.nr_scan_calls, before + 1);
  EXPECT_EQ(p->mm->cid.next_scan, s.k->jiffies() + 25);  // HZ 250: msecs_to_jiffies(100)
}

// Batched: each call scans the next batch of CONFIG_RSEQ_CID_SCAN_BATCH CPUs, resuming where
// the last stopped; a pass visits every possible CPU once, and only a pass's first batch waits
// for the 100 ms delay.
TEST(MmCid, BatchesResumeWhereTheLastStoppedAndAPassVisitsEveryCpuOnce) {
  const int cpus = 16, batch = 6;  // batches of 6, 6, 4
  Sim s(flat_machine(cpus), config(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, batch));
  const auto [p, rq] = spawn_sleeper(s, 200 * kMs);
  kernel::mm_mm_cid& c = p->mm->cid;
  ASSERT_EQ(c.stats.nr_scan_calls, 0u);
  auto call = [&] {
    p->mm_cid.pending |= kernel::MM_CID_NOTIFY_RESUME;
    s.k->mm_cid_ops->resume_user(rq, p);
  };
  const unsigned want_batch[] = {1, 2, 0};
  const uint64_t want_visited[] = {6, 12, 16};
  for (int i = 0; i < 3; ++i) {
    call();
    EXPECT_EQ(c.scan_batch, want_batch[i]) << "call " << i;
    EXPECT_EQ(c.stats.cpus_visited, want_visited[i]) << "call " << i;
    EXPECT_EQ(c.stats.nr_passes, i == 2 ? 1u : 0u) << "call " << i;
  }
  call();  // a new pass is not due yet
  EXPECT_EQ(c.stats.cpus_visited, 16u);
  EXPECT_EQ(c.scan_batch, 0u);
}

// v2 calls task_mm_cid_work() from every __rseq_handle_notify_resume(); its rate limit lets a
// pass start once jiffies reaches mm_cid_next_scan (time_before(now, old_scan) returns), not
// one jiffy later (mm_cid_needs_scan()'s time_after is the tick's test only).
TEST(MmCid, BatchedPassStartsAtTheJiffyTheScanIsDue) {
  const int cpus = 16, batch = 8;
  Sim s(flat_machine(cpus), config(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, batch));
  const auto [p, rq] = spawn_sleeper(s, 200 * kMs);
  kernel::mm_mm_cid& c = p->mm->cid;
  ASSERT_EQ(c.stats.nr_scan_calls, 0u);
  c.next_scan = s.k->jiffies();  // due this very jiffy
  p->mm_cid.pending |= kernel::MM_CID_NOTIFY_RESUME;
  s.k->mm_cid_ops->resume_user(rq, p);
  EXPECT_EQ(c.stats.nr_scan_calls, 1u);
  EXPECT_EQ(c.scan_batch, 1u);
  EXPECT_EQ(c.next_scan, s.k->jiffies() + 25);  // HZ 250: msecs_to_jiffies(100)
}

// The same in a running system: threads that switch all the time start a one-batch pass
// every 100 ms (25 jiffies at HZ 250), at jiffies 25, 50, ..., 250: ten in 1010 ms. A pass
// a jiffy late each time (every 26) would make nine.
TEST(MmCid, BatchedPassesComeEvery100MsWhenThreadsSwitchOften) {
  const int cpus = 4;
  Sim s(flat_machine(cpus), config(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, cpus));
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1010 * kMs);
  const kernel::mm_cid_stats& st = s.k->mm_of(s.tgid)->cid.stats;
  EXPECT_EQ(st.nr_passes, 10u);
  EXPECT_EQ(st.nr_scan_calls, 10u);
}

// rseq_set_notify_resume() and rseq_handle_notify_resume() act only if the task registered an
// rseq area (t->rseq), and v2 scans from __rseq_handle_notify_resume(): a process whose threads
// never registered is never compacted. The original scan is task work, which has no such
// condition.
TEST(MmCid, BatchedScanNeedsARegisteredRseqArea) {
  for (kernel::MmCid impl : {kernel::MmCid::Batched, kernel::MmCid::Lazy}) {
    kernel::KernelConfig cfg = config(kernel::KernelVersion::V6_18, impl, 4);
    cfg.slice_ext.rseq_registered = false;
    Sim s(flat_machine(4), cfg);
    for (int i = 0; i < 6; ++i) s.spawn({}, churn);
    s.run(1000 * kMs);
    const kernel::mm_struct* mm = s.k->mm_of(s.tgid);
    if (impl == kernel::MmCid::Batched) {
      EXPECT_EQ(mm->cid.stats.nr_scan_calls, 0u);
      for (const auto& t : s.k->tasks()) {
        if (t->tgid != s.tgid) continue;
        EXPECT_EQ(t->mm_cid.pending & kernel::MM_CID_NOTIFY_RESUME, 0);
      }
    } else {
      EXPECT_GE(mm->cid.stats.nr_scan_calls, 8u);
    }
  }
}

// task_tick_mm_cid() of v2 2/4 returns while TIF_NOTIFY_RESUME is set and for a task that ran
// less than RSEQ_UNPREEMPTED_THRESHOLD: exactly 100 ms unpreempted is enough.
TEST(MmCid, BatchedTickActsFrom100MsUnpreemptedAndNotWhileANotificationIsPending) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, 4));
  const auto [p, rq] = spawn_sleeper(s, 400 * kMs);
  kernel::mm_mm_cid& c = p->mm->cid;
  p->se.prev_sum_exec_runtime = p->se.sum_exec_runtime - 100 * kMs;
  // A scan is due (time_after(jiffies, mm_cid_next_scan)): the tick asks for it.
  c.next_scan = s.k->jiffies() - 1;
  p->mm_cid.pending = 0;
  s.k->mm_cid_ops->tick(rq, p);
  EXPECT_NE(p->mm_cid.pending & kernel::MM_CID_NOTIFY_RESUME, 0);
  // No scan due and the cid last fetched long ago: the tick would fetch it again, but not
  // while a notification is pending.
  c.next_scan = s.k->jiffies() + 25;
  p->mm_cid.last_cid_reset = 0;
  s.k->mm_cid_ops->tick(rq, p);
  EXPECT_EQ(p->mm_cid.last_cid_reset, 0u);
  p->mm_cid.pending = 0;
  s.k->mm_cid_ops->tick(rq, p);
  EXPECT_EQ(p->mm_cid.last_cid_reset, s.k->jiffies());
}

// In a running system the batched scan's calls each cost at most one batch, and the passes add
// up to whole passes over the CPUs.
TEST(MmCid, BatchedCallsCostOneBatchEach) {
  const int cpus = 16, batch = 4;
  Sim s(flat_machine(cpus), config(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, batch));
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1000 * kMs);
  const kernel::mm_cid_stats& st = s.k->mm_of(s.tgid)->cid.stats;
  const uint64_t cost = static_cast<uint64_t>(s.k->machine().costs.mm_cid_scan_cpu_ns);
  EXPECT_GE(st.nr_passes, 8u);
  EXPECT_LE(st.nr_passes, 10u);
  EXPECT_EQ(st.scan_ns_max, batch * cost);
  EXPECT_EQ(st.cpus_visited, st.nr_scan_calls * batch);
  EXPECT_LE(st.cpus_visited - st.nr_passes * cpus, static_cast<uint64_t>(cpus));
}

// do_exit(): exit_signals() drops the thread's mm_cid, then exit_mm() -> mm_release() zeroes
// the word set_tid_address() named (CLONE_CHILD_CLEARTID) and wakes one waiter: a
// pthread_join() returns only once the joined thread's cid is gone.
TEST(MmCid, AJoinerWakesAfterTheExitingThreadDroppedItsId) {
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    Sim s(flat_machine(4), config(impl.version, impl.impl));
    kernel::UserWord tid;
    tid.value = 1;
    int weight_at_wake = -1;
    int64_t woke_at = -1, tid_set_ret = -1;
    kernel::TaskAttr on0, on1;
    on0.cpus = {0};
    on1.cpus = {1};
    s.spawn(on1, [&](user::Thread& t) -> user::Program {
      tid_set_ret = co_await t.syscall(kernel::NR_set_tid_address, reinterpret_cast<int64_t>(&tid));
      co_await t.compute(2 * kMs);
    });  // then the program ends: exit()
    s.spawn(on0, [&](user::Thread& t) -> user::Program {
      for (int64_t v = t.load(&tid); v != 0; v = t.load(&tid)) co_await t.futex_wait(&tid, v);
      woke_at = t.now();
      weight_at_wake = kernel::cidmask_weight(s.k->mm_of(s.tgid));
      co_await t.nanosleep(1 * kMs);
    });
    s.run(50 * kMs);
    EXPECT_GT(tid_set_ret, 0);
    EXPECT_EQ(tid.value, 0);
    EXPECT_GT(woke_at, 2 * kMs);
    EXPECT_EQ(weight_at_wake, 1);  // the joiner's own cid, and no more
  }
}

// 6.19 needs no scan: no task work is ever queued and no CPU time goes to compaction.
TEST(MmCid, OwnerNeedsNoScan) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V7_0, kernel::MmCid::Default));
  ASSERT_EQ(s.k->mm_cid_ops, &kernel::mm_cid_owner_ops);
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1000 * kMs);
  const kernel::mm_cid_stats& st = s.k->mm_of(s.tgid)->cid.stats;
  EXPECT_EQ(st.nr_scan_calls, 0u);
  EXPECT_EQ(st.cpus_visited, 0u);
  EXPECT_GE(st.max_cid, 0);
  EXPECT_LT(st.max_cid, 4);  // max_cids = min(opt + opt / 4, 4 possible), opt = min(6 users, 4 CPUs)
}

// Owner: more threads than the cid space allows puts the mm in per-CPU mode; when most exit
// it returns to per-task mode.
TEST(MmCid, OwnerSwitchesToPerCpuModeWithManyThreadsAndBack) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V7_0, kernel::MmCid::Owner));
  for (int i = 0; i < 8; ++i)
    s.spawn({}, [i](user::Thread& t) -> user::Program {
      for (int r = 0; r < (i == 0 ? 400 : 20); ++r) {
        co_await t.compute(200 * kUs);
        co_await t.nanosleep(100 * kUs);
      }
    });
  s.k->start();
  s.engine.run_until(2 * kMs);
  const kernel::mm_mm_cid& c = s.k->mm_of(s.tgid)->cid;
  EXPECT_TRUE(c.percpu);
  EXPECT_EQ(c.max_cids, 4u);  // min(opt 4 + 1, 4 possible)
  s.engine.run_until(100 * kMs);
  EXPECT_EQ(c.users, 1);
  EXPECT_FALSE(c.percpu);
  s.k->finish(100 * kMs);
}

TEST(MmCid, SettingsRejectUnknownNamesAndImpossibleCombinations) {
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V6_18);
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid", "eager"),
            "mm_cid: unknown implementation 'eager' (choose default, off, lazy, batched, owner)");
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid.scan_batch", "0"),
            "mm_cid.scan_batch: must be an integer from 1 to the CPU count (got '0')");
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid.sample_ms", "1001"),
            "mm_cid.sample_ms: must be an integer in 0..1000 (got '1001')");
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid.sample_ms", "10"), "");
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid", "batched"), "");
  EXPECT_EQ(kernel::validate_config(cfg), "");
  // The default batch (8) fits any machine: on fewer CPUs a pass is one batch.
  EXPECT_EQ(kernel::validate_config_machine(cfg, 4), "");
  EXPECT_EQ(kernel::set_config_key(&cfg, "mm_cid.scan_batch", "9"), "");
  EXPECT_EQ(kernel::validate_config_machine(cfg, 8),
            "mm_cid.scan_batch: must be in 1..8 (the machine's CPUs; got 9)");
  EXPECT_EQ(kernel::validate_config_machine(cfg, 9), "");
  cfg.mm_cid = kernel::MmCid::Owner;
  EXPECT_EQ(kernel::validate_config(cfg), "mm_cid: owner is the 6.19 rewrite; 6.18 has lazy");
  cfg.version = kernel::KernelVersion::V7_0;
  cfg.preempt = kernel::PreemptModel::Lazy;
  EXPECT_EQ(kernel::validate_config(cfg), "");
  cfg.mm_cid = kernel::MmCid::Lazy;
  EXPECT_EQ(kernel::validate_config(cfg),
            "mm_cid: lazy does not exist in 7.0 (6.19 replaced the scan by owner)");
  cfg = kernel::default_config(kernel::KernelVersion::V6_12);
  cfg.mm_cid = kernel::MmCid::Batched;
  EXPECT_EQ(kernel::validate_config(cfg),
            "mm_cid: batched patches the 6.14+ allocator (max_nr_cid); use kernel 6.18, not 6.12");
  EXPECT_EQ(kernel::mm_cid_effective(kernel::default_config(kernel::KernelVersion::V6_12)),
            kernel::MmCid::Lazy);
  EXPECT_EQ(kernel::mm_cid_effective(kernel::default_config(kernel::KernelVersion::V7_0)),
            kernel::MmCid::Owner);
}

// Off (CONFIG_SCHED_MM_CID=n): the rseq area's mm_cid is the CPU number.
TEST(MmCid, OffShowsTheCpuNumber) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V6_18, kernel::MmCid::Off));
  uint32_t seen = 99;
  kernel::TaskAttr a;
  a.cpus = {3};
  s.spawn(a, [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(1 * kMs);
    seen = t.rseq()->mm_cid;
  });
  s.run(10 * kMs);
  EXPECT_EQ(seen, 3u);
}

// The scan never frees the ID of a thread that is running: a hog whose ID is above the
// number of IDs in use keeps it (its slot only becomes lazy-put, released when it switches
// out), so threads that start later get other IDs. Freeing it would hand the hog's ID to one
// of them (6.12's lowest-free allocation does so here).
TEST(MmCid, ARunningThreadsIdIsNeverHandedToAnother) {
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    Sim s(flat_machine(4), config(impl.version, impl.impl));
    auto pinned = [](int cpu) {
      kernel::TaskAttr a;
      a.cpus = {cpu};
      return a;
    };
    s.spawn(pinned(0), [](user::Thread& t) -> user::Program {  // cid 0, then exits
      co_await t.compute(1 * kMs);
    });
    const int hog = s.spawn(pinned(1), [](user::Thread& t) -> user::Program {  // cid 1
      for (;;) co_await t.compute(sim::kNsecPerSec);
    });
    for (int cpu : {2, 3})
      s.spawn(pinned(cpu), [](user::Thread& t) -> user::Program {
        for (;;) {
          co_await t.compute(100 * kUs);
          co_await t.nanosleep(100 * kUs);
        }
      }, 300 * kMs);
    s.k->start();
    s.engine.run_until(290 * kMs);
    const uint32_t hog_cid = s.k->mm_cid_ops->task_mm_cid(&s.k->cpu_rq(1), &s.task(hog));
    for (sim::Time t = 300 * kMs; t <= 350 * kMs; t += 10 * kUs) {
      s.engine.run_until(t);
      const std::vector<uint32_t> cids = running_cids(s);
      const std::set<uint32_t> distinct(cids.begin(), cids.end());
      ASSERT_EQ(distinct.size(), cids.size()) << "at " << t;
    }
    EXPECT_EQ(s.k->mm_cid_ops->task_mm_cid(&s.k->cpu_rq(1), &s.task(hog)), hog_cid);
    s.k->finish(350 * kMs);
  }
}

// ---- Metrics (mm_cid.sample_ms > 0): kernel::mm_cid_snapshot(). ----

namespace {
kernel::KernelConfig sampled(kernel::KernelVersion v, kernel::MmCid impl, int batch, int sample_ms) {
  kernel::KernelConfig cfg = config(v, impl, batch);
  cfg.mm_cid_sample_ms = sample_ms;
  return cfg;
}
}  // namespace

// Without mm_cid.sample_ms nothing is measured (and no sampler event is added).
TEST(MmCidMetrics, OffUnlessSampled) {
  Sim s(flat_machine(4), config(kernel::KernelVersion::V6_18, kernel::MmCid::Lazy));
  for (int i = 0; i < 4; ++i) s.spawn({}, churn);
  s.run(300 * kMs);
  EXPECT_FALSE(kernel::mm_cid_snapshot(*s.k).on);
}

// Batched: every call costs one batch; a pass is its batches plus the gaps between them, and
// each pass has (CPUs / batch) - 1 gaps.
TEST(MmCidMetrics, BatchedCallsPassesAndGaps) {
  const int cpus = 16, batch = 4;
  Sim s(flat_machine(cpus), sampled(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, batch, 10));
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1000 * kMs);
  const kernel::mm_cid_report r = kernel::mm_cid_snapshot(*s.k);
  ASSERT_TRUE(r.on);
  const int64_t cost = s.k->machine().costs.mm_cid_scan_cpu_ns;
  EXPECT_EQ(r.scan_call_ns.summary().count, r.scan_calls);
  EXPECT_EQ(r.scan_call_ns.summary().max, batch * cost);
  EXPECT_EQ(r.pass_ns.summary().count, r.passes);
  EXPECT_GE(r.passes, 8u);
  EXPECT_GE(r.pass_gap_ns.summary().count, r.passes * (cpus / batch - 1));
  EXPECT_LE(r.pass_gap_ns.summary().count, (r.passes + 1) * (cpus / batch - 1));
  // A pass takes its four batches' work and the three gaps between them.
  EXPECT_GE(r.pass_ns.summary().min, cpus * cost);
  EXPECT_GT(r.pass_ns.summary().max, r.pass_gap_ns.summary().min);
  EXPECT_EQ(r.samples, 100u);  // at 10, 20, ... 1000 ms
  EXPECT_GT(r.user_cid.summary().count, 100u);
  EXPECT_LT(r.user_cid.summary().max, 6);  // below min(6 threads, 16 CPUs)
}

// Batches of one pass run on different CPUs, each from its own CPU's clock: the last batch,
// claimed on a CPU with no kernel work queued, starts before the first, which waits behind
// 50 us of kernel work on its CPU. The pass spans the earliest start to the latest end (the
// first batch's), and the gap before an overlapping batch is 0, not negative.
TEST(MmCidMetrics, APassSpansItsBatchesEarliestStartToLatestEndAcrossCpus) {
  const int cpus = 16, batch = 8;  // two batches
  Sim s(flat_machine(cpus),
        sampled(kernel::KernelVersion::V6_18, kernel::MmCid::Batched, batch, 10));
  const auto [p, rq] = spawn_sleeper(s, 200 * kMs);
  kernel::rq* other = s.k->rq_of(rq->cpu == 0 ? 1 : 0);
  const sim::Time now = s.k->now();
  rq->ex.kwork_until = now + 50 * kUs;
  p->mm_cid.pending |= kernel::MM_CID_NOTIFY_RESUME;
  s.k->mm_cid_ops->resume_user(rq, p);     // batch 0, from now + 50 us
  p->mm_cid.pending |= kernel::MM_CID_NOTIFY_RESUME;
  s.k->mm_cid_ops->resume_user(other, p);  // batch 1, from now
  ASSERT_EQ(p->mm->cid.stats.nr_passes, 1u);
  const int64_t cost = s.k->machine().costs.mm_cid_scan_cpu_ns;
  const kernel::mm_cid_report r = kernel::mm_cid_snapshot(*s.k);
  EXPECT_EQ(r.pass_ns.summary().max, 50 * kUs + batch * cost);
  EXPECT_EQ(r.pass_gap_ns.summary().min, 0);
}

// The original scan: one call is one whole pass, so passes and calls match and there are no
// gaps.
TEST(MmCidMetrics, LazyCallIsAWholePass) {
  const int cpus = 8;
  Sim s(flat_machine(cpus), sampled(kernel::KernelVersion::V6_18, kernel::MmCid::Lazy, 8, 10));
  for (int i = 0; i < 6; ++i) s.spawn({}, churn);
  s.run(1000 * kMs);
  const kernel::mm_cid_report r = kernel::mm_cid_snapshot(*s.k);
  EXPECT_EQ(r.pass_ns.summary().count, r.scan_calls);
  EXPECT_EQ(r.pass_ns.summary().max, cpus * s.k->machine().costs.mm_cid_scan_cpu_ns);
  EXPECT_EQ(r.pass_gap_ns.summary().count, 0u);
}

// An RT thread that wakes while its CPU runs a scan (in another process's thread, on its way
// back to user space) waits for the scan to end: that wait is recorded, at most one call long.
// A scan made long (50 us per CPU, 400 us a call) so the overlap is certain.
TEST(MmCidMetrics, AnRtWakeupDuringAScanRecordsTheLatencyItAdded) {
  hw::Machine m = flat_machine(8);
  m.costs.mm_cid_scan_cpu_ns = 50 * kUs;
  Sim s(m, sampled(kernel::KernelVersion::V6_18, kernel::MmCid::Lazy, 8, 10));
  kernel::TaskAttr on0;
  on0.cpus = {0};
  for (int i = 0; i < 2; ++i)  // busy threads of the scanned process on CPU 0: ticks find them
    s.spawn(on0, [](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.compute(3 * kMs);
        co_await t.nanosleep(50 * kUs);
      }
    });
  const int test_tgid = s.tgid;
  s.tgid = s.k->create_process("rt");
  kernel::TaskAttr rt = on0;
  rt.policy = SCHED_FIFO;
  rt.rt_priority = 90;
  s.spawn(rt, [](user::Thread& t) -> user::Program {
    for (;;) {
      co_await t.compute(5 * kUs);
      co_await t.nanosleep(37 * kUs);  // a period prime to the tick: wakeups land everywhere
    }
  });
  s.tgid = test_tgid;
  s.run(1000 * kMs);
  const kernel::mm_cid_report r = kernel::mm_cid_snapshot(*s.k);
  ASSERT_GT(r.scan_calls, 3u);
  EXPECT_GT(r.rt_wait_added_ns.summary().count, 0u);
  EXPECT_GT(r.rt_wait_added_ns.summary().max, 0);
  EXPECT_LE(r.rt_wait_added_ns.summary().max, 8 * 50 * kUs);
}

// After a burst of threads exits, the survivor's ID comes back below the thread count: the
// series of the highest ID shown ends at 0, and the convergence time is recorded, within the
// 100 ms scan period plus the survivor's next return to user space. One thread pinned per
// CPU; the survivor is the first with an ID >= CPUs / 2 (the selftest's election).
TEST(MmCidMetrics, ConvergenceAfterABurstIsRecorded) {
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    const int cpus = 8;
    Sim s(flat_machine(cpus), sampled(impl.version, impl.impl, 8, 5));
    kernel::UserWord token;
    for (int i = 0; i < cpus; ++i) {
      kernel::TaskAttr a;
      a.cpus = {i};
      s.spawn(a, [&token](user::Thread& t) -> user::Program {
        for (int r = 0; r < 10; ++r) {
          co_await t.compute(5 * kMs);
          co_await t.nanosleep(1 * kMs);
        }
        if (t.rseq()->mm_cid < cpus / 2 || !t.cmpxchg(&token, 0, 1)) co_return;
        for (int r = 0; r < 100; ++r) {
          co_await t.compute(5 * kMs);
          co_await t.nanosleep(1 * kMs);
        }
      });
    }
    s.run(600 * kMs);
    const kernel::mm_cid_report r = kernel::mm_cid_snapshot(*s.k);
    ASSERT_EQ(r.processes.size(), 1u);
    const kernel::mm_cid_process_report& p = r.processes[0];
    EXPECT_EQ(p.threads_max, cpus);
    EXPECT_GE(p.max_cid, cpus / 2);
    ASSERT_FALSE(p.series.empty());
    EXPECT_EQ(p.series.back(), 0);
    EXPECT_EQ(r.converge_ns.summary().count, 1u);
    EXPECT_LT(r.converge_ns.summary().max, 250 * kMs);
  }
}
