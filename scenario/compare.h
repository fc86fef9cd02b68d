// Runs one experiment under several settings and seeds (in parallel OS threads; every run
// is independent and deterministic) and gathers chosen metrics into a report::Comparison.
// The runs can be split into shares (run i in share i mod N), each run by its own process
// (scenario/compare_mpi.h: one share per MPI rank) and joined by assemble_comparison(): the
// comparison is the same whichever way the runs were shared out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
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

// The checked rows of a comparison: run i is row i / seeds with its seed moved on by
// i % seeds.
struct ComparePlan {
  std::vector<std::string> labels;  // a row's setting as the table shows it
  std::vector<Experiment> row_exps;
  size_t seeds = 0;
  size_t total() const { return row_exps.size() * seeds; }
};

// "" and *plan filled, or an error naming the bad parameter; no run is started.
std::string plan_compare(const CompareSpec& spec, ComparePlan* plan);

inline constexpr size_t kNoRun = std::numeric_limits<size_t>::max();

// What a share of the runs keeps: per run only (metric id, value) pairs, ids into one table
// of names, so that memory grows with the values reported and not with whole runs.
struct RunShare {
  using Values = std::vector<std::pair<uint32_t, double>>;
  size_t offset = 0, stride = 1;    // the share's runs: offset, offset + stride, ...
  std::vector<std::string> names;   // by id
  std::vector<std::string> units;   // by id: the unit of the first run that has the metric
  std::vector<size_t> unit_run;     // by id: that run's index (kNoRun: none)
  std::vector<Values> values;       // by slot: run offset + slot * stride
  std::string workload, machine;    // of run 0, when it is in this share
  size_t error_run = kNoRun;        // the first run that failed, and its error
  std::string error;
};

// Runs the share's runs (spec.jobs threads) into *share. A run that fails stops the share.
// `progress` gets runs done / runs in the share.
void run_share(const CompareSpec& spec, const ComparePlan& plan, size_t offset, size_t stride,
               RunShare* share, const std::function<void(int, int)>& progress = {});

// A share as bytes (to send to another process) and back; decode_share returns "" or what
// is wrong with the bytes.
std::string encode_share(const RunShare& share);
std::string decode_share(const std::string& bytes, RunShare* share);

// The comparison of every run: shares[k] holds the runs k, k + N, ... of N shares. The first
// failed run's error, or "" and *out filled. The shares' values are released as they are used.
std::string assemble_comparison(const CompareSpec& spec, const ComparePlan& plan,
                                std::vector<RunShare>* shares, report::Comparison* out);

// plan_compare + run_share of every run + assemble_comparison, in this process. "" and *out
// filled, or an error naming the bad parameter. `progress` gets runs done/total.
std::string compare(const CompareSpec& spec, report::Comparison* out,
                    const std::function<void(int, int)>& progress = {});

}  // namespace scenario
