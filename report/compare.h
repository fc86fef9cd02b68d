// A comparison of one workload under several settings, each run with N seeds: per setting
// and metric the min / max / median / average, and the change of the average against the
// first setting, as the kernel threads reported their runs. Value type + text and JSON.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace report {

struct ComparisonRow {
  std::string setting;              // e.g. "ext=rfc"
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
