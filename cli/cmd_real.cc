// `schedlab real ... --compare-sim`: the simulator's prediction for a real run, side by side.
#include "cli/cli.h"

#include <algorithm>
#include <fmt/format.h>

#include <sys/utsname.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "hw/machine.h"
#include "real/rt_app.h"
#include "scenario/experiment.h"
#include "workloads/rt_app.h"

namespace cli {

namespace {
const char* const kExt[] = {"none", "rfc", "rseq2023", "mainline"};

std::string rel(double real_v, double sim_v) {
  if (real_v == 0) return sim_v == 0 ? "0%" : "n/a";
  return fmt::format("{:+.1f}%", (sim_v - real_v) / std::fabs(real_v) * 100);
}

// Models the kernel this host runs, where schedlab has its behaviour (else the default, 7.0).
void set_host_kernel_version(scenario::Experiment* e) {
  struct utsname u;
  if (uname(&u) != 0) return;
  const std::string rel(u.release);
  for (const char* v : {"6.12", "6.18", "7.0"})
    if (rel.rfind(v, 0) == 0 && (rel.size() == std::strlen(v) || rel[std::strlen(v)] == '.' ||
                                 rel[std::strlen(v)] == '-'))
      e->kernel_version = v;
}

std::string duration_arg(int64_t ns) {
  return ns % 1000000 == 0 ? fmt::format(" --duration {}ms", ns / 1000000) : fmt::format(" --duration {}ns", ns);
}
}  // namespace

// kernel.sched_autogroup_enabled of this host: the sysctl's value, 0 without the file (a
// kernel built without CONFIG_SCHED_AUTOGROUP).
int host_autogroup_enabled() {
  int v = 0;
  std::ifstream("/proc/sys/kernel/sched_autogroup_enabled") >> v;
  return v != 0;
}

std::string sim_experiment_for(const real::Params& p, const real::RunResult& m, int autogroup_enabled,
                               scenario::Experiment* out, std::vector<std::string>* sets_out) {
  scenario::Experiment e;
  e.machine = "host";
  hw::Machine host;
  if (hw::LoadResult lr = hw::load_machine("host", &host); !lr.ok()) return lr.error;
  if (!p.cpus.empty()) e.cpus = static_cast<int>(p.cpus.size());
  set_host_kernel_version(&e);
  e.duration_ns = p.duration_ns;
  std::vector<std::string> sets;
  sets.push_back("ext=" + std::string(kExt[p.mode & 3]));
  sets.push_back("hogs=" + std::to_string(p.hogs));
  // The hogs where the real run has them: a process of their own in a new session (and
  // cgroup), or threads beside the workload's; and autogroup as this host has it.
  if (p.hogs > 0 && p.hogs_as != real::HogsAs::kThreads)
    sets.push_back("hogs_as=" + std::string(real::hogs_as_name(p.hogs_as)));
  sets.push_back("sched_autogroup_enabled=" + std::to_string(autogroup_enabled));
  if (p.workload == real::Workload::kExtendSched2) {
    e.workload = "extend-sched2";
    sets.push_back("threads=" + std::to_string(p.threads));
    sets.push_back("locks=" + std::to_string(real::resolved_locks(p)));
    // The critical section is a count of loop iterations; the simulated one is a time: the
    // run's own sections (the mean of the sampled holds not preempted), else the count at the
    // loop speed the runner measured before its run (the host profile's cs_loop_3m_ns without
    // either). On a shared guest the loop's speed changes by up to 2x from one second to the
    // next, so the run's own sections are the better measure.
    const double per_iter = m.ns_per_iteration > 0 ? m.ns_per_iteration
                                                   : static_cast<double>(host.cs_loop_3m_ns) / 3e6;
    const double held = m.section_ns();
    const double ns = held > 0 ? held : static_cast<double>(p.cs_iterations) * per_iter;
    // (At least 1 ns: the simulator reads cs=0 as "the machine's default section".)
    sets.push_back("cs=" + std::to_string(std::max<long long>(1, std::llround(ns))) + "ns");
  } else {
    e.workload = "locktable";
    sets.push_back("clients=" + std::to_string(p.clients));
    sets.push_back("locks=" + std::to_string(real::resolved_locks(p)));
    // Query and section were converted to loop iterations at the speed measured before the
    // run; they took what the run's own sections show (the mean of the sampled holds not preempted),
    // both scaled alike.
    const double held = m.section_ns();
    const double scale = held > 0 && p.cs_ns > 0 ? held / static_cast<double>(p.cs_ns) : 1.0;
    const auto scaled = [scale](int64_t ns) { return std::max<long long>(1, std::llround(static_cast<double>(ns) * scale)); };
    sets.push_back("query=" + std::to_string(scaled(p.query_ns)) + "ns");
    sets.push_back("cs=" + std::to_string(scaled(p.cs_ns)) + "ns");
  }
  for (const std::string& s : sets)
    if (std::string err = scenario::set_assignment(&e, s); !err.empty()) return err;
  *out = std::move(e);
  if (sets_out) *sets_out = std::move(sets);
  return "";
}

int compare_real_with_sim(const real::Params& p, const real::RunResult& m) {
  scenario::Experiment e;
  std::vector<std::string> sets;
  if (std::string err = sim_experiment_for(p, m, host_autogroup_enabled(), &e, &sets); !err.empty()) {
    std::fprintf(stderr, "schedlab: error: %s\n", err.c_str());
    return 2;
  }
  report::Results r;
  if (std::string err = scenario::run(e, &r); !err.empty()) {
    std::fprintf(stderr, "schedlab: error: %s\n", err.c_str());
    return 2;
  }
  const double secs = m.elapsed_s > 0 ? m.elapsed_s : static_cast<double>(p.duration_ns) / 1e9;
  struct Row {
    const char* name;
    double real_v;
    const char* sim_metric;
    bool share = false;  // a fraction: compared as a difference, not a ratio
  };
  std::vector<Row> rows;
  if (p.workload == real::Workload::kExtendSched2) {
    rows = {{"runs_per_second", static_cast<double>(m.runs) / secs, "runs_per_second"},
            {"total_wait_seconds", static_cast<double>(m.total_wait_ns) / 1e9, "total_wait_seconds"},
            {"avg_grants", m.avg_grants(), "avg_grants"},
            {"avg_reqs", m.avg_reqs(), "avg_reqs"},
            {"avg_blocks", m.avg_blocks(), "avg_blocks"},
            {"same_cpu_handoff_share", m.same_cpu_handoff_share(), "same_cpu_handoff_share", true}};
  } else {
    rows = {{"sql_executions_per_second", m.executions_per_s(), "sql_executions_per_second"},
            {"same_cpu_handoff_share", m.same_cpu_handoff_share(), "same_cpu_handoff_share", true}};
  }
  std::cout << fmt::format("\nsimulator (machine host: {} CPUs, kernel {}, HZ={}) vs this run:\n",
                           r.cpus, r.kernel_version, r.hz);
  // The same simulation from the command line, to vary or repeat it.
  std::string cmd = "schedlab run " + e.workload + " --machine host";
  if (e.cpus > 0) cmd += " --cpus " + std::to_string(e.cpus);
  if (!e.kernel_version.empty()) cmd += " --kernel " + e.kernel_version;
  for (const std::string& a : sets) cmd += " --set " + a;
  cmd += duration_arg(e.duration_ns);
  std::cout << "  (" << cmd << ")\n";
  if (const double held = m.section_ns(); held > 0) {
    const double planned = p.workload == real::Workload::kExtendSched2
                               ? static_cast<double>(p.cs_iterations) * m.ns_per_iteration
                               : static_cast<double>(p.cs_ns);
    std::cout << fmt::format("  (critical section {:.1f} us in this run, the mean of the sampled holds not preempted; "
                             "{:.1f} us at the loop speed measured before it)\n",
                             held / 1e3, planned / 1e3);
  }
  std::cout << fmt::format("  {:<28} {:>14} {:>14} {:>10}\n", "metric", "real", "simulated", "sim-real");
  for (const Row& row : rows) {
    const report::Metric* sm = r.metric(row.sim_metric);
    const double sv = sm ? sm->value : 0;
    const std::string diff = row.share ? fmt::format("{:+.3f}", sv - row.real_v) : rel(row.real_v, sv);
    std::cout << fmt::format("  {:<28} {:>14.3f} {:>14.3f} {:>10}\n", row.name, row.real_v, sv, diff);
  }
  return 0;
}

int compare_rt_app_with_sim(const std::string& json_path, int64_t duration_s, const real::RtAppRun* m) {
  RunOptions o;
  o.target = json_path;
  o.machine = "host";
  scenario::Experiment e;
  if (std::string err = build_experiment(o, &e); !err.empty()) return fail(err);
  set_host_kernel_version(&e);
  if (duration_s > 0) e.duration_ns = duration_s * 1000000000;
  if (!m) return 0;  // the file runs in the simulator: rt-app may start
  // A file without a duration ran until its threads ended: simulate as long as it ran.
  workloads::RtAppDesc d;
  if (std::string err = workloads::load_rt_app_file(json_path, &d); !err.empty()) return fail(err);
  if (duration_s <= 0 && d.duration_s <= 0) e.duration_ns = std::max<int64_t>(1000000, std::llround(m->elapsed_s * 1000) * 1000000);
  report::Results r;
  if (std::string err = scenario::run(e, &r); !err.empty()) return fail(err);
  std::cout << fmt::format("\nsimulator (machine host: {} CPUs, kernel {}, HZ={}) vs this run:\n", r.cpus,
                           r.kernel_version, r.hz);
  std::cout << "  (schedlab run " << json_path << " --machine host --kernel " << e.kernel_version
            << duration_arg(e.duration_ns) << ")\n";
  std::cout << fmt::format("  {:<16} {:<14} {:>12} {:>12} {:>10}\n", "task", "metric", "real", "simulated", "sim-real");
  for (const real::RtAppTaskSummary& t : m->tasks) {
    const std::string n = "rt_app_" + workloads::rt_app_metric_name(t.task);
    const std::pair<const char*, double> rows[] = {
        {"loops", static_cast<double>(t.loops)}, {"run_mean_us", t.run_mean_us}, {"run_max_us", t.run_max_us},
        {"slack_mean_us", t.slack_mean_us},      {"wu_lat_mean_us", t.wu_lat_mean_us},
        {"wu_lat_max_us", t.wu_lat_max_us}};
    for (const auto& [name, real_v] : rows) {
      const report::Metric* sm = r.metric(n + "_" + name);
      if (!sm) continue;  // e.g. no timer in the task: no slack in the simulation
      std::cout << fmt::format("  {:<16} {:<14} {:>12.1f} {:>12.1f} {:>10}\n", t.task, name, real_v, sm->value,
                               rel(real_v, sm->value));
    }
  }
  return 0;
}

}  // namespace cli
