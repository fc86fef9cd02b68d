// Fill Results from the kernel's counters: what schedstats, /proc/<pid>/sched, /proc/stat
// and debugfs would show of a run (report/results.h).
#include "scenario/collect.h"

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <utility>

#include "kernel/config.h"
#include "kernel/stats.h"
#include "workloads/common.h"

namespace scenario {

namespace {

// Metrics every run has, so that any comparison can ask for them: how long each group of
// threads (by comm) waited on runqueues, and where CPU time went.
void add_generic_metrics(report::Results* r, int64_t duration_ns) {
  std::map<std::string, std::pair<int64_t, uint64_t>> wait;  // comm -> (sum, count)
  std::map<std::string, int64_t> wait_max;
  for (const report::TaskResult& t : r->tasks) {
    auto& w = wait[t.comm];
    w.first += t.wait_sum_ns;
    w.second += t.wait_count;
    wait_max[t.comm] = std::max(wait_max[t.comm], t.wait_max_ns);
  }
  for (const auto& [comm, w] : wait) {
    r->metrics.push_back({comm + ".wait_mean_us", w.second ? static_cast<double>(w.first) / w.second / 1e3 : 0,
                          "us", "mean runqueue wait of the " + comm + " threads"});
    r->metrics.push_back({comm + ".wait_max_us", static_cast<double>(wait_max[comm]) / 1e3, "us",
                          "longest runqueue wait of a " + comm + " thread"});
  }
  int64_t user = 0, kern = 0, all = 0;
  for (const report::CpuResult& c : r->per_cpu) {
    user += c.user_ns;
    kern += c.kernel_ns;
    all += duration_ns;
  }
  if (all > 0) {
    r->metrics.push_back({"cpu_user_share", static_cast<double>(user) / all, "of CPU time", "user mode"});
    r->metrics.push_back({"cpu_kernel_share", static_cast<double>(kern) / all, "of CPU time",
                          "kernel: entry/exit, interrupts, switches, scheduler"});
  }
}

report::LatencySummary summary(const std::string& name, const sim::Histogram& h) {
  report::LatencySummary l;
  l.name = name;
  l.count = h.summary().count;
  if (l.count == 0) return l;
  l.min_ns = h.summary().min;
  l.p50_ns = h.percentile(0.50);
  l.p99_ns = h.percentile(0.99);
  l.p999_ns = h.percentile(0.999);
  l.max_ns = h.summary().max;
  l.mean_ns = h.summary().mean();
  return l;
}

// mm_cid (with mm_cid.sample_ms): the scan's latencies, what user space saw of the IDs, and
// each multi-threaded process's highest ID over time, from the kernel's mm_cid_snapshot().
void add_mm_cid_results(const kernel::mm_cid_report& m, report::Results* r) {
  if (!m.on) return;
  r->latencies.push_back(summary("mm_cid.scan_call", m.scan_call_ns));
  r->latencies.push_back(summary("mm_cid.rt_wait_added", m.rt_wait_added_ns));
  r->latencies.push_back(summary("mm_cid.pass", m.pass_ns));
  r->latencies.push_back(summary("mm_cid.pass_gap", m.pass_gap_ns));
  r->latencies.push_back(summary("mm_cid.converge", m.converge_ns));
  const auto us = [](int64_t ns) { return static_cast<double>(ns) / 1e3; };
  r->metrics.push_back({"mm_cid.scan_calls", static_cast<double>(m.scan_calls), "",
                        "scan calls that visited CPUs (lazy: whole passes; batched: batches)"});
  r->metrics.push_back({"mm_cid.passes", static_cast<double>(m.passes), "",
                        "full passes over every possible CPU completed"});
  r->metrics.push_back({"mm_cid.cpus_visited", static_cast<double>(m.cpus_visited), "",
                        "possible CPUs the scan visited, all calls"});
  r->metrics.push_back({"mm_cid.scan_call_max_us", us(m.scan_call_ns.summary().count ? m.scan_call_ns.summary().max : 0), "us",
                        "longest scan call: the delay it added to the return to user space of the task it ran in"});
  r->metrics.push_back({"mm_cid.rt_wait_added_max_us",
                        us(m.rt_wait_added_ns.summary().count ? m.rt_wait_added_ns.summary().max : 0), "us",
                        "most a scan added to one RT task's wait for its CPU"});
  r->metrics.push_back({"mm_cid.pass_max_ms",
                        static_cast<double>(m.pass_ns.summary().count ? m.pass_ns.summary().max : 0) / 1e6,
                        "ms", "longest full pass, its batches' earliest start to latest end"});
  const sim::Histogram& u = m.user_cid;
  const bool any = u.summary().count > 0;
  r->metrics.push_back({"mm_cid.user_samples", static_cast<double>(u.summary().count), "",
                        "running threads sampled (every mm_cid.sample_ms, each CPU)"});
  r->metrics.push_back({"mm_cid.user_p50", any ? static_cast<double>(u.percentile(0.5)) : -1, "",
                        "median mm_cid a running thread's rseq area showed"});
  r->metrics.push_back({"mm_cid.user_p99", any ? static_cast<double>(u.percentile(0.99)) : -1, "",
                        "99th percentile of the mm_cid running threads showed"});
  r->metrics.push_back({"mm_cid.user_max", any ? static_cast<double>(u.summary().max) : -1, "",
                        "highest mm_cid a running thread showed"});
  // The first 8 multi-threaded processes; one metric per process name (the highest of them).
  std::map<std::string, int> max_by_name;
  int listed = 0;
  for (const kernel::mm_cid_process_report& p : m.processes) {
    auto [it, fresh] = max_by_name.emplace(p.name, p.max_cid);
    if (!fresh) it->second = std::max(it->second, p.max_cid);
    if (listed++ == 8) r->notices.push_back("mm_cid: more processes not listed");
    if (listed > 8) continue;
    size_t n = p.series.size();  // points after the process's last thread exited: not listed
    while (n > 0 && p.series[n - 1] < 0) --n;
    std::string series;
    for (size_t i = 0; i < n; ++i) series += (i ? " " : "") + std::to_string(p.series[i]);
    if (n < p.series.size()) series += " (then no threads)";
    char every[32];
    std::snprintf(every, sizeof every, "%g ms", static_cast<double>(p.point_ns) / 1e6);
    r->notices.push_back("mm_cid: " + p.name + " (tgid " + std::to_string(p.tgid) + ", up to " +
                         std::to_string(p.threads_max) + " threads): highest mm_cid shown, per " +
                         every + ": " + series);
  }
  for (const auto& [name, max_cid] : max_by_name)
    r->metrics.push_back({name + ".mm_cid_max", static_cast<double>(max_cid), "",
                          "highest mm_cid a live thread of a " + name + " process showed at a sample"});
}

}  // namespace

void collect_run(const Experiment& e, const std::string& machine_name,
                 const kernel::KernelConfig& cfg, const std::map<std::string, std::string>& params,
                 const hw::Machine& m, const kernel::KernelStats& ks, uint64_t events,
                 report::Results* out) {
  report::Results& r = *out;
  r = report::Results{};
  r.workload = e.workload;
  r.machine = machine_name;
  r.cpus = m.topo.nr_cpus;
  r.kernel_version = kernel::version_name(cfg.version);
  r.hz = cfg.hz;
  r.preempt = kernel::preempt_name(cfg.preempt);
  r.duration_ns = e.duration_ns;
  r.seed = e.seed;
  r.params = params;
  for (const auto& [key, value] : e.kernel_settings) r.kernel_params[key] = value;
  for (const auto& [key, value] : e.machine_costs) r.machine_costs[key] = value;
  if (ks.slice_ext_design) r.kernel_params["slice_ext"] = ks.slice_ext_design;
  r.events = events;
  for (const kernel::TaskStats& t : ks.tasks) {
    report::TaskResult tr;
    tr.pid = t.pid;
    tr.tgid = t.tgid;
    tr.comm = t.comm;
    tr.policy = workloads::policy_name(t.policy);
    tr.nice = t.nice;
    tr.rt_priority = t.rt_priority;
    tr.run_ns = static_cast<int64_t>(t.run_ns);
    tr.wait_sum_ns = static_cast<int64_t>(t.wait_sum_ns);
    tr.wait_max_ns = static_cast<int64_t>(t.wait_max_ns);
    tr.wait_count = t.wait_count;
    tr.nvcsw = t.nvcsw;
    tr.nivcsw = t.nivcsw;
    tr.nr_migrations = t.nr_migrations;
    tr.nr_wakeups = t.nr_wakeups;
    tr.nr_syscalls = t.nr_syscalls;
    tr.lock_holder_preemptions = t.lock_holder_preemptions;
    tr.lock_holder_preempted_ns = static_cast<int64_t>(t.lock_held_preempted_ns);
    tr.spin_ns = static_cast<int64_t>(t.spin_ns);
    tr.sum_exec_runtime_ns = static_cast<int64_t>(t.sum_exec_runtime);
    tr.vruntime = t.vruntime;
    tr.vlag = t.vlag;
    tr.deadline = t.deadline;
    tr.slice_ns = t.slice;
    tr.load_weight = t.load_weight;
    tr.load_avg = t.load_avg;
    tr.runnable_avg = t.runnable_avg;
    tr.util_avg = t.util_avg;
    tr.util_est = t.util_est;
    tr.cpu = t.cpu;
    // The design's per-task counters, as /proc/<pid>/sched prints them.
    for (const kernel::StatCounter& c : t.slice_ext_proc) tr.extra[c.name] = static_cast<int64_t>(c.value);
    r.tasks.push_back(std::move(tr));
  }
  for (const kernel::CpuStats& c : ks.cpus) {
    report::CpuResult cr;
    cr.cpu = c.cpu;
    cr.socket = m.topo.socket_of[static_cast<size_t>(c.cpu)];
    cr.user_ns = static_cast<int64_t>(c.busy_ns - c.sys_ns);
    cr.kernel_ns = static_cast<int64_t>(c.sys_ns + c.irq_idle_ns);
    cr.idle_ns = e.duration_ns - static_cast<int64_t>(c.busy_ns + c.irq_idle_ns);
    cr.nr_switches = c.nr_switches;
    r.per_cpu.push_back(cr);
  }
}

// cpu.stat's bandwidth counters of each cgroup with a cpu.max quota, as metrics named
// cgroup<path>.nr_periods, .nr_throttled and .throttled_usec, and with a cpu.max.burst,
// .nr_bursts and .burst_usec.
static void add_cpu_max_metrics(const kernel::KernelStats& ks, report::Results* r) {
  for (const kernel::TaskGroupStats& g : ks.groups) {
    if (g.quota_us < 0) continue;
    const std::string n = "cgroup" + g.path;
    const std::string lim = " (cpu.max " + std::to_string(g.quota_us) + " " + std::to_string(g.period_us) + ")";
    r->metrics.push_back({n + ".nr_periods", static_cast<double>(g.nr_periods), "",
                          "cpu.stat nr_periods: periods elapsed with the group active" + lim});
    r->metrics.push_back({n + ".nr_throttled", static_cast<double>(g.nr_throttled), "",
                          "cpu.stat nr_throttled: periods in which a CPU's runqueue was throttled"});
    r->metrics.push_back({n + ".throttled_usec", static_cast<double>(g.throttled_ns / 1000), "us",
                          "cpu.stat throttled_usec: throttled time summed over CPUs"});
    if (g.burst_us <= 0) continue;
    r->metrics.push_back({n + ".nr_bursts", static_cast<double>(g.nr_bursts), "",
                          "cpu.stat nr_bursts: periods that used runtime beyond the quota "
                          "(cpu.max.burst " + std::to_string(g.burst_us) + ")"});
    r->metrics.push_back({n + ".burst_usec", static_cast<double>(g.burst_ns / 1000), "us",
                          "cpu.stat burst_usec: runtime used beyond the quota, summed"});
  }
}

// sched_weight_to_cgroup(): tg->shares (1024 = 100) as cpu.weight reads it, rounded to the
// nearest and clamped to CGROUP_WEIGHT_MIN..CGROUP_WEIGHT_MAX.
static int cgroup_weight(unsigned long shares) {
  return static_cast<int>(std::clamp<unsigned long>((shares * 100 + 512) / 1024, 1, 10000));
}

// A sorted CPU list in the kernel's cpulist form ("0-3,8").
static std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return out;
}

static void collect_groups(const Experiment& e, const kernel::KernelStats& ks, report::Results* out) {
  const double machine_ns = static_cast<double>(e.duration_ns) * static_cast<double>(ks.cpus.size());
  for (const kernel::TaskGroupStats& g : ks.groups) {
    report::GroupResult gr;
    gr.path = g.path;
    gr.usage_ns = static_cast<int64_t>(g.usage_ns);
    gr.share = machine_ns > 0 ? static_cast<double>(g.usage_ns) / machine_ns : 0;
    gr.cpu_weight = cgroup_weight(g.shares);
    gr.idle = g.idle;
    gr.cpus = cpu_list(g.effective_cpus);
    out->groups.push_back(std::move(gr));
  }
}

void collect_metrics(const Experiment& e, const kernel::KernelStats& ks, report::Results* out) {
  report::Results& r = *out;
  add_generic_metrics(&r, e.duration_ns);
  for (const kernel::StatCounter& c : ks.slice_ext_totals)
    r.metrics.push_back({c.name, static_cast<double>(c.value), "", c.help});
  add_mm_cid_results(ks.mm_cid, &r);
  add_cpu_max_metrics(ks, &r);
  collect_groups(e, ks, &r);
  r.warnings = ks.warnings.count;
  r.first_warning = ks.warnings.first;
}

}  // namespace scenario
