// Fill Results from the kernel's counters after a run (scenario::run): the run's
// description, each task's and CPU's counters, and the metrics every run has. In two parts
// around the workloads' own report(), which keeps the order of Results' metrics.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "report/results.h"
#include "scenario/experiment.h"

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/stats.h"

namespace scenario {

// Starts *out afresh: the experiment (workload, machine, version, settings, `params` as the
// workloads read them), the event count, and every task's and CPU's counters.
void collect_run(const Experiment& e, const std::string& machine_name,
                 const kernel::KernelConfig& cfg, const std::map<std::string, std::string>& params,
                 const hw::Machine& m, const kernel::KernelStats& ks, uint64_t events,
                 report::Results* out);

// After the workloads' metrics: runqueue waits per comm, the user/kernel split of CPU time,
// the kernel's slice extension totals, and the kernel's warnings.
void collect_metrics(const Experiment& e, const kernel::KernelStats& ks, report::Results* out);

}  // namespace scenario
