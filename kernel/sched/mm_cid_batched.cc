// mm_cid, Gabriele Monaco's "sched: Run task_mm_cid_work in batches to lower latency" (v2,
// 16 Jul 2025, 4 patches) on the 6.18 code (mm_cid_lazy.cc):
//   1/4 prev_sum_exec_runtime for RT and DL: set_next_task_rt() already keeps it here (the
//       model has no deadline tasks), so the tick can tell how long a task ran unpreempted;
//   2/4 the compaction runs from rseq_handle_notify_resume(), i.e. on the return to user
//       space of every task that was switched out (rseq_preempt()), not as task work; the
//       tick keeps long-running tasks covered: after RSEQ_UNPREEMPTED_THRESHOLD (100 ms) on
//       the CPU, a due scan sets TIF_NOTIFY_RESUME, else a cid last reset over 100 ms ago is
//       fetched again;
//   3/4 each call scans one batch of CONFIG_RSEQ_CID_SCAN_BATCH possible CPUs (batch n starts
//       at the n * BATCH-th); mm_cid_scan_batch says which is next; the 100 ms rate limit
//       applies only when a pass starts (batch 0); mm_cid_needs_scan() is true while a pass
//       is in progress or once the next pass is due;
//   4/4 the selftest (a workload, not kernel code).
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/task_shared.h"

namespace kernel {

namespace {

constexpr uint64_t RSEQ_UNPREEMPTED_THRESHOLD = 100ULL * 1000000;  // ns

unsigned batch_size(const KernelImpl* k) {
  const int set = k->cfg_.mm_cid_scan_batch;
  return static_cast<unsigned>(set ? set : std::min(8, k->nr_cpus()));
}

// mm_cid_needs_scan().
bool mm_cid_needs_scan(const KernelImpl* k, const mm_struct* mm) {
  const mm_mm_cid& c = mm->cid;
  const unsigned nposs = static_cast<unsigned>(k->nr_cpus());
  if (c.scan_batch != 0 && c.scan_batch * batch_size(k) < nposs) return true;  // pass in progress
  return k->jiffies() > c.next_scan;  // time_after(jiffies, mm_cid_next_scan)
}

// task_mm_cid_scan(): one batch. The first batch of a pass is rate limited as
// task_mm_cid_work() was; the clear loops cover only the batch's CPUs.
void task_mm_cid_scan(rq* rq, task_struct* t) {
  KernelImpl* k = rq->k;
  mm_struct* mm = t->mm;
  if (t->exited || !mm) return;
  mm_mm_cid& c = mm->cid;
  const unsigned nposs = static_cast<unsigned>(k->nr_cpus());
  const unsigned batch = c.scan_batch;
  if (batch == 0) {
    if (!mm_cid_scan_due(k, &c)) return;
    c.pass_start = k->now();
  }
  const unsigned start = batch * batch_size(k);  // cpumask_nth(batch * BATCH, possible)
  const unsigned end = std::min(start + batch_size(k), nposs);
  c.scan_batch = end >= nposs ? 0 : batch + 1;
  for (unsigned cpu = start; cpu < end; ++cpu)
    sched_mm_cid_remote_clear_old(k, mm, static_cast<int>(cpu));
  const int weight = cidmask_weight(mm);
  for (unsigned cpu = start; cpu < end; ++cpu)
    sched_mm_cid_remote_clear_weight(k, mm, static_cast<int>(cpu), weight);
  mm_cid_charge_scan(rq, mm, static_cast<int>(end - start));
  if (end >= nposs) {
    // The pass ends when this batch's work does (its cost is charged from now on).
    const sim::Time pass =
        k->now() + static_cast<sim::Time>(end - start) * k->machine_.costs.mm_cid_scan_cpu_ns -
        c.pass_start;
    c.stats.nr_passes++;
    c.stats.pass_ns_sum += pass;
    c.stats.pass_ns_max = std::max(c.stats.pass_ns_max, pass);
  }
}

// switch_mm_cid() as in 6.18, plus prepare_task_switch()'s rseq_preempt(prev): prev runs
// rseq_handle_notify_resume() on its next return to user space.
void batched_switch_mm_cid(rq* rq, task_struct* prev, task_struct* next) {
  lazy_switch_mm_cid(rq, prev, next);
  if (prev->mm_cid.active) prev->mm_cid.pending |= MM_CID_NOTIFY_RESUME;
}

// task_tick_mm_cid() of patch 2/4: only for a task on the CPU for over 100 ms.
void batched_tick(rq* rq, task_struct* curr) {
  if (!curr->mm || !curr->mm_cid.active || curr->exited) return;
  const uint64_t ran = curr->se.sum_exec_runtime - curr->se.prev_sum_exec_runtime;
  if (ran <= RSEQ_UNPREEMPTED_THRESHOLD) return;
  KernelImpl* k = rq->k;
  if (mm_cid_needs_scan(k, curr->mm)) {
    curr->mm_cid.pending |= MM_CID_NOTIFY_RESUME;  // rseq_set_notify_resume()
    return;
  }
  if (k->jiffies() > curr->mm_cid.last_cid_reset + mm_cid_scan_delay_jiffies(k)) {
    const int cid = mm_cid_get(rq, curr, curr->mm);
    if (cid != curr->mm_cid.cid) {
      curr->mm_cid.cid = curr->mm_cid.last_cid = cid;
      curr->mm_cid.pending |= MM_CID_NOTIFY_RESUME;
    }
  }
}

// rseq_handle_notify_resume() -> task_mm_cid_scan() when one is needed.
void batched_resume_user(rq* rq, task_struct* t) {
  if (!(t->mm_cid.pending & MM_CID_NOTIFY_RESUME)) return;
  t->mm_cid.pending &= static_cast<uint8_t>(~MM_CID_NOTIFY_RESUME);
  if (t->mm && mm_cid_needs_scan(rq->k, t->mm)) task_mm_cid_scan(rq, t);
}

}  // namespace

const mm_cid_ops mm_cid_batched_ops = {"batched",         lazy_mm_cid_fork,  lazy_mm_cid_exit,
                                       batched_switch_mm_cid, lazy_migrate_from, lazy_migrate_to,
                                       batched_tick,      batched_resume_user, lazy_task_mm_cid};

}  // namespace kernel
