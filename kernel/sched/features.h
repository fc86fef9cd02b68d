// Scheduler feature flags, mirroring kernel/sched/features.h (v6.12, v6.18, v7.0).
// Each entry: SCHED_FEAT(NAME, default in 7.0). Kernel versions differ only in defaults
// (see config.cc); every entry is settable as `--set sched_feat.NAME=true|false`.
// Only features the model implements are listed; docs/model.md names those left out.

// Preserve lag across sleep and wake (EEVDF placement strategy #1; #2 if disabled).
SCHED_FEAT(PLACE_LAG, true)
// Give a new task half a slice for its first deadline, so it starts soon without a burst.
SCHED_FEAT(PLACE_DEADLINE_INITIAL, true)
// Keep the relative deadline of an entity dequeued without sleeping (migration).
SCHED_FEAT(PLACE_REL_DEADLINE, true)
// Hold off wakeup preemption until curr reaches its protected point (0-lag / slice end).
SCHED_FEAT(RUN_TO_PARITY, true)
// A waking task with a shorter slice may cancel curr's protection and preempt.
SCHED_FEAT(PREEMPT_SHORT, true)
// An ineligible task that blocks stays queued ("delayed") until it has burnt its negative lag.
SCHED_FEAT(DELAY_DEQUEUE, true)
// A delayed task that is dequeued or woken has its positive lag clipped to 0.
SCHED_FEAT(DELAY_ZERO, true)
// Allow a fair wakeup to preempt the running fair task at all.
SCHED_FEAT(WAKEUP_PREEMPTION, true)
// Time slice expiry with a high-resolution timer instead of the tick.
SCHED_FEAT(HRTICK, false)
// Queue remote wakeups on the target's wake list (IPI) when it does not share the LLC or is idle.
SCHED_FEAT(TTWU_QUEUE, true)
// RT pull by IPI: a CPU whose RT priority drops has the overloaded CPUs push to it, one IPI
// after another, instead of taking their tasks itself.
SCHED_FEAT(RT_PUSH_IPI, true)
// Limit the idle-CPU scan of select_idle_cpu() by the LLC's utilisation.
SCHED_FEAT(SIS_UTIL, true)
// wake_affine(): prefer an idle CPU (waker's or prev) when one is available.
SCHED_FEAT(WA_IDLE, true)
// wake_affine(): otherwise compare the loads of the waker's and prev CPU.
SCHED_FEAT(WA_WEIGHT, true)
// wake_affine(): bias that comparison towards prev by half the imbalance margin.
SCHED_FEAT(WA_BIAS, true)
// util_est: a task's utilisation as the EWMA of its util_avg at each sleep, so a task that
// slept keeps counting as big; the CPU's utilisation is the max of PELT's and this.
SCHED_FEAT(UTIL_EST, true)
// Newly-idle balancing of a domain runs only as often as it succeeds: a 1024-sided die
// against the domain's success ratio (33cf66d88306: mainline 6.19, so 7.0, and stable 6.18.5;
// off in the 6.12 profile).
SCHED_FEAT(NI_RANDOM, true)
