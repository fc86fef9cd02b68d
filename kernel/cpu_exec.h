// The simulated hardware thread under each rq: when curr runs user code, when the CPU is
// busy in the kernel, and what that costs. Simulator-only (no Linux counterpart); the Linux
// paths in core.cc and entry/common.cc call these at the points where time is spent.
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

// The clock as the kernel path running on rq's CPU reads it: the event's time plus the kernel
// work already charged in this path (entry, handler). What Linux's ktime_get() would return
// at that point of the path.
inline sim::Time kernel_clock(const rq* rq, sim::Time now) {
  return rq->ex.kwork_until > now ? rq->ex.kwork_until : now;
}

// Curr stops running user code at `now` (it entered the kernel): settle its progress.
void cpu_enter_kernel(rq* rq, sim::Time now);
// The CPU spends `cost` more ns in the kernel before user code (or idle) resumes.
void cpu_charge(rq* rq, sim::Time cost);
// cpu_charge() of a kernel section that runs with preemption enabled (task work on the way to
// user mode): under full and lazy preemption, an interrupt that ends inside it with the hard
// need-resched bit set preempts it there (irqentry_exit() -> cpu_preempt_section()).
void cpu_charge_preemptible(rq* rq, sim::Time cost);
// Whether an interrupt ending at `now` may preempt curr's kernel section (see above).
// REQUIRES: KernelImpl::preemptible_sections (a section was charged in the run).
bool cpu_in_preemptible_section(const rq* rq, sim::Time now);
// The rest of curr's preemptible section, from `now`, leaves this CPU's kernel work and
// waits for curr's next turn on a CPU, where cpu_switch() charges it.
void cpu_preempt_section(rq* rq, sim::Time now);
// Timer t's interrupt reaches rq's CPU at `now`. An idle CPU in its idle state (the idle task
// current, no kernel work in progress) first leaves that state, which takes the state's exit
// latency (idle_exit_ns, idle_deep_exit_ns for the deep one); interrupts that come while it
// does wait for the same end. Returns true when t was re-armed for that end: the handler
// returns and runs then.
bool cpu_idle_exit_defer(rq* rq, sim::Timer* t, sim::Time now);
// The exit latency of the idle state rq's CPU chose in its idle loop's round.
sim::Time idle_exit_latency(const rq* rq);
// rq's CPU is in the deep idle state at `now` (entered, not yet left): a state that does not
// poll TIF_NEED_RESCHED, whatever idle_polling says of the shallow one.
bool cpu_in_deep_idle(const rq* rq, sim::Time now);
// The kernel path is done: curr resumes its program step when the kernel work ends.
void cpu_return_to_user(rq* rq);
// Accounting for rq->curr changing from prev to next at now (busy/idle, wait, runtime).
void cpu_switch(rq* rq, task_struct* prev, task_struct* next, sim::Time now);
// A spinner's word changed at `now` on CPU `writer`: make running spinners observe it.
void cpu_word_changed(KernelImpl* k, UserWord* w, int writer, sim::Time now);
void spin_unlink(task_struct* p);
// Timer callbacks.
void cpu_resume_timer_fn(sim::Timer* t, sim::Time now);
// Schedules an IPI of kind `bits` to `cpu`, sent by the CPU running now.
void smp_send_ipi(KernelImpl* k, int cpu, unsigned bits);
// The idle loop (kernel/sched/idle.cc). do_idle(): rq's CPU switched to its idle task and
// takes the loop's first round; do_idle_loop(): an interrupt left it idle with nothing to
// run, and the loop goes round again; do_idle_exit(): need_resched() ended do_idle(), for a
// task or for a new do_idle() (tick_nohz_idle_exit()).
void do_idle_enter(rq* rq);
void do_idle_loop(rq* rq);
void do_idle_exit(rq* rq);
// haltpoll: the CPU's polling window ended (KernelImpl::haltpoll_timers).
void haltpoll_timer_fn(sim::Timer* t, sim::Time now);
// haltpoll: rq's CPU polls in its idle round (the poll state), so it needs no IPI and
// takes interrupts without an exit.
bool cpu_in_haltpoll_poll(const rq* rq);
// The idle CPU is in menu's poll_idle() (kIdlePoll, under a CPU latency limit).
bool cpu_in_idle_poll(const rq* rq);
// set_nr_if_polling()'s test at `now`: rq's CPU is idle with TIF_POLLING_NRFLAG set, so
// setting need_resched() wakes it without an IPI. An MWAIT state (idle_polling) polls from
// the idle loop's round start through the state's exit, not while the CPU handles an
// interrupt (the driver's MWAIT clears the flag before interrupts are enabled) nor in the
// deep state; haltpoll's poll state polls through interrupts (poll_idle() takes them).
bool cpu_idle_polling(const rq* rq, sim::Time now);
// A wakeup noticed by polling at `now` whose need_resched() was set during the round's own
// work, before its idle state's start: call_cpuidle()'s current_clr_polling_and_test() saw
// it and entered no state (-EBUSY: no residency, no reflect), so there is no state to leave.
void cpuidle_polled_before_entry(rq* rq, sim::Time now);
// NO_HZ_IDLE (kernel/time/tick.cc): tick_nohz_idle_stop_tick(), asked by a round of the idle
// loop, and the restart as the CPU leaves idle (tick_nohz_idle_exit()), each with its write
// of the clock event device. tick_nohz_get_sleep_length(): what an idle governor reads, the
// time from `now` to the CPU's next hrtimer (its first sleep timer), -1 if it has none.
void tick_nohz_idle_stop_tick(rq* rq);
void tick_nohz_idle_restart_tick(rq* rq);
sim::Time tick_nohz_get_sleep_length(const rq* rq, sim::Time now);
// Its *delta_next: the time to the CPU's next clock event, the tick while it runs or an
// earlier hrtimer; -1 for none.
sim::Time tick_nohz_next_clock_event(const rq* rq, sim::Time now);
// The tick's expiry grid of rq's CPU (skew_tick): the first expiry after `now`.
sim::Time tick_next_expiry(const rq* rq, sim::Time now);
// Arms rq's tick to expire at `expires` (a point of its grid).
void tick_sched_timer_start(rq* rq, sim::Time expires);
// The interrupt handlers.
void tick_sched_timer_fn(sim::Timer* t, sim::Time now);
void ipi_timer_fn(sim::Timer* t, sim::Time now);
// do_idle()'s flush_smp_call_function_queue() before schedule_idle(): runs the work a
// polled wakeup queued for rq's idle CPU whose notice is still due; true if there was some.
bool flush_polled_ipi(rq* rq);
// do_idle()'s end at `now`, in task context, once need_resched() ended its loop (a polled
// wakeup, a wakeup from the CPU's own softirq work): flush_polled_ipi(), then
// schedule_idle(), which ends do_idle() even when it finds nothing to run (__schedule():
// the tick restarted by tick_nohz_idle_exit(), which Linux runs before the flush, at the
// same instant here), and the way into what it picked.
void do_idle_schedule(rq* rq, sim::Time now);
void hrtick_timer_fn(sim::Timer* t, sim::Time now);
// Closes the accounting of `rq` at `end`.
void cpu_finish(rq* rq, sim::Time end);

}  // namespace kernel
