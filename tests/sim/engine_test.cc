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
