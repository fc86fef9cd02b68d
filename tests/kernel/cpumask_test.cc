// kernel::cpumask, the word-wise cpumask_t: set, test, count, first and walk agree with a
// plain array of flags, across word boundaries and with a last word only partly used.
#include "kernel/sched/cpumask.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(Cpumask, SetAllCoversExactlyTheCpusAcrossAPartialLastWord) {
  kernel::cpumask m;
  m.assign(130, true);
  EXPECT_EQ(m.size(), 130);
  EXPECT_EQ(m.weight(), 130);
  EXPECT_EQ(m.first(), 0);
  std::vector<int> seen;
  m.for_each([&](int c) { seen.push_back(c); });
  ASSERT_EQ(seen.size(), 130u);
  for (int c = 0; c < 130; ++c) EXPECT_EQ(seen[static_cast<size_t>(c)], c);
}

TEST(Cpumask, OperationsAgreeWithAnArrayOfFlags) {
  kernel::cpumask m;
  m.assign(200, false);
  EXPECT_EQ(m.weight(), 0);
  EXPECT_EQ(m.first(), 200);  // empty: nr_cpu_ids
  std::vector<bool> ref(200, false);
  for (int c : {199, 63, 64, 0, 127, 128, 64, 5}) {
    EXPECT_EQ(m.set(c), !ref[static_cast<size_t>(c)]) << c;  // true only when newly set
    ref[static_cast<size_t>(c)] = true;
  }
  m.clear(0);
  ref[0] = false;
  int weight = 0, first = 200;
  std::vector<int> expect;
  for (int c = 0; c < 200; ++c) {
    EXPECT_EQ(m.test(c), ref[static_cast<size_t>(c)]) << c;
    if (ref[static_cast<size_t>(c)]) {
      ++weight;
      if (first == 200) first = c;
      expect.push_back(c);
    }
  }
  EXPECT_EQ(m.weight(), weight);
  EXPECT_EQ(m.first(), first);
  std::vector<int> seen;
  m.for_each([&](int c) { seen.push_back(c); });
  EXPECT_EQ(seen, expect);
}

}  // namespace
