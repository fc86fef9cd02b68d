// `schedlab compare` (and the default command): one experiment under several settings and seeds.
#include "cli/cli.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "report/compare.h"
#include "report/csv.h"
#include "report/output_file.h"
#include "scenario/compare.h"

namespace cli {

int do_compare(const CompareOptions& o, const std::string& banner) {
  scenario::CompareSpec spec;
  if (std::string err = build_experiment(o.run, &spec.base); !err.empty()) return fail(err);
  if (!o.vary.empty()) {
    const size_t eq = o.vary.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == o.vary.size())
      return fail("--vary: expected KEY=V1,V2,... (got '" + o.vary + "')");
    spec.vary_key = o.vary.substr(0, eq);
    for (size_t start = eq + 1;;) {
      const size_t comma = o.vary.find(',', start);
      spec.vary_values.push_back(o.vary.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (const std::string& r : o.rows) {
    const size_t colon = r.find(':');
    if (colon == std::string::npos || colon == 0)
      return fail("--row: expected LABEL:key=value,... (got '" + r + "')");
    std::vector<std::string> sets;
    for (size_t start = colon + 1; start < r.size();) {
      size_t comma = r.find(',', start);
      if (comma == std::string::npos) comma = r.size();
      sets.push_back(r.substr(start, comma - start));
      start = comma + 1;
    }
    spec.rows.push_back({r.substr(0, colon), sets});
  }
  if (spec.rows.empty() && spec.vary_values.empty())
    return fail("compare: give --vary KEY=V1,V2,... or one --row per setting");
  long long n = 0;
  if (std::string err = parse_int_option("--seeds", o.seeds, 1, scenario::kMaxSeeds, &n); !err.empty())
    return fail(err);
  spec.seeds = static_cast<int>(n);
  if (std::string err = parse_int_option("--jobs", o.jobs, 0, scenario::kMaxJobs, &n); !err.empty())
    return fail(err);
  spec.jobs = static_cast<int>(n);
  spec.metrics = o.metrics;
  // The destination is checked (its temporary created) before the runs, not after them.
  if (std::string err = check_stdout_outputs(o.run); !err.empty()) return fail(err);
  report::OutputFile out, csv;
  std::string werr;
  if (!o.run.json.empty() && !out.open(o.run.json, &werr)) return fail(werr);
  if (!o.run.csv.empty() && !csv.open(o.run.csv, &werr)) return fail(werr);
  report::Comparison c;
  const bool tty = isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  bool shown = false;
  auto progress = [&](int done, int total) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!tty || (wall < 2.0 && !shown)) return;
    shown = true;
    std::fprintf(stderr, "\r[%d/%d runs] %.1f s elapsed", done, total, wall);
    std::fflush(stderr);
  };
  const std::string err = scenario::compare(spec, &c, progress);
  if (shown) std::fprintf(stderr, "\r\033[K");
  if (!err.empty()) return fail(err);
  if (!o.run.json.empty() && !out.commit(report::comparison_to_json(c).dump(2) + "\n", &werr))
    return fail(werr);
  if (!o.run.csv.empty() && !csv.commit(report::render_comparison_csv(c), &werr)) return fail(werr);
  if (o.run.json != "-" && o.run.csv != "-") std::cout << banner << report::render_comparison(c);
  return 0;
}

CompareOptions default_comparison(std::string* banner) {
  CompareOptions def;
  def.run.target = "locktable";
  def.run.machine = "genoa";
  def.run.duration = "1s";
  def.vary = "ext=none,rfc,rseq2023,mainline";
  def.seeds = "3";  // text, as given on a command line
  def.metrics = {"sql_executions_per_second", "lock_holder_preemptions", "spin_cpu_share"};
  *banner =
      "Default: the lock-table test of the RFC thread (300 clients + 400 CPU hogs on a\n"
      "384-CPU Genoa, HZ=250, kernel 7.0), without and with each slice extension design.\n"
      "The hogs start first and spread; Linux's fork placement then keeps most clients on\n"
      "the launcher's socket. Where threads start changes the gains: --set hogs_start=after.\n"
      "Full size: schedlab compare locktable --machine genoa "
      "--vary ext=none,rfc,rseq2023,mainline --seeds 5 --duration 10s\n"
      "More: schedlab --help, docs/slice-extension.md\n\n";
  return def;
}

}  // namespace cli
