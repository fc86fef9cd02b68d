// Results <-> JSON (report/json.h, docs/results-schema.md).
#include "report/json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace report {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// nlohmann would print NaN and infinities as null anyway; saying so here keeps the output
// independent of that choice, and from_json reads null back as NaN.
ordered_json number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

ordered_json task_json(const TaskResult& t) {
  ordered_json j;
  j["pid"] = t.pid;
  j["tgid"] = t.tgid;
  j["comm"] = t.comm;
  j["policy"] = t.policy;
  j["nice"] = t.nice;
  j["rt_priority"] = t.rt_priority;
  j["cpu"] = t.cpu;
  j["run_ns"] = t.run_ns;
  j["wait_sum_ns"] = t.wait_sum_ns;
  j["wait_max_ns"] = t.wait_max_ns;
  j["wait_count"] = t.wait_count;
  j["nvcsw"] = t.nvcsw;
  j["nivcsw"] = t.nivcsw;
  j["nr_migrations"] = t.nr_migrations;
  j["nr_wakeups"] = t.nr_wakeups;
  j["nr_syscalls"] = t.nr_syscalls;
  j["lock_holder_preemptions"] = t.lock_holder_preemptions;
  j["lock_holder_preempted_ns"] = t.lock_holder_preempted_ns;
  j["spin_ns"] = t.spin_ns;
  j["sum_exec_runtime_ns"] = t.sum_exec_runtime_ns;
  j["vruntime"] = t.vruntime;
  j["vlag"] = t.vlag;
  j["deadline"] = t.deadline;
  j["slice_ns"] = t.slice_ns;
  j["load_weight"] = t.load_weight;
  j["load_avg"] = t.load_avg;
  j["runnable_avg"] = t.runnable_avg;
  j["util_avg"] = t.util_avg;
  j["util_est"] = t.util_est;
  ordered_json extra = ordered_json::object();
  for (const auto& [k, v] : t.extra) extra[k] = v;
  j["extra"] = std::move(extra);
  return j;
}

ordered_json string_map(const std::map<std::string, std::string>& m) {
  ordered_json j = ordered_json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

// Reads typed members of the document, remembering the first error with the path of the
// offending key ("tasks[3].nvcsw"). After an error every further read is skipped.
class Reader {
 public:
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  void fail(const std::string& path, const std::string& what) {
    if (error_.empty()) error_ = path + ": " + what;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // The member `key` of object j, or null if absent (or if j is itself absent).
  static const json* member(const json* j, const char* key) {
    if (j == nullptr) return nullptr;
    auto it = j->find(key);
    return it == j->end() ? nullptr : &*it;
  }

  // An optional member that must be an object or array when present.
  const json* object(const json* j, const char* key, const std::string& path) {
    return container(j, key, path, true);
  }
  const json* array(const json* j, const char* key, const std::string& path) {
    return container(j, key, path, false);
  }
  const json* container(const json* j, const char* key, const std::string& path, bool object) {
    const json* v = member(j, key);
    if (v == nullptr || failed()) return nullptr;
    if (object ? !v->is_object() : !v->is_array()) {
      fail(join(path, key), fmt::format("expected an {}, got {}", object ? "object" : "array",
                                        v->type_name()));
      return nullptr;
    }
    return v;
  }

  // Reads j[key] into *out if present; a missing key leaves *out unchanged.
  template <class T>
  void get(const json* j, const char* key, const std::string& path, T* out) {
    const json* v = member(j, key);
    if (v != nullptr && !failed()) read(*v, join(path, key), out);
  }

  void read(const json& v, const std::string& path, std::string* out) {
    if (!v.is_string()) return fail(path, fmt::format("expected a string, got {}", v.type_name()));
    *out = v.get<std::string>();
  }

  void read(const json& v, const std::string& path, int64_t* out) {
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(path, "integer out of range");
    }
    if (!v.is_number_integer()) {
      return fail(path, fmt::format("expected an integer, got {}", v.type_name()));
    }
    *out = v.get<int64_t>();
  }

  void read(const json& v, const std::string& path, int* out) {
    int64_t x = 0;
    read(v, path, &x);
    if (failed()) return;
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      return fail(path, "integer out of range");
    }
    *out = static_cast<int>(x);
  }

  void read(const json& v, const std::string& path, uint64_t* out) {
    // nlohmann stores every non-negative integer literal as unsigned.
    if (!v.is_number_unsigned()) {
      return fail(path, fmt::format("expected a non-negative integer, got {}",
                                    v.is_number_integer() ? "a negative integer" : v.type_name()));
    }
    *out = v.get<uint64_t>();
  }

  void read(const json& v, const std::string& path, double* out) {
    if (v.is_null()) {
      *out = std::numeric_limits<double>::quiet_NaN();  // to_json writes non-finite as null
      return;
    }
    if (!v.is_number()) return fail(path, fmt::format("expected a number, got {}", v.type_name()));
    *out = v.get<double>();
  }

  // Parameter values are strings; a hand-written number or boolean is taken as its text.
  void read(const json& v, const std::string& path, std::map<std::string, std::string>* out) {
    if (!v.is_object()) return fail(path, fmt::format("expected an object, got {}", v.type_name()));
    for (const auto& [k, x] : v.items()) {
      if (x.is_string()) {
        (*out)[k] = x.get<std::string>();
      } else if (x.is_number() || x.is_boolean()) {
        (*out)[k] = x.dump();
      } else {
        return fail(join(path, k), fmt::format("expected a string, got {}", x.type_name()));
      }
    }
  }

  void read(const json& v, const std::string& path, std::map<std::string, int64_t>* out) {
    if (!v.is_object()) return fail(path, fmt::format("expected an object, got {}", v.type_name()));
    for (const auto& [k, x] : v.items()) {
      int64_t n = 0;
      read(x, join(path, k), &n);
      if (failed()) return;
      (*out)[k] = n;
    }
  }

  // Each element of an array of objects, with its path ("metrics[2]").
  template <class Fn>
  void each(const json* a, const std::string& path, Fn fn) {
    if (a == nullptr) return;
    for (size_t i = 0; i < a->size() && !failed(); i++) {
      const json& e = (*a)[i];
      const std::string p = fmt::format("{}[{}]", path, i);
      if (!e.is_object()) return fail(p, fmt::format("expected an object, got {}", e.type_name()));
      fn(e, p);
    }
  }

 private:
  std::string error_;
};

void read_task(Reader& rd, const json& j, const std::string& p, TaskResult* t) {
  rd.get(&j, "pid", p, &t->pid);
  rd.get(&j, "tgid", p, &t->tgid);
  rd.get(&j, "comm", p, &t->comm);
  rd.get(&j, "policy", p, &t->policy);
  rd.get(&j, "nice", p, &t->nice);
  rd.get(&j, "rt_priority", p, &t->rt_priority);
  rd.get(&j, "cpu", p, &t->cpu);
  rd.get(&j, "run_ns", p, &t->run_ns);
  rd.get(&j, "wait_sum_ns", p, &t->wait_sum_ns);
  rd.get(&j, "wait_max_ns", p, &t->wait_max_ns);
  rd.get(&j, "wait_count", p, &t->wait_count);
  rd.get(&j, "nvcsw", p, &t->nvcsw);
  rd.get(&j, "nivcsw", p, &t->nivcsw);
  rd.get(&j, "nr_migrations", p, &t->nr_migrations);
  rd.get(&j, "nr_wakeups", p, &t->nr_wakeups);
  rd.get(&j, "nr_syscalls", p, &t->nr_syscalls);
  rd.get(&j, "lock_holder_preemptions", p, &t->lock_holder_preemptions);
  rd.get(&j, "lock_holder_preempted_ns", p, &t->lock_holder_preempted_ns);
  rd.get(&j, "spin_ns", p, &t->spin_ns);
  rd.get(&j, "sum_exec_runtime_ns", p, &t->sum_exec_runtime_ns);
  rd.get(&j, "vruntime", p, &t->vruntime);
  rd.get(&j, "vlag", p, &t->vlag);
  rd.get(&j, "deadline", p, &t->deadline);
  rd.get(&j, "slice_ns", p, &t->slice_ns);
  rd.get(&j, "load_weight", p, &t->load_weight);
  rd.get(&j, "load_avg", p, &t->load_avg);
  rd.get(&j, "runnable_avg", p, &t->runnable_avg);
  rd.get(&j, "util_avg", p, &t->util_avg);
  rd.get(&j, "util_est", p, &t->util_est);
  rd.get(&j, "extra", p, &t->extra);
}

}  // namespace

nlohmann::ordered_json to_json(const Results& r) {
  ordered_json j;
  j["schema"] = kSchemaName;
  j["schema_version"] = kSchemaVersion;

  ordered_json& e = j["experiment"];
  e["workload"] = r.workload;
  e["machine"] = r.machine;
  e["cpus"] = r.cpus;
  e["machine_costs"] = string_map(r.machine_costs);
  e["kernel"]["version"] = r.kernel_version;
  e["kernel"]["hz"] = r.hz;
  e["kernel"]["preempt"] = r.preempt;
  e["kernel"]["params"] = string_map(r.kernel_params);
  e["duration_ns"] = r.duration_ns;
  e["seed"] = r.seed;
  e["params"] = string_map(r.params);

  j["run"]["events"] = r.events;

  ordered_json& metrics = j["metrics"] = ordered_json::array();
  for (const Metric& m : r.metrics) {
    ordered_json x;
    x["name"] = m.name;
    x["value"] = number(m.value);
    x["unit"] = m.unit;
    x["help"] = m.help;
    metrics.push_back(std::move(x));
  }

  ordered_json& latencies = j["latencies"] = ordered_json::array();
  for (const LatencySummary& l : r.latencies) {
    ordered_json x;
    x["name"] = l.name;
    x["count"] = l.count;
    x["min_ns"] = l.min_ns;
    x["p50_ns"] = l.p50_ns;
    x["p99_ns"] = l.p99_ns;
    x["p999_ns"] = l.p999_ns;
    x["max_ns"] = l.max_ns;
    x["mean_ns"] = number(l.mean_ns);
    latencies.push_back(std::move(x));
  }

  int64_t user = 0, kernel = 0, idle = 0;
  ordered_json per_cpu = ordered_json::array();
  for (const CpuResult& c : r.per_cpu) {
    user += c.user_ns;
    kernel += c.kernel_ns;
    idle += c.idle_ns;
    ordered_json x;
    x["cpu"] = c.cpu;
    x["socket"] = c.socket;
    x["user_ns"] = c.user_ns;
    x["kernel_ns"] = c.kernel_ns;
    x["idle_ns"] = c.idle_ns;
    x["nr_switches"] = c.nr_switches;
    per_cpu.push_back(std::move(x));
  }
  j["cpus"]["user_ns"] = user;
  j["cpus"]["kernel_ns"] = kernel;
  j["cpus"]["idle_ns"] = idle;
  j["cpus"]["per_cpu"] = std::move(per_cpu);

  // Only when there are task groups (a run with every task in the root group has none).
  if (!r.groups.empty()) {
    ordered_json& groups = j["groups"] = ordered_json::array();
    for (const GroupResult& g : r.groups) {
      ordered_json x;
      x["path"] = g.path;
      x["usage_ns"] = g.usage_ns;
      x["share"] = number(g.share);
      x["cpu_weight"] = g.cpu_weight;
      x["idle"] = g.idle;
      x["cpus"] = g.cpus;
      groups.push_back(std::move(x));
    }
  }

  ordered_json& tasks = j["tasks"] = ordered_json::array();
  for (const TaskResult& t : r.tasks) tasks.push_back(task_json(t));

  j["notices"] = r.notices;  // an empty vector gives [], not null
  // Only for the workloads whose original program prints result lines (extend-sched2).
  if (!r.output.empty()) j["output"] = r.output;
  j["warnings"]["count"] = r.warnings;
  j["warnings"]["first"] = r.first_warning;
  return j;
}

std::string render_json(const Results& r) {
  return to_json(r).dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

Results from_json(const nlohmann::json& j, std::string* error) {
  Results r;
  Reader rd;
  if (!j.is_object()) {
    rd.fail("(top level)", fmt::format("expected an object, got {}", j.type_name()));
  }
  const json* root = &j;
  std::string schema = kSchemaName;
  rd.get(root, "schema", "", &schema);
  if (!rd.failed() && schema != kSchemaName) {
    rd.fail("schema", fmt::format("expected \"{}\", got \"{}\"", kSchemaName, schema));
  }
  int version = kSchemaVersion;
  rd.get(root, "schema_version", "", &version);
  if (!rd.failed() && (version < 1 || version > kSchemaVersion)) {
    rd.fail("schema_version",
            fmt::format("version {} is not supported (this build reads 1 to {})", version,
                        kSchemaVersion));
  }

  const json* e = rd.object(root, "experiment", "");
  rd.get(e, "workload", "experiment", &r.workload);
  rd.get(e, "machine", "experiment", &r.machine);
  rd.get(e, "cpus", "experiment", &r.cpus);
  if (e != nullptr && e->contains("machine_costs"))  // added in schema 1; older files lack it
    rd.get(e, "machine_costs", "experiment", &r.machine_costs);
  const json* k = rd.object(e, "kernel", "experiment");
  rd.get(k, "version", "experiment.kernel", &r.kernel_version);
  rd.get(k, "hz", "experiment.kernel", &r.hz);
  rd.get(k, "preempt", "experiment.kernel", &r.preempt);
  rd.get(k, "params", "experiment.kernel", &r.kernel_params);
  rd.get(e, "duration_ns", "experiment", &r.duration_ns);
  rd.get(e, "seed", "experiment", &r.seed);
  rd.get(e, "params", "experiment", &r.params);

  rd.get(rd.object(root, "run", ""), "events", "run", &r.events);

  rd.each(rd.array(root, "metrics", ""), "metrics", [&](const json& x, const std::string& p) {
    Metric m;
    rd.get(&x, "name", p, &m.name);
    rd.get(&x, "value", p, &m.value);
    rd.get(&x, "unit", p, &m.unit);
    rd.get(&x, "help", p, &m.help);
    r.metrics.push_back(std::move(m));
  });

  rd.each(rd.array(root, "latencies", ""), "latencies", [&](const json& x, const std::string& p) {
    LatencySummary l;
    rd.get(&x, "name", p, &l.name);
    rd.get(&x, "count", p, &l.count);
    rd.get(&x, "min_ns", p, &l.min_ns);
    rd.get(&x, "p50_ns", p, &l.p50_ns);
    rd.get(&x, "p99_ns", p, &l.p99_ns);
    rd.get(&x, "p999_ns", p, &l.p999_ns);
    rd.get(&x, "max_ns", p, &l.max_ns);
    rd.get(&x, "mean_ns", p, &l.mean_ns);
    r.latencies.push_back(std::move(l));
  });

  const json* cpus = rd.object(root, "cpus", "");
  rd.each(rd.array(cpus, "per_cpu", "cpus"), "cpus.per_cpu",
          [&](const json& x, const std::string& p) {
            CpuResult c;
            rd.get(&x, "cpu", p, &c.cpu);
            if (x.contains("socket")) rd.get(&x, "socket", p, &c.socket);  // older files lack it
            rd.get(&x, "user_ns", p, &c.user_ns);
            rd.get(&x, "kernel_ns", p, &c.kernel_ns);
            rd.get(&x, "idle_ns", p, &c.idle_ns);
            rd.get(&x, "nr_switches", p, &c.nr_switches);
            r.per_cpu.push_back(c);
          });

  if (root->contains("groups"))
    rd.each(rd.array(root, "groups", ""), "groups", [&](const json& x, const std::string& p) {
      GroupResult g;
      rd.get(&x, "path", p, &g.path);
      rd.get(&x, "usage_ns", p, &g.usage_ns);
      rd.get(&x, "share", p, &g.share);
      rd.get(&x, "cpu_weight", p, &g.cpu_weight);
      rd.get(&x, "idle", p, &g.idle);
      rd.get(&x, "cpus", p, &g.cpus);
      r.groups.push_back(std::move(g));
    });

  rd.each(rd.array(root, "tasks", ""), "tasks", [&](const json& x, const std::string& p) {
    TaskResult t;
    read_task(rd, x, p, &t);
    r.tasks.push_back(std::move(t));
  });

  if (const json* notices = rd.array(root, "notices", "")) {
    for (size_t i = 0; i < notices->size() && !rd.failed(); i++) {
      std::string n;
      rd.read((*notices)[i], fmt::format("notices[{}]", i), &n);
      r.notices.push_back(std::move(n));
    }
  }

  if (const json* output = rd.array(root, "output", "")) {
    for (size_t i = 0; i < output->size() && !rd.failed(); i++) {
      std::string n;
      rd.read((*output)[i], fmt::format("output[{}]", i), &n);
      r.output.push_back(std::move(n));
    }
  }

  const json* w = rd.object(root, "warnings", "");
  rd.get(w, "count", "warnings", &r.warnings);
  rd.get(w, "first", "warnings", &r.first_warning);

  if (rd.failed()) r = Results();
  if (error != nullptr) *error = rd.error();
  return r;
}

bool parse_json(const std::string& text, Results* out, std::string* error) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    if (error != nullptr) *error = e.what();  // names the byte offset of the syntax error
    return false;
  }
  std::string e;
  *out = from_json(j, &e);
  if (error != nullptr) *error = e;
  return e.empty();
}

}  // namespace report
