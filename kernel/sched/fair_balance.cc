// Load balancing of the fair class: sched_balance_rq() and what moves the tasks (detach_tasks(),
// active balancing), and the periodic balance from the tick (sched_balance_domains(),
// sched_balance_trigger()); fair.c's load_balance section after the group statistics.
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// sched_balance_rq() as in fair.c: classify the local and the other groups of the domain
// from their PELT signals (update_sd_lb_stats), pick the busiest group and decide whether
// and what to move (sched_balance_find_src_group, calculate_imbalance), pick the busiest
// runqueue in it (sched_balance_find_src_rq) and detach tasks from it (detach_tasks). Group
// types that need hardware this model has no use for (misfit and asym packing: asymmetric
// capacities; imbalanced: affinity-pinned groups) are left out; the group statistics and
// the choice of the busiest group and runqueue are in fair_lb_stats.cc.

namespace {

// can_migrate_task(): not delayed unless the balance moves load (6.13+; 6.12 moves delayed
// tasks as any other, and they stay delayed where they go), not into a throttled hierarchy
// (throttled_lb_pair(), lb_throttled_hierarchy(); the source's throttled tasks are off the
// runqueue), allowed on dst, not running, not cache hot unless balancing keeps failing.
bool can_migrate_task(KernelImpl* k, task_struct* p, const lb_env& env) {
  if (p->se.sched_delayed && env.type != migrate_load && !v612(k)) return false;
  if (throttled_hierarchy(task_group_cfs_rq(p, env.dst_cpu))) return false;
  if (!task_allowed_on(p, env.dst_cpu)) return false;
  // task_is_ineligible_on_dst_cpu(): while balancing has not failed, keep a task that is not
  // eligible where it is from joining a queue (it would be placed with its negative lag).
  // Not in 6.12 (v6.18's can_migrate_task() has it).
  if (!v612(k) && !env.sd->nr_balance_failed &&
      k->cfg_.feat(__SCHED_FEAT_PLACE_LAG) &&
      task_group_cfs_rq(p, env.dst_cpu)->nr_queued && !entity_eligible(cfs_rq_of(&p->se), &p->se))
    return false;
  if (p->on_cpu) return false;
  if (env.active) return true;
  if (env.sd->nr_balance_failed > static_cast<unsigned>(env.sd->cache_nice_tries)) return true;
  // task_hot(): idle-policy tasks and SMT siblings (shared caches) are never hot.
  if (p->policy == SCHED_IDLE || env.sd->share_cpucapacity) return true;
  const s64 since = static_cast<s64>(env.src_rq->clock_task - p->se.exec_start);
  return since >= k->cfg_.migration_cost_ns;
}

// The queued, not running tasks below cfs: its timeline's, and those in the runqueues of
// its group entities (the running one's too: its other entities are queued).
void queued_tasks(cfs_rq* cfs, std::vector<task_struct*>* out) {
  for (sched_entity* se : cfs->timeline) {
    if (entity_is_task(se))
      out->push_back(task_of(se));
    else
      queued_tasks(group_cfs_rq(se), out);
  }
  if (cfs->curr && !entity_is_task(cfs->curr)) queued_tasks(group_cfs_rq(cfs->curr), out);
}

// rq->cfs_tasks from its tail (the task least recently enqueued or picked): the queued tasks
// at every level of the hierarchy, in that order by their cfs_tasks_seq stamps. Fills the
// kernel's scratch vector (no allocation per balance) and returns it.
std::vector<task_struct*>& cfs_tasks_from_tail(rq* rq) {
  std::vector<task_struct*>& cand = rq->k->balance_scratch;
  cand.clear();
  queued_tasks(&rq->cfs, &cand);
  std::sort(cand.begin(), cand.end(), [](task_struct* a, task_struct* b) {
    return a->se.cfs_tasks_seq < b->se.cfs_tasks_seq;
  });
  return cand;
}

// detach_tasks() + attach_tasks(): from the tail of rq->cfs_tasks, up to the imbalance.
int detach_tasks(KernelImpl* k, lb_env* env) {
  rq* src = env->src_rq;
  if (src->nr_running <= 1 || env->imbalance <= 0) return 0;
  update_rq_clock(src);
  std::vector<task_struct*>& cand = cfs_tasks_from_tail(src);
  // loop_max = min(sysctl_sched_nr_migrate, nr_running); the running task counts too.
  const size_t loop_max = std::min<size_t>(32, src->nr_running);
  const unsigned shift = std::min(env->sd->nr_balance_failed, 63u);
  int detached = 0;
  // A task passed over goes to the head of the list (list_move), behind every other.
  auto skip = [k](task_struct* p) { p->se.cfs_tasks_seq = ++k->cfs_tasks_clock; };
  for (size_t i = 0; i < cand.size() && i < loop_max; ++i) {
    if (env->idle != CPU_NOT_IDLE && src->nr_running <= 1) break;  // do not steal all
    task_struct* p = cand[i];
    if (!can_migrate_task(k, p, *env)) {
      skip(p);
      continue;
    }
    switch (env->type) {
      case migrate_load: {
        const unsigned long load = std::max<unsigned long>(task_h_load(p), 1);
        if ((load >> shift) > static_cast<unsigned long>(env->imbalance)) {
          skip(p);
          continue;
        }
        env->imbalance -= static_cast<long>(load);
        break;
      }
      case migrate_util: {
        const unsigned long util = task_util_est(p);
        if ((util >> shift) > static_cast<unsigned long>(env->imbalance)) {
          skip(p);
          continue;
        }
        env->imbalance -= static_cast<long>(util);
        break;
      }
      case migrate_task:
      case migrate_misfit:
        env->imbalance--;
        break;
    }
    move_queued_task(src, p, env->dst_rq);
    ++detached;
    // CONFIG_PREEMPTION (set in every PREEMPT_DYNAMIC build, whatever the preemption
    // model): a newly idle CPU stops after the first task, to bound the latency.
    if (env->idle == CPU_NEWLY_IDLE) break;
    if (env->imbalance <= 0) break;
  }
  return detached;
}

// need_active_balance(): detaching failed; stop the busiest CPU to push its running task?
// Here (no asymmetric capacities, no misfits) only imbalanced_active_balance() applies:
// tasks were to be spread and balancing failed more than cache_nice_tries + 2 times.
bool need_active_balance(const lb_env& env) {
  return env.type == migrate_task &&
         env.sd->nr_balance_failed > static_cast<unsigned>(env.sd->cache_nice_tries) + 2;
}

// should_we_balance(): one CPU per local group balances at this level: the first idle
// CPU on an idle core (above the SMT level), else the first idle CPU, else the group's first
// CPU. A newly idle CPU may unless work arrived meanwhile.
bool should_we_balance(KernelImpl* k, const lb_env& env) {
  if (env.idle == CPU_NEWLY_IDLE)
    return env.dst_rq->nr_running == 0 && env.dst_rq->ex.wake_list.empty();
  const std::span<const int> local = env.sd->groups[env.sd->local];
  int idle_smt = kNoCpu;
  for (int c : local) {
    if (!available_idle_cpu(k, c)) continue;
    if (!env.sd->share_cpucapacity && !core_is_idle(k, c)) {
      if (idle_smt == kNoCpu) idle_smt = c;  // an idle SMT thread of a busy core: later
      continue;
    }
    return c == env.dst_cpu;
  }
  if (idle_smt != kNoCpu) return idle_smt == env.dst_cpu;
  return local.front() == env.dst_cpu;
}

}  // namespace

// sched_balance_rq(): one balancing attempt at one level. Returns the tasks moved; clears
// *continue_balancing when another CPU of the local group balances this level.
int sched_balance_rq(rq* this_rq, sched_domain& sd, cpu_idle_type idle, bool* continue_balancing) {
  KernelImpl* k = this_rq->k;
  lb_env env{&sd, this_rq, this_rq->cpu, idle};
  int moved = 0;
  int group = -1;
  // out_one_pinned: back off (a longer interval) unless newly idle; nothing moved.
  auto out_one_pinned = [&] {
    if (idle != CPU_NEWLY_IDLE && sd.balance_interval < sd.max_interval) sd.balance_interval *= 2;
    return 0;
  };
  if (!should_we_balance(k, env)) {
    *continue_balancing = false;
  } else {
    group = sched_balance_find_src_group(k, &env);
    if (group >= 0) env.src_rq = sched_balance_find_src_rq(k, env, group);
  }
  if (!env.src_rq) {  // out_balanced
    sd.nr_balance_failed = 0;
    return out_one_pinned();
  }
  moved = detach_tasks(k, &env);
  bool active_balance = false;
  if (!moved) {
    if (idle != CPU_NEWLY_IDLE) sd.nr_balance_failed++;
    if (need_active_balance(env)) {
      rq* busiest = env.src_rq;
      // Only if the running task could come here (else the next attempt tries again).
      if (busiest->curr->is_idle || !task_allowed_on(busiest->curr, env.dst_cpu))
        return out_one_pinned();
      if (!busiest->active_balance) {
        busiest->active_balance = true;
        busiest->push_cpu = env.dst_cpu;
        active_balance = true;
        smp_send_ipi(k, busiest->cpu, IPI_CPU_STOP);  // stop_one_cpu_nowait()
      }
    }
  } else {
    sd.nr_balance_failed = 0;
  }
  if (!active_balance || need_active_balance(env)) sd.balance_interval = sd.min_interval;
  return moved;
}

// active_load_balance_cpu_stop(): on the busiest CPU, with curr put back, move the least
// recently run task that may go to push_cpu (cache-hot or not: LBF_ACTIVE_LB).
void active_load_balance_cpu_stop(rq* busiest) {
  KernelImpl* k = busiest->k;
  busiest->active_balance = false;
  const int target_cpu = busiest->push_cpu;
  // "Is there any task to move?" (Linux counts the stopper itself in nr_running.)
  if (busiest->nr_running == 0 || target_cpu == busiest->cpu) return;
  sched_domain* sd = nullptr;  // the lowest domain of the target spanning this CPU
  for (sched_domain& d : k->rq_of(target_cpu)->sd)
    if (std::binary_search(d.span.begin(), d.span.end(), busiest->cpu)) {
      sd = &d;
      break;
    }
  if (!sd) return;
  lb_env env{sd, k->rq_of(target_cpu), target_cpu, CPU_IDLE};
  env.src_rq = busiest;
  env.active = true;
  update_rq_clock(busiest);
  // detach_one_task(): from the tail of rq->cfs_tasks too.
  for (task_struct* p : cfs_tasks_from_tail(busiest)) {
    if (!can_migrate_task(k, p, env)) continue;
    move_queued_task(busiest, p, env.dst_rq);
    sd->nr_balance_failed = 0;  // active balancing done: reset the failure counter
    return;
  }
}

// update_newidle_cost(): a newly-idle balance of sd that cost more than any before sets the
// domain's max_newidle_lb_cost; otherwise, once more than a second has passed since it was
// last set or decayed, it decays by 253/256 (~1%) and the function says so. The cost is what
// the model charged this CPU for the pass at that level, as Linux measures t1 - t0 around it.
bool update_newidle_cost(const KernelImpl* k, sched_domain& sd, u64 cost) {
  const u64 now = k->jiffies();
  if (cost > sd.max_newidle_lb_cost) {
    sd.max_newidle_lb_cost = cost;
    sd.last_decay_max_lb_cost = now;
  } else if (now > sd.last_decay_max_lb_cost + static_cast<u64>(k->cfg_.hz)) {
    sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
    sd.last_decay_max_lb_cost = now;
    return true;
  }
  return false;
}

// sched_balance_softirq() + sched_balance_domains(): decay the blocked load, then balance
// bottom-up the domains that are due, until another CPU of the local group is the one to
// balance a level. Every visit decays the domains' newidle costs (update_newidle_cost(sd,
// 0)), going on past that point while a decay happened, and after a decay the CPU's
// max_idle_balance_cost becomes their sum, at least the migration cost.
bool sched_balance_domains(rq* rq, bool idle) {
  KernelImpl* k = rq->k;
  const u64 j = k->jiffies();
  u64 next = j + 60 * static_cast<u64>(k->cfg_.hz);
  bool attempted = false, continue_balancing = true, need_decay = false;
  u64 max_cost = 0;
  // A CPU running only SCHED_IDLE tasks balances as a busy one (CPU_NOT_IDLE) but at the
  // idle intervals.
  bool busy = !idle && !sched_idle_cpu(k, rq->cpu);
  for (sched_domain& sd : rq->sd) {
    need_decay = update_newidle_cost(k, sd, 0);  // as Linux: the last domain visited decides
    max_cost += sd.max_newidle_lb_cost;
    if (!continue_balancing) {
      if (need_decay) continue;
      break;
    }
    u64 interval = get_sd_balance_interval(k, sd, busy);
    if (j >= sd.last_balance + interval) {
      attempted = true;
      if (sched_balance_rq(rq, sd, idle ? CPU_IDLE : CPU_NOT_IDLE, &continue_balancing)) {
        idle = available_idle_cpu(k, rq->cpu);
        busy = !idle && !sched_idle_cpu(k, rq->cpu);
      }
      sd.last_balance = j;
      interval = get_sd_balance_interval(k, sd, busy);
    }
    next = std::min(next, sd.last_balance + interval);
  }
  if (need_decay)
    rq->max_idle_balance_cost = std::max(static_cast<u64>(k->cfg_.migration_cost_ns), max_cost);
  rq->next_balance = next;
  if (attempted) sd_idle_next_balance_update(rq);
  return attempted;
}

// sched_balance_trigger(): from the tick, balance when due (SCHED_SOFTIRQ) and kick the
// NOHZ idle balancer when idle CPUs may need to pull.
void sched_balance_trigger(rq* rq) {
  KernelImpl* k = rq->k;
  if (k->jiffies() >= rq->next_balance) {
    // sched_balance_softirq(): this CPU's blocked load first.
    sched_balance_update_blocked_averages(rq);
    if (sched_balance_domains(rq, rq->curr->is_idle))
      cpu_charge(rq, k->machine_.costs.newidle_balance_ns);
  }
  nohz_balancer_kick(rq);
}

}  // namespace kernel
