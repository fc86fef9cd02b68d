// schedlab's commands over CLI11.
#include "cli/commands.h"
#include "cli/real_compare.h"
#include "real/runner.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "hw/machine.h"
#include "kernel/config.h"
#include "report/json.h"
#include "report/output_file.h"
#include "report/table.h"
#include "report/compare.h"
#include "scenario/compare.h"
#include "scenario/experiment.h"
#include "workloads/workload.h"

namespace cli {

namespace {

constexpr int kExitBadInput = 2;

int fail(const std::string& msg) {
  std::fprintf(stderr, "schedlab: error: %s\n", msg.c_str());
  return kExitBadInput;
}

bool file_exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

// A progress line on stderr for runs longer than ~2 s, only on a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(int64_t duration_ns) : duration_ns_(duration_ns), tty_(isatty(2)) {}
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void operator()(double done) {
    if (!tty_) return;
    const double wall = elapsed();
    if (wall < 2.0 && !shown_) return;
    shown_ = true;
    std::fprintf(stderr, "\r[%3.0f%%] simulated %.2f of %.2f s, %.1f s elapsed", done * 100,
                 done * static_cast<double>(duration_ns_) / 1e9,
                 static_cast<double>(duration_ns_) / 1e9, wall);
    std::fflush(stderr);
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  int64_t duration_ns_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct RunOptions {
  std::string target;
  // Text as given ("" = not given; an empty value given is refused by the parser).
  std::string machine, kernel, duration, json, cpus, seed, proc;
  std::vector<std::string> sets;
  std::vector<std::string> also;
  bool per_task = false, per_cpu = false;
};

// An integer option's value in lo..hi, or an error naming the option and the value given.
std::string parse_int_option(const char* name, const std::string& text, long long lo, long long hi,
                             long long* out) {
  long long n = 0;
  if (!kernel::parse_int(text, &n) || n < lo || n > hi)
    return fmt::format("{}: must be an integer from {} to {} (got '{}')", name, lo, hi, text);
  *out = n;
  return "";
}

// The experiment a run (or each row of a comparison) starts from: target, then options,
// then --set. Returns "" or the error.
std::string build_experiment(const RunOptions& o, scenario::Experiment* out) {
  scenario::Experiment e;
  if (!o.target.empty()) {
    if (workloads::find_workload(o.target)) {
      e.workload = o.target;
    } else if (o.target.find(".toml") != std::string::npos || file_exists(o.target)) {
      if (!file_exists(o.target)) return "scenario file '" + o.target + "' does not exist";
      if (std::string err = scenario::load_scenario_file(o.target, &e); !err.empty()) return err;
    } else {
      return "unknown workload '" + o.target + "' (see: schedlab list)";
    }
  }
  auto set = [&](const char* key, const std::string& v) {
    return v.empty() ? std::string() : scenario::set_key(&e, key, v);
  };
  for (auto [k, v] : {std::pair<const char*, std::string>{"machine", o.machine},
                      {"kernel", o.kernel},
                      {"duration", o.duration}})
    if (std::string err = set(k, v); !err.empty()) return err;
  long long n = 0;
  if (!o.cpus.empty()) {
    if (std::string err = parse_int_option("--cpus", o.cpus, 1, 1000000, &n); !err.empty()) return err;
    e.cpus = static_cast<int>(n);
  }
  if (!o.seed.empty()) {
    if (std::string err = parse_int_option("--seed", o.seed, 0, INT64_MAX, &n); !err.empty()) return err;
    e.seed = static_cast<uint64_t>(n);
  }
  for (const std::string& s : o.sets)
    if (std::string err = scenario::set_assignment(&e, s); !err.empty()) return err;
  for (const std::string& a : o.also)
    if (std::string err = scenario::add_also(&e, a); !err.empty()) return err;
  if (std::string err = scenario::validate(e); !err.empty()) return err;
  *out = std::move(e);
  return "";
}

int do_run(const RunOptions& o) {
  scenario::Experiment e;
  if (std::string err = build_experiment(o, &e); !err.empty()) return fail(err);
  long long proc_pid = 0;
  if (!o.proc.empty())
    if (std::string err = parse_int_option("--proc", o.proc, 1, INT32_MAX, &proc_pid); !err.empty())
      return fail(err);
  if (proc_pid && o.json == "-")
    return fail("--proc: the dump is printed with the table, which --json - suppresses");
  // The destination is checked (its temporary created) before the run, not after it.
  report::OutputFile out;
  std::string werr;
  if (!o.json.empty() && !out.open(o.json, &werr)) return fail(werr);

  report::Results r;
  ProgressLine progress(e.duration_ns);
  if (std::string err = scenario::run(e, &r, std::ref(progress)); !err.empty()) return fail(err);
  // Checked before anything is written: a bad pid leaves no output file.
  if (proc_pid && std::none_of(r.tasks.begin(), r.tasks.end(),
                               [&](const report::TaskResult& t) { return t.pid == proc_pid; }))
    return fail("--proc: no task with pid " + std::to_string(proc_pid));
  if (!o.json.empty() && !out.commit(report::render_json(r), &werr)) return fail(werr);
  if (o.json != "-") {
    report::TableOptions t;
    t.per_task = o.per_task;
    t.per_cpu = o.per_cpu;
    std::cout << report::render_table(r, t);
    for (const report::TaskResult& task : r.tasks)
      if (proc_pid && task.pid == proc_pid)
        std::cout << "\n" << report::render_proc_sched(task, report::nr_threads(r, task.tgid));
  }
  return 0;
}

struct CompareOptions {
  RunOptions run;
  std::string vary;
  std::vector<std::string> rows;  // LABEL:k=v,k=v
  std::string seeds = "3";
  std::string jobs = "0";
  std::vector<std::string> metrics;
};

int do_compare(const CompareOptions& o, const std::string& banner = "") {
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
  report::OutputFile out;
  std::string werr;
  if (!o.run.json.empty() && !out.open(o.run.json, &werr)) return fail(werr);
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
  if (o.run.json != "-") std::cout << banner << report::render_comparison(c);
  return 0;
}

int do_list(const std::string& what) {
  if (!what.empty()) {
    const workloads::WorkloadInfo* w = workloads::find_workload(what);
    if (!w) return fail("list: unknown workload '" + what + "'");
    std::cout << fmt::format("{} - {}\n\nparameters (name, default, meaning):\n", w->name, w->description);
    for (const auto& p : w->params)
      std::cout << fmt::format("  {:<12} {:<18} {}\n", p.name, p.default_value, p.help);
    return 0;
  }
  std::cout << "workloads:\n";
  for (const auto& w : workloads::registry())
    std::cout << fmt::format("  {:<16} {}\n", w.name, w.description);
  std::cout << "\nmachines:\n";
  for (const std::string& name : hw::builtin_machines()) {
    hw::Machine m;
    const hw::LoadResult lr = hw::load_machine(name, &m);
    std::cout << fmt::format("  {:<8} {}\n", name,
                             lr.ok() ? fmt::format("{} CPUs: {}", m.topo.nr_cpus, m.description)
                                     : lr.error);
  }
  std::cout << "\nkernel settings (--set KEY=VALUE), defaults of 7.0:\n"
               "  kernel           6.12 | 6.18 | 7.0 (default 7.0)\n"
               "  hz               100 | 250 | 300 | 1000 (default 250)\n"
               "  preempt          none | voluntary | full | lazy (default per version)\n"
               "  base_slice_ns    normalized base slice, before the CPU-count factor (debugfs shows it\n"
               "                   scaled; default 750000 in 6.12, else 700000)\n"
               "  nohz_idle        true | false (default true)\n"
               "  skew_tick        0 | 1: offset each CPU's tick (boot parameter; default 0)\n"
               "  launcher         task | outside: who forks the threads: a task that takes CPU\n"
               "                   time where it runs, or a parent off the machine (default task)\n"
               "  migration_cost_ns, rr_timeslice_ms\n"
               "  fair_server.runtime_ns, fair_server.period_ns\n"
               "                   fair deadline server (default 50000000 per 1000000000; 0 = off)\n"
               "  slice_ext        none | rfc | rseq2023 | mainline (default: the workload's ext)\n"
               "  slice_ext.nsec   grant length with its unit (default 50us rfc/rseq2023, 5us mainline:\n"
               "                   5us..50us)\n"
               "  slice_ext.tick, slice_ext.fair_only, slice_ext.no_defer_rt, slice_ext.lazy_remote\n"
               "                   true | false: the review's policy switches (default false)\n"
               "  slice_ext.rseq_miss  probability the rseq page is not resident (default 0): the\n"
               "                   kernel's access fails and the hint is dropped. This models the\n"
               "                   concern raised against the RFC, not 7.0, which would fault the\n"
               "                   page in\n"
               "  slice_ext.rseq_len   rseq_len each thread registers: 32 = glibc 2.35-2.40 (legacy),\n"
               "                   more = RSEQ ABI v2, as glibc 2.41+ (e.g. 64; default 32)\n"
               "  slice_ext.require_rseq_v2  true = 7.0.10+: slice extensions only for v2\n"
               "                   registrations (default false = 7.0 as released)\n"
               "  slice_ext.page_limit [task_shared] pages per process (default 0 = no limit)\n"
               "  mm_cid           default | off | lazy | batched | owner: rseq concurrency IDs\n"
               "                   (default: lazy in 6.12/6.18, owner in 7.0; batched needs 6.18)\n"
               "  mm_cid.scan_batch CPUs per scan call of batched (default 8; 1..CPU count)\n"
               "  softirq.ksoftirqd, softirq.threadirqs, softirq.irq_time_accounting,\n"
               "  softirq.preempt_rt, softirq.latency_sensi_flag\n"
               "                   true | false: ksoftirqd threads exist, boot option threadirqs,\n"
               "                   CONFIG_IRQ_TIME_ACCOUNTING, PREEMPT_RT softirq handling, the\n"
               "                   latency_sensi_flag patch (default false; docs/model.md)\n"
               "  sched_feat.NAME  true | false (defaults of 7.0; other versions noted where they differ):\n";
  // Defaults of 7.0, with the versions whose default differs.
  const kernel::KernelVersion versions[] = {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18};
  const kernel::KernelConfig d = kernel::default_config(kernel::KernelVersion::V7_0);
  for (int i = 0; i < kernel::nr_sched_feats(); ++i) {
    const auto bit = static_cast<kernel::sched_feat_bit>(i);
    std::string other;
    for (kernel::KernelVersion v : versions)
      if (kernel::default_config(v).feat(bit) != d.feat(bit))
        other += fmt::format("{}{}: {}", other.empty() ? " (" : ", ", kernel::version_name(v),
                             d.feat(bit) ? "false" : "true");
    if (!other.empty()) other += ")";
    std::cout << fmt::format("  sched_feat.{:<20} {}{}\n", kernel::sched_feat_name(i),
                             d.feat(bit) ? "true" : "false", other);
  }
  std::cout << "\nmachine costs (--set machine.KEY=VALUE, or a scenario's [costs] table):\n"
               "  any cost key of docs/machines.md, e.g. machine.timer_irq_jitter_ns=0 for exact timers\n";
  std::cout << "\nWorkload parameters: schedlab list WORKLOAD\n";
  return 0;
}

// The processor the bench ran on, from /proc/cpuinfo ("AMD EPYC (family 26, model 2)"), so
// that a figure can be told apart from one taken elsewhere: the same build has run 2.6 times
// faster on one VM of this project's kind than on another. "unknown" if unreadable.
std::string host_cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model;
  auto value = [&](const char* key, std::string* out) {
    if (!out->empty() || line.rfind(key, 0) != 0) return;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return;
    const size_t b = line.find_first_not_of(" \t", colon + 1);
    *out = b == std::string::npos ? "" : line.substr(b);
  };
  while (std::getline(in, line) && (name.empty() || family.empty() || model.empty())) {
    value("model name", &name);
    value("cpu family", &family);
    if (line.rfind("model\t", 0) == 0) value("model", &model);
  }
  if (name.empty()) return "unknown";
  if (family.empty() || model.empty()) return name;
  return fmt::format("{} (family {}, model {})", name, family, model);
}

// The fixed benchmark scenario: Genoa, 300 spin-lock clients + 400 hogs, HZ=250.
int do_bench(const std::string& json, const std::string& duration,
             const std::vector<std::string>& sets, const std::string& repeat_text) {
  long long repeat = 1;
  if (std::string err = parse_int_option("--repeat", repeat_text, 1, 1000, &repeat); !err.empty())
    return fail(err);
  scenario::Experiment e;
  e.workload = "spinlock";
  e.machine = "genoa";
  e.duration_ns = 10LL * 1000 * 1000 * 1000;
  for (const char* s : {"threads=300", "locks=30", "hogs=400", "hz=250"})
    scenario::set_assignment(&e, s);
  if (!duration.empty())
    if (std::string err = scenario::set_key(&e, "duration", duration); !err.empty()) return fail(err);
  std::string extra;
  for (const std::string& s : sets) {
    if (std::string err = scenario::set_assignment(&e, s); !err.empty()) return fail(err);
    extra += " " + s;
  }
  if (std::string err = scenario::validate(e); !err.empty()) return fail(err);
  report::OutputFile out;
  std::string werr;
  if (!json.empty() && !out.open(json, &werr)) return fail(werr);
  // On a shared or virtual machine the wall time of one run varies by several percent;
  // with --repeat the figures are those of the fastest run (the least disturbed one).
  report::Results r;
  std::vector<double> walls;
  for (int i = 0; i < repeat; ++i) {
    ProgressLine progress(e.duration_ns);
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string err = scenario::run(e, &r, std::ref(progress)); !err.empty()) return fail(err);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double wall = *std::min_element(walls.begin(), walls.end());
  const std::string host = host_cpu_description();
  const double eps = static_cast<double>(r.events) / wall;
  const double ratio = static_cast<double>(e.duration_ns) / 1e9 / wall;
  // With --json - the JSON alone goes to stdout (as for run and compare); the table to stderr.
  std::ostream& table_out = json == "-" ? std::cerr : std::cout;
  table_out << fmt::format(
      "bench: {} ({} CPUs), spinlock 300 clients / 30 locks + 400 hogs, HZ=250{}, {:.1f} s simulated\n"
      "  events                {}\n  wall seconds          {:.3f}{}\n"
      "  events/s              {:.0f}\n  simulated s / wall s  {:.3f}\n  host CPU              {}\n",
      r.machine, r.cpus, extra, static_cast<double>(e.duration_ns) / 1e9, r.events, wall,
      repeat > 1 ? fmt::format("  (fastest of {} runs; slowest {:.3f})", repeat,
                               *std::max_element(walls.begin(), walls.end()))
                 : std::string(),
      eps, ratio, host);
  if (!json.empty()) {
    nlohmann::ordered_json j;
    j["scenario"] = "genoa spinlock threads=300 locks=30 hogs=400 hz=250" + extra;
    j["machine"] = r.machine;
    j["cpus"] = r.cpus;
    j["simulated_seconds"] = static_cast<double>(e.duration_ns) / 1e9;
    j["events"] = r.events;
    j["repeat"] = repeat;
    j["wall_seconds"] = wall;
    j["wall_seconds_all"] = walls;
    j["events_per_second"] = eps;
    j["simulated_seconds_per_wall_second"] = ratio;
    j["host_cpu"] = host;
    if (!out.commit(j.dump(2) + "\n", &werr)) return fail(werr);
  }
  return 0;
}

}  // namespace

int main_with_args(const std::vector<std::string>& args) {
  // `schedlab real ...` has its own parser (real/real_main.cc).
  if (!args.empty() && args[0] == "real") {
    real::set_compare_hook(compare_real_with_sim);
    return real::real_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  CLI::App app{"schedlab: a deterministic simulator of the Linux SMP scheduler.\n"
               "With no command, runs the default scenario and prints its table."};
  app.name("schedlab");
  app.set_version_flag("--version", "schedlab 0.1.0");
  app.require_subcommand(0, 1);
  app.footer("Also: schedlab real <extend-sched2|locktable> [options] runs the workload with real\n"
             "threads on this host (see schedlab real --help).\n"
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

  RunOptions ro;
  CLI::App* run = app.add_subcommand("run", "Run a built-in workload or a scenario file");
  opt(run, "target", ro.target, "workload name (see `schedlab list`) or scenario .toml file");
  opt(run, "--machine,-m", ro.machine, "machine profile (genoa, vm50, small4, host) or TOML path");
  opt(run, "--cpus", ro.cpus, "use only the first N CPUs of the machine")->type_name("N");
  opt(run, "--duration,-d", ro.duration, "simulated time with its unit (ns, us, ms, s), e.g. 500ms, 10s");
  opt(run, "--seed", ro.seed, "random seed, 0..2^63-1 (same seed => identical results)")->type_name("N");
  opt(run, "--kernel,-k", ro.kernel, "kernel version: 6.12, 6.18 or 7.0");
  opt(run, "--set,-s", ro.sets, "KEY=VALUE: workload parameter or kernel setting (repeatable)");
  opt(run, "--also", ro.also, "NAME[:k=v,...]: another workload alongside (repeatable)");
  opt(run, "--json", ro.json, "write results as JSON to FILE ('-' = stdout, table suppressed)");
  run->add_flag("--per-task", ro.per_task, "print every task");
  run->add_flag("--per-cpu", ro.per_cpu, "print every CPU");
  opt(run, "--proc", ro.proc, "print a /proc/<pid>/sched-style dump of this task")->type_name("N");

  CompareOptions co;
  CLI::App* cmp = app.add_subcommand("compare", "Run a workload under several settings and seeds");
  opt(cmp, "target", co.run.target, "workload name or scenario .toml file");
  opt(cmp, "--vary", co.vary, "KEY=V1,V2,...: one row per value (e.g. ext=none,rfc,mainline)");
  opt(cmp, "--row", co.rows, "LABEL:k=v,k=v: one row with these settings (repeatable)");
  opt(cmp, "--seeds", co.seeds,
      fmt::format("runs per setting, seeds seed..seed+N-1, 1..{} (default 3)", scenario::kMaxSeeds).c_str())->type_name("N");
  opt(cmp, "--metric", co.metrics, "metric to compare (repeatable; default: all)");
  opt(cmp, "--jobs,-j", co.jobs,
      fmt::format("parallel runs, 0..{} (default 0: number of CPUs)", scenario::kMaxJobs).c_str())->type_name("N");
  opt(cmp, "--machine,-m", co.run.machine, "machine profile or TOML path");
  opt(cmp, "--cpus", co.run.cpus, "use only the first N CPUs")->type_name("N");
  opt(cmp, "--duration,-d", co.run.duration, "simulated time of each run, with its unit (e.g. 1s)");
  opt(cmp, "--seed", co.run.seed, "first seed, 0..2^63-1")->type_name("N");
  opt(cmp, "--kernel,-k", co.run.kernel, "kernel version: 6.12, 6.18 or 7.0");
  opt(cmp, "--set,-s", co.run.sets, "KEY=VALUE for every row (repeatable)");
  opt(cmp, "--also", co.run.also, "NAME[:k=v,...]: another workload alongside (repeatable)");
  opt(cmp, "--json", co.run.json, "write the comparison as JSON ('-' = stdout)");

  std::string list_what;
  CLI::App* list = app.add_subcommand("list", "List workloads, machines and settings");
  opt(list, "workload", list_what, "show this workload's parameters");

  std::string bench_json, bench_duration, bench_repeat = "1";
  std::vector<std::string> bench_sets;
  CLI::App* bench = app.add_subcommand("bench", "Measure simulator speed on a fixed scenario");
  opt(bench, "--json", bench_json, "write events_per_second and simulated_seconds_per_wall_second");
  opt(bench, "--duration", bench_duration, "simulated time (default 10s)");
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
    if (*list) return do_list(list_what);
    if (*cmp) return do_compare(co);
    if (*bench) return do_bench(bench_json, bench_duration, bench_sets, bench_repeat);
    // No command: the RFC thread's lock-table comparison, at a size that runs in seconds.
    CompareOptions def;
    def.run.target = "locktable";
    def.run.machine = "genoa";
    def.run.duration = "1s";
    def.vary = "ext=none,rfc,rseq2023,mainline";
    def.seeds = 3;
    def.metrics = {"sql_executions_per_second", "lock_holder_preemptions", "spin_cpu_share"};
    return do_compare(def,
        "Default: the lock-table test of the RFC thread (300 clients + 400 CPU hogs on a\n"
        "384-CPU Genoa, HZ=250, kernel 7.0), without and with each slice extension design.\n"
        "The hogs start first and spread; Linux's fork placement then keeps most clients on\n"
        "the launcher's socket. Where threads start changes the gains: --set hogs_start=after.\n"
        "Full size: schedlab compare locktable --machine genoa "
        "--vary ext=none,rfc,rseq2023,mainline --seeds 5 --duration 10s\n"
        "More: schedlab --help, docs/slice-extension.md\n\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "schedlab: internal error: %s\n", e.what());
    return 1;
  }
}

}  // namespace cli
