// Idle balancing of the fair class: the newly-idle balance (sched_balance_newidle()) and the
// NOHZ idle balancer (nohz_balancer_kick(), nohz_idle_balance()); fair.c's CONFIG_NO_HZ_COMMON
// section and sched_balance_newidle().
#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// update_newidle_stats(): count an attempt at sd (and its weighted success); every 1024
// attempts the ratio becomes the successes and both counts halve.
static void update_newidle_stats(sched_domain& sd, unsigned success) {
  sd.newidle_call++;
  sd.newidle_success += success;
  if (sd.newidle_call >= 1024) {
    sd.newidle_ratio = sd.newidle_success;
    sd.newidle_call /= 2;
    sd.newidle_success /= 2;
  }
}

// nohz_newidle_balance(): a CPU going idle without having pulled a task, and expected to
// stay idle a while, decays the tick-stopped CPUs' blocked load itself (at do_idle(),
// nohz_run_idle_balance()) when it is due, instead of waiting for a busy CPU's kick.
static void nohz_newidle_balance(rq* rq) {
  const KernelImpl* k = rq->k;
  if (rq->avg_idle < static_cast<u64>(k->cfg_.migration_cost_ns)) return;  // wakes up soon
  if (!k->nohz_has_blocked || k->jiffies() < k->nohz_next_blocked) return;
  rq->nohz_newilb_kick = true;
}

// sched_balance_newidle(): a CPU about to idle pulls one task from the busiest runqueue,
// lowest domain first, while its expected idle time (avg_idle) covers the cost so far plus
// the domain's max_newidle_lb_cost. Each domain's pass costs this CPU what the model charges
// for it (newidle_balance_ns plus one remote runqueue cache line per CPU of the span, and
// any IPI the pass sends), and that charge is the measured cost update_newidle_cost() keeps,
// as Linux keeps sched_clock_cpu() t1 - t0; so wide domains are skipped by CPUs that idle
// briefly. A domain not yet balanced costs 0, so the first attempt is never held back.
bool sched_balance_newidle(rq* rq) {
  KernelImpl* k = rq->k;
  // A wakeup is queued for this CPU (ttwu_pending): no need to look for a task; it is
  // enqueued as the CPU switches to idle.
  if (!rq->ex.wake_list.empty()) return false;
  if (rq->sd.empty()) return false;
  // The idle CPU's next periodic balance moves forward to the idle intervals (no busy
  // factor), whether or not it balances now (update_next_balance()).
  u64 next_balance = k->jiffies() + static_cast<u64>(k->cfg_.hz);
  auto update_next_balance = [&](const sched_domain& sd) {
    next_balance = std::min(next_balance, sd.last_balance + get_sd_balance_interval(k, sd, false));
  };
  const hw::Costs& c = k->machine_.costs;
  if (!k->nr_overloaded) {
    // update_next_balance(rq->sd[0]), from the rq's copy of it.
#ifdef SCHEDLAB_CHECK_VIEWS
    assert(rq->sd_idle_next_balance ==
           rq->sd[0].last_balance + get_sd_balance_interval(k, rq->sd[0], false) &&
           "stale sd_idle_next_balance");
#endif
    next_balance = std::min(next_balance, rq->sd_idle_next_balance);
  } else if (rq->avg_idle < rq->sd[0].max_newidle_lb_cost) {
    update_next_balance(rq->sd[0]);
  } else {
    sched_balance_update_blocked_averages(rq);
    bool continue_balancing = true;
    const bool ni_random = k->cfg_.feat(__SCHED_FEAT_NI_RANDOM);
    u64 curr_cost = 0;
    for (sched_domain& sd : rq->sd) {
      update_next_balance(sd);
      if (rq->avg_idle < curr_cost + sd.max_newidle_lb_cost) break;
      unsigned weight = 1;
      if (ni_random) {
        // Throw a 1024-sided die; balance this domain only as often as it succeeds, and
        // weigh a success by how rarely the domain is tried.
        const unsigned d1k = static_cast<uint32_t>(rq->sched_rnd_state.next_u64()) % 1024;
        weight = 1 + sd.newidle_ratio;
        if (d1k > weight) {
          update_newidle_stats(sd, 0);
          continue;
        }
        weight = (1024 + weight / 2) / weight;
      }
      // t0 .. t1: this CPU's kernel work queued by the pass, the pass's own cost included.
      const sim::Time t0 = kernel_clock(rq, k->now());
      cpu_charge(rq, c.newidle_balance_ns + c.line_llc_ns * sd.span_weight);
      const int pulled = sched_balance_rq(rq, sd, CPU_NEWLY_IDLE, &continue_balancing);
      const u64 domain_cost = static_cast<u64>(kernel_clock(rq, k->now()) - t0);
      curr_cost += domain_cost;
      update_newidle_stats(sd, weight * (pulled ? 1 : 0));
      update_newidle_cost(k, sd, domain_cost);
      if (pulled || !continue_balancing || rq->nr_running) break;
    }
    rq->max_idle_balance_cost = std::max(rq->max_idle_balance_cost, curr_cost);
    sd_idle_next_balance_update(rq);  // sched_balance_rq() may have reset balance_interval
  }
  if (rq->next_balance > next_balance) rq->next_balance = next_balance;
  if (rq->nr_running > 0) {
    if (!v70(k)) rq->idle_stamp = 0;  // (6.12, 6.18)
    return true;
  }
  nohz_newidle_balance(rq);
  return false;
}

// In nohz.idle_cpus_mask: idle with its tick stopped (tick_nohz_update()). An idle CPU that
// kept its tick balances at its own ticks instead.
static bool nohz_idle_cpu(KernelImpl* k, int cpu) {
  return k->nohz_idle_mask[static_cast<size_t>(cpu)] && available_idle_cpu(k, cpu);
}

// nohz_balancer_kick(): a busy CPU asks the first idle CPU to balance on behalf of all
// tick-stopped idle CPUs when it has queued work, or when other CPUs of its LLC are busy too
// (sd_llc_shared->nr_busy_cpus > 1: packed SMT cores may need spreading).
// Every LOAD_AVG_PERIOD ms it also asks for the idle CPUs' blocked load to be decayed
// (NOHZ_STATS_KICK), busy or not.
void nohz_balancer_kick(rq* rq) {
  KernelImpl* k = rq->k;
  if (rq->curr->is_idle || !k->cfg_.nohz_idle || k->nr_idle_cpus == 0) return;
  const u64 j = k->jiffies();
  unsigned flags = 0;
  if (k->nohz_has_blocked && j > k->nohz_next_blocked) flags = NOHZ_STATS_KICK;
  if (j >= k->nohz_next_balance) {
    bool balance = rq->nr_running >= 2;
    if (!balance) {
      const int llc = llc_size(k, rq->cpu);
      // sd_llc_shared's nr_busy_cpus, from the LLC's sum (lb_sums_of: core, LLC, socket).
      const s64 busy = llc - k->lb_sums_of[static_cast<size_t>(rq->cpu)][1]->idle_cpus;
      balance = llc > 1 && busy > 1;
    }
    if (balance) flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
  }
  if (!flags) return;
  if (flags & NOHZ_BALANCE_KICK) k->nohz_next_balance = j + 1;
  for (int c = 0; c < k->nr_cpus(); ++c) {
    if (c != rq->cpu && nohz_idle_cpu(k, c)) {
      k->nohz_flags |= flags;
      smp_send_ipi(k, c, IPI_NOHZ_KICK);
      return;
    }
  }
}

// The walk below runs at one instant and charges its passes to this CPU's kernel work, so a
// wakeup Linux would see between passes is one still due: a sleep timer of this CPU whose
// interrupt comes before the passes so far end. It wakes its task here (the CPU is idle),
// which sets need_resched() and stops the walk. This is when that interrupt comes, as armed
// (the expiry plus the delivery's jitter); sim::kTimeMax for none.
static sim::Time next_sleep_timer_irq(const struct rq* this_rq) {
  const hrtimer_sleeper_base& b = this_rq->k->hrtimer_bases[static_cast<size_t>(this_rq->cpu)];
  if (b.heap.empty()) return sim::kTimeMax;
  const sim::Timer& t = b.heap.front().p->sleep_timer;
  return t.armed ? t.expires : b.heap.front().expires;
}

// _nohz_idle_balance(): run on the kicked CPU, over the idle CPUs from the next one round to
// itself: decay their blocked load (at most once a jiffy each), balance those that are due;
// stop if work arrived here meanwhile. A CPU just going idle (newly_idle) is not in
// nohz.idle_cpus_mask yet and skips itself.
static void _nohz_idle_balance(struct rq* this_rq, unsigned flags, bool newly_idle) {
  KernelImpl* k = this_rq->k;
  const u64 j = k->jiffies();
  const int n = k->nr_cpus();
  u64 next_balance = j + 60 * static_cast<u64>(k->cfg_.hz);
  bool has_blocked_load = false, update_next_balance = false;
  if (flags & NOHZ_STATS_KICK) k->nohz_has_blocked = false;
  const sim::Time wake_irq = next_sleep_timer_irq(this_rq);
  // for_each_cpu_wrap(balance_cpu, nohz.idle_cpus_mask, this_cpu + 1): (this_cpu + i) % n,
  // wrapped without a divide
  for (int i = 1, c = this_rq->cpu + 1 == n ? 0 : this_rq->cpu + 1; i <= n; ++i, c = c + 1 == n ? 0 : c + 1) {
    if (!nohz_idle_cpu(k, c) || (newly_idle && c == this_rq->cpu)) continue;
    if ((!available_idle_cpu(k, this_rq->cpu) && test_tsk_need_resched(this_rq->curr)) ||
        kernel_clock(this_rq, k->now()) >= wake_irq) {
      if (flags & NOHZ_STATS_KICK) k->nohz_has_blocked = true;  // abort: a later kick
      return;                                                   // takes it up
    }
    struct rq* rq = k->rq_of(c);
    if (flags & NOHZ_STATS_KICK) {  // update_nohz_stats()
      if (j > rq->last_blocked_load_update_tick) sched_balance_update_blocked_averages(rq);
      has_blocked_load |= rq->cfs.avg.load_avg || rq->cfs.avg.util_avg;  // cfs_rq_has_blocked()
    }
    // The pass on behalf of an idle CPU runs here, on the kicked CPU, which pays for it.
    if ((flags & NOHZ_BALANCE_KICK) && j >= rq->next_balance && sched_balance_domains(rq, true))
      cpu_charge(this_rq, k->machine_.costs.newidle_balance_ns);
    if (next_balance > rq->next_balance) {
      next_balance = rq->next_balance;
      update_next_balance = true;
    }
  }
  // Only if some idle CPU was seen: else nohz.next_balance stays at the kick's j + 1, and
  // the next tick kicks again.
  if (update_next_balance) k->nohz_next_balance = next_balance;
  if (flags & NOHZ_STATS_KICK) k->nohz_next_blocked = j + ms_to_jiffies(k, LOAD_AVG_PERIOD);
  if (has_blocked_load) k->nohz_has_blocked = true;
}

void nohz_idle_balance(struct rq* this_rq) {
  KernelImpl* k = this_rq->k;
  const unsigned flags = k->nohz_flags;
  k->nohz_flags = 0;
  _nohz_idle_balance(this_rq, flags, false);
}

// Only the blocked-load refresh, and not when a NOHZ kick is on its way here (it does the
// same) or the idle task is to reschedule at once.
void nohz_run_idle_balance(struct rq* rq) {
  if (!rq->nohz_newilb_kick) return;
  rq->nohz_newilb_kick = false;
  if ((rq->ex.ipi_pending & IPI_NOHZ_KICK) || test_tsk_need_resched(rq->curr)) return;
  _nohz_idle_balance(rq, NOHZ_STATS_KICK, true);
}

}  // namespace kernel
