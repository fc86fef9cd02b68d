// The cgroup v2 files a scenario may set on a workload's cgroup beyond cpu.weight and
// cpu.max: cpu.weight.nice, cpu.idle, cpuset.cpus and cpu.max.burst (struct CgroupFiles in
// experiment.h).
#pragma once
#include <string>

#include "kernel/kernel.h"
#include "scenario/experiment.h"

namespace scenario {

bool is_cgroup_file_key(const std::string& key);
// Parses one of them into *f; `name` is the key as the error names it ("also.hog.cpu.idle").
std::string parse_cgroup_file_key(const std::string& key, const std::string& name,
                                  const std::string& value, CgroupFiles* f);
// Checks the files against each other, cpu.weight and the machine: `prefix` is "" or
// "also.NAME." for the error's key. "" or a one-line error.
std::string validate_cgroup_files(const std::string& prefix, const std::string& cgroup, long cpu_weight,
                                  const CgroupFiles& f, int nr_cpus);
// Writes them to the cgroup (REQUIRES: validated; the cgroup exists when any is given).
void apply_cgroup_files(kernel::Kernel& k, const std::string& cgroup, const CgroupFiles& f);

}  // namespace scenario
