// mm_cid, 6.4 .. 6.18: a cid belongs to an (mm, CPU) pair, handed out lazily at context
// switch and compacted every 100 ms by task_mm_cid_work(), queued from the tick as task work
// and run on the task's next return to user space. Mirrors kernel/sched/core.c and sched.h
// (v6.12, and v6.17/6.18 with 6.13's recent_cid / mm_cpus_allowed and 6.14's max_nr_cid
// shrink). A simulator serialises events, so the cmpxchg protocol's races do not occur: each
// cmpxchg below is the store it makes when it succeeds; the rule it protects is kept (a
// running thread's cid is never freed while it runs).
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/task_shared.h"

namespace kernel {

namespace {

bool mm_cid_is_unset(uint32_t cid) { return cid == MM_CID_UNSET; }
// mm_cid_is_lazy_put(): the LAZY_PUT bit, and not UNSET (all ones).
bool mm_cid_is_lazy_put(uint32_t cid) { return !mm_cid_is_unset(cid) && (cid & MM_CID_LAZY_PUT); }
bool mm_cid_is_valid(uint32_t cid) { return !(cid & MM_CID_LAZY_PUT); }
uint32_t mm_cid_set_lazy_put(uint32_t cid) { return cid | MM_CID_LAZY_PUT; }
uint32_t mm_cid_clear_lazy_put(uint32_t cid) { return cid & ~MM_CID_LAZY_PUT; }

// 6.13+ has per-CPU recent_cid, the mm's allowed-CPU union and max_nr_cid (6.14: shrunk).
bool has_recent_cid(const KernelImpl* k) { return k->cfg_.version != KernelVersion::V6_12; }

// __mm_cid_put(): the cid's bit goes back to the mm.
void __mm_cid_put(mm_struct* mm, uint32_t cid) { cidmask_clear(mm, cid); }

// mm_cid_snapshot_time(): the slot was used at this rq's clock.
void mm_cid_snapshot_time(rq* rq, mm_struct* mm) { mm->cid.pcpu[rq->cpu].time = rq->clock; }

// mm_cid_put_lazy(): a slot a remote clear or a steal marked lazy-put is released when the
// last task of the mm on this CPU switches out; a valid slot keeps its cid.
void mm_cid_put_lazy(rq* rq, task_struct* t) {
  mm_struct* mm = t->mm;
  mm_cid_pcpu& pcpu = mm->cid.pcpu[rq->cpu];
  const uint32_t cid = pcpu.cid;
  if (!mm_cid_is_lazy_put(cid)) return;
  pcpu.cid = MM_CID_UNSET;
  __mm_cid_put(mm, mm_cid_clear_lazy_put(cid));
}

// mm_cid_put(): exit and execve drop this CPU's slot whatever its state.
void mm_cid_put(rq* rq, mm_struct* mm) {
  mm_cid_pcpu& pcpu = mm->cid.pcpu[rq->cpu];
  const uint32_t cid = pcpu.cid;
  if (mm_cid_is_unset(cid)) return;
  pcpu.cid = MM_CID_UNSET;
  __mm_cid_put(mm, mm_cid_clear_lazy_put(cid));
}

// __mm_cid_try_get(). 6.4 .. 6.12: the lowest free bit. 6.14+: shrink max_nr_cid to
// min(nr_cpus_allowed, mm_users), reuse this CPU's recent cid if below it, else expand
// max_nr_cid one at a time (cids 0, 1, 2, ... for cache locality), else the lowest free bit
// below nr_cpus_allowed. A serialised model never finds the mask momentarily full (the
// kernel's cpu_relax() loop); should it, the lowest free bit of all CPUs is taken.
int __mm_cid_try_get(rq* rq, mm_struct* mm) {
  KernelImpl* k = rq->k;
  mm_mm_cid& c = mm->cid;
  unsigned limit = static_cast<unsigned>(k->nr_cpus());
  if (has_recent_cid(k)) {
    const int allowed = std::min(c.nr_cpus_allowed, c.users);
    if (c.max_nr_cid > allowed) c.max_nr_cid = allowed;
    const uint32_t recent = c.pcpu[rq->cpu].recent_cid;
    if (!mm_cid_is_unset(recent) && static_cast<int>(recent) < c.max_nr_cid &&
        !cidmask_test_and_set(mm, recent))
      return static_cast<int>(recent);
    for (int cid = c.max_nr_cid; cid < c.nr_cpus_allowed && cid < c.users; cid = c.max_nr_cid) {
      c.max_nr_cid = cid + 1;
      if (!cidmask_test_and_set(mm, static_cast<unsigned>(cid))) return cid;
    }
    limit = static_cast<unsigned>(c.nr_cpus_allowed);
  }
  unsigned cid = cidmask_first_zero(mm, limit);
  if (cid >= limit) {
    k->warn_once("mm_cid: no free cid below " + std::to_string(limit) + " for tgid " +
                 std::to_string(mm->tgid));
    cid = cidmask_first_zero(mm, static_cast<unsigned>(k->nr_cpus()));
  }
  cidmask_test_and_set(mm, cid);
  return static_cast<int>(cid);
}

}  // namespace

// mm_cid_get(): this CPU's slot if valid (the common case: no bitmap operation), else a new
// cid (a lazy-put slot is released first).
int mm_cid_get(rq* rq, task_struct* t, mm_struct* mm) {
  mm_mm_cid& c = mm->cid;
  mm_cid_pcpu& pcpu = c.pcpu[rq->cpu];
  t->mm_cid.last_cid_reset = rq->k->jiffies();  // batched v2: mm_cid_get() stamps it
  uint32_t cid = pcpu.cid;
  if (mm_cid_is_valid(cid)) {
    mm_cid_snapshot_time(rq, mm);
    return static_cast<int>(cid);
  }
  if (mm_cid_is_lazy_put(cid)) {
    pcpu.cid = MM_CID_UNSET;
    __mm_cid_put(mm, mm_cid_clear_lazy_put(cid));
  }
  const int got = __mm_cid_try_get(rq, mm);  // __mm_cid_get()
  mm_cid_snapshot_time(rq, mm);
  pcpu.cid = static_cast<uint32_t>(got);
  if (has_recent_cid(rq->k)) pcpu.recent_cid = static_cast<uint32_t>(got);
  mm_cid_note(&c, got);
  return got;
}

// sched_mm_cid_fork() (copy_mm()) with init_sched_mm_cid() (__sched_fork()): the task takes
// part; its cid comes at its first switch-in. A process's first thread, and the clone of a
// second by a single-threaded parent (mm_users == 1), put the first scan 100 ms away.
void lazy_mm_cid_fork(rq* rq, task_struct* t) {
  KernelImpl* k = rq->k;
  mm_struct* mm = t->mm;
  mm_cid_init(k, mm);
  mm_mm_cid& c = mm->cid;
  if (c.users <= 1) c.next_scan = k->jiffies() + mm_cid_scan_delay_jiffies(k);
  c.users++;  // mmget()
  // 6.13+ mm_set_cpus_allowed() (__do_set_cpus_allowed() of a thread that sets its
  // affinity; mm_init_cid() for the first): the union only grows.
  mm_set_cpus_allowed(mm, t);
  t->mm_cid = mm_cid_task{};
  t->mm_cid.active = true;
}

// sched_mm_cid_exit_signals(): inactive, this CPU's slot dropped, no cid; then mmput().
void lazy_mm_cid_exit(rq* rq, task_struct* t) {
  mm_struct* mm = t->mm;
  if (!mm || !t->mm_cid.active) return;
  t->mm_cid.active = false;
  mm_cid_put(rq, mm);
  t->mm_cid.cid = t->mm_cid.last_cid = -1;
  t->mm_cid.pending = 0;
  mm->cid.users--;
}

// switch_mm_cid(): prev's slot time is refreshed and a pending lazy put completes; next
// takes this CPU's cid (or a new one).
void lazy_switch_mm_cid(rq* rq, task_struct* prev, task_struct* next) {
  if (prev->mm_cid.active) {
    mm_cid_snapshot_time(rq, prev->mm);
    mm_cid_put_lazy(rq, prev);
    prev->mm_cid.cid = -1;
  }
  if (next->mm_cid.active) next->mm_cid.cid = next->mm_cid.last_cid = mm_cid_get(rq, next, next->mm);
  if (rq->k->mm_cid_metrics_) mm_cid_note_rt_switch_in(rq, next);
}

void lazy_migrate_from(task_struct* t) { t->mm_cid.migrate_from_cpu = t->cpu; }

// sched_mm_cid_migrate_to(): the cid follows the last task of the mm to leave the source CPU
// if the destination has none; if the destination has one already, the source's is freed
// (compaction on migration), unless the mm has at least as many users as allowed CPUs.
void lazy_migrate_to(rq* dst_rq, task_struct* t) {
  mm_struct* mm = t->mm;
  if (!mm || mm->cid.pcpu.empty()) return;
  KernelImpl* k = dst_rq->k;
  const int src_cpu = t->mm_cid.migrate_from_cpu;
  if (src_cpu == -1) {
    t->mm_cid.last_cid = -1;
    return;
  }
  mm_mm_cid& c = mm->cid;
  mm_cid_pcpu& dst = c.pcpu[dst_rq->cpu];
  const bool recent = has_recent_cid(k);
  const bool dst_cid_is_set =
      !mm_cid_is_unset(dst.cid) || (recent && !mm_cid_is_unset(dst.recent_cid));
  // 6.4 .. 6.12 compare with the task's allowed CPUs, 6.13+ with the mm's union.
  const int allowed = recent ? c.nr_cpus_allowed : t->nr_cpus_allowed;
  if (dst_cid_is_set && c.users >= allowed) return;
  mm_cid_pcpu& src = c.pcpu[src_cpu];
  // __sched_mm_cid_migrate_from_fetch_cid().
  const int last = t->mm_cid.last_cid;
  if (last == -1) return;
  const uint32_t src_cid = src.cid;
  if (!mm_cid_is_valid(src_cid) || static_cast<uint32_t>(last) != src_cid) return;
  const task_struct* src_task = k->cpu_rq(src_cpu).curr;
  if (src_task->mm_cid.active && src_task->mm == mm) {
    t->mm_cid.last_cid = -1;  // another task of the mm uses it there
    return;
  }
  // __sched_mm_cid_migrate_from_try_steal_cid(): valid -> lazy-put -> UNSET (the re-check of
  // the source's current task between the two sees the same task in a serialised model).
  src.cid = MM_CID_UNSET;
  if (recent) src.recent_cid = MM_CID_UNSET;
  if (dst_cid_is_set) {
    __mm_cid_put(mm, src_cid);
    return;
  }
  mm_cid_snapshot_time(dst_rq, mm);
  dst.cid = src_cid;
  if (recent) dst.recent_cid = src_cid;
}

// sched_mm_cid_remote_clear(): a valid slot becomes lazy-put; if no task of the mm runs
// there it is released at once, else that task releases it when it switches out.
static void sched_mm_cid_remote_clear(KernelImpl* k, mm_struct* mm, int cpu) {
  mm_cid_pcpu& pcpu = mm->cid.pcpu[static_cast<size_t>(cpu)];
  const uint32_t cid = pcpu.cid;
  if (!mm_cid_is_valid(cid)) return;
  pcpu.cid = mm_cid_set_lazy_put(cid);
  const task_struct* t = k->cpu_rq(cpu).curr;
  if (t->mm_cid.active && t->mm == mm) return;
  pcpu.cid = MM_CID_UNSET;
  __mm_cid_put(mm, cid);
}

// sched_mm_cid_remote_clear_old(): a slot unused for SCHED_MM_CID_PERIOD_NS (100 ms) of that
// CPU's rq clock is cleared; one whose CPU runs a task of the mm is stamped fresh instead.
void sched_mm_cid_remote_clear_old(KernelImpl* k, mm_struct* mm, int cpu) {
  constexpr uint64_t SCHED_MM_CID_PERIOD_NS = 100ULL * 1000000;
  const rq& rq = k->cpu_rq(cpu);
  const uint64_t rq_clock = rq.clock;
  mm_cid_pcpu& pcpu = mm->cid.pcpu[static_cast<size_t>(cpu)];
  if (rq.curr->mm_cid.active && rq.curr->mm == mm) {
    pcpu.time = rq_clock;
    return;
  }
  if (rq_clock < pcpu.time + SCHED_MM_CID_PERIOD_NS) return;
  sched_mm_cid_remote_clear(k, mm, cpu);
}

// sched_mm_cid_remote_clear_weight(): a valid cid >= the number of cids in use is cleared, so
// the set converges to 0 .. weight-1 as threads allocate again.
void sched_mm_cid_remote_clear_weight(KernelImpl* k, mm_struct* mm, int cpu, int weight) {
  const uint32_t cid = mm->cid.pcpu[static_cast<size_t>(cpu)].cid;
  if (!mm_cid_is_valid(cid) || static_cast<int>(cid) < weight) return;
  sched_mm_cid_remote_clear(k, mm, cpu);
}

uint32_t lazy_task_mm_cid(const rq*, const task_struct* t) { return static_cast<uint32_t>(t->mm_cid.cid); }

namespace {

// task_tick_mm_cid(): queue the compaction on the running task (task_work_add(TWA_RESUME))
// when the mm's scan is due and it is not queued already.
void lazy_tick(rq* rq, task_struct* curr) {
  if (!curr->mm || !curr->mm_cid.active || curr->exited) return;
  if (curr->mm_cid.pending & MM_CID_WORK_QUEUED) return;
  if (rq->k->jiffies() < curr->mm->cid.next_scan) return;  // time_before(now, next_scan)
  curr->mm_cid.pending |= MM_CID_WORK_QUEUED;
}

// task_mm_cid_work(): at most one scan per mm per MM_CID_SCAN_DELAY (the first call only
// sets the date), over every possible CPU, twice: old slots, then cids >= the weight.
void task_mm_cid_work(rq* rq, task_struct* t) {
  KernelImpl* k = rq->k;
  t->mm_cid.pending &= static_cast<uint8_t>(~MM_CID_WORK_QUEUED);
  mm_struct* mm = t->mm;
  if (t->exited || !mm) return;
  mm_mm_cid& c = mm->cid;
  if (!mm_cid_scan_due(k, &c)) return;
  const int n = k->nr_cpus();
  for (int cpu = 0; cpu < n; ++cpu) sched_mm_cid_remote_clear_old(k, mm, cpu);
  const int weight = cidmask_weight(mm);
  for (int cpu = 0; cpu < n; ++cpu) sched_mm_cid_remote_clear_weight(k, mm, cpu, weight);
  mm_cid_charge_scan(rq, mm, n);
  // One call is one whole pass.
  mm_cid_note_pass(k, mm, static_cast<sim::Time>(n) * k->machine_.costs.mm_cid_scan_cpu_ns);
}

// resume_user_mode_work() -> task_work_run().
void lazy_resume_user(rq* rq, task_struct* t) {
  if (t->mm_cid.pending & MM_CID_WORK_QUEUED) task_mm_cid_work(rq, t);
}

}  // namespace

const mm_cid_ops mm_cid_lazy_ops = {"lazy",          lazy_mm_cid_fork,  lazy_mm_cid_exit,
                                    lazy_switch_mm_cid, lazy_migrate_from, lazy_migrate_to,
                                    lazy_tick,       lazy_resume_user,  lazy_task_mm_cid};

}  // namespace kernel
