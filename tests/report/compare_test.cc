// compare's table and JSON: per setting the mean, standard deviation and 95% interval, per
// change Welch's interval, "not significant" where it holds 0, per-seed values labelled.
#include <gtest/gtest.h>

#include <string>

#include "report/compare.h"

namespace report {
namespace {

// R's `sleep` data as two settings of one metric (t.test(extra ~ group, data = sleep):
// difference 1.58, 95% interval -0.2054832 .. 3.3654832 the other way round, p = 0.07939).
Comparison sleep() {
  Comparison c;
  c.workload = "spinlock";
  c.machine = "small4";
  c.seeds = 10;
  c.duration_ns = 100'000'000;
  c.metrics = {"extra", "shifted"};
  c.units = {"h", ""};
  ComparisonRow a, b;
  a.setting = "group=1";
  b.setting = "group=2";
  for (uint64_t s = 0; s < 10; ++s) {
    a.seeds.push_back(1 + s);
    b.seeds.push_back(1 + s);
  }
  a.values = {{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0},
              {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}};
  b.values = {{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4},
              {4.9, 3.8, 4.1, 3.1, 2.9, 7.4, 8.5, 4.6, 7.6, 6.4}};
  c.rows = {a, b};
  return c;
}

std::string line_of(const std::string& text, size_t from, const std::string& start) {
  const size_t at = text.find("\n  " + start, from);
  if (at == std::string::npos) return "";
  return text.substr(at + 3, text.find('\n', at + 1) - at - 3);
}

TEST(CompareTable, MeanSdIntervalsAndNotSignificantMark) {
  const std::string t = render_comparison(sleep());
  const size_t extra = t.find("\nextra (h)");
  ASSERT_NE(extra, std::string::npos) << t;
  EXPECT_NE(t.find("setting        average          sd  95% CI of average     change  95% CI of change", extra), std::string::npos) << t;
  // group 1: mean 0.75, sd 1.789010, interval 0.75 +- 2.262157 * 1.789010 / sqrt(10).
  EXPECT_EQ(line_of(t, extra, "group=1"), "group=1           0.75       1.789  [-0.5298, 2.030]") << t;
  // group 2 against group 1: +1.58 / 0.75 = +210.7%; group 1's mean is within t(0.975,
  // 17.776) = 2.101 standard errors (0.5657) of 0, so Fieller's interval is unbounded.
  EXPECT_EQ(line_of(t, extra, "group=2"),
            "group=2          2.330       2.002  [0.8977, 3.762]      +210.7%  unbounded           "
            "not significant") << t;
  const size_t shifted = t.find("\nshifted");
  ASSERT_NE(shifted, std::string::npos);
  const std::string moved = line_of(t, shifted, "group=2");
  EXPECT_NE(moved.find("+610.7%"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("not significant"), std::string::npos) << moved;
  EXPECT_NE(t.find("not significant: the interval holds 0"), std::string::npos);
}

TEST(CompareTable, OneSeedHasNoIntervals) {
  Comparison c = sleep();
  c.seeds = 1;
  for (ComparisonRow& r : c.rows) {
    r.seeds.resize(1);
    for (auto& v : r.values) v.resize(1);
  }
  const std::string t = render_comparison(c);
  const size_t extra = t.find("\nextra (h)");
  EXPECT_EQ(line_of(t, extra, "group=1"), "group=1            0.7           -  -") << t;
  EXPECT_EQ(line_of(t, extra, "group=2"), "group=2          1.900           -  -                    +171.4%  -") << t;
}

TEST(CompareJson, StatisticsAndPerSeedValuesLabelledBySeed) {
  const nlohmann::ordered_json j = comparison_to_json(sleep());
  EXPECT_EQ(j["schema"], "schedlab.comparison");
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["confidence"], 0.95);
  EXPECT_EQ(j["metrics"][0]["name"], "extra");
  EXPECT_EQ(j["metrics"][0]["unit"], "h");
  const auto& g1 = j["rows"][0]["metrics"]["extra"];
  EXPECT_EQ(g1["values"][2]["seed"], 3);
  EXPECT_EQ(g1["values"][2]["value"], -0.2);
  EXPECT_EQ(g1["n"], 10);
  EXPECT_NEAR(g1["average"].get<double>(), 0.75, 1e-12);
  EXPECT_NEAR(g1["sd"].get<double>(), 1.7890096, 1e-6);
  EXPECT_NEAR(g1["ci95"][0].get<double>(), -0.5297804, 1e-6);
  EXPECT_FALSE(g1.contains("change"));
  const auto& ch = j["rows"][1]["metrics"]["extra"]["change"];
  EXPECT_NEAR(ch["difference"].get<double>(), 1.58, 1e-12);
  EXPECT_NEAR(ch["ci95"][0].get<double>(), -0.2054832, 1e-6);
  EXPECT_NEAR(ch["ci95"][1].get<double>(), 3.3654832, 1e-6);
  EXPECT_NEAR(ch["relative"].get<double>(), 1.58 / 0.75, 1e-12);
  EXPECT_TRUE(ch["relative_ci95"].is_null());  // group 1 cannot be told from 0
  EXPECT_NEAR(ch["df"].get<double>(), 17.776, 5e-4);
  EXPECT_NEAR(ch["p_value"].get<double>(), 0.07939, 5e-6);
  EXPECT_EQ(ch["significant"], false);
  EXPECT_EQ(j["rows"][1]["metrics"]["shifted"]["change"]["significant"], true);
}

}  // namespace
}  // namespace report
