// The real-time class: SCHED_FIFO and SCHED_RR, priorities 1..99, mirroring
// kernel/sched/rt.c (v6.12 .. v7.0): wakeup placement (select_task_rq_rt), and push/pull
// balancing so that a queued RT task runs wherever less important work runs.
#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/sched/deadline.h"
#include "kernel/sched/sched.h"

namespace kernel {

static void rt_bitmap_set(rt_rq* rt, int prio) { rt->active.bitmap[prio / 64] |= 1ULL << (prio % 64); }
static void rt_bitmap_clear(rt_rq* rt, int prio) { rt->active.bitmap[prio / 64] &= ~(1ULL << (prio % 64)); }
// sched_find_first_bit() of the active bitmap: the most important queued priority.
static int rt_first_prio(const rt_rq* rt) {
  if (rt->active.bitmap[0]) return __builtin_ctzll(rt->active.bitmap[0]);
  if (rt->active.bitmap[1]) return 64 + __builtin_ctzll(rt->active.bitmap[1]);
  return MAX_RT_PRIO;
}

// __list_add(): p's run_list between prev and next (nullptr: the list's head or tail end).
static void rt_list_insert(rt_prio_list* q, task_struct* p, task_struct* prev, task_struct* next) {
  p->rt.run_list.prev = prev;
  p->rt.run_list.next = next;
  (prev ? prev->rt.run_list.next : q->head) = p;
  (next ? next->rt.run_list.prev : q->tail) = p;
}

// list_add() / list_add_tail() of p's run_list to a priority's list.
static void rt_list_add(rt_prio_list* q, task_struct* p) { rt_list_insert(q, p, nullptr, q->head); }
static void rt_list_add_tail(rt_prio_list* q, task_struct* p) { rt_list_insert(q, p, q->tail, nullptr); }

// list_del_init() of p's run_list from its priority's list.
static void rt_list_del(rt_prio_list* q, task_struct* p) {
  task_struct* next = p->rt.run_list.next;
  task_struct* prev = p->rt.run_list.prev;
  (prev ? prev->rt.run_list.next : q->head) = next;
  (next ? next->rt.run_list.prev : q->tail) = prev;
  p->rt.run_list = {};
}

// ---- Pushable tasks and the overload mask (enqueue/dequeue_pushable_task, rt_set_overload) ----

static void enqueue_pushable_task(rq* rq, task_struct* p) {
  if (p->rt.pushable) return;
  p->rt.pushable = true;
  if (rq->rt.rt_nr_pushable++ == 0) {
    rq->rt.overloaded = true;
    rq->k->rto_count++;
  }
}

static void dequeue_pushable_task(rq* rq, task_struct* p) {
  if (!p->rt.pushable) return;
  p->rt.pushable = false;
  if (--rq->rt.rt_nr_pushable == 0) {
    rq->rt.overloaded = false;
    rq->k->rto_count--;
  }
}

// The most important pushable task of rq that may run on `cpu` (any CPU if cpu < 0).
static task_struct* pick_highest_pushable_task(rq* rq, int cpu) {
  if (!rq->rt.overloaded) return nullptr;
  for (int w = 0; w < 2; ++w) {
    for (uint64_t bits = rq->rt.active.bitmap[w]; bits; bits &= bits - 1) {
      const int prio = w * 64 + __builtin_ctzll(bits);
      for (task_struct* p = rq->rt.active.queue[prio].head; p; p = p->rt.run_list.next)
        if (p->rt.pushable && (cpu < 0 || task_allowed_on(p, cpu))) return p;
    }
  }
  return nullptr;
}

static void update_curr_rt(rq* rq) {
  task_struct* curr = rq->curr;
  if (curr->sched_class != &rt_sched_class) return;
  const s64 delta = static_cast<s64>(rq->clock_task - curr->se.exec_start);
  if (delta <= 0) return;
  curr->se.sum_exec_runtime += static_cast<u64>(delta);
  curr->se.exec_start = rq->clock_task;
}

static void enqueue_task_rt(rq* rq, task_struct* p, int flags) {
  rt_rq* rt = &rq->rt;
  rt_prio_list* q = &rt->active.queue[p->prio];
  if (flags & ENQUEUE_HEAD)
    rt_list_add(q, p);
  else
    rt_list_add_tail(q, p);
  rt_bitmap_set(rt, p->prio);
  rt->rt_nr_running++;
  rt->highest_prio = rt_first_prio(rt);
  p->rt.on_rq = true;
  add_nr_running(rq, 1);
  if (p != rq->curr && p->nr_cpus_allowed > 1) enqueue_pushable_task(rq, p);
}

static bool dequeue_task_rt(rq* rq, task_struct* p, int /*flags*/) {
  rt_rq* rt = &rq->rt;
  update_curr_rt(rq);
  assert(p->rt.on_rq);
  rt_prio_list* q = &rt->active.queue[p->prio];
  rt_list_del(q, p);
  if (!q->head) rt_bitmap_clear(rt, p->prio);
  rt->rt_nr_running--;
  rt->highest_prio = rt_first_prio(rt);
  p->rt.on_rq = false;
  dequeue_pushable_task(rq, p);
  sub_nr_running(rq, 1);
  return true;
}

// requeue_task_rt(): move p to the tail of its priority list (yield, RR expiry), or to its
// head.
static void requeue_task_rt(rq* rq, task_struct* p, bool head = false) {
  if (!p->rt.on_rq) return;
  rt_prio_list* q = &rq->rt.active.queue[p->prio];
  if ((head ? q->head : q->tail) == p) return;
  rt_list_del(q, p);
  if (head)
    rt_list_add(q, p);
  else
    rt_list_add_tail(q, p);
}

static void yield_task_rt(rq* rq) { requeue_task_rt(rq, rq->curr); }

static bool cpupri_find(KernelImpl* k, const task_struct* p);

// check_preempt_equal_prio(): a wakee of curr's priority that cannot move, beside a curr that
// can (some CPU it may use runs at a lower level), goes to the head of its list and curr is
// rescheduled, so the push after the switch moves curr away instead of leaving the wakee
// waiting. A wakee that can go elsewhere itself is left to be pushed or pulled.
static void check_preempt_equal_prio(rq* rq, task_struct* p) {
  KernelImpl* k = rq->k;
  if (rq->curr->nr_cpus_allowed == 1 || !cpupri_find(k, rq->curr)) return;
  if (p->nr_cpus_allowed != 1 && cpupri_find(k, p)) return;
  requeue_task_rt(rq, p, true);
  resched_curr(rq);
}

// wakeup_preempt_rt(): a strictly higher priority (lower prio number) preempts at once; an
// equal one may, to make room (above).
static void wakeup_preempt_rt(rq* rq, task_struct* p, int /*flags*/) {
  if (p->prio < rq->curr->prio) {
    resched_curr(rq);
    return;
  }
  if (p->prio == rq->curr->prio && !test_tsk_need_resched(rq->curr))
    check_preempt_equal_prio(rq, p);
}

static task_struct* pick_task_rt(rq* rq) {
  const int prio = rt_first_prio(&rq->rt);
  if (prio >= MAX_RT_PRIO) return nullptr;
  return rq->rt.active.queue[prio].head;
}

// put_prev_task_rt(): a preempted RT task still queued may now be pushed elsewhere.
static void put_prev_task_rt(rq* rq, task_struct* p) {
  update_curr_rt(rq);
  if (p->rt.on_rq && p->nr_cpus_allowed > 1) enqueue_pushable_task(rq, p);
}

static void set_next_task_rt(rq* rq, task_struct* p, bool /*first*/) {
  p->se.exec_start = rq->clock_task;
  p->se.prev_sum_exec_runtime = p->se.sum_exec_runtime;
  dequeue_pushable_task(rq, p);  // the running task is not pushable
}

// task_tick_rt(): SCHED_RR counts its slice down in ticks (RR_TIMESLICE = 100 ms) and goes
// to the tail of its list when others of its priority wait.
static void task_tick_rt(rq* rq, task_struct* p, int /*queued*/) {
  update_curr_rt(rq);
  if (p->policy != SCHED_RR) return;
  if (--p->rt.time_slice > 0) return;
  const KernelConfig& cfg = rq->k->cfg_;
  p->rt.time_slice = std::max(1, cfg.rr_timeslice_ms * cfg.hz / 1000);
  const rt_prio_list& q = rq->rt.active.queue[p->prio];
  if (q.head != q.tail) {  // two tasks or more at p's priority (run_list.prev != run_list.next)
    requeue_task_rt(rq, p);
    resched_curr(rq);
  }
}

// cpupri (kernel/sched/cpupri.c): the level of what a CPU runs, 0 (CPUPRI_NORMAL) with no
// RT work queued, idle or fair alike (the idle level went in 5.11), else 1..99 for its
// most important RT task.
static int cpupri_of_prio(int prio) { return prio < MAX_RT_PRIO ? MAX_RT_PRIO - 1 - prio : 0; }
static int cpupri_of(KernelImpl* k, int cpu) { return cpupri_of_prio(k->rq_of(cpu)->rt.highest_prio); }

// cpupri_find(): some CPU p may use runs at a level below p's own.
static bool cpupri_find(KernelImpl* k, const task_struct* p) {
  const int task_pri = cpupri_of_prio(p->prio);
  for (int c = 0; c < k->nr_cpus(); ++c)
    if (task_allowed_on(p, c) && cpupri_of(k, c) < task_pri) return true;
  return false;
}

// cpumask_any_and_distribute() run on CPU `self`: the first CPU of `span` that `ok` accepts
// after the last one `self` handed out (wrapping), so that successive choices rotate; -1 if
// none.
template <typename Pred>
static int any_and_distribute(KernelImpl* k, int self, std::span<const int> span, Pred ok) {
  int& prev = k->distribute_cpu_mask_prev[static_cast<size_t>(self)];
  int first = -1;
  for (int c : span) {
    if (!ok(c)) continue;
    if (c > prev) {
      prev = c;
      return c;
    }
    if (first < 0) first = c;
  }
  if (first >= 0) prev = first;
  return first;
}

// find_lowest_rq(): cpupri_find() gives the CPUs p may run on at the lowest level below its
// own; among them, p's own CPU (cache hot), else the current CPU if it is one of them and
// near, else one of them in the smallest domain around p's CPU (rotating), else any. -1 if p
// would preempt nothing anywhere.
static int find_lowest_rq(KernelImpl* k, task_struct* p) {
  if (p->nr_cpus_allowed == 1) return -1;
  const int task_pri = cpupri_of_prio(p->prio);
  int level = task_pri;
  for (int c = 0; c < k->nr_cpus(); ++c)
    if (task_allowed_on(p, c)) level = std::min(level, cpupri_of(k, c));
  if (level >= task_pri) return -1;
  auto lowest = [&](int c) { return task_allowed_on(p, c) && cpupri_of(k, c) == level; };
  const int cpu = p->cpu;
  if (lowest(cpu)) return cpu;
  // The CPU running this code; a thread started from outside forks on its parent's, p->cpu.
  const int self = k->current_cpu() >= 0 ? k->current_cpu() : cpu;
  const int this_cpu = lowest(self) ? self : -1;
  for (const sched_domain& sd : k->rq_of(cpu)->sd) {  // each has SD_WAKE_AFFINE here
    if (this_cpu >= 0 && std::binary_search(sd.span.begin(), sd.span.end(), this_cpu)) return this_cpu;
    const int best = any_and_distribute(k, self, sd.span, lowest);
    if (best >= 0) return best;
  }
  if (this_cpu >= 0) return this_cpu;
  return any_and_distribute(k, self, k->all_cpus, lowest);
}

// The test of select_task_rq_rt() and task_woken_rt(): curr is an RT task that p will not
// displace soon (it cannot move, or it is at least as important).
static bool rt_curr_holds_cpu(const task_struct* curr, const task_struct* p) {
  return curr->sched_class == &rt_sched_class &&
         (curr->nr_cpus_allowed < 2 || curr->prio <= p->prio);
}

// select_task_rq_rt(): stay on prev unless its current task is RT work that p will not
// displace soon; then the lowest CPU, if p would preempt what runs there.
int select_task_rq_rt(KernelImpl* k, task_struct* p, int prev_cpu, int /*wake_flags*/, int /*waker_cpu*/) {
  if (!rt_curr_holds_cpu(k->rq_of(prev_cpu)->curr, p)) return prev_cpu;
  const int target = find_lowest_rq(k, p);
  return target >= 0 && p->prio < k->rq_of(target)->rt.highest_prio ? target : prev_cpu;
}

// A migration by push or pull: the remote runqueue lock and the task's lines cross caches.
static void charge_rt_migration(KernelImpl* k, rq* src, rq* dst) {
  rq* self = k->rq_of(k->current_cpu());
  cpu_charge(self, 2 * k->line_transfer_ns(src->cpu, dst->cpu));
}

// push_rt_task(): move rq's most important pushable task to the CPU running the least
// important work, if it would preempt there; if it should preempt here, reschedule here.
static bool push_rt_task(rq* rq) {
  KernelImpl* k = rq->k;
  task_struct* next = pick_highest_pushable_task(rq, -1);
  if (!next) return false;
  if (next->prio < rq->curr->prio) {
    resched_curr(rq);
    return false;
  }
  const int cpu = find_lowest_rq(k, next);
  if (cpu < 0 || cpu == rq->cpu) return false;
  struct rq* lowest = k->rq_of(cpu);
  charge_rt_migration(k, rq, lowest);
  move_queued_task_locked(rq, next, lowest);
  resched_curr(lowest);
  return true;
}

void push_rt_tasks(rq* rq) {
  while (push_rt_task(rq)) {
  }
}

// task_woken_rt(): a woken RT task that will not run here soon (an RT task at least as
// important runs and cannot go elsewhere, or is not less important) is pushed at once.
static void task_woken_rt(rq* rq, task_struct* p) {
  if (!p->on_cpu && !test_tsk_need_resched(rq->curr) && p->nr_cpus_allowed > 1 &&
      rt_curr_holds_cpu(rq->curr, p))
    push_rt_tasks(rq);
}

// rto_next_cpu(): the next overloaded CPU after the chain's position; past the last one, one
// more pass from the start if a pull asked for it meanwhile; else -1 (the chain ends).
static int rto_next_cpu(KernelImpl* k) {
  for (;;) {
    for (int c = k->rto_cpu + 1; c < k->nr_cpus(); ++c)
      if (k->rq_of(c)->rt.overloaded) return k->rto_cpu = c;
    k->rto_cpu = -1;
    if (k->rto_loop == k->rto_loop_next) return -1;
    k->rto_loop = k->rto_loop_next;
  }
}

// tell_cpu_to_push(): start the push chain at the first overloaded CPU, or, if a chain is
// running, have it make one more pass.
static void tell_cpu_to_push(rq* this_rq) {
  KernelImpl* k = this_rq->k;
  k->rto_loop_next++;
  if (k->rto_cpu >= 0) return;
  const int cpu = rto_next_cpu(k);
  if (cpu >= 0) smp_send_ipi(k, cpu, IPI_RT_PUSH);
}

void rto_push_irq_work_func(rq* rq) {
  KernelImpl* k = rq->k;
  update_rq_clock(rq);
  if (rq->rt.overloaded) push_rt_tasks(rq);
  const int cpu = rto_next_cpu(k);
  if (cpu >= 0) smp_send_ipi(k, cpu, IPI_RT_PUSH);
}

// pull_rt_task(): this rq's priority dropped. Nothing to do when no CPU but this one is
// overloaded. With RT_PUSH_IPI (the default) the overloaded CPUs push to it, one IPI after
// another. Else take the most important pushable task of any overloaded CPU that is more
// important than what would run here and is not about to run where it is.
static void pull_rt_task(rq* this_rq) {
  KernelImpl* k = this_rq->k;
  if (!k->rto_count) return;
  if (k->rto_count == 1 && this_rq->rt.overloaded) return;  // only this CPU is overloaded
  if (k->cfg_.feat(__SCHED_FEAT_RT_PUSH_IPI)) {
    tell_cpu_to_push(this_rq);
    return;
  }
  for (int c = 0; c < k->nr_cpus(); ++c) {
    rq* src = k->rq_of(c);
    if (c == this_rq->cpu || !src->rt.overloaded) continue;
    task_struct* p = pick_highest_pushable_task(src, this_rq->cpu);
    if (!p || p->prio >= this_rq->rt.highest_prio) continue;
    if (p->prio < src->curr->prio) continue;  // it preempts there: leave it
    charge_rt_migration(k, src, this_rq);
    move_queued_task_locked(src, p, this_rq);
  }
}

// balance_rt(): prev left the RT runqueue (blocked) and what remains here is less
// important than it was: pull.
static void balance_rt(rq* rq, task_struct* prev) {
  if (!prev->rt.on_rq && rq->rt.highest_prio > prev->prio) pull_rt_task(rq);
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
    task_woken_rt,
    balance_rt,
};

// ---- The idle class (kernel/sched/idle.c): the per-CPU swapper, always runnable. ----

static void enqueue_task_idle(rq*, task_struct*, int) { assert(false && "idle task enqueued"); }
static bool dequeue_task_idle(rq*, task_struct*, int) { return true; }
static void yield_task_idle(rq*) {}
static void wakeup_preempt_idle(rq* rq, task_struct*, int) { resched_curr(rq); }
static task_struct* pick_task_idle(rq* rq) { return rq->idle; }
// update_curr_idle() (7.0, "sched/deadline: Fix dl_server time accounting"): idle time
// since the idle task last ran or was charged goes to the fair server's budget.
static void update_curr_idle(rq* rq) {
  if (rq->k->cfg_.version != KernelVersion::V7_0) return;
  sched_entity* se = &rq->idle->se;
  const s64 delta_exec = static_cast<s64>(rq->clock_task - se->exec_start);
  if (delta_exec <= 0) return;
  se->exec_start = rq->clock_task;
  dl_server_update_idle(rq, delta_exec);
}
// put_prev_task_idle(): the idle time just ended is the fair server's (6.12, 6.18:
// dl_server_update_idle_time(); 7.0: update_curr_idle()).
static void put_prev_task_idle(rq* rq, task_struct* prev) {
  if (rq->k->cfg_.version == KernelVersion::V7_0)
    update_curr_idle(rq);
  else
    dl_server_update_idle_time(rq, prev);
}
static void set_next_task_idle(rq* rq, task_struct* next, bool) { next->se.exec_start = rq->clock_task; }
static int select_task_rq_idle(KernelImpl*, task_struct*, int prev_cpu, int, int) { return prev_cpu; }
static void task_tick_idle(rq* rq, task_struct*, int) { update_curr_idle(rq); }

const sched_class idle_sched_class = {
    "idle",           enqueue_task_idle,  dequeue_task_idle,  yield_task_idle,
    wakeup_preempt_idle, pick_task_idle,  put_prev_task_idle, set_next_task_idle,
    select_task_rq_idle, task_tick_idle,  update_curr_idle,
};

}  // namespace kernel
