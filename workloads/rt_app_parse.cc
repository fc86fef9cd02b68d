// The rt-app JSON grammar (workloads/rt_app.h): global, tasks (with phases and events) and
// resources, as rt-app's parse_global(), parse_task_data(), parse_task_phase_data() and
// parse_task_event_data() read them. Keys rt-app reads and the simulator does not model are
// errors naming the key.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/relaxed_json.h"
#include "workloads/rt_app.h"

namespace workloads {

namespace {

using Json = nlohmann::ordered_json;

class Parser {
 public:
  Parser(const std::string& where, RtAppDesc* d) : where_(where), d_(*d) {}

  std::string error(const std::string& path, const std::string& msg) const {
    return "rt-app '" + where_ + "': " + path + ": " + msg;
  }

  bool get_int(const Json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out, std::string* err) {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      *err = error(path, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                             " (got " + v.dump() + ")");
      return false;
    }
    *out = v.get<int64_t>();
    return true;
  }
  bool get_string(const Json& v, const std::string& path, std::string* out, std::string* err) {
    if (!v.is_string()) {
      *err = error(path, "expected a string (got " + v.dump() + ")");
      return false;
    }
    *out = v.get<std::string>();
    return true;
  }
  bool get_bool(const Json& v, const std::string& path, bool* out, std::string* err) {
    if (!v.is_boolean()) {
      *err = error(path, "expected true or false (got " + v.dump() + ")");
      return false;
    }
    *out = v.get<bool>();
    return true;
  }

  std::string global(const Json& g) {
    if (!g.is_object()) return error("global", "expected an object");
    std::string err;
    for (const auto& [key, v] : g.items()) {
      const std::string path = "global." + key;
      int64_t n = 0;
      std::string s;
      bool b = false;
      if (key == "duration") {
        if (!get_int(v, path, -1, 1000000, &n, &err)) return err;
        if (n == 0) return error(path, "must be -1 (until every thread ends) or > 0 seconds (got 0)");
        d_.duration_s = n;
      } else if (key == "calibration") {
        if (v.is_number_integer()) {
          if (!get_int(v, path, 1, 1000000000, &n, &err)) return err;
          d_.calibration_ns_per_loop = n;
        } else {
          if (!get_string(v, path, &s, &err)) return err;
          char* end = nullptr;
          const long cpu = s.rfind("CPU", 0) == 0 ? std::strtol(s.c_str() + 3, &end, 10) : -1;
          if (cpu < 0 || end == s.c_str() + 3 || *end != '\0')
            return error(path, "expected \"CPUn\" or a number of ns per loop (got \"" + s + "\")");
          d_.calibration_cpu = static_cast<int>(cpu);
        }
      } else if (key == "default_policy") {
        if (!get_string(v, path, &s, &err)) return err;
        if (std::string e = check_policy(path, s); !e.empty()) return e;
        d_.default_policy = s;
      } else if (key == "pi_enabled") {
        if (!get_bool(v, path, &b, &err)) return err;
        if (b) return error(path, "true is not supported: the model has no priority-inheritance futexes");
      } else if (key == "cumulative_slack") {
        if (!get_bool(v, path, &d_.cumulative_slack, &err)) return err;
      } else if (key == "mem_buffer_size") {
        if (!get_int(v, path, 1, INT64_C(1) << 40, &d_.mem_buffer_size, &err)) return err;
      } else if (key == "lock_pages" || key == "gnuplot") {
        // Memory locking and plot files change nothing in the simulated schedule.
        if (!get_bool(v, path, &b, &err)) return err;
      } else if (key == "ftrace") {
        if (!v.is_boolean() && !v.is_string()) return error(path, "expected true, false or a string");
      } else if (key == "logdir" || key == "log_basename" || key == "io_device") {
        if (!get_string(v, path, &s, &err)) return err;  // where rt-app writes; no simulated effect
      } else if (key == "log_size") {
        if (!v.is_string() && !v.is_number_integer()) return error(path, "expected a string or an integer");
      } else {
        return error(path, "unknown or unsupported key");
      }
    }
    return "";
  }

  std::string check_policy(const std::string& path, const std::string& s) {
    if (s == "SCHED_OTHER" || s == "SCHED_IDLE" || s == "SCHED_FIFO" || s == "SCHED_RR") return "";
    if (s == "SCHED_DEADLINE") return error(path, "SCHED_DEADLINE is not modelled by the simulator");
    return error(path, "expected SCHED_OTHER, SCHED_IDLE, SCHED_FIFO or SCHED_RR (got \"" + s + "\")");
  }

  // A resource by name in `table`: its index, added on first use.
  static int resource(std::vector<std::string>* table, const std::string& name) {
    auto it = std::find(table->begin(), table->end(), name);
    if (it != table->end()) return static_cast<int>(it - table->begin());
    table->push_back(name);
    return static_cast<int>(table->size()) - 1;
  }

  std::string ref_object(const Json& v, const std::string& path, std::string* ref, std::string* mutex) {
    if (!v.is_object()) return error(path, "expected an object {\"ref\": ..., \"mutex\": ...}");
    std::string err;
    for (const auto& [k, x] : v.items()) {
      if (k == "ref") {
        if (!get_string(x, path + ".ref", ref, &err)) return err;
      } else if (k == "mutex") {
        if (!get_string(x, path + ".mutex", mutex, &err)) return err;
      } else {
        return error(path + "." + k, "unknown key (takes ref and mutex)");
      }
    }
    if (ref->empty() || mutex->empty()) return error(path, "needs both ref and mutex");
    return "";
  }

  // An event key: "" and *ev filled, or an error. `used_barriers` collects the barriers the
  // task uses (their parties are counted per task).
  std::string event(const std::string& key, const Json& v, const std::string& path, RtAppEvent* ev,
                    std::set<int>* used_barriers) {
    struct Prefix {
      const char* name;
      RtAppEvent::Kind kind;
    };
    // rt-app's order: "runtime" is tried before "run".
    static const Prefix kPrefixes[] = {
        {"lock", RtAppEvent::Lock},     {"unlock", RtAppEvent::Unlock},   {"wait", RtAppEvent::Wait},
        {"signal", RtAppEvent::Signal}, {"broad", RtAppEvent::Broad},     {"sync", RtAppEvent::Sync},
        {"sleep", RtAppEvent::Sleep},   {"runtime", RtAppEvent::Runtime}, {"run", RtAppEvent::Run},
        {"timer", RtAppEvent::Timer},   {"mem", RtAppEvent::Mem},         {"iorun", RtAppEvent::Iorun},
        {"yield", RtAppEvent::Yield},   {"barrier", RtAppEvent::Barrier}, {"suspend", RtAppEvent::Suspend},
        {"resume", RtAppEvent::Resume}};
    const Prefix* p = nullptr;
    for (const Prefix& x : kPrefixes)
      if (key.rfind(x.name, 0) == 0) {
        p = &x;
        break;
      }
    if (!p) return "?";  // not an event key
    ev->kind = p->kind;
    ev->key = key;
    std::string err, s, mutex;
    switch (p->kind) {
      case RtAppEvent::Run:
      case RtAppEvent::Runtime:
      case RtAppEvent::Sleep:
      case RtAppEvent::Mem:
      case RtAppEvent::Iorun:
        if (!get_int(v, path, 0, INT64_C(1) << 40, &ev->value, &err)) return err;
        return "";
      case RtAppEvent::Yield:
        return "";
      case RtAppEvent::Lock:
      case RtAppEvent::Unlock:
        if (!get_string(v, path, &s, &err)) return err;
        ev->res = resource(&d_.mutexes, s);
        return "";
      case RtAppEvent::Signal:
      case RtAppEvent::Broad:
        if (!get_string(v, path, &s, &err)) return err;
        ev->res = resource(&d_.conds, s);
        return "";
      case RtAppEvent::Suspend:
      case RtAppEvent::Resume:
        // A condition variable and a mutex of the thread's name (rt-app: "suspend" waits on
        // them, "resume" broadcasts).
        if (!get_string(v, path, &s, &err)) return err;
        if (s.empty()) return error(path, "needs the name of the thread (rt-app's workgen fills it in)");
        ev->res = resource(&d_.conds, s);
        ev->mutex = resource(&d_.mutexes, s);
        return "";
      case RtAppEvent::Barrier:
        if (!get_string(v, path, &s, &err)) return err;
        ev->res = resource(&d_.barriers, s);
        d_.barrier_parties.resize(d_.barriers.size());
        used_barriers->insert(ev->res);
        return "";
      case RtAppEvent::Wait:
      case RtAppEvent::Sync:
        if (std::string e = ref_object(v, path, &s, &mutex); !e.empty()) return e;
        ev->res = resource(&d_.conds, s);
        ev->mutex = resource(&d_.mutexes, mutex);
        return "";
      case RtAppEvent::Timer: {
        if (!v.is_object()) return error(path, "expected an object {\"ref\": ..., \"period\": ...}");
        std::string ref, mode = "relative";
        bool has_period = false;
        for (const auto& [k, x] : v.items()) {
          if (k == "ref") {
            if (!get_string(x, path + ".ref", &ref, &err)) return err;
          } else if (k == "period") {
            if (!get_int(x, path + ".period", 0, INT64_C(1) << 40, &ev->value, &err)) return err;
            has_period = true;
          } else if (k == "mode") {
            if (!get_string(x, path + ".mode", &mode, &err)) return err;
            if (mode != "relative" && mode != "absolute")
              return error(path + ".mode", "expected \"relative\" or \"absolute\" (got \"" + mode + "\")");
          } else {
            return error(path + "." + k, "unknown key (takes ref, period and mode)");
          }
        }
        if (ref.empty() || !has_period) return error(path, "needs ref and period");
        // "unique*" refs are per thread (rt-app's rtapp_timer_unique): named per task here,
        // one timer per thread at run time.
        const bool unique = ref.rfind("unique", 0) == 0;
        const std::string name = unique ? task_ + "/" + ref : ref;
        auto it = std::find_if(d_.timers.begin(), d_.timers.end(), [&](const RtAppTimer& t) { return t.name == name; });
        if (it == d_.timers.end()) {
          d_.timers.push_back({name, unique, true});
          it = d_.timers.end() - 1;
        }
        if (mode == "absolute") it->relative = false;
        ev->res = static_cast<int>(it - d_.timers.begin());
        return "";
      }
    }
    return "?";
  }

  // The keys of a phase object (or of a task without "phases"): loop and events. Task-level
  // keys are skipped when `task_level`.
  std::string phase(const Json& obj, const std::string& path, bool task_level, RtAppPhase* ph,
                    std::set<int>* used_barriers) {
    std::string err;
    for (const auto& [key, v] : obj.items()) {
      const std::string kp = path + "." + key;
      if (key == "loop") {
        int64_t n = 0;
        if (!get_int(v, kp, -1, 1 << 30, &n, &err)) return err;
        if (n == -1 && !task_level) return error(kp, "a phase's loop must be >= 0 (got -1)");
        ph->loop = static_cast<int>(n);
        continue;
      }
      if (task_level && is_task_key(key)) continue;
      if (key.rfind("fork", 0) == 0) return error(kp, "event not supported by the simulator");
      RtAppEvent ev;
      const std::string e = event(key, v, kp, &ev, used_barriers);
      if (e == "?") {
        if (!task_level && (key == "cpus" || key == "policy" || key == "priority" || key == "nice" ||
                            key == "taskgroup" || key == "nodes_membind" || key.rfind("dl-", 0) == 0 ||
                            key == "util_min" || key == "util_max"))
          return error(kp, "not supported in a phase (set it on the task)");
        return error(kp, "unknown or unsupported key");
      }
      if (!e.empty()) return e;
      ph->events.push_back(std::move(ev));
    }
    if (ph->events.empty()) return error(path, "no events (rt-app: a task must have events)");
    return "";
  }

  static bool is_task_key(const std::string& k) {
    return k == "instance" || k == "phases" || k == "policy" || k == "priority" || k == "nice" ||
           k == "cpus" || k == "delay";
  }

  std::string task(const std::string& name, const Json& obj) {
    const std::string path = "tasks." + name;
    if (!obj.is_object()) return error(path, "expected an object");
    RtAppTask t;
    t.name = name;
    task_ = name;
    std::string err;
    int64_t n = 0;
    bool nice_set = false;
    int nice = 0;
    for (const auto& [key, v] : obj.items()) {
      const std::string kp = path + "." + key;
      if (key == "instance") {
        if (!get_int(v, kp, 0, 100000, &n, &err)) return err;
        t.instance = static_cast<int>(n);
      } else if (key == "policy") {
        if (!get_string(v, kp, &t.policy, &err)) return err;
        if (std::string e = check_policy(kp, t.policy); !e.empty()) return e;
      } else if (key == "priority") {
        if (!get_int(v, kp, -20, 99, &n, &err)) return err;
        t.priority = static_cast<int>(n);
        t.priority_set = true;
      } else if (key == "nice") {
        if (!get_int(v, kp, -20, 19, &n, &err)) return err;
        nice = static_cast<int>(n);
        nice_set = true;
      } else if (key == "cpus") {
        if (!v.is_array() || v.empty()) return error(kp, "expected an array of CPU numbers, like [0, 2]");
        for (const Json& c : v) {
          if (!get_int(c, kp, 0, 1 << 20, &n, &err)) return err;
          t.cpus.push_back(static_cast<int>(n));
        }
      } else if (key == "delay") {
        if (!get_int(v, kp, 0, INT64_C(1) << 40, &t.delay_us, &err)) return err;
      } else if (key.rfind("dl-", 0) == 0) {
        return error(kp, "SCHED_DEADLINE is not modelled by the simulator");
      }
    }
    if (t.policy.empty()) t.policy = d_.default_policy;
    const bool rt = t.policy == "SCHED_FIFO" || t.policy == "SCHED_RR";
    if (rt) {
      if (nice_set) return error(path + ".nice", "applies to SCHED_OTHER and SCHED_IDLE, not " + t.policy);
      if (!t.priority_set) t.priority = 10;  // rt-app's DEFAULT_THREAD_PRIORITY
      if (t.priority < 1) return error(path + ".priority", "must be 1..99 for " + t.policy + " (got " + std::to_string(t.priority) + ")");
    } else {
      // For SCHED_OTHER and SCHED_IDLE rt-app's priority is the nice value (setpriority()).
      if (nice_set && t.priority_set) return error(path + ".nice", "give either nice or priority (the nice value), not both");
      if (nice_set) t.priority = nice;
      if (t.priority > 19) return error(path + ".priority", "is the nice value for " + t.policy + ": -20..19 (got " + std::to_string(t.priority) + ")");
    }
    std::set<int> used_barriers;
    auto phases = obj.find("phases");
    if (phases != obj.end()) {
      if (!phases->is_object() || phases->empty()) return error(path + ".phases", "expected an object of phases");
      for (const auto& [pname, pv] : phases->items()) {
        const std::string pp = path + ".phases." + pname;
        if (!pv.is_object()) return error(pp, "expected an object");
        RtAppPhase ph;
        ph.name = pname;
        if (std::string e = phase(pv, pp, false, &ph, &used_barriers); !e.empty()) return e;
        t.phases.push_back(std::move(ph));
      }
      for (const auto& [key, v] : obj.items()) {
        if (key == "loop") {
          if (!get_int(v, path + ".loop", -1, 1 << 30, &n, &err)) return err;
          t.loop = static_cast<int>(n);
        } else if (!is_task_key(key)) {
          return error(path + "." + key, "unknown or unsupported key (a task with phases has its events in them)");
        }
      }
    } else {
      // No "phases": the task is its one phase, and its "loop" counts runs of that phase in
      // each round of a task that repeats until the end, as rt-app 1.0's parse_thread_data()
      // reads it (later rt-app versions run such a task `loop` times; give it phases for that).
      RtAppPhase ph;
      ph.name = "phase0";
      if (std::string e = phase(obj, path, true, &ph, &used_barriers); !e.empty()) return e;
      t.loop = -1;
      t.phases.push_back(std::move(ph));
    }
    for (int b : used_barriers) d_.barrier_parties[b] += t.instance;
    d_.tasks.push_back(std::move(t));
    return "";
  }

  std::string root(const Json& j) {
    if (!j.is_object()) return error("(top level)", "expected an object");
    if (auto g = j.find("global"); g != j.end())
      if (std::string e = global(*g); !e.empty()) return e;
    for (const auto& [key, v] : j.items()) {
      if (key == "global") continue;
      if (key == "resources") {
        // Declaring resources is optional in rt-app 1.0: they are made on first use.
        if (!v.is_object()) return error("resources", "expected an object");
      } else if (key != "tasks") {
        return error(key, "unknown key (the top level takes global, tasks and resources)");
      }
    }
    auto tasks = j.find("tasks");
    if (tasks == j.end()) return error("tasks", "missing (rt-app needs a tasks object)");
    if (!tasks->is_object() || tasks->empty()) return error("tasks", "expected an object of tasks");
    for (const auto& [name, v] : tasks->items())
      if (std::string e = task(name, v); !e.empty()) return e;
    for (size_t b = 0; b < d_.barriers.size(); ++b)
      if (d_.barrier_parties[b] < 1) return error("barrier " + d_.barriers[b], "no threads use it");
    return "";
  }

 private:
  std::string where_;
  RtAppDesc& d_;
  std::string task_;
};

}  // namespace

std::string parse_rt_app(const std::string& text, const std::string& where, RtAppDesc* out) {
  Json j;
  try {
    j = Json::parse(sim::relaxed_json_to_strict(text), nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& e) {
    std::string msg = e.what();
    const size_t colon = msg.find("] ");
    return "rt-app '" + where + "': not valid JSON: " + (colon == std::string::npos ? msg : msg.substr(colon + 2));
  }
  RtAppDesc d;
  Parser p(where, &d);
  if (std::string e = p.root(j); !e.empty()) return e;
  *out = std::move(d);
  return "";
}

std::string load_rt_app_file(const std::string& path, RtAppDesc* out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "rt-app file '" + path + "': not a regular file";
  std::ifstream in(path);
  if (!in) return "rt-app file '" + path + "': cannot be read";
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_rt_app(ss.str(), path, out);
}

std::string rt_app_metric_name(const std::string& task) {
  std::string s = task;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

}  // namespace workloads
