// Building an experiment (scenario files, --set keys) and running it; the results are
// filled from the kernel by scenario/collect.cc.
#include "scenario/experiment.h"

#include <toml++/toml.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/kernel.h"
#include "kernel/settings.h"
#include "scenario/cgroup_files.h"
#include "scenario/collect.h"
#include "sim/engine.h"
#include "sim/parse.h"
#include "workloads/common.h"
#include "workloads/workload.h"

namespace scenario {

namespace {

// A key of the kernel's settings list (kernel/settings.h).
bool is_kernel_key(const std::string& k) { return kernel::is_config_key(k); }

// The slice extension a workload's programs use (parameter `ext`, or extend-sched2's `mode`
// 0..3) is the one the kernel carries, unless the scenario sets `slice_ext` itself (e.g. to
// run a user protocol on a kernel without it).
std::string workload_slice_ext(const std::map<std::string, std::string>& params,
                               kernel::SliceExtAbi* abi, bool* given) {
  *given = false;
  auto mode = params.find("mode");
  if (mode != params.end() && !mode->second.empty()) {
    static const char* const names[] = {"none", "rfc", "rseq2023", "mainline"};
    const std::string& m = mode->second;
    if (m.size() != 1 || m[0] < '0' || m[0] > '3') return "mode: must be 0, 1, 2 or 3 (got '" + m + "')";
    *given = true;
    return kernel::parse_slice_ext_abi(names[m[0] - '0'], abi);
  }
  auto ext = params.find("ext");
  if (ext == params.end()) return "";
  *given = true;
  std::string err = kernel::parse_slice_ext_abi(ext->second, abi);
  return err.empty() ? "" : "ext: " + err.substr(err.find(':') + 2);
}

// Builds the kernel configuration: version defaults, the workload's slice extension, then
// the settings in order.
std::string build_config(const Experiment& e, const std::map<std::string, std::string>& params,
                         kernel::KernelConfig* cfg) {
  kernel::KernelVersion v;
  if (std::string err = kernel::parse_version(e.kernel_version, &v); !err.empty()) return err;
  *cfg = kernel::default_config(v);
  cfg->seed = e.seed;
  bool given = false;
  if (std::string err = workload_slice_ext(params, &cfg->slice_ext.abi, &given); !err.empty()) return err;
  for (const auto& [key, value] : e.kernel_settings)
    if (std::string err = kernel::set_config_key(cfg, key, value); !err.empty()) return err;
  return kernel::validate_config(*cfg);
}

std::string build_params(const Experiment& e, const workloads::WorkloadInfo& w,
                         std::map<std::string, std::string>* out) {
  for (const auto& s : w.params) (*out)[s.name] = s.default_value;
  for (const auto& [k, v] : e.params) {
    if (!out->count(k))
      return "unknown parameter '" + k + "' for workload '" + w.name +
             "' (see: schedlab list " + w.name + ")";
    (*out)[k] = v;
  }
  return "";
}

std::string toml_value_string(const toml::node& n, bool* ok) {
  *ok = true;
  if (auto s = n.value<std::string>()) return *s;
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (n.is_floating_point()) {
    // The shortest text that reads back as the same double (0.1234567 stays 0.1234567).
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof(buf), *n.value<double>());
    return std::string(buf, r.ptr);
  }
  *ok = false;
  return "";
}

// A machine cost's error as set_cost gives it, for `machine.KEY`: the cost reader's
// "machine '--set': costs.KEY ..." becomes "machine.KEY ...", so that a scenario file's
// [costs] error can name the file and the key as written there.
std::string cost_error(const std::string& err) {
  const std::string reader = "machine '--set': costs.";
  return err.rfind(reader, 0) == 0 ? "machine." + err.substr(reader.size()) : err;
}

// A TOML dotted key (cpu.weight = 50 is the table cpu = {weight = 50}) as its leaves, each
// named by its full dotted path.
void flatten_dotted(const std::string& name, const toml::node& n,
                    std::vector<std::pair<std::string, const toml::node*>>* out) {
  if (const toml::table* t = n.as_table()) {
    for (const auto& [k, sub] : *t) flatten_dotted(name + "." + std::string(k.str()), sub, out);
    return;
  }
  out->emplace_back(name, &n);
}

std::string parse_session(const std::string& key, const std::string& value, bool* own) {
  if (value != "shared" && value != "own")
    return key + ": expected shared or own (got '" + value + "')";
  *own = value == "own";
  return "";
}

// `cgroup` and `cpu.weight` of a workload (`name` is the key as the error names it).
bool is_cgroup_key(const std::string& k) { return k == "cgroup" || k == "cpu.weight"; }
std::string parse_cgroup_key(const std::string& k, const std::string& name, const std::string& value,
                             std::string* cgroup, long* weight) {
  if (k == "cgroup") {
    if (value.empty() || value[0] != '/')
      return name + ": must be an absolute cgroup path like /batch/a (got '" + value + "')";
    *cgroup = value;
    return "";
  }
  long long n = 0;
  // cpu_weight_write_u64(): CGROUP_WEIGHT_MIN..CGROUP_WEIGHT_MAX.
  if (!kernel::parse_int(value, &n) || n < 1 || n > 10000)
    return name + ": must be an integer in 1..10000 (got '" + value + "')";
  *weight = static_cast<long>(n);
  return "";
}

// Places the threads created next in `cgroup` with its weight (sched_weight_from_cgroup():
// weight x 1024 / 100, rounded to nearest), or in the root group.
void enter_cgroup(kernel::Kernel& k, const std::string& cgroup, long weight) {
  const int id = cgroup.empty() ? 0 : k.task_group_at(cgroup);
  if (id && weight) k.set_task_group_shares(id, static_cast<unsigned long>((weight * 1024 + 50) / 100));
  k.use_task_group(id);
}

// ---- cpu.max ----
// cpu_max_write() + tg_set_cfs_bandwidth()'s checks: "QUOTA [PERIOD]" or "max [PERIOD]", in
// us; the quota at least 1 ms and at most max_cfs_runtime, the period 1 ms .. 1 s.
std::string parse_cpu_max(const std::string& name, const std::string& value, int64_t* quota_us,
                          int64_t* period_us) {
  const std::string bad = name + ": expected \"QUOTA PERIOD\" or \"max PERIOD\" in microseconds, like "
                          "\"50000 100000\" (got '" + value + "')";
  const size_t sp = value.find(' ');
  const std::string q = value.substr(0, sp);
  const std::string p = sp == std::string::npos ? "" : value.substr(sp + 1);
  if (q.empty() || p.find(' ') != std::string::npos) return bad;
  long long n = 100000;
  if (sp != std::string::npos && !kernel::parse_int(p, &n)) return bad;
  if (n < 1000 || n > 1000000)
    return name + ": period must be from 1000 to 1000000 us (got '" + value + "')";
  *period_us = n;
  if (q == "max") {
    *quota_us = -1;
    return "";
  }
  if (!kernel::parse_int(q, &n)) return bad;
  if (n < 1000 || n > kernel::Kernel::kMaxCfsQuotaUs)
    return name + ": quota must be from 1000 to " + std::to_string(kernel::Kernel::kMaxCfsQuotaUs) +
           " us, or max (got '" + value + "')";
  *quota_us = n;
  return "";
}

// The cpu.max and cpu.max.burst writes of a run, in the order it makes them (the main
// workload's, then each `also`'s; cpu.max before cpu.max.burst), checked as
// tg_set_cfs_bandwidth() checks each: the burst may not exceed the quota ("max" allows any).
std::string check_bandwidth_writes(const Experiment& e) {
  std::map<std::string, std::pair<int64_t, int64_t>> state;  // cgroup -> (quota_us, burst_us)
  auto write = [&state](const std::string& prefix, const std::string& cgroup,
                        const std::string& cpu_max, int64_t burst_us) -> std::string {
    if (cgroup.empty()) return "";
    auto& [quota, burst] = state.try_emplace(cgroup, -1, 0).first->second;
    if (!cpu_max.empty()) {
      int64_t q = -1, p = 0;
      parse_cpu_max("cpu.max", cpu_max, &q, &p);
      if (q >= 0 && burst > q)
        return prefix + "cpu.max: the quota (" + std::to_string(q) + " us) is below cgroup " +
               cgroup + "'s cpu.max.burst (" + std::to_string(burst) + " us)";
      quota = q;
    }
    if (burst_us >= 0) {
      if (quota >= 0 && burst_us > quota)
        return prefix + "cpu.max.burst: must not exceed cgroup " + cgroup + "'s cpu.max quota (" +
               std::to_string(quota) + " us; got " + std::to_string(burst_us) + ")";
      burst = burst_us;
    }
    return "";
  };
  if (std::string err = write("", e.cgroup, e.cpu_max, e.cgroup_files.burst_us); !err.empty())
    return err;
  for (const ExtraWorkload& x : e.also) {
    const std::string prefix = "also." + x.workload + ".";
    if (std::string err = write(prefix, x.cgroup, x.cpu_max, x.cgroup_files.burst_us); !err.empty())
      return err;
  }
  return "";
}

// Writes cpu.max of the group the threads created next go to (validated already).
void write_cpu_max(kernel::Kernel& k, const std::string& cgroup, const std::string& cpu_max) {
  if (cpu_max.empty()) return;
  int64_t quota_us = -1, period_us = 100000;
  parse_cpu_max("cpu.max", cpu_max, &quota_us, &period_us);
  k.set_task_group_cpu_max(k.task_group_at(cgroup), quota_us, period_us);
}

}  // namespace

std::string set_key(Experiment* e, const std::string& key, const std::string& value) {
  long long n = 0;
  if (key == "session") return parse_session(key, value, &e->own_session);
  if (is_cgroup_key(key)) return parse_cgroup_key(key, key, value, &e->cgroup, &e->cpu_weight);
  if (key == "cpu.max") {
    int64_t q = 0, p = 0;
    if (std::string err = parse_cpu_max(key, value, &q, &p); !err.empty()) return err;
    e->cpu_max = value;
    return "";
  }
  if (is_cgroup_file_key(key)) return parse_cgroup_file_key(key, key, value, &e->cgroup_files);
  if (key == "workload") {
    if (!workloads::find_workload(value)) return "workload: unknown workload '" + value + "' (see: schedlab list)";
    e->workload = value;
  } else if (key == "machine") {
    e->machine = value;
  } else if (key == "cpus") {
    if (!kernel::parse_int(value, &n) || n < 1 || n > 1000000)
      return "cpus: must be an integer from 1 to the machine's CPU count (got '" + value + "')";
    e->cpus = static_cast<int>(n);
  } else if (key == "duration") {
    int64_t ns = 0;
    if (!sim::parse_duration(value, &ns) || ns <= 0)
      return "duration: must be a positive duration with its unit (ns, us, ms, s), like 500ms "
             "or 10s (got '" + value + "')";
    e->duration_ns = ns;
  } else if (key == "seed") {
    if (!kernel::parse_int(value, &n) || n < 0)
      return "seed: must be an integer from 0 to 9223372036854775807 (got '" + value + "')";
    e->seed = static_cast<uint64_t>(n);
  } else if (key == "kernel" || key == "kernel.version") {
    kernel::KernelVersion v;
    if (std::string err = kernel::parse_version(value, &v); !err.empty()) return err;
    e->kernel_version = value;
  } else if (key.rfind("machine.", 0) == 0) {
    hw::Machine probe;
    if (hw::LoadResult r = hw::set_cost(&probe, key.substr(8), value); !r.ok()) return cost_error(r.error);
    e->machine_costs.emplace_back(key.substr(8), value);
  } else if (key.rfind("kernel.", 0) == 0) {
    const std::string sub = key.substr(7);
    if (sub != "version" && !is_kernel_key(sub))
      return key + ": unknown kernel setting '" + sub + "' (see: schedlab list)";
    return set_key(e, sub, value);
  } else if (is_kernel_key(key)) {
    kernel::KernelConfig probe = kernel::default_config(kernel::KernelVersion::V7_0);
    if (std::string err = kernel::set_config_key(&probe, key, value); !err.empty()) return err;
    e->kernel_settings.emplace_back(key, value);
  } else if (key.rfind("params.", 0) == 0) {
    e->params[key.substr(7)] = value;
  } else {
    e->params[key] = value;
  }
  return "";
}

std::string add_also(Experiment* e, const std::string& spec) {
  ExtraWorkload x;
  const size_t colon = spec.find(':');
  x.workload = spec.substr(0, colon);
  if (!workloads::find_workload(x.workload))
    return "also: unknown workload '" + x.workload + "' (see: schedlab list)";
  if (colon != std::string::npos) {
    for (size_t start = colon + 1; start <= spec.size();) {
      size_t comma = spec.find(',', start);
      if (comma == std::string::npos) comma = spec.size();
      const std::string kv = spec.substr(start, comma - start);
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return "also: expected key=value in '" + spec + "'";
      if (kv.substr(0, eq) == "session") {
        if (std::string err = parse_session("also." + x.workload + ".session", kv.substr(eq + 1), &x.own_session);
            !err.empty())
          return err;
      } else if (kv.substr(0, eq) == "cpu.max") {
        int64_t q = 0, p = 0;
        if (std::string err = parse_cpu_max("also." + x.workload + ".cpu.max", kv.substr(eq + 1), &q, &p);
            !err.empty())
          return err;
        x.cpu_max = kv.substr(eq + 1);
      } else if (is_cgroup_key(kv.substr(0, eq))) {
        if (std::string err = parse_cgroup_key(kv.substr(0, eq), "also." + x.workload + "." + kv.substr(0, eq),
                                               kv.substr(eq + 1), &x.cgroup, &x.cpu_weight);
            !err.empty())
          return err;
      } else if (is_cgroup_file_key(kv.substr(0, eq))) {
        if (std::string err = parse_cgroup_file_key(kv.substr(0, eq), "also." + x.workload + "." + kv.substr(0, eq),
                                                    kv.substr(eq + 1), &x.cgroup_files);
            !err.empty())
          return err;
      } else {
        x.params[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      start = comma + 1;
    }
  }
  e->also.push_back(std::move(x));
  return "";
}

std::string set_assignment(Experiment* e, const std::string& a) {
  const size_t eq = a.find('=');
  if (eq == std::string::npos || eq == 0) return "--set: expected key=value (got '" + a + "')";
  return set_key(e, a.substr(0, eq), a.substr(eq + 1));
}

std::string load_scenario_file(const std::string& path, Experiment* e) {
  // A directory, a device or a FIFO would read as empty (all defaults) or block.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return "scenario '" + path + "': not a regular file";
  toml::table tbl;
  try {
    tbl = toml::parse_file(path);
  } catch (const toml::parse_error& err) {
    std::ostringstream os;
    os << "scenario '" << path << "': " << err.description() << " (line " << err.source().begin.line
       << ", column " << err.source().begin.column << ")";
    return os.str();
  }
  std::string error;
  auto apply = [&](const std::string& key, const toml::node& n) {
    if (!error.empty()) return;
    bool ok = false;
    const std::string v = toml_value_string(n, &ok);
    if (!ok) {
      error = "scenario '" + path + "': " + key + ": expected a string, number or boolean";
      return;
    }
    if (std::string err = set_key(e, key, v); !err.empty()) error = "scenario '" + path + "': " + err;
  };
  // Order matters for kernel settings: the version first, then the rest as written.
  if (const toml::table* kt = tbl["kernel"].as_table())
    if (const toml::node* v = kt->get("version")) apply("kernel", *v);
  for (const auto& [k, node] : tbl) {
    const std::string key(k.str());
    if (key == "costs") {
      const toml::table* sub = node.as_table();
      if (!sub) return "scenario '" + path + "': costs must be a table";
      for (const auto& [k2, n2] : *sub) {
        const std::string cost(k2.str());
        if (!n2.is_number() && !n2.is_boolean())  // as in machine files
          return "scenario '" + path + "': costs." + cost + ": expected a number or true/false";
        bool ok = false;
        if (std::string err = set_key(e, "machine." + cost, toml_value_string(n2, &ok)); !err.empty()) {
          // Named as the file has it: costs.KEY.
          if (err.rfind("machine.", 0) == 0) err = "costs." + err.substr(8);
          return "scenario '" + path + "': " + err;
        }
      }
    } else if (key == "kernel" || key == "params") {
      const toml::table* sub = node.as_table();
      if (!sub) return "scenario '" + path + "': " + key + " must be a table";
      for (const auto& [k2, n2] : *sub) {
        const std::string key2(k2.str());
        if (key == "kernel" && key2 == "version") continue;
        if (const toml::table* feats = n2.as_table()) {
          if (key != "kernel" || key2 != "sched_feat")
            return "scenario '" + path + "': unknown table " + key + "." + key2;
          for (const auto& [k3, n3] : *feats) apply("sched_feat." + std::string(k3.str()), n3);
        } else if (key == "kernel" && !is_kernel_key(key2)) {
          return "scenario '" + path + "': unknown kernel setting '" + key2 +
                 "' in [kernel] (see: schedlab list; workload parameters go in [params])";
        } else {
          apply(key == "params" ? "params." + key2 : "kernel." + key2, n2);
        }
      }
    } else if (key == "description") {
      continue;
    } else if (key == "also") {
      const toml::array* arr = node.as_array();
      if (!arr) return "scenario '" + path + "': also must be an array of tables ([[also]])";
      for (const toml::node& item : *arr) {
        const toml::table* t = item.as_table();
        if (!t || !t->get("workload")) return "scenario '" + path + "': each [[also]] needs workload = \"NAME\"";
        std::string name, kvs;
        std::vector<std::pair<std::string, const toml::node*>> items;
        for (const auto& [k2, n2] : *t) flatten_dotted(std::string(k2.str()), n2, &items);
        for (const auto& [k2, n2ptr] : items) {
          const toml::node& n2 = *n2ptr;
          bool ok = false;
          const std::string v = toml_value_string(n2, &ok);
          if (!ok) return "scenario '" + path + "': also." + k2 + ": expected a value";
          if (v.find(',') != std::string::npos)  // add_also() splits the settings at commas
            return "scenario '" + path + "': also." + k2 + ": a value may not contain ',' (got '" + v + "')";
          if (k2 == "workload")
            name = v;
          else
            kvs += (kvs.empty() ? "" : ",") + k2 + "=" + v;
        }
        const std::string spec = kvs.empty() ? name : name + ":" + kvs;
        if (std::string err = add_also(e, spec); !err.empty()) return "scenario '" + path + "': " + err;
      }
    } else if (key == "workload" || key == "machine" || key == "cpus" || key == "duration" ||
               key == "seed") {
      apply(key, node);
    } else if (key == "session" || key == "cgroup" || is_cgroup_key(key) || is_cgroup_file_key(key) ||
               key == "cpu.max") {
      apply(key, node);  // the workload's session and cgroup ("cpu.weight" quoted)
    } else if ((key == "cpu" || key == "cpuset") && node.is_table()) {
      // Dotted keys: cpu.weight = 50, cpu.idle = 1, cpuset.cpus = "0-3".
      std::vector<std::pair<std::string, const toml::node*>> leaves;
      flatten_dotted(key, node, &leaves);
      for (const auto& [k2, n2] : leaves) {
        if (!is_cgroup_key(k2) && !is_cgroup_file_key(k2) && k2 != "cpu.max") return "scenario '" + path + "': unknown key '" + k2 + "'";
        apply(k2, *n2);
      }
    } else {
      return "scenario '" + path + "': unknown key '" + key +
             "' (top level takes workload, machine, cpus, duration, seed, description, session, cgroup, "
             "cpu.weight, cpu.weight.nice, cpu.idle, cpuset.cpus, cpu.max, cpu.max.burst, "
             "[kernel], [params], [costs], [[also]])";
    }
    if (!error.empty()) return error;
  }
  // An empty file (or one of settings alone) would run the default workload unasked.
  if (!tbl.contains("workload"))
    return "scenario '" + path + "': no workload (add workload = \"NAME\"; see: schedlab list)";
  return error;
}

std::string load_experiment_machine(const Experiment& e, hw::Machine* m) {
  if (hw::LoadResult r = hw::load_machine(e.machine, m); !r.ok()) return r.error;
  if (e.cpus > 0)
    if (hw::LoadResult r = hw::restrict_cpus(m, e.cpus); !r.ok()) return r.error;
  for (const auto& [key, value] : e.machine_costs)
    if (hw::LoadResult r = hw::set_cost(m, key, value); !r.ok()) return r.error;
  const hw::Costs& c = m->costs;
  if (c.background_wakeups_per_s > 0 && c.background_run_ns <= 0)
    return "machine.background_run_ns: must be > 0 when background_wakeups_per_s is set (got 0)";
  // Beyond half of each CPU it is no longer background but a second workload.
  if (static_cast<double>(c.background_wakeups_per_s) * static_cast<double>(c.background_run_ns) > 0.5e9)
    return "machine.background_wakeups_per_s x background_run_ns: more than half of each CPU (" +
           std::to_string(c.background_wakeups_per_s) + "/s x " + std::to_string(c.background_run_ns) + " ns)";
  // A deep idle state is a cpuidle driver's, which the menu governor picks: without one
  // (cpuidle_menu = false) it would be silently ignored.
  if (c.idle_deep_exit_ns > 0 && !c.cpuidle_menu)
    return "machine.idle_deep_exit_ns: a deep idle state needs a cpuidle driver (cpuidle_menu = "
           "true; got false)";
  if (c.cpuidle_haltpoll && c.cpuidle_menu)
    return "machine.cpuidle_haltpoll: one cpuidle driver at a time (cpuidle_menu is true too)";
  return "";
}

std::string validate(const Experiment& e) {
  hw::Machine m;
  if (std::string err = load_experiment_machine(e, &m); !err.empty()) return err;
  const workloads::WorkloadInfo* w = workloads::find_workload(e.workload);
  if (!w) return "workload: unknown workload '" + e.workload + "' (see: schedlab list)";
  std::map<std::string, std::string> params;
  if (std::string err = build_params(e, *w, &params); !err.empty()) return err;
  for (const ExtraWorkload& x : e.also) {
    const workloads::WorkloadInfo* xw = workloads::find_workload(x.workload);
    if (!xw) return "also: unknown workload '" + x.workload + "'";
    Experiment tmp;
    tmp.params = x.params;
    std::map<std::string, std::string> xp;
    if (std::string err = build_params(tmp, *xw, &xp); !err.empty()) return "also: " + err;
  }
  if (e.cpu_weight && e.cgroup.empty()) return "cpu.weight: needs a cgroup (the root cgroup has no cpu.weight)";
  for (const ExtraWorkload& x : e.also)
    if (x.cpu_weight && x.cgroup.empty())
      return "also." + x.workload + ".cpu.weight: needs a cgroup (the root cgroup has no cpu.weight)";
  if (!e.cpu_max.empty() && e.cgroup.empty()) return "cpu.max: needs a cgroup (the root cgroup has no cpu.max)";
  for (const ExtraWorkload& x : e.also)
    if (!x.cpu_max.empty() && x.cgroup.empty())
      return "also." + x.workload + ".cpu.max: needs a cgroup (the root cgroup has no cpu.max)";
  if (std::string err = validate_cgroup_files("", e.cgroup, e.cpu_weight, e.cgroup_files, m.topo.nr_cpus);
      !err.empty())
    return err;
  for (const ExtraWorkload& x : e.also)
    if (std::string err = validate_cgroup_files("also." + x.workload + ".", x.cgroup, x.cpu_weight,
                                                x.cgroup_files, m.topo.nr_cpus);
        !err.empty())
      return err;
  if (std::string err = check_bandwidth_writes(e); !err.empty()) return err;
  kernel::KernelConfig cfg;
  if (std::string err = build_config(e, params, &cfg); !err.empty()) return err;
  return kernel::validate_config_machine(cfg, m.topo.nr_cpus);
}

std::string run(const Experiment& e, report::Results* out, const Progress& progress,
                kernel::TraceSink* trace) {
  if (std::string err = validate(e); !err.empty()) return err;
  hw::Machine m;
  load_experiment_machine(e, &m);
  const workloads::WorkloadInfo* info = workloads::find_workload(e.workload);
  std::map<std::string, std::string> params;
  build_params(e, *info, &params);
  kernel::KernelConfig cfg;
  build_config(e, params, &cfg);

  sim::Engine engine;
  std::unique_ptr<kernel::Kernel> kernel = kernel::Kernel::create(&engine, m, cfg);
  kernel::Kernel& k = *kernel;
  k.set_trace_sink(trace);
  // The rest of the system first: it runs before the scenario's threads are forked.
  if (std::string err = workloads::spawn_background(k, e.seed ^ 0xb4c6b0d1ULL); !err.empty()) return err;
  std::unique_ptr<workloads::Workload> w = info->make();
  if (e.own_session) k.setsid();
  enter_cgroup(k, e.cgroup, e.cpu_weight);
  write_cpu_max(k, e.cgroup, e.cpu_max);
  apply_cgroup_files(k, e.cgroup, e.cgroup_files);
  if (std::string err = w->setup(k, workloads::Params(params), e.seed); !err.empty()) return err;
  k.use_session(0);
  k.use_task_group(0);
  std::vector<std::unique_ptr<workloads::Workload>> extras;
  std::map<std::string, std::string> echo = params;
  for (size_t i = 0; i < e.also.size(); ++i) {
    const ExtraWorkload& x = e.also[i];
    const workloads::WorkloadInfo* xi = workloads::find_workload(x.workload);
    Experiment tmp;
    tmp.params = x.params;
    std::map<std::string, std::string> xp;
    build_params(tmp, *xi, &xp);
    for (const auto& [pk, pv] : xp) echo["also." + x.workload + "." + pk] = pv;
    extras.push_back(xi->make());
    // Its own random streams: a different seed per extra workload.
    const uint64_t seed = e.seed ^ (0x9e3779b97f4a7c15ULL * (i + 1));
    if (x.own_session) k.setsid();
    enter_cgroup(k, x.cgroup, x.cpu_weight);
    write_cpu_max(k, x.cgroup, x.cpu_max);
    apply_cgroup_files(k, x.cgroup, x.cgroup_files);
    if (std::string err = extras.back()->setup(k, workloads::Params(xp), seed); !err.empty())
      return "also " + x.workload + ": " + err;
    k.use_session(0);
    k.use_task_group(0);
  }
  k.start();
  constexpr int kSteps = 100;
  for (int i = 1; i <= kSteps; ++i) {
    engine.run_until(e.duration_ns / kSteps * i + (i == kSteps ? e.duration_ns % kSteps : 0));
    if (progress) progress(static_cast<double>(i) / kSteps);
  }
  k.finish(e.duration_ns);

  report::Results& r = *out;
  const kernel::KernelStats ks = k.snapshot();
  collect_run(e, m.name, cfg, echo, m, ks, engine.events_fired(), &r);
  w->report(ks, e.duration_ns, &r);
  for (auto& x : extras) x->report(ks, e.duration_ns, &r);
  collect_metrics(e, ks, &r);
  return "";
}

}  // namespace scenario
