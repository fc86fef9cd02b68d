// cpuidle as far as the scheduler sees it: per CPU, the idle loop's tick flags, the idle
// state it entered, and the menu governor's history (drivers/cpuidle/governors/menu.c),
// which decide whether an idle CPU keeps its tick and, with a deep state, which state.
#pragma once
#include <cstdint>

#include "sim/time.h"

namespace kernel {

struct rq;

// menu.c's struct menu_device: the last eight measured idle intervals (us) and
// the correction factors of next-timer predictions, by how far the next timer
// was.
struct menu_device {
  static constexpr int kIntervals = 8;  // INTERVALS
  static constexpr int kBuckets = 6;    // BUCKETS (6.12: 12, the upper half for iowaiters)
  bool needs_update = false;            // menu_reflect() ran: menu_update() at the next select
  bool tick_wakeup = false;             // the last idle state ended by the tick
  uint8_t bucket = 0;
  uint8_t interval_ptr = 0;
  // Fixed point, RESOLUTION * DECAY (8192) = 1: never above it, so 16 bits hold it.
  uint16_t correction_factor[kBuckets];
  uint64_t next_timer_ns = 0;
  uint32_t intervals[kIntervals] = {};
  uint32_t sorted[kIntervals] = {};  // the intervals in ascending order
  menu_device();
  // menu_update_intervals(): the next interval of the ring (and its place among the sorted).
  void update_intervals(uint32_t interval_us);
};

// Per CPU: the tick_sched flags the idle loop reads and the idle state's
// residency. A CPU's entry fills one aligned pair of cache lines: each idle
// period reads and writes most of it.
struct alignas(128) cpuidle_cpu {
  bool tick_stopped = false;   // ts->tick_stopped: NO_HZ idle stopped this CPU's tick
  bool got_idle_tick = false;  // ts->got_idle_tick: the tick ran while the CPU was idle
  bool got_tick = false;       // do_idle()'s got_tick: the last loop round ended by the tick
  // dev->last_state_idx: the state of this round (or the last one), kIdleShallow or
  // kIdleDeep (only on a machine with a deep state), kIdlePoll under a CPU latency limit;
  // with haltpoll, kHaltpollPoll or kHaltpollHalt.
  uint8_t state = 0;
  uint32_t poll_limit_ns = 0;  // haltpoll: dev->poll_limit_ns, the polling window
  // cpuidle_enter_state()'s time_start: when the CPU entered its idle state, -1
  // when it is not in one (busy, or in the kernel on the idle task: an
  // interrupt, the loop's own work).
  sim::Time time_start = -1;
  uint64_t last_residency_ns = 0;  // dev->last_residency_ns of the last idle state
  // The idle task's TIF_POLLING_NRFLAG: set from this time on, when the idle loop's
  // round started once the kernel work before it (the switch to idle, an interrupt)
  // was done; clear before it.
  sim::Time polling_from = 0;
  menu_device menu;
  bool poll_time_limit = false;  // haltpoll: dev->poll_time_limit, the last poll timed out
  // set_nr_if_polling() set need_resched() before the round's state was entered (during the
  // round's own work): call_cpuidle() enters no state.
  bool enter_refused = false;
};

constexpr uint8_t kIdleShallow = 0;
constexpr uint8_t kIdleDeep = 1;
// With the menu governor: poll_idle(), the drivers' state 0 (CPUIDLE_FLAG_POLLING), which
// menu_select() picks when the CPU latency QoS limit is below the first halt state's exit
// latency. The CPU spins with TIF_POLLING_NRFLAG set and has nothing to leave.
constexpr uint8_t kIdlePoll = 2;
// cpuidle-haltpoll's states: the poll state (CPUIDLE_FLAG_POLLING) and the halt.
constexpr uint8_t kHaltpollPoll = 0;
constexpr uint8_t kHaltpollHalt = 1;
// The haltpoll governor's module parameters at their defaults (governors/haltpoll.c):
// guest_halt_poll_ns, _grow, _grow_start, _shrink (guest_halt_poll_allow_shrink on).
constexpr uint32_t kGuestHaltPollNs = 200000;
constexpr uint32_t kGuestHaltPollGrow = 2;
constexpr uint32_t kGuestHaltPollGrowStart = 50000;
constexpr uint32_t kGuestHaltPollShrink = 2;

// A driver's two idle states as menu reads them (struct cpuidle_state: exit_latency_ns,
// target_residency_ns): the shallow one and the deep one.
struct idle_states {
  sim::Time exit_ns[2];
  sim::Time residency_ns[2];
  sim::Time latency_req_ns = INT64_MAX;  // cpuidle_governor_latency_req()
};

// menu_select()'s answer to whether the tick may stop (*stop_tick). `tick_nsec`
// is TICK_NSEC, `next_timer_ns` the time to the CPU's next timer event
// (tick_nohz_get_sleep_length(); a negative value for none), `exit_latency_ns`
// the idle state's, `v612` selects 6.12's get_typical_interval(). Updates the
// history first if the last idle state ended since.
bool menu_select_stop_tick(cpuidle_cpu* c, sim::Time tick_nsec, sim::Time next_timer_ns,
                           sim::Time exit_latency_ns, bool v612);
// menu_select() on a driver with a deep state: the state to enter (c->state) and, returned,
// whether the tick may stop. Below the shallow state's exit latency the CPU latency limit
// picks kIdlePoll with the tick kept; below the deep one's, no deep state. `delta_tick_ns` is
// tick_nohz_get_sleep_length()'s *delta_next, the time to the CPU's next clock event (its tick
// or a timer), negative for none. With the same history it answers the tick question as
// menu_select_stop_tick() does, unless the deep state's residency lies beyond a prediction of
// a tick or more (then it keeps the tick).
bool menu_select(cpuidle_cpu* c, const idle_states& s, sim::Time tick_nsec,
                 sim::Time next_timer_ns, sim::Time delta_tick_ns, bool v612);
// haltpoll_select(): the state to enter (c->state) and, returned, whether the tick may stop:
// halt while there is no polling window or right after a poll that timed out, else poll
// (with the tick kept).
bool haltpoll_select(cpuidle_cpu* c);
// haltpoll_reflect(): the state just ended, having lasted last_residency_ns; a halt moves
// the polling window (adjust_poll_limit()).
void haltpoll_reflect(cpuidle_cpu* c);
// menu_reflect(): the idle state just ended, having lasted last_residency_ns.
void menu_reflect(cpuidle_cpu* c);
// get_typical_interval(): the recent intervals' average if they agree,
// UINT32_MAX if not.
uint32_t menu_typical_interval(const menu_device& d, bool v612);

}  // namespace kernel
