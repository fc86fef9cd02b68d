// mm_cid, 6.19 (Thomas Gleixner's rewrite, 653fda7ae73d and companions): a cid is owned
// either by a task, from its first switch-in to its exit (per-task mode), or by a CPU while
// the mm has more threads than its cid space allows (per-CPU mode: tasks borrow the CPU's
// cid while they run). Bounds are recomputed only at fork and exit (mm_update_max_cids());
// compaction is convergence at switch-in (mm_cid_converge()), with no periodic scan and no
// task work. Mirrors kernel/sched/sched.h (mm_cid_schedin(), mm_cid_from_task(),
// mm_cid_from_cpu(), mm_get_cid()) and core.c (sched_mm_cid_fork(), sched_mm_cid_exit(),
// the mode-switch fixups) of v6.19/7.0. A simulator serialises the fixups, so the TRANSIT
// phase (temporary cids dropped at switch-out while a mode change is under way) never shows:
// a mode change completes within the fork or exit that causes it.
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/task_shared.h"

namespace kernel {

namespace {

constexpr uint32_t UNSET = MM_CID_UNSET_619;

bool cid_on_cpu(uint32_t cid) { return cid & MM_CID_ONCPU; }
// Neither ONCPU, TRANSIT nor UNSET.
bool cid_on_task(uint32_t cid) { return cid < MM_CID_TRANSIT; }
uint32_t cpu_cid_to_cid(uint32_t cid) { return cid & ~MM_CID_ONCPU; }
uint32_t cid_to_cpu_cid(uint32_t cid) { return cid | MM_CID_ONCPU; }

uint32_t tcid(const task_struct* t) { return static_cast<uint32_t>(t->mm_cid.cid); }
void set_tcid(task_struct* t, uint32_t cid) { t->mm_cid.cid = static_cast<int>(cid); }
// mm_cid_update_task_cid(): a changed cid raises the rseq event (rseq_sched_set_ids_changed()).
void update_task_cid(task_struct* t, uint32_t cid) {
  if (tcid(t) == cid) return;
  set_tcid(t, cid);
  t->slice.ids_changed = true;
}

void mm_drop_cid(mm_struct* mm, uint32_t cid) { cidmask_clear(mm, cid); }

// __mm_get_cid(): the lowest free cid below max_cids, or UNSET.
uint32_t __mm_get_cid(mm_struct* mm, unsigned max_cids) {
  const unsigned cid = cidmask_first_zero(mm, max_cids);
  if (cid >= max_cids) return UNSET;
  cidmask_test_and_set(mm, cid);
  return cid;
}

// mm_get_cid(): below max_cids, else (the kernel spins) anywhere in the possible range.
uint32_t mm_get_cid(KernelImpl* k, mm_struct* mm) {
  uint32_t cid = __mm_get_cid(mm, mm->cid.max_cids);
  if (cid == UNSET) cid = __mm_get_cid(mm, static_cast<unsigned>(k->nr_cpus()));
  if (cid == UNSET) {
    k->warn_once("mm_cid: no free cid for tgid " + std::to_string(mm->tgid));
    cid = 0;
  }
  mm_cid_note(&mm->cid, static_cast<int>(cid));
  return cid;
}

// mm_cid_converge(): a cid outside 0 .. max_cids-1 is swapped for a free one inside.
uint32_t mm_cid_converge(mm_struct* mm, uint32_t orig_cid, unsigned max_cids) {
  const uint32_t cid = cpu_cid_to_cid(orig_cid);
  if (cid < max_cids) return orig_cid;
  const uint32_t new_cid = __mm_get_cid(mm, max_cids);
  if (new_cid == UNSET) return orig_cid;
  mm_drop_cid(mm, cid);
  return new_cid | (orig_cid & MM_CID_ONCPU);
}

// mm_drop_cid_on_cpu(): the CPU gives up its cid (the slot keeps the plain value).
void mm_drop_cid_on_cpu(mm_struct* mm, mm_cid_pcpu* pcp) {
  if (!cid_on_cpu(pcp->cid)) return;
  pcp->cid = cpu_cid_to_cid(pcp->cid);
  mm_drop_cid(mm, pcp->cid);
}

void mm_cid_from_cpu(rq* rq, task_struct* t, uint32_t cpu_cid) {
  mm_struct* mm = t->mm;
  mm_cid_pcpu& pcp = mm->cid.pcpu[rq->cpu];
  const unsigned max_cids = mm->cid.max_cids;
  uint32_t tc = tcid(t);
  if (cid_on_cpu(cpu_cid & tc)) {
    if (cpu_cid_to_cid(cpu_cid) < max_cids) {
      update_task_cid(t, cpu_cid);
      return;
    }
    cpu_cid = mm_cid_converge(mm, cpu_cid, max_cids);
  } else {
    // Hand over or drop the task's cid.
    if (cid_on_task(tc)) {
      if (cid_on_cpu(cpu_cid)) {
        set_tcid(t, UNSET);  // mm_unset_cid_on_task()
        mm_drop_cid(mm, tc);
      } else {
        cpu_cid = cid_to_cpu_cid(tc);
      }
    }
    if (!cid_on_cpu(cpu_cid)) cpu_cid = cid_to_cpu_cid(mm_get_cid(rq->k, mm));
  }
  pcp.cid = cpu_cid;
  update_task_cid(t, cpu_cid);
}

void mm_cid_from_task(rq* rq, task_struct* t, uint32_t cpu_cid) {
  mm_struct* mm = t->mm;
  mm_cid_pcpu& pcp = mm->cid.pcpu[rq->cpu];
  const unsigned max_cids = mm->cid.max_cids;
  uint32_t tc = tcid(t);
  if (cid_on_task(tc | cpu_cid)) {
    if (tc < max_cids) {
      pcp.cid = tc;
      return;
    }
    tc = mm_cid_converge(mm, tc, max_cids);
  } else {
    // Hand over or drop the CPU's cid.
    if (cid_on_cpu(cpu_cid)) {
      if (cid_on_task(tc))
        mm_drop_cid_on_cpu(mm, &pcp);
      else
        tc = cpu_cid_to_cid(cpu_cid);
    }
    if (!cid_on_task(tc)) tc = mm_get_cid(rq->k, mm);
  }
  pcp.cid = tc;
  update_task_cid(t, tc);
}

// mm_cid_switch_to(): mm_cid_schedout() drops only TRANSIT cids (none here, see above);
// mm_cid_schedin() takes the fast path when the ownership already matches the mode.
void owner_switch(rq* rq, task_struct*, task_struct* next) {
  if (!next->mm_cid.active) return;
  mm_struct* mm = next->mm;
  const uint32_t cpu_cid = mm->cid.pcpu[rq->cpu].cid;
  if (!mm->cid.percpu)
    mm_cid_from_task(rq, next, cpu_cid);
  else
    mm_cid_from_cpu(rq, next, cpu_cid);
}

// Switch to per-CPU mode (mm_cid_fixup_tasks_to_cpus()): a running task's cid passes to its
// CPU; the others give theirs up.
void fixup_tasks_to_cpus(KernelImpl* k, mm_struct* mm) {
  for (const auto& tp : k->tasks()) {
    task_struct* t = tp.get();
    if (t->mm != mm || !t->mm_cid.active) continue;
    const uint32_t tc = tcid(t);
    if (!cid_on_task(tc)) continue;
    if (t->on_cpu && k->cpu_rq(t->cpu).curr == t) {
      mm->cid.pcpu[static_cast<size_t>(t->cpu)].cid = cid_to_cpu_cid(tc);
      set_tcid(t, cid_to_cpu_cid(tc));
    } else {
      set_tcid(t, UNSET);
      mm_drop_cid(mm, tc);
    }
  }
}

// Back to per-task mode (mm_cid_fixup_cpus_to_tasks()): a CPU's cid passes to the task of
// the mm running there; the other CPUs give theirs up.
void fixup_cpus_to_tasks(KernelImpl* k, mm_struct* mm) {
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    mm_cid_pcpu& pcp = mm->cid.pcpu[static_cast<size_t>(cpu)];
    if (!cid_on_cpu(pcp.cid)) continue;
    task_struct* t = k->cpu_rq(cpu).curr;
    if (t->mm == mm && t->mm_cid.active) {
      pcp.cid = cpu_cid_to_cid(pcp.cid);
      set_tcid(t, pcp.cid);
    } else {
      mm_drop_cid_on_cpu(mm, &pcp);
    }
  }
}

// mm_update_max_cids(): opt = min(users, nr_cpus_allowed); max_cids = opt + 25 %, at most
// the possible CPUs. More users than that: per-CPU mode, with the way back below
// pcpu_thrs = max(min(opt - 25 %, nr_cpu_ids / 2), 1) (mm_cid_calc_pcpu_thrs()).
void mm_update_max_cids(KernelImpl* k, mm_struct* mm) {
  mm_mm_cid& c = mm->cid;
  const unsigned nposs = static_cast<unsigned>(k->nr_cpus());
  const unsigned users = static_cast<unsigned>(c.users);
  const unsigned opt = std::min(users, static_cast<unsigned>(c.nr_cpus_allowed));
  c.max_cids = std::min(opt + opt / 4, nposs);
  if (!c.percpu && users > c.max_cids) {
    c.pcpu_thrs = std::max(std::min(opt - opt / 4, nposs / 2), 1u);
    c.percpu = true;
    fixup_tasks_to_cpus(k, mm);
  } else if (c.percpu && users < c.pcpu_thrs) {
    c.percpu = false;
    fixup_cpus_to_tasks(k, mm);
  }
}

// sched_mm_cid_fork(): one more user (and the affinity union may grow); no cid until the
// first switch-in.
void owner_fork(rq* rq, task_struct* t) {
  KernelImpl* k = rq->k;
  mm_struct* mm = t->mm;
  mm_mm_cid& c = mm->cid;
  if (mm_cid_init(k, mm))
    for (mm_cid_pcpu& p : c.pcpu) p.cid = UNSET;
  c.users++;
  mm_set_cpus_allowed(mm, t);
  t->mm_cid = mm_cid_task{};
  t->mm_cid.cid = static_cast<int>(UNSET);
  t->mm_cid.active = true;
  mm_update_max_cids(k, mm);
}

// sched_mm_cid_exit(): a task-owned cid is dropped (a borrowed CPU cid stays with the CPU).
void owner_exit(rq* rq, task_struct* t) {
  mm_struct* mm = t->mm;
  if (!mm || !t->mm_cid.active) return;
  t->mm_cid.active = false;
  const uint32_t tc = tcid(t);
  if (cid_on_task(tc)) mm_drop_cid(mm, tc);
  set_tcid(t, UNSET);
  mm->cid.users--;
  mm_update_max_cids(rq->k, mm);
}

void owner_migrate_from(task_struct*) {}
void owner_migrate_to(rq*, task_struct*) {}
void owner_tick(rq*, task_struct*) {}
void owner_resume_user(rq*, task_struct* t) { t->mm_cid.pending = 0; }

// task_mm_cid(): the cid without its ownership bits.
uint32_t owner_task_mm_cid(const rq*, const task_struct* t) {
  return tcid(t) & ~(MM_CID_ONCPU | MM_CID_TRANSIT);
}

}  // namespace

const mm_cid_ops mm_cid_owner_ops = {"owner",          owner_fork,        owner_exit,
                                     owner_switch,     owner_migrate_from, owner_migrate_to,
                                     owner_tick,       owner_resume_user, owner_task_mm_cid};

}  // namespace kernel
