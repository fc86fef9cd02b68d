// Results as CSV (RFC 4180: comma-separated, a header line, fields quoted when they hold a
// comma, a quote or a line break; "\n" line ends), for spreadsheets and data frames. Numbers
// are written with the shortest text that reads back as the same double.
#pragma once
#include <string>

#include "report/compare.h"
#include "report/results.h"

namespace report {

// One run: `name,value,unit`, one line per metric, then per task group the lines
// group.PATH.usage_ns (ns), group.PATH.share (of machine), group.PATH.cpu_weight and
// group.PATH.idle, then per latency distribution one line
// per statistic, named NAME.count, NAME.min_ns, NAME.p50_ns, NAME.p99_ns, NAME.p999_ns,
// NAME.max_ns, NAME.mean_ns (unit "ns", none for the count).
std::string render_run_csv(const Results& r);

// A comparison, one line per run and metric (long form):
// `setting,metric,unit,seed,value`, rows in the comparison's order, then metrics, then seeds.
std::string render_comparison_csv(const Comparison& c);

}  // namespace report
