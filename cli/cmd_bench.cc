// `schedlab bench`: simulator speed on a fixed scenario.
#include "cli/cli.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include "report/output_file.h"

namespace cli {

namespace {

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

// The fixed scenarios of --scenario: a workload on a machine with its parameters, and the
// simulated time of one run unless --duration says otherwise.
struct BenchScenario {
  const char* name;
  const char* workload;
  const char* machine;
  std::vector<const char*> sets;
  const char* duration;
  const char* what;  // for the table's first line
};

const std::vector<BenchScenario>& bench_scenarios() {
  static const std::vector<BenchScenario> all = {
      {"spinlock", "spinlock", "genoa", {"threads=300", "locks=30", "hogs=400", "hz=250"}, "10s",
       "spinlock 300 clients / 30 locks + 400 hogs, HZ=250"},
      {"locktable", "locktable", "genoa", {}, "5s", "locktable 300 clients + 400 hogs"},
      {"oltp", "oltp", "genoa", {}, "1s", "oltp 1000 clients"},
      // scenarios/oltp-cached-genoa.toml's parameters (a test keeps them equal).
      {"oltp-cached", "oltp", "genoa",
       {"hz=250", "clients=1000", "io_prob=0", "think=exp:20us", "steps=4", "work=exp:50us",
        "cs=uniform:1us:5us", "latches=40", "hogs=0"},
       "1s", "oltp cached: 1000 CPU-bound sessions, no I/O"},
      {"large", "locktable", "synth:8x128x2", {}, "1s", "locktable scaled to the machine"},
  };
  return all;
}

// The process's peak resident memory (getrusage ru_maxrss, kilobytes on Linux), in MB: over
// every run so far, setup included.
double peak_memory_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

// The fixed benchmark scenarios: by default Genoa, 300 spin-lock clients + 400 hogs, HZ=250.
int do_bench(const std::string& json, const std::string& duration,
             const std::vector<std::string>& sets, const std::string& repeat_text,
             const std::string& scenario_name) {
  long long repeat = 1;
  if (std::string err = parse_int_option("--repeat", repeat_text, 1, 1000, &repeat); !err.empty())
    return fail(err);
  const BenchScenario* sc = nullptr;
  std::string names;
  for (const BenchScenario& b : bench_scenarios()) {
    if (scenario_name == b.name) sc = &b;
    names += (names.empty() ? "" : ", ") + std::string(b.name);
  }
  if (!sc) return fail("--scenario must be one of " + names + " (got '" + scenario_name + "')");
  scenario::Experiment e;
  e.workload = sc->workload;
  e.machine = sc->machine;
  if (std::string err = scenario::set_key(&e, "duration", sc->duration); !err.empty()) return fail(err);
  // The tasks run in the root group (kernel.sched_autogroup_enabled=0; --set can change it): the
  // speed measured is that of the flat paths, comparable from build to build.
  scenario::set_assignment(&e, "sched_autogroup_enabled=0");
  std::string described = std::string(sc->machine) + " " + sc->workload;
  for (const char* s : sc->sets) {
    scenario::set_assignment(&e, s);
    described += " " + std::string(s);
  }
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
  const double peak_mb = peak_memory_mb();
  // With --json - the JSON alone goes to stdout (as for run and compare); the table to stderr.
  std::ostream& table_out = json == "-" ? std::cerr : std::cout;
  table_out << fmt::format(
      "bench {}: {} ({} CPUs), {}{}, {:g} s simulated\n"
      "  events                {}\n  wall seconds          {:.3f}{}\n"
      "  events/s              {:.0f}\n  simulated s / wall s  {:.3f}\n  peak memory MB        {:.1f}\n"
      "  host CPU              {}\n",
      sc->name, r.machine, r.cpus, sc->what, extra, static_cast<double>(e.duration_ns) / 1e9, r.events, wall,
      repeat > 1 ? fmt::format("  (fastest of {} runs; slowest {:.3f})", repeat,
                               *std::max_element(walls.begin(), walls.end()))
                 : std::string(),
      eps, ratio, peak_mb, host);
  if (!json.empty()) {
    nlohmann::ordered_json j;
    j["scenario"] = described + extra;
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
    j["peak_memory_mb"] = peak_mb;
    if (!out.commit(j.dump(2) + "\n", &werr)) return fail(werr);
  }
  return 0;
}

}  // namespace cli
