// High-resolution timers as the scheduler uses them: armed on one CPU, expiring as a local
// timer interrupt. Mirrors the part of kernel/time/hrtimer.c the model needs.
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

// hrtimer_start(): arms t to expire at `expires` as an interrupt on rq's CPU. Its handler
// runs uniform(0, costs.timer_irq_jitter_ns) after the expiry (the hardware's delivery
// spread), drawn from rq's own stream so that one CPU's timers do not move another's draws.
void hrtimer_start(rq* rq, sim::Timer* t, sim::Time expires);

// hrtimer_wakeup(): a nanosleep timer's interrupt wakes its task (timer.arg = the CPU).
void hrtimer_sleep_fn(sim::Timer* t, sim::Time now);

}  // namespace kernel
