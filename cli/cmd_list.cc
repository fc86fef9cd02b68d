// `schedlab list`: workloads, machines, kernel settings and machine costs; or one workload's
// parameters, or only the settings or the costs (as text or as the docs' Markdown table).
#include "cli/cli.h"

#include <fmt/format.h>
#include <iostream>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/settings.h"
#include "workloads/workload.h"

namespace cli {

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
  std::cout << "\n" << kernel::settings_text();
  std::cout << "\n" << hw::costs_text();
  std::cout << "\nWorkload parameters: schedlab list WORKLOAD. Only the settings or costs: schedlab list\n"
               "settings|costs (--markdown: the table of docs/settings.md or docs/machines.md).\n";
  return 0;
}

}  // namespace cli
