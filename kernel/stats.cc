// Kernel::snapshot(): copies the kernel's counters out as plain values (kernel/stats.h), the
// one place they are read and summed for the layers above.
#include <utility>

#include "kernel/kernel_impl.h"
#include "kernel/net/nic.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/softirq.h"
#include "kernel/sched/pelt.h"
#include "kernel/slice_ext.h"

namespace kernel {

KernelStats KernelImpl::snapshot() const {
  KernelStats s;
  const slice_ext_ops* ext = slice_ops;
  s.slice_ext_abi = cfg_.slice_ext.abi;
  if (ext->configured) s.slice_ext_design = ext->name;
  s.tasks.reserve(tasks_.size());
  for (const auto& t : tasks_) {
    TaskStats ts;
    ts.pid = t->pid;
    ts.tgid = t->tgid;
    ts.comm = t->comm;
    ts.process = process_name(t->tgid);
    ts.policy = t->policy;
    ts.nice = t->nice;
    ts.rt_priority = t->rt_priority;
    ts.cpu = t->cpu;
    ts.kthread = t->kthread_fn != nullptr;
    const task_stats& st = t->stats;
    ts.run_ns = st.run_ns;
    ts.wait_sum_ns = st.wait_sum_ns;
    ts.wait_max_ns = st.wait_max_ns;
    ts.wait_count = st.wait_count;
    ts.nvcsw = st.nr_switches_voluntary;
    ts.nivcsw = st.nr_switches_involuntary;
    ts.nr_migrations = st.nr_migrations;
    ts.nr_wakeups = st.nr_wakeups;
    ts.nr_syscalls = st.nr_syscalls;
    ts.lock_holder_preemptions = st.nr_lock_holder_preemptions;
    ts.lock_held_preempted_ns = st.lock_held_preempted_ns;
    ts.spin_ns = st.spin_ns;
    ts.softirq_ns = st.softirq_ns;
    ts.softirq_bh_ns = st.softirq_bh_ns;
    const sched_entity& se = t->se;
    ts.sum_exec_runtime = se.sum_exec_runtime;
    ts.vruntime = se.vruntime;
    ts.vlag = se.vlag;
    ts.deadline = se.deadline;
    ts.slice = se.slice;
    ts.load_weight = se.load.weight;
    ts.load_avg = se.avg.load_avg;
    ts.runnable_avg = se.avg.runnable_avg;
    ts.util_avg = se.avg.util_avg;
    ts.util_est = se.avg.util_est & ~UTIL_AVG_UNCHANGED;
    const slice_ext_task& x = t->slice;
    ts.slice_ext = {x.nr_granted, x.nr_denied, x.nr_expired, x.nr_revoked, x.nr_yielded, x.nr_aborted};
    for (int i = 0; i < ext->nr_counters; ++i) {
      const slice_ext_counter& c = ext->counters[i];
      if (c.proc_name) ts.slice_ext_proc.push_back({c.proc_name, c.help, x.*c.member});
    }
    s.tasks.push_back(std::move(ts));
  }
  for (const rq& rq_ : rqs_) {
    const struct rq* rq = &rq_;
    CpuStats cs;
    cs.cpu = rq->cpu;
    cs.busy_ns = rq->ex.busy_ns;
    cs.sys_ns = rq->ex.sys_ns;
    cs.irq_idle_ns = rq->ex.irq_idle_ns;
    cs.nr_switches = rq->nr_switches;
    const SoftirqCpuStats sc = softirq_cpu_stats(*this, rq->cpu);
    cs.nr_wakeup_softirqd = sc.nr_wakeup_softirqd;
    cs.ksoftirqd_pid = sc.ksoftirqd_pid;
    s.cpus.push_back(cs);
  }
  for (int i = 0; i < ext->nr_counters; ++i) {
    const slice_ext_counter& c = ext->counters[i];
    if (!c.metric_name || (c.only_with_rseq_miss && !(cfg_.slice_ext.rseq_miss > 0))) continue;
    uint64_t sum = 0;
    for (const auto& t : tasks_) sum += t->slice.*c.member;
    s.slice_ext_totals.push_back({c.metric_name, c.help, sum});
  }
  s.groups = task_group_stats();
  for (int d = 0; d < netdev_count(*this); ++d) s.netdevs.push_back(netdev_rx_stats(*this, d));
  for (int i = 0; i < udp_sock_count(*this); ++i) s.sockets.push_back(udp_sock_stats(*this, i));
  s.mm_cid = mm_cid_snapshot(*this);
  s.warnings = warnings_;
  return s;
}

}  // namespace kernel
