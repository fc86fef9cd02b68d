// Runs one experiment under several settings and seeds (in parallel OS threads; every run
// is independent and deterministic) and gathers chosen metrics into a report::Comparison.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "report/compare.h"
#include "scenario/experiment.h"

namespace scenario {

// Bounds of a comparison: runs per setting, and parallel runs (threads).
inline constexpr int kMaxSeeds = 1000000;
inline constexpr int kMaxJobs = 1024;

struct CompareSpec {
  Experiment base;
  std::string vary_key;                 // e.g. "ext"
  std::vector<std::string> vary_values; // e.g. none, rfc, rseq2023, mainline
  // Or rows given whole: a label and the key=value settings of that row.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  int seeds = 3;                        // 1..kMaxSeeds
  std::vector<std::string> metrics;     // empty: every metric of the first run
  int jobs = 0;                         // 0..kMaxJobs; 0 = number of CPUs
};

// "" and *out filled, or an error naming the bad parameter. `progress` gets runs done/total.
std::string compare(const CompareSpec& spec, report::Comparison* out,
                    const std::function<void(int, int)>& progress = {});

}  // namespace scenario
