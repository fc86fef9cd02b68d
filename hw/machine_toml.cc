// Parsing and validating machine profiles (machines/*.toml; schema in docs/machines.md).
// Every error is one line that names the origin and the parameter; nothing throws out.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <toml++/toml.h>

#include "hw/machine_internal.h"

namespace hw {

namespace {

// One row per sim::Time field of Costs; the TOML key is the field name.
struct TimeField {
  const char* key;
  sim::Time Costs::*member;
};
constexpr TimeField kTimeFields[] = {
    {"context_switch_ns", &Costs::context_switch_ns},
    {"syscall_entry_ns", &Costs::syscall_entry_ns},
    {"syscall_exit_ns", &Costs::syscall_exit_ns},
    {"irq_entry_ns", &Costs::irq_entry_ns},
    {"irq_exit_ns", &Costs::irq_exit_ns},
    {"tick_handler_ns", &Costs::tick_handler_ns},
    {"ipi_latency_ns", &Costs::ipi_latency_ns},
    {"ipi_send_ns", &Costs::ipi_send_ns},
    {"hrtimer_program_ns", &Costs::hrtimer_program_ns},
    {"ttwu_ns", &Costs::ttwu_ns},
    {"mm_cid_scan_cpu_ns", &Costs::mm_cid_scan_cpu_ns},
    {"net_rx_irq_ns", &Costs::net_rx_irq_ns},
    {"net_rx_packet_ns", &Costs::net_rx_packet_ns},
    {"udp_sendto_ns", &Costs::udp_sendto_ns},
    {"line_smt_ns", &Costs::line_smt_ns},
    {"line_llc_ns", &Costs::line_llc_ns},
    {"line_xllc_ns", &Costs::line_xllc_ns},
    {"line_xsocket_ns", &Costs::line_xsocket_ns},
    {"copy_from_user_word_ns", &Costs::copy_from_user_word_ns},
    {"idle_exit_ns", &Costs::idle_exit_ns},
    {"newidle_balance_ns", &Costs::newidle_balance_ns},
    {"clone_ns", &Costs::clone_ns},
    {"timer_irq_jitter_ns", &Costs::timer_irq_jitter_ns},
    {"background_run_ns", &Costs::background_run_ns},
};
// Above one second a per-event cost is surely a unit mistake (and could overflow sums of
// simulated time), so it is rejected rather than simulated.
constexpr int64_t kMaxCostNs = 1000000000;
// The critical-section loop takes milliseconds; a minute bounds it with a wide margin.
constexpr int64_t kMaxCsLoopNs = 60 * int64_t{1000000000};

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date/time";
  }
}

// Reads one document; the first error wins and is returned prefixed with the origin.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  bool fail(const std::string& msg) {
    if (error_.empty()) error_ = "machine '" + origin_ + "': " + msg;
    return false;
  }
  const std::string& error() const { return error_; }

  // Rejects keys of `t` not in `allowed` (`prefix` is "" or "topology.", for the message).
  bool only_keys(const toml::table& t, const std::string& prefix,
                 std::initializer_list<std::string_view> allowed) {
    for (auto&& [k, v] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end()) {
        return fail("unknown key '" + prefix + std::string(k.str()) + "'");
      }
    }
    return true;
  }

  // An integer in [lo, hi]; *out untouched when the key is absent.
  bool get_int(const toml::table& t, std::string_view key, const std::string& name, int64_t lo,
               int64_t hi, int64_t* out) {
    const toml::node* n = t.get(key);
    return n == nullptr || int_value(*n, name, lo, hi, out);
  }

  bool int_value(const toml::node& n, const std::string& name, int64_t lo, int64_t hi,
                 int64_t* out) {
    const auto* v = n.as_integer();
    if (v == nullptr) return fail(name + " must be an integer (got " + type_name(n) + ")");
    const int64_t x = v->get();
    if (x < lo) return fail(name + " must be >= " + std::to_string(lo) + " (got " + std::to_string(x) + ")");
    if (x > hi) return fail(name + " must be <= " + std::to_string(hi) + " (got " + std::to_string(x) + ")");
    *out = x;
    return true;
  }

  bool get_string(const toml::table& t, std::string_view key, const std::string& name,
                  std::string* out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return true;
    const auto* v = n->as_string();
    if (v == nullptr) return fail(name + " must be a string (got " + type_name(*n) + ")");
    *out = v->get();
    return true;
  }

  bool get_table(const toml::table& t, std::string_view key, const toml::table** out) {
    const toml::node* n = t.get(key);
    *out = nullptr;
    if (n == nullptr) return true;
    *out = n->as_table();
    if (*out == nullptr) return fail(std::string(key) + " must be a table (got " + type_name(*n) + ")");
    return true;
  }

  bool read_costs(const toml::table& t, Costs* c) {
    for (auto&& [k, v] : t) {
      const std::string name = "costs." + std::string(k.str());
      if (k.str() == "smt_slowdown_permille") {
        // 1000 = no slowdown; 4000 would be a thread at a quarter speed, beyond any SMT core.
        int64_t x = 0;
        if (!int_value(v, name, 1000, 4000, &x)) return false;
        c->smt_slowdown_permille = static_cast<int>(x);
      } else if (k.str() == "background_wakeups_per_s") {
        // A million a second per CPU would leave no time between wakeups.
        int64_t x = 0;
        if (!int_value(v, name, 0, 100000, &x)) return false;
        c->background_wakeups_per_s = static_cast<int>(x);
      } else if (k.str() == "idle_polling") {
        const auto* b = v.as_boolean();
        if (b == nullptr) return fail(name + " must be a boolean (got " + type_name(v) + ")");
        c->idle_polling = b->get();
      } else {
        // A named copy: clang before 16 cannot capture a structured binding.
        const std::string_view key = k.str();
        const TimeField* f = std::find_if(std::begin(kTimeFields), std::end(kTimeFields),
                                          [&](const TimeField& f) { return key == f.key; });
        if (f == std::end(kTimeFields)) return fail("unknown key '" + name + "'");
        if (!int_value(v, name, 0, kMaxCostNs, &(c->*(f->member)))) return false;
      }
    }
    return true;
  }

  bool read_topology(const toml::table& t, Topology* topo) {
    if (!only_keys(t, "topology.", {"sockets", "cores_per_socket", "threads_per_core",
                                    "cores_per_llc", "smt_numbering"})) {
      return false;
    }
    for (const char* key : {"sockets", "cores_per_socket"}) {
      if (!t.contains(key)) return fail("topology." + std::string(key) + " is required");
    }
    // Each count is bounded by kMaxCpus first, so their product cannot overflow.
    int64_t sockets = 0, cores_per_socket = 0, threads = 1, cores_per_llc = 0;
    if (!get_int(t, "sockets", "topology.sockets", 1, kMaxCpus, &sockets) ||
        !get_int(t, "cores_per_socket", "topology.cores_per_socket", 1, kMaxCpus, &cores_per_socket) ||
        // Linux x86 has at most 2 threads per core, and smt_sibling() assumes it.
        !get_int(t, "threads_per_core", "topology.threads_per_core", 1, 2, &threads)) {
      return false;
    }
    cores_per_llc = cores_per_socket;  // default: one LLC per socket
    if (!get_int(t, "cores_per_llc", "topology.cores_per_llc", 1, kMaxCpus, &cores_per_llc)) return false;
    if (cores_per_socket % cores_per_llc != 0) {
      return fail("topology.cores_per_llc must divide topology.cores_per_socket (got " +
                  std::to_string(cores_per_llc) + " and " + std::to_string(cores_per_socket) + ")");
    }
    std::string numbering = "split";
    if (!get_string(t, "smt_numbering", "topology.smt_numbering", &numbering)) return false;
    if (numbering != "split" && numbering != "adjacent") {
      return fail("topology.smt_numbering must be \"split\" or \"adjacent\" (got \"" + numbering + "\")");
    }
    const int64_t cpus = sockets * cores_per_socket * threads;
    if (cpus > kMaxCpus) {
      return fail("topology has " + std::to_string(cpus) + " CPUs, more than the limit of " +
                  std::to_string(kMaxCpus));
    }
    *topo = make_topology(static_cast<int>(sockets), static_cast<int>(cores_per_socket),
                          static_cast<int>(threads), static_cast<int>(cores_per_llc),
                          numbering == "split");
    return true;
  }

  // `full`: a whole profile (topology required); otherwise costs only (machines/host.toml).
  bool read(const std::string& text, bool full, Machine* m) {
    toml::table doc;
    try {
      doc = toml::parse(text, origin_);
    } catch (const toml::parse_error& e) {
      std::string what(e.description());
      std::replace(what.begin(), what.end(), '\n', ' ');  // errors are one line
      return fail("malformed TOML at line " + std::to_string(e.source().begin.line) + ", column " +
                  std::to_string(e.source().begin.column) + ": " + what);
    }
    if (full) {
      if (!only_keys(doc, "", {"name", "description", "topology", "costs", "cs_loop_3m_ns"})) return false;
    } else if (doc.contains("topology")) {
      return fail("topology is not allowed here: the host's topology is read from /sys");
    } else if (!only_keys(doc, "", {"name", "description", "costs", "cs_loop_3m_ns"})) {
      return false;
    }
    if (!get_string(doc, "name", "name", &m->name) ||
        !get_string(doc, "description", "description", &m->description) ||
        !get_int(doc, "cs_loop_3m_ns", "cs_loop_3m_ns", 1, kMaxCsLoopNs, &m->cs_loop_3m_ns)) {
      return false;
    }
    const toml::table* costs = nullptr;
    if (!get_table(doc, "costs", &costs)) return false;
    if (costs != nullptr && !read_costs(*costs, &m->costs)) return false;
    if (!full) return true;
    const toml::table* topo = nullptr;
    if (!get_table(doc, "topology", &topo)) return false;
    if (topo == nullptr) return fail("missing table [topology]");
    return read_topology(*topo, &m->topo);
  }

 private:
  const std::string origin_;
  std::string error_;
};

}  // namespace

const std::vector<std::string>& cost_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const TimeField& f : kTimeFields) k.push_back(f.key);
    k.push_back("smt_slowdown_permille");
    k.push_back("background_wakeups_per_s");
    k.push_back("idle_polling");
    return k;
  }();
  return keys;
}

LoadResult parse_machine_toml(const std::string& text, const std::string& origin, Machine* out) {
  Machine m;
  // A profile without `name` is named after its file: "foo" for "dir/foo.toml".
  m.name = std::filesystem::path(origin).stem().string();
  Reader r(origin);
  if (!r.read(text, /*full=*/true, &m)) return {r.error()};
  *out = std::move(m);
  return {};
}

LoadResult parse_costs_toml(const std::string& text, const std::string& origin, Machine* m) {
  Machine parsed;
  Reader r(origin);
  if (!r.read(text, /*full=*/false, &parsed)) return {r.error()};
  m->costs = parsed.costs;
  m->cs_loop_3m_ns = parsed.cs_loop_3m_ns;
  return {};
}

LoadResult set_cost(Machine* m, const std::string& key, const std::string& value) {
  const std::vector<std::string>& keys = cost_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end())
    return {"machine." + key + ": unknown cost (see docs/machines.md)"};
  toml::table costs;
  try {
    // The value is read as TOML would read it in the file: an integer or true/false.
    costs = toml::parse(std::string_view("v = " + value), std::string_view("--set"));
  } catch (const toml::parse_error&) {
    return {"machine." + key + ": expected an integer or true/false (got '" + value + "')"};
  }
  toml::table t;
  t.insert(key, *costs.get("v"));
  Reader r("--set");
  if (!r.read_costs(t, &m->costs)) return {r.error()};
  return {};
}

}  // namespace hw
