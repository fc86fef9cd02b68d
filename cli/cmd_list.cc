// `schedlab list`: workloads, machines, kernel settings and machine costs; or one workload's
// parameters, or only the machines, the settings or the costs (the last two as text or as the
// docs' Markdown table).
#include "cli/cli.h"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/settings.h"
#include "workloads/workload.h"

namespace cli {

namespace {
// The built-in profiles, then how to name a generated machine (hw::synth_machine()).
std::string machines_text() {
  std::string t = "machines (--machine NAME):\n";
  for (const std::string& name : hw::builtin_machines()) {
    hw::Machine m;
    const hw::LoadResult lr = hw::load_machine(name, &m);
    t += fmt::format("  {:<8} {}\n", name,
                     lr.ok() ? fmt::format("{} CPUs: {}", m.topo.nr_cpus, m.description) : lr.error);
  }
  const char* example = "synth:8x128x2";
  hw::Machine m;
  const hw::LoadResult lr = hw::load_machine(example, &m);
  t += "  synth:SOCKETSxCORESxSMT[:llc=CORES]\n"
       "           a generated machine of up to 8192 CPUs: SOCKETS sockets of CORES cores with SMT 1 or\n"
       "           2, LLCs of llc cores (default 8), genoa's costs; e.g. --machine " +
       std::string(example) + " (" +
       (lr.ok() ? std::to_string(m.topo.nr_cpus) + " CPUs" : lr.error) + ")\n"
       "  FILE     a machine file in TOML (docs/machines.md)\n";
  return t;
}
}  // namespace

int do_list(const std::string& what, bool markdown) {
  if (what == "settings") {
    std::cout << (markdown ? kernel::settings_markdown() : kernel::settings_text());
    return 0;
  }
  if (what == "costs") {
    std::cout << (markdown ? hw::costs_markdown() : hw::costs_text());
    return 0;
  }
  if (markdown) return fail("--markdown: only with 'list settings' or 'list costs'");
  if (what == "machines") {
    std::cout << machines_text();
    return 0;
  }
  if (!what.empty()) {
    const workloads::WorkloadInfo* w = workloads::find_workload(what);
    if (!w) return fail("list: unknown workload '" + what + "'");
    std::cout << fmt::format("{} - {}\n\nparameters (name, default, meaning):\n", w->name, w->description);
    size_t name_w = 12, default_w = 18;  // columns as wide as the longest entry
    for (const auto& p : w->params) {
      name_w = std::max(name_w, p.name.size());
      default_w = std::max(default_w, p.default_value.size());
    }
    for (const auto& p : w->params)
      std::cout << fmt::format("  {:<{}} {:<{}} {}\n", p.name, name_w, p.default_value, default_w, p.help);
    return 0;
  }
  std::cout << "workloads:\n";
  for (const auto& w : workloads::registry())
    std::cout << fmt::format("  {:<16} {}\n", w.name, w.description);
  std::cout << "\n" << machines_text();
  std::cout << "\n" << kernel::settings_text();
  std::cout << "\n" << hw::costs_text();
  std::cout << "\nWorkload parameters: schedlab list WORKLOAD. Only the machines, settings or costs:\n"
               "schedlab list machines|settings|costs (--markdown: the table of docs/settings.md or docs/machines.md).\n";
  return 0;
}

}  // namespace cli
