// `schedlab compare` (and the default command): one experiment under several settings and seeds.
#include "cli/cli.h"

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "report/compare.h"
#include "report/csv.h"
#include "report/output_file.h"
#include "scenario/compare.h"
#include "scenario/compare_mpi.h"

namespace cli {

namespace {
// The comparison the options ask for, or the error naming the bad option.
std::string compare_spec(const CompareOptions& o, scenario::CompareSpec* spec) {
  if (std::string err = build_experiment(o.run, &spec->base); !err.empty()) return err;
  if (!o.vary.empty()) {
    const size_t eq = o.vary.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == o.vary.size())
      return "--vary: expected KEY=V1,V2,... (got '" + o.vary + "')";
    spec->vary_key = o.vary.substr(0, eq);
    for (size_t start = eq + 1;;) {
      const size_t comma = o.vary.find(',', start);
      spec->vary_values.push_back(o.vary.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (const std::string& r : o.rows) {
    const size_t colon = r.find(':');
    if (colon == std::string::npos || colon == 0)
      return "--row: expected LABEL:key=value,... (got '" + r + "')";
    std::vector<std::string> sets;
    for (size_t start = colon + 1; start < r.size();) {
      size_t comma = r.find(',', start);
      if (comma == std::string::npos) comma = r.size();
      sets.push_back(r.substr(start, comma - start));
      start = comma + 1;
    }
    spec->rows.push_back({r.substr(0, colon), sets});
  }
  if (spec->rows.empty() && spec->vary_values.empty())
    return "compare: give --vary KEY=V1,V2,... or one --row per setting";
  long long n = 0;
  if (std::string err = parse_int_option("--seeds", o.seeds, 1, scenario::kMaxSeeds, &n); !err.empty())
    return err;
  spec->seeds = static_cast<int>(n);
  if (std::string err = parse_int_option("--jobs", o.jobs, 0, scenario::kMaxJobs, &n); !err.empty())
    return err;
  spec->jobs = static_cast<int>(n);
  spec->metrics = o.metrics;
  return check_stdout_outputs(o.run);
}
}  // namespace

int do_compare(const CompareOptions& o, const std::string& banner) {
  // With --mpi every rank takes part in each step below, and a step's errors are agreed
  // (MpiJob::agree) so that all ranks stop together with rank 0's exit code.
  scenario::MpiJob job;
  if (o.mpi) {
    if (std::string err = job.init(); !err.empty()) return fail(err);
    set_quiet_errors(job.rank() != 0);
  } else if (const int n = scenario::launcher_size(); n > 1) {
    return fail(fmt::format("--mpi: not given, but this is one of {} processes of an MPI job, each "
                            "of which would run every run; give --mpi to share them", n));
  }
  const bool root = job.rank() == 0;
  scenario::CompareSpec spec;
  scenario::ComparePlan plan;
  std::string err = compare_spec(o, &spec);
  if (err.empty()) err = scenario::plan_compare(spec, &plan);
  // The destination is checked (its temporary created) before the runs, not after them.
  report::OutputFile out, csv;
  if (err.empty() && root && !o.run.json.empty()) out.open(o.run.json, &err);
  if (err.empty() && root && !o.run.csv.empty()) csv.open(o.run.csv, &err);
  if (o.mpi) err = job.agree(err);
  if (!err.empty()) return fail(err);
  report::Comparison c;
  const bool tty = isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  bool shown = false;
  auto progress = [&](int done, int total) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!root || !tty || (wall < 2.0 && !shown)) return;
    shown = true;
    std::fprintf(stderr, "\r[%d/%d runs%s] %.1f s elapsed", done, total, o.mpi ? " of rank 0" : "", wall);
    std::fflush(stderr);
  };
  if (o.mpi) {
    err = scenario::compare_mpi(&job, spec, plan, &c, progress);
  } else {
    std::vector<scenario::RunShare> shares(1);
    scenario::run_share(spec, plan, 0, 1, &shares[0], progress);
    err = scenario::assemble_comparison(spec, plan, &shares, &c);
  }
  if (shown) std::fprintf(stderr, "\r\033[K");
  // Rank 0 writes; the other ranks exit with its code.
  int code = 0;
  if (root) {
    std::string werr;
    if (!err.empty()) {
      code = fail(err);
    } else if (!o.run.json.empty() && !out.commit(report::comparison_to_json(c).dump(2) + "\n", &werr)) {
      code = fail(werr);
    } else if (!o.run.csv.empty() && !csv.commit(report::render_comparison_csv(c), &werr)) {
      code = fail(werr);
    } else if (o.run.json != "-" && o.run.csv != "-") {
      std::cout << banner << report::render_comparison(c) << std::flush;
    }
  }
  return o.mpi ? job.exit_code(code) : code;
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
