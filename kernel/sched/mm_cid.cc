// mm_cid: selection of the implementation, the "off" table, and the per-mm bitmap helpers
// the implementations share (kernel/sched/sched.h: mm_cidmask(), __mm_cid_put(), ...).
#include "kernel/sched/mm_cid.h"

#include <algorithm>
#include <bit>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/task_shared.h"

namespace kernel {

namespace {

void off_fork(rq*, task_struct*) {}
void off_exit(rq*, task_struct*) {}
void off_switch(rq*, task_struct*, task_struct*) {}
void off_migrate_from(task_struct*) {}
void off_migrate_to(rq*, task_struct*) {}
void off_tick(rq*, task_struct*) {}
void off_resume_user(rq*, task_struct*) {}
// !CONFIG_SCHED_MM_CID task_mm_cid(): "Use the cpu number as mm_cid".
uint32_t off_task_mm_cid(const rq* rq, const task_struct*) { return static_cast<uint32_t>(rq->cpu); }

}  // namespace

const mm_cid_ops mm_cid_off_ops = {"off",          off_fork, off_exit,        off_switch,
                                   off_migrate_from, off_migrate_to, off_tick, off_resume_user,
                                   off_task_mm_cid};

const mm_cid_ops* mm_cid_select(const KernelConfig& cfg) {
  switch (mm_cid_effective(cfg)) {
    case MmCid::Lazy: return &mm_cid_lazy_ops;
    case MmCid::Batched: return &mm_cid_batched_ops;
    case MmCid::Owner: return &mm_cid_owner_ops;
    case MmCid::Off:
    case MmCid::Default: break;
  }
  return &mm_cid_off_ops;
}

bool mm_cid_init(KernelImpl* k, mm_struct* mm) {
  mm_mm_cid& c = mm->cid;
  if (!c.pcpu.empty()) return false;
  const size_t n = static_cast<size_t>(k->nr_cpus());
  c.pcpu.assign(n, mm_cid_pcpu{});
  c.cidmask.assign((n + 63) / 64, 0);
  c.cpus_allowed.assign(n, 0);
  return true;
}

bool cidmask_test_and_set(mm_struct* mm, unsigned cid) {
  uint64_t& w = mm->cid.cidmask[cid / 64];
  const uint64_t bit = uint64_t{1} << (cid % 64);
  const bool was = w & bit;
  w |= bit;
  return was;
}

void cidmask_clear(mm_struct* mm, unsigned cid) {
  mm->cid.cidmask[cid / 64] &= ~(uint64_t{1} << (cid % 64));
}

unsigned cidmask_first_zero(const mm_struct* mm, unsigned limit) {
  const std::vector<uint64_t>& m = mm->cid.cidmask;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i] == ~uint64_t{0}) continue;
    const unsigned c = static_cast<unsigned>(i * 64) + static_cast<unsigned>(std::countr_one(m[i]));
    return std::min(c, limit);
  }
  return limit;
}

int cidmask_weight(const mm_struct* mm) {
  int w = 0;
  for (uint64_t x : mm->cid.cidmask) w += std::popcount(x);
  return w;
}

uint64_t mm_cid_scan_delay_jiffies(const KernelImpl* k) {
  const uint64_t hz = static_cast<uint64_t>(k->cfg_.hz);
  return (100 * hz + 999) / 1000;  // msecs_to_jiffies() rounds up
}

bool mm_cid_scan_due(const KernelImpl* k, mm_mm_cid* c) {
  const uint64_t now = k->jiffies();
  uint64_t old_scan = c->next_scan;
  const uint64_t next_scan = now + mm_cid_scan_delay_jiffies(k);
  if (!old_scan) old_scan = c->next_scan = next_scan;
  if (now < old_scan) return false;  // time_before(now, old_scan)
  c->next_scan = next_scan;
  return true;
}

void mm_cid_charge_scan(rq* rq, mm_struct* mm, int cpus) {
  const sim::Time cost = static_cast<sim::Time>(cpus) * rq->k->machine_.costs.mm_cid_scan_cpu_ns;
  cpu_charge(rq, cost);
  mm_cid_stats& s = mm->cid.stats;
  s.nr_scan_calls++;
  s.cpus_visited += static_cast<uint64_t>(cpus);
  s.scan_ns_sum += static_cast<uint64_t>(cost);
  s.scan_ns_max = std::max(s.scan_ns_max, static_cast<uint64_t>(cost));
}

}  // namespace kernel
