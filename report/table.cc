// Plain-text rendering of Results (report/table.h): a column-aligned report and a
// /proc/<pid>/sched-style task dump.
#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace report {
namespace {

// Continuation lines of wrapped parameter lists stay within this width.
constexpr size_t kWrapWidth = 100;
// Width of the labels of the header block ("kernel", "duration", ...).
constexpr int kLabelWidth = 13;

// A table whose columns are as wide as their widest cell, two spaces apart. Data rows are
// indented by two spaces under the header, whose first cell is the section title.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool right;  // numbers are right-aligned, text left-aligned
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    cells[0] = "  " + cells[0];
    rows_.push_back(std::move(cells));
  }

  bool empty() const { return rows_.empty(); }

  void render(std::string* out) const {
    std::vector<size_t> width(columns_.size());
    for (size_t c = 0; c < columns_.size(); c++) {
      width[c] = columns_[c].header.size();
      for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    std::vector<std::string> header;
    for (const Column& c : columns_) header.push_back(c.header);
    render_row(header, width, out);
    for (const auto& row : rows_) render_row(row, width, out);
  }

 private:
  void render_row(const std::vector<std::string>& cells, const std::vector<size_t>& width,
                  std::string* out) const {
    std::string line;
    for (size_t c = 0; c < cells.size(); c++) {
      if (c > 0) line += "  ";
      // The first column's header is a title: always left-aligned, like its indented cells.
      if (columns_[c].right && c > 0) {
        fmt::format_to(std::back_inserter(line), "{:>{}}", cells[c], width[c]);
      } else {
        fmt::format_to(std::back_inserter(line), "{:<{}}", cells[c], width[c]);
      }
    }
    // Left-aligned last columns (units, help) would otherwise leave trailing blanks.
    while (!line.empty() && line.back() == ' ') line.pop_back();
    *out += line;
    *out += '\n';
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// A metric value with about five significant digits: integers exactly, fractions without
// trailing zeros (but at least one decimal, so 3.00001 shows as "3.0", not as an integer).
std::string format_value(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  const double a = std::fabs(v);
  if (a >= 1e15) return fmt::format("{:.6g}", v);
  if (v == std::trunc(v)) return fmt::format("{}", static_cast<int64_t>(v));
  if (a < 1e-6) return fmt::format("{:.3e}", v);
  const int digits = static_cast<int>(std::floor(std::log10(a))) + 1;  // before the point
  const int decimals = std::clamp(5 - digits, 1, 6);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  while (s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

std::string us(int64_t ns) { return fmt::format("{:.1f}", static_cast<double>(ns) / 1e3); }
std::string us(double ns) { return fmt::format("{:.1f}", ns / 1e3); }

std::string percent(int64_t part, int64_t whole) {
  return fmt::format("{:.1f}", whole > 0 ? 100.0 * static_cast<double>(part) /
                                               static_cast<double>(whole)
                                         : 0.0);
}

// Exact seconds from nanoseconds, trailing zeros dropped: 10 s, 0.0015 s.
std::string seconds(int64_t ns) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string s = fmt::format("{}{}", ns < 0 ? "-" : "", mag / 1000000000);
  if (const uint64_t frac = mag % 1000000000; frac != 0) {
    std::string f = fmt::format("{:09}", frac);
    while (f.back() == '0') f.pop_back();
    s += "." + f;
  }
  return s;
}

// "label     value", wrapping a list of k=v items so long parameter lists stay readable.
void labeled_list(const std::string& label, const std::map<std::string, std::string>& kv,
                  std::string* out) {
  std::string line = fmt::format("  {:<{}}", label, kLabelWidth);
  const size_t indent = line.size();
  bool first = true;
  for (const auto& [k, v] : kv) {
    const std::string item = k + "=" + v;
    if (!first && line.size() + 1 + item.size() > kWrapWidth) {
      *out += line + "\n";
      line = std::string(indent, ' ');
      first = true;
    }
    if (!first) line += ' ';
    line += item;
    first = false;
  }
  *out += line + "\n";
}

void render_header(const Results& r, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "schedlab: {} on {}, {} cpus\n", r.workload, r.machine,
                 r.cpus);
  fmt::format_to(std::back_inserter(*out), "  {:<{}}{}  HZ={}  preempt={}\n", "kernel",
                 kLabelWidth, r.kernel_version, r.hz, r.preempt);
  if (!r.kernel_params.empty()) labeled_list("non-default", r.kernel_params, out);
  if (!r.machine_costs.empty()) labeled_list("costs", r.machine_costs, out);
  fmt::format_to(std::back_inserter(*out), "  {:<{}}{} s  seed {}  events {}\n", "duration",
                 kLabelWidth, seconds(r.duration_ns), r.seed, r.events);
  if (!r.params.empty()) labeled_list("params", r.params, out);
}

void render_metrics(const Results& r, std::string* out) {
  TextTable t({{"metrics", false}, {"value", true}, {"unit", false}, {"", false}});
  for (const Metric& m : r.metrics) t.add_row({m.name, format_value(m.value), m.unit, m.help});
  t.render(out);
}

void render_latencies(const Results& r, std::string* out) {
  TextTable t({{"latency (us)", false},
               {"count", true},
               {"min", true},
               {"p50", true},
               {"p99", true},
               {"p99.9", true},
               {"max", true},
               {"mean", true}});
  for (const LatencySummary& l : r.latencies) {
    t.add_row({l.name, fmt::format("{}", l.count), us(l.min_ns), us(l.p50_ns), us(l.p99_ns),
               us(l.p999_ns), us(l.max_ns), us(l.mean_ns)});
  }
  t.render(out);
}

// The task groups: CPU time (hierarchical), share of the machine, and settings.
void render_groups(const Results& r, std::string* out) {
  TextTable t({{"group", false},
               {"cpu s", true},
               {"machine %", true},
               {"cpu.weight", true},
               {"cpu.idle", true},
               {"cpus", false}});
  for (const GroupResult& g : r.groups)
    t.add_row({g.path, fmt::format("{:.3f}", static_cast<double>(g.usage_ns) / 1e9),
               fmt::format("{:.2f}", 100 * g.share), fmt::format("{}", g.cpu_weight),
               fmt::format("{}", g.idle), g.cpus});
  t.render(out);
}

void render_cpus(const Results& r, const TableOptions& o, std::string* out) {
  int64_t user = 0, kernel = 0, idle = 0;
  uint64_t switches = 0;
  // Busiest and least busy by busy share; ties go to the lower-numbered CPU (first seen).
  const CpuResult* busiest = nullptr;
  const CpuResult* least = nullptr;
  double busiest_share = 0, least_share = 0;
  for (const CpuResult& c : r.per_cpu) {
    user += c.user_ns;
    kernel += c.kernel_ns;
    idle += c.idle_ns;
    switches += c.nr_switches;
    const int64_t total = c.user_ns + c.kernel_ns + c.idle_ns;
    const double share =
        total > 0 ? static_cast<double>(c.user_ns + c.kernel_ns) / static_cast<double>(total) : 0;
    if (busiest == nullptr || share > busiest_share) {
      busiest = &c;
      busiest_share = share;
    }
    if (least == nullptr || share < least_share) {
      least = &c;
      least_share = share;
    }
  }
  const int64_t total = user + kernel + idle;
  fmt::format_to(std::back_inserter(*out),
                 "{:<{}}user {}%  kernel {}%  idle {}%  over {} cpus, {} switches\n", "cpus",
                 kLabelWidth + 2, percent(user, total), percent(kernel, total),
                 percent(idle, total), r.per_cpu.size(), switches);
  // Compared as printed: "busiest 100.0%, least busy 100.0%" would read as a contradiction.
  const std::string most = fmt::format("{:.1f}", 100 * busiest_share);
  const std::string fewest = fmt::format("{:.1f}", 100 * least_share);
  if (most == fewest) {
    fmt::format_to(std::back_inserter(*out), "{:<{}}every cpu {}% busy\n", "", kLabelWidth + 2,
                   most);
  } else {
    fmt::format_to(std::back_inserter(*out),
                   "{:<{}}busiest cpu {} ({}% busy), least busy cpu {} ({}% busy)\n", "",
                   kLabelWidth + 2, busiest->cpu, most, least->cpu, fewest);
  }
  if (!o.per_cpu) return;
  TextTable t({{"cpu", false},
               {"user %", true},
               {"kernel %", true},
               {"idle %", true},
               {"busy %", true},
               {"switches", true}});
  for (const CpuResult& c : r.per_cpu) {
    const int64_t all = c.user_ns + c.kernel_ns + c.idle_ns;
    t.add_row({fmt::format("{}", c.cpu), percent(c.user_ns, all), percent(c.kernel_ns, all),
               percent(c.idle_ns, all), percent(c.user_ns + c.kernel_ns, all),
               fmt::format("{}", c.nr_switches)});
  }
  t.render(out);
}

// The per-comm totals, in order of each comm's first task, so rows keep their place from
// one run to the next.
struct CommTotals {
  std::string comm;
  int threads = 0;
  int64_t run_ns = 0, wait_sum_ns = 0, wait_max_ns = 0, spin_ns = 0;
  uint64_t wait_count = 0, nvcsw = 0, nivcsw = 0, migrations = 0, lhp = 0;
};

void render_comms(const Results& r, const TableOptions& o, std::string* out) {
  std::vector<CommTotals> comms;
  std::map<std::string, size_t> index;
  for (const TaskResult& t : r.tasks) {
    auto [it, added] = index.emplace(t.comm, comms.size());
    if (added) comms.push_back({.comm = t.comm});
    CommTotals& c = comms[it->second];
    c.threads++;
    c.run_ns += t.run_ns;
    c.wait_sum_ns += t.wait_sum_ns;
    c.wait_max_ns = std::max(c.wait_max_ns, t.wait_max_ns);
    c.wait_count += t.wait_count;
    c.spin_ns += t.spin_ns;
    c.nvcsw += t.nvcsw;
    c.nivcsw += t.nivcsw;
    c.migrations += t.nr_migrations;
    c.lhp += t.lock_holder_preemptions;
  }
  TextTable t({{"tasks by comm", false},
               {"threads", true},
               {"run s", true},
               {"mean wait us", true},
               {"max wait us", true},
               {"nvcsw", true},
               {"nivcsw", true},
               {"migrations", true},
               {"lhp", true},
               {"spin %", true}});
  const size_t shown = std::min(comms.size(), static_cast<size_t>(std::max(o.max_comms, 0)));
  for (size_t i = 0; i < shown; i++) {
    const CommTotals& c = comms[i];
    const double mean_wait =
        c.wait_count ? static_cast<double>(c.wait_sum_ns) / static_cast<double>(c.wait_count) : 0;
    t.add_row({c.comm, fmt::format("{}", c.threads),
               fmt::format("{:.3f}", static_cast<double>(c.run_ns) / 1e9), us(mean_wait),
               us(c.wait_max_ns), fmt::format("{}", c.nvcsw), fmt::format("{}", c.nivcsw),
               fmt::format("{}", c.migrations), fmt::format("{}", c.lhp),
               percent(c.spin_ns, c.run_ns)});
  }
  t.render(out);
  if (shown < comms.size()) {
    fmt::format_to(std::back_inserter(*out), "  ... {} more comms\n", comms.size() - shown);
  }
}

// On machines with more than one socket: how many tasks of each comm sit on each socket at
// the end of the run (by the CPU each task ran on last). Fork placement and balancing decide
// it, and results can hinge on it (docs/slice-extension.md, "Where the threads start").
void render_sockets(const Results& r, const TableOptions& o, std::string* out) {
  std::map<int, int> socket_of;  // cpu -> socket
  std::set<int> sockets;
  for (const CpuResult& c : r.per_cpu) {
    socket_of[c.cpu] = c.socket;
    sockets.insert(c.socket);
  }
  if (sockets.size() < 2) return;
  std::vector<std::string> comms;
  std::map<std::pair<int, std::string>, int> count;
  for (const TaskResult& t : r.tasks) {
    if (std::find(comms.begin(), comms.end(), t.comm) == comms.end()) comms.push_back(t.comm);
    auto it = socket_of.find(t.cpu);
    if (it != socket_of.end()) count[{it->second, t.comm}]++;
  }
  comms.resize(std::min(comms.size(), static_cast<size_t>(std::max(o.max_comms, 0))));
  std::vector<TextTable::Column> cols{{"tasks by socket", false}};
  for (const std::string& c : comms) cols.push_back({c, true});
  TextTable t(cols);
  for (int s : sockets) {
    std::vector<std::string> row{fmt::format("{}", s)};
    for (const std::string& c : comms) {
      auto it = count.find({s, c});
      row.push_back(fmt::format("{}", it == count.end() ? 0 : it->second));
    }
    t.add_row(row);
  }
  out->push_back('\n');
  t.render(out);
}

// Fair tasks show their nice value, RT tasks "rt<priority>".
std::string priority(const TaskResult& t) {
  if (t.policy == "fifo" || t.policy == "rr") return fmt::format("rt{}", t.rt_priority);
  return fmt::format("{}", t.nice);
}

void render_tasks(const Results& r, const TableOptions& o, std::string* out) {
  TextTable t({{"tasks", false},
               {"comm", false},
               {"policy", false},
               {"pri", true},
               {"cpu", true},
               {"run ms", true},
               {"wait ms", true},
               {"max wait us", true},
               {"waits", true},
               {"nvcsw", true},
               {"nivcsw", true},
               {"migr", true},
               {"wakeups", true},
               {"syscalls", true},
               {"lhp", true},
               {"spin %", true}});
  const size_t shown = std::min(r.tasks.size(), static_cast<size_t>(std::max(o.max_tasks, 0)));
  for (size_t i = 0; i < shown; i++) {
    const TaskResult& k = r.tasks[i];
    t.add_row({fmt::format("{}", k.pid), k.comm, k.policy, priority(k), fmt::format("{}", k.cpu),
               fmt::format("{:.3f}", static_cast<double>(k.run_ns) / 1e6),
               fmt::format("{:.3f}", static_cast<double>(k.wait_sum_ns) / 1e6),
               us(k.wait_max_ns), fmt::format("{}", k.wait_count), fmt::format("{}", k.nvcsw),
               fmt::format("{}", k.nivcsw), fmt::format("{}", k.nr_migrations),
               fmt::format("{}", k.nr_wakeups), fmt::format("{}", k.nr_syscalls),
               fmt::format("{}", k.lock_holder_preemptions), percent(k.spin_ns, k.run_ns)});
  }
  t.render(out);
  if (shown < r.tasks.size()) {
    fmt::format_to(std::back_inserter(*out), "  ... {} more tasks\n", r.tasks.size() - shown);
  }
}

// Linux's __PS: a count, key padded to 45 columns, value right-aligned in 21.
void ps(std::string_view key, int64_t v, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{:<45}:{:>21}\n", key, v);
}

// Linux's __PSN: nanoseconds as milliseconds with 6 decimals (SPLIT_NS). Linux loses the
// sign of values in (-1 ms, 0); here the sign is kept, since vlag is often in that range.
void psn(std::string_view key, int64_t ns, std::string* out) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  const std::string ms = fmt::format("{}{}", ns < 0 ? "-" : "", mag / 1000000);
  fmt::format_to(std::back_inserter(*out), "{:<45}:{:>14}.{:06}\n", key, ms, mag % 1000000);
}

}  // namespace

std::string render_table(const Results& r, const TableOptions& o) {
  std::string out;
  render_header(r, &out);
  if (!r.metrics.empty()) {
    out += '\n';
    render_metrics(r, &out);
  }
  if (!r.latencies.empty()) {
    out += '\n';
    render_latencies(r, &out);
  }
  if (!r.per_cpu.empty()) {
    out += '\n';
    render_cpus(r, o, &out);
  }
  if (!r.groups.empty()) {
    out += '\n';
    render_groups(r, &out);
  }
  if (!r.tasks.empty()) {
    out += '\n';
    render_comms(r, o, &out);
    render_sockets(r, o, &out);
    if (o.per_task) {
      out += '\n';
      render_tasks(r, o, &out);
    }
  }
  if (!r.notices.empty() || r.warnings > 0) out += '\n';
  for (const std::string& n : r.notices) out += "notice: " + n + "\n";
  if (r.warnings > 0) {
    fmt::format_to(std::back_inserter(out), "warnings: {} (first: {})\n", r.warnings,
                   r.first_warning);
  }
  // The original program's result lines, unprefixed, so that the filters written for the
  // original (`| egrep -e "^Ran|^Total|^avg"`) work on schedlab's output too.
  if (!r.output.empty()) out += '\n';
  for (const std::string& line : r.output) out += line + "\n";
  return out;
}

int linux_policy(const std::string& policy) {
  if (policy == "normal") return 0;
  if (policy == "fifo") return 1;
  if (policy == "rr") return 2;
  if (policy == "batch") return 3;
  if (policy == "idle") return 5;
  return -1;
}

int linux_prio(const TaskResult& t) {
  // MAX_RT_PRIO - 1 - rt_priority for RT tasks, DEFAULT_PRIO + nice otherwise.
  if (t.policy == "fifo" || t.policy == "rr") return 99 - t.rt_priority;
  return 120 + t.nice;
}

int nr_threads(const Results& r, int tgid) {
  return static_cast<int>(std::count_if(r.tasks.begin(), r.tasks.end(),
                                        [tgid](const TaskResult& t) { return t.tgid == tgid; }));
}

std::string render_proc_sched(const TaskResult& t) { return render_proc_sched(t, 1); }

std::string render_proc_sched(const TaskResult& t, int nr_threads) {
  std::string out;
  fmt::format_to(std::back_inserter(out), "{} ({}, #threads: {})\n", t.comm, t.pid, nr_threads);
  out += std::string(67, '-') + "\n";
  // Linux's order (proc_sched_show_task), with se.deadline and se.vlag (which Linux shows
  // only in /sys/kernel/debug/sched/debug) next to se.vruntime; schedstats as if enabled.
  psn("se.vruntime", static_cast<int64_t>(t.vruntime), &out);
  psn("se.deadline", static_cast<int64_t>(t.deadline), &out);
  psn("se.vlag", t.vlag, &out);
  psn("se.sum_exec_runtime", t.sum_exec_runtime_ns, &out);
  ps("se.nr_migrations", static_cast<int64_t>(t.nr_migrations), &out);
  psn("wait_max", t.wait_max_ns, &out);
  psn("wait_sum", t.wait_sum_ns, &out);
  ps("wait_count", static_cast<int64_t>(t.wait_count), &out);
  ps("nr_wakeups", static_cast<int64_t>(t.nr_wakeups), &out);
  ps("nr_switches", static_cast<int64_t>(t.nvcsw + t.nivcsw), &out);
  ps("nr_voluntary_switches", static_cast<int64_t>(t.nvcsw), &out);
  ps("nr_involuntary_switches", static_cast<int64_t>(t.nivcsw), &out);
  ps("se.load.weight", static_cast<int64_t>(t.load_weight), &out);
  ps("se.avg.load_avg", static_cast<int64_t>(t.load_avg), &out);
  ps("se.avg.runnable_avg", static_cast<int64_t>(t.runnable_avg), &out);
  ps("se.avg.util_avg", static_cast<int64_t>(t.util_avg), &out);
  ps("se.avg.util_est", static_cast<int64_t>(t.util_est), &out);
  ps("policy", linux_policy(t.policy), &out);
  ps("prio", linux_prio(t), &out);
  // Linux prints se.slice only for fair tasks (an RT task's slice means nothing).
  if (t.policy != "fifo" && t.policy != "rr") {
    ps("se.slice", static_cast<int64_t>(t.slice_ns), &out);
  }
  for (const auto& [key, value] : t.extra) ps(key, value, &out);
  return out;
}

}  // namespace report
