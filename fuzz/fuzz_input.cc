#include "fuzz/fuzz_input.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "hw/machine.h"
#include "report/results.h"
#include "scenario/experiment.h"

namespace fuzz {

namespace {

constexpr std::string_view kMachineMarker = "%%machine";
constexpr std::string_view kSetMarker = "%%set";

struct Parts {
  std::string_view scenario, machine, sets;
  bool has_machine = false, has_sets = false;
};

Parts split(std::string_view data) {
  Parts p;
  std::string_view* cur = &p.scenario;
  size_t cur_begin = 0;
  size_t pos = 0;
  while (pos <= data.size()) {
    const size_t nl = std::min(data.find('\n', pos), data.size());
    const std::string_view line = data.substr(pos, nl - pos);
    std::string_view* next = nullptr;
    if (line == kMachineMarker) {
      next = &p.machine;
      p.has_machine = true;
    } else if (line == kSetMarker) {
      next = &p.sets;
      p.has_sets = true;
    }
    if (next) {
      *cur = data.substr(cur_begin, pos - cur_begin);
      cur = next;
      cur_begin = std::min(nl + 1, data.size());
    }
    pos = nl + 1;
  }
  *cur = data.substr(cur_begin);
  return p;
}

// A private directory for the parts' files, made once per process and removed at exit.
char g_dir[4096];

void remove_work_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

const char* work_dir() {
  if (g_dir[0] == '\0') {
    const char* tmp = std::getenv("TMPDIR");
    std::snprintf(g_dir, sizeof(g_dir), "%s/schedlab-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) std::abort();  // no temporary directory: nothing can run
    std::atexit(remove_work_dir);
  }
  return g_dir;
}

std::string write_file(const char* name, std::string_view text) {
  const std::string path = std::string(work_dir()) + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) std::abort();
  return path;
}

// True if `v` is an integer beyond kMaxParamNumber (a thread count that would make one
// execution slow, not a bug).
bool too_large(const std::string& v) {
  int64_t n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  return r.ec == std::errc::result_out_of_range ||
         (r.ec == std::errc() && r.ptr == v.data() + v.size() && (n > kMaxParamNumber || n < -kMaxParamNumber));
}

}  // namespace

Result run_input(std::string_view data) {
  Result res;
  const Parts parts = split(data);
  scenario::Experiment e;
  if (!parts.scenario.empty()) {
    if (std::string err = scenario::load_scenario_file(write_file("scenario.toml", parts.scenario), &e);
        !err.empty()) {
      res.error = err;
      return res;
    }
  }
  if (parts.has_machine) {
    if (std::string err = scenario::set_key(&e, "machine", write_file("machine.toml", parts.machine));
        !err.empty()) {
      res.error = err;
      return res;
    }
  }
  if (parts.has_sets) {
    size_t pos = 0;
    while (pos < parts.sets.size()) {
      const size_t nl = std::min(parts.sets.find('\n', pos), parts.sets.size());
      const std::string line(parts.sets.substr(pos, nl - pos));
      pos = nl + 1;
      if (line.empty()) continue;
      const std::string err = line[0] == '+' ? scenario::add_also(&e, line.substr(1))
                                             : scenario::set_assignment(&e, line);
      if (!err.empty()) {
        res.error = err;
        return res;
      }
    }
  }
  if (std::string err = scenario::validate(e); !err.empty()) {
    res.error = err;
    return res;
  }
  res.outcome = Outcome::kValidated;
  // Bounded executions: a valid but huge input is slow, not wrong.
  hw::Machine m;
  if (!scenario::load_experiment_machine(e, &m).empty()) return res;  // validate() loaded it
  if (m.topo.nr_cpus > kMaxCpus || e.also.size() > kMaxAlso) return res;
  for (const auto& [k, v] : e.params)
    if (too_large(v)) return res;
  for (const scenario::ExtraWorkload& x : e.also)
    for (const auto& [k, v] : x.params)
      if (too_large(v)) return res;
  e.duration_ns = std::min(e.duration_ns, kMaxSimNs);
  report::Results r;
  if (std::string err = scenario::run(e, &r); !err.empty()) {
    res.outcome = Outcome::kRejected;  // setup refused it (a workload's own check)
    res.error = err;
    return res;
  }
  res.outcome = Outcome::kRan;
  return res;
}

}  // namespace fuzz
