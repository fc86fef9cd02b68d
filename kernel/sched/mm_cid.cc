// mm_cid: selection of the implementation, the "off" table, and the per-mm bitmap helpers
// the implementations share (kernel/sched/sched.h: mm_cidmask(), __mm_cid_put(), ...).
#include "kernel/sched/mm_cid.h"

#include <algorithm>
#include <iterator>
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
  // Indexed by MmCid, which kernel/config.h expands from the same registry (Default is
  // resolved by mm_cid_effective() first).
  static const mm_cid_ops* const kImpls[] = {
      &mm_cid_off_ops,
      &mm_cid_off_ops,
#define MM_CID_IMPL(Enum, name) &mm_cid_##name##_ops,
#include "kernel/sched/mm_cid_impls.h"
#undef MM_CID_IMPL
  };
  static_assert(std::size(kImpls) == kNrMmCid);
  return kImpls[static_cast<int>(mm_cid_effective(cfg))];
}

bool mm_cid_init(KernelImpl* k, mm_struct* mm) {
  mm_mm_cid& c = mm->cid;
  if (!c.pcpu.empty()) return false;
  const size_t n = static_cast<size_t>(k->nr_cpus());
  c.pcpu.assign(n, mm_cid_pcpu{});
  c.cidmask.assign((n + 63) / 64, 0);
  c.cpus_allowed.assign(static_cast<int>(n), false);
  return true;
}

void mm_set_cpus_allowed(mm_struct* mm, const task_struct* t) {
  mm_mm_cid& c = mm->cid;
  // The union only grows: once it holds every CPU no mask adds one. Otherwise the walk is a
  // word per 64 CPUs and a step per CPU of t's mask.
  if (c.nr_cpus_allowed == c.cpus_allowed.size()) return;
  t->cpus_mask.for_each([&c](int cpu) { c.nr_cpus_allowed += c.cpus_allowed.set(cpu); });
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
  if (mm_cid_metrics* m = rq->k->mm_cid_metrics_.get()) {
    // The scan runs after whatever kernel work this CPU has in progress (the exit path).
    const sim::Time start = std::max(rq->k->now(), rq->ex.kwork_until);
    m->scan_start[static_cast<size_t>(rq->cpu)] = start;
    m->scan_end[static_cast<size_t>(rq->cpu)] = start + cost;
    m->scan_call_ns.add(cost);
  }
  cpu_charge_preemptible(rq, cost);  // task work: preemptible under full and lazy preemption
  mm_cid_stats& s = mm->cid.stats;
  s.nr_scan_calls++;
  s.cpus_visited += static_cast<uint64_t>(cpus);
  s.scan_ns_sum += static_cast<uint64_t>(cost);
  s.scan_ns_max = std::max(s.scan_ns_max, static_cast<uint64_t>(cost));
}

void mm_cid_note_pass(KernelImpl* k, mm_struct* mm, sim::Time pass) {
  mm_cid_stats& s = mm->cid.stats;
  s.nr_passes++;
  s.pass_ns_sum += pass;
  s.pass_ns_max = std::max(s.pass_ns_max, pass);
  if (mm_cid_metrics* m = k->mm_cid_metrics_.get()) m->pass_ns.add(pass);
}

// An RT task waits from its enqueue (wait_start) until it runs user code, which, if the
// CPU's kernel work runs on past the switch, is when that work ends: the part of that span
// the CPU spent in its last scan is what the scan added to the RT task's latency.
void mm_cid_note_rt_switch_in(rq* rq, const task_struct* next) {
  mm_cid_metrics* m = rq->k->mm_cid_metrics_.get();
  if (!m || next->sched_class != &rt_sched_class) return;
  const size_t cpu = static_cast<size_t>(rq->cpu);
  const sim::Time end = m->scan_end[cpu];
  const sim::Time waited_from = static_cast<sim::Time>(next->stats.wait_start);
  if (end <= waited_from) return;
  const sim::Time runs_at = std::max(rq->k->now(), rq->ex.kwork_until);
  const sim::Time overlap = std::min(runs_at, end) - std::max(waited_from, m->scan_start[cpu]);
  if (overlap > 0) m->rt_wait_added_ns.add(overlap);
}

void mm_cid_note_scan_preempted(rq* rq, sim::Time now) {
  mm_cid_metrics* m = rq->k->mm_cid_metrics_.get();
  const size_t cpu = static_cast<size_t>(rq->cpu);
  m->scan_end[cpu] = std::min(m->scan_end[cpu], now);
}

namespace {

void sampled_push(mm_cid_sampled* s, int16_t v) {
  constexpr int N = mm_cid_sampled::kSeries;
  s->acc_max = std::max(s->acc_max, v);
  if (++s->acc < s->stride) return;
  if (s->n == N) {  // merge neighbours: each point covers twice the samples from now on
    for (int i = 0; i < N / 2; ++i) s->series[static_cast<size_t>(i)] = std::max(s->series[static_cast<size_t>(2 * i)], s->series[static_cast<size_t>(2 * i + 1)]);
    s->n = N / 2;
    s->stride *= 2;
  }
  s->series[static_cast<size_t>(s->n++)] = s->acc_max;
  s->acc = 0;
  s->acc_max = -1;
}

// Every mm_cid.sample_ms: what each running thread's rseq area shows, and per process the
// highest mm_cid its live threads show (sleeping ones keep the value of their last return to
// user space) and whether, after threads exited, all are back below the thread count.
void mm_cid_sample(sim::Timer* t, sim::Time now) {
  mm_cid_metrics* m = static_cast<mm_cid_metrics*>(t->ctx);
  KernelImpl* k = m->k;
  m->samples++;
  for (int c = 0; c < k->nr_cpus(); ++c) {
    const task_struct* p = k->cpu_rq(c).curr;
    if (!p->is_idle && p->mm && p->user && p->user->rseq) m->user_cid.add(p->user->rseq->mm_cid);
  }
  for (auto& mm : k->mms) {
    mm->cid.sampled.threads = 0;
    mm->cid.sampled.cur_max = -1;
  }
  for (const auto& p : k->tasks()) {
    if (p->exited || !p->mm || !p->user || !p->user->rseq) continue;
    mm_cid_sampled& s = p->mm->cid.sampled;
    s.threads++;
    s.cur_max = std::max(s.cur_max, static_cast<int>(std::min<uint32_t>(p->user->rseq->mm_cid, 32767)));
  }
  for (auto& mm : k->mms) {
    mm_cid_sampled& s = mm->cid.sampled;
    if (s.threads == 0 && s.threads_max == 0) continue;  // not started yet
    s.threads_max = std::max(s.threads_max, s.threads);
    s.max_cid = std::max(s.max_cid, s.cur_max);
    if (s.threads == 0) {
      s.burst_end = -1;
    } else {
      if (s.threads < s.prev_threads && s.cur_max >= s.threads && s.burst_end < 0) s.burst_end = now;
      if (s.burst_end >= 0 && s.cur_max < s.threads) {
        m->converge_ns.add(now - s.burst_end);
        s.burst_end = -1;
      }
    }
    s.prev_threads = s.threads;
    sampled_push(&s, static_cast<int16_t>(s.cur_max));
  }
  k->engine()->arm(t, now + m->sample_ns);
}

}  // namespace

void mm_cid_metrics_start(KernelImpl* k) {
  if (k->cfg_.mm_cid_sample_ms <= 0 || k->mm_cid_metrics_) return;
  auto m = std::make_unique<mm_cid_metrics>();
  m->k = k;
  m->sample_ns = static_cast<sim::Time>(k->cfg_.mm_cid_sample_ms) * sim::kNsecPerMsec;
  m->scan_start.assign(static_cast<size_t>(k->nr_cpus()), 0);
  m->scan_end.assign(static_cast<size_t>(k->nr_cpus()), 0);
  m->sample_timer.fn = mm_cid_sample;
  m->sample_timer.ctx = m.get();
  k->engine()->arm(&m->sample_timer, k->now() + m->sample_ns);
  k->mm_cid_metrics_ = std::move(m);
}

mm_cid_report mm_cid_snapshot(const KernelImpl& k) {
  mm_cid_report r;
  r.impl = k.mm_cid_ops->name;
  const mm_cid_metrics* m = k.mm_cid_metrics_.get();
  if (!m) return r;
  r.on = true;
  r.sample_ns = m->sample_ns;
  r.samples = m->samples;
  r.scan_call_ns = m->scan_call_ns;
  r.rt_wait_added_ns = m->rt_wait_added_ns;
  r.pass_ns = m->pass_ns;
  r.pass_gap_ns = m->pass_gap_ns;
  r.user_cid = m->user_cid;
  r.converge_ns = m->converge_ns;
  for (const auto& mm : k.mms) {
    const mm_mm_cid& c = mm->cid;
    r.scan_calls += c.stats.nr_scan_calls;
    r.cpus_visited += c.stats.cpus_visited;
    r.passes += c.stats.nr_passes;
    if (c.sampled.threads_max < 2) continue;
    mm_cid_process_report p;
    p.tgid = mm->tgid;
    p.name = k.process_name(mm->tgid);
    p.threads_max = c.sampled.threads_max;
    p.max_cid = c.sampled.max_cid;
    p.point_ns = m->sample_ns * c.sampled.stride;
    p.series.assign(c.sampled.series.begin(), c.sampled.series.begin() + c.sampled.n);
    r.processes.push_back(std::move(p));
  }
  return r;
}

}  // namespace kernel
