// gnuplot scripts for run and comparison JSON (report/plot.h).
#include "report/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

namespace report {

namespace {

using json = nlohmann::json;

// A string as a gnuplot double-quoted string.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c == '\n' ? ' ' : c;
  }
  return q + '"';
}

double number(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

std::string terminal(PlotFormat f, int width, int height) {
  // noenhanced: metric names hold underscores, which enhanced text would subscript.
  return f == PlotFormat::kSvg
             ? fmt::format("set terminal svg size {},{} noenhanced font 'sans,11' background '#ffffff'\n",
                           width, height)
             : fmt::format("set terminal pngcairo size {},{} noenhanced font 'sans,10'\n", width, height);
}

std::string comparison_script(const json& doc, PlotFormat format, std::string* script) {
  const json* metrics = doc.contains("metrics") ? &doc["metrics"] : nullptr;
  const json* rows = doc.contains("rows") ? &doc["rows"] : nullptr;
  if (!metrics || !metrics->is_array() || metrics->empty() || !rows || !rows->is_array() ||
      rows->empty())
    return "a comparison needs 'metrics' and 'rows' (from schedlab compare --json)";
  const size_t n = metrics->size();
  const size_t cols = std::min<size_t>(3, n), nrows = (n + cols - 1) / cols;
  std::string s = terminal(format, static_cast<int>(std::max<size_t>(640, 420 * cols)),
                           static_cast<int>(320 * nrows + 40));
  s += "set style fill solid 0.6 border -1\nset boxwidth 0.6\nset grid ytics\nset key off\n";
  s += "set xtics rotate by -30 left\nset bmargin 6\n";
  const double conf = doc.value("confidence", 0.95);
  s += fmt::format("set multiplot layout {},{} title {}\n", nrows, cols,
                   quoted(fmt::format("{} on {}: average of {} seeds per setting, {:.0f}% interval",
                                      doc.value("workload", "?"), doc.value("machine", "?"),
                                      doc.value("seeds", 0), conf * 100)));
  for (size_t m = 0; m < n; ++m) {
    const std::string name = (*metrics)[m].value("name", "");
    const std::string unit = (*metrics)[m].value("unit", "");
    std::string data = fmt::format("$m{} << EOD\n", m);
    double lowest = 0;
    for (size_t i = 0; i < rows->size(); ++i) {
      const json& row = (*rows)[i];
      if (!row.contains("metrics") || !row["metrics"].contains(name))
        return fmt::format("rows[{}]: no metric '{}'", i, name);
      const json& x = row["metrics"][name];
      const double avg = number(x.value("average", json()));
      double lo = avg, hi = avg;
      if (x.contains("ci95") && x["ci95"].is_array() && x["ci95"].size() == 2) {
        lo = number(x["ci95"][0]);
        hi = number(x["ci95"][1]);
      }
      lowest = std::min({lowest, avg, lo});
      data += fmt::format("{} {} {} {} {}\n", i, quoted(row.value("setting", "")), avg, lo, hi);
    }
    s += data + "EOD\n";
    s += fmt::format("set title {}\nset ylabel {}\n", quoted(name), quoted(unit));
    s += fmt::format("set xrange [-0.6:{}]\n", static_cast<double>(rows->size()) - 0.4);
    // Bars start at 0 (a bar from another baseline misstates the ratio of two settings).
    s += lowest >= 0 ? "set yrange [0:*]\n" : "set autoscale y\n";
    s += fmt::format(
        "plot $m{0} using 1:3:xtic(2) with boxes lc rgb '#4477aa', "
        "$m{0} using 1:3:4:5 with yerrorbars lc rgb '#000000' pt 0 lw 1.5\n",
        m);
  }
  s += "unset multiplot\n";
  *script = std::move(s);
  return "";
}

std::string run_script(const json& doc, PlotFormat format, std::string* script) {
  const json empty = json::array();
  const json& lat = doc.contains("latencies") && doc["latencies"].is_array() ? doc["latencies"] : empty;
  const json* per_cpu = nullptr;
  if (doc.contains("cpus") && doc["cpus"].is_object() && doc["cpus"].contains("per_cpu") &&
      doc["cpus"]["per_cpu"].is_array() && !doc["cpus"]["per_cpu"].empty())
    per_cpu = &doc["cpus"]["per_cpu"];
  if (lat.empty() && !per_cpu) return "a run needs 'latencies' or 'cpus.per_cpu' to plot";
  const int panels = (lat.empty() ? 0 : 1) + (per_cpu ? 1 : 0);
  std::string s = terminal(format, 900, 380 * panels + 40);
  const json& e = doc.contains("experiment") ? doc["experiment"] : json::object();
  s += fmt::format("set multiplot layout {},1 title {}\n", panels,
                   quoted(fmt::format("{} on {}, {:.3g} s simulated, seed {}", e.value("workload", "?"),
                                      e.value("machine", "?"),
                                      e.value("duration_ns", 0.0) / 1e9, e.value("seed", 0ull))));
  s += "set grid\n";
  if (!lat.empty()) {
    // The cumulative distribution through the kept percentiles: P(latency <= x).
    std::string plots;
    for (size_t i = 0; i < lat.size(); ++i) {
      const json& l = lat[i];
      s += fmt::format("$l{} << EOD\n", i);
      for (auto [key, q] : {std::pair<const char*, double>{"min_ns", 0.0},
                            {"p50_ns", 0.5},
                            {"p99_ns", 0.99},
                            {"p999_ns", 0.999},
                            {"max_ns", 1.0}})
        s += fmt::format("{} {}\n", number(l.value(key, json())) / 1000, q);
      s += "EOD\n";
      plots += fmt::format("{}$l{} using 1:2 with linespoints lw 2 pt 7 title {}",
                           plots.empty() ? "" : ", ", i,
                           quoted(fmt::format("{} ({} samples)", l.value("name", "?"),
                                              l.value("count", 0ull))));
    }
    s += "set title 'latency: cumulative share of samples at or below (through min, p50, p99, p99.9, max)'\n";
    s += "set xlabel 'latency (us)'\nset ylabel 'share of samples'\nset yrange [0:1.02]\n";
    s += "set key bottom right\nset xrange [0:*]\n";
    s += "plot " + plots + "\n";
    s += "unset xlabel\nset autoscale\n";
  }
  if (per_cpu) {
    s += "$cpu << EOD\n";
    for (const json& c : *per_cpu) {
      const double u = number(c.value("user_ns", json())), k = number(c.value("kernel_ns", json())),
                   i = number(c.value("idle_ns", json()));
      const double total = u + k + i > 0 ? u + k + i : 1;
      s += fmt::format("{} {} {} {}\n", c.value("cpu", 0), u / total, k / total, i / total);
    }
    s += "EOD\n";
    s += "set title 'CPU occupancy per CPU over the run'\nset xlabel 'CPU'\nset ylabel 'share of time'\n";
    // Stacked by drawing the cumulative sums back to front: idle on top of kernel on user.
    s += fmt::format("set yrange [0:1]\nset xrange [-0.5:{}]\nset key outside right\n",
                     static_cast<double>(per_cpu->size()) - 0.5);
    s += "set style fill solid 1 noborder\nset boxwidth 0.9 relative\n";
    s += "plot $cpu using 1:($2+$3+$4) with boxes lc rgb '#dddddd' title 'idle', "
         "'' using 1:($2+$3) with boxes lc rgb '#ee6677' title 'kernel', "
         "'' using 1:2 with boxes lc rgb '#4477aa' title 'user'\n";
  }
  s += "unset multiplot\n";
  *script = std::move(s);
  return "";
}

}  // namespace

std::string plot_script(const json& doc, PlotFormat format, std::string* script) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    return "not a schedlab results or comparison document (no 'schema')";
  const std::string schema = doc["schema"];
  if (schema == "schedlab.comparison") return comparison_script(doc, format, script);
  if (schema == "schedlab.results") return run_script(doc, format, script);
  return "schema '" + schema + "': plot takes schedlab.results (run --json) or schedlab.comparison (compare --json)";
}

}  // namespace report
