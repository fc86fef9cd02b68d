// The real-time class: SCHED_FIFO and SCHED_RR, priorities 1..99, mirroring
// kernel/sched/rt.c (v6.12 .. v7.0). Push/pull balancing is reduced to wakeup placement
// (select_task_rq_rt); see docs/model.md.
#include <algorithm>
#include <cassert>

#include "kernel/kernel.h"
#include "kernel/sched/sched.h"

namespace kernel {

static void rt_bitmap_set(rt_rq* rt, int prio) { rt->bitmap[prio / 64] |= 1ULL << (prio % 64); }
static void rt_bitmap_clear(rt_rq* rt, int prio) { rt->bitmap[prio / 64] &= ~(1ULL << (prio % 64)); }
static int rt_first_prio(const rt_rq* rt) {
  if (rt->bitmap[0]) return __builtin_ctzll(rt->bitmap[0]);
  if (rt->bitmap[1]) return 64 + __builtin_ctzll(rt->bitmap[1]);
  return MAX_RT_PRIO;
}

static void update_curr_rt(rq* rq) {
  task_struct* curr = rq->curr;
  if (curr->sched_class != &rt_sched_class) return;
  const s64 delta = static_cast<s64>(rq->clock - curr->se.exec_start);
  if (delta <= 0) return;
  curr->se.sum_exec_runtime += static_cast<u64>(delta);
  curr->se.exec_start = rq->clock;
}

static void enqueue_task_rt(rq* rq, task_struct* p, int flags) {
  rt_rq* rt = &rq->rt;
  auto& q = rt->queue[p->prio];
  if (flags & ENQUEUE_HEAD)
    q.insert(q.begin(), p);
  else
    q.push_back(p);
  rt_bitmap_set(rt, p->prio);
  rt->rt_nr_running++;
  rt->highest_prio = rt_first_prio(rt);
  p->rt.on_rq = true;
  add_nr_running(rq, 1);
}

static bool dequeue_task_rt(rq* rq, task_struct* p, int flags) {
  rt_rq* rt = &rq->rt;
  update_curr_rt(rq);
  auto& q = rt->queue[p->prio];
  auto it = std::find(q.begin(), q.end(), p);
  assert(it != q.end());
  q.erase(it);
  if (q.empty()) rt_bitmap_clear(rt, p->prio);
  rt->rt_nr_running--;
  rt->highest_prio = rt_first_prio(rt);
  p->rt.on_rq = false;
  sub_nr_running(rq, 1);
  return true;
}

// requeue_task_rt(): move p to the tail of its priority list (yield, RR expiry).
static void requeue_task_rt(rq* rq, task_struct* p) {
  auto& q = rq->rt.queue[p->prio];
  auto it = std::find(q.begin(), q.end(), p);
  if (it == q.end()) return;
  q.erase(it);
  q.push_back(p);
}

static void yield_task_rt(rq* rq) { requeue_task_rt(rq, rq->curr); }

// wakeup_preempt_rt(): a strictly higher priority (lower prio number) preempts at once.
static void wakeup_preempt_rt(rq* rq, task_struct* p, int flags) {
  if (p->prio < rq->curr->prio) resched_curr(rq);
}

static task_struct* pick_task_rt(rq* rq) {
  const int prio = rt_first_prio(&rq->rt);
  if (prio >= MAX_RT_PRIO) return nullptr;
  return rq->rt.queue[prio].front();
}

static void put_prev_task_rt(rq* rq, task_struct* p) { update_curr_rt(rq); }

static void set_next_task_rt(rq* rq, task_struct* p, bool first) {
  p->se.exec_start = rq->clock;
  p->se.prev_sum_exec_runtime = p->se.sum_exec_runtime;
}

// task_tick_rt(): SCHED_RR counts its slice down in ticks (RR_TIMESLICE = 100 ms) and goes
// to the tail of its list when others of its priority wait.
static void task_tick_rt(rq* rq, task_struct* p, int queued) {
  update_curr_rt(rq);
  if (p->policy != SCHED_RR) return;
  if (--p->rt.time_slice > 0) return;
  const KernelConfig& cfg = rq->k->cfg_;
  p->rt.time_slice = std::max(1, cfg.rr_timeslice_ms * cfg.hz / 1000);
  if (rq->rt.queue[p->prio].size() > 1) {
    requeue_task_rt(rq, p);
    resched_curr(rq);
  }
}

// Priority of what a CPU runs, for find_lowest_rq(): idle < fair < RT by prio.
static int cpu_run_prio(Kernel* k, int cpu) {
  rq* rq = k->rq_of(cpu);
  const int rt_prio = rq->rt.highest_prio;
  if (rt_prio < MAX_RT_PRIO) return rt_prio;
  if (rq->nr_running == 0 && rq->curr->is_idle) return MAX_RT_PRIO + 2;  // idle
  return MAX_RT_PRIO + 1;                                                // fair
}

// select_task_rq_rt(): stay on the target unless it runs RT work at least as important;
// then find_lowest_rq(): the CPU running the least important thing, preferring prev's LLC.
int select_task_rq_rt(Kernel* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu) {
  rq* target = k->rq_of(prev_cpu);
  task_struct* curr = target->curr;
  const bool curr_rt = curr->sched_class == &rt_sched_class;
  if (!(curr_rt && (curr->nr_cpus_allowed < 2 || curr->prio <= p->prio)) &&
      target->rt.highest_prio > p->prio)
    return prev_cpu;
  int best = -1, best_prio = -1;
  for (int c = 0; c < k->nr_cpus(); ++c) {
    if (!task_allowed_on(p, c)) continue;
    int pr = cpu_run_prio(k, c);
    if (pr <= p->prio) continue;  // would not preempt there
    pr = pr * 2 + (cpus_share_cache(k, c, prev_cpu) ? 1 : 0);
    if (pr > best_prio) {
      best_prio = pr;
      best = c;
    }
  }
  return best >= 0 ? best : prev_cpu;
}

const sched_class rt_sched_class = {
    "rt",
    enqueue_task_rt,
    dequeue_task_rt,
    yield_task_rt,
    wakeup_preempt_rt,
    pick_task_rt,
    put_prev_task_rt,
    set_next_task_rt,
    select_task_rq_rt,
    task_tick_rt,
    update_curr_rt,
};

// ---- The idle class (kernel/sched/idle.c): the per-CPU swapper, always runnable. ----

static void enqueue_task_idle(rq*, task_struct*, int) { assert(false && "idle task enqueued"); }
static bool dequeue_task_idle(rq*, task_struct*, int) { return true; }
static void yield_task_idle(rq*) {}
static void wakeup_preempt_idle(rq* rq, task_struct*, int) { resched_curr(rq); }
static task_struct* pick_task_idle(rq* rq) { return rq->idle; }
static void put_prev_task_idle(rq*, task_struct*) {}
static void set_next_task_idle(rq*, task_struct*, bool) {}
static int select_task_rq_idle(Kernel*, task_struct* p, int prev_cpu, int, int) { return prev_cpu; }
static void task_tick_idle(rq*, task_struct*, int) {}
static void update_curr_idle(rq*) {}

const sched_class idle_sched_class = {
    "idle",           enqueue_task_idle,  dequeue_task_idle,  yield_task_idle,
    wakeup_preempt_idle, pick_task_idle,  put_prev_task_idle, set_next_task_idle,
    select_task_rq_idle, task_tick_idle,  update_curr_idle,
};

}  // namespace kernel
