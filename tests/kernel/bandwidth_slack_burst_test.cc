// cpu.max's two ways of moving runtime between CPUs and periods, pinned against fair.c: a
// runqueue whose last entity leaves gives back all but min_cfs_rq_runtime (1 ms) of its
// runtime, which the slack timer hands to throttled runqueues 5 ms later unless the period
// ends within 7 ms (return_cfs_rq_runtime(), start_cfs_slack_bandwidth(),
// do_sched_cfs_slack_timer()); and cpu.max.burst, which lets the refill keep unused runtime,
// up to quota + burst (__refill_cfs_bandwidth_runtime()), counted in cpu.stat. A runqueue
// given runtime from another CPU is unthrottled on its own, by a call-function IPI
// (unthrottle_cfs_rq_async(), __cfsb_csd_unthrottle()).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel/sched/sched.h"
#include "kernel/trace.h"
#include "report/results.h"
#include "scenario/experiment.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"

using group_support::hog;
using group_support::in_group;
using group_support::kVersions;
using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr sim::Time kSec = sim::kNsecPerSec;

// Runs `ns` of user work, then sleeps for good.
user::Program work_then_sleep(user::Thread& t, sim::Time ns) {
  co_await t.compute(ns);
  for (;;) co_await t.nanosleep(sim::kNsecPerSec);
}

kernel::TaskAttr fifo_on(int cpu) {
  kernel::TaskAttr a;
  a.comm = "rt";
  a.policy = SCHED_FIFO;
  a.rt_priority = 50;
  a.cpus = {cpu};
  return a;
}

// Four CPUs, cpu.max "40000 100000" on /a (slices of 5 ms). On CPUs 0-2 a task of /a draws a
// slice, runs 1 ms, is kept off its CPU by a FIFO task until `rt_until`, then runs 0.5 ms more
// and sleeps: each runqueue empties with 3.5 ms left and gives 2.5 ms back. A hog of /a on
// CPU 3 uses the rest of the quota (25 ms) and is throttled. Returns the hog's pid.
int slack_setup(Sim& s, sim::Time rt_until) {
  const int a = group_support::cpu_max_group(*s.k, "/a", 40000, 100000);
  for (int cpu = 0; cpu < 3; ++cpu) {
    s.spawn(in_group(a, cpu), [](user::Thread& t) { return work_then_sleep(t, 1500000); });
    auto rt = [rt_until](user::Thread& t) { return work_then_sleep(t, rt_until - kMs); };
    s.spawn(fifo_on(cpu), rt, kMs);
  }
  return s.spawn(in_group(a, 3), hog);
}

}  // namespace

// The three returns (7.5 ms, more than a slice) come while the hog is throttled: the slack
// timer, started at the third, hands the pool to the hog 5 ms later, mid-period, where it
// would otherwise wait for the period's refill at 100 ms.
TEST(BandwidthSlack, RuntimeGivenBackReachesAThrottledCpuAfterTheSlackPeriod) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(4), testing_support::no_autogroup(kernel::default_config(v)));
    const int h = slack_setup(s, 35 * kMs);
    s.k->start();
    s.engine.run_until(35 * kMs);
    const uint64_t at35 = s.task(h).se.sum_exec_runtime;
    EXPECT_NEAR(static_cast<double>(at35), 25.0 * kMs, 4.0 * kMs) << "the quota less 3 slices";
    s.engine.run_until(40 * kMs);
    EXPECT_EQ(s.task(h).se.sum_exec_runtime, at35) << "throttled until the slack timer";
    s.engine.run_until(99 * kMs);
    EXPECT_NEAR(static_cast<double>(s.task(h).se.sum_exec_runtime - at35), 7.5 * kMs, 1.5 * kMs);
    s.k->finish(99 * kMs);
    testing_support::check_invariants(*s.k, 99 * kMs);
  }
}

// The same returns 5.5 ms before the period ends: the slack timer is not started (the refill
// is within cfs_bandwidth_slack_period + min_bandwidth_expiration), so the hog waits for the
// period's refill.
TEST(BandwidthSlack, RuntimeGivenBackNearThePeriodsEndWaitsForTheRefill) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(4), testing_support::no_autogroup(kernel::default_config(v)));
    const int h = slack_setup(s, 94 * kMs);
    s.k->start();
    s.engine.run_until(94 * kMs);
    const uint64_t at94 = s.task(h).se.sum_exec_runtime;
    s.engine.run_until(100 * kMs);
    EXPECT_EQ(s.task(h).se.sum_exec_runtime, at94);
    s.engine.run_until(110 * kMs);
    EXPECT_GT(s.task(h).se.sum_exec_runtime, at94 + 5 * kMs) << "the refill unthrottles it";
    s.k->finish(110 * kMs);
    testing_support::check_invariants(*s.k, 110 * kMs);
  }
}

namespace {

// One CPU, cpu.max "20000 100000" with cpu.max.burst `burst_us` on /a: its task sleeps until
// 150 ms, then runs without end. Returns its run time in [150, 200) and [200, 300) ms.
std::pair<uint64_t, uint64_t> burst_run(kernel::KernelVersion v, int64_t burst_us,
                                        kernel::TaskGroupStats* g) {
  Sim s(flat_machine(1), testing_support::no_autogroup(kernel::default_config(v)));
  const int a = group_support::cpu_max_group(*s.k, "/a", 20000, 100000);
  s.k->set_task_group_cpu_max_burst(a, burst_us);
  const int t = s.spawn(in_group(a, 0), hog, 150 * kMs);
  s.k->start();
  s.engine.run_until(200 * kMs);
  const uint64_t first = s.task(t).se.sum_exec_runtime;
  s.engine.run_until(300 * kMs);
  const uint64_t second = s.task(t).se.sum_exec_runtime - first;
  s.k->finish(300 * kMs);
  testing_support::check_invariants(*s.k, 300 * kMs);
  *g = s.k->task_group_stats()[0];
  return {first, second};
}

}  // namespace

// After idle periods the pool holds quota + burst: the task runs 40 ms in its first period,
// then 20 ms a period. cpu.stat counts the period that used the 20 ms beyond its quota.
// Without a burst the pool never holds more than the quota.
TEST(BandwidthBurst, AnIdleGroupMayRunItsBurstBeyondTheQuota) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    kernel::TaskGroupStats g;
    const auto [first, second] = burst_run(v, 20000, &g);
    EXPECT_NEAR(static_cast<double>(first), 40.0 * kMs, 4.0 * kMs);
    EXPECT_NEAR(static_cast<double>(second), 20.0 * kMs, 4.0 * kMs);
    EXPECT_EQ(g.burst_us, 20000);
    EXPECT_EQ(g.nr_bursts, 1u);
    EXPECT_NEAR(static_cast<double>(g.burst_ns), 20.0 * kMs, 4.0 * kMs);
    const auto [first0, second0] = burst_run(v, 0, &g);
    EXPECT_NEAR(static_cast<double>(first0), 20.0 * kMs, 4.0 * kMs);
    EXPECT_NEAR(static_cast<double>(second0), 20.0 * kMs, 4.0 * kMs);
    EXPECT_EQ(g.nr_bursts, 0u);
    EXPECT_EQ(g.burst_ns, 0u);
  }
}

// The scenario key, its metrics, and the writes the kernel refuses: a burst above the quota,
// in either order of the writes, and a burst without a cgroup.
TEST(BandwidthBurst, ScenarioCpuMaxBurstIsReportedAndChecked) {
  scenario::Experiment e;
  ASSERT_EQ(scenario::set_key(&e, "workload", "hog"), "");
  ASSERT_EQ(scenario::set_key(&e, "machine", "small4"), "");
  ASSERT_EQ(scenario::set_key(&e, "cpus", "1"), "");
  ASSERT_EQ(scenario::set_key(&e, "duration", "500ms"), "");
  ASSERT_EQ(scenario::set_key(&e, "threads", "1"), "");
  ASSERT_EQ(scenario::set_key(&e, "cgroup", "/a"), "");
  ASSERT_EQ(scenario::set_key(&e, "cpu.max", "20000 100000"), "");
  EXPECT_EQ(scenario::set_key(&e, "cpu.max.burst", "-1"),
            "cpu.max.burst: must be an integer from 0 to 17592186044415 (microseconds; got '-1')");
  ASSERT_EQ(scenario::set_key(&e, "cpu.max.burst", "30000"), "");
  EXPECT_EQ(scenario::validate(e),
            "cpu.max.burst: must not exceed cgroup /a's cpu.max quota (20000 us; got 30000)");
  ASSERT_EQ(scenario::set_key(&e, "cpu.max.burst", "20000"), "");
  ASSERT_EQ(scenario::validate(e), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  ASSERT_NE(r.metric("cgroup/a.nr_bursts"), nullptr);
  EXPECT_EQ(r.metric("cgroup/a.nr_bursts")->value, 1);  // the pool starts at quota + burst
  EXPECT_EQ(r.metric("cgroup/a.burst_usec")->value, 20000);

  scenario::Experiment x = e;  // an `also` in the same cgroup lowers the quota below the burst
  ASSERT_EQ(scenario::add_also(&x, "hog:threads=1,cgroup=/a,cpu.max=10000 100000"), "");
  EXPECT_EQ(scenario::validate(x),
            "also.hog.cpu.max: the quota (10000 us) is below cgroup /a's cpu.max.burst (20000 us)");

  scenario::Experiment root;
  ASSERT_EQ(scenario::set_key(&root, "machine", "small4"), "");
  ASSERT_EQ(scenario::set_key(&root, "cpu.max.burst", "1000"), "");
  EXPECT_EQ(scenario::validate(root),
            "cpu.max.burst: needs a cgroup (the root cgroup has no such file)");
}

namespace {

// The call-function interrupts taken on one CPU (their times).
struct CallFunctionIrqs : kernel::TraceSink {
  explicit CallFunctionIrqs(int cpu) : cpu(cpu) {}
  void record(const kernel::TraceRecord& r) override {
    if (r.type == kernel::TraceEvent::irq_handler_entry && r.cpu == cpu &&
        r.irq == kernel::kIrqCallFunction)
      at.push_back(r.ts);
  }
  int cpu;
  std::vector<sim::Time> at;
};

}  // namespace

// cpu.max "20000 100000" with a hog on each of two CPUs: both runqueues are throttled when the
// period ends at 200 ms. The period timer runs on CPU 0 (where the quota was written), idle,
// so at 200 ms + its idle exit; it unthrottles CPU 0's runqueue there, and CPU 1's by a
// call-function IPI, which reaches idle CPU 1 one IPI latency and one idle exit later.
TEST(Bandwidth, ARemoteRunqueueIsUnthrottledOnItsOwnCpuByAnIpi) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(testing_support::exact_timers(flat_machine(2)),
          testing_support::no_autogroup(kernel::default_config(v)));
    const hw::Costs& c = s.k->machine().costs;
    const int a = group_support::cpu_max_group(*s.k, "/a", 20000, 100000);
    s.spawn(in_group(a, 0), hog);
    s.spawn(in_group(a, 1), hog);
    CallFunctionIrqs irqs(1);
    s.k->set_trace_sink(&irqs);
    const kernel::task_group* tg = s.k->task_group_by_id(a);
    const sim::Time local = 200 * kMs + c.idle_exit_ns;
    const sim::Time remote = local + c.ipi_latency_ns + c.idle_exit_ns;
    bool before[2] = {}, after[2] = {}, done[2] = {};
    auto throttled = [tg](bool* out) {
      for (int cpu = 0; cpu < 2; ++cpu) out[cpu] = tg->cfs_rq[static_cast<size_t>(cpu)]->throttled;
    };
    testing_support::Sampler probe_before(s, kSec, [&](sim::Time) { throttled(before); },
                                          200 * kMs - 1);
    testing_support::Sampler probe_between(s, kSec, [&](sim::Time) { throttled(after); },
                                           remote - 1);
    testing_support::Sampler probe_after(s, kSec, [&](sim::Time) { throttled(done); }, remote + 1);
    s.run(300 * kMs);
    EXPECT_TRUE(before[0] && before[1]);  // the set-up: both wait for the period
    EXPECT_FALSE(after[0]);  // this CPU's, at once
    EXPECT_TRUE(after[1]);   // the other's, when its IPI comes
    EXPECT_FALSE(done[1]);
    ASSERT_FALSE(irqs.at.empty());
    bool at_remote = false;
    for (sim::Time t : irqs.at) at_remote |= t == remote;
    EXPECT_TRUE(at_remote);
    testing_support::check_invariants(*s.k, 300 * kMs);
  }
}
