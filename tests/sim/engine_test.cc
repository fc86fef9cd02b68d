// The engine: total order by (time, insertion), re-arming, O(1) cancellation.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/rng.h"
#include "sim/stats.h"

namespace {
std::vector<int>* g_log;
void record(sim::Timer* t, sim::Time) { g_log->push_back(static_cast<int>(t->arg)); }
}  // namespace

TEST(Engine, EventsAtTheSameTimeFireInInsertionOrder) {
  sim::Engine e;
  std::vector<int> log;
  g_log = &log;
  sim::Timer t[4];
  for (int i = 0; i < 4; ++i) {
    t[i].fn = record;
    t[i].arg = i;
  }
  e.arm(&t[2], 10);
  e.arm(&t[0], 10);
  e.arm(&t[3], 5);
  e.arm(&t[1], 10);
  e.run_until(100);
  EXPECT_EQ(log, (std::vector<int>{3, 2, 0, 1}));
  EXPECT_EQ(e.now(), 100);
}

TEST(Engine, ReArmingReplacesAndCancelledTimersNeverFire) {
  sim::Engine e;
  std::vector<int> log;
  g_log = &log;
  sim::Timer a, b;
  a.fn = b.fn = record;
  a.arg = 1;
  b.arg = 2;
  e.arm(&a, 10);
  e.arm(&a, 30);  // replaces
  e.arm(&b, 20);
  e.cancel(&b);
  e.run_until(100);
  EXPECT_EQ(log, (std::vector<int>{1}));
  EXPECT_EQ(e.events_fired(), 1u);
}

// Times near the largest one: the wheel's window then reaches past it. A timer armed at
// the last time from a callback fires after those queued for that time earlier.
sim::Engine* g_engine;
sim::Timer* g_late;
void record_and_arm_late(sim::Timer* t, sim::Time now) {
  record(t, now);
  if (g_late) g_engine->arm(std::exchange(g_late, nullptr), sim::kTimeMax);
}

TEST(Engine, TimersAtTheEndOfTimeFireInOrder) {
  sim::Engine e;
  std::vector<int> log;
  g_log = &log;
  sim::Timer t[6];
  for (int i = 0; i < 6; ++i) {
    t[i].fn = record_and_arm_late;
    t[i].arg = i;
  }
  g_engine = &e;
  g_late = nullptr;
  e.arm(&t[0], sim::kTimeMax);
  e.arm(&t[1], sim::kTimeMax - 100000000);
  e.arm(&t[2], sim::kTimeMax);
  e.arm(&t[3], sim::kTimeMax - 5);
  e.arm(&t[4], 1000);
  e.run_until(sim::kTimeMax - 100000000);
  g_late = &t[5];  // armed by t[3], at kTimeMax
  e.run_until(sim::kTimeMax);
  EXPECT_EQ(log, (std::vector<int>{4, 1, 3, 0, 2, 5}));
  EXPECT_EQ(e.now(), sim::kTimeMax);
}

TEST(Engine, ManyStaleEntriesAreCompactedWithoutChangingOrder) {
  sim::Engine e;
  std::vector<int> log;
  g_log = &log;
  sim::Timer t[2];
  t[0].fn = t[1].fn = record;
  t[0].arg = 0;
  t[1].arg = 1;
  for (int i = 0; i < 100000; ++i) e.arm(&t[i % 2], 1000 + (i % 7));
  // Tens of thousands of armings were queued and went stale at once; the pool was
  // compacted whenever it was full and they outnumbered the two live ones.
  EXPECT_LE(e.queued(), 1100u);
  e.run_until(2000);
  // Each timer fires once, at its last arming's time (an arming replaces the earlier ones):
  // t[0] at 1000 + 99998 % 7 = 1003, then t[1] at 1000 + 99999 % 7 = 1004.
  EXPECT_EQ(log, (std::vector<int>{0, 1}));
  EXPECT_LT(e.queued(), 10u);
}

// A brute-force model of the engine's contract: lazy entries, each (time, sequence), the
// least taken first; an entry whose timer was re-armed or cancelled since is dropped; one
// whose timer was pushed back is queued again (with a new sequence) when it comes up.
class BruteForceQueue {
 public:
  explicit BruteForceQueue(int n) : armed_(n), expires_(n), qseq_(n) {}
  void arm(int id, sim::Time when) {
    if (armed_[id] && when >= expires_[id]) {
      expires_[id] = when;
      return;
    }
    armed_[id] = true;
    expires_[id] = when;
    qseq_[id] = seq_;
    q_.push_back({when, seq_++, id});
  }
  void cancel(int id) { armed_[id] = false; }
  // Takes the next timer due at or before `end`; returns its id or -1.
  int next(sim::Time end, sim::Time* when) {
    for (;;) {
      if (q_.empty()) return -1;
      size_t best = 0;
      for (size_t i = 1; i < q_.size(); ++i)
        if (q_[i].when < q_[best].when || (q_[i].when == q_[best].when && q_[i].seq < q_[best].seq))
          best = i;
      const Entry e = q_[best];
      if (e.when > end) return -1;
      q_.erase(q_.begin() + static_cast<long>(best));
      if (!armed_[e.id] || qseq_[e.id] != e.seq) continue;
      if (e.when < expires_[e.id]) {
        qseq_[e.id] = seq_;
        q_.push_back({expires_[e.id], seq_++, e.id});
        continue;
      }
      armed_[e.id] = false;
      *when = e.when;
      return e.id;
    }
  }

 private:
  struct Entry {
    sim::Time when;
    uint64_t seq;
    int id;
  };
  std::vector<Entry> q_;
  uint64_t seq_ = 0;
  std::vector<bool> armed_;
  std::vector<sim::Time> expires_;
  std::vector<uint64_t> qseq_;
};

// What a firing timer does next, drawn from `rng`: re-arm itself or another timer at a
// distance from 0 (a tie) to hours (every radix level), or cancel another; sometimes stop
// the run. Times are rounded up to a multiple of `quantum`, so a large quantum makes ties
// common. Both sides of the test own one, seeded alike, and draw in the same order.
struct Driver {
  sim::Rng rng;
  int n;
  sim::Time quantum;
  bool use_stop;
  template <typename Arm, typename Cancel>
  void act(sim::Time now, Arm arm, Cancel cancel) {
    const int id = static_cast<int>(rng.next_u64() % static_cast<uint64_t>(n));
    const uint64_t r = rng.next_u64();
    static constexpr sim::Time kScale[] = {0, 3, 300, 70000, 20000000, 3000000000, 1LL << 45};
    const sim::Time d = kScale[r % 7] == 0 ? 0 : static_cast<sim::Time>((r >> 8) % kScale[r % 7]);
    const sim::Time w = (now + d + quantum - 1) / quantum * quantum;
    if ((r >> 40) % 5 == 0)
      cancel(id);
    else
      arm(id, w);
  }
  // After an event: two actions; returns whether the run stops here.
  template <typename Arm, typename Cancel>
  bool react(sim::Time now, Arm arm, Cancel cancel) {
    act(now, arm, cancel);
    act(now, arm, cancel);
    return use_stop && rng.next_u64() % 64 == 0;
  }
};

struct Fired {
  sim::Time when;
  int id;
  bool operator==(const Fired&) const = default;
};

struct EngineSide {
  sim::Engine e;
  std::vector<sim::Timer> timers;
  Driver d;
  std::vector<Fired> log;
};

void engine_side_fire(sim::Timer* t, sim::Time now) {
  auto* s = static_cast<EngineSide*>(t->ctx);
  s->log.push_back({now, static_cast<int>(t->arg)});
  if (s->d.react(now, [&](int id, sim::Time w) { s->e.arm(&s->timers[id], w); },
                 [&](int id) { s->e.cancel(&s->timers[id]); }))
    s->e.stop();
}

// Runs the engine and the brute-force queue side by side in slices of `slice`, with
// stop() from callbacks and armings from outside between run_until calls, and checks that
// they fire the same timers at the same times and agree on now() and on stopping.
void check_against_brute_force(uint64_t seed, int timers, sim::Time quantum, bool use_stop,
                               sim::Time slice, size_t events) {
  EngineSide s{sim::Engine{}, std::vector<sim::Timer>(timers), Driver{sim::Rng(seed, 1), timers, quantum, use_stop}, {}};
  for (int i = 0; i < timers; ++i) {
    s.timers[i].fn = engine_side_fire;
    s.timers[i].ctx = &s;
    s.timers[i].arg = static_cast<uint32_t>(i);
  }
  BruteForceQueue ref(timers);
  Driver rd{sim::Rng(seed, 1), timers, quantum, use_stop};
  std::vector<Fired> ref_log;
  sim::Time ref_now = 0;
  auto eng_arm = [&](int id, sim::Time w) { s.e.arm(&s.timers[id], w); };
  auto eng_cancel = [&](int id) { s.e.cancel(&s.timers[id]); };
  auto ref_arm = [&](int id, sim::Time w) { ref.arm(id, w); };
  auto ref_cancel = [&](int id) { ref.cancel(id); };
  for (int i = 0; i < timers; ++i) {  // the same initial armings on both sides
    s.d.act(0, eng_arm, eng_cancel);
    rd.act(0, ref_arm, ref_cancel);
  }
  for (sim::Time end = slice; ref_log.size() < events; end += slice) {
    for (;;) {
      const bool done = s.e.run_until(end);
      bool ref_done = true;
      sim::Time when;
      for (int id; (id = ref.next(end, &when)) >= 0;) {
        ref_log.push_back({when, id});
        ref_now = when;
        if (rd.react(when, ref_arm, ref_cancel)) {
          ref_done = false;
          break;
        }
      }
      if (ref_done) ref_now = std::max(ref_now, end);
      ASSERT_EQ(s.log.size(), ref_log.size()) << "seed " << seed << " by t=" << end;
      ASSERT_TRUE(s.log == ref_log) << "seed " << seed << " by t=" << end;
      ASSERT_EQ(done, ref_done) << "seed " << seed << " at t=" << ref_now;
      ASSERT_EQ(s.e.now(), ref_now) << "seed " << seed;
      // One action from outside any callback, at now(), on both sides.
      s.d.act(s.e.now(), eng_arm, eng_cancel);
      rd.act(ref_now, ref_arm, ref_cancel);
      if (done) break;
    }
  }
}

TEST(Engine, FiresInTheOrderOfABruteForceQueue) {
  // Distances across all radix levels, with stop() and outside armings.
  check_against_brute_force(1, 300, 1, true, 7777777, 40000);
  // Few timers, frequent ties at digit boundaries.
  check_against_brute_force(2, 40, 256, true, 1000003, 40000);
}

TEST(Engine, CompactionKeepsTheOrderOfTies) {
  // Many timers re-armed and cancelled (so stale entries pile up and are compacted) with
  // times on a coarse grid (so many live entries share a time when that happens).
  check_against_brute_force(3, 1500, 1000, false, 50000000, 40000);
  check_against_brute_force(4, 1500, 100000, false, 50000000, 40000);
}

TEST(Engine, TimersQueuedBeyondTheWheelKeepTheirPlaceAmongTies) {
  // Times on a grid of 65536 ns: timers armed far ahead (through the radix heap) and
  // timers armed into the wheel's window later share times, so a slot holds both, moved in
  // and armed directly, and ties must still fire in insertion order.
  check_against_brute_force(5, 200, 65536, true, 3000000, 40000);
  // Many timers on a 64 ns grid (one tie per wheel slot), re-armed and cancelled.
  check_against_brute_force(6, 1000, 64, false, 300000, 40000);
}

TEST(Rng, StreamsAreIndependentOfEachOther) {
  sim::Rng a(42, 1), b(42, 1), c(42, 2);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  sim::Rng a2(42, 1);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += a2.next_u64() == c.next_u64();
  EXPECT_EQ(same, 0);
}

// UniformInt divides by multiplication; it must draw exactly what uniform_int draws, for
// every kind of span (1, powers of two, odd, near 2^63, the whole range).
TEST(Rng, UniformIntDrawsWhatUniformIntDraws) {
  const std::pair<int64_t, int64_t> ranges[] = {
      {0, 0},       {5, 5},          {0, 1},         {0, 1023},       {5000, 15000},
      {-7, 9},      {0, 999999937},  {1, INT64_MAX}, {INT64_MIN, -1}, {INT64_MIN, INT64_MAX}};
  for (const auto& [lo, hi] : ranges) {
    sim::Rng a(7, 3), b(7, 3);
    const sim::UniformInt u(lo, hi);
    for (int i = 0; i < 20000; ++i) {
      const int64_t want = a.uniform_int(lo, hi);
      ASSERT_EQ(u(b), want) << "[" << lo << ", " << hi << "] draw " << i;
    }
  }
}

// The division behind UniformInt at the numerators where a multiply-shift division goes
// wrong if it does (around multiples of the divisor, the top of the range), for divisors
// of every size: small ones, the SMT slowdown's 1000..4000, powers of two and their
// neighbours, and spans above 2^63.
TEST(Rng, UniformIntReducesLikeTheModuloAtTheEdges) {
  std::vector<uint64_t> divisors;
  for (uint64_t d = 1; d <= 4100; ++d) divisors.push_back(d);
  for (int b = 1; b < 64; ++b)
    for (int64_t e : {-1, 0, 1}) divisors.push_back((uint64_t{1} << b) + static_cast<uint64_t>(e));
  for (uint64_t d : {uint64_t{999999937}, (uint64_t{1} << 63) + 12345, ~uint64_t{0} - 1, ~uint64_t{0}})
    divisors.push_back(d);
  sim::Rng rng(3, 9);
  for (uint64_t d : divisors) {
    if (d == 0) continue;
    // UniformInt(lo, hi) has span hi - lo + 1 = d.
    const sim::UniformInt u(0, static_cast<int64_t>(d - 1));
    std::vector<uint64_t> xs = {0, 1, d - 1, d, d + 1, ~uint64_t{0}, ~uint64_t{0} - 1,
                                uint64_t{1} << 63, (uint64_t{1} << 63) - 1};
    const uint64_t top = ~uint64_t{0} / d;  // multiples k*d that fit
    for (uint64_t k : {uint64_t{2}, uint64_t{3}, top / 2, top - 1, top}) {
      if (k == 0 || k > top) continue;
      xs.push_back(k * d - 1);
      xs.push_back(k * d);
      if (k * d + 1 != 0) xs.push_back(k * d + 1);
    }
    for (int i = 0; i < 8; ++i) xs.push_back(rng.next_u64());
    for (uint64_t x : xs) ASSERT_EQ(u.reduce(x), x % d) << x << " mod " << d;
  }
}

TEST(Histogram, PercentilesAreWithinTheBucketPrecision) {
  sim::Histogram h;
  for (int i = 1; i <= 10000; ++i) h.add(i * 1000);
  EXPECT_NEAR(static_cast<double>(h.percentile(0.5)), 5e6, 5e6 / 32);
  EXPECT_NEAR(static_cast<double>(h.percentile(0.99)), 9.9e6, 9.9e6 / 32);
  EXPECT_EQ(h.percentile(1.0), 10000000);
}
