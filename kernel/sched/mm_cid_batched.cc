// mm_cid, Gabriele Monaco's "sched: Run task_mm_cid_work in batches to lower latency" (v2,
// 16 Jul 2025, 4 patches) on the 6.18 code (mm_cid_lazy.cc):
//   1/4 prev_sum_exec_runtime for RT and DL: set_next_task_rt() already keeps it here (the
//       model has no deadline tasks), so the tick can tell how long a task ran unpreempted;
//   2/4 the compaction runs from __rseq_handle_notify_resume(), i.e. on the return to user
//       space of every task with an rseq area that was switched out (rseq_preempt()), not as
//       task work; the tick keeps long-running tasks covered: after
//       RSEQ_UNPREEMPTED_THRESHOLD (100 ms) on the CPU, a due scan sets TIF_NOTIFY_RESUME,
//       else a cid last reset over 100 ms ago is fetched again;
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

// rseq_set_notify_resume() and rseq_handle_notify_resume() (include/linux/rseq.h, 6.x) act
// only for a task with a registered rseq area (t->rseq): a thread that never registered
// neither gets TIF_NOTIFY_RESUME from rseq nor runs __rseq_handle_notify_resume(), so under
// v2 it never scans.
bool has_rseq(const task_struct* t) { return t->user && t->user->rseq; }

void rseq_set_notify_resume(task_struct* t) {
  if (has_rseq(t)) t->mm_cid.pending |= MM_CID_NOTIFY_RESUME;
}

// mm_cid_needs_scan(): used by the tick only.
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
  // Each batch runs from its own CPU's clock (the event's time plus the kernel work already
  // queued there), so a batch claimed later can start, and end, before one claimed earlier:
  // a pass spans its batches' earliest start to their latest end, and the gap before a batch
  // is from the latest end so far (none when it overlaps a batch still running).
  const sim::Time start_at = std::max(k->now(), rq->ex.kwork_until);
  if (batch == 0) {
    if (!mm_cid_scan_due(k, &c)) return;
    c.pass_start = start_at;
    c.last_batch_end = start_at;
  } else {
    c.pass_start = std::min(c.pass_start, start_at);
    if (mm_cid_metrics* m = k->mm_cid_metrics_.get())
      m->pass_gap_ns.add(std::max<sim::Time>(0, start_at - c.last_batch_end));
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
  // The batch ends when its work does (its cost is charged from start_at on).
  const sim::Time work = static_cast<sim::Time>(end - start) * k->machine_.costs.mm_cid_scan_cpu_ns;
  c.last_batch_end = std::max(c.last_batch_end, start_at + work);
  if (end >= nposs) mm_cid_note_pass(k, mm, c.last_batch_end - c.pass_start);
}

// switch_mm_cid() as in 6.18, plus prepare_task_switch()'s rseq_preempt(prev): prev runs
// rseq_handle_notify_resume() on its next return to user space (if it has an rseq area).
void batched_switch_mm_cid(rq* rq, task_struct* prev, task_struct* next) {
  lazy_switch_mm_cid(rq, prev, next);
  if (prev->mm_cid.active) rseq_set_notify_resume(prev);
}

// task_tick_mm_cid() of patch 2/4: only for a task on the CPU for at least 100 ms, and not
// while TIF_NOTIFY_RESUME is already set (an rseq notification, or task work such as 6.18's
// throttle_cfs_rq_work(), will run on its return to user space anyway).
void batched_tick(rq* rq, task_struct* curr) {
  if (!curr->mm || curr->exited || (curr->mm_cid.pending & MM_CID_NOTIFY_RESUME) ||
      curr->sched_throttle_work)
    return;
  const uint64_t ran = curr->se.sum_exec_runtime - curr->se.prev_sum_exec_runtime;
  if (ran < RSEQ_UNPREEMPTED_THRESHOLD) return;
  KernelImpl* k = rq->k;
  if (mm_cid_needs_scan(k, curr->mm)) {
    rseq_set_notify_resume(curr);  // trigger the compaction
    return;
  }
  if (k->jiffies() > curr->mm_cid.last_cid_reset + mm_cid_scan_delay_jiffies(k)) {
    if (!curr->mm_cid.active) return;
    // mm_cid_snapshot_time() and mm_cid_put_lazy() then mm_cid_get(): mm_cid_get() stamps
    // the slot and releases a lazy-put one itself, to the same effect.
    const int cid = mm_cid_get(rq, curr, curr->mm);
    if (cid != curr->mm_cid.cid) {
      curr->mm_cid.cid = curr->mm_cid.last_cid = cid;
      rseq_set_notify_resume(curr);  // rseq_preempt()
    }
  }
}

// __rseq_handle_notify_resume() -> task_mm_cid_work() on every notification ("The mm_cid
// compaction returns prematurely if scan is not needed"): a pass's first batch is limited
// only by the rate limit (time_before(now, mm_cid_next_scan)), so it starts at jiffies ==
// mm_cid_next_scan; mm_cid_needs_scan() (time_after) is the tick's test alone.
void batched_resume_user(rq* rq, task_struct* t) {
  if (!(t->mm_cid.pending & MM_CID_NOTIFY_RESUME)) return;
  t->mm_cid.pending &= static_cast<uint8_t>(~MM_CID_NOTIFY_RESUME);
  if (t->mm && has_rseq(t)) task_mm_cid_scan(rq, t);  // rseq_handle_notify_resume(): if (current->rseq)
}

}  // namespace

const mm_cid_ops mm_cid_batched_ops = {"batched",         lazy_mm_cid_fork,  lazy_mm_cid_exit,
                                       batched_switch_mm_cid, lazy_migrate_from, lazy_migrate_to,
                                       batched_tick,      batched_resume_user, lazy_task_mm_cid};

}  // namespace kernel
