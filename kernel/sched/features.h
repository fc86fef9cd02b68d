// Scheduler feature flags, mirroring kernel/sched/features.h of v6.12, v6.18 and v7.0 on a
// kernel without PREEMPT_RT (TTWU_QUEUE is off only under PREEMPT_RT; RT_PUSH_IPI needs
// HAVE_RT_PUSH_IPI, which every SMP kernel with IRQ_WORK has, so x86 always).
// Each entry: SCHED_FEAT(NAME, default in 6.12, in 6.18, in 7.0): the one table of defaults
// (config.cc reads it). A feature a version lacks is listed off there and has no effect in
// that profile. Every entry is settable as `--set sched_feat.NAME=true|false`.
// Only features the model implements are listed; docs/model.md names those left out.

// Preserve lag across sleep and wake (EEVDF placement strategy #1; #2 if disabled).
SCHED_FEAT(PLACE_LAG, true, true, true)
// Give a new task half a slice for its first deadline, so it starts soon without a burst.
SCHED_FEAT(PLACE_DEADLINE_INITIAL, true, true, true)
// Keep the relative deadline of an entity dequeued without sleeping (migration).
SCHED_FEAT(PLACE_REL_DEADLINE, true, true, true)
// Hold off wakeup preemption until curr reaches its protected point (0-lag / slice end).
SCHED_FEAT(RUN_TO_PARITY, true, true, true)
// A waking task with a shorter slice may cancel curr's protection and preempt.
SCHED_FEAT(PREEMPT_SHORT, true, true, true)
// A fair wakeup makes the wakee the runqueue's next buddy (cfs_rq->next), picked ahead of
// the EEVDF choice while eligible. 6.12 and 6.18 set it on every non-fork wakeup; 7.0 only
// when no queued buddy has an earlier deadline, and then a WF_SYNC wakeup may preempt.
// Off in every modelled version (enabled in 6.19-rc1 by aceccac58ad7, disabled again in
// 6.19-rc7 by 4f70f106bca1).
SCHED_FEAT(NEXT_BUDDY, false, false, false)
// Let the pick honour cfs_rq->next (6.18, 7.0). 6.12 has no such flag: its pick honours the
// buddy under NEXT_BUDDY, so the 6.12 profile lists it off and ignores it.
SCHED_FEAT(PICK_BUDDY, false, true, true)
// An ineligible task that blocks stays queued ("delayed") until it has burnt its negative lag.
SCHED_FEAT(DELAY_DEQUEUE, true, true, true)
// A delayed task that is dequeued or woken has its positive lag clipped to 0.
SCHED_FEAT(DELAY_ZERO, true, true, true)
// Allow a fair wakeup to preempt the running fair task at all.
SCHED_FEAT(WAKEUP_PREEMPTION, true, true, true)
// Time slice expiry with a high-resolution timer instead of the tick.
SCHED_FEAT(HRTICK, false, false, false)
// Queue remote wakeups on the target's wake list (IPI) when it does not share the LLC or is idle.
SCHED_FEAT(TTWU_QUEUE, true, true, true)
// RT pull by IPI: a CPU whose RT priority drops has the overloaded CPUs push to it, one IPI
// after another, instead of taking their tasks itself.
SCHED_FEAT(RT_PUSH_IPI, true, true, true)
// Limit the idle-CPU scan of select_idle_cpu() by the LLC's utilisation.
SCHED_FEAT(SIS_UTIL, true, true, true)
// wake_affine(): prefer an idle CPU (waker's or prev) when one is available.
SCHED_FEAT(WA_IDLE, true, true, true)
// wake_affine(): otherwise compare the loads of the waker's and prev CPU.
SCHED_FEAT(WA_WEIGHT, true, true, true)
// wake_affine(): bias that comparison towards prev by half the imbalance margin.
SCHED_FEAT(WA_BIAS, true, true, true)
// util_est: a task's utilisation as the EWMA of its util_avg at each sleep, so a task that
// slept keeps counting as big; the CPU's utilisation is the max of PELT's and this.
SCHED_FEAT(UTIL_EST, true, true, true)
// Newly-idle balancing of a domain runs only as often as it succeeds: a 1024-sided die
// against the domain's success ratio (33cf66d88306: mainline 6.19, so 7.0, and stable 6.18.5
// and 6.12.65; the 6.12 profile is 6.12.0, without it).
SCHED_FEAT(NI_RANDOM, false, true, true)
