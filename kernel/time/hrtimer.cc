// hrtimer_start(), the sleepers' timerqueue and its expiry (kernel/time/hrtimer.c).
#include "kernel/time/hrtimer.h"

#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/trace_points.h"

namespace kernel {

void hrtimer_start(rq* rq, sim::Timer* t, sim::Time expires) {
  KernelImpl* k = rq->k;
  // No draw without jitter: a profile without it replays exactly as before the key existed.
  const sim::Time late =
      k->machine_.costs.timer_irq_jitter_ns > 0 ? k->timer_irq_jitter(rq->ex.irq_rng) : 0;
  k->engine()->arm(t, sim::add_saturating(expires, late));
}

namespace {

// tick_program_event(): a write of the clock event device for the CPU's next timer (on x86
// the TSC-deadline MSR, a VM exit in a KVM guest), priced as the profile's
// hrtimer_program_ns: hrtimer_interrupt() ends with one once the expired timers ran, before
// irqentry_exit() (a task it woke runs after it), and hrtimer_force_reprogram() makes one when
// the CPU's next timer is cancelled.
void tick_program_event(rq* rq) { cpu_charge(rq, rq->k->machine_.costs.hrtimer_program_ns); }

// Whether t, queued on rq's CPU, is its next timer (cpu_base->next_timer): none of the CPU's
// other hrtimers (the tick, hrtick, the slice-extension and fair-server timers, the first
// sleep timer) expires before it. cpu.max's timers are not counted.
bool hrtimer_is_next(const rq* rq, const sim::Timer* t) {
  if (!t->armed) return false;
  const auto before_t = [t](const sim::Timer& o) {
    return &o != t && o.armed && o.expires < t->expires;
  };
  const cpu_exec& ex = rq->ex;
  if (before_t(ex.tick_timer) || before_t(ex.hrtick_timer) || before_t(ex.slice_timer) ||
      before_t(rq->fair_server.timer))
    return false;
  const auto& heap = rq->k->hrtimer_bases[static_cast<size_t>(rq->cpu)].heap;
  return heap.empty() || !before_t(heap.front().p->sleep_timer);
}

}  // namespace

void hrtimer_interrupt_tail(rq* rq, sim::Time now) {
  // (a test here: most interrupts find no sleep timer queued)
  if (!rq->k->hrtimer_bases[static_cast<size_t>(rq->cpu)].heap.empty())
    __hrtimer_run_queues(rq, now);
  tick_program_event(rq);
}

void hrtimer_reprogram_if_next(rq* rq, const sim::Timer* t) {
  if (hrtimer_is_next(rq, t)) tick_program_event(rq);
}

void hrtimer_try_to_cancel(rq* rq, sim::Timer* t) {
  if (hrtimer_is_next(rq, t)) tick_program_event(rq);
  rq->k->engine()->cancel(t);
}


namespace {

using node = hrtimer_sleeper_base::node;

bool before(const node& a, const node& b) {
  return a.expires != b.expires ? a.expires < b.expires : a.seq < b.seq;
}

void place(std::vector<node>& h, size_t i, const node& n) {
  h[i] = n;
  n.p->hrtimer_pos = static_cast<int>(i);
}

void sift_up(std::vector<node>& h, size_t i) {
  const node n = h[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!before(n, h[parent])) break;
    place(h, i, h[parent]);
    i = parent;
  }
  place(h, i, n);
}

void sift_down(std::vector<node>& h, size_t i) {
  const node n = h[i];
  const size_t size = h.size();
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= size) break;
    if (c + 1 < size && before(h[c + 1], h[c])) ++c;
    if (!before(h[c], n)) break;
    place(h, i, h[c]);
    i = c;
  }
  place(h, i, n);
}

// __remove_hrtimer(): takes p's timer out of its CPU's queue.
void remove_sleeper(hrtimer_sleeper_base* b, task_struct* p) {
  std::vector<node>& h = b->heap;
  const size_t i = static_cast<size_t>(p->hrtimer_pos);
  assert(i < h.size() && h[i].p == p);
  p->hrtimer_pos = -1;
  const node last = h.back();
  h.pop_back();
  if (i == h.size()) return;
  place(h, i, last);
  if (i > 0 && before(last, h[(i - 1) / 2]))
    sift_up(h, i);
  else
    sift_down(h, i);
}

hrtimer_sleeper_base* base_of(KernelImpl* k, const task_struct* p) {
  return &k->hrtimer_bases[p->sleep_timer.arg];
}

}  // namespace

void hrtimer_sleeper_start(rq* rq, task_struct* p, sim::Time soft, sim::Time slack) {
  KernelImpl* k = rq->k;
  assert(p->hrtimer_pos < 0);
  p->sleep_timer.fn = hrtimer_sleep_fn;  // sys_read() may have lent it to a device
  p->sleep_timer.arg = static_cast<uint32_t>(rq->cpu);
  hrtimer_sleeper_base* b = base_of(k, p);
  const sim::Time hard = sim::add_saturating(soft, slack);
  b->heap.push_back({hard, soft, b->next_seq++, p});
  sift_up(b->heap, b->heap.size() - 1);
  hrtimer_start(rq, &p->sleep_timer, hard);
}

void hrtimer_sleeper_cancel(KernelImpl* k, task_struct* p) {
  if (p->hrtimer_pos >= 0) remove_sleeper(base_of(k, p), p);
  k->engine()->cancel(&p->sleep_timer);
}

void __hrtimer_run_queues(rq* rq, sim::Time now) {
  KernelImpl* k = rq->k;
  std::vector<node>& h = k->hrtimer_bases[static_cast<size_t>(rq->cpu)].heap;
  const sim::Timer& tick = rq->ex.tick_timer;
  while (!h.empty()) {
    const node first = h.front();
    if (now < first.softexpires) break;
    // The queued tick, not yet due, ahead of this timer: the walk stops at it.
    if (tick.armed && rq->ex.tick_expires > now && rq->ex.tick_expires < first.expires) break;
    task_struct* p = first.p;
    remove_sleeper(&k->hrtimer_bases[static_cast<size_t>(rq->cpu)], p);
    k->engine()->cancel(&p->sleep_timer);
    trace_hrtimer_expire_entry(rq, TraceHrtimer::hrtimer_wakeup, static_cast<uint64_t>(p->pid));
    try_to_wake_up(k, p, 0);
    trace_hrtimer_expire_exit(rq, TraceHrtimer::hrtimer_wakeup, static_cast<uint64_t>(p->pid));
  }
}

void hrtimer_sleep_fn(sim::Timer* t, sim::Time now) {
  task_struct* p = static_cast<task_struct*>(t->ctx);
  rq* rq = p->kern->rq_of(static_cast<int>(t->arg));
  // (The launcher's stand-in below is no interrupt of the modelled machine: it takes none.)
  if (t == &p->sleep_timer && cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  trace_irq_handler_entry(rq, kIrqLocalTimer, "local_timer");
  if (t == &p->sleep_timer) {
    hrtimer_interrupt_tail(rq, now);  // p's timer is due, so the walk reaches it
  } else {  // the launcher's wakeup stand-in (kernel/fork.cc): no queued timer, no write
    trace_hrtimer_expire_entry(rq, TraceHrtimer::hrtimer_wakeup, static_cast<uint64_t>(p->pid));
    try_to_wake_up(p->kern, p, 0);
    trace_hrtimer_expire_exit(rq, TraceHrtimer::hrtimer_wakeup, static_cast<uint64_t>(p->pid));
  }
  trace_irq_handler_exit(rq, kIrqLocalTimer);
  irqentry_exit(rq);
}

}  // namespace kernel
