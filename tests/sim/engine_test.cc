// The engine: total order by (time, insertion), re-arming, O(1) cancellation.
#include "sim/engine.h"

#include <gtest/gtest.h>

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

TEST(Engine, ManyStaleEntriesAreCompactedWithoutChangingOrder) {
  sim::Engine e;
  std::vector<int> log;
  g_log = &log;
  sim::Timer t[2];
  t[0].fn = t[1].fn = record;
  t[0].arg = 0;
  t[1].arg = 1;
  for (int i = 0; i < 100000; ++i) e.arm(&t[i % 2], 1000 + (i % 7));
  e.run_until(2000);
  ASSERT_EQ(log.size(), 2u);
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
// distance from 0 (a tie) to seconds (several radix levels apart), or cancel another.
struct Driver {
  sim::Rng rng{42, 7};
  int n;
  template <typename Arm, typename Cancel>
  void react(sim::Time now, Arm arm, Cancel cancel) {
    for (int k = 0; k < 2; ++k) {
      const int id = static_cast<int>(rng.next_u64() % static_cast<uint64_t>(n));
      const uint64_t r = rng.next_u64();
      static constexpr sim::Time kScale[] = {0, 3, 100, 5000, 300000, 20000000, 3000000000};
      const sim::Time d = kScale[r % 7] == 0 ? 0 : static_cast<sim::Time>((r >> 8) % kScale[r % 7]);
      if ((r >> 40) % 5 == 0)
        cancel(id);
      else
        arm(id, now + d);
    }
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
  s->d.react(now, [&](int id, sim::Time w) { s->e.arm(&s->timers[id], w); },
             [&](int id) { s->e.cancel(&s->timers[id]); });
}

TEST(Engine, FiresInTheOrderOfABruteForceQueue) {
  constexpr int kTimers = 300;
  constexpr sim::Time kEnd = 4000000000;  // 4 s: entries cross up to four 8-bit digits
  EngineSide s;
  s.d.n = kTimers;
  s.timers.resize(kTimers);
  for (int i = 0; i < kTimers; ++i) {
    s.timers[i].fn = engine_side_fire;
    s.timers[i].ctx = &s;
    s.timers[i].arg = static_cast<uint32_t>(i);
  }
  BruteForceQueue ref(kTimers);
  Driver rd;
  rd.n = kTimers;
  std::vector<Fired> ref_log;
  // The same initial armings on both sides.
  sim::Rng init(3, 3);
  for (int i = 0; i < kTimers; ++i) {
    const sim::Time w = static_cast<sim::Time>(init.next_u64() % 1000) * (i % 3 == 0 ? 1 : 1000);
    s.e.arm(&s.timers[i], w);
    ref.arm(i, w);
  }
  // Run in slices, so the engine also stops with entries beyond `end` and resumes.
  for (sim::Time end = 7777777; end <= kEnd && ref_log.size() < 60000; end += 7777777) {
    s.e.run_until(end);
    sim::Time when;
    for (int id; (id = ref.next(end, &when)) >= 0;) {
      ref_log.push_back({when, id});
      rd.react(when, [&](int i, sim::Time w) { ref.arm(i, w); }, [&](int i) { ref.cancel(i); });
    }
    ASSERT_EQ(s.log.size(), ref_log.size()) << "by t=" << end;
    ASSERT_TRUE(s.log == ref_log) << "by t=" << end;
  }
  EXPECT_GT(ref_log.size(), 20000u);
}

TEST(Rng, StreamsAreIndependentOfEachOther) {
  sim::Rng a(42, 1), b(42, 1), c(42, 2);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  sim::Rng a2(42, 1);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += a2.next_u64() == c.next_u64();
  EXPECT_EQ(same, 0);
}

TEST(Histogram, PercentilesAreWithinTheBucketPrecision) {
  sim::Histogram h;
  for (int i = 1; i <= 10000; ++i) h.add(i * 1000);
  EXPECT_NEAR(static_cast<double>(h.percentile(0.5)), 5e6, 5e6 / 32);
  EXPECT_NEAR(static_cast<double>(h.percentile(0.99)), 9.9e6, 9.9e6 / 32);
  EXPECT_EQ(h.percentile(1.0), 10000000);
}
