// A comparison's runs split into shares (run i in share i mod N, as the ranks of an MPI job
// take them), each encoded to bytes and decoded as it travels to rank 0, assemble into the
// comparison a run in one process gives, byte for byte.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/compare.h"
#include "report/csv.h"
#include "scenario/compare.h"

namespace {

scenario::CompareSpec small_spec() {
  scenario::CompareSpec spec;
  for (const char* s : {"workload=spinlock", "machine=small4", "threads=8", "hogs=2", "duration=20ms"})
    EXPECT_EQ(scenario::set_assignment(&spec.base, s), "");
  spec.vary_key = "hz";
  spec.vary_values = {"250", "1000"};
  spec.seeds = 3;
  spec.jobs = 1;
  return spec;
}

// The JSON and CSV of the comparison assembled from `n` shares that went through bytes.
std::string shared_out(const scenario::CompareSpec& spec, size_t n) {
  scenario::ComparePlan plan;
  EXPECT_EQ(scenario::plan_compare(spec, &plan), "");
  std::vector<scenario::RunShare> shares(n);
  for (size_t k = 0; k < n; ++k) {
    scenario::RunShare mine;
    scenario::run_share(spec, plan, k, n, &mine);
    EXPECT_EQ(scenario::decode_share(scenario::encode_share(mine), &shares[k]), "");
  }
  report::Comparison c;
  EXPECT_EQ(scenario::assemble_comparison(spec, plan, &shares, &c), "");
  return report::comparison_to_json(c).dump(2) + report::render_comparison_csv(c) +
         report::render_comparison(c);
}

std::string local_out(const scenario::CompareSpec& spec) {
  report::Comparison c;
  EXPECT_EQ(scenario::compare(spec, &c), "");
  return report::comparison_to_json(c).dump(2) + report::render_comparison_csv(c) +
         report::render_comparison(c);
}

TEST(CompareShares, AssembledFromSharesTheComparisonIsTheLocalOneByteForByte) {
  const scenario::CompareSpec spec = small_spec();
  const std::string local = local_out(spec);
  EXPECT_EQ(shared_out(spec, 2), local);
  EXPECT_EQ(shared_out(spec, 4), local);
  // More shares than runs: the last ones are empty.
  EXPECT_EQ(shared_out(spec, 8), local);
}

TEST(CompareShares, WithChosenMetricsTheSharesKeepOnlyThoseAndGiveTheLocalComparison) {
  scenario::CompareSpec spec = small_spec();
  spec.metrics = {"spin_cpu_share", "acquisitions_per_second"};
  EXPECT_EQ(shared_out(spec, 3), local_out(spec));
  scenario::ComparePlan plan;
  ASSERT_EQ(scenario::plan_compare(spec, &plan), "");
  scenario::RunShare s;
  scenario::run_share(spec, plan, 1, 3, &s);
  ASSERT_EQ(s.values.size(), 2u);  // runs 1 and 4 of 6
  for (const auto& v : s.values) EXPECT_EQ(v.size(), 2u);
}

TEST(CompareShares, TheFirstFailedRunsErrorWinsWhicheverShareRanIt) {
  const scenario::CompareSpec spec = small_spec();
  scenario::ComparePlan plan;
  ASSERT_EQ(scenario::plan_compare(spec, &plan), "");
  std::vector<scenario::RunShare> shares(2);
  for (size_t k = 0; k < 2; ++k) {
    shares[k].offset = k;
    shares[k].stride = 2;
    shares[k].values.resize(3);
  }
  shares[0].error_run = 4, shares[0].error = "run 4 failed";
  shares[1].error_run = 1, shares[1].error = "run 1 failed";
  report::Comparison c;
  EXPECT_EQ(scenario::assemble_comparison(spec, plan, &shares, &c), "run 1 failed");
}

TEST(CompareShares, BytesThatAreNotAWholeShareAreRefused) {
  const scenario::CompareSpec spec = small_spec();
  scenario::ComparePlan plan;
  ASSERT_EQ(scenario::plan_compare(spec, &plan), "");
  scenario::RunShare s;
  scenario::run_share(spec, plan, 0, 2, &s);
  const std::string bytes = scenario::encode_share(s);
  scenario::RunShare back;
  EXPECT_NE(scenario::decode_share(bytes.substr(0, bytes.size() - 1), &back), "");
  EXPECT_NE(scenario::decode_share(bytes + "x", &back), "");
  EXPECT_NE(scenario::decode_share(std::string(8, '\xff'), &back), "");
  EXPECT_EQ(scenario::decode_share(bytes, &back), "");
  EXPECT_EQ(back.names, s.names);
  EXPECT_EQ(back.values, s.values);
}

TEST(CompareShares, SharesThatDoNotSplitTheRunsAreRefused) {
  const scenario::CompareSpec spec = small_spec();
  scenario::ComparePlan plan;
  ASSERT_EQ(scenario::plan_compare(spec, &plan), "");
  std::vector<scenario::RunShare> shares(2);
  scenario::run_share(spec, plan, 0, 2, &shares[0]);
  scenario::run_share(spec, plan, 0, 2, &shares[1]);  // offset 0 twice: run 1 is missing
  report::Comparison c;
  EXPECT_NE(scenario::assemble_comparison(spec, plan, &shares, &c), "");
}

}  // namespace
