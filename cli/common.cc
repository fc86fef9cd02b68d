// The pieces the commands share (cli/cli.h).
#include "cli/cli.h"

#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>
#include <utility>

#include "kernel/config.h"
#include "workloads/rt_app.h"
#include "workloads/workload.h"

namespace cli {

namespace {
bool quiet_errors = false;
}  // namespace

void set_quiet_errors(bool quiet) { quiet_errors = quiet; }

int fail(const std::string& msg) {
  if (!quiet_errors) std::fprintf(stderr, "schedlab: error: %s\n", msg.c_str());
  return kExitBadInput;
}

bool file_exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

std::string parse_int_option(const char* name, const std::string& text, long long lo, long long hi,
                             long long* out) {
  long long n = 0;
  if (!kernel::parse_int(text, &n) || n < lo || n > hi)
    return fmt::format("{}: must be an integer from {} to {} (got '{}')", name, lo, hi, text);
  *out = n;
  return "";
}

std::string check_stdout_outputs(const RunOptions& o) {
  if (o.json == "-" && o.csv == "-")
    return "--csv: only one of --json and --csv can be '-' (stdout) (got '-' for both)";
  return "";
}

std::string build_experiment(const RunOptions& o, scenario::Experiment* out) {
  scenario::Experiment e;
  if (!o.target.empty()) {
    if (workloads::find_workload(o.target)) {
      e.workload = o.target;
    } else if (o.target.size() > 5 && o.target.compare(o.target.size() - 5, 5, ".json") == 0) {
      // An rt-app description: the rt-app workload on that file, for its global.duration
      // (--duration overrides it; -1, until every thread ends, keeps the run's default).
      workloads::RtAppDesc d;
      if (std::string err = workloads::load_rt_app_file(o.target, &d); !err.empty()) return err;
      e.workload = "rt-app";
      e.params["file"] = o.target;
      if (d.duration_s > 0) e.duration_ns = d.duration_s * 1000000000;
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

}  // namespace cli
