// Parsing and validating machine profiles (machines/*.toml; schema in docs/machines.md).
// Every error is one line that names the origin and the parameter; nothing throws out.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <type_traits>
#include <toml++/toml.h>

#include "hw/machine_internal.h"

namespace hw {

namespace {

// Above one second a per-event cost is surely a unit mistake (and could overflow sums of
// simulated time), so it is rejected rather than simulated.
constexpr int64_t kMaxCostNs = 1000000000;
// The critical-section loop takes milliseconds; a minute bounds it with a wide margin.
constexpr int64_t kMaxCsLoopNs = 60 * int64_t{1000000000};

template <auto M>
int64_t get_cost(const Costs& c) {
  return static_cast<int64_t>(c.*M);
}
template <auto M>
void set_cost_field(Costs* c, int64_t v) {
  c->*M = static_cast<std::remove_reference_t<decltype(c->*M)>>(v);
}
// A time in ns within 0..kMaxCostNs; the TOML key is the field name.
#define SCHEDLAB_NS_COST(field, help) \
  {#field, CostType::Ns, 0, kMaxCostNs, help, get_cost<&Costs::field>, set_cost_field<&Costs::field>}

const std::vector<CostSetting> kCosts = {
    SCHEDLAB_NS_COST(context_switch_ns, "`__schedule()` to the first user instruction of the next thread"),
    SCHEDLAB_NS_COST(syscall_entry_ns, "user -> kernel"),
    SCHEDLAB_NS_COST(syscall_exit_ns, "kernel -> user"),
    SCHEDLAB_NS_COST(irq_entry_ns, "interrupt entry incl. the vector dispatch"),
    SCHEDLAB_NS_COST(irq_exit_ns, "interrupt exit up to the exit-to-user work loop"),
    SCHEDLAB_NS_COST(tick_handler_ns, "`update_process_times()` + `sched_tick()` body"),
    SCHEDLAB_NS_COST(ipi_latency_ns, "IPI send -> handler entry on the target (latency)"),
    SCHEDLAB_NS_COST(ipi_send_ns, "CPU time the sender spends sending an IPI"),
    SCHEDLAB_NS_COST(hrtimer_program_ns, "programming the local timer (TSC deadline)"),
    SCHEDLAB_NS_COST(ttwu_ns, "`try_to_wake_up()` body on the waker"),
    SCHEDLAB_NS_COST(mm_cid_scan_cpu_ns,
                     "the mm_cid compaction (`task_mm_cid_work()`), per possible CPU visited (both "
                     "passes): kernel time of the task the scan runs in (docs/model.md, rseq "
                     "concurrency IDs)"),
    SCHEDLAB_NS_COST(net_rx_irq_ns,
                     "a NIC receive interrupt's handler (ack, `napi_schedule()`) (docs/softirq.md)"),
    SCHEDLAB_NS_COST(net_rx_packet_ns,
                     "one received packet's NET_RX work, driver poll to socket enqueue "
                     "(`scripts/measure-softirq` measures it on loopback)"),
    SCHEDLAB_NS_COST(udp_sendto_ns,
                     "the kernel path of one small UDP `sendto()` inside its BH-disabled section "
                     "(`scripts/measure-softirq` measures it on loopback)"),
    SCHEDLAB_NS_COST(udp_recvmsg_ns,
                     "the kernel path of one UDP `recvmsg()` that finds a datagram "
                     "(`__skb_recv_udp()`, `skb_consume_udp()`), without the copy to user "
                     "(docs/softirq.md)"),
    // 100 ns a byte would be a copy at 10 MB/s: surely a unit mistake.
    {"copy_to_user_ps_per_byte", CostType::Int, 0, 100000,
     "copying a received datagram to user memory (`skb_copy_datagram_msg()`), picoseconds "
     "per byte",
     get_cost<&Costs::copy_to_user_ps_per_byte>, set_cost_field<&Costs::copy_to_user_ps_per_byte>},
    SCHEDLAB_NS_COST(line_smt_ns, "one cache-line transfer between SMT siblings (`Machine::line_transfer_ns`)"),
    SCHEDLAB_NS_COST(line_llc_ns, "one cache-line transfer within an LLC"),
    SCHEDLAB_NS_COST(line_xllc_ns, "one cache-line transfer across LLCs of a socket"),
    SCHEDLAB_NS_COST(line_xsocket_ns, "one cache-line transfer across sockets"),
    SCHEDLAB_NS_COST(copy_from_user_word_ns, "STAC/CLAC + a checked load, L1 hit"),
    SCHEDLAB_NS_COST(idle_exit_ns, "leaving the idle state for an interrupt (latency)"),
    SCHEDLAB_NS_COST(newidle_balance_ns,
                     "one balance pass, newly idle or periodic (the NOHZ idle balance pays one "
                     "per idle CPU it balances)"),
    SCHEDLAB_NS_COST(clone_ns,
                     "a parent creating one thread (`pthread_create()`: `clone()` and the stack): "
                     "the launcher task spends this much of its CPU time in the kernel on each "
                     "thread it forks, so threads a workload starts at the same time are forked at "
                     "least this far apart, in order (`scripts/measure-clone` measures it)"),
    SCHEDLAB_NS_COST(timer_irq_jitter_ns,
                     "a timer interrupt's handler runs uniform(0, this) after the timer's expiry "
                     "(see below); 0 = exact timers"),
    SCHEDLAB_NS_COST(background_run_ns,
                     "the rest of the system: how long other tasks take a CPU at each of their "
                     "wakeups (see below; `scripts/measure-background` measures it)"),
    // A million a second per CPU would leave no time between wakeups.
    {"background_wakeups_per_s", CostType::Int, 0, 100000,
     "the rest of the system: how often per second other tasks take each CPU (Poisson; "
     "`scripts/measure-background` measures it); 0 = nothing but the scenario runs",
     get_cost<&Costs::background_wakeups_per_s>, set_cost_field<&Costs::background_wakeups_per_s>},
    // 1000 = no slowdown; 4000 would be a thread at a quarter speed, beyond any SMT core.
    {"smt_slowdown_permille", CostType::Int, 1000, 4000,
     "user work runs this much slower while the SMT sibling is busy (1000 = not at all)",
     get_cost<&Costs::smt_slowdown_permille>, set_cost_field<&Costs::smt_slowdown_permille>},
    {"idle_polling", CostType::Bool, 0, 1,
     "the idle loop polls `TIF_NEED_RESCHED`, so a wakeup needs no IPI",
     get_cost<&Costs::idle_polling>, set_cost_field<&Costs::idle_polling>},
    {"cpuidle_menu", CostType::Bool, 0, 1,
     "a cpuidle driver whose menu governor decides when an idle CPU stops its tick (bare "
     "metal); false: none, as in a KVM guest idling with HLT (`default_idle_call()`)",
     get_cost<&Costs::cpuidle_menu>, set_cost_field<&Costs::cpuidle_menu>},
    {"cpuidle_haltpoll", CostType::Bool, 0, 1,
     "the cpuidle-haltpoll driver and governor (a KVM guest whose host hints "
     "`KVM_HINTS_REALTIME`): an idle vCPU polls before it halts, for an adaptive window; "
     "excludes `cpuidle_menu`",
     get_cost<&Costs::cpuidle_haltpoll>, set_cost_field<&Costs::cpuidle_haltpoll>},
    SCHEDLAB_NS_COST(idle_deep_exit_ns,
                     "exit latency of a deeper idle state of the cpuidle driver (acpi_idle's "
                     "I/O-port C2; not an MWAIT state, which polls), which menu picks for idles "
                     "predicted at least its target residency long and which does not poll; "
                     "0 = none (only with `cpuidle_menu`)"),
    SCHEDLAB_NS_COST(idle_deep_residency_ns,
                     "the deeper idle state's target residency; 0 = twice its exit latency "
                     "(acpi_idle's rule)"),
};
#undef SCHEDLAB_NS_COST

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
      // A named copy: clang before 16 cannot capture a structured binding.
      const std::string_view key = k.str();
      const auto f = std::find_if(kCosts.begin(), kCosts.end(),
                                  [&](const CostSetting& f) { return key == f.key; });
      if (f == kCosts.end()) return fail("unknown key '" + name + "'");
      if (f->type == CostType::Bool) {
        const auto* b = v.as_boolean();
        if (b == nullptr) return fail(name + " must be a boolean (got " + type_name(v) + ")");
        f->set(c, b->get());
      } else {
        int64_t x = 0;
        if (!int_value(v, name, f->lo, f->hi, &x)) return false;
        f->set(c, x);
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
    for (const CostSetting& f : kCosts) k.push_back(f.key);
    return k;
  }();
  return keys;
}

const std::vector<CostSetting>& cost_settings() { return kCosts; }

namespace {

std::string cost_values(const CostSetting& f) {
  if (f.type == CostType::Bool) return "true | false";
  return std::to_string(f.lo) + ".." + std::to_string(f.hi) + (f.type == CostType::Ns ? " ns" : "");
}

std::string cost_default(const CostSetting& f) {
  const int64_t d = f.get(Costs{});
  return f.type == CostType::Bool ? (d ? "true" : "false") : std::to_string(d);
}

}  // namespace

std::string costs_text() {
  std::string out =
      "machine costs (--set machine.KEY=VALUE, or a scenario's or profile's [costs] table): name,\n"
      "default for a profile without the key (every built-in profile sets each), values, what it is:\n";
  for (const CostSetting& f : kCosts) {
    std::string name = f.key;
    name.resize(std::max<size_t>(name.size(), 26), ' ');
    out += "  " + name + " " + cost_default(f) + "\n      " + cost_values(f) + ": " + f.help + "\n";
  }
  return out;
}

std::string costs_markdown() {
  std::string out = "| key | values | default | meaning |\n|---|---|---|---|\n";
  for (const CostSetting& f : kCosts) {
    std::string values;
    for (char ch : cost_values(f)) values += ch == '|' ? std::string("\\|") : std::string(1, ch);
    out += std::string("| `") + f.key + "` | " + values + " | " + cost_default(f) + " | " + f.help + " |\n";
  }
  return out;
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
