// The lock workloads (extend-sched2, locktable, oltp) through scenario::run on small machines.
// Only directions and sanity are asserted, never figures from the seed threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "hw/machine.h"
#include "kernel/kernel_impl.h"
#include "scenario/experiment.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "workloads/common.h"
#include "workloads/workload.h"

namespace {

// Runs `workload` with the assignments; fails the test on an error.
report::Results run(const std::string& workload, std::initializer_list<std::string> sets) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_assignment(&e, "workload=" + workload), "");
  for (const std::string& s : sets) EXPECT_EQ(scenario::set_assignment(&e, s), "") << s;
  report::Results r;
  EXPECT_EQ(scenario::run(e, &r), "");
  EXPECT_EQ(r.warnings, 0u) << r.first_warning;
  return r;
}

// The error of running with the assignments ("" if it ran).
std::string run_error(const std::string& workload, std::initializer_list<std::string> sets) {
  scenario::Experiment e;
  EXPECT_EQ(scenario::set_assignment(&e, "workload=" + workload), "");
  for (const std::string& s : sets)
    if (std::string err = scenario::set_assignment(&e, s); !err.empty()) return err;
  report::Results r;
  return scenario::run(e, &r);
}

double metric(const report::Results& r, const std::string& name) {
  const report::Metric* m = r.metric(name);
  EXPECT_NE(m, nullptr) << name;
  return m ? m->value : 0;
}

bool has_notice(const report::Results& r, const std::string& prefix) {
  return std::any_of(r.notices.begin(), r.notices.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

bool has_output(const report::Results& r, const std::string& prefix) {
  return std::any_of(r.output.begin(), r.output.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

const report::LatencySummary* latency(const report::Results& r, const std::string& name) {
  for (const auto& l : r.latencies)
    if (l.name == name) return &l;
  return nullptr;
}

TEST(WorkloadExtendSched2, BelowTenCpusUsesOneObjectAndPrintsTheOriginalLines) {
  const report::Results r = run("extend-sched2", {"machine=small4", "threads=4", "duration=300ms"});
  EXPECT_TRUE(has_notice(r, "the original divides by zero below 10 CPUs: using 1 lock object"));
  EXPECT_TRUE(has_output(r, "Ran for "));
  EXPECT_TRUE(has_output(r, "Total wait time: "));
  EXPECT_TRUE(has_output(r, "avg # grants "));
  EXPECT_TRUE(has_output(r, "avg # blocks "));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(has_output(r, "thread " + std::to_string(i) + ": count "));
  EXPECT_FALSE(has_output(r, "thread 4: "));
  EXPECT_FALSE(has_notice(r, "Ran for "));
  EXPECT_GT(metric(r, "runs"), 0);
  EXPECT_GT(metric(r, "runs_per_second"), 0);
  // One object, four threads: each run waits for the others' critical sections.
  EXPECT_GT(metric(r, "total_wait_seconds"), 0);
  EXPECT_DOUBLE_EQ(metric(r, "avg_reqs"), metric(r, "runs") / 4);
  EXPECT_EQ(metric(r, "avg_grants"), 0);  // ext=none asks for nothing
}

// The original divides its printed averages by sysconf(_SC_NPROCESSORS_CONF), the count it
// starts one thread per: with more threads than CPUs the line still divides by the CPUs.
TEST(WorkloadExtendSched2, PrintedAveragesDivideByTheCpuCountAsTheOriginal) {
  const report::Results r = run("extend-sched2", {"machine=small4", "threads=8", "duration=300ms"});
  const uint64_t runs = static_cast<uint64_t>(metric(r, "runs"));
  ASSERT_GT(runs, 8u);
  EXPECT_TRUE(has_output(r, "avg # grants 0 avg reqs " + std::to_string(runs / 4)))
      << "runs " << runs;
  EXPECT_DOUBLE_EQ(metric(r, "avg_reqs"), metric(r, "runs") / 8);  // the metric is per thread
}

// The hand-off share tells where a lock's threads ran: on one CPU every critical section
// begins where the last one ran; two workers alone on two CPUs each keep their own CPU.
TEST(WorkloadExtendSched2, SameCpuHandoffShareTellsWhetherTheWorkersShareACpu) {
  const report::Results one = run("extend-sched2", {"machine=small4", "cpus=1", "threads=2",
                                                     "hogs=0", "locks=1", "duration=200ms"});
  EXPECT_DOUBLE_EQ(metric(one, "same_cpu_handoff_share"), 1.0);
  const report::Results two = run("extend-sched2", {"machine=small4", "cpus=2", "threads=2",
                                                     "hogs=0", "locks=1", "duration=200ms"});
  EXPECT_GT(metric(two, "runs"), 10);
  EXPECT_LT(metric(two, "same_cpu_handoff_share"), 0.1);
}

TEST(WorkloadLockTable, SameCpuHandoffShareIsOneOnOneCpu) {
  const report::Results r = run("locktable", {"machine=small4", "cpus=1", "clients=3", "hogs=0",
                                              "locks=1", "duration=100ms"});
  EXPECT_GT(metric(r, "sql_executions_per_second"), 0);
  EXPECT_DOUBLE_EQ(metric(r, "same_cpu_handoff_share"), 1.0);
}

// The machine's background activity: one pinned thread per CPU, which wakes about `rate`
// times a second and runs run_ns each time (plus its own kernel work: the sleep's syscall and
// the switches); none without the key (every profile but host).
TEST(Background, OneThreadPerCpuRunsRateTimesBurst) {
  scenario::Experiment e;
  for (const char* a : {"workload=hog", "machine=small4", "threads=0", "duration=1s",
                        "machine.background_wakeups_per_s=1000", "machine.background_run_ns=10000"})
    ASSERT_EQ(scenario::set_assignment(&e, a), "") << a;
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  std::set<int> cpus;
  for (const auto& t : r.tasks) {
    if (t.comm != "background") continue;
    cpus.insert(t.cpu);
    EXPECT_EQ(t.nr_migrations, 0u);
    // About 1000 bursts in 1 s (a Poisson count: 3% spread) of 10 us each, plus at most a
    // few us of kernel paths per burst (small4: 1.5 us switches, 100 ns syscall halves). Bursts
    // already due when the last one ends follow it without a sleep (and a wakeup).
    EXPECT_GT(t.run_ns, 9'000'000) << "cpu " << t.cpu;
    EXPECT_LT(t.run_ns, 16'000'000) << "cpu " << t.cpu;
    EXPECT_LE(t.nr_wakeups, 1100u) << "cpu " << t.cpu;
  }
  EXPECT_EQ(cpus, (std::set<int>{0, 1, 2, 3}));
  const report::Results none = run("hog", {"machine=small4", "threads=0", "duration=100ms"});
  for (const auto& t : none.tasks) EXPECT_NE(t.comm, "background");
}

// The background is other programs, in a session of their own: with autogroup its group and
// the scenario's share a CPU half and half, so a background asking for 45% of the CPU gets it
// beside four hogs. In the scenario's own autogroup it would be one task of five there.
TEST(Background, RunsInASessionOfItsOwnSoAutogroupGivesItAGroupOfItsOwn) {
  const report::Results r = run("hog", {"machine=small4", "cpus=1", "threads=4", "duration=2s",
                                        "sched_autogroup_enabled=1", "machine.background_wakeups_per_s=1000",
                                        "machine.background_run_ns=450000"});
  uint64_t background_ns = 0;
  for (const auto& t : r.tasks)
    if (t.comm == "background") background_ns += t.run_ns;
  EXPECT_NEAR(static_cast<double>(background_ns) / 2e9, 0.45, 0.02);
  EXPECT_NEAR(metric(r, "hog_cpu_seconds_per_second"), 0.55, 0.03);
}

// hogs_as: the hog process in the workload's session (its autogroup), in a new session (an
// autogroup of its own) or in the cgroup /schedlab-hogs, as schedlab real --hogs-as starts it.
TEST(Hogs, HogsAsPlacesTheHogProcessInItsSessionOrCgroup) {
  for (auto as : {workloads::HogsAs::kThreads, workloads::HogsAs::kSession, workloads::HogsAs::kCgroup}) {
    sim::Engine engine;
    hw::Machine m;
    ASSERT_TRUE(hw::load_machine("small4", &m).ok());
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
    cfg.sched_autogroup_enabled = true;  // the sessions are groups, as on distribution kernels
    kernel::KernelImpl k(&engine, m, cfg);
    ASSERT_EQ(workloads::spawn_hogs(k, 2, 0, SCHED_NORMAL, 1, as), "");
    const int tgid = k.create_process("workload");
    kernel::TaskAttr attr;
    attr.comm = "worker";
    auto th = std::make_unique<user::Thread>(&k, sim::Rng(1, 0));
    th->start(workloads::hog_program(*th));
    k.create_thread(tgid, attr, std::move(th));
    const kernel::task_group* hogs = nullptr;
    const kernel::task_group* worker = nullptr;
    for (const auto& t : k.tasks()) (t->comm == "hog" ? hogs : worker) = t->sched_task_group;
    ASSERT_NE(hogs, nullptr);
    ASSERT_NE(worker, nullptr);
    EXPECT_EQ(k.session_of(tgid), 0);  // the workload stays in the scenario's session
    if (as == workloads::HogsAs::kThreads) {
      EXPECT_EQ(hogs, worker);
    } else {
      EXPECT_NE(hogs, worker);
      EXPECT_EQ(hogs->path, as == workloads::HogsAs::kSession ? "/autogroup-1" : "/schedlab-hogs");
    }
  }
  EXPECT_EQ(run_error("extend-sched2", {"machine=small4", "hogs=1", "hogs_as=container"}),
            "hogs_as: expected threads, session or cgroup (got 'container')");
}

TEST(IdleStates, ADeepStateWithoutACpuidleDriverAndTwoDriversAreErrors) {
  EXPECT_EQ(run_error("hog", {"machine=vm50", "machine.idle_deep_exit_ns=30000"}),
            "machine.idle_deep_exit_ns: a deep idle state needs a cpuidle driver (cpuidle_menu = "
            "true; got false)");
  EXPECT_EQ(
      run_error("hog", {"machine=small4", "duration=10ms", "machine.idle_deep_exit_ns=30000"}),
      "");  EXPECT_EQ(run_error("hog", {"machine=small4", "machine.cpuidle_haltpoll=true"}),
            "machine.cpuidle_haltpoll: one cpuidle driver at a time (cpuidle_menu is true too)");
  EXPECT_EQ(run_error("hog", {"machine=vm50", "duration=10ms", "machine.cpuidle_haltpoll=true"}), "");
}

TEST(Background, WakeupsWithoutABurstOrOverHalfTheCpuAreErrors) {
  EXPECT_NE(run_error("hog", {"machine=small4", "machine.background_wakeups_per_s=10"})
                .find("background_run_ns: must be > 0"),
            std::string::npos);
  EXPECT_NE(run_error("hog", {"machine=small4", "machine.background_wakeups_per_s=1000",
                              "machine.background_run_ns=600000"})
                .find("more than half of each CPU"),
            std::string::npos);
  EXPECT_EQ(run_error("hog", {"machine=small4", "duration=10ms", "machine.background_wakeups_per_s=1000",
                              "machine.background_run_ns=400000"}),
            "");
}

TEST(WorkloadExtendSched2, TenCpusNeedNoNotice) {
  const report::Results r = run("extend-sched2", {"machine=vm50", "cpus=10", "duration=100ms"});
  EXPECT_FALSE(has_notice(r, "the original divides by zero"));
  EXPECT_TRUE(has_notice(r, "extend-sched2: 10 threads on 1 lock object(s)"));
}

TEST(WorkloadExtendSched2, OversubscribedThreadsAreGrantedExtensions) {
  for (const char* ext : {"ext=rfc", "mode=1"}) {
    const report::Results r = run("extend-sched2", {"machine=small4", "hogs=-1", "slice_ext=rfc",
                                                    ext, "duration=500ms"});
    EXPECT_GT(metric(r, "avg_grants"), 0) << ext;
    EXPECT_GT(metric(r, "ext_grants_per_client"), 0) << ext;
    EXPECT_GT(metric(r, "kernel_granted_per_client"), 0) << ext;
    EXPECT_GT(metric(r, "hog_cpu_seconds_per_second"), 0.5) << ext;
    EXPECT_FALSE(has_notice(r, "the clients use ext=")) << ext;
  }
}

TEST(WorkloadExtendSched2, ModeWinsOverExt) {
  const report::Results r = run("extend-sched2", {"machine=small4", "hogs=-1", "slice_ext=mainline",
                                                  "ext=rfc", "mode=3", "duration=300ms"});
  EXPECT_TRUE(has_notice(r, "extend-sched2: 4 threads on 1 lock object(s), 4 hog(s), mode 3 (mainline)"));
  EXPECT_GT(metric(r, "ext_requests_per_client"), 0);
  EXPECT_FALSE(has_notice(r, "the clients use ext="));
}

TEST(WorkloadExtendSched2, BadParametersAreNamed) {
  EXPECT_NE(run_error("extend-sched2", {"machine=small4", "mode=4"}).find("mode"), std::string::npos);
  EXPECT_NE(run_error("extend-sched2", {"machine=small4", "slice_ext=none", "ext=fast"}).find("ext"),
            std::string::npos);
  EXPECT_NE(run_error("extend-sched2", {"machine=small4", "hogs=-2"}).find("hogs"), std::string::npos);
  EXPECT_NE(run_error("extend-sched2", {"machine=small4", "threads=4", "locks=5"}).find("locks"),
            std::string::npos);
}

// A user protocol on a kernel without the extension: the clients ask, nobody grants.
TEST(WorkloadExtendSched2, KernelWithoutTheExtensionGrantsNothing) {
  const report::Results r = run("extend-sched2", {"machine=small4", "hogs=-1", "ext=rfc",
                                                  "slice_ext=none", "duration=300ms"});
  EXPECT_TRUE(has_notice(r, "the clients use ext=rfc but the kernel carries slice_ext=none"));
  EXPECT_EQ(metric(r, "avg_grants"), 0);
  EXPECT_EQ(metric(r, "kernel_granted_per_client"), 0);
}

// 12 clients and 4 hogs on 8 CPUs (2x oversubscribed), a contended table lock: every design
// preempts lock holders less and completes more executions than no extension, summed over
// seeds so the direction does not hang on one run.
TEST(WorkloadLockTable, ExtensionReducesLockHolderPreemptionAndRaisesThroughput) {
  struct Sum {
    double executions = 0, lhp = 0, grants = 0;
  };
  auto sum = [](const std::string& ext) {
    Sum s;
    for (const char* seed : {"seed=1", "seed=2", "seed=3"}) {
      const report::Results r =
          run("locktable", {"machine=vm50", "cpus=8", "clients=12", "hogs=4", "query=exp:20us",
                            "duration=1s", seed, "slice_ext=" + ext, "ext=" + ext});
      s.executions += metric(r, "sql_executions_per_second");
      s.lhp += metric(r, "lock_holder_preemptions");
      s.grants += metric(r, "ext_grants_per_client");
    }
    return s;
  };
  const Sum none = sum("none");
  EXPECT_GT(none.lhp, 0);
  EXPECT_EQ(none.grants, 0);
  for (const char* ext : {"rfc", "rseq2023", "mainline"}) {
    const Sum s = sum(ext);
    EXPECT_LT(s.lhp, none.lhp) << ext;
    EXPECT_GT(s.executions, none.executions) << ext;
    EXPECT_GT(s.grants, 0) << ext;
  }
}

// How many CPUs run a lock-table client, sampled every ms (mid-period) from 100 to 700 ms of a
// run on 32 of genoa's CPUs (25 clients, 33 hogs, forked at once): its standard deviation over
// its mean.
double clients_running_spread(sim::Time timer_irq_jitter_ns) {
  hw::Machine m;
  EXPECT_TRUE(hw::load_machine("genoa", &m).ok());
  EXPECT_TRUE(hw::restrict_cpus(&m, 32).ok());
  m.costs.timer_irq_jitter_ns = timer_irq_jitter_ns;
  // All threads forked at t=0 from outside the machine: the CPUs start in phase, and only
  // the timers can part them.
  m.costs.clone_ns = 0;
  const workloads::WorkloadInfo* info = workloads::find_workload("locktable");
  std::map<std::string, std::string> p;
  for (const auto& spec : info->params) p[spec.name] = spec.default_value;
  sim::Engine engine;
  kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0);
  cfg.launcher_task = false;
  kernel::KernelImpl k(&engine, m, cfg);
  std::unique_ptr<workloads::Workload> w = info->make();
  EXPECT_EQ(w->setup(k, workloads::Params(p), 1), "");
  k.start();
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int ms = 100; ms < 700; ++ms, ++n) {
    engine.run_until(ms * sim::kNsecPerMsec + 2 * sim::kNsecPerMsec + 1);
    int running = 0;
    for (int c = 0; c < k.nr_cpus(); ++c) running += k.cpu_rq(c).curr->comm == "client";
    sum += running;
    sum2 += running * running;
  }
  const double mean = sum / n;
  return std::sqrt(sum2 / n - mean * mean) / mean;
}

// With exact timers every CPU that alternates a client with a hog switches at the same tick
// and breaks EEVDF's ties the same way, so the clients' turns stay in phase: the number of
// clients running swings from sample to sample (sd/mean 0.40 here; 0.95 when fork placement
// still spread every thread evenly from the start). Jittered timer interrupts (the
// profiles' default) let each CPU drift out of phase, as real ones do (0.13 here;
// docs/slice-extension.md).
TEST(WorkloadLockTable, JitteredTimersKeepTheClientsTurnsOutOfPhase) {
  const double exact = clients_running_spread(0), jittered = clients_running_spread(2000);
  EXPECT_GT(exact, 2 * jittered);
  EXPECT_LT(jittered, 0.3);
}

TEST(WorkloadLockTable, DefaultsScaleTheRfcSetupToTheMachine) {
  // 300 clients and 400 hogs on the 384-CPU genoa; 3 and 4 on 4 CPUs.
  const report::Results g = run("locktable", {"machine=genoa", "duration=2ms"});
  EXPECT_TRUE(has_notice(g, "locktable: 300 clients on 1 lock(s), 400 hog(s), ext=none"));
  const report::Results s = run("locktable", {"machine=small4", "duration=100ms"});
  EXPECT_TRUE(has_notice(s, "locktable: 3 clients on 1 lock(s), 4 hog(s), ext=none"));
  EXPECT_GT(metric(s, "sql_executions_per_second"), 0);
  EXPECT_GT(metric(s, "hog_cpu_seconds_per_second"), 0);
  ASSERT_NE(latency(s, "acquire"), nullptr);
  EXPECT_GT(latency(s, "acquire")->count, 0u);
  const report::Results n = run("locktable", {"machine=small4", "hogs=0", "duration=50ms"});
  EXPECT_TRUE(has_notice(n, "locktable: 3 clients on 1 lock(s), 0 hog(s)"));
  EXPECT_EQ(metric(n, "hog_cpu_seconds_per_second"), 0);
}

// Prateek's alternatives to a new ABI: clients at nice -20 beside hogs at 19, or clients
// under SCHED_BATCH.
TEST(WorkloadLockTable, PrateeksAlternativesAreExpressible) {
  const report::Results r = run("locktable", {"machine=small4", "clients=4", "hogs=4", "nice=-20",
                                              "hog_nice=19", "duration=100ms"});
  const report::Results b = run("locktable", {"machine=small4", "clients=4", "hogs=4",
                                              "policy=batch", "duration=100ms"});
  int clients = 0, hogs = 0, batch = 0;
  for (const auto& t : r.tasks) {
    if (t.comm == "client") clients += t.nice == -20;
    if (t.comm == "hog") hogs += t.nice == 19;
  }
  for (const auto& t : b.tasks) batch += t.comm == "client" && t.policy == "batch";
  EXPECT_EQ(clients, 4);
  EXPECT_EQ(hogs, 4);
  EXPECT_EQ(batch, 4);
  // Nice -20 clients take the CPUs from nice 19 hogs.
  EXPECT_LT(metric(r, "hog_cpu_seconds_per_second"), metric(b, "hog_cpu_seconds_per_second"));
}

TEST(WorkloadLockTable, BadParametersAreNamed) {
  EXPECT_NE(run_error("locktable", {"machine=small4", "hogs=lots"}).find("hogs"), std::string::npos);
  EXPECT_NE(run_error("locktable", {"machine=small4", "policy=deadline"}).find("policy"),
            std::string::npos);
  EXPECT_NE(run_error("locktable", {"machine=small4", "query=exp"}).find("query"), std::string::npos);
  EXPECT_NE(run_error("locktable", {"machine=small4", "clients=2", "locks=3"}).find("locks"),
            std::string::npos);
}

TEST(WorkloadOltp, RunsTransactions) {
  const report::Results r = run("oltp", {"machine=vm50", "cpus=8", "clients=100", "duration=300ms"});
  EXPECT_TRUE(has_notice(r, "oltp: 100 clients, 16 latches, 4 steps, 0 hog(s), ext=none"));
  EXPECT_GT(metric(r, "transactions_per_second"), 0);
  const report::LatencySummary* tx = latency(r, "transaction");
  ASSERT_NE(tx, nullptr);
  EXPECT_GT(tx->count, 0u);
  // A transaction is at least its critical sections.
  EXPECT_GE(tx->min_ns, 4 * 1000);
  ASSERT_NE(latency(r, "acquire"), nullptr);
  EXPECT_GE(latency(r, "acquire")->count, 4 * tx->count);
}

TEST(WorkloadOltp, OversubscribedClientsAreGrantedExtensions) {
  const report::Results none =
      run("oltp", {"machine=vm50", "cpus=8", "clients=200", "hogs=-1", "duration=500ms"});
  const report::Results rfc = run("oltp", {"machine=vm50", "cpus=8", "clients=200", "hogs=-1",
                                           "slice_ext=rfc", "ext=rfc", "duration=500ms"});
  EXPECT_GT(metric(none, "lock_holder_preemptions"), 0);
  EXPECT_GT(metric(rfc, "ext_grants_per_client"), 0);
  EXPECT_LT(metric(rfc, "lock_holder_preemptions"), metric(none, "lock_holder_preemptions"));
}

TEST(WorkloadOltp, BadParametersAreNamed) {
  EXPECT_NE(run_error("oltp", {"machine=small4", "io_prob=1.5"}).find("io_prob"), std::string::npos);
  EXPECT_NE(run_error("oltp", {"machine=small4", "latches=0"}).find("latches"), std::string::npos);
  EXPECT_NE(run_error("oltp", {"machine=small4", "think=soon"}).find("think"), std::string::npos);
}

}  // namespace

TEST(Dist, RoundHalfAwayEqualsLlroundBitForBit) {
  std::vector<double> xs = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.49999999999999994,
                            -0.49999999999999994, 4503599627370495.5, 4503599627370496.0,
                            9007199254740993.0, -9007199254740993.0, 1e18, -1e18};
  for (double h = 0.5; h < 1e15; h = h * 3 + 0.5) {
    xs.push_back(h);
    xs.push_back(std::nextafter(h, 0.0));
    xs.push_back(std::nextafter(h, 1e300));
    xs.push_back(-h);
  }
  sim::Rng rng(9, 9);
  for (int i = 0; i < 100000; ++i) xs.push_back(rng.exponential(1e4) - 100.0);
  for (double x : xs) EXPECT_EQ(workloads::round_half_away(x), std::llround(x)) << x;
}

// The exponential draw computed mostly through log(1 - u) rounds as the log1p() formula it
// replaces, for random draws and for u placed where x is within a few ulps of k + 0.5.
TEST(Dist, RoundExponentialEqualsLog1pFormulaBitForBit) {
  auto slow = [](double mean, double u) { return workloads::round_half_away(-mean * std::log1p(-u)); };
  auto on_grid = [](double u) { return std::floor(u * 0x1p53) * 0x1p-53; };  // as uniform01()
  sim::Rng rng(20, 1);
  for (double mean : {0.0, 1.0, 3.7, 1e3, 5e4, 1e6, 1e9, 1e12}) {
    for (int i = 0; i < 20000; ++i) {
      const double u = rng.uniform01();
      ASSERT_EQ(workloads::round_exponential(mean, u), slow(mean, u)) << mean << " " << u;
    }
    for (double k = 0.5; k < 1e6 && mean > 0; k = k * 1.7 + 1) {  // x near k + 0.5
      const double c = on_grid(-std::expm1(-(std::floor(k) + 0.5) / mean));
      for (int d = -4; d <= 4; ++d) {
        const double u = c + d * 0x1p-53;
        if (u < 0 || u >= 1) continue;
        ASSERT_EQ(workloads::round_exponential(mean, u), slow(mean, u)) << mean << " " << u;
      }
    }
  }
  EXPECT_EQ(workloads::round_exponential(1e6, 0.0), 0);
  EXPECT_EQ(workloads::round_exponential(1e6, 1 - 0x1p-53), slow(1e6, 1 - 0x1p-53));
}

// The table-driven ln(y) of the exponential draw is within 2^-46 of ln(y) relatively (what
// round_exponential()'s fallback margin of 2^-40 relies on), over random grid points, the
// edges of its range and of its table's slices, measured against long double logl().
TEST(Dist, LogBelowOneWithinItsErrorBound) {
  std::vector<double> ys = {0x1p-53, 0x1p-52, 3 * 0x1p-53, 0.25, 0.5, 0.75, 31.0 / 32};
  for (int i = 0; i <= 128; ++i) {  // slice edges of [1, 2) scaled into (0, 31/32]
    for (double scale : {0.5, 0.25, 0x1p-10, 0x1p-52}) {
      const double y = (1.0 + i / 128.0) * scale;
      for (double d : {-0x1p-53, 0.0, 0x1p-53}) {
        const double v = std::floor((y + d * scale * 2) * 0x1p53) * 0x1p-53;
        if (v >= 0x1p-53 && v <= 31.0 / 32) ys.push_back(v);
      }
    }
  }
  for (int k = 1; k < 2000; ++k) ys.push_back(31.0 / 32 - k * 0x1p-53);  // least |ln y|
  sim::Rng rng(46, 1);
  for (int i = 0; i < 400000; ++i) {
    const double u = rng.uniform01();
    if (u >= 0x1p-5) ys.push_back(1.0 - u);
  }
  double worst = 0;
  for (double y : ys) {
    const long double exact = std::log(static_cast<long double>(y));
    const long double rel = std::fabs((workloads::log_below_one(y) - exact) / exact);
    worst = std::max(worst, static_cast<double>(rel));
    ASSERT_LT(rel, 0x1p-46L) << y;
  }
  EXPECT_GT(worst, 0.0);
  // The range's edge, where ln y is least: the cancellation there stays far from the bound.
  EXPECT_EQ(workloads::round_exponential(1e9, 0x1p-5), workloads::round_half_away(-1e9 * std::log1p(-0x1p-5)));
}

namespace {

// hogs_start: the hogs are forked before the workload's threads (the default, as schedlab
// real starts them) or after; pids follow the fork order.
TEST(WorkloadHogs, HogsStartDecidesWhoIsForkedFirst) {
  for (const char* w : {"locktable", "spinlock", "oltp", "extend-sched2", "wakeup-latency"}) {
    const report::Results before = run(w, {"machine=small4", "duration=2ms", "hogs=2"});
    const report::Results after = run(w, {"machine=small4", "duration=2ms", "hogs=2", "hogs_start=after"});
    ASSERT_FALSE(before.tasks.empty()) << w;
    EXPECT_EQ(before.tasks.front().comm, "hog") << w;
    EXPECT_NE(after.tasks.front().comm, "hog") << w;
    EXPECT_EQ(after.tasks.back().comm, "hog") << w;
  }
}

// hog_policy=fifo (lock table): the hogs are FIFO threads at priority 1, like RT clients.
TEST(WorkloadHogs, RtHogsRunAtPriorityOne) {
  const report::Results r = run("locktable", {"machine=small4", "duration=2ms", "hog_policy=fifo"});
  ASSERT_FALSE(r.tasks.empty());
  EXPECT_EQ(r.tasks.front().comm, "hog");
  EXPECT_EQ(r.tasks.front().policy, "fifo");
  EXPECT_EQ(r.tasks.front().rt_priority, 1);
}

}  // namespace

namespace {

const report::TaskResult* task_by_comm(const report::Results& r, const std::string& comm) {
  for (const report::TaskResult& t : r.tasks)
    if (t.comm == comm) return &t;
  return nullptr;
}

int64_t run_ns_of(const report::Results& r, const std::string& comm) {
  int64_t ns = 0;
  for (const report::TaskResult& t : r.tasks)
    if (t.comm == comm) ns += t.run_ns;
  return ns;
}

}  // namespace

// The shell forks the launcher from the CPU it runs on, and wake_up_new_task() leaves it there
// on an idle machine; `random` draws that CPU from the seed, the same for the same seed.
TEST(Launcher, StartsOnTheShellsCpuOrOneDrawnFromTheSeed) {
  const report::Results r = run("locktable", {"machine=small4", "duration=20ms", "launcher_cpu=3"});
  ASSERT_NE(task_by_comm(r, "launcher"), nullptr);
  EXPECT_EQ(task_by_comm(r, "launcher")->cpu, 3);
  std::set<int> seen;
  for (int seed = 1; seed <= 8; ++seed) {
    const std::string s = "seed=" + std::to_string(seed);
    const report::Results a = run("locktable", {"machine=small4", "duration=5ms", "launcher_cpu=random", s});
    const report::Results b = run("locktable", {"machine=small4", "duration=5ms", "launcher_cpu=random", s});
    ASSERT_NE(task_by_comm(a, "launcher"), nullptr);
    EXPECT_EQ(task_by_comm(a, "launcher")->cpu, task_by_comm(b, "launcher")->cpu) << s;
    seen.insert(task_by_comm(a, "launcher")->cpu);
  }
  EXPECT_GE(seen.size(), 2u);
  EXPECT_EQ(run_error("locktable", {"machine=small4", "launcher_cpu=4"}),
            "launcher_cpu: CPU 4 does not exist (the machine has 4)");
  EXPECT_EQ(run_error("locktable", {"machine=small4", "launcher_cpu=first"}),
            "launcher_cpu: must be an integer in 0..8191 or random (got 'first')");
}

// hogs_lead: the hog program ran that long before the clients were forked. Until then only
// the hogs run; the clients' rates are over the rest of the run.
TEST(Locktable, HogsLeadForksTheClientsThatLongAfterTheHogs) {
  const report::Results r = run("locktable", {"machine=small4", "duration=100ms", "clients=4",
                                              "hogs=4", "hogs_lead=60ms", "query=100us", "cs=5us"});
  EXPECT_TRUE(has_notice(r, "locktable: 4 clients on 1 lock(s), 4 hog(s), ext=none, clients started "
                            "60.000 ms after the hogs"));
  // 4 CPUs for the 40 ms after the lead at most, and the hogs had every CPU before it.
  EXPECT_LE(run_ns_of(r, "client"), 4 * 40'000'000);
  EXPECT_GT(run_ns_of(r, "client"), 0);
  EXPECT_GE(run_ns_of(r, "hog"), 4 * 55'000'000);
  // About one execution per 105 us per client while it runs, counted over the 40 ms.
  EXPECT_GT(metric(r, "sql_executions_per_second"), 4000);
  EXPECT_EQ(run_error("locktable", {"machine=small4", "hogs_start=after", "hogs_lead=10ms"}),
            "hogs_lead: needs hogs_start=before (got hogs_start=after)");
  EXPECT_EQ(run_error("locktable", {"machine=small4", "hogs_lead=-1ms"}).rfind("hogs_lead", 0), 0u);
}

// The hogs' rate is over the whole run (they ran during the lead), the clients' over theirs.
TEST(Locktable, HogsLeadKeepsTheHogsRateOverTheWholeRun) {
  const report::Results r = run("locktable", {"machine=small4", "duration=100ms", "clients=4",
                                              "hogs=4", "hogs_lead=60ms", "query=100us", "cs=5us"});
  EXPECT_LE(metric(r, "hog_cpu_seconds_per_second"), 4.0);
  EXPECT_GT(metric(r, "hog_cpu_seconds_per_second"), 2.0);
}
