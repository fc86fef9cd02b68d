// schedlab's command line over CLI11: each subcommand's options, handed to its command
// (cli/cli.h).
#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <utility>

#include "cli/cli.h"
#include "real/runner.h"
#include "scenario/compare.h"
#include "scenario/compare_mpi.h"
#include "scenario/experiment.h"

namespace cli {

namespace {
// A duration in the largest unit that writes it exactly (1000000000 -> "1s").
std::string duration_text(int64_t ns) {
  for (auto [unit, scale] : {std::pair<const char*, int64_t>{"s", 1000000000}, {"ms", 1000000}, {"us", 1000}})
    if (ns != 0 && ns % scale == 0) return fmt::format("{}{}", ns / scale, unit);
  return fmt::format("{}ns", ns);
}
}  // namespace

int main_with_args(const std::vector<std::string>& args) {
  // `schedlab real ...` has its own parser (real/real_main.cc).
  if (!args.empty() && args[0] == "real") {
    real::set_compare_hook(compare_real_with_sim);
    real::set_rt_app_compare_hook(compare_rt_app_with_sim);
    return real::real_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  // Under an MPI or Slurm launcher, a comparison's errors are printed by rank 0 only: every
  // rank meets the same bad option, and rank 0 learns of any other rank's error.
  set_quiet_errors((args.empty() || args[0] == "compare") && scenario::launcher_rank() > 0);
  std::string unused_banner;
  const CompareOptions def = default_comparison(&unused_banner);
  CLI::App app{fmt::format("schedlab: a deterministic simulator of the Linux SMP scheduler.\n"
                           "With no command, runs the default comparison and prints its table:\n"
                           "{} on {}, --vary {}, {} seeds x {}.",
                           def.run.target, def.run.machine, def.vary, def.seeds, def.run.duration)};
  app.name("schedlab");
  app.set_version_flag("--version", "schedlab 0.1.0");
  app.require_subcommand(0, 1);
  app.footer("Also: schedlab real <extend-sched2|locktable> [options] runs the workload with real\n"
             "threads on this host, schedlab real --rt-app FILE.json runs an rt-app file with rt-app\n"
             "(see schedlab real --help).\n"
             "Durations take their unit: ns, us, ms or s (500ms, 10s). Exit status 2: bad input or\n"
             "an output file that cannot be written, with one line on stderr naming it.");

  // Every value is taken as text and checked by the command, so that an error names the
  // option and the value given; an empty value is an error here, not "not given".
  const CLI::Validator nonempty(
      [](std::string& v) { return v.empty() ? std::string("expected a value, got ''") : std::string(); },
      "", "NONEMPTY");
  auto opt = [&](CLI::App* cmd, const char* names, auto& var, const char* help) {
    return cmd->add_option(names, var, help)->check(nonempty);
  };

  // The defaults shown are the experiment's own (scenario::Experiment), so the help cannot
  // drift from what a run does; a scenario file's values take their place.
  const scenario::Experiment defaults;
  const std::string machine_help = fmt::format(
      "machine profile (genoa, vm100, vm50, small4, host), a generated "
      "synth:SOCKETSxCORESxSMT[:llc=CORES] (e.g. synth:8x128x2, 2048 CPUs; see schedlab list "
      "machines) or a TOML file (default: {})", defaults.machine);
  const std::string duration_help = fmt::format(
      "simulated time with its unit (ns, us, ms, s), e.g. 500ms, 10s (default: {})",
      duration_text(defaults.duration_ns));
  const std::string seed_help = fmt::format(
      "random seed, 0..2^63-1; same seed => identical results (default: {})", defaults.seed);
  const std::string kernel_help =
      fmt::format("kernel version: 6.12, 6.18 or 7.0 (default: {})", defaults.kernel_version);
  const std::string target_help = fmt::format(
      "workload name (see `schedlab list`), scenario .toml file or rt-app .json file (default: {})", defaults.workload);

  RunOptions ro;
  CLI::App* run = app.add_subcommand("run", "Run a built-in workload or a scenario file");
  opt(run, "target", ro.target, target_help.c_str());
  opt(run, "--machine,-m", ro.machine, machine_help.c_str());
  opt(run, "--cpus", ro.cpus, "use only the first N CPUs of the machine (default: all)")->type_name("N");
  opt(run, "--duration,-d", ro.duration, duration_help.c_str());
  opt(run, "--seed", ro.seed, seed_help.c_str())->type_name("N");
  opt(run, "--kernel,-k", ro.kernel, kernel_help.c_str());
  opt(run, "--set,-s", ro.sets, 
      "KEY=VALUE: workload parameter, kernel setting or machine.COST (repeatable; see schedlab "
      "list settings, list costs, list WORKLOAD)");
  opt(run, "--also", ro.also, "NAME[:k=v,...]: another workload alongside (repeatable)");
  opt(run, "--json", ro.json, "write results as JSON to FILE ('-' = stdout, table suppressed)");
  opt(run, "--csv", ro.csv, "write the metrics as CSV (name,value,unit) to FILE ('-' = stdout, table suppressed)");
  run->add_flag("--per-task", ro.per_task, "print every task (see --limit)");
  opt(run, "--limit", ro.limit, "with --per-task: print at most N tasks, 0..2^31-1 (default: all)")
      ->type_name("N");
  run->add_flag("--per-cpu", ro.per_cpu, "print every CPU");
  opt(run, "--proc", ro.proc, "print a /proc/<pid>/sched-style dump of this task")->type_name("N");
  opt(run, "--trace", ro.trace,
      "write the run's scheduler events to FILE: ftrace text (Perfetto), or a trace-cmd "
      "trace.dat if FILE ends in .dat (see docs/tracing.md)")->type_name("FILE");
  opt(run, "--trace-window", ro.trace_window,
      "START,END: trace only this span of simulated time, e.g. 100ms,110ms (default: all)")
      ->type_name("START,END");
  opt(run, "--trace-format", ro.trace_format, "text or dat (default: from the --trace file name)")
      ->type_name("FORMAT");

  CompareOptions co;
  CLI::App* cmp = app.add_subcommand("compare", "Run a workload under several settings and seeds");
  opt(cmp, "target", co.run.target, target_help.c_str());
  opt(cmp, "--vary", co.vary, "KEY=V1,V2,...: one row per value (e.g. ext=none,rfc,mainline)");
  opt(cmp, "--row", co.rows, "LABEL:k=v,k=v: one row with these settings (repeatable)");
  opt(cmp, "--seeds", co.seeds,
      fmt::format("runs per setting, seeds seed..seed+N-1, 1..{} (default 3)", scenario::kMaxSeeds).c_str())->type_name("N");
  opt(cmp, "--metric", co.metrics, "metric to compare (repeatable; default: all)");
  opt(cmp, "--jobs,-j", co.jobs,
      fmt::format("parallel runs, 0..{} (default 0: number of CPUs)", scenario::kMaxJobs).c_str())->type_name("N");
  opt(cmp, "--machine,-m", co.run.machine, machine_help.c_str());
  opt(cmp, "--cpus", co.run.cpus, "use only the first N CPUs (default: all)")->type_name("N");
  opt(cmp, "--duration,-d", co.run.duration, duration_help.c_str());
  opt(cmp, "--seed", co.run.seed,
      fmt::format("first seed, 0..2^63-1 (default: {})", defaults.seed).c_str())->type_name("N");
  opt(cmp, "--kernel,-k", co.run.kernel, kernel_help.c_str());
  opt(cmp, "--set,-s", co.run.sets, "KEY=VALUE for every row (repeatable)");
  opt(cmp, "--also", co.run.also, "NAME[:k=v,...]: another workload alongside (repeatable)");
  opt(cmp, "--json", co.run.json, "write the comparison as JSON ('-' = stdout)");
  opt(cmp, "--csv", co.run.csv, "write every run's values as CSV (setting,metric,unit,seed,value; '-' = stdout)");
  cmp->add_flag("--mpi", co.mpi,
                scenario::mpi_built()
                    ? "share the runs among the ranks of an MPI job (mpirun, srun): rank 0 writes the "
                      "output, the others nothing (docs/mpi.md)"
                    : "share the runs among the ranks of an MPI job (not in this build: configure with "
                      "-DSCHEDLAB_MPI=ON; docs/mpi.md)");

  std::string list_what;
  bool list_markdown = false;
  CLI::App* list = app.add_subcommand("list", "List workloads, machines, kernel settings and machine costs");
  opt(list, "what", list_what, "a workload (its parameters), `machines`, `settings` or `costs`");
  list->add_flag("--markdown", list_markdown, "settings or costs as the Markdown table of the docs");

  std::string plot_in, plot_out;
  CLI::App* plot = app.add_subcommand(
      "plot", "Draw a run's or a comparison's JSON as SVG or PNG with gnuplot (docs/plots.md)");
  opt(plot, "input", plot_in, "JSON of schedlab run --json or schedlab compare --json")->required();
  opt(plot, "--output,-o", plot_out, "image to write: a name ending in .svg or .png")->required();

  std::string bench_json, bench_duration, bench_repeat = "1", bench_scenario = "spinlock";
  std::vector<std::string> bench_sets;
  CLI::App* bench = app.add_subcommand("bench", "Measure simulator speed on a fixed scenario");
  opt(bench, "--json", bench_json, "write events_per_second and simulated_seconds_per_wall_second");
  opt(bench, "--scenario", bench_scenario,
      "spinlock (default: genoa, 300 spin-lock clients, 400 hogs, 10s), locktable (genoa, 5s), oltp "
      "(genoa, 1s), oltp-cached (scenarios/oltp-cached-genoa.toml's load, 1s) or large (locktable on synth:8x128x2, 2048 CPUs, 1s)")->type_name("NAME");
  opt(bench, "--duration", bench_duration, "simulated time (default: the scenario's)");
  opt(bench, "--set,-s", bench_sets, "KEY=VALUE on top of the fixed scenario (e.g. ext=rfc)");
  opt(bench, "--repeat,-r", bench_repeat, "run N times, 1..1000, and report the fastest (default 1)")->type_name("N");

  std::vector<const char*> argv{"schedlab"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    // Named in the order given (CLI11 2.1 lists a subcommand's extras backwards).
    std::vector<std::string> extra = app.remaining(true);
    std::string list;
    for (const std::string& x : extra) list += (list.empty() ? "'" : ", '") + x + "'";
    return fail(fmt::format("unexpected argument{} {} (see: schedlab --help)",
                            extra.size() == 1 ? "" : "s", list));
  } catch (const CLI::ParseError& e) {
    // One line: the parser's message (which names the option) and where to look.
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    while (!msg.empty() && msg.back() == ' ') msg.pop_back();
    return fail(msg + " (see: schedlab --help)");
  }
  try {
    if (*run) return do_run(ro);
    if (*list) return do_list(list_what, list_markdown);
    if (*cmp) return do_compare(co);
    if (*plot) return do_plot(plot_in, plot_out);
    if (*bench) return do_bench(bench_json, bench_duration, bench_sets, bench_repeat, bench_scenario);
    std::string banner;
    return do_compare(default_comparison(&banner), banner);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "schedlab: internal error: %s\n", e.what());
    return 1;
  }
}

}  // namespace cli
