// Fair-class CPU selection and load balancing: select_task_rq_fair() (wake_affine,
// select_idle_sibling), fork placement, periodic, newly-idle and NOHZ idle balancing.
// Mirrors kernel/sched/fair.c (v6.12 .. v7.0) with instantaneous loads in place of PELT.
#include <algorithm>
#include <cassert>
#include <climits>

#include "kernel/cpu_exec.h"
#include "kernel/kernel.h"
#include "kernel/sched/sched.h"

namespace kernel {

namespace {

constexpr int kNoCpu = -1;

// sched_idle_cpu() is not modelled (see docs/model.md): only truly idle CPUs count.
bool idle_cpu_for(Kernel* k, task_struct* p, int cpu) {
  return task_allowed_on(p, cpu) && available_idle_cpu(k, cpu);
}

const sched_domain* sd_llc(Kernel* k, int cpu) {
  const rq* rq = k->rq_of(cpu);
  const sched_domain* llc = nullptr;
  for (const sched_domain& sd : rq->sd)
    if (sd.share_llc) llc = &sd;
  return llc;
}

int llc_size(Kernel* k, int cpu) {
  const sched_domain* sd = sd_llc(k, cpu);
  return sd ? sd->span_weight : 1;
}

// wake_wide(): a waker that flips between many wakees (1:N) should not pull them all.
bool wake_wide(Kernel* k, task_struct* p, task_struct* waker, int waker_cpu) {
  unsigned master = waker->wakee_flips, slave = p->wakee_flips;
  const unsigned factor = static_cast<unsigned>(llc_size(k, waker_cpu));
  if (master < slave) std::swap(master, slave);
  if (slave < factor || master < slave * factor) return false;
  return true;
}

int wake_affine_idle(Kernel* k, int this_cpu, int prev_cpu, bool sync) {
  if (available_idle_cpu(k, this_cpu) && cpus_share_cache(k, this_cpu, prev_cpu))
    return available_idle_cpu(k, prev_cpu) ? prev_cpu : this_cpu;
  if (sync && k->rq_of(this_cpu)->nr_running == 1) return this_cpu;
  if (available_idle_cpu(k, prev_cpu)) return prev_cpu;
  return kNoCpu;
}

// wake_affine_weight() with instantaneous runqueue weight as the CPU load.
int wake_affine_weight(Kernel* k, const sched_domain& sd, task_struct* p, int this_cpu,
                       int prev_cpu, bool sync) {
  s64 this_eff = static_cast<s64>(k->rq_of(this_cpu)->cfs.load);
  const s64 task_load = static_cast<s64>(p->se.load.weight);
  if (sync) this_eff -= static_cast<s64>(k->rq_of(this_cpu)->curr->se.load.weight);
  this_eff = std::max<s64>(this_eff, 0) + task_load;
  s64 prev_eff = static_cast<s64>(k->rq_of(prev_cpu)->cfs.load) - task_load;
  this_eff *= 100 * 1024;
  int pct = 100;
  if (k->cfg_.feat(__SCHED_FEAT_WA_BIAS)) pct += (sd.imbalance_pct - 100) / 2;
  prev_eff *= 1024 * pct;
  if (sync) prev_eff += 1;
  return this_eff < prev_eff ? this_cpu : kNoCpu;
}

int wake_affine(Kernel* k, const sched_domain& sd, task_struct* p, int this_cpu, int prev_cpu,
                bool sync) {
  int target = kNoCpu;
  if (k->cfg_.feat(__SCHED_FEAT_WA_IDLE)) target = wake_affine_idle(k, this_cpu, prev_cpu, sync);
  if (target == kNoCpu && k->cfg_.feat(__SCHED_FEAT_WA_WEIGHT))
    target = wake_affine_weight(k, sd, p, this_cpu, prev_cpu, sync);
  return target == this_cpu ? this_cpu : prev_cpu;
}

bool core_is_idle(Kernel* k, int cpu) {
  const int sib = k->rq_of(cpu)->smt_sibling;
  return available_idle_cpu(k, cpu) && (sib < 0 || available_idle_cpu(k, sib));
}

// SIS_UTIL scan budget from the LLC's utilisation (here: the share of busy CPUs):
// y = 1024 - min(1024, x^2 * pct^2 / (10000 * 1024)); nr = y * llc_weight / 1024.
int nr_idle_scan(Kernel* k, const sched_domain& llc) {
  int busy = 0;
  for (int c : llc.span) busy += k->rq_of(c)->curr->is_idle ? 0 : 1;
  const s64 x = static_cast<s64>(busy) * 1024 / llc.span_weight;
  const s64 pct = llc.imbalance_pct;
  const s64 y = 1024 - std::min<s64>(1024, x * x * pct * pct / (10000 * 1024));
  return static_cast<int>(y * llc.span_weight / 1024);
}

// select_idle_cpu(): scan the LLC from target+1, for an idle core if one is believed to
// exist, else for any idle CPU within the SIS_UTIL budget.
int select_idle_cpu(Kernel* k, task_struct* p, const sched_domain& llc, bool has_idle_core, int target) {
  int nr = INT_MAX;
  if (k->cfg_.feat(__SCHED_FEAT_SIS_UTIL) && !has_idle_core) {
    nr = nr_idle_scan(k, llc) + 1;
    if (nr == 1) return kNoCpu;
  }
  const int n = llc.span_weight;
  const auto start = std::upper_bound(llc.span.begin(), llc.span.end(), target) - llc.span.begin();
  int idle_cpu = kNoCpu;
  for (int i = 0; i < n; ++i) {
    const int cpu = llc.span[(start + i) % n];
    if (has_idle_core) {
      if (core_is_idle(k, cpu) && task_allowed_on(p, cpu)) return cpu;
      if (idle_cpu == kNoCpu && idle_cpu_for(k, p, cpu)) idle_cpu = cpu;
    } else {
      if (--nr <= 0) return kNoCpu;
      if (idle_cpu_for(k, p, cpu)) return cpu;
    }
  }
  return idle_cpu;
}

// select_idle_sibling(): target, prev or a recently used CPU if idle, then the LLC scan.
int select_idle_sibling(Kernel* k, task_struct* p, int prev, int target) {
  if (idle_cpu_for(k, p, target)) return target;
  if (prev != target && cpus_share_cache(k, prev, target) && idle_cpu_for(k, p, prev)) return prev;
  const int recent = p->recent_used_cpu;
  p->recent_used_cpu = prev;
  if (recent >= 0 && recent != prev && recent != target && cpus_share_cache(k, recent, target) &&
      idle_cpu_for(k, p, recent))
    return recent;
  const sched_domain* llc = sd_llc(k, target);
  if (!llc) return target;
  bool has_idle_core = false;
  const bool smt = k->rq_of(target)->smt_sibling >= 0;
  if (smt) {
    for (int c : llc->span)
      if (core_is_idle(k, c)) {
        has_idle_core = true;
        break;
      }
    if (!has_idle_core && cpus_share_cache(k, prev, target)) {
      const int sib = k->rq_of(prev)->smt_sibling;
      if (sib >= 0 && idle_cpu_for(k, p, sib)) return sib;  // select_idle_smt()
    }
  }
  const int i = select_idle_cpu(k, p, *llc, has_idle_core, target);
  return i != kNoCpu ? i : target;
}

// Fork placement (the slow path of sched_balance_find_dst_group/_cpu): from the widest
// domain down, the group with the most idle CPUs, then the fewest tasks; then the CPU.
int find_idlest_cpu(Kernel* k, task_struct* p, int cpu) {
  const rq* rq = k->rq_of(cpu);
  std::vector<int> span;
  for (int c = 0; c < k->nr_cpus(); ++c) span.push_back(c);
  for (int level = static_cast<int>(rq->sd.size()) - 1; level >= 0; --level) {
    // Groups of this level as seen from the CPUs still in `span` (all have the same domains).
    const sched_domain& here = k->rq_of(span.front())->sd[level];
    const std::vector<int>* best = nullptr;
    long best_idle = -1, best_nr = LONG_MAX;
    for (const auto& g : here.groups) {
      long idle = 0, nr = 0, allowed = 0;
      for (int c : g) {
        if (!task_allowed_on(p, c)) continue;
        ++allowed;
        idle += available_idle_cpu(k, c) ? 1 : 0;
        nr += k->rq_of(c)->nr_running;
      }
      if (!allowed) continue;
      if (idle > best_idle || (idle == best_idle && nr < best_nr)) {
        best = &g;
        best_idle = idle;
        best_nr = nr;
      }
    }
    if (!best) break;
    span = *best;
  }
  int best_cpu = kNoCpu;
  unsigned best_nr = UINT_MAX;
  for (int c : span) {
    if (!task_allowed_on(p, c)) continue;
    const unsigned nr = k->rq_of(c)->nr_running + (available_idle_cpu(k, c) ? 0 : 1);
    if (nr < best_nr) {
      best_nr = nr;
      best_cpu = c;
    }
  }
  return best_cpu != kNoCpu ? best_cpu : cpu;
}

}  // namespace

int select_task_rq_fair(Kernel* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu) {
  if (wake_flags & (WF_FORK | WF_EXEC)) return find_idlest_cpu(k, p, prev_cpu);
  const bool sync = wake_flags & WF_SYNC;
  task_struct* waker = k->rq_of(waker_cpu)->curr;
  const bool want_affine = !wake_wide(k, p, waker, waker_cpu) && task_allowed_on(p, waker_cpu);
  int new_cpu = prev_cpu;
  if (want_affine && waker_cpu != prev_cpu) {
    for (const sched_domain& sd : k->rq_of(waker_cpu)->sd) {
      if (std::binary_search(sd.span.begin(), sd.span.end(), prev_cpu)) {
        new_cpu = wake_affine(k, sd, p, waker_cpu, prev_cpu, sync);
        break;
      }
    }
  }
  return select_idle_sibling(k, p, prev_cpu, new_cpu);
}

// ---- Load balancing ----

namespace {

enum group_type { group_has_spare = 0, group_fully_busy = 1, group_overloaded = 2 };

struct sg_lb_stats {
  unsigned nr_running = 0;
  unsigned idle_cpus = 0;
  unsigned weight = 0;
  unsigned long load = 0;
  group_type type = group_has_spare;
  s64 avg_load() const { return weight ? static_cast<s64>(load) * 1024 / weight : 0; }
};

// update_sg_lb_stats(): the group's sums over its CPUs of nr_running, cfs.load and idle
// CPUs. Linux adds them up CPU by CPU on every balance; here lb_view_update() keeps them.
sg_lb_stats group_stats(Kernel* k, const sched_domain& sd, size_t g) {
  sg_lb_stats s;
  if (const lb_sum* sum = sd.group_sum[g]) {
    s.nr_running = static_cast<unsigned>(sum->nr_running);
    s.load = static_cast<unsigned long>(sum->load);
    s.idle_cpus = static_cast<unsigned>(sum->idle_cpus);
  } else {
    for (int c : sd.groups[g]) {
      const Kernel::lb_cpu& v = k->lb_view[c];
      s.nr_running += v.nr_running;
      s.load += v.load;
      s.idle_cpus += available_idle_cpu(k, c) ? 1 : 0;
    }
  }
  s.weight = static_cast<unsigned>(sd.groups[g].size());
#ifdef SCHEDLAB_CHECK_VIEWS
  sg_lb_stats want;
  for (int c : sd.groups[g]) {
    const rq* r = k->rq_of(c);
    want.nr_running += r->nr_running;
    want.load += r->cfs.load;
    want.idle_cpus += r->curr == r->idle && r->nr_running == 0 && r->ex.wake_list.empty();
  }
  assert(s.nr_running == want.nr_running && s.load == want.load &&
         s.idle_cpus == want.idle_cpus && "stale sched group sums");
#endif
  if (s.nr_running > s.weight)
    s.type = group_overloaded;
  else if (s.nr_running == s.weight && s.idle_cpus == 0)
    s.type = group_fully_busy;
  return s;
}

// can_migrate_task(): allowed on dst, not running, not delayed, not cache hot unless
// balancing has failed more than cache_nice_tries times.
bool can_migrate_task(Kernel* k, task_struct* p, int dst, const sched_domain& sd, rq* src) {
  if (p->on_cpu || p->se.sched_delayed || !task_allowed_on(p, dst)) return false;
  if (sd.nr_balance_failed > static_cast<unsigned>(sd.cache_nice_tries)) return true;
  const s64 since = static_cast<s64>(src->clock - p->se.exec_start);
  return since >= k->cfg_.migration_cost_ns;  // task_hot()
}

// detach_tasks() + attach_tasks(): least recently run first; `nr` tasks or `load` weight.
int move_tasks(Kernel* k, rq* src, rq* dst, const sched_domain& sd, int nr, s64 load) {
  update_rq_clock(src);
  std::vector<task_struct*>& cand = k->balance_scratch;  // reused: no allocation per balance
  cand.clear();
  // Linux walks rq->cfs_tasks; with every task in the root group that is the timeline.
  for (sched_entity* se : src->cfs.timeline)
    if (entity_is_task(se) && can_migrate_task(k, task_of(se), dst->cpu, sd, src))
      cand.push_back(task_of(se));
  std::sort(cand.begin(), cand.end(), [](task_struct* a, task_struct* b) {
    return a->se.exec_start != b->se.exec_start ? a->se.exec_start < b->se.exec_start
                                                : a->pid < b->pid;
  });
  const size_t loop_max = std::min<size_t>(32, src->nr_running);  // sysctl_sched_nr_migrate
  int moved = 0;
  for (size_t i = 0; i < cand.size() && i < loop_max; ++i) {
    task_struct* p = cand[i];
    if (load >= 0) {
      const s64 w = static_cast<s64>(p->se.load.weight >> std::min(sd.nr_balance_failed, 31u));
      if (w > load) continue;
      load -= static_cast<s64>(p->se.load.weight);
    }
    move_queued_task(src, p, dst);
    ++moved;
    if (load < 0 && moved >= nr) break;
    if (load == 0) break;
  }
  return moved;
}

// should_we_balance(): one CPU per local group balances at this level: the first idle
// CPU of the group, else its first CPU.
bool should_we_balance(Kernel* k, int this_cpu, const std::vector<int>& local) {
  for (int c : local)
    if (c == this_cpu || available_idle_cpu(k, c)) return c == this_cpu;
  return local.front() == this_cpu;
}

// sched_balance_rq(): find the busiest group and runqueue at this level and pull from it.
// Returns whether the caller should go on to the parent level.
bool sched_balance_rq(rq* this_rq, sched_domain& sd, bool newidle) {
  Kernel* k = this_rq->k;
  const int this_cpu = this_rq->cpu;
  const std::vector<int>* local = &sd.groups[sd.local];
  if (!newidle && !should_we_balance(k, this_cpu, *local)) return false;
  const sg_lb_stats ls = group_stats(k, sd, sd.local);
  const std::vector<int>* busiest = nullptr;
  sg_lb_stats bs;
  s64 total_load = static_cast<s64>(ls.load);
  unsigned total_weight = ls.weight;
  for (size_t gi = 0; gi < sd.groups.size(); ++gi) {
    const std::vector<int>& g = sd.groups[gi];
    if (gi == sd.local) continue;
    sg_lb_stats s = group_stats(k, sd, gi);
    total_load += static_cast<s64>(s.load);
    total_weight += s.weight;
    if (s.nr_running <= s.weight - s.idle_cpus) continue;  // nothing queued to move
    if (!busiest || s.type > bs.type || (s.type == bs.type && s.avg_load() > bs.avg_load())) {
      busiest = &g;
      bs = s;
    }
  }
  bool found = false;
  int nr = 0;
  s64 load = -1;
  if (busiest) {
    if (ls.type == group_has_spare) {
      // Migrate tasks: even out running tasks (prefer-sibling) or idle CPUs.
      if (sd.prefer_sibling && bs.nr_running > ls.nr_running + 1)
        nr = static_cast<int>((bs.nr_running - ls.nr_running) / 2);
      else if (ls.idle_cpus > bs.idle_cpus + 1)
        nr = static_cast<int>((ls.idle_cpus - bs.idle_cpus) / 2);
      else if (bs.type == group_overloaded)
        nr = 1;
    } else if (bs.type >= ls.type) {
      // Both busy: migrate load towards the domain average, if busiest exceeds the margin.
      const s64 avg = total_weight ? total_load * 1024 / total_weight : 0;
      if (100 * bs.avg_load() > sd.imbalance_pct * ls.avg_load() && ls.avg_load() < avg) {
        load = std::min((bs.avg_load() - avg) * bs.weight, (avg - ls.avg_load()) * ls.weight) / 1024;
        if (load <= 0) load = -1;
      }
    }
    found = nr > 0 || load > 0;
  }
  int moved = 0;
  if (found) {
    rq* src = nullptr;
    for (int c : *busiest) {
      rq* r = k->rq_of(c);
      if (r->nr_running < 2) continue;
      if (!src || (load > 0 ? r->cfs.load > src->cfs.load : r->nr_running > src->nr_running)) src = r;
    }
    if (src) {
      if (newidle) nr = 1, load = -1;
      moved = move_tasks(k, src, this_rq, sd, nr, load);
    }
    if (!newidle) sd.nr_balance_failed = moved ? 0 : sd.nr_balance_failed + 1;
  }
  if (!newidle) {
    if (found)
      sd.balance_interval = sd.min_interval;
    else if (sd.balance_interval < sd.max_interval)
      sd.balance_interval *= 2;
  }
  return moved == 0;
}

u64 ms_to_jiffies(const Kernel* k, s64 ms) {
  return static_cast<u64>(std::max<s64>(1, ms * k->cfg_.hz / 1000));
}

// sched_balance_domains(): bottom-up over the domains that are due.
void sched_balance_domains(rq* rq, bool idle) {
  Kernel* k = rq->k;
  const u64 j = k->jiffies();
  u64 next = j + 60 * static_cast<u64>(k->cfg_.hz);
  bool attempted = false;
  for (sched_domain& sd : rq->sd) {
    const bool busy = !idle;
    u64 interval = ms_to_jiffies(k, static_cast<s64>(sd.balance_interval) * (busy ? sd.busy_factor : 1));
    if (busy && interval > 1) interval -= 1;
    bool go_on = true;
    if (j >= sd.last_balance + interval) {
      attempted = true;
      go_on = sched_balance_rq(rq, sd, false);
      sd.last_balance = j;
      interval = ms_to_jiffies(k, static_cast<s64>(sd.balance_interval) * (busy ? sd.busy_factor : 1));
    }
    next = std::min(next, sd.last_balance + interval);
    if (!go_on) break;
  }
  rq->next_balance = next;
  if (attempted) cpu_charge(rq, k->machine_.costs.newidle_balance_ns);
}

}  // namespace

// sched_balance_trigger(): from the tick, balance when due (SCHED_SOFTIRQ) and kick the
// NOHZ idle balancer when idle CPUs may need to pull.
void sched_balance_trigger(rq* rq) {
  Kernel* k = rq->k;
  if (k->jiffies() >= rq->next_balance) sched_balance_domains(rq, rq->curr->is_idle);
  nohz_balancer_kick(rq);
}

// sched_balance_newidle(): a CPU about to idle pulls one task from the busiest runqueue,
// lowest domain first, while its expected idle time (avg_idle) covers the cost so far plus
// the domain's. Linux measures each domain's cost (max_newidle_lb_cost); here it is the
// fixed cost of an attempt plus one remote runqueue cache line per CPU of the span, so wide
// domains are skipped by CPUs that idle briefly, as on Linux.
bool sched_balance_newidle(rq* rq) {
  Kernel* k = rq->k;
  if (!k->nr_overloaded || rq->sd.empty()) return false;
  const hw::Costs& c = k->machine_.costs;
  s64 spent = 0;
  for (sched_domain& sd : rq->sd) {
    const s64 cost = c.newidle_balance_ns + c.line_llc_ns * sd.span_weight;
    if (static_cast<s64>(rq->avg_idle) < spent + cost) break;
    spent += cost;
    if (!sched_balance_rq(rq, sd, true)) break;
    if (rq->nr_running) break;
  }
  if (spent) cpu_charge(rq, spent);
  return rq->nr_running > 0;
}

// nohz_balancer_kick(): a busy CPU with queued work asks the first idle CPU to balance on
// behalf of all tick-stopped idle CPUs.
void nohz_balancer_kick(rq* rq) {
  Kernel* k = rq->k;
  if (rq->curr->is_idle || !k->cfg_.nohz_idle) return;
  if (k->jiffies() < k->nohz_next_balance || k->nr_idle_cpus == 0) return;
  if (rq->nr_running < 2) return;
  k->nohz_next_balance = k->jiffies() + 1;
  for (int c = 0; c < k->nr_cpus(); ++c) {
    if (c != rq->cpu && available_idle_cpu(k, c)) {
      smp_send_ipi(k, c, IPI_NOHZ_KICK);
      return;
    }
  }
}

// nohz_idle_balance(): run on the kicked CPU; balance each idle CPU that is due.
void nohz_idle_balance(struct rq* this_rq) {
  Kernel* k = this_rq->k;
  const u64 j = k->jiffies();
  for (int c = 0; c < k->nr_cpus() && k->nr_overloaded; ++c) {
    struct rq* rq = k->rq_of(c);
    if (!available_idle_cpu(k, c) || j < rq->next_balance) continue;
    sched_balance_domains(rq, true);
  }
}

}  // namespace kernel
