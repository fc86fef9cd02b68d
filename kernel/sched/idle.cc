// The idle loop (kernel/sched/idle.c: do_idle(), cpuidle_idle_call()) as far as it decides
// the tick and the idle state. Each round of the loop asks whether to stop the tick: the menu
// governor on a machine with a cpuidle driver (cpuidle_menu), which also picks the state where
// the machine has a deep one; the haltpoll governor in a guest with cpuidle-haltpoll, which
// picks polling or the halt; else the got_tick rule of default_idle_call(). The round then
// enters the idle state, which an interrupt, a wakeup or the end of haltpoll's polling window
// ends (an interrupt ends haltpoll's polling only if it wakes a task). Leaving idle restarts
// a stopped tick (tick_nohz_idle_exit()).
#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/cpuidle.h"
#include "kernel/kernel_impl.h"

namespace kernel {

namespace {

cpuidle_cpu& cpuidle_of(rq* rq) { return rq->k->cpuidle[static_cast<size_t>(rq->cpu)]; }

// cpuidle_idle_call(): one round, up to entering the idle state once the kernel work on the
// CPU is done.
void cpuidle_idle_call(rq* rq) {
  KernelImpl* k = rq->k;
  cpuidle_cpu& c = cpuidle_of(rq);
  const sim::Time now = k->now();
  const hw::Costs& costs = k->machine_.costs;
  // TIF_POLLING_NRFLAG is set for the round once the CPU's kernel work before it is done:
  // do_idle()'s __current_set_polling() after the switch to idle, cpuidle_idle_call()'s
  // exit_idle after an interrupt, which the MWAIT state's driver took with the flag clear.
  // (Each kernel path here runs at one instant and ends in a round or a switch, so the flag
  // is only ever read as this time.)
  c.polling_from = std::max(now, rq->ex.kwork_until);
  c.enter_refused = false;
  // cpuidle_governor_latency_req(): the CPU latency QoS limit (/dev/cpu_dma_latency).
  const sim::Time latency_req = k->cpu_latency_qos_ns;
  if (costs.has_deep_idle()) {
    // menu_select() picks the state in every round, and the tick only matters with NO_HZ.
    const idle_states states{{costs.idle_exit_ns, costs.idle_deep_exit_ns},
                             {costs.idle_shallow_residency(), costs.idle_deep_residency()},
                             latency_req};
    // Without NO_HZ_IDLE, tick_nohz_get_sleep_length() is the stub that answers a tick for
    // both the sleep length and the next clock event: the next idle is never predicted
    // longer than a tick.
    const sim::Time tick = k->cfg_.tick_nsec();
    const bool nohz = k->cfg_.nohz_idle;
    const bool stop_tick =
        menu_select(&c, states, tick, nohz ? tick_nohz_get_sleep_length(rq, now) : tick,
                    nohz ? tick_nohz_next_clock_event(rq, now) : tick, v612(k));
    if (nohz && (stop_tick || c.tick_stopped)) tick_nohz_idle_stop_tick(rq);
  } else if (costs.cpuidle_haltpoll) {
    // haltpoll_select(): a limit of 0 polls, with the tick kept.
    bool stop_tick = false;
    if (latency_req == 0)
      c.state = kHaltpollPoll;
    else
      stop_tick = haltpoll_select(&c);
    if (k->cfg_.nohz_idle && (stop_tick || c.tick_stopped)) tick_nohz_idle_stop_tick(rq);
  } else if (costs.cpuidle_menu && latency_req < costs.idle_exit_ns) {
    // menu_select()'s state 0 under the limit (a driver with one halt state), tick kept.
    c.state = kIdlePoll;
    if (k->cfg_.nohz_idle && c.tick_stopped) tick_nohz_idle_stop_tick(rq);
  } else if (k->cfg_.nohz_idle) {
    bool stop_tick;
    if (costs.cpuidle_menu) {
      stop_tick =
          menu_select_stop_tick(&c, k->cfg_.tick_nsec(), tick_nohz_get_sleep_length(rq, now),
                                costs.idle_exit_ns, v612(k));
    } else {
      // cpuidle_not_available(): default_idle_call(). f4c31b07b136 ("sched: idle: Consolidate
      // the handling of two special cases") stops the tick only in a round after one the
      // tick ended; before it, every round stopped it.
      stop_tick = !k->cfg_.idle_got_tick || c.got_tick;
    }
    if (stop_tick || c.tick_stopped)
      tick_nohz_idle_stop_tick(rq);  // idle_call_stop_or_retain_tick()
  }
  c.time_start = std::max(now, rq->ex.kwork_until);
  if (costs.cpuidle_haltpoll && c.state == kHaltpollPoll && latency_req != 0) {
    // poll_idle(): until a wakeup or the window's end (under a limit of 0 the loop polls
    // again at each window's end: one poll until a wakeup)
    c.poll_time_limit = false;
    k->engine()->arm(&k->haltpoll_timers[static_cast<size_t>(rq->cpu)],
                     c.time_start + c.poll_limit_ns);
  }
}

// The round's idle state, if the CPU reached it, ends at `now`: its residency
// (cpuidle_enter_state()), cpuidle_reflect(), then do_idle()'s got_tick =
// tick_nohz_idle_got_tick() (which menu's reflect has already read and cleared).
__attribute__((always_inline)) inline void cpuidle_state_end(rq* rq, sim::Time now) {
  cpuidle_cpu& c = cpuidle_of(rq);
  if (c.time_start >= 0 && c.time_start <= now) {
    c.last_residency_ns = static_cast<uint64_t>(now - c.time_start);
    if (rq->k->machine_.costs.cpuidle_menu) menu_reflect(&c);
    if (rq->k->machine_.costs.cpuidle_haltpoll) haltpoll_reflect(&c);
  }
  if (rq->k->machine_.costs.cpuidle_haltpoll)
    rq->k->engine()->cancel(&rq->k->haltpoll_timers[static_cast<size_t>(rq->cpu)]);
  c.time_start = -1;
  c.got_tick = c.got_idle_tick;
  c.got_idle_tick = false;
}

}  // namespace

void do_idle_enter(rq* rq) {
  cpuidle_cpu& c = cpuidle_of(rq);
  c.got_tick = false;  // do_idle(): bool got_tick = false
  cpuidle_idle_call(rq);
}

// haltpoll's polling window ended with the CPU still polling: poll_idle() returns with
// poll_time_limit set, and the loop goes round (the governor now halts).
void haltpoll_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  cpuidle_cpu& c = cpuidle_of(rq);
  if (!rq->curr->is_idle || c.state != kHaltpollPoll || c.time_start < 0) return;
  rq->k->set_current(rq->curr, rq->cpu);
  c.poll_time_limit = true;
  cpuidle_state_end(rq, now);
  cpuidle_idle_call(rq);
}

// An interrupt that woke nothing returned to the idle loop. A CPU in haltpoll's poll state
// took it inside poll_idle(), which runs with interrupts enabled and polls on until
// need_resched() or the end of the window it started with: the loop does not go round.
void do_idle_loop(rq* rq) {
  if (rq->k->machine_.costs.cpuidle_haltpoll && cpu_in_haltpoll_poll(rq)) return;
  if (cpu_in_idle_poll(rq)) return;  // menu's poll_idle() likewise
  cpuidle_state_end(rq, rq->k->now());
  cpuidle_idle_call(rq);
}

void cpuidle_polled_before_entry(rq* rq, sim::Time now) {
  cpuidle_cpu& c = cpuidle_of(rq);
  if (!c.enter_refused) return;
  c.enter_refused = false;
  if (c.time_start < 0 || c.time_start > now) return;  // (not reached yet: still awake)
  c.time_start = -1;
  if (rq->ex.idle_exit_until < now) rq->ex.idle_exit_until = now;  // nothing to leave
}

void do_idle_exit(rq* rq) {
  cpuidle_state_end(rq, rq->k->now());
  if (rq->k->cfg_.nohz_idle) tick_nohz_idle_restart_tick(rq);
}

}  // namespace kernel
