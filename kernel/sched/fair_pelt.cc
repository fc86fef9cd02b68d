// The fair class's PELT bookkeeping (fair.c's load-tracking section: update_load_avg(),
// attach/detach, removed load, util_est, the new-task and blocked-load entry points): how
// entities' averages join and leave their runqueue's. The signal arithmetic stays in pelt.cc,
// as Linux keeps it in pelt.c; this file is the fair-class side, which Linux has in fair.c.
#include <algorithm>

#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_internal.h"
#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"

namespace kernel {

// ---- PELT: keeping the load averages of entities and runqueues (fair.c) ----
//
// A runqueue's sums are not recomputed from its entities: both decay alike, so the
// runqueue's stay the sum of its entities' as long as entities are added (attach) and
// taken out (detach, removed) explicitly. A task that sleeps stays attached, its
// contribution decaying ("blocked load"); one that wakes on another CPU is taken out of the
// old runqueue's sums (remove_entity_load_avg) and attached to the new one at enqueue.

template <typename T, typename U>
inline void sub_positive(T* v, U d) {
  const T x = static_cast<T>(d);
  *v = *v > x ? *v - x : 0;
}

// After taking an average out, keep its sum consistent with it: rounding may have left the
// sum below avg * PELT_MIN_DIVIDER. (Linux compares as u32 here, as max_t(u32, ...) does.)
template <typename T>
inline void floor_sum(T* sum, unsigned long avg) {
  *sum = std::max<uint32_t>(static_cast<uint32_t>(*sum), static_cast<uint32_t>(avg * PELT_MIN_DIVIDER));
}

void enqueue_load_avg(cfs_rq* cfs, sched_entity* se) {
  cfs->avg.load_avg += se->avg.load_avg;
  cfs->avg.load_sum += se->load.weight * se->avg.load_sum;
}

void dequeue_load_avg(cfs_rq* cfs, sched_entity* se) {
  sub_positive(&cfs->avg.load_avg, se->avg.load_avg);
  sub_positive(&cfs->avg.load_sum, se->load.weight * se->avg.load_sum);
  floor_sum(&cfs->avg.load_sum, cfs->avg.load_avg);
}

// add_tg_cfs_propagate(): a change of cfs's load that its group entity (one level up) must
// take over at its next update_load_avg() (propagate_entity_load_avg()).
static void add_tg_cfs_propagate(cfs_rq* cfs, long runnable_sum) {
  cfs->propagate = true;
  cfs->prop_runnable_sum += runnable_sum;
}

// attach_entity_load_avg(): the entity joins cfs's sums, its sums re-based to cfs's point in
// the current period (they share the clock, so this loses nothing but rounding).
static void attach_entity_load_avg(cfs_rq* cfs, sched_entity* se) {
  const uint32_t divider = get_pelt_divider(&cfs->avg);
  se->avg.last_update_time = cfs->avg.last_update_time;
  se->avg.period_contrib = cfs->avg.period_contrib;
  se->avg.util_sum = static_cast<uint32_t>(se->avg.util_avg * divider);
  se->avg.runnable_sum = se->avg.runnable_avg * divider;
  se->avg.load_sum = se->avg.load_avg * divider;
  if (se->load.weight < se->avg.load_sum)
    se->avg.load_sum /= se->load.weight;
  else
    se->avg.load_sum = 1;
  enqueue_load_avg(cfs, se);
  cfs->avg.util_avg += se->avg.util_avg;
  cfs->avg.util_sum += se->avg.util_sum;
  cfs->avg.runnable_avg += se->avg.runnable_avg;
  cfs->avg.runnable_sum += se->avg.runnable_sum;
  add_tg_cfs_propagate(cfs, static_cast<long>(se->avg.load_sum));
}

static void detach_entity_load_avg(cfs_rq* cfs, sched_entity* se) {
  dequeue_load_avg(cfs, se);
  sub_positive(&cfs->avg.util_avg, se->avg.util_avg);
  sub_positive(&cfs->avg.util_sum, se->avg.util_sum);
  floor_sum(&cfs->avg.util_sum, cfs->avg.util_avg);
  sub_positive(&cfs->avg.runnable_avg, se->avg.runnable_avg);
  sub_positive(&cfs->avg.runnable_sum, se->avg.runnable_sum);
  floor_sum(&cfs->avg.runnable_sum, cfs->avg.runnable_avg);
  add_tg_cfs_propagate(cfs, -static_cast<long>(se->avg.load_sum));
}

// Whether ___update_load_sum() would change sa at `now`: it returns at once, changing
// nothing, when less than a PELT unit (1024 ns) passed since the sums' last update. A clock
// gone back (a negative delta, huge as u64) is not that case: it resets last_update_time.
// Several updates in one event (the tick's, then the switch's put_prev/set_next at the same
// rq clock) skip the call this way.
static inline bool pelt_unit_elapsed(u64 now, const sched_avg* sa) {
  return now - sa->last_update_time >= 1024;
}

// update_cfs_rq_load_avg(): take out what left from other CPUs, then decay/accumulate.
// Inlined into update_load_avg(), which runs it on every tick of a busy CPU.
[[gnu::always_inline]] static inline int update_cfs_rq_load_avg(u64 now, cfs_rq* cfs) {
  sched_avg* sa = &cfs->avg;
  int decayed = 0;
  if (cfs->removed.nr) [[unlikely]] {
    const uint32_t divider = get_pelt_divider(sa);
    const unsigned long load = cfs->removed.load_avg, util = cfs->removed.util_avg,
                        runnable = cfs->removed.runnable_avg;
    cfs->removed = {};
    sub_positive(&sa->load_avg, load);
    sub_positive(&sa->load_sum, static_cast<u64>(load) * divider);
    floor_sum(&sa->load_sum, sa->load_avg);
    sub_positive(&sa->util_avg, util);
    sub_positive(&sa->util_sum, static_cast<u64>(util) * divider);
    floor_sum(&sa->util_sum, sa->util_avg);
    sub_positive(&sa->runnable_avg, runnable);
    sub_positive(&sa->runnable_sum, static_cast<u64>(runnable) * divider);
    floor_sum(&sa->runnable_sum, sa->runnable_avg);
    add_tg_cfs_propagate(cfs, -static_cast<long>((static_cast<u64>(runnable) * divider) >> SCHED_CAPACITY_SHIFT));
    decayed = 1;
  }
  if (pelt_unit_elapsed(now, sa)) decayed |= __update_load_avg_cfs_rq(now, cfs);
  return decayed;
}

// ---- Group PELT (CONFIG_FAIR_GROUP_SCHED) ----
//
// A group entity's averages are its runqueue's seen one level up. They evolve as any
// entity's (the group entity is queued, runnable with runnable_weight = its runqueue's
// runnable tasks, running while a task below it runs), and a task joining or leaving the
// group runqueue (attach, detach, removed load) is carried up at once: add_tg_cfs_propagate()
// marks the runqueue, and propagate_entity_load_avg() applies the change to the group entity
// and its parent runqueue at the group entity's next update_load_avg(), level by level.

template <typename T>
inline void add_positive(T* v, long d) {
  const long r = static_cast<long>(*v) + d;
  *v = static_cast<T>(r < 0 ? 0 : r);
}

// update_tg_load_avg(): tg->load_avg is the sum of its runqueues' load_avg, each runqueue
// adding its change when it exceeds 1/64 of what it added last, at most once per ms
// (6.8+, sched_clock_cpu() rate limit). The root group's is never read.
static void update_tg_load_avg(cfs_rq* cfs) {
  task_group* tg = cfs->tg;
  if (!tg) return;
  const u64 now = rq_of(cfs)->clock;
  if (now - cfs->last_update_tg_load_avg < 1000000) return;  // NSEC_PER_MSEC
  const long delta = static_cast<long>(cfs->avg.load_avg) - cfs->tg_load_avg_contrib;
  if (std::abs(delta) > cfs->tg_load_avg_contrib / 64) {
    tg->load_avg += delta;
    cfs->tg_load_avg_contrib = static_cast<long>(cfs->avg.load_avg);
    cfs->last_update_tg_load_avg = now;
  }
}

// update_tg_cfs_util() / update_tg_cfs_runnable(): the group entity takes its runqueue's
// util_avg / runnable_avg, and its parent runqueue the difference.
static void update_tg_cfs_util(cfs_rq* cfs, sched_entity* se, cfs_rq* gcfs) {
  const long delta_avg = static_cast<long>(gcfs->avg.util_avg) - static_cast<long>(se->avg.util_avg);
  if (!delta_avg) return;
  const uint32_t divider = get_pelt_divider(&cfs->avg);
  se->avg.util_avg = gcfs->avg.util_avg;
  const uint32_t new_sum = static_cast<uint32_t>(se->avg.util_avg * divider);
  const long delta_sum = static_cast<long>(new_sum) - static_cast<long>(se->avg.util_sum);
  se->avg.util_sum = new_sum;
  add_positive(&cfs->avg.util_avg, delta_avg);
  add_positive(&cfs->avg.util_sum, delta_sum);
  floor_sum(&cfs->avg.util_sum, cfs->avg.util_avg);
}

static void update_tg_cfs_runnable(cfs_rq* cfs, sched_entity* se, cfs_rq* gcfs) {
  const long delta_avg = static_cast<long>(gcfs->avg.runnable_avg) - static_cast<long>(se->avg.runnable_avg);
  if (!delta_avg) return;
  const uint32_t divider = get_pelt_divider(&cfs->avg);
  se->avg.runnable_avg = gcfs->avg.runnable_avg;
  const u64 new_sum = static_cast<u64>(se->avg.runnable_avg) * divider;
  const long delta_sum = static_cast<long>(new_sum) - static_cast<long>(se->avg.runnable_sum);
  se->avg.runnable_sum = new_sum;
  add_positive(&cfs->avg.runnable_avg, delta_avg);
  add_positive(&cfs->avg.runnable_sum, delta_sum);
  floor_sum(&cfs->avg.runnable_sum, cfs->avg.runnable_avg);
}

// update_tg_cfs_load(): the load_sum the runqueue gained (a task attached: its runnable
// sum, added assuming minimal overlap) or lost (estimated as if every task were equally
// runnable), never below the running sum, re-weighted by the group entity's weight.
static void update_tg_cfs_load(cfs_rq* cfs, sched_entity* se, cfs_rq* gcfs) {
  long runnable_sum = gcfs->prop_runnable_sum;
  if (!runnable_sum) return;
  gcfs->prop_runnable_sum = 0;
  const uint32_t divider = get_pelt_divider(&cfs->avg);
  if (runnable_sum >= 0) {
    runnable_sum += static_cast<long>(se->avg.load_sum);
    runnable_sum = std::min<long>(runnable_sum, divider);
  } else {
    u64 load_sum = 0;
    if (gcfs->load) load_sum = gcfs->avg.load_sum / gcfs->load;
    runnable_sum = static_cast<long>(std::min<u64>(se->avg.load_sum, load_sum));
  }
  const long running_sum = static_cast<long>(se->avg.util_sum >> SCHED_CAPACITY_SHIFT);
  runnable_sum = std::max(runnable_sum, running_sum);
  const u64 load_sum = se->load.weight * static_cast<u64>(runnable_sum);
  const unsigned long load_avg = static_cast<unsigned long>(load_sum / divider);
  const long delta_avg = static_cast<long>(load_avg) - static_cast<long>(se->avg.load_avg);
  if (!delta_avg) return;
  const long delta_sum = static_cast<long>(load_sum) - static_cast<long>(se->load.weight * se->avg.load_sum);
  se->avg.load_sum = static_cast<u64>(runnable_sum);
  se->avg.load_avg = load_avg;
  add_positive(&cfs->avg.load_avg, delta_avg);
  add_positive(&cfs->avg.load_sum, delta_sum);
  floor_sum(&cfs->avg.load_sum, cfs->avg.load_avg);
}

// propagate_entity_load_avg(): apply a pending change of a group entity's runqueue to the
// entity, and pass it on to the next level up.
static int propagate_entity_load_avg(sched_entity* se) {
  if (entity_is_task(se)) return 0;
  cfs_rq* gcfs = group_cfs_rq(se);
  if (!gcfs->propagate) return 0;
  gcfs->propagate = false;
  cfs_rq* cfs = cfs_rq_of(se);
  add_tg_cfs_propagate(cfs, gcfs->prop_runnable_sum);
  update_tg_cfs_util(cfs, se, gcfs);
  update_tg_cfs_runnable(cfs, se, gcfs);
  update_tg_cfs_load(cfs, se, gcfs);
  return 1;
}

// update_load_avg(): bring se and its runqueue up to now; attach a task arriving from
// another CPU (DO_ATTACH, last_update_time cleared by migrate_task_rq_fair()) or detach one
// leaving by migration (DO_DETACH); a group entity takes over its runqueue's pending change.
// The balancer's view follows the runqueue's averages.
void update_load_avg(cfs_rq* cfs, sched_entity* se, int flags) {
  const u64 now = cfs_rq_clock_pelt(cfs);
  if (se->avg.last_update_time && !(flags & SKIP_AGE_LOAD) && pelt_unit_elapsed(now, &se->avg))
    __update_load_avg_se(now, cfs, se);
  int decayed = update_cfs_rq_load_avg(now, cfs);
  decayed |= propagate_entity_load_avg(se);
  if (!se->avg.last_update_time && (flags & DO_ATTACH)) {
    attach_entity_load_avg(cfs, se);
    update_tg_load_avg(cfs);
    decayed = 1;
  } else if (flags & DO_DETACH) {
    detach_entity_load_avg(cfs, se);
    update_tg_load_avg(cfs);
    decayed = 1;
  } else if (decayed && (flags & UPDATE_TG)) {
    update_tg_load_avg(cfs);
  }
  if (decayed) lb_view_update_pelt(rq_of(cfs));
}

// propagate_entity_cfs_rq(): a change attached to se's runqueue goes up to the root, each
// level's group entity taking it over at its update_load_avg(). 6.12 does not start at a
// throttled runqueue and stops after the first throttled level; 6.18+ goes through them
// ("sched/fair: Propagate load for throttled cfs_rq").
static void propagate_entity_cfs_rq(sched_entity* se) {
  const bool stop_at_throttled = v612(rq_of(cfs_rq_of(se))->k);
  if (stop_at_throttled && cfs_rq_of(se)->throttled) return;
  for (se = parent_entity(se); se; se = parent_entity(se)) {
    cfs_rq* cfs = cfs_rq_of(se);
    update_load_avg(cfs, se, UPDATE_TG);
    if (stop_at_throttled && cfs->throttled) break;
  }
}

// attach_entity_cfs_rq(): se joins its runqueue's sums outside an enqueue, as a new group's
// entity does when online_fair_sched_group() brings the group up. Aged to now first
// (ATTACH_AGE_LOAD); a never-attached entity has nothing to age.
void attach_entity_cfs_rq(sched_entity* se) {
  cfs_rq* cfs = cfs_rq_of(se);
  update_load_avg(cfs, se, 0);
  attach_entity_load_avg(cfs, se);
  update_tg_load_avg(cfs);
  propagate_entity_cfs_rq(se);
  lb_view_update_pelt(rq_of(cfs));
}

void detach_entity_cfs_rq(sched_entity* se) {
  if (!se->avg.last_update_time) return;  // never attached (a new task not yet woken)
  cfs_rq* cfs = cfs_rq_of(se);
  update_load_avg(cfs, se, 0);
  detach_entity_load_avg(cfs, se);
  update_tg_load_avg(cfs);
  propagate_entity_cfs_rq(se);
  lb_view_update_pelt(rq_of(cfs));
}

// ---- util_est (fair.c): a task's utilisation remembered across its sleeps ----

constexpr unsigned UTIL_EST_WEIGHT_SHIFT = 2;
constexpr unsigned UTIL_EST_MARGIN = SCHED_CAPACITY_SCALE / 100;

static unsigned long task_util(const task_struct* p) { return p->se.avg.util_avg; }
static unsigned long task_runnable(const task_struct* p) { return p->se.avg.runnable_avg; }
static unsigned long _task_util_est(const task_struct* p) { return p->se.avg.util_est & ~UTIL_AVG_UNCHANGED; }

void util_est_enqueue(cfs_rq* cfs, task_struct* p) {
  if (!feat(cfs->rq, __SCHED_FEAT_UTIL_EST)) return;
  cfs->avg.util_est += static_cast<unsigned>(_task_util_est(p));
  lb_view_update_pelt(cfs->rq);
}

void util_est_dequeue(cfs_rq* cfs, task_struct* p) {
  if (!feat(cfs->rq, __SCHED_FEAT_UTIL_EST)) return;
  cfs->avg.util_est -= std::min(cfs->avg.util_est, static_cast<unsigned>(_task_util_est(p)));
  lb_view_update_pelt(cfs->rq);
}

// util_est_update(): at the end of an activation (a sleep), fold the task's util_avg into
// its estimate: a rise is taken at once, a fall through an EWMA of weight 1/4, and not at
// all when within 1% or when the task did not get the CPU it wanted.
void util_est_update(cfs_rq* cfs, task_struct* p, bool task_sleep) {
  if (!feat(cfs->rq, __SCHED_FEAT_UTIL_EST) || !task_sleep) return;
  unsigned ewma = p->se.avg.util_est;
  if (ewma & UTIL_AVG_UNCHANGED) return;  // PELT has not moved since the last update
  const unsigned dequeued = static_cast<unsigned>(task_util(p));
  if (ewma <= dequeued) {
    ewma = dequeued;
  } else {
    const unsigned last_ewma_diff = ewma - dequeued;
    // Within 1%, or it waited for the CPU (runnable > running): keep the estimate.
    if (last_ewma_diff >= UTIL_EST_MARGIN && dequeued + UTIL_EST_MARGIN >= task_runnable(p)) {
      ewma <<= UTIL_EST_WEIGHT_SHIFT;  // ewma - diff / 4
      ewma -= last_ewma_diff;
      ewma >>= UTIL_EST_WEIGHT_SHIFT;
    }
  }
  p->se.avg.util_est = ewma | UTIL_AVG_UNCHANGED;
}

// ---- PELT outside the fair class's own paths ----

// sync_entity_load_avg() + remove_entity_load_avg(): a task leaving its runqueue from
// another CPU (a wakeup elsewhere, an exit) is decayed to the runqueue's last update and
// queued for removal from its sums at the runqueue's next update.
void remove_entity_load_avg(sched_entity* se) {
  cfs_rq* cfs = cfs_rq_of(se);
  __update_load_avg_blocked_se(cfs->avg.last_update_time, se);
  cfs->removed.nr++;
  cfs->removed.util_avg += se->avg.util_avg;
  cfs->removed.load_avg += se->avg.load_avg;
  cfs->removed.runnable_avg += se->avg.runnable_avg;
}

// migrate_se_pelt_lag(): if the old CPU idles, its runqueue was not updated since it went
// idle; Linux estimates the time since then and decays the task to it. The simulator
// knows that time exactly. The runqueue's stood-still time (throttled_pelt_idle) is taken
// out; 6.12 decays nothing while its clock stands still (U64_MAX), while 6.18+'s snapshot,
// taken as the runqueue empties before its clock stops, practically never says so. Simplified:
// the runqueue's state now, where Linux reads the snapshot of when it emptied
// (update_idle_cfs_rq_clock_pelt()).
void migrate_se_pelt_lag(sched_entity* se) {
  cfs_rq* cfs = cfs_rq_of(se);
  const rq* old = rq_of(cfs);
  const sched_avg& a = se->avg;
  const bool decayed = !a.load_sum && !a.runnable_sum && !a.util_sum;  // load_avg_is_decayed()
  if (decayed || !old->curr->is_idle) return;
  if (cfs->pelt_clock_throttled && v612(old->k)) return;
  const u64 now = pelt_clock_at(static_cast<u64>(old->k->now())) - cfs->throttled_clock_pelt_time;
  __update_load_avg_blocked_se(std::max<u64>(a.last_update_time, now), se);
}

void init_entity_runnable_average(sched_entity* se) {
  se->avg = sched_avg{};
  if (entity_is_task(se)) se->avg.load_avg = se->load.weight;
}

void post_init_entity_util_avg(task_struct* p) {
  sched_entity* se = &p->se;
  cfs_rq* cfs = cfs_rq_of(se);
  sched_avg* sa = &se->avg;
  const long cap = (static_cast<long>(SCHED_CAPACITY_SCALE) - static_cast<long>(cfs->avg.util_avg)) / 2;
  if (p->sched_class != &fair_sched_class) {
    // Ready for a later switch to fair: nothing to age until then.
    se->avg.last_update_time = cfs_rq_clock_pelt(cfs);
    return;
  }
  if (cap > 0) {
    if (cfs->avg.util_avg != 0) {
      sa->util_avg = cfs->avg.util_avg * se->load.weight / (cfs->avg.load_avg + 1);
      if (sa->util_avg > static_cast<unsigned long>(cap)) sa->util_avg = static_cast<unsigned long>(cap);
    } else {
      sa->util_avg = static_cast<unsigned long>(cap);
    }
  }
  sa->runnable_avg = sa->util_avg;
}

// skip_blocked_update(): a group entity with no load, no utilisation and nothing to
// propagate has nothing to decay.
static bool skip_blocked_update(const sched_entity* se) {
  return !se->avg.load_avg && !se->avg.util_avg && !group_cfs_rq(se)->propagate;
}

bool sched_balance_update_blocked_averages(rq* rq) {
  rq->last_blocked_load_update_tick = rq->k->jiffies();  // update_blocked_load_tick()
  update_rq_clock(rq);
  // __update_blocked_fair(): every leaf cfs_rq, children before parents (the groups are
  // created parents first, so newest first), each group's entity following its runqueue;
  // the root last. A runqueue whose PELT clock stands still (throttled) is off the leaf list.
  bool decayed = false;  // of the root runqueue: what the balancer reads
  const auto& groups = rq->k->task_groups;
  for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
    task_group* tg = it->get();
    cfs_rq* cfs = tg->cfs_rq[static_cast<size_t>(rq->cpu)];
    if (cfs->pelt_clock_throttled) continue;
    if (update_cfs_rq_load_avg(cfs_rq_clock_pelt(cfs), cfs)) update_tg_load_avg(cfs);
    sched_entity* se = tg->se[static_cast<size_t>(rq->cpu)];
    if (!skip_blocked_update(se)) update_load_avg(cfs_rq_of(se), se, UPDATE_TG);
  }
  decayed |= update_cfs_rq_load_avg(cfs_rq_clock_pelt(&rq->cfs), &rq->cfs) != 0;
  if (decayed) lb_view_update_pelt(rq);
  return decayed;
}

// task_h_load(): a task's share of its CPU's load as the root sees it: its load_avg times
// its runqueue's h_load over the runqueue's load_avg, h_load being the root's load_avg
// scaled down through each group entity's share of its parent's (update_cfs_rq_h_load()).
// Linux refreshes h_load once per jiffy; here it is current.
static unsigned long cfs_rq_h_load(const cfs_rq* cfs) {
  const sched_entity* se = cfs->tg ? cfs->tg->se[static_cast<size_t>(cfs->rq->cpu)] : nullptr;
  if (!se) return cfs->avg.load_avg;
  const cfs_rq* parent = cfs_rq_of(se);
  return static_cast<unsigned long>(static_cast<u64>(cfs_rq_h_load(parent)) * se->avg.load_avg /
                                    (parent->avg.load_avg + 1));
}

unsigned long task_h_load(const task_struct* p) {
  const cfs_rq* cfs = p->se.cfs_rq;
  const unsigned long h_load = cfs_rq_h_load(cfs);
  return static_cast<unsigned long>(static_cast<u64>(p->se.avg.load_avg) * h_load / (cfs->avg.load_avg + 1));
}
unsigned long task_util_est(const task_struct* p) { return std::max(task_util(p), _task_util_est(p)); }

}  // namespace kernel
