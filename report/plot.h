// Plots of a run's or a comparison's JSON as gnuplot scripts (the program that draws them
// is gnuplot, run by `schedlab plot`, cli/cmd_plot.cc). A comparison: per metric a panel of
// bars, one per setting, with the 95% interval of the average as error bars (none when a
// setting has one seed). A run: the latency distributions as cumulative curves through the
// percentiles the results keep (min, p50, p99, p99.9, max), and the CPU occupancy per CPU
// (user, kernel, idle shares stacked).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace report {

enum class PlotFormat { kSvg, kPng };

// The gnuplot script drawing `doc` (a document of schema schedlab.results or
// schedlab.comparison) to stdout in `format`. Returns "" and sets *script, or an error
// naming what is missing or wrong.
std::string plot_script(const nlohmann::json& doc, PlotFormat format, std::string* script);

}  // namespace report
