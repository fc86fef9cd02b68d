// An experiment: workload + parameters, machine, kernel configuration, duration and seed;
// built from a scenario file (TOML) and `--set key=value` overrides, then run.
// The layer between the model (kernel, workloads) and the front ends (cli, report).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hw/machine.h"
#include "kernel/trace.h"
#include "report/results.h"

namespace scenario {

// The cgroup v2 files of a workload's cgroup beyond cpu.weight (scenario/cgroup_files.cc),
// keys of the main workload and of each `also`:
struct CgroupFiles {
  bool has_weight_nice = false;  // `cpu.weight.nice` given (-20..19): the weight of that nice
  int weight_nice = 0;
  int idle = -1;                 // `cpu.idle` 0 or 1 (-1: not given)
  std::string cpuset_cpus;       // `cpuset.cpus` as a CPU list, "0-3,8" ("": not given)
  int64_t burst_us = -1;         // `cpu.max.burst` in us (-1: not given)
};

// A further workload run alongside the main one on the same machine (e.g. a cyclictest
// thread beside a lock workload, to measure the cost to others).
struct ExtraWorkload {
  std::string workload;
  std::map<std::string, std::string> params;
  bool own_session = false;  // `session=own`: started in a new session (setsid)
  std::string cgroup;        // `cgroup=/a/b`: its threads' cgroup ("" = the root)
  long cpu_weight = 0;       // `cpu.weight` of that cgroup (0 = left at 100)
  std::string cpu_max;       // `cpu.max` of that cgroup ("" = left at "max 100000")
  CgroupFiles cgroup_files;  // its cpu.weight.nice, cpu.idle, cpuset.cpus, cpu.max.burst
};

struct Experiment {
  std::string workload = "spinlock";
  std::string machine = "vm50";
  int cpus = 0;                        // 0 = all CPUs of the machine
  int64_t duration_ns = 1000000000;
  uint64_t seed = 1;
  std::string kernel_version = "7.0";
  // Kernel settings in the order given (hz, preempt, sched_feat.X, ...).
  std::vector<std::pair<std::string, std::string>> kernel_settings;
  std::map<std::string, std::string> params;  // workload parameters given
  // Machine cost overrides (`machine.KEY`, a scenario's [costs]), applied after loading.
  std::vector<std::pair<std::string, std::string>> machine_costs;
  std::vector<ExtraWorkload> also;
  // `session`: "shared" (the default), the workload's processes are in the scenario's
  // session; "own", in a new one (setsid), which gets an autogroup of its own when
  // sched_autogroup_enabled is set. Also a key of each `also` (`--also hog:session=own`).
  bool own_session = false;
  // `cgroup`: an absolute cgroup path the workload's threads run in (created with its
  // ancestors; "" = the root cgroup), and `cpu.weight` (1..10000, default 100) of it: the
  // cgroup v2 cpu controller's weight, tg->shares = weight x 1024 / 100. Also keys of each
  // `also` (`--also hog:cgroup=/batch,cpu.weight=50`).
  std::string cgroup;
  long cpu_weight = 0;
  // `cpu.max`: the cgroup's bandwidth limit as cgroup v2 writes it, "QUOTA PERIOD" in us
  // (QUOTA from 1000, PERIOD 1000..1000000) or "max PERIOD" (no limit); PERIOD may be left
  // out (100000). Needs `cgroup`. Also a key of each `also` (`--also 'hog:cgroup=/c,cpu.max=50000 100000'`).
  std::string cpu_max;
  // `cpu.weight.nice`, `cpu.idle`, `cpuset.cpus` and `cpu.max.burst` of that cgroup (also
  // keys of each `also`).
  CgroupFiles cgroup_files;
};

// Adds a workload to run alongside: "NAME" or "NAME:key=value,key=value".
std::string add_also(Experiment* e, const std::string& spec);

// Sets one key: workload, machine, cpus, duration, seed, kernel (version), a kernel
// setting (hz, preempt, sched_feat.NAME, base_slice_ns, nohz_idle, ...; also as
// kernel.NAME), a machine cost (machine.KEY, e.g. machine.timer_irq_jitter_ns), or a
// workload parameter (NAME or params.NAME). "" or an error naming it.
std::string set_key(Experiment* e, const std::string& key, const std::string& value);
// "key=value" form of set_key.
std::string set_assignment(Experiment* e, const std::string& assignment);
// Reads a scenario file; errors name the file and the key.
std::string load_scenario_file(const std::string& path, Experiment* e);
// Loads e's machine (profile, --cpus, cost overrides) into *m. "" or an error naming it.
std::string load_experiment_machine(const Experiment& e, hw::Machine* m);
// Loads and checks everything a run needs without running it.
std::string validate(const Experiment& e);

// Called with the fraction of simulated time done, from 0 to 1.
using Progress = std::function<void(double)>;
// Runs the experiment. "" and *out filled, or an error naming the bad parameter. With
// `trace`, every tracepoint of the run reports to it (kernel/trace.h); tracing does not
// change the run.
std::string run(const Experiment& e, report::Results* out, const Progress& progress = {},
                kernel::TraceSink* trace = nullptr);

}  // namespace scenario
