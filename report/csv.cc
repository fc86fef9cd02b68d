// CSV rendering (report/csv.h).
#include "report/csv.h"

#include <fmt/format.h>

#include <iterator>

namespace report {

namespace {

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

void line(std::string* out, std::initializer_list<std::string> fields) {
  bool first = true;
  for (const std::string& f : fields) {
    if (!first) *out += ',';
    *out += field(f);
    first = false;
  }
  *out += '\n';
}

}  // namespace

std::string render_run_csv(const Results& r) {
  std::string out;
  line(&out, {"name", "value", "unit"});
  for (const Metric& m : r.metrics) line(&out, {m.name, fmt::format("{}", m.value), m.unit});
  // Each task group: group.PATH.usage_ns, .share, .cpu_weight, .idle.
  for (const GroupResult& g : r.groups) {
    line(&out, {"group." + g.path + ".usage_ns", fmt::format("{}", g.usage_ns), "ns"});
    line(&out, {"group." + g.path + ".share", fmt::format("{}", g.share), "of machine"});
    line(&out, {"group." + g.path + ".cpu_weight", fmt::format("{}", g.cpu_weight), ""});
    line(&out, {"group." + g.path + ".idle", fmt::format("{}", g.idle), ""});
  }
  for (const LatencySummary& l : r.latencies) {
    line(&out, {l.name + ".count", fmt::format("{}", l.count), ""});
    for (auto [stat, v] : {std::pair<const char*, int64_t>{"min_ns", l.min_ns},
                           {"p50_ns", l.p50_ns},
                           {"p99_ns", l.p99_ns},
                           {"p999_ns", l.p999_ns},
                           {"max_ns", l.max_ns}})
      line(&out, {l.name + "." + stat, fmt::format("{}", v), "ns"});
    line(&out, {l.name + ".mean_ns", fmt::format("{}", l.mean_ns), "ns"});
  }
  return out;
}

std::string render_comparison_csv(const Comparison& c) {
  std::string out;
  line(&out, {"setting", "metric", "unit", "seed", "value"});
  for (const ComparisonRow& row : c.rows)
    for (size_t m = 0; m < c.metrics.size(); ++m)
      for (size_t s = 0; s < row.values[m].size(); ++s)
        line(&out, {row.setting, c.metrics[m], c.units[m],
                    s < row.seeds.size() ? fmt::format("{}", row.seeds[s]) : std::string(),
                    fmt::format("{}", row.values[m][s])});
  return out;
}

}  // namespace report
