// `schedlab bench`: simulator speed on a fixed scenario.
#include "cli/cli.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

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

}  // namespace

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

}  // namespace cli
