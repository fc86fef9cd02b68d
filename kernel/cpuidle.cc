// The menu governor's tick decision (drivers/cpuidle/governors/menu.c:
// menu_select(), menu_update(), get_typical_interval()). Which idle state it
// picks is not modelled: every idle state here exits in the profile's
// idle_exit_ns (docs/model.md).
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
void menu_update(cpuidle_cpu* c, sim::Time tick_nsec, sim::Time exit_latency_ns) {
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
  d.correction_factor[d.bucket] = factor;
  d.intervals[d.interval_ptr] =
      static_cast<uint32_t>(std::min<uint64_t>(measured_ns / 1000, UINT32_MAX));
  d.interval_ptr = (d.interval_ptr + 1) % menu_device::kIntervals;
}

}  // namespace

menu_device::menu_device() {
  std::fill(correction_factor, correction_factor + kBuckets, kResolution * kDecay);
}

// 6.12 drops the largest samples until the rest agree and gives up (UINT_MAX)
// below six; 6.15 on (8de7606f0fe2, 85975daeaa4d) drop whichever end lies
// further from the average and, giving up with four or more left, return their
// maximum.
uint32_t menu_typical_interval(const menu_device& d, bool v612) {
  constexpr int kN = menu_device::kIntervals;
  int64_t min_thresh = -1, max_thresh = static_cast<int64_t>(v612 ? INT32_MAX + 1ll : UINT32_MAX);
  for (;;) {
    uint64_t max = 0, min = UINT32_MAX, sum = 0, sum_sq = 0;
    unsigned divisor = 0;
    for (uint32_t value : d.intervals) {
      if (static_cast<int64_t>(value) <= min_thresh || static_cast<int64_t>(value) >= max_thresh)
        continue;
      divisor++;
      sum += value;
      sum_sq += static_cast<uint64_t>(value) * value;
      max = std::max<uint64_t>(max, value);
      min = std::min<uint64_t>(min, value);
    }
    if (max == 0) return UINT32_MAX;
    const uint64_t avg = sum / divisor;
    uint64_t variance;
    if (v612) {  // the second pass over the samples, from the truncated average
      variance = 0;
      for (uint32_t value : d.intervals) {
        if (static_cast<int64_t>(value) >= max_thresh) continue;
        const int64_t diff = static_cast<int64_t>(value) - static_cast<int64_t>(avg);
        variance += static_cast<uint64_t>(diff * diff);
      }
      variance /= divisor;
    } else {
      variance = sum_sq / divisor - avg * avg;
    }
    if (variance <= UINT64_MAX / 36 &&
        ((avg * avg > variance * 36 && divisor * 4 >= kN * 3) || variance <= 400))
      return static_cast<uint32_t>(avg);
    if (divisor * 4 <= kN * 3)
      return !v612 && divisor >= kN / 2 ? static_cast<uint32_t>(max) : UINT32_MAX;
    if (!v612 && avg - min > max - avg)
      min_thresh = static_cast<int64_t>(min);
    else
      max_thresh = static_cast<int64_t>(max);
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
  const uint32_t typical_us = menu_typical_interval(d, v612);
  uint64_t predicted_ns = typical_us == UINT32_MAX ? kNoTimer : uint64_t{typical_us} * 1000;
  if (predicted_ns > kResidencyThresholdNs) {
    // The next timer, scaled by how long idle has lasted against it lately.
    d.next_timer_ns = next_timer_ns < 0 ? kNoTimer : static_cast<uint64_t>(next_timer_ns);
    d.bucket = which_bucket(d.next_timer_ns);
    const unsigned __int128 scaled =
        static_cast<unsigned __int128>(d.next_timer_ns) * d.correction_factor[d.bucket] +
        kResolution * kDecay * 1000 / 2;
    const unsigned __int128 timer_us = scaled / (kResolution * kDecay * 1000);
    predicted_ns =
        static_cast<uint64_t>(std::min<unsigned __int128>(timer_us * 1000, predicted_ns));
  } else {  // a short typical interval: no need to look up the next timer
    d.next_timer_ns = kNoTimer;
    d.bucket = which_bucket(kNoTimer);
  }
  // "Don't stop the tick if the selected state is a polling one or if the
  // expected idle duration is shorter than the tick period length" (a polling
  // state is picked only for idles far below a tick); once the tick is stopped,
  // menu leaves it stopped.
  return c->tick_stopped || predicted_ns >= static_cast<uint64_t>(tick_nsec);
}

}  // namespace kernel
