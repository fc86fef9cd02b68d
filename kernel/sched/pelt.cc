// PELT's arithmetic (kernel/sched/pelt.c). History is cut into periods of 1024 us; a period
// p periods ago weighs y^p with y^32 = 1/2. Each *_sum holds the weighted time (in units of
// 1024 ns) the entity was queued / runnable / running, and *_avg = *_sum / the largest sum
// possible so far, so 1024 means "all the time".
#include "kernel/sched/pelt.h"

namespace kernel {

namespace {

// runnable_avg_yN_inv[n] = (2^32 - 1) * y^n, truncated (Documentation/scheduler/sched-pelt.c
// generates kernel/sched/sched-pelt.h so). tests/kernel/pelt_test.cc checks it against pow().
constexpr uint32_t runnable_avg_yN_inv[LOAD_AVG_PERIOD] = {
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb,
    0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9,
    0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9,
    0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a,
    0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
};

inline u64 mul_u64_u32_shr(u64 a, uint32_t mul, unsigned shift) {
  return static_cast<u64>((static_cast<unsigned __int128>(a) * mul) >> shift);
}

// Not libdivide (used elsewhere for one fixed divisor): here the divisor is one of 1024
// known at compile time, and one multiply-high by a constexpr table needs no per-divisor
// branch or shift. m = floor(2^64 / d) + 1 for every divider d: m * d = 2^64 + e with 0 < e <= d, so for
// x < 2^32, x * m / 2^64 = x / d + (an error below 2^-32 < 1/d) and floors to x / d.
struct Reciprocals {
  u64 m[1024];
  constexpr Reciprocals() : m() {
    for (uint32_t i = 0; i < 1024; ++i) m[i] = ~u64{0} / (PELT_MIN_DIVIDER + i) + 1;
  }
};
constexpr Reciprocals kReciprocal;

// y^n as decay_load() applies it: n / 32 halvings, then the table's y^(n % 32); nothing is
// left after 63 half-lives. Built once per update for all the sums it decays.
struct Decay {
  explicit Decay(u64 n)
      : gone(n > static_cast<u64>(LOAD_AVG_PERIOD) * 63),
        halvings(gone ? 0 : static_cast<unsigned>(n) / LOAD_AVG_PERIOD),
        y_n(gone ? 0 : runnable_avg_yN_inv[n % LOAD_AVG_PERIOD]) {}
  u64 operator()(u64 val) const { return gone ? 0 : mul_u64_u32_shr(val >> halvings, y_n, 32); }
  bool gone;
  unsigned halvings;
  uint32_t y_n;
};

// The contribution of p crossed boundaries: d1 (the end of the old period) decayed p times,
// the full periods in between, and d3 (the start of the current one) undecayed.
uint32_t __accumulate_pelt_segments(const Decay& y_p, uint32_t d1, uint32_t d3) {
  const uint32_t c1 = static_cast<uint32_t>(y_p(d1));
  const uint32_t c2 = LOAD_AVG_MAX - static_cast<uint32_t>(y_p(LOAD_AVG_MAX)) - 1024;
  return c1 + c2 + d3;
}

// Adds `delta` (1024 ns units) of history; decays the sums first if it crosses period
// boundaries. Returns the number of boundaries crossed.
u64 accumulate_sum(u64 delta, sched_avg* sa, unsigned long load, unsigned long runnable,
                   int running) {
  uint32_t contrib = static_cast<uint32_t>(delta);  // no boundary: all of delta is recent
  delta += sa->period_contrib;
  const u64 periods = delta / 1024;
  if (periods) {
    const Decay y_p(periods);
    sa->load_sum = y_p(sa->load_sum);
    sa->runnable_sum = y_p(sa->runnable_sum);
    sa->util_sum = static_cast<uint32_t>(y_p(sa->util_sum));
    delta %= 1024;
    // Without load, runnable and running are 0 too and contrib goes unused.
    if (load) contrib = __accumulate_pelt_segments(y_p, 1024 - sa->period_contrib,
                                                   static_cast<uint32_t>(delta));
  }
  sa->period_contrib = static_cast<uint32_t>(delta);
  if (load) sa->load_sum += load * contrib;
  if (runnable) sa->runnable_sum += runnable * contrib << SCHED_CAPACITY_SHIFT;
  if (running) sa->util_sum += contrib << SCHED_CAPACITY_SHIFT;
  return periods;
}

// Inlined into each of its three callers (the entity, blocked entity and runqueue updates):
// they run a few hundred thousand times a simulated second, from the tick on every busy CPU,
// and the call (register saves, argument moves) was a seventh of the work.
[[gnu::always_inline]] inline int ___update_load_sum(u64 now, sched_avg* sa, unsigned long load,
                                                    unsigned long runnable, int running) {
  u64 delta = now - sa->last_update_time;
  if (static_cast<s64>(delta) < 0) {  // clock went back (Linux: sched_clock init)
    sa->last_update_time = now;
    return 0;
  }
  delta >>= 10;  // 1024 ns ~ 1 us is the unit
  if (!delta) return 0;
  sa->last_update_time += delta << 10;
  // A dequeued curr (or an emptied cfs_rq still naming it) is neither runnable nor running.
  if (!load) runnable = running = 0;
  return accumulate_sum(delta, sa, load, runnable, running) ? 1 : 0;
}

// The averages against the largest sum possible at this point of the period (not at its
// end, which would read the unfinished part of the period as idle).
[[gnu::always_inline]] inline void ___update_load_avg(sched_avg* sa, unsigned long load) {
  sa->load_avg = static_cast<unsigned long>(pelt_div(load * sa->load_sum, sa->period_contrib));
  sa->runnable_avg = static_cast<unsigned long>(pelt_div(sa->runnable_sum, sa->period_contrib));
  sa->util_avg = static_cast<unsigned long>(pelt_div(sa->util_sum, sa->period_contrib));
}

}  // namespace

u64 pelt_div(u64 x, uint32_t period_contrib) {
  if (x >> 32) return x / (PELT_MIN_DIVIDER + period_contrib);
  return static_cast<u64>((static_cast<unsigned __int128>(x) * kReciprocal.m[period_contrib]) >> 64);
}

u64 decay_load(u64 val, u64 n) { return Decay(n)(val); }

// se_weight() and se_runnable() of a task entity: its weight; queued and not delayed.
int __update_load_avg_blocked_se(u64 now, sched_entity* se) {
  if (!___update_load_sum(now, &se->avg, 0, 0, 0)) return 0;
  ___update_load_avg(&se->avg, se->load.weight);
  return 1;
}

int __update_load_avg_se(u64 now, cfs_rq* cfs_rq, sched_entity* se) {
  // se_runnable(): a group entity is as runnable as its runqueue's runnable tasks.
  const unsigned long runnable = se->sched_delayed ? 0 : entity_is_task(se) ? (se->on_rq ? 1 : 0)
                                                                            : se->runnable_weight;
  if (!___update_load_sum(now, &se->avg, se->on_rq ? 1 : 0, runnable, cfs_rq->curr == se))
    return 0;
  ___update_load_avg(&se->avg, se->load.weight);
  // cfs_se_util_change(): clear UTIL_AVG_UNCHANGED (the flag is only ever set with UTIL_EST).
  se->avg.util_est &= ~UTIL_AVG_UNCHANGED;
  return 1;
}

int __update_load_avg_cfs_rq(u64 now, cfs_rq* cfs_rq) {
  if (!___update_load_sum(now, &cfs_rq->avg, cfs_rq->load, cfs_rq->h_nr_runnable,
                          cfs_rq->curr != nullptr))
    return 0;
  ___update_load_avg(&cfs_rq->avg, 1);
  return 1;
}

}  // namespace kernel
