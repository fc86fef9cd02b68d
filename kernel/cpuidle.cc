// The menu governor (drivers/cpuidle/governors/menu.c: menu_select(), menu_update(),
// get_typical_interval()): whether an idle CPU stops its tick and, on a machine with a deep
// idle state, which of its two states it enters; and the haltpoll governor of a KVM guest
// (drivers/cpuidle/governors/haltpoll.c) (docs/model.md).
#include "kernel/cpuidle.h"

#include <algorithm>

namespace kernel {

namespace {

constexpr uint32_t kResolution = 1024;                           // RESOLUTION
constexpr uint32_t kDecay = 8;                                   // DECAY
constexpr uint64_t kMaxInteresting = 50000ull * 1000;            // MAX_INTERESTING: 50 ms
constexpr uint64_t kResidencyThresholdNs = 15 * 1000;            // RESIDENCY_THRESHOLD_NS
constexpr uint64_t kNoTimer = static_cast<uint64_t>(INT64_MAX);  // KTIME_MAX

int which_bucket(uint64_t duration_ns) {
  if (duration_ns < 10ull * 1000) return 0;
  if (duration_ns < 100ull * 1000) return 1;
  if (duration_ns < 1000ull * 1000) return 2;
  if (duration_ns < 10000ull * 1000) return 3;
  if (duration_ns < 100000ull * 1000) return 4;
  return 5;
}

// menu_update(): how long the last idle state really was against the prediction
// from the next timer, folded into that bucket's correction factor and the
// interval history.
// Inlined in each menu_select version (an idle entry's path).
__attribute__((always_inline)) inline void menu_update(cpuidle_cpu* c, sim::Time tick_nsec,
                                                       sim::Time exit_latency_ns) {
  menu_device& d = c->menu;
  uint64_t measured_ns;
  if (d.tick_wakeup && d.next_timer_ns > static_cast<uint64_t>(tick_nsec)) {
    // The tick woke the CPU well before its next timer: the idle would have
    // gone on, so count it as long (9/10 of MAX_INTERESTING) rather than as the
    // tick's length.
    measured_ns = 9 * kMaxInteresting / 10;
  } else {
    measured_ns = c->last_residency_ns;
    const auto exit = static_cast<uint64_t>(exit_latency_ns);
    if (measured_ns > 2 * exit)
      measured_ns -= exit;  // the residency includes the exit
    else
      measured_ns /= 2;
  }
  measured_ns = std::min(measured_ns, d.next_timer_ns);
  uint32_t factor = d.correction_factor[d.bucket];
  factor -= factor / kDecay;
  if (d.next_timer_ns > 0 && measured_ns < kMaxInteresting)
    factor += static_cast<uint32_t>(kResolution * measured_ns / d.next_timer_ns);
  else
    factor += kResolution;
  d.correction_factor[d.bucket] = static_cast<uint16_t>(factor);
  d.update_intervals(static_cast<uint32_t>(std::min<uint64_t>(measured_ns / 1000, UINT32_MAX)));
}

// The next timer scaled by its bucket's correction factor, rounded to a microsecond
// (menu_select()'s timer_us, in ns).
__attribute__((always_inline)) inline uint64_t scaled_timer_ns(const menu_device& d) {
  constexpr uint64_t kScale = kResolution * kDecay * 1000;
  const uint32_t factor = d.correction_factor[d.bucket];
  if (d.next_timer_ns <= UINT64_MAX / (kResolution * kDecay) - kScale)  // no overflow
    return (d.next_timer_ns * factor + kScale / 2) / kScale * 1000;
  return static_cast<uint64_t>(std::min<unsigned __int128>(
      (static_cast<unsigned __int128>(d.next_timer_ns) * factor + kScale / 2) / kScale * 1000,
      kNoTimer));
}

}  // namespace

static_assert(sizeof(cpuidle_cpu) == 128, "one aligned pair of cache lines");

menu_device::menu_device() {
  std::fill(correction_factor, correction_factor + kBuckets, kResolution * kDecay);
}

void menu_device::update_intervals(uint32_t interval_us) {
  // The old sample leaves the sorted list and the new one goes in its place: a shift of the
  // samples between the two spots.
  int i =
      static_cast<int>(std::find(sorted, sorted + kIntervals, intervals[interval_ptr]) - sorted);
  while (i > 0 && sorted[i - 1] > interval_us) {
    sorted[i] = sorted[i - 1];
    --i;
  }
  while (i < kIntervals - 1 && sorted[i + 1] < interval_us) {
    sorted[i] = sorted[i + 1];
    ++i;
  }
  sorted[i] = interval_us;
  intervals[interval_ptr] = interval_us;
  interval_ptr = static_cast<uint8_t>((interval_ptr + 1) % kIntervals);
}

// 6.12 drops the largest samples until the rest agree; 6.15 on (8de7606f0fe2) drop
// whichever end lies further from the average. Both give up (UINT_MAX: the next timer
// alone predicts) below six samples: 85975daeaa4d (6.15) returned the maximum of four or
// more there, and 10fad4012234 (6.18-rc2, also in 6.12.y) reverted it.
uint32_t menu_typical_interval(const menu_device& d, bool v612) {
  // Linux's loop, over the samples kept sorted: those a pass keeps lie between two
  // thresholds, so each pass is a range of the sorted samples, and dropping the samples
  // equal to the smallest or largest one moves an end. The sums follow the range; the
  // results are Linux's to the bit (the variance of 6.12's second pass, the sum of
  // (value - avg)^2 over the range with avg truncated, expands exactly in integers).
  // (tests/kernel/cpuidle_test.cc compares it with the direct loop on random histories.)
  constexpr int kN = menu_device::kIntervals;
  const uint32_t* v = d.sorted;
  int lo = 0, hi = kN;
  // The first pass keeps samples <= INT_MAX (6.12), < UINT_MAX (6.15 on).
  const uint32_t keep = v612 ? static_cast<uint32_t>(INT32_MAX) : UINT32_MAX - 1;
  while (hi > 0 && v[hi - 1] > keep) --hi;
  uint64_t sum = 0, sum_sq = 0;
  for (int i = lo; i < hi; ++i) {
    sum += v[i];
    sum_sq += uint64_t{v[i]} * v[i];
  }
  for (;;) {
    const unsigned divisor = static_cast<unsigned>(hi - lo);
    if (divisor == 0 || v[hi - 1] == 0) return UINT32_MAX;  // if (!max)
    const uint64_t max = v[hi - 1], min = v[lo];
    const uint64_t avg = sum / divisor;
    const uint64_t variance =
        v612 ? (sum_sq - 2 * avg * sum + uint64_t{divisor} * avg * avg) / divisor
             : sum_sq / divisor - avg * avg;
    if (variance <= UINT64_MAX / 36 &&
        ((avg * avg > variance * 36 && divisor * 4 >= kN * 3) || variance <= 400))
      return static_cast<uint32_t>(avg);
    if (divisor * 4 <= kN * 3) return UINT32_MAX;
    if (!v612 && avg - min > max - avg) {
      for (; lo < hi && v[lo] == min; ++lo) {
        sum -= v[lo];
        sum_sq -= uint64_t{v[lo]} * v[lo];
      }
    } else {
      for (; hi > lo && v[hi - 1] == max; --hi) {
        sum -= v[hi - 1];
        sum_sq -= uint64_t{v[hi - 1]} * v[hi - 1];
      }
    }
  }
}

bool menu_select(cpuidle_cpu* c, const idle_states& s, sim::Time tick_nsec,
                 sim::Time next_timer_ns, sim::Time delta_tick_ns, bool v612) {
  menu_device& d = c->menu;
  if (d.needs_update) {
    // the state the last idle was in (poll_idle() has no exit latency)
    menu_update(c, tick_nsec, c->state == kIdlePoll ? 0 : s.exit_ns[c->state]);
    d.needs_update = false;
  }
  const auto tick = static_cast<uint64_t>(tick_nsec);
  const auto shallow = static_cast<uint64_t>(s.residency_ns[kIdleShallow]);
  const auto deep = static_cast<uint64_t>(s.residency_ns[kIdleDeep]);
  const uint32_t typical_us = menu_typical_interval(d, v612);
  uint64_t predicted_ns = typical_us == UINT32_MAX ? kNoTimer : uint64_t{typical_us} * 1000;
  uint64_t delta_tick;
  if ((!v612 && c->tick_stopped) || predicted_ns > kResidencyThresholdNs) {
    d.next_timer_ns = next_timer_ns < 0 ? kNoTimer : static_cast<uint64_t>(next_timer_ns);
    d.bucket = static_cast<uint8_t>(which_bucket(d.next_timer_ns));
    predicted_ns = std::min(scaled_timer_ns(d), predicted_ns);
    delta_tick = delta_tick_ns < 0 ? kNoTimer : static_cast<uint64_t>(delta_tick_ns);
  } else {
    // No timer lookup: the closest timer is taken as far away and the tick half a tick off.
    d.next_timer_ns = kNoTimer;
    d.bucket = static_cast<uint8_t>(which_bucket(kNoTimer));
    delta_tick = tick / 2;
  }
  // "latency_req == 0 ... || latency_req < drv->states[1].exit_latency_ns": state 0,
  // poll_idle(), and the tick kept (CPUIDLE_FLAG_POLLING).
  if (s.latency_req_ns < s.exit_ns[kIdleShallow]) {
    c->state = kIdlePoll;
    return false;
  }
  c->state = kIdleShallow;
  // A timer before the shallow state's residency: state 0 whatever the prediction (a polling
  // state on Linux's drivers, the shallow one here), with the tick kept.
  if (d.next_timer_ns < shallow) return false;
  // With the tick stopped a short prediction could strand the CPU in a shallow state: the
  // time to the next timer picks the state instead.
  if (c->tick_stopped && predicted_ns < tick) predicted_ns = d.next_timer_ns;
  // The deepest state whose target residency the prediction covers and whose exit latency
  // the CPU latency limit allows. A deep state beyond a prediction of a tick or more: with the
  // tick running, keep it and stay shallow (the loop asks again at the next tick); with it
  // stopped, go deep if the shallow state is below a tick and the deep one fits before the
  // next clock event.
  const bool deep_allowed = s.exit_ns[kIdleDeep] <= s.latency_req_ns;
  if (deep <= predicted_ns && deep_allowed) {
    c->state = kIdleDeep;
  } else if (predicted_ns >= tick) {
    if (!c->tick_stopped) {
      predicted_ns = shallow;
    } else {
      if (shallow < tick && deep <= delta_tick && deep_allowed) c->state = kIdleDeep;
      return true;
    }
  }
  // "Don't stop the tick if ... the expected idle duration is shorter than the tick period
  // length"; a deep state that would then outlast the next clock event is given up.
  if (predicted_ns < tick && !c->tick_stopped) {
    if (c->state == kIdleDeep && deep > delta_tick) c->state = kIdleShallow;
    return false;
  }
  return true;
}

bool haltpoll_select(cpuidle_cpu* c) {
  if (c->poll_limit_ns == 0 || (c->state == kHaltpollPoll && c->poll_time_limit)) {
    c->state = kHaltpollHalt;
    return true;
  }
  c->state = kHaltpollPoll;  // after a halt, or a poll a wakeup ended: poll again
  return false;
}

void haltpoll_reflect(cpuidle_cpu* c) {
  if (c->state != kHaltpollHalt) return;
  // adjust_poll_limit(): a halt the window would have covered (up to guest_halt_poll_ns)
  // grows it; a longer one shrinks it, to 0 once below guest_halt_poll_grow_start
  // (496d0a648509, 6.9), as growing starts there.
  const uint64_t block_ns = c->last_residency_ns;
  if (block_ns > c->poll_limit_ns && block_ns <= kGuestHaltPollNs) {
    uint64_t val = uint64_t{c->poll_limit_ns} * kGuestHaltPollGrow;
    val = std::min<uint64_t>(std::max<uint64_t>(val, kGuestHaltPollGrowStart), kGuestHaltPollNs);
    c->poll_limit_ns = static_cast<uint32_t>(val);
  } else if (block_ns > kGuestHaltPollNs) {
    c->poll_limit_ns /= kGuestHaltPollShrink;
    if (c->poll_limit_ns < kGuestHaltPollGrowStart) c->poll_limit_ns = 0;
  }
}

void menu_reflect(cpuidle_cpu* c) {
  c->menu.needs_update = true;
  c->menu.tick_wakeup = c->got_idle_tick;  // tick_nohz_idle_got_tick(), which clears it
  c->got_idle_tick = false;
}

bool menu_select_stop_tick(cpuidle_cpu* c, sim::Time tick_nsec, sim::Time next_timer_ns,
                           sim::Time exit_latency_ns, bool v612) {
  menu_device& d = c->menu;
  if (d.needs_update) {
    menu_update(c, tick_nsec, exit_latency_ns);
    d.needs_update = false;
  }
  const auto tick = static_cast<uint64_t>(tick_nsec);
  // predicted_ns = get_typical_interval() in ns; computed only where it decides something:
  // when every sample exceeds 15 us, it does too (an average or maximum of them, or
  // UINT_MAX), and when the next timer already predicts less than a tick, the minimum of the
  // two does too.
  const auto typical_ns = [&d, v612] {
    const uint32_t us = menu_typical_interval(d, v612);
    return us == UINT32_MAX ? kNoTimer : uint64_t{us} * 1000;
  };
  uint64_t predicted_ns = 0;
  bool known = false;
  // 6.18 on (and stable) look up the next timer whenever the tick is stopped as well.
  bool timer_branch =
      (!v612 && c->tick_stopped) || uint64_t{d.sorted[0]} * 1000 > kResidencyThresholdNs;
  if (!timer_branch) {
    predicted_ns = typical_ns();
    known = true;
    timer_branch = predicted_ns > kResidencyThresholdNs;
  }
  if (!timer_branch) {  // a short typical interval: no need to look up the next timer
    d.next_timer_ns = kNoTimer;
    d.bucket = static_cast<uint8_t>(which_bucket(kNoTimer));
    return c->tick_stopped;  // predicted_ns <= 15 us
  }
  // The next timer, scaled by how long idle has lasted against it lately.
  d.next_timer_ns = next_timer_ns < 0 ? kNoTimer : static_cast<uint64_t>(next_timer_ns);
  d.bucket = static_cast<uint8_t>(which_bucket(d.next_timer_ns));
  const uint64_t timer_ns = scaled_timer_ns(d);
  // "Don't stop the tick if the selected state is a polling one or if the expected idle
  // duration is shorter than the tick period length" (a polling state is picked only for
  // idles far below a tick); once the tick is stopped, menu leaves it stopped.
  if (c->tick_stopped) return true;
  if (timer_ns < tick) return false;
  if (!known) predicted_ns = typical_ns();
  return std::min(timer_ns, predicted_ns) >= tick;
}

}  // namespace kernel
