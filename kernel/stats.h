// A snapshot of the kernel's counters, as /proc/<pid>/sched, /proc/stat, schedstats and
// debugfs would show them: plain values, copied out of the kernel by Kernel::snapshot().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/config.h"
#include "kernel/net.h"
#include "sim/stats.h"
#include "sim/time.h"

namespace kernel {

// One named counter (a design's /proc or debugfs line); `name` and `help` are static strings.
struct StatCounter {
  const char* name;
  const char* help;
  uint64_t value;
};

// Time slice extension outcomes of one task, whatever the design (each counts its part).
struct SliceExtCounts {
  uint64_t granted = 0, denied = 0, expired = 0, revoked = 0, yielded = 0, aborted = 0;
};

struct TaskStats {
  int pid = 0, tgid = 0;
  std::string comm, process;  // the thread's comm and its process's name
  int policy = 0, nice = 0, rt_priority = 0;
  int cpu = 0;  // last CPU
  bool kthread = false;  // a kernel thread (ksoftirqd/N, ...) rather than a workload's thread
  // schedstats (/proc/<pid>/sched, /proc/<pid>/status)
  uint64_t run_ns = 0;  // time as rq->curr, user + kernel
  uint64_t wait_sum_ns = 0, wait_max_ns = 0, wait_count = 0;
  uint64_t nvcsw = 0, nivcsw = 0, nr_migrations = 0, nr_wakeups = 0, nr_syscalls = 0;
  uint64_t sum_exec_runtime = 0;
  // The simulator's own: lock-holder preemptions of this thread and the time it then spent
  // off-CPU, user time spent spinning on a word, softirq work run on top of it (all, and the
  // part inside its own local_bh_enable()).
  uint64_t lock_holder_preemptions = 0, lock_held_preempted_ns = 0, spin_ns = 0;
  uint64_t softirq_ns = 0, softirq_bh_ns = 0;
  // sched entity
  int64_t vruntime = 0, vlag = 0;
  uint64_t deadline = 0, slice = 0;
  uint64_t load_weight = 0, load_avg = 0, runnable_avg = 0, util_avg = 0, util_est = 0;
  SliceExtCounts slice_ext;
  std::vector<StatCounter> slice_ext_proc;  // the design's per-task /proc/<pid>/sched lines
};

struct CpuStats {
  int cpu = 0;
  uint64_t busy_ns = 0;      // not idle: user + system
  uint64_t sys_ns = 0;       // system part of busy_ns
  uint64_t irq_idle_ns = 0;  // interrupts taken while idle
  uint64_t nr_switches = 0;
  // softirq (kernel/softirq.cc): wakeup_softirqd() calls that woke ksoftirqd/N, its pid (0: none).
  uint64_t nr_wakeup_softirqd = 0;
  int ksoftirqd_pid = 0;
};

// What a task group's tasks and its descendants' ran (cgroup cpu.stat usage_usec).
struct TaskGroupStats {
  int id = 0;
  std::string path;
  uint64_t usage_ns = 0;
  // cpu.max (quota_us -1 = "max") and cpu.stat's bandwidth counters: periods elapsed with the
  // period timer running, periods in which a CPU's runqueue of the group was throttled, and
  // the time its runqueues spent throttled, summed over CPUs.
  int64_t quota_us = -1, period_us = 100000;
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
  // cpu.max.burst, and cpu.stat's nr_bursts and burst_usec: periods that used runtime beyond
  // the quota, and that runtime summed.
  int64_t burst_us = 0;
  uint64_t nr_bursts = 0, burst_ns = 0;
  // The group's settings at the end of the run: tg->shares (1024 = cpu.weight 100), cpu.idle,
  // and cpuset.cpus.effective (the CPUs its tasks may use).
  unsigned long shares = 0;
  int idle = 0;
  std::vector<int> effective_cpus;
};

// Invariant violations the model survived in a run.
struct Warnings {
  uint64_t count = 0;
  std::string first;
};

// What the results show of mm_cid (kernel/sched/mm_cid.cc fills it), so
// they need none of the kernel's structures. `on` is false without mm_cid.sample_ms.
struct mm_cid_process_report {
  int tgid = 0;
  std::string name;
  int threads_max = 0;
  int max_cid = -1;
  sim::Time point_ns = 0;          // time each series point covers
  std::vector<int> series;         // highest mm_cid shown per point (-1: no live thread)
};
struct mm_cid_report {
  bool on = false;
  const char* impl = "";
  sim::Time sample_ns = 0;
  uint64_t samples = 0;
  uint64_t scan_calls = 0, cpus_visited = 0, passes = 0;
  sim::Histogram scan_call_ns, rt_wait_added_ns, pass_ns, pass_gap_ns, user_cid, converge_ns;
  std::vector<mm_cid_process_report> processes;  // those that ever had two threads or more
};
struct KernelStats {
  SliceExtAbi slice_ext_abi = SliceExtAbi::None;  // the design the kernel carries
  const char* slice_ext_design = nullptr;  // its name; null if none
  std::vector<TaskStats> tasks;            // in pid order
  std::vector<CpuStats> cpus;
  // The design's run-wide counters, summed over tasks (7.0 sums per-CPU counters the same way
  // in debugfs rseq/stats), in the design's order.
  std::vector<StatCounter> slice_ext_totals;
  std::vector<TaskGroupStats> groups;  // in creation order (ids 1..)
  std::vector<NetRxStats> netdevs;  // NIC receive queues, in the order they were added
  std::vector<UdpSockStats> sockets;  // UDP sockets, in the order they were added
  mm_cid_report mm_cid;  // with mm_cid.sample_ms > 0 (mm_cid_report::on)
  Warnings warnings;
};

}  // namespace kernel
