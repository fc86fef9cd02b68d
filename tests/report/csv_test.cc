// --csv: a run's metrics and latency statistics as name,value,unit; a comparison in long
// form, one line per setting, metric and seed; fields quoted as RFC 4180 asks.
#include <gtest/gtest.h>

#include <string>

#include "report/csv.h"

namespace report {
namespace {

TEST(Csv, RunHasAHeaderAMetricPerLineAndTheLatencyStatistics) {
  Results r;
  r.metrics = {{"acquisitions_per_second", 12345.5, "1/s", "help"},
               {"odd, name", 0.1, "of \"client\" CPU", ""}};
  LatencySummary l;
  l.name = "acquire";
  l.count = 3;
  l.min_ns = 1;
  l.p50_ns = 2;
  l.p99_ns = 3;
  l.p999_ns = 4;
  l.max_ns = 5;
  l.mean_ns = 2.5;
  r.latencies = {l};
  EXPECT_EQ(render_run_csv(r),
            "name,value,unit\n"
            "acquisitions_per_second,12345.5,1/s\n"
            "\"odd, name\",0.1,\"of \"\"client\"\" CPU\"\n"
            "acquire.count,3,\n"
            "acquire.min_ns,1,ns\n"
            "acquire.p50_ns,2,ns\n"
            "acquire.p99_ns,3,ns\n"
            "acquire.p999_ns,4,ns\n"
            "acquire.max_ns,5,ns\n"
            "acquire.mean_ns,2.5,ns\n");
}

TEST(Csv, ComparisonIsOneLinePerSettingMetricAndSeed) {
  Comparison c;
  c.metrics = {"runs", "share"};
  c.units = {"", "of CPU"};
  ComparisonRow a{"ext=none", {5, 6}, {{10, 11}, {0.5, 0.25}}};
  ComparisonRow b{"label:hz=100,ext=rfc", {5, 6}, {{12, 13}, {0.125, 1e-7}}};
  c.rows = {a, b};
  EXPECT_EQ(render_comparison_csv(c),
            "setting,metric,unit,seed,value\n"
            "ext=none,runs,,5,10\n"
            "ext=none,runs,,6,11\n"
            "ext=none,share,of CPU,5,0.5\n"
            "ext=none,share,of CPU,6,0.25\n"
            "\"label:hz=100,ext=rfc\",runs,,5,12\n"
            "\"label:hz=100,ext=rfc\",runs,,6,13\n"
            "\"label:hz=100,ext=rfc\",share,of CPU,5,0.125\n"
            "\"label:hz=100,ext=rfc\",share,of CPU,6,1e-07\n");
}

}  // namespace
}  // namespace report

namespace report {
namespace {
TEST(Csv, RunListsEachGroupsUsageShareWeightAndIdle) {
  Results r;
  r.groups = {{"/svc", 1500000000, 0.375, 100, 0, "0-3"}};
  EXPECT_EQ(render_run_csv(r),
            "name,value,unit\n"
            "group./svc.usage_ns,1500000000,ns\n"
            "group./svc.share,0.375,of machine\n"
            "group./svc.cpu_weight,100,\n"
            "group./svc.idle,0,\n");
}
}  // namespace
}  // namespace report
