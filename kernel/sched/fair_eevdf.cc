// EEVDF on a fair runqueue (fair.c's "tree data structure manipulation" and "statistics"
// sections): vruntime and its weighted average V, lag, eligibility, virtual deadlines, slice
// protection, the pick (pick_eevdf()), update_curr(), placement (place_entity()) and
// reweighting (reweight_entity()).
// Mirrors kernel/sched/fair.c of v6.12, v6.18, v7.0; the class's operations are in fair.cc.
#include <algorithm>
#include <cassert>

#include "kernel/kernel_impl.h"
#include "kernel/sched/deadline.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// __calc_delta(delta, NICE_0, lw): delta * 1024 / w with the kernel's 32-bit inverse weight,
// so vruntime advances bit-exactly as in Linux (fact = 1024 * inv, renormalised to 32 bits).
u64 calc_delta_fair(u64 delta, const sched_entity* se) {
  if (se->load.weight == NICE_0_LOAD) return delta;
  u64 fact = static_cast<u64>(NICE_0_LOAD) * se->load.inv_weight;
  int shift = 32;
  if (u64 hi = fact >> 32) {
    const int fs = 64 - __builtin_clzll(hi);  // fls()
    shift -= fs;
    fact >>= fs;
  }
  return static_cast<u64>((static_cast<unsigned __int128>(delta) * fact) >> shift);
}

// sysctl_sched_base_slice = normalized x (1 + ilog2(min(ncpus, 8))) under LOG scaling.
u64 sysctl_sched_base_slice(const KernelImpl* k) { return k->base_slice_ns; }

// avg_vruntime_add/sub: sum_w_vruntime = Sum w_i * (v_i - v0) over tree entities, so that
// V = v0 + Sum w_i (v_i - v0) / Sum w_i without overflow.
static void avg_vruntime_add(cfs_rq* cfs, sched_entity* se) {
  const s64 w = static_cast<s64>(se->load.weight);
  cfs->sum_w_vruntime += entity_key(cfs, se) * w;
  cfs->sum_weight += w;
}
static void avg_vruntime_sub(cfs_rq* cfs, sched_entity* se) {
  const s64 w = static_cast<s64>(se->load.weight);
  cfs->sum_w_vruntime -= entity_key(cfs, se) * w;
  cfs->sum_weight -= w;
}

// avg_vruntime(): V, the weighted average vruntime of the queued entities incl. curr.
// Division floors (biased left) like the kernel's. The reference v0 then moves to V
// (7.0's update_zero_vruntime; older kernels used min_vruntime, which only changes rounding).
u64 avg_vruntime(cfs_rq* cfs) {
  sched_entity* curr = cfs->curr;
  s64 avg = cfs->sum_w_vruntime;
  s64 load = cfs->sum_weight;
  if (curr && curr->on_rq) {
    const s64 w = static_cast<s64>(curr->load.weight);
    avg += entity_key(cfs, curr) * w;
    load += w;
  }
  if (load) {
    if (avg < 0) avg -= (load - 1);
    avg /= load;
  }
  const u64 v = cfs->zero_vruntime + static_cast<u64>(avg);
  // Re-base: Sum w_i (v_i - v0') = Sum w_i (v_i - v0) - W_tree * (v0' - v0).
  cfs->sum_w_vruntime -= cfs->sum_weight * avg;
  cfs->zero_vruntime = v;
  return v;
}

// vruntime_eligible(): lag >= 0, i.e. v <= V, tested without dividing:
// Sum w_j (v_j - v0) >= (v - v0) * Sum w_j.
static bool vruntime_eligible(cfs_rq* cfs, u64 vruntime) {
  sched_entity* curr = cfs->curr;
  s64 avg = cfs->sum_w_vruntime;
  s64 load = cfs->sum_weight;
  if (curr && curr->on_rq) {
    const s64 w = static_cast<s64>(curr->load.weight);
    avg += entity_key(cfs, curr) * w;
    load += w;
  }
  return avg >= static_cast<s64>(vruntime - cfs->zero_vruntime) * load;
}

bool entity_eligible(cfs_rq* cfs, sched_entity* se) { return vruntime_eligible(cfs, se->vruntime); }

static u64 cfs_rq_max_slice(cfs_rq* cfs) {
  u64 m = (cfs->curr && cfs->curr->on_rq) ? cfs->curr->slice : 0;
  for (const sched_entity* se : cfs->timeline) m = std::max(m, se->slice);
  return m;
}

u64 cfs_rq_min_slice(cfs_rq* cfs) {
  u64 m = (cfs->curr && cfs->curr->on_rq) ? cfs->curr->slice : ~0ULL;
  for (const sched_entity* se : cfs->timeline) m = std::min(m, se->slice);
  return m;
}

// update_entity_lag(): vlag = V - v, clamped so a long sleeper or hog cannot bank or owe
// more than about a slice. 6.12-6.19: max(2*slice, TICK_NSEC); 7.0: max_slice + TICK_NSEC.
void update_entity_lag(cfs_rq* cfs, sched_entity* se) {
  KernelImpl* k = rq_of(cfs)->k;
  const u64 tick = static_cast<u64>(k->cfg_.tick_nsec());
  const u64 lim = v70(k) ? cfs_rq_max_slice(cfs) + tick : std::max(2 * se->slice, tick);
  const s64 limit = static_cast<s64>(calc_delta_fair(lim, se));
  const s64 vlag = static_cast<s64>(avg_vruntime(cfs) - se->vruntime);
  se->vlag = std::clamp(vlag, -limit, limit);
}

void __enqueue_entity(cfs_rq* cfs, sched_entity* se) {
  avg_vruntime_add(cfs, se);
  se->tree_seq = cfs->tree_seq++;
  cfs->timeline.push_back(se);
}

void __dequeue_entity(cfs_rq* cfs, sched_entity* se) {
  auto& tl = cfs->timeline;
  auto it = std::find(tl.begin(), tl.end(), se);
  assert(it != tl.end() && "dequeue of an entity not in the tree");
  *it = tl.back();
  tl.pop_back();
  avg_vruntime_sub(cfs, se);
}

// Slice protection. 6.12: RUN_TO_PARITY marks the pick by vlag == deadline. 6.18+: vprot,
// the end of the protected window, set when the entity becomes curr (set_protect_slice()).
void set_protect_slice(cfs_rq* cfs, sched_entity* se) {
  KernelImpl* k = rq_of(cfs)->k;
  if (v612(k)) {
    se->vlag = static_cast<s64>(se->deadline);
    return;
  }
  u64 slice = feat(rq_of(cfs), __SCHED_FEAT_RUN_TO_PARITY) ? cfs_rq_min_slice(cfs)
                                                           : k->cfg_.base_slice_ns;
  slice = std::min(slice, se->slice);
  if (slice != se->slice)
    se->vprot = std::min<u64>(se->deadline, se->vruntime + calc_delta_fair(slice, se),
                              [](u64 a, u64 b) { return static_cast<s64>(a - b) < 0; });
  else
    se->vprot = se->deadline;
}

bool protect_slice(cfs_rq* cfs, sched_entity* se) {
  if (v612(rq_of(cfs)->k))
    return feat(rq_of(cfs), __SCHED_FEAT_RUN_TO_PARITY) &&
           se->vlag == static_cast<s64>(se->deadline);
  return static_cast<s64>(se->vprot - se->vruntime) > 0;
}

void cancel_protect_slice(sched_entity* se, const KernelImpl* k) {
  if (v612(k)) {
    if (se->vlag == static_cast<s64>(se->deadline)) se->vlag = static_cast<s64>(se->deadline) + 1;
  } else {
    se->vprot = se->vruntime;
  }
}

// update_protect_slice() (6.18+): shrink, never extend, to the smallest queued slice.
void update_protect_slice(cfs_rq* cfs, sched_entity* se) {
  const u64 slice = cfs_rq_min_slice(cfs);
  const u64 v = se->vruntime + calc_delta_fair(slice, se);
  if (static_cast<s64>(v - se->vprot) < 0) se->vprot = v;
}

// __pick_eevdf(): the eligible entity with the earliest virtual deadline; curr keeps the
// CPU while protected. The kernel descends an rb-tree augmented with min_vruntime; a scan
// of the (small) array gives the same entity.
sched_entity* pick_eevdf(cfs_rq* cfs, bool protect) {
  sched_entity* curr = cfs->curr;
  if (cfs->nr_queued == 1) {
    if (curr && curr->on_rq) return curr;
    return cfs->timeline.empty() ? nullptr : cfs->timeline.front();
  }
  // 7.0 picks the next buddy here, so the wakeup's pick sees it too (e837456fdca8); 6.12
  // and 6.18 do it in pick_next_entity().
  if (cfs->next && v70(rq_of(cfs)->k) && feat(rq_of(cfs), __SCHED_FEAT_PICK_BUDDY) &&
      entity_eligible(cfs, cfs->next))
    return cfs->next;
  if (curr && (!curr->on_rq || !entity_eligible(cfs, curr))) curr = nullptr;
  if (curr && protect && protect_slice(cfs, curr)) return curr;
  sched_entity* best = nullptr;
  for (sched_entity* se : cfs->timeline) {
    if (best && (entity_before(best, se) ||
                 (best->deadline == se->deadline && best->tree_seq < se->tree_seq)))
      continue;
    if (!entity_eligible(cfs, se)) continue;
    best = se;
  }
  if (!best || (curr && entity_before(curr, best))) best = curr;
  return best;
}

// clear_buddies(): se, and the group entities above it, stop being their runqueue's next
// buddy (__clear_buddies_next()).
void clear_buddies(cfs_rq* cfs, sched_entity* se) {
  if (cfs->next != se) return;
  for_each_sched_entity(se) {
    cfs_rq* c = cfs_rq_of(se);
    if (c->next != se) break;
    c->next = nullptr;
  }
}

// update_deadline(): once the request (slice) is consumed, ask for a new one from the
// current vruntime and report it so update_curr() can reschedule.
static bool update_deadline(cfs_rq* cfs, sched_entity* se) {
  if (static_cast<s64>(se->vruntime - se->deadline) < 0) return false;
  if (!se->custom_slice) se->slice = sysctl_sched_base_slice(rq_of(cfs)->k);
  se->deadline = se->vruntime + calc_delta_fair(se->slice, se);
  return true;
}

// 6.12 did_preempt_short(): protection was cancelled (or lost) and curr is ineligible.
static bool did_preempt_short(cfs_rq* cfs, sched_entity* curr) {
  if (!feat(rq_of(cfs), __SCHED_FEAT_PREEMPT_SHORT)) return false;
  if (curr->vlag == static_cast<s64>(curr->deadline)) return false;
  return !entity_eligible(cfs, curr);
}

// update_curr(): charge the time since exec_start to curr, advance vruntime, and request a
// reschedule when the slice is used up or curr left its protected window.
void update_curr(cfs_rq* cfs) {
  sched_entity* curr = cfs->curr;
  if (!curr) return;
  rq* rq = rq_of(cfs);
  const s64 delta = static_cast<s64>(rq->clock_task - curr->exec_start);
  if (delta <= 0) return;
  curr->exec_start = rq->clock_task;
  curr->sum_exec_runtime += static_cast<u64>(delta);
  curr->vruntime += calc_delta_fair(static_cast<u64>(delta), curr);
  const bool resched = update_deadline(cfs, curr);
  if (entity_is_task(curr)) {
    // cgroup_account_cputime(): the task's group's usage.
    if (task_group* tg = task_of(curr)->sched_task_group) tg->usage_ns += static_cast<u64>(delta);
    // Fair execution is charged to the deadline server whether or not it ran on its behalf.
    if (rq->fair_server.active) dl_server_update(rq, delta);
  }
  if (cfs->runtime_enabled) account_cfs_rq_runtime(cfs, static_cast<u64>(delta));
  if (cfs->nr_queued == 1) return;
  if (v612(rq->k)) {
    if (resched || did_preempt_short(cfs, curr)) {
      resched_curr(rq);
      clear_buddies(cfs, curr);
    }
  } else if (resched || !protect_slice(cfs, curr)) {
    resched_curr_lazy(rq);
    clear_buddies(cfs, curr);
  }
}

// place_entity(): put a waking, new or migrating entity at V minus its lag, the lag inflated
// so it survives the shift of V that adding this entity causes:
//   V' = (W*V + w*v)/(W + w), v = V' - lag  =>  lag_at_V = lag * (W + w) / W.
void place_entity(cfs_rq* cfs, sched_entity* se, int flags) {
  rq* rq = rq_of(cfs);
  const u64 vruntime = avg_vruntime(cfs);
  s64 lag = 0;
  if (!se->custom_slice) se->slice = sysctl_sched_base_slice(rq->k);
  u64 vslice = calc_delta_fair(se->slice, se);
  if (feat(rq, __SCHED_FEAT_PLACE_LAG) && cfs->nr_queued && se->vlag) {
    sched_entity* curr = cfs->curr;
    lag = se->vlag;
    s64 load = cfs->sum_weight;
    if (curr && curr->on_rq) load += static_cast<s64>(curr->load.weight);
    lag *= load + static_cast<s64>(se->load.weight);
    if (load == 0) load = 1;
    lag /= load;
  }
  se->vruntime = vruntime - static_cast<u64>(lag);
  if (se->rel_deadline) {
    se->deadline += se->vruntime;
    se->rel_deadline = false;
    return;
  }
  if (feat(rq, __SCHED_FEAT_PLACE_DEADLINE_INITIAL) && (flags & ENQUEUE_INITIAL)) vslice /= 2;
  se->deadline = se->vruntime + vslice;
}

// reweight_entity(): se takes weight `weight`. Lag is real time, w * vlag, so vlag scales by
// w/w' to keep it, and so does a relative deadline (virtual time left of the request);
// se's PELT load_avg is recomputed from its (weight-free) load_sum and re-added. A task is
// off its runqueue here (set_user_nice() dequeues it first) and only that scaling applies.
// A queued entity (a task group's, when its shares change; no path here reaches it yet) is
// re-placed from its rescaled lag as 6.12.11+ (6d71a9c61604) and 6.18 do, 7.0 keeping
// curr's protected window relative across it (Update se->vprot in reweight_entity()).
void reweight_entity(cfs_rq* cfs, sched_entity* se, unsigned long weight) {
  const bool curr = cfs->curr == se;
  bool rel_vprot = false;
  u64 vprot = 0;
  if (se->on_rq) {
    update_curr(cfs);  // commit outstanding execution time
    update_entity_lag(cfs, se);
    se->deadline -= se->vruntime;
    se->rel_deadline = true;
    if (v70(rq_of(cfs)->k) && curr && protect_slice(cfs, se)) {
      vprot = se->vprot - se->vruntime;
      rel_vprot = true;
    }
    cfs->nr_queued--;  // placed again below as if joining the others
    if (!curr) __dequeue_entity(cfs, se);
    cfs->load -= se->load.weight;
  }
  dequeue_load_avg(cfs, se);
  // div_s64(): truncates toward zero, as C++'s division does.
  const s64 old_w = static_cast<s64>(se->load.weight), new_w = static_cast<s64>(weight);
  se->vlag = se->vlag * old_w / new_w;
  if (se->rel_deadline) se->deadline = static_cast<u64>(static_cast<s64>(se->deadline) * old_w / new_w);
  if (rel_vprot) vprot = static_cast<u64>(static_cast<s64>(vprot) * old_w / new_w);
  // update_load_set(): the inverse weight is recomputed on its next use (__update_inv_weight:
  // WMULT_CONST / w); reweight_task_fair() then installs the table's.
  se->load.weight = weight;
  se->load.inv_weight = static_cast<uint32_t>(0xffffffffu / weight);
  se->avg.load_avg = static_cast<unsigned long>(pelt_div(weight * se->avg.load_sum, se->avg.period_contrib));
  enqueue_load_avg(cfs, se);
  if (se->on_rq) {
    cfs->load += se->load.weight;
    place_entity(cfs, se, 0);
    if (rel_vprot) se->vprot = se->vruntime + vprot;
    if (!curr) __enqueue_entity(cfs, se);
    cfs->nr_queued++;
  }
  lb_view_update_pelt(rq_of(cfs));
}

}  // namespace kernel
