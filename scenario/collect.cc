// Fill Results from the kernel's counters: what schedstats, /proc/<pid>/sched, /proc/stat
// and debugfs would show of a run (report/results.h).
#include "scenario/collect.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernel/config.h"
#include "kernel/kernel.h"
#include "kernel/sched/pelt.h"
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

}  // namespace

void collect_run(const Experiment& e, const std::string& machine_name,
                 const kernel::KernelConfig& cfg,
                 const std::map<std::string, std::string>& params, const kernel::Kernel& k,
                 uint64_t events, report::Results* out) {
  report::Results& r = *out;
  r = report::Results{};
  r.workload = e.workload;
  r.machine = machine_name;
  r.cpus = k.nr_cpus();
  r.kernel_version = kernel::version_name(cfg.version);
  r.hz = cfg.hz;
  r.preempt = kernel::preempt_name(cfg.preempt);
  r.duration_ns = e.duration_ns;
  r.seed = e.seed;
  r.params = params;
  for (const auto& [key, value] : e.kernel_settings) r.kernel_params[key] = value;
  for (const auto& [key, value] : e.machine_costs) r.machine_costs[key] = value;
  if (cfg.slice_ext.abi != kernel::SliceExtAbi::None)
    r.kernel_params["slice_ext"] = kernel::slice_ext_abi_name(cfg.slice_ext.abi);
  r.events = events;
  for (const auto& t : k.tasks()) {
    report::TaskResult tr;
    tr.pid = t->pid;
    tr.tgid = t->tgid;
    tr.comm = t->comm;
    tr.policy = workloads::policy_name(t->policy);
    tr.nice = t->nice;
    tr.rt_priority = t->rt_priority;
    tr.run_ns = static_cast<int64_t>(t->stats.run_ns);
    tr.wait_sum_ns = static_cast<int64_t>(t->stats.wait_sum_ns);
    tr.wait_max_ns = static_cast<int64_t>(t->stats.wait_max_ns);
    tr.wait_count = t->stats.wait_count;
    tr.nvcsw = t->stats.nr_switches_voluntary;
    tr.nivcsw = t->stats.nr_switches_involuntary;
    tr.nr_migrations = t->stats.nr_migrations;
    tr.nr_wakeups = t->stats.nr_wakeups;
    tr.nr_syscalls = t->stats.nr_syscalls;
    tr.lock_holder_preemptions = t->stats.nr_lock_holder_preemptions;
    tr.lock_holder_preempted_ns = static_cast<int64_t>(t->stats.lock_held_preempted_ns);
    tr.spin_ns = static_cast<int64_t>(t->stats.spin_ns);
    tr.sum_exec_runtime_ns = static_cast<int64_t>(t->se.sum_exec_runtime);
    tr.vruntime = t->se.vruntime;
    tr.vlag = t->se.vlag;
    tr.deadline = t->se.deadline;
    tr.slice_ns = t->se.slice;
    tr.load_weight = t->se.load.weight;
    tr.load_avg = t->se.avg.load_avg;
    tr.runnable_avg = t->se.avg.runnable_avg;
    tr.util_avg = t->se.avg.util_avg;
    tr.util_est = t->se.avg.util_est & ~kernel::UTIL_AVG_UNCHANGED;
    tr.cpu = t->cpu;
    const kernel::slice_ext_task& x = t->slice;
    if (cfg.slice_ext.abi == kernel::SliceExtAbi::Rfc) {
      // The RFC's schedstats, as /proc/<pid>/sched prints them.
      tr.extra["nr_preempt_delay_granted"] = static_cast<int64_t>(x.nr_granted);
      tr.extra["nr_preempt_delay_denied"] = static_cast<int64_t>(x.nr_denied);
    } else if (cfg.slice_ext.abi != kernel::SliceExtAbi::None) {
      tr.extra["slice_ext.granted"] = static_cast<int64_t>(x.nr_granted);
      tr.extra["slice_ext.expired"] = static_cast<int64_t>(x.nr_expired);
      tr.extra["slice_ext.revoked"] = static_cast<int64_t>(x.nr_revoked);
      tr.extra["slice_ext.yielded"] = static_cast<int64_t>(x.nr_yielded);
      tr.extra["slice_ext.aborted"] = static_cast<int64_t>(x.nr_aborted);
      tr.extra["slice_ext.missed"] = static_cast<int64_t>(x.nr_missed);
    }
    r.tasks.push_back(std::move(tr));
  }
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    report::CpuResult cr;
    cr.cpu = c;
    cr.socket = k.machine().topo.socket_of[static_cast<size_t>(c)];
    cr.user_ns = static_cast<int64_t>(rq.ex.busy_ns - rq.ex.sys_ns);
    cr.kernel_ns = static_cast<int64_t>(rq.ex.sys_ns + rq.ex.irq_idle_ns);
    cr.idle_ns = e.duration_ns - static_cast<int64_t>(rq.ex.busy_ns + rq.ex.irq_idle_ns);
    cr.nr_switches = rq.nr_switches;
    r.per_cpu.push_back(cr);
  }
}

void collect_metrics(const Experiment& e, const kernel::KernelConfig& cfg, const kernel::Kernel& k,
                     report::Results* out) {
  report::Results& r = *out;
  add_generic_metrics(&r, e.duration_ns);
  if (cfg.slice_ext.abi != kernel::SliceExtAbi::None) {
    // The kernel's side of the extension, summed over tasks (7.0 sums per-CPU counters the
    // same way in debugfs rseq/stats).
    uint64_t g = 0, d = 0, ex = 0, rv = 0, y = 0, ab = 0, ms = 0;
    for (const auto& t : k.tasks()) {
      g += t->slice.nr_granted, d += t->slice.nr_denied, ex += t->slice.nr_expired;
      rv += t->slice.nr_revoked, y += t->slice.nr_yielded, ab += t->slice.nr_aborted;
      ms += t->slice.nr_missed;
    }
    auto add = [&](const char* n, uint64_t v, const char* help) {
      r.metrics.push_back({n, static_cast<double>(v), "", help});
    };
    add("slice_ext_granted", g, "extensions granted (kernel)");
    if (cfg.slice_ext.abi == kernel::SliceExtAbi::Rfc) add("slice_ext_denied", d, "requests DENIED while granted");
    add("slice_ext_expired", ex, "grants ended by the timer");
    if (cfg.slice_ext.abi == kernel::SliceExtAbi::Mainline) {
      add("slice_ext_revoked", rv, "grants revoked (further reschedule, reschedule)");
      add("slice_ext_yielded", y, "grants ended by rseq_slice_yield()");
      add("slice_ext_aborted", ab, "grants ended by another syscall");
    }
    if (cfg.slice_ext.rseq_miss > 0) add("slice_ext_missed", ms, "hints missed: rseq page not resident");
  }
  r.warnings = k.warnings().count;
  r.first_warning = k.warnings().first;
}

}  // namespace scenario
