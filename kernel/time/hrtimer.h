// High-resolution timers as the scheduler uses them: armed on one CPU, expiring as a local
// timer interrupt. Mirrors the part of kernel/time/hrtimer.c the model needs.
#pragma once
#include <vector>

#include "kernel/sched/sched.h"

namespace kernel {

// hrtimer_start(): arms t to expire at `expires` as an interrupt on rq's CPU. Its handler
// runs uniform(0, costs.timer_irq_jitter_ns) after the expiry (the hardware's delivery
// spread), drawn from rq's own stream so that one CPU's timers do not move another's draws.
void hrtimer_start(rq* rq, sim::Timer* t, sim::Time expires);

// One CPU's sleep timers (nanosleep, clock_nanosleep): the part of its hrtimer_cpu_base's
// CLOCK_MONOTONIC timerqueue they make up. Ordered as the timerqueue is, by hard expiry
// with ties in arming order; a min-heap here, with each task's place in it.
struct hrtimer_sleeper_base {
  struct node {
    sim::Time expires;      // hard: soft + the task's timer slack; the interrupt is armed here
    sim::Time softexpires;  // what the task asked for; any interrupt from then on may run it
    u64 seq;                // arming order, for ties
    task_struct* p;
  };
  std::vector<node> heap;
  u64 next_seq = 0;
};

// hrtimer_nanosleep()'s timer: hrtimer_set_expires_range_ns(soft, slack), then queued on
// rq's CPU with its interrupt armed at the hard expiry (hrtimer_start()).
void hrtimer_sleeper_start(rq* rq, task_struct* p, sim::Time soft, sim::Time slack);

// hrtimer_cancel() of p's sleep timer, queued or not.
void hrtimer_sleeper_cancel(KernelImpl* k, task_struct* p);

// __hrtimer_run_queues(): every local timer interrupt of rq's CPU (the tick, a sleeper's, the
// hrtick, ...) ends by running, in hard-expiry order, the sleep timers whose soft expiry has
// come, up to the first that has not. The tick counts in that order: a sleeper queued behind
// the next tick's expiry waits for it.
void __hrtimer_run_queues(rq* rq, sim::Time now);

// hrtimer_interrupt()'s tail, which every hrtimer interrupt handler ends with: the CPU's due
// sleep timers (__hrtimer_run_queues(); nothing to walk when none is queued), then the write
// of the clock event device for its next expiry (tick_program_event(): on x86 the
// TSC-deadline MSR, a VM exit in a KVM guest, priced as the profile's hrtimer_program_ns);
// before irqentry_exit(), so a task it woke runs after it.
void hrtimer_interrupt_tail(rq* rq, sim::Time now);

// hrtimer_reprogram(): t, just started on rq's CPU by that CPU, writes the clock event device
// if it has become the CPU's next timer.
void hrtimer_reprogram_if_next(rq* rq, const sim::Timer* t);

// hrtimer_try_to_cancel() of t, queued on rq's CPU by that CPU: removing the CPU's next timer
// reprograms the device for the one after (__remove_hrtimer() -> hrtimer_force_reprogram()).
void hrtimer_try_to_cancel(rq* rq, sim::Timer* t);

// hrtimer_wakeup(): a sleep timer's own interrupt (timer.arg = the CPU) runs the queue, which
// wakes its task and any other whose window has begun.
void hrtimer_sleep_fn(sim::Timer* t, sim::Time now);

}  // namespace kernel
