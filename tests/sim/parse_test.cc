// sim/parse.h: the program's one duration parser and one CPU-list parser.
#include "sim/parse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

TEST(ParseDuration, ReadsEachUnitAndRoundsToTheNearestNanosecond) {
  int64_t ns = -1;
  ASSERT_TRUE(sim::parse_duration("500ns", &ns));
  EXPECT_EQ(ns, 500);
  ASSERT_TRUE(sim::parse_duration("250us", &ns));
  EXPECT_EQ(ns, 250'000);
  ASSERT_TRUE(sim::parse_duration("10ms", &ns));
  EXPECT_EQ(ns, 10'000'000);
  ASSERT_TRUE(sim::parse_duration("1.5s", &ns));
  EXPECT_EQ(ns, 1'500'000'000);
  ASSERT_TRUE(sim::parse_duration("0.3s", &ns));
  EXPECT_EQ(ns, 300'000'000);
  // 4.35 * 1e3 is 4349.999... in binary: rounded, not truncated.
  ASSERT_TRUE(sim::parse_duration("4.35us", &ns));
  EXPECT_EQ(ns, 4350);
  ASSERT_TRUE(sim::parse_duration("-2ms", &ns));  // the caller checks the range
  EXPECT_EQ(ns, -2'000'000);
}

TEST(ParseDuration, ABareNumberIsRefusedExceptZero) {
  int64_t ns = -1;
  ASSERT_TRUE(sim::parse_duration("0", &ns));
  EXPECT_EQ(ns, 0);
  ns = -1;
  for (const char* s : {"5", "250", "1.5", "-3"}) {
    EXPECT_FALSE(sim::parse_duration(s, &ns)) << s;
    EXPECT_EQ(ns, -1) << s;
  }
}

TEST(ParseDuration, RefusesGarbageUnknownUnitsAndOverflow) {
  int64_t ns = -1;
  for (const char* s : {"", "s", "soon", "1h", "5 s", "5sec", "10MS", "1e10s", "inf", "nans"}) {
    EXPECT_FALSE(sim::parse_duration(s, &ns)) << s;
  }
  EXPECT_EQ(ns, -1);
  ASSERT_TRUE(sim::parse_duration("9s", &ns));
  EXPECT_EQ(ns, 9'000'000'000);
}

TEST(ParseCpuList, AcceptsRangesAndSinglesInAnyOrderSortedWithoutDuplicates) {
  std::vector<int> cpus;
  ASSERT_TRUE(sim::parse_cpu_list("8,0-2,5", 64, &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 5, 8}));
  ASSERT_TRUE(sim::parse_cpu_list("3,0-1,1", 64, &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 3}));
  ASSERT_TRUE(sim::parse_cpu_list("3", 64, &cpus));
  EXPECT_EQ(cpus, std::vector<int>{3});
  ASSERT_TRUE(sim::parse_cpu_list("63", 64, &cpus));
  EXPECT_EQ(cpus, std::vector<int>{63});
}

TEST(ParseCpuList, RejectsGarbageReversedRangesAndIdsAtOrPastTheLimit) {
  std::vector<int> cpus;
  for (const char* s : {"", "a", "1-", "-1", "3-1", "0,", ",0", "1,,2", "1 2", "+1", "1-2-3",
                        "0-64", "64", "99999999999"}) {
    EXPECT_FALSE(sim::parse_cpu_list(s, 64, &cpus)) << s;
  }
}

}  // namespace
