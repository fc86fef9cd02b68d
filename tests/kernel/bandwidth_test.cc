// CONFIG_CFS_BANDWIDTH (cgroup v2 cpu.max) pinned against Linux: a group runs its quota per
// period and is throttled until the period timer refills its pool; cpu.stat's counters;
// where 6.12 (the group's entity dequeued at once) and 6.18+ (task based throttling at the
// return to user mode) differ.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kernel/sched/sched.h"
#include "report/results.h"
#include "scenario/experiment.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"
#include "user/sync.h"

using group_support::hog;
using group_support::in_group;
using group_support::kVersions;
using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr sim::Time kSec = sim::kNsecPerSec;
constexpr sim::Time kUs = sim::kNsecPerUsec;

}  // namespace

// cpu.max "20000 100000" on one CPU: each 100 ms period the group's hog runs 20 ms (within a
// bandwidth slice: the overrun to the next tick is paid back the period after), and waits
// throttled for the rest; a hog in the root group takes the remaining time. Sharing the CPU
// half and half, the group uses its quota by about 40 ms into each period and is throttled
// the other 60; cpu.stat counts a throttled interval when it ends (the last one is open).
TEST(Bandwidth, CpuMaxThrottlesAtTheQuotaAndUnthrottlesAtThePeriod) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 20000, 100000);
    const int limited = s.spawn(in_group(a, 0), hog);
    const int other = s.spawn(in_group(0, 0), hog);
    s.k->start();
    uint64_t last = 0;
    for (int period = 1; period <= 10; ++period) {
      s.engine.run_until(period * 100 * kMs);
      const uint64_t ran = s.task(limited).se.sum_exec_runtime;
      if (period > 1) {  // the first period starts with the task's fork
        EXPECT_NEAR(static_cast<double>(ran - last), 20.0 * kMs, 5.0 * kMs) << "period " << period;
      }
      last = ran;
    }
    s.k->finish(kSec);
    EXPECT_NEAR(static_cast<double>(s.task(limited).stats.run_ns), 200.0 * kMs, 5.0 * kMs);
    EXPECT_NEAR(static_cast<double>(s.task(other).stats.run_ns), 800.0 * kMs, 10.0 * kMs);
    const auto g = s.k->task_group_stats();
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].quota_us, 20000);
    EXPECT_EQ(g[0].period_us, 100000);
    EXPECT_GE(g[0].nr_periods, 9u);  // the timer at 1 s fires up to its interrupt jitter late
    EXPECT_LE(g[0].nr_periods, 10u);
    EXPECT_EQ(g[0].nr_throttled, g[0].nr_periods);
    EXPECT_NEAR(static_cast<double>(g[0].throttled_ns), 9 * 60.0 * kMs, 10.0 * kMs);
    testing_support::check_invariants(*s.k, kSec);
  }
}

// The quota is the group's, whatever the number of CPUs it runs on: two hogs on two CPUs
// with 50 ms per 100 ms run 50 ms between them per period (25 ms each), and throttled time
// is counted per CPU (cpu.stat sums it): 2 x 75 ms per closed period.
TEST(Bandwidth, TheQuotaIsSharedByTheGroupsCpus) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 50000, 100000);
    const int h0 = s.spawn(in_group(a, 0), hog);
    const int h1 = s.spawn(in_group(a, 1), hog);
    s.run(kSec);
    const double both = static_cast<double>(s.task(h0).stats.run_ns + s.task(h1).stats.run_ns);
    EXPECT_NEAR(both, 500.0 * kMs, 15.0 * kMs);
    const auto g = s.k->task_group_stats();
    EXPECT_NEAR(static_cast<double>(g[0].throttled_ns), 9 * 2 * 75.0 * kMs, 20.0 * kMs);
    testing_support::check_invariants(*s.k, kSec);
  }
}

// cpu.max "max" (and no cpu.max at all) never throttles: the counters stay at zero.
TEST(Bandwidth, AnUnlimitedGroupIsNeverThrottled) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = s.k->create_task_group("/a");
    s.k->create_task_group("/b");
    s.k->set_task_group_cpu_max(a, -1, 100000);
    const int ha = s.spawn(in_group(a, 0), hog);
    s.run(kSec);
    EXPECT_NEAR(static_cast<double>(s.task(ha).stats.run_ns), 1.0 * kSec, 2.0 * kMs);
    for (const auto& g : s.k->task_group_stats()) {
      EXPECT_EQ(g.quota_us, -1) << g.path;
      EXPECT_EQ(g.nr_periods, 0u) << g.path;
      EXPECT_EQ(g.nr_throttled, 0u) << g.path;
      EXPECT_EQ(g.throttled_ns, 0u) << g.path;
    }
  }
}

// A task woken in the kernel after its group ran out of quota: 6.12 has the group's entity
// dequeued, so the task waits for the next period without running; 6.18+ throttle a task
// when it returns to user mode, so it runs its way out of the syscall first (a switch in,
// the exit path, at the instant it is woken) and only then waits, in its runqueue's limbo
// list. Its user code runs in neither until the unthrottle.
TEST(Bandwidth, ATaskWokenInTheKernelOfAThrottledGroupRunsToUserModeFrom618On) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    kernel::UserWord woke;
    s.spawn(in_group(a, 0), hog);
    const int sleeper = s.spawn(in_group(a, 0), [&woke](user::Thread& t) -> user::Program {
      co_await t.nanosleep(30 * kMs);
      t.store(&woke, 1);
      for (;;) co_await t.compute(1000000000);
    });
    s.k->start();
    s.engine.run_until(25 * kMs);  // throttled since the quota ran out at about 10 ms
    const uint64_t switches = s.task(sleeper).stats.nr_switches_involuntary;
    s.engine.run_until(60 * kMs);
    const kernel::task_struct& p = s.task(sleeper);
    EXPECT_EQ(woke.value, 0) << "no user code before the period ends";
    if (v == kernel::KernelVersion::V6_12) {
      EXPECT_EQ(p.stats.nr_switches_involuntary, switches) << "not on the CPU";
      EXPECT_FALSE(p.throttled);
      EXPECT_TRUE(p.se.on_rq) << "queued in its throttled runqueue";
    } else {
      EXPECT_GT(p.stats.nr_switches_involuntary, switches) << "ran its way out of the kernel";
      EXPECT_TRUE(p.throttled) << "in the limbo list";
      EXPECT_FALSE(p.se.on_rq);
    }
    s.engine.run_until(130 * kMs);
    EXPECT_EQ(woke.value, 1) << "runs after the unthrottle";
    s.k->finish(130 * kMs);
    testing_support::check_invariants(*s.k, 130 * kMs);
  }
}

// A throttled group's queued tasks leave the CPU's runqueue until the period refills the
// quota: 6.12 takes them off with their group entity, 6.18+ into the limbo list.
TEST(Bandwidth, ThrottledTasksStayOffTheRunqueueUntilThePeriod) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    for (int i = 0; i < 3; ++i) s.spawn(in_group(a, 0), hog);
    s.k->start();
    s.engine.run_until(50 * kMs);
    EXPECT_EQ(s.k->cpu_rq(0).nr_running, 0u);
    EXPECT_TRUE(s.k->cpu_rq(0).curr->is_idle);
    s.engine.run_until(105 * kMs);
    EXPECT_EQ(s.k->cpu_rq(0).nr_running, 3u) << "all back at the period";
    s.k->finish(105 * kMs);
    testing_support::check_invariants(*s.k, 105 * kMs);
  }
}

// A nice change dequeues and requeues a queued task. For a task of a throttled group (6.12:
// its runqueue's entity left the levels above, which stopped counting its tasks), neither
// touches the counts above that runqueue or the rq's nr_running (dequeue_entities() ends at
// the throttled runqueue); on 6.18+ the group's tasks stay queued until their return to user
// mode, and the change leaves them so.
TEST(Bandwidth, ANiceChangeOfAThrottledTaskLeavesTheCountsAboveItsGroup) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    int pid = -1;
    for (int i = 0; i < 3; ++i) pid = s.spawn(in_group(a, 0), hog);
    bool changed = false;
    kernel::TaskAttr root;
    root.cpus = {1};
    s.spawn(root, [&](user::Thread& t) -> user::Program {
      co_await t.nanosleep(50 * kMs);
      const unsigned before = s.k->cpu_rq(0).nr_running;
      EXPECT_EQ(co_await t.setpriority(PRIO_PROCESS, pid, 5), 0);
      EXPECT_EQ(s.k->cpu_rq(0).nr_running, before);
      changed = true;
    });
    s.k->start();
    s.engine.run_until(60 * kMs);
    EXPECT_TRUE(changed);
    testing_support::check_invariants(*s.k, 60 * kMs);
    s.engine.run_until(105 * kMs);
    EXPECT_EQ(s.k->cpu_rq(0).nr_running, 3u) << "all back at the period";
    s.k->finish(105 * kMs);
    testing_support::check_invariants(*s.k, 105 * kMs);
  }
}

// 6.12: a task woken into a throttled hierarchy cannot run, and wakeup preemption returns
// before anything else for it (throttled_hierarchy()): with NEXT_BUDDY on it does not become
// its runqueue's buddy. (6.18+ throttles a task only on its way back to user mode, so a
// wakee there is runnable until then; the return is for a task already throttled.) Here a
// root task wakes a sleeper of group /a at 50 ms, while /a's hog has the group throttled
// (10 ms per 100 ms).
TEST(Bandwidth, AWakeeInAThrottledGroupDoesNotBecomeTheBuddyIn612) {
  {
    const auto v = kernel::KernelVersion::V6_12;
    kernel::KernelConfig cfg = testing_support::no_autogroup(kernel::default_config(v));
    ASSERT_EQ(kernel::set_config_key(&cfg, "sched_feat.NEXT_BUDDY", "true"), "");
    Sim s(flat_machine(1), cfg);
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    kernel::UserWord w;
    s.spawn(in_group(a, 0), hog);
    const int sleeper = s.spawn(in_group(a, 0), [&w](user::Thread& t) -> user::Program {
      co_await t.futex_wait(&w, 0);
      for (;;) co_await t.compute(sim::kNsecPerSec);
    });
    bool checked = false;
    s.spawn(in_group(0, 0), [&](user::Thread& t) -> user::Program {
      co_await t.nanosleep(50 * kMs);
      EXPECT_TRUE(s.task(sleeper).se.cfs_rq->throttle_count > 0) << "/a is throttled";
      co_await t.futex_wake(&w, 1);
      EXPECT_EQ(s.task(sleeper).se.cfs_rq->next, nullptr);
      checked = true;
      for (;;) co_await t.compute(sim::kNsecPerSec);
    });
    s.run(60 * kMs);
    EXPECT_TRUE(checked);
    testing_support::check_invariants(*s.k, 60 * kMs);
  }
}

// The balancer never moves a throttled group's tasks (6.12's throttled_lb_pair(); 6.18+ has
// them off the runqueue): the group's three hogs are throttled from about 5 ms on, then two
// hogs pinned to CPU 0 make it the busiest CPU, and CPU 1, idle, pulls none of the group's
// hogs queued there until the period refills the quota.
TEST(Bandwidth, TheBalancerMovesNoThrottledTask) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    std::vector<int> limited;
    for (int i = 0; i < 3; ++i) limited.push_back(s.spawn(in_group(a), hog));
    for (int i = 0; i < 2; ++i) s.spawn(in_group(0, 0), hog, 20 * kMs);
    s.k->start();
    s.engine.run_until(30 * kMs);
    std::vector<int> cpu;
    std::vector<uint64_t> migrations;
    int on_cpu0 = 0;
    for (int pid : limited) {
      cpu.push_back(s.task(pid).cpu);
      migrations.push_back(s.task(pid).stats.nr_migrations);
      on_cpu0 += s.task(pid).cpu == 0;
    }
    EXPECT_GT(on_cpu0, 0);  // something for CPU 1 to pull, were it allowed
    EXPECT_EQ(s.k->cpu_rq(0).nr_running, 2u);
    s.engine.run_until(95 * kMs);
    EXPECT_TRUE(s.k->cpu_rq(1).curr->is_idle);
    for (size_t i = 0; i < limited.size(); ++i) {
      EXPECT_EQ(s.task(limited[i]).cpu, cpu[i]) << "pid " << limited[i];
      EXPECT_EQ(s.task(limited[i]).stats.nr_migrations, migrations[i]) << "pid " << limited[i];
    }
    s.k->finish(95 * kMs);
    testing_support::check_invariants(*s.k, 95 * kMs);
  }
}

// can_migrate_task() refuses to move a task into a hierarchy throttled on the destination
// (throttled_lb_pair(), lb_throttled_hierarchy()): there it would wait for the period. CPU 1
// runs a pinned /a hog, CPU 0 a pinned root hog, and two /a hogs go where fork placement puts
// them; /a's pool runs out on one CPU before the other. Sampled every 20 us, no /a task is
// ever found freshly moved onto a CPU where /a is throttled.
TEST(Bandwidth, NothingIsPulledIntoAGroupThrottledOnTheDestination) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 10000, 100000);
    s.spawn(in_group(a, 1), hog);
    s.spawn(in_group(0, 0), hog);
    std::vector<int> movable;
    for (int i = 0; i < 2; ++i) movable.push_back(s.spawn(in_group(a), hog, 100 * kUs));
    std::vector<int> last_cpu(movable.size(), -1);
    int into_throttled = 0, moves = 0;
    testing_support::Sampler probe(s, 20 * kUs, [&](sim::Time) {
      for (size_t i = 0; i < movable.size(); ++i) {
        const kernel::task_struct& p = s.task(movable[i]);
        if (p.cpu == last_cpu[i]) continue;
        const bool first = last_cpu[i] < 0;
        last_cpu[i] = p.cpu;
        if (first || !p.on_rq) continue;  // (placed at fork; or moved by a wakeup)
        ++moves;
        into_throttled += kernel::task_group_cfs_rq(&p, p.cpu)->throttle_count > 0;
      }
    });
    s.k->start();
    s.engine.run_until(300 * kMs);
    EXPECT_EQ(into_throttled, 0) << moves << " moves";
    s.k->finish(300 * kMs);
    testing_support::check_invariants(*s.k, 300 * kMs);
  }
}

// The scenario key: `cpu.max = "20000 100000"` on the workload's cgroup gives its hog a fifth
// of the CPU beside an unlimited hog, and the results carry cpu.stat's counters.
TEST(Bandwidth, ScenarioCpuMaxLimitsTheCgroupAndReportsCpuStat) {
  scenario::Experiment e;
  ASSERT_EQ(scenario::set_key(&e, "workload", "hog"), "");
  ASSERT_EQ(scenario::set_key(&e, "machine", "small4"), "");
  ASSERT_EQ(scenario::set_key(&e, "cpus", "1"), "");
  ASSERT_EQ(scenario::set_key(&e, "duration", "1s"), "");
  ASSERT_EQ(scenario::set_key(&e, "threads", "1"), "");
  ASSERT_EQ(scenario::set_key(&e, "cgroup", "/limited"), "");
  ASSERT_EQ(scenario::set_key(&e, "cpu.max", "20000 100000"), "");
  ASSERT_EQ(scenario::add_also(&e, "hog:threads=1,cgroup=/free,cpu.max=max 100000"), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  const report::Metric* m = r.metric("hog_cpu_seconds_per_second");  // the main workload's
  ASSERT_NE(m, nullptr);
  EXPECT_NEAR(m->value, 0.2, 0.01);
  ASSERT_NE(r.metric("cgroup/limited.nr_throttled"), nullptr);
  EXPECT_GE(r.metric("cgroup/limited.nr_throttled")->value, 9);
  EXPECT_GT(r.metric("cgroup/limited.throttled_usec")->value, 500000);
  EXPECT_EQ(r.metric("cgroup/free.nr_throttled"), nullptr) << "no quota, no counters";
}

TEST(Bandwidth, BadCpuMaxIsNamed) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "999 100000"),
            "cpu.max: quota must be from 1000 to 17592186044415 us, or max (got '999 100000')");
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "17592186044416 100000"),
            "cpu.max: quota must be from 1000 to 17592186044415 us, or max (got '17592186044416 100000')");
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "max 999"), "cpu.max: period must be from 1000 to 1000000 us (got 'max 999')");
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "50000 1000001"),
            "cpu.max: period must be from 1000 to 1000000 us (got '50000 1000001')");
  EXPECT_NE(scenario::set_key(&e, "cpu.max", "50ms").find("cpu.max: expected \"QUOTA PERIOD\""), std::string::npos);
  EXPECT_NE(scenario::set_key(&e, "cpu.max", "50000  100000").find("cpu.max: expected"), std::string::npos);
  EXPECT_NE(scenario::add_also(&e, "hog:cpu.max=").find("also.hog.cpu.max: expected"), std::string::npos);
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "max"), "");
  EXPECT_EQ(scenario::set_key(&e, "cpu.max", "50000"), "") << "the period defaults to 100000";
  ASSERT_EQ(scenario::set_key(&e, "workload", "hog"), "");
  ASSERT_EQ(scenario::set_key(&e, "machine", "small4"), "");
  EXPECT_EQ(scenario::validate(e), "cpu.max: needs a cgroup (the root cgroup has no cpu.max)");
  scenario::Experiment x;
  ASSERT_EQ(scenario::set_key(&x, "machine", "small4"), "");
  ASSERT_EQ(scenario::add_also(&x, "hog:cpu.max=50000 100000"), "");
  EXPECT_EQ(scenario::validate(x), "also.hog.cpu.max: needs a cgroup (the root cgroup has no cpu.max)");
}

// A scenario file places the workload with top-level keys: cgroup and "cpu.max".
TEST(Bandwidth, AScenarioFileSetsCgroupAndCpuMaxAtTheTopLevel) {
  const char* d = std::getenv("SCHEDLAB_SOURCE_DIR");
  scenario::Experiment e;
  ASSERT_EQ(scenario::load_scenario_file(std::string(d ? d : ".") + "/scenarios/cpu-max-locktable.toml", &e), "");
  EXPECT_EQ(e.cgroup, "/db");
  EXPECT_EQ(e.cpu_max, "200000 100000");
  EXPECT_EQ(scenario::validate(e), "");
}

// init_cfs_bandwidth(): each group's period timer starts at a random offset below 100 ms, so
// that groups' periods interleave; its periods follow on that grid. The offset is drawn from
// the run's seed (same seed, same offsets).
TEST(Bandwidth, EachGroupsPeriodsFollowItsOwnRandomOffset) {
  constexpr sim::Time kPeriod = 100 * kMs;
  auto offsets = [](uint64_t seed, sim::Time* end_a, sim::Time* end_b) {
    kernel::KernelConfig cfg = testing_support::no_autogroup();
    cfg.seed = seed;
    Sim s(flat_machine(2), cfg);
    const int a = s.k->create_task_group("/a");
    const int b = s.k->create_task_group("/b");
    const std::pair<sim::Time, sim::Time> first = {
        s.k->task_group_by_id(a)->cfs_bandwidth.period_expires,
        s.k->task_group_by_id(b)->cfs_bandwidth.period_expires};
    s.k->set_task_group_cpu_max(a, 20000, 100000);
    s.k->set_task_group_cpu_max(b, 20000, 100000);
    s.spawn(in_group(a, 0), hog);
    s.spawn(in_group(b, 1), hog);
    s.run(kSec);
    *end_a = s.k->task_group_by_id(a)->cfs_bandwidth.period_expires;
    *end_b = s.k->task_group_by_id(b)->cfs_bandwidth.period_expires;
    return first;
  };
  sim::Time end_a = 0, end_b = 0;
  const auto [a1, b1] = offsets(1, &end_a, &end_b);
  EXPECT_LT(a1, kPeriod);
  EXPECT_LT(b1, kPeriod);
  EXPECT_NE(a1, b1);
  EXPECT_GT(end_a, kSec);  // still running, on the grid of its offset
  EXPECT_EQ((end_a - a1) % kPeriod, 0);
  EXPECT_EQ((end_b - b1) % kPeriod, 0);
  sim::Time unused = 0;
  EXPECT_EQ(offsets(1, &unused, &unused), std::make_pair(a1, b1));
  EXPECT_NE(offsets(2, &unused, &unused), std::make_pair(a1, b1));
}
