// A comparison of one workload under several settings, each run with N seeds: per setting
// and metric the mean with its standard deviation and 95% confidence interval, and the
// change of the mean against the first setting with its 95% interval (Welch's for the
// difference, Fieller's for the change in percent), marking changes whose interval holds 0
// (report/stats.h); min / max / median in the JSON. Value type + text
// and JSON (docs/results-schema.md, "Comparison").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace report {

inline constexpr int kComparisonSchemaVersion = 3;

struct ComparisonRow {
  std::string setting;              // e.g. "ext=rfc"
  std::vector<uint64_t> seeds;      // the seed of each run, in the order of values[m]
  std::vector<std::vector<double>> values;  // [metric][seed]
};

struct Comparison {
  std::string workload;
  std::string machine;
  std::string base;                 // settings common to every row
  int seeds = 0;
  int64_t duration_ns = 0;
  std::vector<std::string> metrics; // names, with units in `units`
  std::vector<std::string> units;
  std::vector<ComparisonRow> rows;
};

struct Stats {
  double min = 0, max = 0, median = 0, mean = 0;
};
Stats stats_of(std::vector<double> v);

std::string render_comparison(const Comparison& c);
nlohmann::ordered_json comparison_to_json(const Comparison& c);

}  // namespace report
